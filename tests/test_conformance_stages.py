"""Conformance: stage task quantiles, executor summaries and jobs equal Spark's History Server's.

For every application attempt the History Server lists (sample_eventlogs/ and the public logs),
every stage attempt's `taskSummary` at seven quantiles must equal `stage_task_summaries`, every
entry of `/allexecutors` must equal `executor_summaries` field for field, and every job of
`/jobs` must have our name, description, group, tags and stage ids. Zero differences allowed;
the one documented exception (docs/metrics.md) is excluded by name below. Logs written by an
older Spark version (`sample_eventlogs/spark-<X.Y>/`) are compared with the saved answers of
that version's own History Server (`tests/oracle/saved.py`); a History Server before Spark 3.4
has no field for the shuffle read metrics 3.4 added (`ADDED_IN_3_4`), so against its answers
those are checked absent and not compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import version_dirs
from oracle import HistoryServer
from oracle.saved import SUMMARY_QUANTILES, SavedHistoryServer

from analyzer import api
from analyzer.aggregate.executor_summary import ExecutorSummary, executor_summaries
from analyzer.aggregate.stage_summary import SUMMARY_METRICS, stage_task_summaries
from analyzer.errors import Strictness
from analyzer.model.application import DRIVER_ID, Job

Oracle = HistoryServer | SavedHistoryServer
"""A running History Server, or the saved answers of an older version's."""

QUANTILES = SUMMARY_QUANTILES

ADDED_IN_3_4 = frozenset({"remoteReqsDuration", "shufflePushReadMetricsDist"})
"""Task summary fields of `shuffleReadMetrics` that Spark 3.4 added (push-based shuffle's
client-side metrics, SPARK-36620): a History Server before 3.4 answers none of them, and its
logs carry none of the task metrics they come from."""


def _epoch_ms(value: str | None) -> int | None:
    """Parse the SHS's `yyyy-MM-dd'T'HH:mm:ss.SSS'GMT'` dates."""
    if value is None:
        return None
    parsed = datetime.strptime(value.removesuffix("GMT"), "%Y-%m-%dT%H:%M:%S.%f")
    return round(parsed.replace(tzinfo=UTC).timestamp() * 1000)


def _executor_fields(e: ExecutorSummary) -> dict[str, Any]:
    """Our executor summary under the REST API's field names."""
    return {
        "hostPort": e.host_port,
        "isActive": e.is_active,
        "totalCores": e.total_cores,
        "maxTasks": e.max_tasks,
        "maxMemory": e.max_memory_bytes,
        "addTime": e.add_time_ms,
        "removeTime": e.remove_time_ms,
        "removeReason": e.remove_reason,
        "activeTasks": e.n_active_tasks,
        "completedTasks": e.n_completed_tasks,
        "failedTasks": e.n_failed_tasks,
        "totalTasks": e.n_total_tasks,
        "totalDuration": e.total_duration_ms,
        "totalGCTime": e.total_gc_time_ms,
        "totalInputBytes": e.total_input_bytes,
        "totalShuffleRead": e.total_shuffle_read_bytes,
        "totalShuffleWrite": e.total_shuffle_write_bytes,
    }


def _job_fields(job: Job) -> dict[str, Any]:
    return {
        "name": job.name,
        "description": job.description,
        "jobGroup": job.job_group,
        "jobTags": sorted(job.job_tags),
        "stageIds": list(job.stage_ids),
    }


@dataclass
class Totals:
    """What was compared, and every difference found."""

    n_apps: int = 0
    n_stage_attempts: int = 0
    n_values: int = 0
    n_executors: int = 0
    n_executor_fields: int = 0
    n_jobs: int = 0
    n_excluded: int = 0
    n_not_answered: int = 0
    """Stage attempts' metrics the History Server's version has no field for (`ADDED_IN_3_4`)."""
    diffs: list[str] = field(default_factory=list)


def _same(rest: Any, ours: int | None) -> bool:
    if isinstance(rest, float) and math.isnan(rest):
        return ours is None
    return ours is not None and rest == ours


def _answers_before_3_4(shs: Oracle) -> bool:
    """Return True if the History Server is older than Spark 3.4 (no `ADDED_IN_3_4` fields)."""
    major, minor = (int(part) for part in shs.spark_version.split(".")[:2])
    return (major, minor) < (3, 4)


def _compare_stages(
    where: str, shs: Oracle, app_id: str, attempt_id: str | None, ours: Any, t: Totals
) -> None:
    before_3_4 = _answers_before_3_4(shs)
    listed = set()
    for stage in shs.stages(app_id, attempt_id):
        key = (stage["stageId"], stage["attemptId"])
        listed.add(key)
        rest = shs.task_summary(app_id, *key, QUANTILES, attempt_id)
        mine = ours.get(key)
        label = f"{where} stage {key[0]}.{key[1]}"
        if rest is None or mine is None:
            if rest is not mine:
                t.diffs.append(
                    f"{label}: SHS {'none' if rest is None else 'a summary'}, ours "
                    f"{'none' if mine is None else 'a summary'}"
                )
            continue
        t.n_stage_attempts += 1
        assert rest["quantiles"] == list(mine.quantiles)
        for metric, values in mine.metrics():
            if before_3_4 and ADDED_IN_3_4.intersection(metric.rest_path):
                assert metric.rest_path[1] not in rest[metric.rest_path[0]], label
                t.n_not_answered += 1
                continue
            expected = rest
            for part in metric.rest_path:
                expected = expected[part]
            for q, r, v in zip(QUANTILES, expected, values, strict=True):
                t.n_values += 1
                if not _same(r, v):
                    t.diffs.append(f"{label} {metric.field} q={q}: SHS {r} ours {v}")
    for key in sorted(set(ours) - listed):
        t.diffs.append(f"{where} stage {key[0]}.{key[1]}: ours has a summary, SHS no stage")


