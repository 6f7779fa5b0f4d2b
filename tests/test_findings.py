"""Each finding rule fires on the sample log that has its problem, with the right evidence, and
stays silent where the problem is absent; thresholds parse and reject bad input."""

from __future__ import annotations

import dataclasses
import json
from functools import cache

import pytest
from oracle.locations import PUBLIC_EVENTLOGS, SAMPLE_EVENTLOGS
from typer.testing import CliRunner

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.cli import app
from analyzer.errors import UsageError
from analyzer.insights import RULES, Finding, Thresholds, detect_all
from analyzer.insights.broadcast import detect_large_broadcast
from analyzer.insights.data_skew import detect_data_skew
from analyzer.insights.failed_queries import detect_failed_queries
from analyzer.insights.file_scans import detect_small_files
from analyzer.insights.gc_pressure import detect_gc_pressure
from analyzer.insights.idle_executors import detect_idle_executors
from analyzer.insights.large_results import detect_large_results
from analyzer.insights.lost_executors import detect_lost_executors
from analyzer.insights.nested_loop_join import detect_nested_loop_join
from analyzer.insights.partition_pruning import detect_no_partition_pruning
from analyzer.insights.partition_sizes import detect_partition_sizes
from analyzer.insights.sort_merge_join import detect_small_side_sort_merge_join
from analyzer.insights.speculation import detect_speculation
from analyzer.insights.spill import detect_spill
from analyzer.insights.stage_retries import detect_stage_retries
from analyzer.insights.task_failures import detect_task_failures
from analyzer.insights.task_skew import detect_task_skew
from analyzer.insights.tiny_tasks import detect_tiny_tasks
from analyzer.insights.unsplit_skew import detect_unsplit_skew
from analyzer.report.findings import evidence_str

MIB = 1024 * 1024
CLEAN = "join-agg-aqe-on"
"""The cleanest sample: AQE turns its join into a broadcast; nothing fails, spills or skews."""


@cache
def _sample_paths() -> dict[str, str]:
    if not SAMPLE_EVENTLOGS.is_dir():
        return {}
    return {info.name: info.path for info in api.list_applications(str(SAMPLE_EVENTLOGS))}


@cache
def sample(workload: str) -> Analysis:
    """Return the analysis of the sample log of `workload` (app name `sea-<workload>`)."""
    path = _sample_paths().get(f"sea-{workload}")
    if path is None:
        pytest.skip(f"sample log of workload {workload!r} not in {SAMPLE_EVENTLOGS}")
    return api.analyze(path)


def small(*assignments: str) -> Thresholds:
    """Return default thresholds with overrides sized for the small sample data."""
    return Thresholds().with_overrides(assignments)


def evidence(finding: Finding) -> dict[str, str]:
    """Return a finding's labelled evidence as worded in reports, by label."""
    return {item.label: evidence_str(item) for item in finding.evidence if item.label}


# -- Thresholds ----------------------------------------------------------------------------------


