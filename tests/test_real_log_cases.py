"""Labelled real-world logs: for every public log, what a Spark performance engineer reading its
raw events says leads, checked against what the report leads with.

Each case names the expected top rule among the findings above `info` (None: no warning or
critical finding at all). On every log, rules whose advice cannot apply are forbidden: no
dynamic-allocation advice in local mode or where it is already on, no smaller file splits
(`maxPartitionBytes`) for a task that read a single row group. The table in docs/findings.md
("Labelled real-world logs") lists the same cases; `test_the_table_lists_every_case` keeps the
two in step. The estimate bound is `tests/test_estimates.py`.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache
from pathlib import Path

import pytest
from eventlog_samples import REPO, SAMPLES, public_logs
from oracle.locations import PUBLIC_EVENTLOGS

from analyzer import api
from analyzer.errors import Strictness
from analyzer.insights import detect_all
from analyzer.insights.executor_wait import registered_before_wait
from analyzer.insights.finding import Finding
from analyzer.insights.idle_session import context_startup_ms
from analyzer.insights.large_results import detect_large_results, result_wall_ms
from analyzer.insights.task_skew import detect_task_skew
from analyzer.insights.thresholds import Thresholds
from analyzer.report.batch_index import IndexEntry, build_index_view, summarize
from analyzer.report.options import ReportOptions

EXPECTED_TOP: dict[str, str | None] = {
    "attempt_1_eventlog.zstd": "data-skew",
    "attempt_2_eventlog.zstd": "data-skew",
    "attempt_3_eventlog.zstd": "data-skew",
    "attempt_4_eventlog.zstd": "data-skew",
    "join_agg_on_yarn_eventlog.zstd": "data-skew",
    "complex_dec_eventlog.zstd": "failed-job",
    "customshuffle_eventlog.zstd": "memory-pressure",
    "aqeshuffle_eventlog.zstd": "memory-pressure",
    "eventlog_4nodes_8cores_dynamic_alloc.zstd": "cold-executors",
    "nds_q66_gpu.zstd": "scheduler-delay",
    "pandas_execs_eventlog.zstd": "too-many-partitions",
    "rp_nosql_eventlog": "executor-wait",
    "rp_sql_eventlog.zstd": "executor-wait",
    "malformed_json_eventlog.zstd": "executor-wait",
    "tasks_executors_fail_compressed_eventlog.zstd": "failed-query",
    "gpu_oom_eventlog.zstd": "failed-query",
    "nds_q72_dataproc_2_2.zstd": "row-explosion",
    "eventlog_v2_spark-110be3a8424d4a2789cb88134418217b": "idle-cores",
    "application_1472176676028_407508_1.zstd": "memory-pressure",
    "event_log_1.zstd": "scheduler-delay",
}
"""The logs with a finding that leads; every other public log raises no warning."""

FORBIDDEN: dict[str, tuple[str, ...]] = {
    # Five 1-task stages held by the driver: not a partitioning problem, and one stall.
    "nds_q66_gpu.zstd": ("idle-cores", "gc-pressure"),
    # Stages waiting for executors are not idle cores; stage 28 queued for the slots of stage
    # 27 while dynamic allocation's released executors sat idle: not a driver stall.
    "eventlog_4nodes_8cores_dynamic_alloc.zstd": ("idle-cores", "gc-pressure", "scheduler-delay"),
    # Stages queued for slots behind each other are neither idle nor held by the driver.
    "eventlog_v2_app-20240919162642-0000": ("idle-cores", "scheduler-delay"),
    # The cost is the partition count, not the Python in each partition. Its slow task (1.5 s
    # on 504 B, where another read 548 B in 112 ms) is not skew, and in local mode no other
    # host could have re-run it.
    "pandas_execs_eventlog.zstd": ("tiny-tasks", "task-skew"),
    # The query failed: its spill and its lost executor are the failure's evidence.
    "gpu_oom_eventlog.zstd": ("spill", "gc-pressure", "memory-pressure", "scheduler-delay"),
}
"""Rules that must not fire (at any severity) on a log, beyond the checks every log gets."""


@cache
def _findings(log: Path) -> tuple[bool, bool, tuple[Finding, ...]]:
    analysis = api.analyze(str(log), Strictness.LENIENT)
    cap = analysis.capacity
    return cap.local_mode, cap.dynamic_allocation, tuple(detect_all(analysis))


def _params() -> list[object]:
    return [pytest.param(log, id=f"{log.parent.name}/{log.name}") for log in public_logs()]


@pytest.mark.parametrize("log", _params())
def test_the_report_leads_with_what_an_expert_would(log: Path) -> None:
    _local, _dynamic, findings = _findings(log)
    loud = [f for f in findings if f.severity != "info"]
    expected = EXPECTED_TOP.get(log.name)
    if expected is None:
        assert loud == [], [(f.rule, f.title) for f in loud]
    else:
        assert loud and loud[0].rule == expected, [(f.rule, f.title) for f in loud[:3]]


@pytest.mark.parametrize("log", _params())
def test_no_advice_that_cannot_apply(log: Path) -> None:
    local, dynamic, findings = _findings(log)
    rules = {f.rule for f in findings}
    assert not rules & set(FORBIDDEN.get(log.name, ())), sorted(rules)
    for f in findings:
        if local or dynamic:
            assert "enable spark.dynamicAllocation.enabled" not in f.suggestion, f.title
        if local:
            assert f.rule != "idle-executors"
            assert f.rule != "executor-wait"
            # Spark's TaskSchedulerImpl never starts speculation in local mode.
            assert "spark.speculation" not in {a.setting for a in f.advice}, f.title
            assert "spark.speculation=true" not in f.suggestion, f.title


def test_q66_stall_is_one_finding_naming_the_driver() -> None:
    log = next(p for p in public_logs() if p.name == "nds_q66_gpu.zstd")
    _local, _dynamic, findings = _findings(log)
    in_query = [f for f in findings if f.execution_id == 24]
    assert [f.rule for f in in_query] == ["scheduler-delay"]
    stall = in_query[0]
    assert "scheduler delay" in stall.title and "Driver" in stall.title
    assert stall.evidence[0].value == "31, 32, 33, 34, 35"
    assert 11_000 <= stall.estimated_lost_ms <= 12_200  # one 11 s stall, not five


def test_pandas_udf_log_says_the_partition_count_to_set() -> None:
    log = next(p for p in public_logs() if p.name == "pandas_execs_eventlog.zstd")
    _local, _dynamic, findings = _findings(log)
    top = findings[0]
    assert top.rule == "too-many-partitions"
    assert top.number("partitions_to_set") == 8
    assert "spark.sql.shuffle.partitions=8" in top.suggestion


K8S_TAXI = "eventlog_v2_spark-110be3a8424d4a2789cb88134418217b"


def test_a_write_that_reads_the_querys_repartition_is_told_to_raise_it() -> None:
    # Stage 7 writes 125.7 million rows in the two tasks `RoundRobinPartitioning(2),
    # REPARTITION_BY_NUM` asked for, on 4 task slots: the setting does not size that shuffle.
    findings = _public_findings(K8S_TAXI)
    idle = next(f for f in findings if f.rule == "idle-cores" and f.stage_id == 7)
    assert idle.number("repartition") == 2
    assert "repartition(2)" in idle.suggestion and "AQE coalesced" not in idle.suggestion
    assert [(a.setting, a.value) for a in idle.advice] == [("spark.sql.shuffle.partitions", None)]
    [huge] = [f for f in findings if f.rule == "partition-size"]
    assert "raise the query's repartition(2) to 81" in huge.suggestion
    assert [(a.setting, a.value) for a in huge.advice] == [("spark.sql.shuffle.partitions", None)]


def test_a_coalesce_before_a_write_is_named_with_no_setting() -> None:
    # coalesce(1) runs the scan of 16 files and the hashing of 4M rows in the write's one task.
    # Spark 4 counts 84.8 KiB of Input for 272.3 MiB of files: the scan's file size counts.
    analysis = api.analyze(str(SAMPLES / "local-1795785701478.zstd"))
    [idle] = [f for f in api.find_issues(analysis) if f.rule == "idle-cores"]
    assert idle.number("coalesce") == 1 and idle.advice == ()
    assert "coalesce(1)" in idle.suggestion and "maxPartitionBytes" not in idle.suggestion
    stats = analysis.stage_stats[(idle.stage_id, 0)]
    assert stats.read_sum_bytes < 1 << 20


def test_a_round_robin_repartition_spill_is_named_at_its_exchange() -> None:
    # repartition(8) then partitionBy(day) on a 640 MiB driver: stage 1's map tasks sort their
    # rows before dealing them out round-robin and spill; stage 3 reads the repartition(8) and
    # its write's Sort by day spills.
    analysis = api.analyze(str(SAMPLES / "local-1795786211853.zstd"))
    spills = {f.stage_id: f for f in api.find_issues(analysis) if f.rule == "spill"}
    write = spills[1]
    assert write.title.endswith("in the shuffle write of node 5 Exchange")
    assert "sortBeforeRepartition" in write.suggestion
    assert not [e for e in write.evidence if e.label.startswith("spill size")]
    read = spills[3]
    advice = {a.setting: a for a in read.advice}
    assert advice["spark.sql.shuffle.partitions"].value is None
    assert "repartition(8)" in advice["spark.sql.shuffle.partitions"].arithmetic


def test_dynamic_allocation_release_and_start_up_are_told_apart() -> None:
    # local-cluster, idle timeout 5 s: executors 0 and 1 came at +11.4 s and +13.8 s (stage 0
    # was submitted at +6.6 s), were released at +25.4 s and +27.4 s, and stage 3 came at
    # +37.5 s, 20 s after the first query's end, and waited for executors 2 and 3.
    analysis = api.analyze(str(SAMPLES / "app-20261127133706-0000.zstd"))
    waits = {f.stage_id: f for f in api.find_issues(analysis) if f.rule == "executor-wait"}
    first, released = waits[0], waits[3]
    assert first.severity == "info" and first.advice == ()
    assert first.title.endswith("(the application's first)")
    assert released.severity == "warning"
    assert "had released every executor" in released.suggestion
    advice = {a.setting: a.value for a in released.advice}
    assert advice == {
        "spark.dynamicAllocation.minExecutors": "2",
        "spark.dynamicAllocation.executorIdleTimeout": "30s",
    }


SPARK_16 = "application_1472176676028_407508_1.zstd"


def test_a_spark_1_execution_named_only_by_its_jobs_is_timed_by_them() -> None:
    # Jobs 0 to 2 carry spark.sql.execution.id=0 and run from +76.6 s to +41m 46s of a 42m 30s
    # application; Spark 1.6 wrote no SQL execution event. Their time is the query's, not the
    # driver's "start-up" (the report said 42m 28s of it, and an idle session).
    log = next(p for p in public_logs() if p.name == SPARK_16)
    analysis = api.analyze(str(log), Strictness.LENIENT)
    [execution] = analysis.application.executions
    assert execution.job_ids == (0, 1, 2)
    assert execution.duration_ms is not None and execution.duration_ms > 41 * 60_000
    findings = _public_findings(SPARK_16)
    assert "idle-session" not in {f.rule for f in findings}
    text = api.render_report(analysis, ReportOptions())
    assert "SQL executions 41m 10s" in text
    assert "the log has no SQL events for this execution" in text


def test_the_spark_contexts_own_start_up_is_not_an_idle_session() -> None:
    # pi.py on YARN in client mode: the driver's block manager registered at +34.4 s (the
    # SparkContext waiting for YARN), the first job came at +35.9 s, the application ran 55 s.
    log = next(p for p in public_logs() if p.name == "event_log_1.zstd")
    analysis = api.analyze(str(log), Strictness.LENIENT)
    assert context_startup_ms(analysis) == 34_421
    assert analysis.time_spent.startup_ms is not None and analysis.time_spent.startup_ms > 35_000
    assert "idle-session" not in {f.rule for f in _findings(log)[2]}


def test_spark_1_memory_advice_uses_its_own_memory_fraction() -> None:
    # Spark 1.6's unified memory manager took 0.75 of the heap by default; 2.0 made it 0.6.
    [pressure] = [f for f in _public_findings(SPARK_16) if f.rule == "memory-pressure"]
    memory = next(a for a in pressure.advice if a.setting == "spark.executor.memory")
    assert "spark.memory.fraction 0.75" in memory.arithmetic
    assert memory.value == "31744m"


def test_no_aqe_is_named_for_a_query_that_ran_without_it() -> None:
    # Spark 1.6 had no AQE: its stage of 40 tasks under the default 200 is not AQE's doing.
    [pressure] = [f for f in _public_findings(SPARK_16) if f.rule == "memory-pressure"]
    partitions = next(a for a in pressure.advice if a.setting == "spark.sql.shuffle.partitions")
    assert partitions.value is None
    assert "coalesced" not in partitions.arithmetic
    assert "ran without AQE" in partitions.arithmetic


def test_a_stream_with_no_sql_of_its_own_has_no_zero_share() -> None:
    # The query's one batch ran no SQL execution (and outside the application's run): its
    # place in "where the time went" gives no "0 ms (0.0 %)".
    log = next(p for p in public_logs() if p.name == "streaming_eventlog.zstd")
    analysis = api.analyze(str(log), Strictness.LENIENT)
    text = api.render_report(analysis, ReportOptions(fmt="markdown"), detect_all(analysis))
    assert "streaming query c86ef692: 1 batch, no SQL execution" in text
    assert "c86ef692 0 ms" not in text


def test_the_index_status_is_the_verdicts() -> None:
    # A job outside SQL failed (and the same call site succeeded later): the report's badge
    # says FAILED, and so does the batch index's status column, not the log's "completed".
    log = next(p for p in public_logs() if p.name == "complex_dec_eventlog.zstd")
    analysis = api.analyze(str(log), Strictness.LENIENT)
    summary = summarize(analysis, detect_all(analysis))
    assert (summary.status, summary.outcome) == ("completed", "failed")
    entry = IndexEntry("complex_dec_eventlog.zstd", "apps/x", summary, None)
    [row] = build_index_view([entry], generated_at_ms=0).rows
    assert (row.status, row.status_str) == ("failed", "failed")
    text = api.render_report(analysis, ReportOptions(fmt="text"), detect_all(analysis))
    assert text.splitlines()[2].startswith("FAILED")


def test_resubmitted_tasks_in_the_executors_failed_column_are_explained() -> None:
    log = next(
        p for p in public_logs() if p.name == "tasks_executors_fail_compressed_eventlog.zstd"
    )
    analysis = api.analyze(str(log), Strictness.LENIENT)
    text = api.render_report(analysis, ReportOptions(fmt="text", width=400), detect_all(analysis))
    assert "failed task attempts 3 ·" in text
    assert (
        "note: failed: as Spark's executors page counts them, with the tasks resubmitted because "
        "a lost executor took their finished shuffle output along: 33 here against the 3 failed "
        "task attempts of the header"
    ) in text


def test_a_show_reading_one_partition_is_not_idle_cores() -> None:
    # Query 0 is `show()`: CollectLimit runs its result stage on one of the scan's 17
    # partitions first, as the limit asks; one task on four slots is by design.
    findings = _public_findings(K8S_TAXI)
    assert not [f for f in findings if f.rule == "idle-cores" and f.execution_id == 0]


def test_a_static_start_up_wait_names_no_registration_setting() -> None:
    # Spark waited its 30 s for registrations, ran job 0 at +34.0 s, and the four executors
    # registered at +69.3 s: waiting longer before the first job would only move the wait.
    findings = _public_findings(K8S_TAXI)
    [wait] = [f for f in findings if f.rule == "executor-wait"]
    assert wait.title == "Stage 0 waited 35.3 s for executors (the application's first)"
    assert wait.advice == () and wait.severity == "warning"  # over 30 s: a slow start-up
    assert "would only move this wait" in wait.suggestion
    assert "registered at 1m 09s" in wait.suggestion


def test_the_first_python_tasks_are_not_blamed_on_the_udf_alone() -> None:
    # Query 0's stage 0 is the application's first Python stage: 8 tasks on 8 slots, each
    # starting its Python worker, 1.3 s for 127 rows. No warm task shows what the UDF costs.
    log = next(p for p in public_logs() if p.name == "pandas_execs_eventlog.zstd")
    _local, _dynamic, findings = _findings(log)
    [udf] = [f for f in findings if f.rule == "python-udf"]
    assert (udf.execution_id, udf.stage_id, udf.severity) == (0, 0, "info")
    assert udf.title.endswith("its workers' start-up included")
    assert "first Python tasks on their executors" in udf.suggestion


def test_a_slow_udf_after_its_first_wave_stays_a_warning() -> None:
    # 4 tasks on 2 slots: the second wave ran on warm Python workers, as slow as the first.
    analysis = api.analyze(str(SAMPLES / "local-1795449380338.zstd"))
    [udf] = [f for f in api.find_issues(analysis) if f.rule == "python-udf"]
    assert udf.severity == "warning" and "start-up" not in udf.title


def test_no_report_shows_the_missing_partition_placeholder() -> None:
    # Spark before 3.3 logs no `Partition ID`: every task of this log has the placeholder -1.
    log = next(p for p in public_logs() if p.name == "pandas_execs_eventlog.zstd")
    analysis = api.analyze(str(log), Strictness.LENIENT)
    assert set(analysis.tasks.frame()["partition_id"].unique()) == {-1}
    findings = api.find_issues(analysis)
    for fmt in ("text", "html", "markdown"):
        options = ReportOptions(fmt=fmt, metrics="full")
        out = api.render_report(analysis, options, findings)
        assert "partition -1" not in out, fmt
    # The page's task tables (task, stage, partition, …) leave the partition empty.
    page = api.render_report(analysis, ReportOptions(fmt="html", metrics="full"), findings)
    assert re.search(r"\[\d+, \d+, null, ", page)
    assert not re.search(r"\[\d+, \d+, -1, ", page)
    # The loosest task-skew: still nothing at the slow task of stage 2 (not its data, one host).
    loose = Thresholds().with_overrides(["min_query_share=0", "min_lost_ms=0", "skew_ratio=2"])
    assert detect_task_skew(analysis, loose) == []


def test_a_slow_task_with_ordinary_data_is_not_called_skewed_data() -> None:
    log = SAMPLES / "app-20261122042339-0000.lz4"  # two executors on two hosts, speculation on
    analysis = api.analyze(str(log))
    assert not analysis.capacity.local_mode
    loose = Thresholds().with_overrides(["min_query_share=0", "min_lost_ms=0", "skew_ratio=2"])
    [hit] = detect_task_skew(analysis, loose)
    assert hit.stage_id == 3 and hit.task_ids == (14,)
    assert "a slow task, not skewed data" in hit.title
    # Task 9 read as many records (10,000) in 558 ms, the median time or less.
    assert hit.number("peer_task_id") == 9
    assert "hot keys" not in hit.suggestion and "skewJoin" not in hit.suggestion
    assert "speculation was already on" in hit.suggestion


def test_spark_file_listing_is_not_a_large_result(tmp_path: Path) -> None:
    log = next((p for p in public_logs() if p.name == "nds_q72_dataproc_2_2.zstd"), None)
    if log is None:
        pytest.skip("public logs not present")
    # Job 13 lists 2,004 paths (`Listing leaf files and directories for 2004 paths`): 5.3 MiB
    # of results, 2.8 s of result serialization summed over 2,004 tasks on 128 slots.
    head = tmp_path / "q72_head.zstd"
    head.write_bytes(log.read_bytes()[:600_000])  # a log cut short: the application ran 42 s
    for path in (log, head):
        analysis = api.analyze(str(path), Strictness.LENIENT)
        assert analysis.application.jobs[13].description.startswith("Listing leaf files")
        assert result_wall_ms(analysis, (13, 0)) <= analysis.stage_walls[(13, 0)].wall_ms // 50
        loose = Thresholds().with_overrides(["min_query_share=0", "min_lost_ms=0"])
        found = detect_large_results(analysis, loose)
        assert {f.stage_id for f in found} <= {61}, [f.title for f in found]
        assert "large-result" not in {f.rule for f in api.find_issues(analysis)}


@pytest.mark.parametrize("name", ["attempt_1_eventlog.zstd", "join_agg_on_yarn_eventlog.zstd"])
def test_row_groups_larger_than_the_splits_are_named(name: str) -> None:
    # Stage 3 scans 2 parquet files (562 MiB) in 30 splits of 19 MiB: four tasks (64, 71, 78,
    # 85) read 11,390,100 rows each (a 128 MiB row group), two read 2,219,800, and 24 read only
    # a footer (5,562 B) and no row. Not one bad file: row groups larger than the splits.
    log = next(p for p in public_logs() if p.name == name)
    _local, _dynamic, findings = _findings(log)
    skew = next(f for f in findings if f.rule == "data-skew")
    assert skew.title.startswith(
        "Node 13 Scan parquet: 4 of 30 tasks read 91.1 % of the rows; 24 splits read no rows "
        "(row groups larger than the 19.0 MiB splits)"
    ), skew.title
    assert skew.task_ids == (64, 71, 78, 85)
    numbers = skew.numbers()
    assert (numbers["n_hot_tasks"], numbers["n_empty_tasks"]) == (4, 24)
    assert numbers["split_bytes"] == 19_932_679
    assert 120 << 20 < numbers["unit_bytes"] < 136 << 20
    assert "parquet.block.size" in skew.suggestion
    assert "maxPartitionBytes" not in skew.suggestion
    # The row-group size is set where the table is written: no value, so no time predicted.
    assert [(a.setting, a.value) for a in skew.advice] == [("parquet.block.size", None)]


def test_executor_wait_tells_start_up_from_release_and_cold_executors() -> None:
    # join_agg: stage 0 was submitted at +4.0 s, the first executor registered at +6.3 s, and no
    # executor was ever removed; stage 1 deserialized on ten executors up for over 7 s.
    log = next(p for p in public_logs() if p.name == "join_agg_on_yarn_eventlog.zstd")
    _local, _dynamic, findings = _findings(log)
    assert not [f.title for f in findings if "had released" in f.suggestion]
    waits = [f for f in findings if f.rule == "executor-wait"]
    assert [(f.stage_id, f.advice) for f in waits] == [(0, ())]
    assert waits[0].title == "Stage 0 waited 2.3 s for executors (the application's first)"
    # An ordinary start-up (YARN containers and JVMs) that no setting shortens: not a warning.
    assert waits[0].severity == "info"
    assert "start-up" in waits[0].suggestion and "registered at 6.3 s" in waits[0].suggestion
    cold = next(f for f in findings if f.rule == "cold-executors")
    assert (cold.stage_id, cold.advice) == (1, ())
    # 4nodes: dynamic allocation released executors 1 and 2 at +45 s and +48 s; stages 0 and 1
    # were submitted at +93 s with none alive.
    log = next(p for p in public_logs() if p.name == "eventlog_4nodes_8cores_dynamic_alloc.zstd")
    _local, _dynamic, findings = _findings(log)
    released = next(f for f in findings if f.rule == "executor-wait")
    assert released.evidence[0].value == "0, 1"
    assert released.suggestion.startswith("Dynamic allocation had released every executor")


def test_the_table_lists_every_case() -> None:
    doc = (REPO / "docs" / "findings.md").read_text()
    section = doc.split("## Labelled real-world logs", 1)[1].split("\n## ", 1)[0]
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| `([^`]+)` \|[^|]*\|[^|]*\| (?:`([a-z-]+)`|none) ", section, re.M)
    }
    for log in public_logs():
        assert log.name in rows, f"{log.name} missing from the table in docs/findings.md"
        assert rows[log.name] == EXPECTED_TOP.get(log.name), log.name


def _public_findings(name: str) -> tuple[Finding, ...]:
    log = next((p for p in public_logs() if p.name == name), None)
    if log is None:
        pytest.skip(f"public log {name} not present")
    return _findings(log)[2]


def test_stage_queued_behind_another_while_released_executors_idled_is_not_a_stall() -> None:
    # Stages 27 and 28 (24 tasks each) were submitted 13 ms apart; stage 27 filled the 8 slots
    # of executors 7 and 8, and each stage-28 task launched as a stage-27 task ended. Executors
    # 6, 9 and 10 were alive but idle past executorIdleTimeout=10s (removed seconds later):
    # dynamic allocation had released them, so the scheduler offered them no task.
    log = next(p for p in public_logs() if p.name == "eventlog_4nodes_8cores_dynamic_alloc.zstd")
    analysis = api.analyze(str(log), Strictness.LENIENT)
    wall = analysis.stage_walls[(28, 0)]
    assert wall.queued_ms >= 2_600
    assert wall.scheduler_delay_ms < 100
    # The slots alive (the executors view, what-if) still count the released executors.
    assert wall.slots == 20
    assert not [f for f in _public_findings(log.name) if f.rule == "scheduler-delay"]


def test_first_query_warm_up_is_not_charged_to_the_partition_count() -> None:
    # Stage 3's first wave (12 tasks of ~4.7 s on ~0.33 s CPU) was a cold JVM; the query's two
    # repeats ran the same 200-partition stage (7, 11) in 1.1 s and 1.2 s: 200 partitions cost
    # under the 1 s floor, not the 2.8 s the stage's wall once gave.
    findings = _public_findings("dsAndDf_eventlog.zstd")
    assert not [f for f in findings if f.rule == "too-many-partitions"]


def test_one_straggler_on_a_new_executor_gets_no_dynamic_allocation_advice() -> None:
    # 4nodes stage 9: 6 tasks; at its submission executors 3, 4 and 5 had run tasks and had
    # 12 free slots; five tasks ran there and ended by +0.85 s, task 29 went to executor 6
    # (registered 0.7 s before) and deserialized 15.1 s. Keeping executors changes nothing.
    findings = _public_findings("eventlog_4nodes_8cores_dynamic_alloc.zstd")
    cold = next(f for f in findings if f.rule == "cold-executors")
    assert cold.stage_id == 9 and cold.task_ids == (29,)
    assert cold.title.startswith("Stage 9: task 29, one of its 6, stalled 15.1 s deserializing")
    assert "executor 6" in cold.title
    # Not the executor's start-up: stage 10's tasks 33 and 37, launched there 7 to 8 ms after
    # task 29, deserialized in 0.57 s; task 29 spent 65 ms of CPU in its 15.1 s.
    assert cold.suggestion.startswith("Not executor 6's start-up: 2 tasks started there")
    assert cold.number("beside_deserialize_ms") == 569
    assert cold.number("warm_free_slots") == 12
    assert not any("dynamicAllocation" in a.setting for a in cold.advice)
    assert "dynamicAllocation" not in cold.suggestion
    # A speculative copy on a warm executor ends about 1.8 s into the stage: the 2.1 s
    # predicted (the wall without the deserialization) is within reach.
    [speculation] = cold.advice
    assert speculation.setting == "spark.speculation" and speculation.predicted_ms == 2129


def test_idle_timeout_is_sized_from_the_stretch_that_ended_in_the_release() -> None:
    # 4nodes: executors 2 and 1 registered at +20.9 s and +25.0 s, never ran a task and were
    # released at +44.7 s and +48.2 s; stages 0 and 1 came at +92.9 s, 68 s after executor 1
    # registered: no idle timeout keeps an executor that long, only minExecutors.
    findings = _public_findings("eventlog_4nodes_8cores_dynamic_alloc.zstd")
    wait = next(f for f in findings if f.rule == "executor-wait")
    assert [a.setting for a in wait.advice] == ["spark.dynamicAllocation.minExecutors"]
    assert "idle 1m 08s when stage 0 was submitted" in wait.suggestion
    assert "longest pause between jobs" not in wait.suggestion
    assert "executorIdleTimeout=30s" not in wait.suggestion


@pytest.mark.parametrize(
    ("name", "waited"), [("nds_q66_gpu.zstd", "19.3 s"), ("gpu_oom_eventlog.zstd", "10.1 s")]
)
def test_executors_registered_but_starting_are_an_info_with_no_ratio_advice(
    name: str, waited: str
) -> None:
    # q66: all 8 executors registered 2.2 s before stage 0 was submitted, its task launched
    # 19 s later; gpu_oom (standalone): both registered 72 ms after the stage, its task 10.0 s
    # later. The RAPIDS plugin's start-up, not registration: the ratio setting cannot help.
    findings = _public_findings(name)
    [wait] = [f for f in findings if f.rule == "executor-wait"]
    assert wait.severity == "info"
    assert wait.title == f"Stage 0 waited {waited} for executors (registered but still starting)"
    assert wait.advice == ()
    assert "set spark.scheduler.minRegisteredResourcesRatio" not in wait.suggestion
    assert "RAPIDS" in wait.suggestion and "0.8" not in wait.suggestion
    log = next(p for p in public_logs() if p.name == name)
    header = api.render_report(api.analyze(str(log), Strictness.LENIENT), ReportOptions())
    top = next((line for line in header.splitlines() if "top finding" in line), "")
    assert "executor-wait" not in top


def test_before_spark_3_a_registered_executor_is_not_said_to_be_still_starting() -> None:
    # Spark 2.x offered an executor tasks as soon as it registered (no LaunchedExecutor): the
    # same wait on q66 is then not put down to the executors' start-up.
    log = next(p for p in public_logs() if p.name == "nds_q66_gpu.zstd")
    analysis = api.analyze(str(log), Strictness.LENIENT)
    wall = analysis.stage_walls[(0, 0)]
    assert registered_before_wait(analysis, wall) is not None
    older = dataclasses.replace(
        analysis, application=analysis.application.model_copy(update={"spark_version": "2.4.8"})
    )
    assert registered_before_wait(older, older.stage_walls[(0, 0)]) is None


def test_first_tasks_of_new_executors_at_first_use_cost_are_info() -> None:
    # attempt_1 stage 1: the first task on 9 executors new to the application deserialized
    # 1.7 to 2.3 s each (their JVMs loading classes): ordinary, not a warning.
    findings = _public_findings("attempt_1_eventlog.zstd")
    cold = next(f for f in findings if f.rule == "cold-executors")
    assert cold.stage_id == 1 and cold.severity == "info"
    assert "first tasks of 9 new executors" in cold.title


def test_tiny_tasks_deserializing_alike_are_not_cold_executors() -> None:
    # pairs/partitions stage 15: 400 tasks on the driver's two slots, each deserializing 12 ms
    # (43 ms at most), 2.9 s of the 5.2 s wall in all: a cost of every task, told by
    # tiny-tasks; the executor's later tasks deserialized as long as its first.
    log = SAMPLES / "pairs" / "partitions" / "local-1795451689305.zstd"
    if not log.exists():
        pytest.skip(f"{log} not present")
    found = _findings(log)[2]
    assert [f.rule for f in found if f.stage_id == 15] == ["tiny-tasks"]


def test_tiny_tasks_turns_aqe_on_where_it_was_off() -> None:
    # pairs/aqe-off: AQE off, so its coalescing is to be turned on, not kept.
    log = SAMPLES / "pairs" / "aqe-off" / "local-1795451572222.zstd"
    if not log.exists():
        pytest.skip(f"{log} not present")
    tiny = [f for f in _findings(log)[2] if f.rule == "tiny-tasks"]
    assert tiny
    for f in tiny:
        assert "turn AQE on (spark.sql.adaptive.enabled=true) to coalesce small partitions" in (
            f.suggestion
        )
        assert "keep spark.sql.adaptive.coalescePartitions.enabled=true" not in f.suggestion


def test_executors_removed_at_teardown_are_not_lost() -> None:
    # Photon q88: worker lost 16.4 s after the last job ended, with nothing left to run.
    findings = _public_findings("eventlog_v2_app-20240919162642-0000")
    assert "lost-executors" not in {f.rule for f in findings}
    # An executor lost while a job ran (and replaced) is still reported.
    findings = _public_findings("eventlog_3nodes_12cores_exec_removed")
    assert "lost-executors" in {f.rule for f in findings}


def test_gc_on_one_host_is_named_before_more_memory_everywhere() -> None:
    # Spark 1.6 on YARN, stage 1: 40 tasks of the same work (1.7 GiB of shuffle read, about 5.7
    # GiB spilled each). The 8 on gdoop-worker201 (2 executors) spent 24.6 % of their time in
    # GC, the other 32 on 8 hosts 5.7 %: that host holds 58 % of the stage's GC.
    findings = _public_findings(SPARK_16)
    memory = next(f for f in findings if f.rule == "memory-pressure")
    assert memory.stage_id == 1
    assert "(GC 24.6 % on host gdoop-worker201.snc1, 5.7 % elsewhere)" in memory.title
    assert memory.suggestion.startswith("Most of the GC was one host's: the 8 tasks on")
    assert next(e.value for e in memory.evidence if e.key == "gc_host") == "gdoop-worker201.snc1"
    # Every other public log's GC findings are spread over their hosts.
    for log in public_logs():
        if log.name == SPARK_16:
            continue
        for f in _findings(log)[2]:
            if f.rule in ("gc-pressure", "memory-pressure"):
                assert "on host" not in f.title, (log.name, f.title)


def test_a_query_cancelled_at_shutdown_is_not_blamed_on_its_earlier_task_failures() -> None:
    # Executors 2 and 1 were lost, stage 238.0 failed to fetch their output (Spark retries
    # that), then the application ended and job 79, query 27's only one, was "cancelled because
    # SparkContext was shut down"; the query logged no error of its own.
    findings = _public_findings("tasks_executors_fail_compressed_eventlog.zstd")
    failed = next(f for f in findings if f.rule == "failed-query")
    assert failed.execution_id == 27
    assert failed.title == (
        "Query 27 was cancelled when the application shut down; before it: "
        "ExecutorLostFailure: Executor Process Lost"
    )
    assert failed.suggestion.startswith("Nothing in the query failed by itself")
    # The executors were lost 282 and 130 ms before the application's end, with the job the
    # shutdown cancelled still running: they went down with the stop, and nothing says spot
    # nodes. The one attempt lost with them was the failed query's, so none is outside it.
    lost = next(f for f in findings if f.rule == "lost-executors")
    assert lost.suggestion.startswith("The executors were lost in the last moments before")
    assert "decommission" not in lost.suggestion
    assert lost.number("lost_before_end_ms") == 282
    shown = {e.label: e.value for e in lost.evidence}
    assert shown["time in the attempts lost outside failed queries"] == 0


def test_cancelled_stage_attempts_are_counted_apart_from_failed_ones() -> None:
    # The GPU out-of-memory log: stage 34 failed; stages 31, 32, 33 and 37 were "cancelled
    # because SparkContext was shut down" after the application's end.
    analysis = api.analyze(str(PUBLIC_EVENTLOGS / "gpu_oom_eventlog.zstd"))
    findings = api.find_issues(analysis)
    verdict = " ".join(api.render_report(analysis, ReportOptions(color=False), findings).split())
    assert (
        "112 failed task attempts · 1 failed stage attempt · 4 cancelled stage attempts" in verdict
    )
    # The root cause is the GPU running out of memory, reading: GPU advice, not task heap.
    [failed] = [f for f in findings if f.rule == "failed-query"]
    assert "the GPU ran out of memory reading the query's input" in failed.suggestion
    # The job's message quotes task 12417's error (stage 34.0); the query's first failed task,
    # 12068 in stage 31, failed 94 s before with another buffer: the quoted one is named.
    assert failed.task_ids == (12417,)
    assert next(e.value for e in failed.evidence if e.key == "first_failed_task") == 12068


def test_a_cap_by_its_own_place_is_not_blamed_on_findings_above() -> None:
    # complex_dec: job 17 failed after 70 ms in a 69 ms stage; its finding is ranked first, so
    # nothing above it took any time: it is capped at its own stage's wall.
    findings = _public_findings("complex_dec_eventlog.zstd")
    assert findings[0].rule == "failed-job"
    assert findings[0].estimate_method.endswith(
        "capped from 70 ms at the wall time of its stage, query or application"
    )


def test_min_executors_counts_the_slots_of_waiting_stages_submitted_together() -> None:
    """The dynamic-allocation log's first query submits two scans of 6 tasks 152 ms apart,
    after every executor was released: they need 12 slots between them, 3 executors of 4 (one
    stage's 6 tasks gave 2)."""
    log = SAMPLES / "public" / "eventlog_4nodes_8cores_dynamic_alloc.zstd"
    _local, _dynamic, findings = _findings(log)
    (wait,) = [f for f in findings if f.rule == "executor-wait"]
    (floor,) = [a for a in wait.advice if a.setting == "spark.dynamicAllocation.minExecutors"]
    assert floor.value == "3"
    assert "needed up to 12 task slots at once" in floor.arithmetic


def test_idle_executors_says_when_dynamic_allocation_held_them_idle() -> None:
    # 73 % of the idle core time of the public dynamic-allocation log was with no job running
    # (two executors asked for at start 68-72 s before the first job, every one kept for its
    # 10 s idle timeout after its last task), and 5 of its 15 executors ran no task: not
    # "held between tasks of running jobs".
    findings = _public_findings("eventlog_4nodes_8cores_dynamic_alloc.zstd")
    idle = next(f for f in findings if f.rule == "idle-executors")
    assert idle.number("idle_outside_jobs_core_ms") == 1_291_676  # 21m 32s
    assert idle.number("n_taskless_executors") == 5
    assert "73.0 % of the idle core time was with no job running" in idle.suggestion
    assert "held between tasks of running jobs" not in idle.suggestion


def test_a_failed_job_run_again_from_its_call_site_says_so() -> None:
    # complex_dec: `parquet at <console>:23` read an ORC directory and failed (job 17); the same
    # call site succeeded as job 18, 7.7 s later. Told as evidence; still critical.
    findings = _public_findings("complex_dec_eventlog.zstd")
    failed = next(f for f in findings if f.rule == "failed-job")
    assert failed.severity == "critical"
    shown = {e.key: e.value for e in failed.evidence}
    assert shown["succeeded_later_job"] == "job 18, 7.7 s after this one ended"
