"""Lookups the rules share: stage figures computed once per analysis, time-lost arithmetic."""

from __future__ import annotations

import weakref

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import MetricStats, NodeStats
from analyzer.aggregate.stage_stats import StageTaskStats, aggregate_stage_tasks
from analyzer.insights.finding import Severity
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Execution, StageAttempt

_STAGE_STATS: dict[int, dict[tuple[int, int], StageTaskStats]] = {}


def stage_stats(analysis: Analysis) -> dict[tuple[int, int], StageTaskStats]:
    """Return the task figures per (stage, attempt), computed once per analysis object."""
    key = id(analysis)
    hit = _STAGE_STATS.get(key)
    if hit is None:
        hit = aggregate_stage_tasks(analysis.tasks)
        _STAGE_STATS[key] = hit
        weakref.finalize(analysis, _STAGE_STATS.pop, key, None)
    return hit


def stage_attempts(analysis: Analysis) -> dict[tuple[int, int], StageAttempt]:
    """Return the stage attempts of the application by (stage id, attempt id)."""
    return {(s.stage_id, s.attempt_id): s for s in analysis.application.stages}


def execution_of_stage(analysis: Analysis) -> dict[int, int]:
    """Return the SQL execution id of every stage that ran for one (first one wins)."""
    out: dict[int, int] = {}
    for ex in analysis.application.executions:
        for stage_id in ex.stage_ids:
            out.setdefault(stage_id, ex.execution_id)
    return out


def executions_by_id(analysis: Analysis) -> dict[int, Execution]:
    """Return the SQL executions by id."""
    return {e.execution_id: e for e in analysis.application.executions}


def total_cores(analysis: Analysis) -> int:
    """Return the cores of every executor that ever ran (the driver's in local mode), at least 1."""
    executors = analysis.application.executors
    workers = [e for e in executors if e.executor_id != "driver"]
    return max(1, sum(e.n_cores for e in (workers or executors)))


def wall_share_ms(stage_wall_ms: int | None, part_task_ms: float, stage_task_ms: int) -> int:
    """Turn task time spent on one thing into the stage wall time it probably cost.

    The stage's wall time is split in proportion to task time: a part that took 20 % of the
    stage's summed task time is charged 20 % of the stage's wall time. Without a stage wall
    time (an unfinished stage) the task time itself is returned, capped by nothing.

    >>> wall_share_ms(10_000, 2_000, 8_000)
    2500
    """
    if stage_task_ms <= 0 or part_task_ms <= 0:
        return 0
    if stage_wall_ms is None:
        return int(part_task_ms)
    return int(min(stage_wall_ms, stage_wall_ms * part_task_ms / stage_task_ms))


def severity_for(lost_ms: int, thresholds: Thresholds, floor: Severity = "warning") -> Severity:
    """Return `critical` when the estimated loss reaches `critical_lost_ms`, else `floor`."""
    return "critical" if lost_ms >= thresholds.critical_lost_ms else floor


def metric(stats: NodeStats | None, name: str) -> MetricStats | None:
    """Return a node's metric called `name`, or None."""
    if stats is None:
        return None
    for m in stats.metrics:
        if m.name == name:
            return m
    return None


def adaptive_enabled(analysis: Analysis, execution: Execution) -> bool:
    """Return True if the execution ran under AQE (its plan is an AdaptiveSparkPlan)."""
    graph = execution.plans[0].graph if execution.plans else None
    if graph is not None and graph.find_all("AdaptiveSparkPlan"):
        return True
    return len(execution.plans) > 1


def rows_out(analysis: Analysis, execution: Execution, node_id: int) -> int | None:
    """Return the rows a node produced: its own row metric, else its first descendant's.

    Operators inside a codegen cluster often have no row metric; the nearest node below them
    on the first-child path that has one (a Range, a scan, an exchange) stands in.
    """
    graph = execution.final_plan.graph
    stats = analysis.node_stats.get(execution.execution_id, {})
    current: int | None = node_id
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        ns = stats.get(current)
        for name in ("number of output rows", "records read", "shuffle records written"):
            m = metric(ns, name)
            if m is not None:
                return m.total
        children = graph.children_of(current)
        current = children[0].node_id if children else None
    return None


def exchange_below(execution: Execution, node_id: int) -> int | None:
    """Return the id of the first Exchange on the first-child path below a join input, if any."""
    graph = execution.final_plan.graph
    current: int | None = node_id
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        node = graph.node(current)
        if "Exchange" in node.name:
            return current
        if "Join" in node.name or "Aggregate" in node.name:
            return None  # a different operator's input: not this side's shuffle
        children = graph.children_of(current)
        current = children[0].node_id if children else None
    return None


def stage_wall_ms(analysis: Analysis, stage_ids: tuple[int, ...]) -> int:
    """Return the summed wall time of the last attempt of each stage."""
    last: dict[int, int] = {}
    for st in analysis.application.stages:
        if st.stage_id in stage_ids and st.duration_ms is not None:
            last[st.stage_id] = st.duration_ms
    return sum(last.values())
