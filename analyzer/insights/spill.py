"""Rule `spill`: a stage's tasks ran out of execution memory and spilled to disk."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context, metric, wall_share_ms
from analyzer.insights.advice import advice_text, memory_advice
from analyzer.insights.finding import Finding, ev
from analyzer.insights.spill_cause import cause_evidence, cause_text, spill_cause
from analyzer.insights.thresholds import Thresholds
from analyzer.model.plan import PlanNode
from analyzer.units import fmt_bytes

RULE = "spill"
PART_OF_SPILL = 0.5
"""A node whose `spill size` is under this share of its stage's spill (in memory) is named as
holding that part of it, not the whole."""
METHOD = (
    "bytes spilled (the larger of memory and disk) spilled once and read back once at "
    "spill_bytes_per_s, as task time (at most the tasks' run time), charged to the running part "
    "of the stage's wall time (run and tail) by its share of the stage's task run time"
)


def spill_task_ms(bytes_spilled: int, thresholds: Thresholds) -> float:
    """Return the task time (ms) spilling `bytes_spilled` and reading them back probably took.

    `bytes_spilled` is the larger of memory and disk bytes spilled: the in-memory size is what
    was serialized and compressed, the disk size what was written and read.

    >>> spill_task_ms(200 * 1024 * 1024, Thresholds())
    4000.0
    """
    return 2 * bytes_spilled * 1000 / max(1, thresholds.spill_bytes_per_s)


def spill_wall_ms(analysis: Analysis, key: tuple[int, int], task_ms: float) -> int:
    """Charge spill task time to the running part of a stage attempt's wall (run and tail)."""
    ctx = context(analysis)
    s = ctx.stage_stats[key]
    wall = ctx.walls.get(key)
    if wall is None:
        stage = ctx.attempts.get(key)
        return wall_share_ms(stage.duration_ms if stage else None, task_ms, s.duration_sum_ms)
    return wall_share_ms(wall.run_ms + wall.tail_ms, task_ms, max(s.run_sum_ms, 1))


def detect_spill(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts that spilled at least `spill_min_bytes` (in memory or on disk),
    when the spill's estimated I/O cost a meaningful share of the query's wall time.

    The finding names the plan node with the largest `spill size` in that stage, when the
    execution's plan has one (Sort, HashAggregate, Window, SortMergeJoin …). When the spill was
    not for want of memory (a spill-forcing setting, see `spill_cause`), the finding names that
    cause and advises no memory. Stages of a failed query are left to `failed-query`, whose
    evidence carries their spill.
    """
    findings = []
    ctx = context(analysis)
    for key, s in ctx.stage_stats.items():
        spilled = max(s.memory_bytes_spilled, s.disk_bytes_spilled)
        if spilled == 0 or spilled < thresholds.spill_min_bytes:
            continue
        if ctx.in_failed_execution(s.stage_id):
            continue  # part of the failed query's finding (its evidence), not a cost of its own
        execution_id = ctx.stage_execution(s.stage_id)
        node_id, node_name, node_spill = None, None, 0
        if execution_id is not None:
            ex = ctx.executions[execution_id]
            graph = ex.final_plan.graph
            for nid, ns in sorted(analysis.node_stats.get(execution_id, {}).items()):
                m = metric(ns, "spill size")
                if m is not None and s.stage_id in ns.stage_ids and m.total > node_spill:
                    node_id, node_name, node_spill = nid, graph.node(nid).name, m.total
        writer = (
            _shuffle_writer(analysis, execution_id, s.stage_id)
            if node_id is None and execution_id is not None
            else None
        )
        # Never more than the tasks ran: a forced spill of many small buffers is counted in
        # memory bytes far above what its tasks' run time could have written and read back.
        io_ms = spill_task_ms(spilled, thresholds)
        run_ms = float(max(s.run_sum_ms, 0))
        capped = io_ms > run_ms
        task_ms = min(io_ms, run_ms)
        lost_ms = spill_wall_ms(analysis, key, task_ms)
        where = f" in node {node_id} {node_name}" if node_id is not None else ""
        if node_id is not None and node_spill < PART_OF_SPILL * s.memory_bytes_spilled:
            # The node logged a small part: the rest was spilled by operators that log no
            # spill size (Window before Spark 3.4) or by the shuffle write.
            where = f", {fmt_bytes(node_spill)} of it in node {node_id} {node_name}"
        evidence = [
            ev("memory_bytes_spilled", "memory bytes spilled", s.memory_bytes_spilled, "bytes"),
            ev("disk_bytes_spilled", "disk bytes spilled", s.disk_bytes_spilled, "bytes"),
            ev(
                "max_task_disk_bytes_spilled",
                "largest task spill (disk)",
                s.max_task_disk_bytes_spilled,
                "bytes",
            ),
            ev(
                "spill_task_ms",
                "estimated spill I/O task time"
                + (" (capped at the tasks' run time)" if capped else ""),
                task_ms,
                "ms",
            ),
            ev(
                "node_spill_size_bytes",
                f"spill size of {node_name} ({node_id})" if node_id is not None else "",
                node_spill,
                "bytes",
            ),
        ]
        if writer is not None:
            node_id = writer.node_id
            where = f" in the shuffle write of node {node_id} {writer.name}"
        cause = spill_cause(analysis, key)
        if cause is not None:
            evidence += cause_evidence(cause)
        advice = memory_advice(analysis, key)
        suggestion = (
            cause_text(cause)
            if cause is not None
            else (ROUND_ROBIN_SORT if writer is not None and ROUND_ROBIN in writer.desc else "")
            + "Give each task more memory: smaller partitions or more memory per task"
            + (f": {advice_text(advice)}." if advice_text(advice) else ".")
        )
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=f"Stage {s.stage_id}: spilled {fmt_bytes(spilled)}{where}",
            suggestion=suggestion,
            advice=advice,
            execution_id=execution_id,
            node_id=node_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            evidence=tuple(evidence),
        )
        if finding is not None:
            findings.append(finding)
    return findings


ROUND_ROBIN = "RoundRobinPartitioning"
ROUND_ROBIN_SORT = (
    "repartition(n) sorts each task's rows before dealing them out round-robin, so that a "
    "retried task deals the same rows to the same partitions "
    "(spark.sql.execution.sortBeforeRepartition), and that sort spilled. "
)
"""Why a round-robin repartition's map side spills: the sort Spark adds before it."""


def _shuffle_writer(analysis: Analysis, execution_id: int, stage_id: int) -> PlanNode | None:
    """The exchange whose shuffle a stage wrote (the one with most records written): a stage
    whose plan names no spilling operator spilled in its shuffle write, a round-robin
    repartition's sort or a sort-based shuffle writer's buffer."""
    stats = analysis.node_stats.get(execution_id)
    execution = context(analysis).executions.get(execution_id)
    if stats is None or execution is None:
        return None
    best: tuple[int, int] | None = None
    for node_id, ns in stats.items():
        m = metric(ns, "shuffle records written")
        if m is None or stage_id not in m.stage_ids:
            continue
        if best is None or m.total > best[0]:
            best = (m.total, node_id)
    return execution.final_plan.graph.node(best[1]) if best is not None else None