def test_thresholds_parse_ints_floats_and_dashes() -> None:
    t = Thresholds().with_overrides(
        ["task_skew_ratio=2.5", "data-skew-min-rows=1_000", " gc_min_ms = 7 "]
    )
    assert (t.task_skew_ratio, t.data_skew_min_rows, t.gc_min_ms) == (2.5, 1000, 7)
    assert Thresholds().with_overrides([]) == Thresholds()


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("nope=1", "unknown threshold 'nope'"),
        ("task_skew_ratio", "expects name=value"),
        ("task_skew_ratio=", "expects name=value"),
        ("task_skew_ratio=fast", "must be a number"),
        ("gc_min_ms=1.5", "must be an integer"),
        ("gc_min_ms=-1", "must be >= 0"),
        ("gc_share=nan", "must be >= 0"),
    ],
)
def test_thresholds_reject_bad_assignments(assignment: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        Thresholds().with_overrides([assignment])
    assert caught.value.slug == "usage"


def test_every_threshold_is_documented() -> None:
    doc = (SAMPLE_EVENTLOGS.parent / "docs" / "findings.md").read_text()
    for f in dataclasses.fields(Thresholds):
        assert f.metadata["help"], f.name
        assert f"`{f.name}`" in doc, f"{f.name} missing from docs/findings.md"


def test_every_rule_is_documented() -> None:
    doc = (SAMPLE_EVENTLOGS.parent / "docs" / "findings.md").read_text()
    for rule in RULES:
        module = __import__(rule.__module__, fromlist=["RULE"])
        assert f"`{module.RULE}`" in doc, module.RULE


# -- The clean workload --------------------------------------------------------------------------


def test_clean_workload_has_no_findings_with_default_thresholds() -> None:
    assert detect_all(sample(CLEAN)) == []


# -- Each rule -----------------------------------------------------------------------------------


def test_task_skew_on_skewed_join() -> None:
    analysis = sample("skewed-join")
    found = detect_task_skew(analysis, small("task_skew_ratio=1.5", "task_skew_min_task_ms=200"))
    join = analysis.application.executions[0].final_plan.graph.find_all("SortMergeJoin")[0]
    join_stage = analysis.node_stats[0][join.node_id].stage_ids[0]
    hit = next(f for f in found if f.stage_id == join_stage)
    assert hit.number("ratio") >= 1.5
    assert hit.estimated_lost_ms == hit.number("max_duration_ms") - hit.number("median_duration_ms")
    assert len(hit.task_ids) == 1
    assert detect_task_skew(analysis, Thresholds()) == []


def test_data_skew_names_the_join_and_the_hot_task() -> None:
    analysis = sample("skewed-join")
    found = detect_data_skew(analysis, small("data_skew_min_rows=100_000"))
    assert len(found) == 1
    hit = found[0]
    assert analysis.application.executions[0].final_plan.graph.node(hit.node_id).name == (
        "SortMergeJoin"
    )
    # Key 0 holds 90 % of 400,000 rows: 360,000 plus its share of the rest in one task.
    assert hit.number("max_value") > 360_000
    assert hit.number("total_value") == 400_000
    assert hit.number("ratio") > 10
    assert evidence(hit)["metric"] == "number of output rows"
    assert "Exchange" in evidence(hit)["also skewed"]
    assert detect_data_skew(sample(CLEAN), small("data_skew_min_rows=100_000")) == []


def test_unsplit_skew_fires_without_the_split_and_not_with_it() -> None:
    t = small("unsplit_skew_min_bytes=1048576")
    found = detect_unsplit_skew(sample("skewed-join"), t)
    assert len(found) == 1
    hit = found[0]
    assert hit.number("max_shuffle_read_bytes") >= 5 * hit.number("median_shuffle_read_bytes")
    assert evidence(hit)["spark.sql.adaptive.skewJoin.enabled"] == "false"
    assert detect_unsplit_skew(sample("skewed-join-aqe-split"), t) == []
    assert detect_unsplit_skew(sample("join-agg-aqe-off"), t) == []  # AQE off: nothing to split


def test_spill_names_stage_and_operator() -> None:
    analysis = sample("spill-sort-agg-window")
    found = detect_spill(analysis, small("spill_min_bytes=1"))
    names = {
        analysis.application.executions[f.execution_id or 0].final_plan.graph.node(f.node_id).name
        for f in found
        if f.node_id is not None
    }
    assert {"Sort", "HashAggregate", "Window"} <= names
    for f in found:
        assert f.number("memory_bytes_spilled") > 0
        assert f.stage_id is not None
    assert detect_spill(sample("skewed-join"), small("spill_min_bytes=1")) == []


def test_gc_pressure_share_is_gc_over_task_time() -> None:
    found = detect_gc_pressure(sample("spill-sort-agg-window"), small("gc_min_ms=1", "gc_share=0"))
    assert found
    for f in found:
        share = min(1.0, f.number("gc_ms") / f.number("task_ms"))
        assert f.number("gc_share") == pytest.approx(share)
    assert detect_gc_pressure(sample(CLEAN), Thresholds()) == []


def test_task_failures_and_retry_on_udf_log() -> None:
    found = detect_task_failures(sample("python-udf-task-retry"), Thresholds())
    assert len(found) == 1
    hit = found[0]
    assert hit.number("n_failed") == 1
    assert "PythonException" in evidence(hit)["first failure"]
    assert len(hit.task_ids) == 1
    assert detect_task_failures(sample(CLEAN), Thresholds()) == []


def test_failed_query_is_critical_with_spark_message() -> None:
    analysis = sample("failed-query")
    found = detect_failed_queries(analysis, Thresholds())
    assert len(found) == 1
    hit = found[0]
    assert hit.severity == "critical"
    assert "bucket 3 is rejected" in hit.title
    failed = next(e for e in analysis.application.executions if e.status == "FAILED")
    assert hit.execution_id == failed.execution_id
    assert hit.estimated_lost_ms == failed.duration_ms
    stage_hits = detect_stage_retries(analysis, Thresholds())
    assert [f.execution_id for f in stage_hits] == [failed.execution_id]
    ranked = detect_all(analysis)
    assert ranked[0].rule == "failed-query"
    assert detect_failed_queries(sample(CLEAN), Thresholds()) == []


def test_lost_executors_and_fetch_failures_on_public_log() -> None:
    path = PUBLIC_EVENTLOGS / "gpu_oom_eventlog.zstd"
    if not path.exists():
        pytest.skip("public logs not present")
    analysis = api.analyze(str(path))
    assert detect_lost_executors(analysis, Thresholds()) == []  # no executor was lost there
    failures = detect_task_failures(analysis, Thresholds())
    assert sum(f.number("n_failed") for f in failures) == 112
    assert all("GpuSplitAndRetryOOM" in evidence(f)["first failure"] for f in failures)
    stages = detect_stage_retries(analysis, Thresholds())
    # 32, 33 and 37 were cancelled with no failed task; 31 had failed tasks before it was.
    assert sorted(f.stage_id or 0 for f in stages) == [31, 34]
    assert any("failed 4 times" in f.title for f in stages)


def test_lost_executor_fetch_failures_and_stage_retry_on_a_real_loss() -> None:
    analysis = sample("executor-lost")
    lost = detect_lost_executors(analysis, Thresholds())
    assert len(lost) == 1
    assert lost[0].number("n_executors_lost") == 1
    failures = detect_task_failures(analysis, Thresholds())
    assert [f.stage_id for f in failures] == [3]
    assert failures[0].number("n_fetch_failed") == 2
    assert failures[0].number("n_executor_lost") == 1
    retries = detect_stage_retries(analysis, Thresholds())
    assert [f.stage_id for f in retries] == [3]
    assert "FetchFailed" in retries[0].title
    assert detect_lost_executors(sample(CLEAN), Thresholds()) == []


def test_speculation_counts_the_speculative_copy() -> None:
    found = detect_speculation(sample("speculation"), Thresholds())
    assert len(found) == 1
    assert found[0].stage_id == 3
    assert found[0].number("n_speculative") == 1
    assert detect_speculation(sample(CLEAN), Thresholds()) == []


def test_no_partition_pruning_names_the_unpruned_scan_only() -> None:
    analysis = sample("partition-pruning")
    found = detect_no_partition_pruning(analysis, Thresholds())
    assert len(found) == 1
    assert found[0].number("n_partitions") == 120
    assert "Scan parquet" in found[0].title
    assert detect_no_partition_pruning(sample(CLEAN), Thresholds()) == []


def test_tiny_tasks_on_many_tasks_log() -> None:
    found = detect_tiny_tasks(sample("many-tasks-large-result"), small("tiny_tasks_min_tasks=100"))
    assert len(found) >= 6  # six queries spread 4,000 rows over 200 partitions
    assert all(f.number("n_tasks") == 200 for f in found)
    assert detect_tiny_tasks(sample(CLEAN), small("tiny_tasks_min_tasks=100")) == []


def test_large_result_on_collect() -> None:
    found = detect_large_results(
        sample("many-tasks-large-result"), small("large_result_bytes=4194304")
    )
    assert len(found) == 1
    assert found[0].number("result_size_bytes") >= 4 * MIB
    assert detect_large_results(sample(CLEAN), small("large_result_bytes=4194304")) == []


def test_partition_size_few_and_huge() -> None:
    analysis = sample("spill-sort-agg-window")
    found = detect_partition_sizes(
        analysis, small("few_partitions_min_bytes=1048576", "huge_partition_bytes=4194304")
    )
    few = [f for f in found if "tasks for" in f.title]
    huge = [f for f in found if "partition" in f.title and "read a" in f.title]
    assert few and huge
    assert all(f.number("n_tasks") < f.number("n_cores") for f in few)
    assert all(f.number("max_read_bytes") > 4 * MIB for f in huge)
    assert detect_partition_sizes(sample(CLEAN), Thresholds()) == []


def test_sort_merge_join_with_a_small_side() -> None:
    found = detect_small_side_sort_merge_join(sample("join-strategies"), Thresholds())
    assert len(found) == 1  # the `merge` hint; the others are hash joins
    hit = found[0]
    assert hit.number("small_side_bytes") < hit.number("large_side_bytes")
    assert "broadcast" in hit.suggestion
    assert detect_small_side_sort_merge_join(sample(CLEAN), Thresholds()) == []


def test_large_broadcast() -> None:
    t = small("broadcast_large_bytes=16777216")
    found = detect_large_broadcast(sample("join-strategies"), t)
    assert len(found) == 1  # the broadcast hash join; the nested-loop join's side is tiny
    hit = found[0]
    assert hit.number("data_size_bytes") > 16 * MIB
    assert hit.estimated_lost_ms > 0
    assert detect_large_broadcast(sample("skewed-join"), t) == []


def test_nested_loop_and_cartesian_joins() -> None:
    analysis = sample("join-strategies")
    found = detect_nested_loop_join(analysis, small("nested_loop_min_pairs=1000"))
    by_name = {
        analysis.application.executions[f.execution_id or 0].final_plan.graph.node(f.node_id).name
        for f in found
        if f.node_id is not None
    }
    assert by_name == {"CartesianProduct", "BroadcastNestedLoopJoin"}
    bnlj = next(f for f in found if "BroadcastNestedLoopJoin" in f.title)
    assert (bnlj.number("left_rows"), bnlj.number("right_rows")) == (300, 200)
    assert detect_nested_loop_join(analysis, Thresholds()) == []


def test_small_files_on_parquet_read() -> None:
    found = detect_small_files(sample("cache-subquery-parquet"), small("small_files_min_files=2"))
    assert len(found) == 1
    hit = found[0]
    assert hit.number("n_files") >= 2
    assert hit.number("mean_file_bytes") == hit.number("size_bytes") // hit.number("n_files")
    assert detect_small_files(sample("cache-subquery-parquet"), Thresholds()) == []


def test_idle_executors() -> None:
    found = detect_idle_executors(sample(CLEAN), small("idle_min_core_ms=1000"))
    assert len(found) == 1
    hit = found[0]
    assert hit.number("idle_core_ms") == hit.number("held_core_ms") - hit.number("busy_ms")
    assert hit.estimated_lost_ms == 0
    assert detect_idle_executors(sample(CLEAN), small("idle_share=1")) == []


# -- Ranking and integration ---------------------------------------------------------------------


def test_detect_all_ranks_by_time_lost() -> None:
    found = detect_all(sample("skewed-join"), small("data_skew_min_rows=100_000", "gc_min_ms=1"))
    lost = [f.estimated_lost_ms for f in found]
    assert lost == sorted(lost, reverse=True)
    assert {f.severity for f in found} <= {"info", "warning", "critical"}


def test_json_report_lists_findings_and_cli_takes_thresholds() -> None:
    path = _sample_paths().get("sea-skewed-join")
    if path is None:
        pytest.skip("skewed-join sample missing")
    result = CliRunner().invoke(
        app,
        ["report", path, "-f", "json", "--threshold", "data_skew_min_rows=100000"],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    rules = [f["rule"] for f in doc["findings"]]
    assert "data-skew" in rules
    first = next(f for f in doc["findings"] if f["rule"] == "data-skew")
    assert set(first) == {f.name for f in dataclasses.fields(Finding)} | {"numbers"}
    assert first["evidence"][0] == {
        "label": "metric",
        "value": "number of output rows",
        "key": "metric",
        "raw": "number of output rows",
        "unit": "text",
    }
    assert first["numbers"]["max_value"] == first["evidence"][1]["raw"]
    bad = CliRunner().invoke(app, ["report", path, "-f", "json", "--threshold", "nope=1"])
    assert bad.exit_code == 2
    assert "unknown threshold 'nope'" in bad.output
