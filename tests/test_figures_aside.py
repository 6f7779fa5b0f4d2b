"""Figures of the task table made in a second thread while the what-if and the rules run.

A report computes its stage walls, task statistics and quantiles beside the what-if and the
rules (`aggregate.analysis.figures_made_aside`). What it writes must be what it writes with
every figure made in order; a figure asked for while the thread makes it is made once; one the
thread fails to make raises its error where it is asked for.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import PUBLIC_CORPUS, sample_logs

from analyzer import api
from analyzer.aggregate import analysis as analysis_module
from analyzer.aggregate.analysis import Analysis, figures_made_aside
from analyzer.errors import Strictness
from analyzer.report.options import ReportOptions


def _fresh(log: Path) -> Analysis:
    return api.analyze(str(log), Strictness.LENIENT)


_MANY_TASKS_PER_STAGE = [
    *(log for log in sample_logs() if log.name == "eventlog_v2_local-1795320584980"),
    PUBLIC_CORPUS / "attempt_1_eventlog.zstd",
    PUBLIC_CORPUS / "dsAndDf_eventlog.zstd",
]
"""Logs with at least `api.ASIDE_MIN_TASKS_PER_STAGE` tasks per stage attempt: their reports
make the task table's figures aside."""


@pytest.mark.parametrize("log", _MANY_TASKS_PER_STAGE, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["json", "text", "html"])
def test_report_with_figures_made_aside_equals_one_made_in_order(log: Path, fmt: str) -> None:
    options = ReportOptions(fmt=fmt, now_ms=1_800_000_000_000)  # type: ignore[arg-type]
    analysis = _fresh(log)
    assert api._figures_aside(analysis, options)
    aside = api.render_report(analysis, options)
    in_order = _fresh(log)
    api.make_what_if(in_order, options)
    findings = api.find_issues(in_order, options.thresholds)
    assert aside == api.render_report(in_order, options, findings)


def test_a_figure_asked_for_while_made_aside_is_made_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    analysis = _fresh(sample_logs()[0])
    made = analysis_module.take_stage_walls
    started = threading.Event()
    calls: list[str] = []

    def slow_walls(*args: Any) -> Any:
        calls.append(threading.current_thread().name)
        started.set()
        time.sleep(0.2)  # the main thread asks while this thread makes them
        return made(*args)

    monkeypatch.setattr(analysis_module, "take_stage_walls", slow_walls)
    with figures_made_aside(analysis, [lambda a: a.stage_walls]):
        assert started.wait(10)
        walls = analysis.stage_walls
    assert calls == ["figures-aside"]
    assert walls is analysis.stage_walls


def test_a_figure_that_fails_aside_raises_where_it_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    analysis = _fresh(sample_logs()[0])
    calls: list[str] = []

    def broken(*args: Any) -> Any:
        calls.append(threading.current_thread().name)
        raise RuntimeError("stage statistics failed")

    monkeypatch.setattr(analysis_module, "aggregate_stage_tasks", broken)
    with figures_made_aside(analysis, [lambda a: a.stage_stats, lambda a: a.stage_walls]):
        pass
    # The thread went on to the next figure; the failed one is not kept.
    assert calls == ["figures-aside"]
    assert "stage_walls" in analysis._figures and "stage_stats" not in analysis._figures
    with pytest.raises(RuntimeError, match="stage statistics failed"):
        _ = analysis.stage_stats
    assert calls == ["figures-aside", threading.current_thread().name]


def test_a_log_of_few_tasks_per_stage_makes_its_figures_in_order() -> None:
    analysis = _fresh(next(p for p in sample_logs() if p.name == "local-1795320224872"))
    assert analysis.tasks.height < api.ASIDE_MIN_TASKS_PER_STAGE * len(analysis.application.stages)
    assert api._figures_aside(analysis, ReportOptions(fmt="json")) == []
    before = threading.active_count()
    with figures_made_aside(analysis, []):
        assert threading.active_count() == before
