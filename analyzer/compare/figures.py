"""The figures a comparison reads from one run: per execution, per plan node, AQE decisions, cores.

Everything here is read from an `Analysis` that was already aggregated (node statistics, self
times, stage task figures): no polars, no new pass over the tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import ROW_METRICS
from analyzer.aggregate.fingerprint import canonical_tree, is_join
from analyzer.aggregate.node_metrics import NodeStats
from analyzer.compare.node_match import match_nodes
from analyzer.model.application import Application, Execution
from analyzer.model.plan import PlanGraph
from analyzer.units import decimal_int

BYTES_METRICS = (
    "size of files read",
    "shuffle bytes written",
    "data size",
    "bytes written",
    "written output",
)
"""The metric that stands for a node's bytes, the first it has: what a scan read, what an
exchange wrote, what a write wrote."""
LEAF_BYTES_METRICS = ("size of files read", "bytes read", "input size")
"""Bytes a leaf operator (a scan) read."""
SPILL_METRIC = "spill size"
SHUFFLE_READS = ("AQEShuffleRead", "CustomShuffleReader")
PARTITIONINGS = ("hashpartitioning(", "rangepartitioning(", "RoundRobinPartitioning(")


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def _total(stats: NodeStats | None, names: Sequence[str]) -> int | None:
    """The total of the first metric of `names` the node has, or None."""
    if stats is None:
        return None
    by_name = {m.name: m for m in stats.metrics}
    for name in names:
        if name in by_name:
            return by_name[name].total
    return None


@dataclass(frozen=True)
class NodeFigures:
    """One plan node of one run: what it did."""

    node_id: int = field(metadata=_help("Plan-graph node id in its run's final plan."))
    name: str = field(metadata=_help("Operator name."))
    desc: str = field(metadata=_help("The operator's one-line description, as logged."))
    self_time_ms: float | None = field(
        metadata=_help("Task time that belongs to it alone (docs/metrics.md#time-attribution).")
    )
    rows: int | None = field(metadata=_help("Output rows, if it counts them."))
    bytes: int | None = field(metadata=_help("Bytes read, written or shuffled (`BYTES_METRICS`)."))
    spill_bytes: int | None = field(metadata=_help("`spill size`, if it can spill."))


def node_figures(analysis: Analysis, execution: Execution, node_id: int) -> NodeFigures:
    """Read one final-plan node's figures."""
    node = execution.final_plan.graph.node(node_id)
    stats = analysis.node_stats.get(execution.execution_id, {}).get(node_id)
    times = analysis.times.get(execution.execution_id)
    nt = times.nodes.get(node_id) if times is not None else None
    return NodeFigures(
        node_id=node_id,
        name=node.name,
        desc=node.desc,
        self_time_ms=nt.self_time_ms if nt is not None else None,
        rows=_total(stats, ROW_METRICS),
        bytes=_total(stats, BYTES_METRICS),
        spill_bytes=_total(stats, (SPILL_METRIC,)),
    )


