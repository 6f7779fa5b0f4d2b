"""A query something cancelled is not a failure: the sample `sea-cancel-job-group` runs a long
query in a job group that its driver program cancels after 3 s (`cancelJobGroup`, as a timeout or
a notebook's Cancel does). Spark marks its SQL execution FAILED with the cancellation."""

from __future__ import annotations

from typing import Any

import pytest
from eventlog_samples import sample
from reports import analysis_of, text_report

from analyzer.insights import detect_all
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Job, cancelled_from_outside

CANCEL_LOG = "local-1795805183431.zstd"
FAILED_QUERY_LOG = "local-1795320428052"
"""`sea-failed-query`: a task fails on every attempt."""
SHUTDOWN_LOG = "public/tasks_executors_fail_compressed_eventlog.zstd"
STOPPED_STREAM_LOG = "local-1795623294364.zstd"
CONNECT_LOG = "local-1795803803322.zstd"


def test_a_cancelled_query_is_a_warning_that_says_so() -> None:
    analysis = analysis_of(sample(CANCEL_LOG))
    app = analysis.application
    (failed,) = [e.execution_id for e in app.executions if e.status == "FAILED"]
    assert app.cancelled_execution_ids == {failed}
    (finding,) = [f for f in detect_all(analysis, Thresholds()) if f.rule == "failed-query"]
    assert finding.severity == "warning"
    assert finding.title.startswith(f"Query {failed} was cancelled: ")
    assert "cancelled job group nightly-report" in finding.title
    assert "cancelJobGroup" in finding.suggestion
    lines = text_report(analysis).splitlines()
    assert lines[2].startswith("COMPLETED · 3 SQL executions · 1 SQL execution cancelled")
    assert not any(line.startswith("root cause:") for line in lines[:6])
    text = "\n".join(lines)
    assert "cancelled (every failed job of it was cancelled): not counted as a failure" in text


@pytest.mark.parametrize(
    "path",
    [FAILED_QUERY_LOG, STOPPED_STREAM_LOG, CONNECT_LOG, SHUTDOWN_LOG],
    ids=["failed-query", "stopped-stream", "connect-interrupt", "shutdown"],
)
def test_other_failures_and_stops_are_not_called_cancelled(path: str) -> None:
    """A task that fails, a stream's stop, a Connect client's interrupt and the application's
    shutdown each keep their own reading."""
    assert analysis_of(sample(path)).application.cancelled_execution_ids == frozenset()


def test_a_broadcast_timeout_is_a_failure() -> None:
    """Spark cancels the job group of a broadcast that timed out: that cancel is the query's
    failure, not something outside it (logs before 3.4 carry no execution error to tell)."""
    run_id = "3f2c0a5e-4a7b-4f0e-9a51-0c1d2e3f4a5b"
    broadcast = _failed_job(
        f"Job 4 cancelled part of cancelled job group {run_id}",
        description=f"broadcast exchange (runId {run_id})",
        job_group=run_id,
    )
    assert broadcast.cancelled
    assert not cancelled_from_outside(broadcast)
    by_hand = _failed_job(
        "Job 2 cancelled part of cancelled job group nightly-report", job_group="nightly-report"
    )
    assert cancelled_from_outside(by_hand)
    shutdown = _failed_job("Job 3 cancelled because SparkContext was shut down")
    assert not cancelled_from_outside(shutdown)


def _failed_job(error_message: str, **fields: Any) -> Job:
    """A failed job of SQL execution 1 with Spark's message `error_message`."""
    return Job(
        job_id=2,
        execution_id=1,
        submission_ms=0,
        completion_ms=3_000,
        status="FAILED",
        stage_ids=(3,),
        error_message=error_message,
        **fields,
    )
