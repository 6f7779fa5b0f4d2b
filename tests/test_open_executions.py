"""Executions and jobs the log has no end event for: never counted as completed, and their time
counted in "where the time went" up to their last activity rather than dropped.

`join_missing_sql_end` lost only the end event of its one execution (and of its job); the
application ended. `truncated_eventlog` was cut while its second execution ran.
"""

from __future__ import annotations

import pytest
from eventlog_samples import public

from analyzer import api
from analyzer.errors import Strictness
from analyzer.report.options import ReportOptions


def _report(name: str) -> str:
    analysis = api.analyze(str(public(name)), Strictness.LENIENT)
    return api.render_report(analysis, ReportOptions(fmt="text"), api.find_issues(analysis))


@pytest.mark.parametrize(
    ("name", "summary"),
    [
        # The application ended: the execution's end event is what is missing.
        (
            "join_missing_sql_end",
            "COMPLETED · 1 SQL execution: 1 with no end event, though the application ended",
        ),
        (
            "truncated_eventlog",
            "INCOMPLETE · 2 SQL executions: 1 completed, 1 running (no end event)",
        ),
    ],
)
def test_the_header_counts_executions_by_status(name: str, summary: str) -> None:
    report = _report(name)
    assert summary in report
    assert "all completed" not in report
    assert "incomplete: the log has no end event for this execution" in report


def test_an_execution_without_its_end_event_counts_up_to_its_last_activity() -> None:
    analysis = api.analyze(str(public("join_missing_sql_end")))
    app = analysis.application
    (execution,) = app.executions
    assert execution.end_ms is None
    spent = analysis.time_spent
    # Its stages ran 1.5 s, 2.0 s and 56 ms one after the other; the last ended 19 ms before
    # the application did.
    path_ms = sum(sp.wall_ms for sp in analysis.critical_path(execution.stage_ids))
    assert spent.sql_ms >= path_ms > 3_000
    assert spent.open_walls_ms == {execution.execution_id: spent.sql_ms}
    last_stage_ms = max(s.completion_ms or 0 for s in app.stages)
    assert execution.start_ms is not None and app.end_ms is not None
    assert spent.sql_ms == last_stage_ms - execution.start_ms
    assert spent.startup_ms == execution.start_ms - (app.start_ms or 0)
    assert spent.sql_ms + spent.other_jobs_ms + (spent.driver_ms or 0) == spent.wall_ms
    report = " ".join(_report("join_missing_sql_end").split())  # lines joined, unwrapped
    assert "SQL executions 0 ms" not in report
    assert "1 execution with no end event counted up to its last activity" in report
    assert "SQL execution 0 · at least 4.2 s (54.6 % of the application)" in report


def test_a_cut_log_counts_the_running_execution_not_the_tail() -> None:
    analysis = api.analyze(str(public("truncated_eventlog")), Strictness.LENIENT)
    spent = analysis.time_spent
    running = [e for e in analysis.application.executions if e.status == "RUNNING"]
    assert [e.execution_id for e in running] == [1]
    assert spent.open_walls_ms[1] >= 1_000
    assert not spent.after_ms
    assert spent.sql_ms + spent.other_jobs_ms + (spent.driver_ms or 0) == spent.wall_ms
    assert "after the last job" not in _report("truncated_eventlog").split("What if")[0]