@dataclass(frozen=True)
class Straggler:
    """The stage of an execution's critical path whose longest task stood out most."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    max_task_ms: int = field(metadata=_help("Its longest successful task, launch to finish."))
    median_task_ms: int = field(metadata=_help("Its median successful task."))
    read_max_bytes: int = field(metadata=_help("Most bytes one task read (input and shuffle)."))
    read_median_bytes: int = field(metadata=_help("Median bytes a task read."))


@dataclass(frozen=True)
class AqeSummary:
    """What adaptive query execution decided in one run of an execution."""

    adaptive: bool = field(metadata=_help("The plan ran under AQE (an AdaptiveSparkPlan)."))
    n_replans: int = field(metadata=_help("AQE plan updates logged."))
    n_coalesced_reads: int = field(metadata=_help("Shuffle reads that coalesced partitions."))
    partitions_before: int = field(
        metadata=_help("Shuffle partitions under the coalescing reads, summed.")
    )
    partitions_after: int = field(metadata=_help("Partitions those reads read, summed."))
    skewed_partitions: int = field(metadata=_help("Partitions AQE split as skewed."))
    skew_splits: int = field(metadata=_help("The splits it made of them."))
    n_local_reads: int = field(
        metadata=_help("Local shuffle reads: a join made a broadcast join after its shuffle ran.")
    )
    runtime_joins: tuple[str, ...] = field(
        metadata=_help("Joins AQE switched at run time: `SortMergeJoin → BroadcastHashJoin`.")
    )


@dataclass(frozen=True)
class ExecutionFigures:
    """One run of an execution: time, work, input, partitions, spill, failures."""

    execution_id: int = field(metadata=_help("Spark's SQL execution id in this run."))
    status: str = field(metadata=_help("COMPLETED, FAILED or RUNNING."))
    wall_ms: int = field(metadata=_help("Start to end (0 when either is missing)."))
    task_run_ms: int = field(
        metadata=_help("Executor run time of every task attempt of its stages.")
    )
    failed_run_ms: int = field(metadata=_help("Of that, failed and killed attempts'."))
    n_tasks: int = field(metadata=_help("Task attempts that ended in its stages."))
    n_failed_tasks: int = field(metadata=_help("Failed task attempts."))
    n_stage_retries: int = field(metadata=_help("Stage attempts after a stage's first."))
    input_rows: int = field(metadata=_help("Rows the plan's leaf operators (scans) produced."))
    input_bytes: int = field(metadata=_help("Bytes its scans read (`size of files read`)."))
    files_read: int = field(metadata=_help("Files its scans read."))
    partitions_read: int = field(metadata=_help("Table partitions its scans read."))
    shuffle_partitions: int = field(
        metadata=_help("Shuffle partitions the initial plan's exchanges declare, summed.")
    )
    shuffle_bytes: int = field(metadata=_help("Bytes its exchanges wrote."))
    spill_bytes: int = field(metadata=_help("Memory its tasks spilled (Spark's Spill (Memory))."))
    disk_spill_bytes: int = field(metadata=_help("What that spill took on disk."))
    straggler_ms: int = field(
        metadata=_help(
            "Summed over the stages of its critical path: longest minus median task duration."
        )
    )
    straggler: Straggler | None = field(
        metadata=_help("The critical-path stage with the largest such gap, if any ran.")
    )
    aqe: AqeSummary = field(metadata=_help("What AQE decided."))
    nested: bool = field(
        default=False,
        metadata=_help(
            "It runs inside another execution of the run (its root): its time is in its "
            "root's, so run totals leave it out."
        ),
    )
    ended: bool = field(
        default=True,
        metadata=_help(
            "Its end was logged, so `wall_ms` is its duration (a log cut before the end event "
            "leaves it unknown, even when its jobs completed)."
        ),
    )


def declared_partitions(desc: str) -> int | None:
    """Return the partition count an exchange's description declares, or None.

    >>> declared_partitions("Exchange hashpartitioning(pmod(a#1, 3), b#2, 200), ENSURE_REQ")
    200
    >>> declared_partitions("Exchange SinglePartition, ENSURE_REQUIREMENTS, [plan_id=5]")
    1
    >>> declared_partitions("BroadcastExchange HashedRelationBroadcastMode(List(input[0]))") is None
    True
    """
    if "SinglePartition" in desc:
        return 1
    for start_text in PARTITIONINGS:
        start = desc.find(start_text)
        if start < 0:
            continue
        depth, last_comma, i = 0, start + len(start_text), start + len(start_text)
        while i < len(desc):
            ch = desc[i]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                if depth == 0:
                    arg = desc[last_comma:i].strip(" ,")
                    return decimal_int(arg)
                depth -= 1
            elif ch == "," and depth == 0:
                last_comma = i + 1
            i += 1
    return None


def _leaves(graph: PlanGraph) -> list[int]:
    return [
        n.node_id
        for n in graph.nodes
        if not n.is_cluster and not graph.children_of(n.node_id) and n.name != "ReusedExchange"
    ]


def runtime_joins(execution: Execution) -> tuple[str, ...]:
    """Return the joins whose strategy AQE changed between the initial and the final plan."""
    if len(execution.plans) < 2:
        return ()
    first = execution.plans[0].graph
    last = execution.final_plan.graph
    match = match_nodes(canonical_tree(first), canonical_tree(last))
    out = []
    for b, c in match.pairs:
        before, after = first.node(b).name, last.node(c).name
        if before != after and is_join(before) and is_join(after):
            out.append(f"{before} → {after}")
    return tuple(sorted(out))


def aqe_summary(analysis: Analysis, execution: Execution) -> AqeSummary:
    """Read what AQE decided in one execution: coalescing, skew splits, broadcast conversions."""
    graph = execution.final_plan.graph
    stats = analysis.node_stats.get(execution.execution_id, {})
    n_coalesced = before = after = skewed = splits = local = 0
    for node in graph.nodes:
        if node.name not in SHUFFLE_READS:
            continue
        kinds = node.desc[len(node.name) :]
        if "local" in kinds:
            local += 1
        if "coalesced" in kinds:
            n_coalesced += 1
            after += _total(stats.get(node.node_id), ("number of partitions",)) or 0
            for child in graph.children_of(node.node_id):
                before += _total(stats.get(child.node_id), ("number of partitions",)) or 0
        skewed += _total(stats.get(node.node_id), ("number of skewed partitions",)) or 0
        splits += _total(stats.get(node.node_id), ("number of skewed partition splits",)) or 0
    first = execution.plans[0].graph if execution.plans else graph
    return AqeSummary(
        adaptive=any(r.name == "AdaptiveSparkPlan" for r in first.roots),
        n_replans=len(execution.plans) - 1,
        n_coalesced_reads=n_coalesced,
        partitions_before=before,
        partitions_after=after,
        skewed_partitions=skewed,
        skew_splits=splits,
        n_local_reads=local,
        runtime_joins=runtime_joins(execution),
    )


def execution_figures(analysis: Analysis, execution: Execution) -> ExecutionFigures:
    """Read the figures of one execution of one run."""
    app = analysis.application
    eid = execution.execution_id
    stats = analysis.node_stats.get(eid, {})
    times = analysis.times.get(eid)
    wanted = set(execution.stage_ids)
    task_stats = [s for key, s in analysis.stage_stats.items() if key[0] in wanted]
    attempts = [s for s in app.stages if s.stage_id in wanted]
    graph = execution.final_plan.graph
    rows = in_bytes = files = parts = 0
    for leaf in _leaves(graph):
        rows += _total(stats.get(leaf), ROW_METRICS) or 0
        in_bytes += _total(stats.get(leaf), LEAF_BYTES_METRICS) or 0
        files += _total(stats.get(leaf), ("number of files read",)) or 0
        parts += _total(stats.get(leaf), ("number of partitions read",)) or 0
    shuffle_bytes = sum(
        _total(stats.get(n.node_id), ("shuffle bytes written",)) or 0
        for n in graph.nodes
        if n.name == "Exchange"
    )
    initial = execution.plans[0].graph if execution.plans else graph
    declared = sum(declared_partitions(n.desc) or 0 for n in initial.nodes if n.name == "Exchange")
    by_stage: dict[int, list[tuple[int, int, int, int]]] = {}
    for s in task_stats:
        by_stage.setdefault(s.stage_id, []).append(
            (s.max_duration_ms, s.median_duration_ms, s.read_max_bytes, s.read_median_bytes)
        )
    straggler_ms = 0
    straggler: Straggler | None = None
    for span in analysis.critical_path(execution.stage_ids):
        for mx, med, rmax, rmed in by_stage.get(span.stage_id, []):
            gap = max(0, mx - med)
            straggler_ms += gap
            if straggler is None or gap > straggler.max_task_ms - straggler.median_task_ms:
                straggler = Straggler(
                    stage_id=span.stage_id,
                    max_task_ms=mx,
                    median_task_ms=med,
                    read_max_bytes=rmax,
                    read_median_bytes=rmed,
                )
    return ExecutionFigures(
        execution_id=eid,
        status=execution.status,
        wall_ms=max(0, execution.duration_ms or 0),
        ended=execution.duration_ms is not None,
        nested=execution.root_execution_id != eid,
        task_run_ms=times.task_run_ms if times is not None else 0,
        failed_run_ms=times.failed_run_ms if times is not None else 0,
        n_tasks=sum(s.n_attempts for s in task_stats),
        n_failed_tasks=sum(s.n_failed for s in task_stats),
        n_stage_retries=sum(1 for s in attempts if s.attempt_id > 0),
        input_rows=rows,
        input_bytes=in_bytes,
        files_read=files,
        partitions_read=parts,
        shuffle_partitions=declared,
        shuffle_bytes=shuffle_bytes,
        spill_bytes=sum(s.memory_bytes_spilled for s in task_stats),
        disk_spill_bytes=sum(s.disk_bytes_spilled for s in task_stats),
        straggler_ms=straggler_ms,
        straggler=straggler,
        aqe=aqe_summary(analysis, execution),
    )


@dataclass(frozen=True)
class ExecutorFigures:
    """The capacity one run had."""

    n_executors: int = field(metadata=_help("Executors that registered (0: local mode)."))
    peak_cores: int = field(
        metadata=_help("Most cores registered at once (the driver's in local mode).")
    )
    total_cores: int = field(metadata=_help("Cores of every executor that ever registered."))
    n_removed: int = field(metadata=_help("Executors removed before the application ended."))


def executor_figures(app: Application) -> ExecutorFigures:
    """Count one run's executors and cores; the peak is read from their lifetimes."""
    workers = [e for e in app.executors if e.executor_id != "driver"]
    counted = workers or list(app.executors)
    events: list[tuple[int, int]] = []
    for e in counted:
        events.append((e.added_ms if e.added_ms is not None else -(1 << 62), e.n_cores))
        if e.removed_ms is not None:
            events.append((e.removed_ms, -e.n_cores))
    peak = alive = 0
    # At one instant, removals count before additions: a replaced executor is not doubled.
    for _, delta in sorted(events, key=lambda ev: (ev[0], ev[1])):
        alive += delta
        peak = max(peak, alive)
    return ExecutorFigures(
        n_executors=len(workers),
        peak_cores=peak,
        total_cores=sum(e.n_cores for e in counted),
        n_removed=sum(1 for e in workers if e.removed_ms is not None),
    )
