"""Gold files of the text and JSON reports: every sample log and a few public ones.

Text reports are kept at every metrics level. JSON reports are kept for a few small sample logs
only, a document small enough to read in a diff; the JSON contract of every other log is checked
by its schema (tests/test_json_schema.py). Refresh: `SEA_UPDATE_GOLD=1 .venv/bin/pytest
tests/test_gold.py` (tests/gold/README.md).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path

import pytest
from eventlog_samples import PUBLIC, log_size, public, sample_id
from reports import NOW_MS, analysis_of, json_report, sample_logs, text_report

from analyzer.errors import UsageError
from analyzer.render.terminal import visible_len

GOLD = Path(__file__).resolve().parent / "gold"
UPDATE = os.environ.get("SEA_UPDATE_GOLD") == "1"
LEVELS = ("none", "summary", "full")
PUBLIC_LOGS = ("local-1642039451826", "nds_q72_dataproc_2_2.zstd", "gpu_oom_eventlog.zstd")
# The two large public logs have ten thousand tasks or more: their `full` reports (a line per
# task) are megabytes, so only their plan and summary levels are kept as gold.
PLAN_AND_SUMMARY_ONLY = {"nds_q72_dataproc_2_2.zstd", "gpu_oom_eventlog.zstd"}
JSON_GOLD = {
    "local-1795322404204",  # RDD jobs only: jobs and stages, no SQL execution
    "local-1795449816738.zstd",  # a large result collected to the driver
    "local-1795449853262.zstd",  # a sort that spills
    "local-1795449570708.zstd",  # idle cores: one task does everything (a window without keys)
    "local-1795622263284.zstd",  # a streaming query whose task fails and ends the query
}
"""Sample logs whose JSON report is kept as gold: small ones, between 20 and 60 KB of JSON."""


def _public(name: str) -> object:
    """A public log as a parameter, skipped with a reason when ../shared is not beside us."""
    path = PUBLIC / name
    return pytest.param(
        path,
        id=name,
        marks=pytest.mark.skipif(not path.exists(), reason=f"public event log {path} not present"),
    )


SAMPLES = sample_logs()
MANY_EXECUTIONS_LOG_BYTES = 1 << 20
"""A sample log larger than this holds hundreds of executions (`sea-repeated-queries`): its
`summary` and `full` reports are megabytes, so only its `none` level (the first screen and every
plan) is kept as gold; tests/test_query_families.py checks the rest."""
MANY_EXECUTIONS = {sample_id(p) for p in SAMPLES if log_size(p) > MANY_EXECUTIONS_LOG_BYTES}
LOGS = [pytest.param(p, id=sample_id(p)) for p in SAMPLES] + [_public(n) for n in PUBLIC_LOGS]
TEXT_CASES = [
    pytest.param(p.values[0], level, id=f"{p.id}-{level}", marks=p.marks)
    for p in LOGS
    for level in LEVELS
    if not (level == "full" and p.id in PLAN_AND_SUMMARY_ONLY)
    and not (level != "none" and p.id in MANY_EXECUTIONS)
]
SAMPLE_IDS = {sample_id(s) for s in SAMPLES}
JSON_CASES = [p for p in LOGS if p.id in JSON_GOLD]


def expected_gold_files() -> set[str]:
    """Every gold file the cases above compare against."""
    names = {f"{sample_id(p.values[0])}.{p.values[1]}.txt" for p in TEXT_CASES}
    names |= {f"{sample_id(p.values[0])}.json" for p in JSON_CASES}
    return names


def _check(name: str, actual: str) -> None:
    gold = GOLD / name
    if UPDATE:
        gold.parent.mkdir(exist_ok=True)
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
        pytest.fail("report differs from its gold file:\n" + "".join(list(diff)[:200]))


@pytest.mark.parametrize(("log", "level"), TEXT_CASES)
def test_text_report_matches_gold(log: Path, level: str) -> None:
    text = text_report(analysis_of(log), metrics=level, now_ms=NOW_MS)
    assert all(visible_len(line) <= 100 for line in text.splitlines())
    assert "\x1b" not in text
    _check(f"{sample_id(log)}.{level}.txt", text)


@pytest.mark.parametrize("log", JSON_CASES)
def test_json_report_matches_gold(log: Path) -> None:
    # The log's path is where this checkout happens to be: the gold file holds `<log>` instead.
    text = json_report(analysis_of(log)).replace(json.dumps(str(log))[1:-1], "<log>")
    _check(f"{sample_id(log)}.json", text)


def test_json_gold_logs_exist() -> None:
    """Each log kept as JSON gold is a sample log: a renamed sample is not left uncompared."""
    if not SAMPLES:
        pytest.skip("no sample logs")
    assert sorted(JSON_GOLD - SAMPLE_IDS) == []


def test_no_orphaned_gold_files() -> None:
    """A gold file that no case compares against is left over from a removed or renamed log."""
    present = {
        p.relative_to(GOLD).as_posix() for p in GOLD.rglob("*") if p.suffix in (".txt", ".json")
    }
    expected = expected_gold_files()
    if not PUBLIC.is_dir():
        expected |= {n for n in present if n.startswith(PUBLIC_LOGS)}
    assert sorted(present - expected) == []


@pytest.mark.parametrize("log", [SAMPLES[0], SAMPLES[-1]], ids=sample_id)
def test_colour_only_when_asked_and_same_text(log: Path) -> None:
    plain = text_report(analysis_of(log), now_ms=NOW_MS)
    coloured = text_report(analysis_of(log), color=True, now_ms=NOW_MS)
    assert "\x1b[1m" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_filters_and_clock() -> None:
    analysis = analysis_of(public("local-1642039451826"))
    text = text_report(analysis, executions=(1,), metrics="none")
    assert "SQL execution 1 " in text and "SQL execution 0 " not in text
    assert "Report generated" not in text
    top = text_report(analysis, top=1, metrics="none")
    assert "SQL execution 0 " in top and "SQL execution 1 " not in top  # 1.7 s beats 191 ms
    with pytest.raises(UsageError):
        text_report(analysis, executions=(99,))
