"""Times that make sense: an interval whose end comes before its start (ApplicationEnd before
ApplicationStart, SQL end before start, job and stage completion before submission) is clamped
to zero length and named in the reading notes; no format divides by zero or shows a negative
duration or share."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from eventlog_samples import PUBLIC_CORPUS, SAMPLES, sample
from typer.testing import CliRunner

from analyzer import api
from analyzer.cli import app

SOURCE = SAMPLES / "local-1795449716774.zstd"
"""A failed query with jobs, stages and executors."""
BACK_MS = 30 * 24 * 3600 * 1000
"""How far the inverted ends are put before their starts: a month."""

NEGATIVE = re.compile(r"(?<![\w.])-\d[\d,.]*\s*(?:ms|s|m|h|d|%)|-\d+m \d+s|ran -")


def _lines() -> list[bytes]:
    if not SOURCE.exists():
        pytest.skip(f"sample log {SOURCE} not present")
    with SOURCE.open("rb") as f:
        return (
            zstandard.ZstdDecompressor()
            .stream_reader(f, read_across_frames=True)
            .read()
            .split(b"\n")
        )


def _write(target: Path, change: Any) -> Path:
    lines = [orjson.dumps(change(orjson.loads(line))) for line in _lines() if line.strip()]
    target.write_bytes(b"\n".join(lines) + b"\n")
    return target


def _invert_all(event: dict[str, Any]) -> dict[str, Any]:
    name = event["Event"]
    if name == "SparkListenerApplicationEnd":
        event["Timestamp"] -= BACK_MS
    elif name.endswith("SQLExecutionEnd"):
        event["time"] -= BACK_MS
    elif name == "SparkListenerJobEnd":
        event["Completion Time"] -= BACK_MS
    elif name == "SparkListenerStageCompleted" and "Completion Time" in event["Stage Info"]:
        event["Stage Info"]["Completion Time"] -= BACK_MS
    return event


def _invert_app(event: dict[str, Any]) -> dict[str, Any]:
    if event["Event"] == "SparkListenerApplicationEnd":
        event["Timestamp"] -= BACK_MS
    return event


def _invert_sql(event: dict[str, Any]) -> dict[str, Any]:
    if event["Event"].endswith("SQLExecutionEnd"):
        event["time"] -= BACK_MS
    return event


CASES = {"all": _invert_all, "application": _invert_app, "sql": _invert_sql}


@pytest.fixture(scope="module", params=sorted(CASES))
def inverted_log(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    case: str = request.param
    return _write(tmp_path_factory.mktemp("times") / f"local-inverted-{case}", CASES[case])


@pytest.mark.parametrize("fmt", ["text", "html", "markdown", "json"])
def test_inverted_intervals_are_clamped_and_noted(
    runner: CliRunner, inverted_log: Path, fmt: str
) -> None:
    result = runner.invoke(app, ["report", str(inverted_log), "--format", fmt])
    assert result.exit_code == 0, result.output
    out = result.output
    if fmt == "json":
        document = json.loads(out)
        assert document["log"]["inverted_intervals"]
        application = document["application"]
        assert application["end_ms"] >= application["start_ms"]
        for execution in document["executions"]:
            if execution.get("end_ms") is not None:
                assert execution["end_ms"] >= execution["start_ms"]
        return
    assert "end before start in the log" in out
    assert NEGATIVE.search(out) is None, NEGATIVE.search(out)


def test_inverted_intervals_are_counted_per_kind(tmp_path: Path) -> None:
    analysis = api.analyze(_write(tmp_path / "local-inverted", _invert_all))
    counted = dict(analysis.application.inverted_intervals)
    assert counted["application"] == 1
    assert counted["SQL execution"] == len(analysis.application.executions)
    assert counted["job"] == len(analysis.application.jobs)
    assert counted["stage attempt"] >= 1
    assert all((e.duration_ms or 0) >= 0 for e in analysis.application.executions)
    assert all((j.completion_ms or 0) >= (j.submission_ms or 0) for j in analysis.application.jobs)
    assert all((s.duration_ms or 0) >= 0 for s in analysis.application.stages)
    assert analysis.application.duration_ms == 0


def _task_ends_before_launch(event: dict[str, Any]) -> dict[str, Any]:
    if event["Event"] == "SparkListenerTaskEnd":
        info = event["Task Info"]
        info["Finish Time"] = info["Launch Time"] - BACK_MS
    return event


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_task_attempts_ending_before_their_launch_last_0_ms(tmp_path: Path, fmt: str) -> None:
    log = _write(tmp_path / "local-tasks-inverted", _task_ends_before_launch)
    analysis = api.analyze(log)
    n_tasks = analysis.tasks.height
    assert dict(analysis.application.inverted_intervals)["task attempt"] == n_tasks
    assert analysis.tasks.frame()["duration_ms"].min() == 0
    args = ["report", str(log), "--format", fmt, "--metrics", "full"]
    out = CliRunner().invoke(app, args if fmt == "text" else args[:4]).output
    assert f"-{BACK_MS}" not in out
    if fmt == "text":
        assert f"end before start in the log ({n_tasks} task attempts)" in out
        assert NEGATIVE.search(out) is None, NEGATIVE.search(out)


def _longest_run_times(event: dict[str, Any]) -> dict[str, Any]:
    if event["Event"] == "SparkListenerTaskEnd" and event.get("Task Metrics"):
        event["Task Metrics"]["Executor Run Time"] = (1 << 63) - 1
    return event


def test_task_times_at_a_java_longs_limit_sum_without_wrapping(tmp_path: Path) -> None:
    # Summed, 2^63 - 1 ms per task wrapped into negative run times, and a finding said a stage
    # was held by the driver "while its tasks ran -3 ms".
    log = _write(tmp_path / "local-longest-runs", _longest_run_times)
    result = CliRunner().invoke(app, ["report", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    negative: list[str] = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for item in value:
                walk(item, f"{path}[]")
        elif type(value) is int and value < 0 and path.endswith("_ms"):
            negative.append(path)

    walk(json.loads(result.output), "")
    assert negative == []
    text = CliRunner().invoke(app, ["report", str(log)]).output
    assert NEGATIVE.search(text) is None, NEGATIVE.search(text)


def test_a_log_in_order_has_no_inverted_intervals() -> None:
    if not SOURCE.exists():
        pytest.skip(f"sample log {SOURCE} not present")
    analysis = api.analyze(SOURCE)
    assert analysis.application.inverted_intervals == ()
    assert analysis.outside_run == ()


def _executors_moved(ms: int) -> Any:
    def change(event: dict[str, Any]) -> dict[str, Any]:
        if event["Event"] == "SparkListenerExecutorAdded":
            event["Timestamp"] += ms
        return event

    return change


@pytest.mark.parametrize(("moved_ms", "flagged"), [(30_000, False), (10 * 60_000, True)])
def test_executors_added_after_the_run_are_noted_past_a_minute(
    tmp_path: Path, runner: CliRunner, moved_ms: int, flagged: bool
) -> None:
    """An executor added long after the application's end (a log joined from two runs) is
    named in the notes; seconds of a busy driver's lag are not."""
    log = _write(tmp_path / "local-moved", _executors_moved(moved_ms))
    analysis = api.analyze(log)
    application = analysis.application
    assert application.end_ms is not None
    outside = {kind: (n, ms) for kind, n, ms in analysis.outside_run}
    if not flagged:
        assert "executor" not in outside
        return
    spans = analysis.executor_task_spans
    away = [
        max(
            e.added_ms - application.end_ms, e.added_ms - spans.get(e.executor_id, (e.added_ms,))[0]
        )
        for e in application.executors
        if e.added_ms is not None
    ]
    assert outside["executor"] == (len(away), max(away))
    result = runner.invoke(app, ["report", str(log), "--format", "text"])
    assert result.exit_code == 0, result.output
    assert "timed outside the application's run in the log (1 executor, up to" in result.output


