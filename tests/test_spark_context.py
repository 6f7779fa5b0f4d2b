"""Stage task quantiles, executor summaries, jobs and the environment, on real logs.

The expected values were checked once by hand against the task-end events of the logs (and they
equal what Spark's History Server answers; test_conformance_stages.py checks that on every log).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from eventlog_builder import (
    application_end,
    application_start,
    environment_update,
    job_start,
    log_start,
    plan_node,
    sql_execution_start,
    write_log,
)
from eventlog_samples import SAMPLES, public

from analyzer import api
from analyzer.aggregate.executor_summary import executor_summaries
from analyzer.aggregate.stage_summary import (
    SPARK_DEFAULT_QUANTILES,
    SUMMARY_METRICS,
    StageTaskSummary,
    stage_task_summaries,
)
from analyzer.model.config_secrets import REDACTED

EXECUTOR_LOST = SAMPLES / "app-20261122042434-0000.zstd"
"""local-cluster, executor 1 killed in the reduce stage: FetchFailed, ExecutorLostFailure, stage
attempts 1 of stages 2 and 3."""
QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


@pytest.fixture(scope="module")
def executor_lost() -> api.Analysis:
    if not EXECUTOR_LOST.exists():
        pytest.skip(f"{EXECUTOR_LOST} not present")
    return api.analyze(str(EXECUTOR_LOST))


def test_failed_tasks_count_in_durations_but_not_in_metrics(executor_lost: api.Analysis) -> None:
    # Stage 3.0: tasks 12 and 13 succeeded (2639 and 1721 ms, run 2522 and 1593 ms), tasks 14
    # (ExecutorLostFailure, 604 ms), 15 and 16 (FetchFailed, 1528 and 94 ms) did not. Spark ranks
    # over n = 2 tasks but keeps the failed ones in the durations: the two lowest of
    # [94, 604, 1528, 1721, 2639] are both failed attempts.
    summary = stage_task_summaries(executor_lost, QUANTILES)[(3, 0)]
    assert summary.n_tasks == 2
    assert summary.duration_ms == (94, 94, 604, 604, 604)
    assert summary.executor_run_time_ms == (1593, 1593, 2522, 2522, 2522)
    assert summary.shuffle_read_bytes == (587, 587, 814, 814, 814)
    assert summary.at("shuffle_read_bytes", 1.0) == 814


def test_scheduler_delay_is_what_duration_leaves(executor_lost: api.Analysis) -> None:
    # Stage 3.1: task 19 took 1479 ms (run 1355, deserialize 79) and task 20 1301 ms (run 1227,
    # deserialize 6), no serialization or result fetch: delays 45 and 68 ms.
    summary = stage_task_summaries(executor_lost, QUANTILES)[(3, 1)]
    assert summary.quantiles == QUANTILES
    assert summary.duration_ms == (1301, 1301, 1479, 1479, 1479)
    assert summary.scheduler_delay_ms == (45, 45, 68, 68, 68)
    assert summary.executor_deserialize_time_ms == (6, 6, 79, 79, 79)
    assert summary.getting_result_time_ms == (0, 0, 0, 0, 0)


def test_every_stage_attempt_with_tasks_has_a_summary(executor_lost: api.Analysis) -> None:
    summaries = stage_task_summaries(executor_lost)
    assert sorted(summaries) == [(0, 0), (1, 0), (2, 0), (2, 1), (3, 0), (3, 1)]
    for summary in summaries.values():
        assert summary.quantiles == SPARK_DEFAULT_QUANTILES
        for metric, values in summary.metrics():
            assert len(values) == len(SPARK_DEFAULT_QUANTILES), metric.field
            present = [v for v in values if v is not None]
            assert present == sorted(present), metric.field


def test_summary_metrics_cover_the_dataclass() -> None:
    fields = set(StageTaskSummary.__dataclass_fields__)
    per_quantile = fields - {"stage_id", "stage_attempt_id", "quantiles", "n_tasks"}
    assert per_quantile == {m.field for m in SUMMARY_METRICS}
    assert {m.unit for m in SUMMARY_METRICS} == {"ms", "ns", "bytes", "count"}


@pytest.mark.parametrize("bad", [(), (1.5,), (-0.1, 0.5)])
def test_quantiles_outside_0_1_are_refused(executor_lost: api.Analysis, bad: tuple[float]) -> None:
    with pytest.raises(ValueError, match="quantiles"):
        stage_task_summaries(executor_lost, bad)


def test_executor_summaries_follow_spark(executor_lost: api.Analysis) -> None:
    by_id = {e.executor_id: e for e in executor_summaries(executor_lost.application)}
    assert list(by_id) == ["driver", "0", "1"]
    lost = by_id["1"]
    assert (lost.is_active, lost.remove_reason) == (False, "Command exited with code 137")
    assert (lost.n_total_tasks, lost.n_completed_tasks, lost.n_failed_tasks) == (8, 7, 1)
    assert (lost.total_cores, lost.max_tasks, lost.max_memory_bytes) == (1, 1, 133378867)
    assert lost.host_port == "192.0.2.2:38653"
    survivor = by_id["0"]
    assert (survivor.n_total_tasks, survivor.n_completed_tasks, survivor.n_failed_tasks) == (
        13,
        11,
        2,
    )
    assert survivor.total_duration_ms == 16547
    assert survivor.total_shuffle_read_bytes == 3054
    # The driver ran no task here: its "duration" is the application's (only a block manager
    # registered for it, so it has no cores).
    driver = by_id["driver"]
    assert driver.total_duration_ms == executor_lost.application.duration_ms == 38349
    assert (driver.total_cores, driver.n_total_tasks, driver.total_gc_time_ms) == (0, 0, 0)
    assert driver.host_port == "127.0.0.1:35817"


def test_driver_gc_is_its_jvm_peak_not_the_task_sum() -> None:
    analysis = api.analyze(str(public("local-1642039451826")))
    (driver,) = analysis.application.executors
    assert (driver.gc_time_ms, driver.peak_total_gc_ms) == (88, 473)
    (summary,) = executor_summaries(analysis.application)
    assert summary.total_gc_time_ms == 473
    assert (summary.total_cores, summary.max_tasks, summary.n_total_tasks) == (8, 8, 35)


def test_jobs_have_name_description_group_and_tags(executor_lost: api.Analysis) -> None:
    first, second = executor_lost.application.jobs
    script = "/work/main/scripts/make_sample_eventlogs.py"
    assert first.name == f"collect at {script}:465"
    assert (first.description, first.job_group, first.stage_ids) == (None, None, (0, 1))
    assert second.name == f"collect at {script}:468"
    assert second.description == "reduce stage loses executor 1"
    assert second.job_group == "lose-executor"
    assert second.stage_ids == (2, 3)
    assert len(second.job_tags) == 2 and second.job_tags == tuple(sorted(second.job_tags))


def test_environment_keeps_the_jvm_and_a_few_system_properties(
    executor_lost: api.Analysis,
) -> None:
    env = executor_lost.application.environment
    assert env.java_version == "17.0.15 (Debian)"
    assert env.scala_version == "version 2.13.18"
    system = dict(env.system_properties)
    assert system["java.version"] == "17.0.15" and system["user.timezone"] == "Etc/UTC"
    assert "java.class.path" not in system and "sun.java.command" not in system
    props = dict(env.spark_properties)
    assert props["spark.app.name"] == "sea-executor-lost"
    assert env.spark_properties == executor_lost.application.spark_properties


def test_secrets_never_reach_the_model(tmp_path: Path) -> None:
    secret = "hunter2-s3cr3t"
    properties = {
        "spark.app.name": "vault-demo",
        "spark.hadoop.fs.s3a.secret.key": secret,
        "spark.hadoop.fs.s3a.access.key": secret,
        "spark.ssl.keyStorePassword": "*********(redacted)",
        "spark.driver.extraJavaOptions": f"-Dapi.token={secret}",
    }
    system = {"java.version": "17.0.9", "sun.java.command": f"Main --password {secret}"}
    configs = {"spark.sql.catalog.x.token": secret, "spark.sql.a": "b"}
    events = [
        log_start(),
        environment_update(properties, system),
        application_start("local-1700000000001", "vault-demo", timestamp_ms=1),
        sql_execution_start(0, plan_node("LocalTableScan"), 2, modifiedConfigs=configs),
        job_start(0, 3, properties={"spark.job.description": "load users"}),
        application_end(4),
    ]
    log = write_log(tmp_path / "local-1700000000001", events)
    app = api.analyze(str(log)).application
    assert secret not in app.model_dump_json()
    props = dict(app.environment.spark_properties)
    assert props["spark.hadoop.fs.s3a.secret.key"] == REDACTED
    assert props["spark.hadoop.fs.s3a.access.key"] == REDACTED
    assert props["spark.ssl.keyStorePassword"] == REDACTED
    assert props["spark.driver.extraJavaOptions"] == REDACTED
    assert props["spark.app.name"] == "vault-demo"
    assert dict(app.executions[0].modified_configs) == {
        "spark.sql.a": "b",
        "spark.sql.catalog.x.token": REDACTED,
    }
    assert app.jobs[0].description == "load users"
    assert app.environment.java_version == "17.0.9"


def test_rdd_jobs_and_their_stages_are_in_the_model() -> None:
    log = SAMPLES / "local-1795322404204"
    if not log.exists():
        pytest.skip(f"{log} not present")
    app = api.analyze(str(log)).application
    assert app.executions == ()
    script = "/work/main/scripts/make_sample_eventlogs.py"
    assert [(j.job_id, j.execution_id, j.name, j.stage_ids) for j in app.jobs] == [
        (0, None, f"collect at {script}:476", (0, 1)),
        (1, None, f"sum at {script}:478", (2,)),
    ]
    assert [(s.stage_id, s.name, s.job_ids, s.n_task_attempts) for s in app.stages] == [
        (0, f"reduceByKey at {script}:476", (0,), 4),
        (1, f"collect at {script}:476", (0,), 3),
        (2, f"sum at {script}:478", (1,), 4),
    ]
    summaries = stage_task_summaries(api.analyze(str(log)), (0.5,))
    assert sorted(summaries) == [(0, 0), (1, 0), (2, 0)]


def test_tasks_still_running_at_the_end_of_a_cut_log() -> None:
    app = api.analyze(str(public("truncated_eventlog"))).application
    assert not app.completed
    unfinished = {(s.stage_id, s.attempt_id): s.n_unfinished_tasks for s in app.stages}
    assert {k: n for k, n in unfinished.items() if n} == {(1, 0): 2, (2, 0): 1}
    (driver,) = executor_summaries(app)
    assert (driver.n_total_tasks, driver.n_completed_tasks, driver.n_active_tasks) == (24, 21, 3)
    # Spark would take "now" as the end of an unfinished application; the last event here.
    assert driver.total_duration_ms == app.duration_ms
