"""Report-layer contracts: findings computed once per report, output independent of hash seeds."""

from __future__ import annotations

import functools
import gc
import inspect
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import REPO
from reports import NOW_MS, analysis_of, report_logs
from typer.testing import CliRunner

import analyzer.insights as insights
import analyzer.insights.rules as rules
import analyzer.render.text as render_text
from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.cli import app
from analyzer.report.bounds import clip_view
from analyzer.report.options import FORMATS, ReportOptions
from analyzer.report.text import build_text_view

LOGS = report_logs()


def _count_rule_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make every run of the rules count itself (the first rule runs once per `detect_all`)."""
    runs = [0]
    first, *rest = rules.RULES

    def counted(analysis: Analysis, thresholds: insights.Thresholds) -> list[insights.Finding]:
        runs[0] += 1
        return first(analysis, thresholds)

    monkeypatch.setattr(rules, "RULES", (counted, *rest))
    return runs


@pytest.mark.parametrize("fmt", FORMATS)
def test_rules_run_once_per_report(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    analysis = analysis_of(LOGS[0])
    runs = _count_rule_runs(monkeypatch)
    api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=NOW_MS))
    assert runs[0] == 1  # the HTML page and the text report embedded in it share one run


@pytest.mark.parametrize("collector_on", [True, False])
def test_the_collector_pauses_for_the_analysis_and_comes_back(
    monkeypatch: pytest.MonkeyPatch, collector_on: bool
) -> None:
    """The cyclic collector is off while rules and renderers run, and as it was afterwards."""
    seen: list[bool] = []
    first, *rest = rules.RULES

    def watched(analysis: Analysis, thresholds: insights.Thresholds) -> list[insights.Finding]:
        seen.append(gc.isenabled())
        return first(analysis, thresholds)

    monkeypatch.setattr(rules, "RULES", (watched, *rest))
    was_on = gc.isenabled()
    try:
        if not collector_on:
            gc.disable()
        analysis = api.analyze(str(LOGS[0]))
        assert gc.isenabled() is collector_on
        for fmt in FORMATS:
            api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=NOW_MS))
            assert gc.isenabled() is collector_on
        assert seen == [False] * len(FORMATS)
    finally:
        if was_on:
            gc.enable()


@pytest.mark.parametrize("to_file", [True, False])
def test_the_report_command_runs_no_collection_between_its_steps(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, to_file: bool
) -> None:
    """Reading, findings and rendering share one pause: the collector, back on between them,
    would walk every object the step before made."""
    steps: list[str] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and steps and steps[-1] != "written":
            steps.append(f"a pass of generation {info['generation']}")

    def watched(name: str) -> Callable[..., Any]:
        real = getattr(api, name)

        def step(*args: Any, **kwargs: Any) -> Any:
            steps.append(name)
            out = real(*args, **kwargs)
            if name == "report_pieces":
                out = list(out)
            if name != "analyze":
                steps.append("written")
            return out

        return step

    for name in ("analyze", "write_report", "report_pieces"):
        monkeypatch.setattr(api, name, watched(name))
    out = tmp_path / "out.json"
    args = ["report", str(LOGS[0]), "--format", "json"] + (["-o", str(out)] if to_file else [])
    was_on = gc.isenabled()
    gc.enable()
    gc.callbacks.append(note)
    try:
        result = runner.invoke(app, args)
    finally:
        gc.callbacks.remove(note)
        if not was_on:
            gc.disable()
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text() if to_file else result.stdout)["format_version"] == 1
    assert steps == ["analyze", "write_report" if to_file else "report_pieces", "written"]


def test_rules_do_not_run_when_findings_are_given(monkeypatch: pytest.MonkeyPatch) -> None:
    analysis = analysis_of(LOGS[0])
    findings = api.find_issues(analysis)
    runs = _count_rule_runs(monkeypatch)
    for fmt in FORMATS:
        api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=NOW_MS), findings)
    assert runs[0] == 0


def _count_figure_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Make every call into `analyzer.aggregate` from outside it (and from `Analysis`'s
    accessors) count itself, keyed by function and arguments."""
    import analyzer.aggregate.analysis  # noqa: F401  (every aggregate module is imported now)

    calls: Counter[str] = Counter()

    def arg_key(value: Any) -> str:
        if isinstance(value, (str, int, float, bool, type(None))):
            return repr(value)
        if isinstance(value, (tuple, list, set, frozenset)) and len(value) < 200:
            return repr(
                sorted(map(arg_key, value))
                if isinstance(value, (set, frozenset))
                else [arg_key(v) for v in value]
            )
        return f"<{type(value).__name__} {id(value)}>"

    def counted(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = ", ".join(
                [*map(arg_key, args), *(f"{k}={arg_key(v)}" for k, v in kwargs.items())]
            )
            calls[f"{fn.__module__}.{fn.__name__}({key})"] += 1
            return fn(*args, **kwargs)

        return wrapper

    figures = {
        obj: counted(obj)
        for name, module in list(sys.modules.items())
        if name.startswith("analyzer.aggregate")
        for obj in vars(module).values()
        if inspect.isfunction(obj) and obj.__module__ == name and not obj.__name__.startswith("_")
    }
    for name, module in list(sys.modules.items()):
        if not name.startswith("analyzer.") or (
            name.startswith("analyzer.aggregate") and name != "analyzer.aggregate.analysis"
        ):
            continue
        for attr, obj in list(vars(module).items()):
            if inspect.isfunction(obj) and obj in figures:
                monkeypatch.setattr(module, attr, figures[obj])
    return calls


@pytest.mark.parametrize("log", LOGS[:1] + [p for p in LOGS if "1795320476417" in p.name])
def test_no_figure_is_computed_twice(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Findings and every report of one analysis compute each figure once: the views reach
    them through `Analysis`, which keeps them (task lines, not kept, are asked for once)."""
    analysis = api.analyze(str(log))
    calls = _count_figure_calls(monkeypatch)
    findings = api.find_issues(analysis)
    for options in (
        *(ReportOptions(fmt=fmt, now_ms=NOW_MS) for fmt in FORMATS),
        ReportOptions(fmt="text", metrics="full", now_ms=NOW_MS),
        ReportOptions(fmt="html", redact=True, now_ms=NOW_MS),
    ):
        api.render_report(analysis, options, findings)
    assert calls, "no call into analyzer.aggregate was counted"
    twice = {call: n for call, n in calls.items() if n > 1}
    assert twice == {}


_DIGESTS = """
import hashlib, json, sys
from analyzer import api
from analyzer.report.options import ReportOptions
out = {}
for path in sys.argv[1:]:
    analysis = api.analyze(path)
    findings = api.find_issues(analysis)
    for fmt in ("text", "html", "json"):
        for level in (("none", "full") if fmt == "text" else ("summary",)):
            options = ReportOptions(fmt=fmt, metrics=level, now_ms=1_700_000_000_000)
            text = api.render_report(analysis, options, findings)
            out[f"{path} {fmt} {level}"] = hashlib.sha256(text.encode()).hexdigest()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_reports_do_not_depend_on_hash_seeds() -> None:
    """Every format of every log renders the same under two PYTHONHASHSEED values."""
    digests = []
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _DIGESTS, *map(str, LOGS)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=REPO,
        ).stdout
        digests.append(json.loads(out))
    assert len(digests[0]) == 4 * len(LOGS)
    assert digests[0] == digests[1]


def test_every_format_has_one_way_to_be_made() -> None:
    """The API's registry of formats holds exactly the formats `ReportOptions` accepts."""
    assert sorted(api._FORMATS) == sorted(FORMATS)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_reports_in_pieces_are_the_report(monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    # The CLI writes a report to standard output piece by piece; the text report is made one
    # execution at a time, its lines fitted as they come: the pieces must join to the report.
    monkeypatch.setattr(render_text, "PIECES_PER_BATCH", 1)  # lines handed out as they come
    log = max(LOGS, key=lambda p: len(analysis_of(p).application.executions))
    analysis = analysis_of(log)
    assert len(analysis.application.executions) > 3
    for options in (
        ReportOptions(fmt=fmt, now_ms=NOW_MS),
        ReportOptions(fmt=fmt, now_ms=NOW_MS, metrics="full", color=True, width=60),
        ReportOptions(fmt=fmt, now_ms=NOW_MS, sections=("plans",)),
        ReportOptions(fmt=fmt, now_ms=NOW_MS, redact=True),
    ):
        pieces = list(api.report_pieces(analysis, options))
        whole = api.render_report(analysis, options)
        assert "".join(pieces) == whole
        assert len(pieces) > (1 if fmt == "text" and not options.redact else 0)
    if fmt == "text":  # the streamed text is what the whole view renders to
        options = ReportOptions(fmt="text", now_ms=NOW_MS, metrics="full")
        findings = api.find_issues(analysis)
        view = build_text_view(analysis, findings, options)
        expected = render_text.render_text(clip_view(view), width=options.width)
        assert api.render_report(analysis, options, findings) == expected
