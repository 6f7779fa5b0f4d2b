"""Gold files of the text report: every sample log and a few public ones, at every metrics level.

Refresh: `SEA_UPDATE_GOLD=1 .venv/bin/pytest tests/test_gold_text.py` (see tests/gold/README.md).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from functools import cache
from pathlib import Path

import pytest
from eventlog_samples import PUBLIC, sample_logs

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.render.text import WIDTH, render_text, visible_len
from analyzer.report import views

GOLD = Path(__file__).resolve().parent / "gold"
UPDATE = os.environ.get("SEA_UPDATE_GOLD") == "1"
NOW_MS = 1_700_000_000_000
"""The injected clock: reports print it as their generation time."""
LEVELS = ("none", "summary", "full")
PUBLIC_LOGS = ("local-1642039451826", "nds_q72_dataproc_2_2.zstd", "gpu_oom_eventlog.zstd")
# The two large public logs have ten thousand tasks or more: their `full` reports (a line per
# task) are megabytes, so only their plan and summary levels are kept as gold.
PLAN_AND_SUMMARY_ONLY = {"nds_q72_dataproc_2_2.zstd", "gpu_oom_eventlog.zstd"}


def _logs() -> list[Path]:
    found = sample_logs()
    found += [PUBLIC / name for name in PUBLIC_LOGS if (PUBLIC / name).exists()]
    return found


LOGS = _logs()


@cache
def _analysis(path: Path) -> Analysis:
    return api.analyze(str(path))


def _check(name: str, actual: str) -> None:
    gold = GOLD / name
    if UPDATE:
        gold.write_text(actual, encoding="utf-8")
        return
    if not gold.exists():
        pytest.fail(f"no gold file {gold}; write it with SEA_UPDATE_GOLD=1 and review it")
    expected = gold.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"gold/{name}",
            tofile="actual",
            n=2,
        )
        pytest.fail("text report differs from its gold file:\n" + "".join(list(diff)[:200]))


CASES = [
    (log, level)
    for log in LOGS
    for level in LEVELS
    if not (level == "full" and log.name in PLAN_AND_SUMMARY_ONLY)
]


@pytest.mark.parametrize(("log", "level"), CASES, ids=[f"{p.name}-{lv}" for p, lv in CASES])
def test_text_report_matches_gold(log: Path, level: str) -> None:
    text = render_text(_analysis(log), metrics=level, now_ms=NOW_MS)  # type: ignore[arg-type]
    assert all(visible_len(line) <= WIDTH for line in text.splitlines())
    assert "\x1b[" not in text
    _check(f"{log.name}.{level}.txt", text)


@pytest.mark.parametrize("log", LOGS[:1] + LOGS[-1:], ids=lambda p: p.name)
def test_colour_only_when_asked_and_same_text(log: Path) -> None:
    plain = render_text(_analysis(log), now_ms=NOW_MS)
    coloured = render_text(_analysis(log), color=True, now_ms=NOW_MS)
    assert "\x1b[1m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_filters_and_clock() -> None:
    analysis = _analysis(PUBLIC / "local-1642039451826")
    text = render_text(analysis, executions=[1], metrics="none")
    assert "SQL execution 1 " in text and "SQL execution 0 " not in text
    assert "Report generated" not in text
    top = render_text(analysis, top=1, metrics="none")
    assert "SQL execution 0 " in top and "SQL execution 1 " not in top  # 1.7 s beats 191 ms
    with pytest.raises(views.UsageError):
        render_text(analysis, executions=[99])


def test_every_view_field_is_documented() -> None:
    for name in dir(views):
        cls = getattr(views, name)
        if isinstance(cls, type) and name.endswith("View") and dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                assert f.metadata.get("help"), f"{name}.{f.name} has no help text"


def test_templates_use_only_documented_fields() -> None:
    known = {
        f.name
        for cls in vars(views).values()
        if isinstance(cls, type) and dataclasses.is_dataclass(cls)
        for f in dataclasses.fields(cls)
    }
    for template in (GOLD.parent.parent / "analyzer" / "templates").glob("*.txt.j2"):
        used = set(
            re.findall(
                r"\b(?:app|ex|node|m|t|stage|op|finding)\.([a-z_0-9]+)", template.read_text()
            )
        )
        assert used <= known | {"aqe"}, f"{template.name} uses undocumented {used - known}"
