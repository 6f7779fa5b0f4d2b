"""Rule `idle-cores`: a long stage ran fewer tasks than there were cores, leaving them idle."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Application
from analyzer.units import fmt_count, fmt_duration_ms

RULE = "idle-cores"
METHOD = (
    "stage wall time × (1 − tasks / cores): the stage could have run that much faster had its work "
    "been spread over every core"
)
SINGLE_PARTITION = "SinglePartition"


def idle_core_share(n_tasks: int, n_cores: int) -> float:
    """Return the share of cores a stage of `n_tasks` tasks leaves idle.

    >>> idle_core_share(1, 4)
    0.75
    """
    return max(0.0, 1 - n_tasks / n_cores) if n_cores > 0 else 0.0


def cores_at(app: Application, moment_ms: int | None) -> int:
    """Return the cores of the executors alive at `moment_ms` (the driver's in local mode)."""
    workers = [e for e in app.executors if e.executor_id != "driver"] or list(app.executors)
    if moment_ms is None:
        return max(1, sum(e.n_cores for e in workers))
    alive = [
        e
        for e in workers
        if (e.added_ms is None or e.added_ms <= moment_ms)
        and (e.removed_ms is None or e.removed_ms > moment_ms)
    ]
    return max(1, sum(e.n_cores for e in (alive or workers)))


def detect_idle_cores(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages of SQL executions that used at most `1 − idle_cores_share` of the cores
    alive when they ran, when the idle capacity cost at least `idle_cores_min_ms` and a
    meaningful share of the query's wall time.

    The finding points at the operator with the most self time in the stage; when the stage
    reads a single-partition shuffle (a window without PARTITION BY, a global sort or limit,
    repartition(1)) it says so.
    """
    ctx = context(analysis)
    app = analysis.application
    findings = []
    for key, s in sorted(ctx.stage_stats.items()):
        stage = ctx.attempts.get(key)
        if stage is None or stage.duration_ms is None or s.n_successful == 0:
            continue
        cores = cores_at(app, stage.submission_ms)
        idle = idle_core_share(s.n_successful, cores)
        if idle < thresholds.idle_cores_share:
            continue
        execution_id = ctx.stage_execution(s.stage_id)
        if execution_id is None:
            continue  # RDD work and file listing: no SQL setting sizes their tasks
        lost_ms = int(stage.duration_ms * idle)
        if lost_ms < thresholds.idle_cores_min_ms or not ctx.significant(
            lost_ms, execution_id, thresholds
        ):
            continue
        node_id, node_name, single = _hottest(analysis, execution_id, s.stage_id)
        where = f" in node {node_id} {node_name}" if node_id is not None else ""
        evidence = [
            ev("n_tasks", "tasks", s.n_successful, "count"),
            ev("n_cores", "cores alive", cores, "count"),
            ev("idle_core_share", "cores left idle", idle, "share"),
            ev("stage_wall_ms", "stage wall time", stage.duration_ms, "ms"),
        ]
        if single:
            evidence.append(
                ev("single_partition", "reads", "a single-partition shuffle (one task)", "text")
            )
        findings.append(
            Finding(
                rule=RULE,
                severity=ctx.severity(lost_ms, execution_id, thresholds),
                title=(
                    f"Stage {s.stage_id}: {fmt_count(s.n_successful)} "
                    f"task{'' if s.n_successful == 1 else 's'} for {fmt_count(cores)} cores "
                    f"ran {fmt_duration_ms(stage.duration_ms)}{where}"
                ),
                suggestion=(
                    "Spread the work: give the window a PARTITION BY, avoid global sorts and "
                    "repartition(1)/coalesce(1) before heavy steps, or use more partitions "
                    "(spark.sql.shuffle.partitions, lower spark.sql.files.maxPartitionBytes)."
                    if single
                    else "Use more partitions: raise spark.sql.shuffle.partitions or lower "
                    "spark.sql.files.maxPartitionBytes (AQE may coalesce them too far: see "
                    "spark.sql.adaptive.coalescePartitions.minPartitionSize), or repartition() "
                    "before the expensive step."
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=execution_id,
                node_id=node_id,
                stage_id=s.stage_id,
                stage_attempt_id=s.stage_attempt_id,
                evidence=tuple(evidence),
            )
        )
    return findings


def _hottest(
    analysis: Analysis, execution_id: int | None, stage_id: int
) -> tuple[int | None, str, bool]:
    """The operator with the most self time in a stage, and whether the stage reads a
    single-partition shuffle."""
    if execution_id is None:
        return None, "", False
    times = analysis.times.get(execution_id)
    execution = context(analysis).executions.get(execution_id)
    if times is None or execution is None:
        return None, "", False
    graph = execution.final_plan.graph
    best: tuple[float, int] | None = None
    single = False
    for nt in times.nodes.values():
        ms = dict(nt.by_stage).get(stage_id)
        if ms is None:
            continue
        node = graph.node(nt.node_id)
        if "Exchange" in node.name and SINGLE_PARTITION in node.desc:
            single = True
            continue
        if best is None or ms > best[0]:
            best = (ms, nt.node_id)
    if best is None:
        return None, "", single
    return best[1], graph.node(best[1]).name, single