def test_a_public_log_with_executors_from_another_time_is_noted(runner: CliRunner) -> None:
    """rapids-tools' `databricks-aws` logs its two executors 593 days after the application's
    end: the cost line counts no core-hours for them, and the notes say why."""
    log = PUBLIC_CORPUS / "databricks-aws"
    analysis = api.analyze(log)
    assert analysis.outside_run == (("executor", 2, 51_230_136_906),)
    result = runner.invoke(app, ["report", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["log"]["outside_run"] == {
        "executor": {"count": 2, "farthest_ms": 51_230_136_906}
    }


def test_a_public_log_with_a_streaming_query_from_another_time_is_noted() -> None:
    """rapids-tools' `streaming_eventlog` ran 17.7 s in 2021; its streaming query's own events
    are stamped 2024 (a 1h 34m run, a batch of 2m 39s): the notes say its times are not this
    run's, so its streaming section is not taken at its word."""
    analysis = api.analyze(PUBLIC_CORPUS / "streaming_eventlog.zstd")
    assert [(kind, n) for kind, n, _ in analysis.outside_run] == [("streaming query run", 1)]


def test_a_log_without_an_end_event_is_checked_against_its_start_only(tmp_path: Path) -> None:
    """A log still being written has no end: its last task's end stands in for it, and an
    executor removed minutes later is no sign of a joined log (dynamic allocation releases
    idle executors long after the last task)."""

    def still_running(event: dict[str, Any]) -> dict[str, Any] | None:
        if event["Event"] == "SparkListenerApplicationEnd":
            return None
        if event["Event"] == "SparkListenerExecutorRemoved":
            event["Timestamp"] += 10 * 60_000
        return event

    released = sample("app-20261127133706-0000.zstd")  # dynamic allocation: executors removed
    with released.open("rb") as f:
        text = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    lines = [
        orjson.dumps(changed)
        for line in text.split(b"\n")
        if line.strip() and (changed := still_running(orjson.loads(line))) is not None
    ]
    log = tmp_path / "app-running"
    log.write_bytes(b"\n".join(lines) + b"\n")
    analysis = api.analyze(log)
    assert not analysis.application.completed
    assert [e for e in analysis.application.executors if e.removed_ms is not None]
    assert analysis.outside_run == ()
    # With its end event, the same moved removals are named.
    ended = tmp_path / "app-ended"
    ended.write_bytes(log.read_bytes() + orjson.dumps(_end_of(text)) + b"\n")
    assert [kind for kind, _, _ in api.analyze(ended).outside_run] == ["executor"]


def _end_of(text: bytes) -> dict[str, Any]:
    for line in text.split(b"\n"):
        if b"SparkListenerApplicationEnd" in line:
            event: dict[str, Any] = orjson.loads(line)
            return event
    raise AssertionError("no ApplicationEnd in the sample")


def test_an_executor_added_after_its_own_tasks_is_noted_without_an_end_event(
    tmp_path: Path,
) -> None:
    """No executor runs a task before it exists: one logged as added 10 minutes after its first
    task launched is named though the log has no end event."""
    released = sample("app-20261127133706-0000.zstd")
    with released.open("rb") as f:
        text = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    lines = []
    for line in text.split(b"\n"):
        if not line.strip() or b"SparkListenerApplicationEnd" in line:
            continue
        event = orjson.loads(line)
        if event["Event"] == "SparkListenerExecutorAdded" and event["Executor ID"] == "0":
            event["Timestamp"] += 10 * 60_000
        lines.append(orjson.dumps(event))
    log = tmp_path / "app-added-late"
    log.write_bytes(b"\n".join(lines) + b"\n")
    analysis = api.analyze(log)
    assert not analysis.application.completed
    (added,) = [e.added_ms for e in analysis.application.executors if e.executor_id == "0"]
    assert added is not None
    first_task_ms = analysis.executor_task_spans["0"][0]
    assert analysis.outside_run == (("executor", 1, added - first_task_ms),)


def test_sql_ends_of_executions_that_never_started_make_no_execution(tmp_path: Path) -> None:
    # Spark's SQL listener ignores an end event for an execution it does not know: 500 stray
    # ends made 500 "COMPLETED" executions with no start and no plan.
    lines = [line for line in _lines() if line.strip()]
    stray = [
        orjson.dumps(
            {
                "Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd",
                "executionId": 10_000 + i,
                "time": 1_795_449_716_774 + i,
            }
        )
        for i in range(500)
    ]
    log = tmp_path / "local-stray-ends"
    log.write_bytes(b"\n".join([*lines[:-1], *stray, lines[-1]]) + b"\n")
    original = api.analyze(str(SOURCE))
    analysis = api.analyze(str(log))
    ids = [e.execution_id for e in analysis.application.executions]
    assert ids == [e.execution_id for e in original.application.executions]


def test_an_executors_task_time_is_never_negative(tmp_path: Path) -> None:
    # On a cluster, an executor's row sums its tasks' durations: an attempt ending before its
    # launch adds 0 ms there too, not a month less.
    cluster_log = SAMPLES / "app-20261122042434-0000.zstd"
    if not cluster_log.exists():
        pytest.skip(f"sample log {cluster_log} not present")
    with cluster_log.open("rb") as f:
        lines = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    changed = [
        orjson.dumps(_task_ends_before_launch(orjson.loads(line)))
        for line in lines.split(b"\n")
        if line.strip()
    ]
    log = tmp_path / "app-tasks-inverted"
    log.write_bytes(b"\n".join(changed) + b"\n")
    document = json.loads(CliRunner().invoke(app, ["report", str(log), "-f", "json"]).output)
    assert document["log"]["inverted_intervals"]["task attempt"] > 0
    assert all(e["total_duration_ms"] >= 0 for e in document["executors"])
