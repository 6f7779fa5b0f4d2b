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
from eventlog_samples import PUBLIC_CORPUS, SAMPLES
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


def test_a_log_in_order_has_no_inverted_intervals() -> None:
    if not SOURCE.exists():
        pytest.skip(f"sample log {SOURCE} not present")
    application = api.analyze(SOURCE).application
    assert application.inverted_intervals == ()
    assert application.outside_run == ()


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
    application = api.analyze(log).application
    assert application.end_ms is not None
    outside = {kind: (n, ms) for kind, n, ms in application.outside_run}
    if not flagged:
        assert "executor" not in outside
        return
    added = [e.added_ms for e in application.executors if e.added_ms is not None]
    assert outside["executor"] == (len(added), max(added) - application.end_ms)
    result = runner.invoke(app, ["report", str(log), "--format", "text"])
    assert result.exit_code == 0, result.output
    assert "timed outside the application's run in the log (1 executor, up to" in result.output


def test_a_public_log_with_executors_from_another_time_is_noted(runner: CliRunner) -> None:
    """rapids-tools' `databricks-aws` logs its two executors 593 days after the application's
    end: the cost line counts no core-hours for them, and the notes say why."""
    log = PUBLIC_CORPUS / "databricks-aws"
    analysis = api.analyze(log)
    assert analysis.application.outside_run == (("executor", 2, 51_230_136_906),)
    result = runner.invoke(app, ["report", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["log"]["outside_run"] == {
        "executor": {"count": 2, "farthest_ms": 51_230_136_906}
    }
