"""Rule `large-result`: a stage sent a large result to the driver (collect, toPandas …)."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context, spark_internal_job, stage_part_wall_ms
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Job
from analyzer.units import fmt_bytes

RULE = "large-result"
MIN_RESULT_BYTES = 4 * 1024 * 1024
"""Results smaller than this are never reported."""
METHOD = (
    "the tasks' result serialization and fetch time charged to the stage's wall time (its share "
    "of the stage's task time: a per-task cost spread over the slots that ran at once) plus the "
    "time the query ran on after its last stage (the driver receiving and converting the results)"
)


def detect_large_results(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages whose ResultTasks sent much data to the driver: `large_result_bytes` or
    more, or at least `MIN_RESULT_BYTES` when shipping them cost a meaningful share of the query.

    The cost is the wall time the tasks spent serializing and fetching results (`result_wall_ms`)
    plus the time the execution ran on after its last stage ended (the driver deserializing and
    converting what it collected). Jobs Spark runs for itself (`spark_internal_job`: the file
    listing, a reader's schema inference) are left out: their results are not the user's.
    """
    ctx = context(analysis)
    jobs_of_stage: dict[int, list[Job]] = {}
    for job in analysis.application.jobs:
        for stage_id in job.stage_ids:
            jobs_of_stage.setdefault(stage_id, []).append(job)
    findings = []
    for key, s in ctx.stage_stats.items():
        if s.n_result_tasks == 0 or s.result_size_bytes < MIN_RESULT_BYTES:
            continue
        jobs = jobs_of_stage.get(s.stage_id, [])
        if jobs and all(spark_internal_job(j) for j in jobs):
            continue  # Spark's own job (listing files, inferring a schema): not a user's collect
        execution_id = ctx.stage_execution(s.stage_id)
        top = collecting_node(analysis, execution_id, s.stage_id)
        if top is _FOR_DRIVER:
            continue  # a broadcast or subquery collecting its input, not a result for the user
        tail_ms = driver_tail_ms(analysis, execution_id)
        result_ms = result_wall_ms(analysis, key)
        lost_ms = result_ms + tail_ms
        if s.result_size_bytes < thresholds.large_result_bytes and not ctx.significant(
            lost_ms, execution_id, thresholds
        ):
            continue
        findings.append(
            Finding(
                rule=RULE,
                severity=ctx.severity(lost_ms, execution_id, thresholds),
                title=(
                    f"Stage {s.stage_id}: {fmt_bytes(s.result_size_bytes)} of results "
                    "sent to the driver"
                ),
                suggestion=(
                    "Keep large results out of the driver: write them (df.write) instead of "
                    "collect()/toPandas(), aggregate or limit first (this collect fitted under "
                    "the driver's result size limit: a larger one would fail the job)."
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=execution_id,
                node_id=top if isinstance(top, int) else None,
                stage_id=s.stage_id,
                stage_attempt_id=s.stage_attempt_id,
                evidence=(
                    ev("result_size_bytes", "result bytes", s.result_size_bytes, "bytes"),
                    ev("n_result_tasks", "result tasks", s.n_result_tasks, "count"),
                    ev("getting_result_ms", "getting result time", s.getting_result_sum_ms, "ms"),
                    ev("driver_tail_ms", "query time after its last stage", tail_ms, "ms"),
                    ev(
                        "result_serialization_ms",
                        "result serialization time",
                        s.result_serialization_sum_ms,
                        "ms",
                    ),
                    ev("result_wall_ms", "wall time spent on results", result_ms, "ms"),
                ),
            )
        )
    return findings


def result_wall_ms(analysis: Analysis, key: tuple[int, int]) -> int:
    """The wall time a stage attempt's tasks spent serializing and fetching results: the result
    part of its wall time (`aggregate.stage_wall`), else their summed time's share of it.

    Summed over tasks, 1.4 ms each on 2,004 tasks is 2.8 s, but 128 slots paid it side by side:
    it cost the stage about 22 ms of its 2.1 s.
    """
    return stage_part_wall_ms(
        analysis,
        key,
        lambda w: w.result_ms,
        lambda s: s.getting_result_sum_ms + s.result_serialization_sum_ms,
    )


def driver_tail_ms(analysis: Analysis, execution_id: int | None) -> int:
    """Return how long an execution ran on after its last stage ended (driver-side work)."""
    if execution_id is None:
        return 0
    ctx = context(analysis)
    ex = ctx.executions.get(execution_id)
    if ex is None or ex.end_ms is None:
        return 0
    ends = [
        s.completion_ms
        for s in analysis.application.stages
        if s.stage_id in set(ex.stage_ids) and s.completion_ms is not None
    ]
    return max(0, ex.end_ms - max(ends)) if ends else 0


_FOR_DRIVER = object()
"""`collecting_node`'s answer for a stage whose results a broadcast or subquery collects."""
DRIVER_COLLECTORS = ("BroadcastExchange", "SubqueryBroadcast", "Subquery")


def collecting_node(analysis: Analysis, execution_id: int | None, stage_id: int) -> object:
    """Return the top operator of the plan part a result stage ran (its results go to the
    driver from there), `_FOR_DRIVER` when that part feeds a broadcast or a subquery, or None."""
    if execution_id is None:
        return None
    times = analysis.times.get(execution_id)
    execution = context(analysis).executions.get(execution_id)
    if times is None or execution is None:
        return None
    graph = execution.final_plan.graph
    in_stage = {n.node_id for n in times.nodes.values() if stage_id in n.stage_ids}
    tops = [
        nid for nid in in_stage if not any(p.node_id in in_stage for p in graph.parents_of(nid))
    ]
    if not tops:
        return None
    top = graph.node(min(tops))
    if top.is_cluster and top.member_ids:
        members = set(top.member_ids)
        heads = [
            m for m in top.member_ids if not any(p.node_id in members for p in graph.parents_of(m))
        ]
        top = graph.node(heads[0] if heads else top.member_ids[0])
    if any(d in top.name for d in DRIVER_COLLECTORS) or any(
        any(d in p.name for d in DRIVER_COLLECTORS) for p in graph.parents_of(top.node_id)
    ):
        return _FOR_DRIVER
    while top.name in ("AdaptiveSparkPlan", "InputAdapter"):
        children = graph.children_of(top.node_id)
        if not children:
            break
        top = children[0]
    return top.node_id