def _compare_executors(
    where: str,
    rest: list[dict[str, Any]],
    ours: tuple[ExecutorSummary, ...],
    completed: bool,
    t: Totals,
) -> None:
    mine = {e.executor_id: e for e in ours}
    for entry in rest:
        t.n_executors += 1
        executor = mine.pop(entry["id"], None)
        if executor is None:
            t.diffs.append(f"{where} executor {entry['id']}: missing")
            continue
        for name, value in _executor_fields(executor).items():
            expected = entry.get(name)
            if name in ("addTime", "removeTime"):
                expected = _epoch_ms(expected)
            if name == "totalDuration" and entry["id"] == DRIVER_ID and not completed:
                # Documented: for an application without ApplicationEnd, Spark gives the driver
                # "now" minus the start time, which changes from one request to the next.
                t.n_excluded += 1
                continue
            t.n_executor_fields += 1
            if expected != value:
                t.diffs.append(
                    f"{where} executor {entry['id']} {name}: SHS {expected!r} ours {value!r}"
                )
    for executor_id in mine:
        t.diffs.append(f"{where} executor {executor_id}: ours only")


def _compare_jobs(where: str, rest: list[dict[str, Any]], ours: tuple[Job, ...], t: Totals) -> None:
    mine = {j.job_id: j for j in ours}
    for entry in rest:
        t.n_jobs += 1
        job = mine.get(entry["jobId"])
        if job is None:
            t.diffs.append(f"{where} job {entry['jobId']}: missing")
            continue
        for name, value in _job_fields(job).items():
            expected = entry.get(name)
            if name == "jobTags":
                expected = sorted(expected or [])  # a Scala Set: hash order
            if expected != value:
                t.diffs.append(
                    f"{where} job {entry['jobId']} {name}: SHS {expected!r} ours {value!r}"
                )


def compare_all(history_server: Oracle) -> Totals:
    """Compare the stages, executors and jobs of every application attempt the oracle lists."""
    t = Totals()
    for app in history_server.applications():
        for attempt in app["attempts"]:
            attempt_id = attempt.get("attemptId")
            where = f"{app['id']}/{attempt_id}"
            path = history_server.log_path_of(app["id"], attempt_id)
            analysis = api.analyze(str(path), Strictness.LENIENT)
            t.n_apps += 1
            _compare_stages(
                where,
                history_server,
                app["id"],
                attempt_id,
                stage_task_summaries(analysis, QUANTILES),
                t,
            )
            _compare_executors(
                where,
                history_server.executors(app["id"], attempt_id),
                executor_summaries(analysis.application),
                bool(attempt.get("completed")),
                t,
            )
            _compare_jobs(
                where, history_server.jobs(app["id"], attempt_id), analysis.application.jobs, t
            )
    return t


def _summary(t: Totals) -> str:
    return (
        f"{t.n_apps} applications: {t.n_stage_attempts} "
        f"stage attempts, {t.n_values} quantile values ({len(SUMMARY_METRICS)} metrics x "
        f"{len(QUANTILES)} quantiles; {t.n_not_answered} stage metrics this SHS has no field "
        f"for), {t.n_executors} executors ({t.n_executor_fields} "
        f"fields, {t.n_excluded} excluded), {t.n_jobs} jobs; {len(t.diffs)} differences"
    )


@pytest.mark.spark
@pytest.mark.slow
def test_stage_quantiles_executors_and_jobs_match_the_history_server(
    history_server: HistoryServer, capsys: pytest.CaptureFixture[str]
) -> None:
    t = compare_all(history_server)
    with capsys.disabled():
        print(f"\nstage/executor conformance over {_summary(t)}")
    assert t.n_apps >= 10
    assert t.n_stage_attempts > 100
    assert t.diffs == []


def _version_params() -> list[Any]:
    found = [pytest.param(d, id=d.name) for d in version_dirs()]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no older-version samples"))]


@pytest.mark.parametrize("log_dir", _version_params())
def test_older_version_stages_executors_and_jobs_match_their_own_history_server(
    log_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each older version's logs against the saved answers of that version's History Server."""
    saved = SavedHistoryServer(log_dir)
    t = compare_all(saved)
    with capsys.disabled():
        print(f"\n{log_dir.name} (SHS {saved.spark_version}) stages/executors: {_summary(t)}")
    assert t.n_apps >= 8
    assert t.n_stage_attempts > 50
    assert t.diffs == []
