"""Rule `idle-cores`: a long stage ran fewer tasks than there were cores, leaving them idle."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context, split_can_shrink
from analyzer.insights.advice import max_partition_bytes_to_spread, shuffle_partitions_for_size
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count, fmt_duration_ms

RULE = "idle-cores"
METHOD = (
    "the stage's running part of its wall time (run, results and straggler tail; not waits, "
    "scheduler delay or deserialization) × (1 − tasks / task slots): that part could have run "
    "that much faster had its work been spread over every slot"
)
SINGLE_PARTITION = "SinglePartition"


def idle_core_share(n_tasks: int, n_cores: int) -> float:
    """Return the share of cores a stage of `n_tasks` tasks leaves idle.

    >>> idle_core_share(1, 4)
    0.75
    """
    return max(0.0, 1 - n_tasks / n_cores) if n_cores > 0 else 0.0


def detect_idle_cores(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages of SQL executions that used at most `1 − idle_cores_share` of the cores
    alive when they ran, when the idle capacity cost at least `idle_cores_min_ms` and a
    meaningful share of the query's wall time.

    The finding points at the operator with the most self time in the stage; when the stage
    reads a single-partition shuffle (a window without PARTITION BY, a global sort or limit,
    repartition(1)) it says so.
    """
    ctx = context(analysis)
    findings = []
    for key, s in sorted(ctx.stage_stats.items()):
        wall = ctx.walls.get(key)
        if wall is None or s.n_successful == 0 or wall.slots <= 0:
            continue  # no slot alive while it ran: waiting, not idle (see executor-wait)
        cores = wall.slots
        idle = idle_core_share(s.n_successful, cores)
        if idle < thresholds.idle_cores_share:
            continue
        execution_id = ctx.stage_execution(s.stage_id)
        if execution_id is None:
            continue  # RDD work and file listing: no SQL setting sizes their tasks
        running_ms = wall.run_ms + wall.result_ms + wall.tail_ms
        lost_ms = int(running_ms * idle)
        if lost_ms < thresholds.idle_cores_min_ms or not ctx.significant(
            lost_ms, execution_id, thresholds
        ):
            continue
        node_id, node_name, single = _hottest(analysis, execution_id, s.stage_id)
        where = f" in node {node_id} {node_name}" if node_id is not None else ""
        evidence = [
            ev("n_tasks", "tasks", s.n_successful, "count"),
            ev("n_cores", "task slots alive", cores, "count"),
            ev("idle_core_share", "slots left idle", idle, "share"),
            ev("stage_wall_ms", "stage wall time", wall.wall_ms, "ms"),
            ev("running_ms", "of which running", running_ms, "ms"),
        ]
        splittable = (
            split_can_shrink(s.read_max_bytes, ctx.properties) if s.read_sum_bytes else False
        )
        reads_files = s.shuffle_read_median_bytes == 0 and s.read_sum_bytes > 0
        if single:
            evidence.append(
                ev("single_partition", "reads", "a single-partition shuffle (one task)", "text")
            )
            advice = None
        elif reads_files:
            advice = max_partition_bytes_to_spread(
                ctx.properties, s.read_sum_bytes, s.read_max_bytes, cores
            )
        else:
            advice = shuffle_partitions_for_size(ctx.properties, s.read_sum_bytes, cores)
        findings.append(
            Finding(
                rule=RULE,
                severity=ctx.severity(lost_ms, execution_id, thresholds),
                title=(
                    f"Stage {s.stage_id}: {fmt_count(s.n_successful)} "
                    f"task{'' if s.n_successful == 1 else 's'} for {fmt_count(cores)} task "
                    f"slots ran {fmt_duration_ms(running_ms)}{where}"
                ),
                suggestion=_suggestion(
                    single,
                    reads_files,
                    splittable and advice is not None and advice.value is not None,
                    advice,
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=execution_id,
                node_id=node_id,
                stage_id=s.stage_id,
                stage_attempt_id=s.stage_attempt_id,
                evidence=tuple(evidence),
                advice=(advice,) if advice is not None else (),
            )
        )
    return findings


def _suggestion(single: bool, reads_files: bool, splittable: bool, advice: Advice | None) -> str:
    """What spreads the work: never smaller file splits where the input cannot be split."""
    if single:
        return (
            "Spread the work: give the window a PARTITION BY, avoid global sorts and "
            "repartition(1)/coalesce(1) before heavy steps: a single-partition shuffle ignores "
            "the partition settings."
        )
    if reads_files and splittable and advice is not None:
        return (
            f"Read in more splits: set spark.sql.files.maxPartitionBytes={advice.value}, or "
            "repartition() after the scan before the expensive step."
        )
    if reads_files:
        return (
            "The input cannot be split further (each task read at most a row group or an "
            "unsplittable file): repartition() after the scan before the expensive step, or "
            "write the input as more, smaller files."
        )
    value = advice.value if advice is not None else None
    return (
        f"Use more partitions: set spark.sql.shuffle.partitions={value} (AQE may coalesce "
        "them again, down to its advisory size), or repartition() before the expensive step."
    )


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
