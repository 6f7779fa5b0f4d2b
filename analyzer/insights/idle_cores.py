"""Rule `idle-cores`: a long stage ran fewer tasks than there were cores, leaving them idle."""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context, split_can_shrink, user_repartition
from analyzer.insights.advice import (
    OWN_PARTITIONING,
    SHUFFLE_PARTITIONS_KEY,
    max_partition_bytes_to_spread,
    no_value,
    not_sized_by_setting,
    shuffle_partitions_for_size,
    under_aqe,
)
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Execution
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.units import decimal_int, fmt_count, fmt_duration_ms

RULE = "idle-cores"
METHOD = (
    "the stage's running part of its wall time (run, results and straggler tail; not waits, "
    "scheduler delay or deserialization) × (1 − tasks / usable slots: the slots alive, at most "
    "one per 1,000 records and per 64 KiB the stage read, by default): that part could have run "
    "that much faster had its work been spread over every usable slot"
)
SINGLE_PARTITION = "SinglePartition"
_COALESCE = re.compile(r"Coalesce (\d+)")
"""A `Coalesce` operator's description: `Coalesce 1` for `coalesce(1)`."""

# What reads a single-partition shuffle (`_single_read`), each with its own fix.
WINDOW = "window"
SORT_OR_LIMIT = "sort or limit"
REPARTITION = "repartition"
GLOBAL_AGGREGATE = "global aggregate"
UNKNOWN = "unknown"
SORT_OR_LIMIT_NODES = frozenset(("Sort", "GlobalLimit", "TakeOrderedAndProject", "CollectLimit"))


def idle_core_share(
    n_tasks: int,
    n_cores: int,
    n_records: int = 0,
    n_bytes: int = 0,
    slot_records: int = 1,
    slot_bytes: int = 1,
) -> float:
    """Return the share of the cores a stage of `n_tasks` tasks could have used but left idle.

    A stage that read `n_records` records and `n_bytes` bytes (input plus shuffle) can usefully
    be divided into at most one task per `slot_records` records and per `slot_bytes` bytes:
    more slots than that do nothing for it (one record cannot be split, and a tiny input spread
    over more tasks only pays each task's start-up again). A count of 0 means the stage read
    nothing Spark counts (rows made in the task, as `range` does), so it does not bound.

    >>> idle_core_share(1, 4)
    0.75
    >>> idle_core_share(1, 16, n_records=1), idle_core_share(1, 16, n_records=2)
    (0.0, 0.5)
    >>> idle_core_share(1, 16, n_records=615, n_bytes=69_947, slot_records=1_000)
    0.0
    """
    usable = n_cores
    for count, per_slot in ((n_records, slot_records), (n_bytes, slot_bytes)):
        if count > 0:
            usable = min(usable, max(1, count // max(1, per_slot)))
    return max(0.0, 1 - n_tasks / usable) if usable > 0 else 0.0


def detect_idle_cores(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages of SQL executions that used at most `1 − idle_cores_share` of the task
    slots alive when they ran, when the idle capacity cost at least `idle_cores_min_ms` and a
    meaningful share of the query's wall time.

    Slots beyond one per `idle_cores_min_slot_records` records and `idle_cores_min_slot_bytes`
    bytes the stage read are not counted as idle: one record cannot be split across tasks, and
    a tiny input spread further only pays each task's start-up again. Stages that compute
    Delta's snapshot of a table's log (a `Delta Table State` scan of `_delta_log`) are left
    out: no code of the user's sizes them. The finding points at the operator with the most
    self time in the stage; when the stage reads a single-partition shuffle it says so, and its
    fix names what asked for the one partition (a window without PARTITION BY, a global sort or
    limit, repartition(1)). The final merge of a global aggregate (no GROUP BY) is left out: it
    merges one partial result per upstream task, and no partitioning spreads that.
    """
    ctx = context(analysis)
    findings = []
    for key, s in ctx.stage_stats.items():
        wall = ctx.walls.get(key)
        if wall is None or s.n_successful == 0 or wall.slots <= 0:
            continue  # no slot alive while it ran: waiting, not idle (see executor-wait)
        cores = wall.slots
        idle = idle_core_share(
            s.n_successful,
            cores,
            s.read_sum_records,
            s.read_sum_bytes,
            thresholds.idle_cores_min_slot_records,
            thresholds.idle_cores_min_slot_bytes,
        )
        execution_id = ctx.stage_execution(s.stage_id)
        if (
            idle < thresholds.idle_cores_share
            and execution_id is not None
            and s.read_sum_bytes > 0
            and idle_core_share(
                s.n_successful, cores, s.read_sum_records, 0, thresholds.idle_cores_min_slot_records
            )
            >= thresholds.idle_cores_share
        ):
            # Spark can count far less input than its scans read (a task's Input is what
            # the file system's thread statistics saw): the scans' file sizes bound it too,
            # where the bytes and not the records held the stage under the idle share.
            files_bytes = _scanned_file_bytes(analysis, execution_id, s.stage_id)
            if files_bytes > s.read_sum_bytes:
                idle = idle_core_share(
                    s.n_successful,
                    cores,
                    s.read_sum_records,
                    files_bytes,
                    thresholds.idle_cores_min_slot_records,
                    thresholds.idle_cores_min_slot_bytes,
                )
        if idle < thresholds.idle_cores_share:
            continue
        if execution_id is None:
            continue  # RDD work and file listing: no SQL setting sizes their tasks
        running_ms = wall.run_ms + wall.result_ms + wall.tail_ms
        lost_ms = int(running_ms * idle)
        if lost_ms < thresholds.idle_cores_min_ms or not ctx.significant(
            lost_ms, execution_id, thresholds
        ):
            continue
        reads = _stage_reads(analysis, execution_id, s.stage_id)
        single = reads.single
        if single == GLOBAL_AGGREGATE:
            continue  # a global aggregate's final merge: one task whatever the partitioning
        if reads.delta_state:
            continue  # Delta's own snapshot of a table's log: no user code to repartition
        if s.n_result_tasks and _collects_a_limit(ctx.executions.get(execution_id)):
            # show(), take(), limit().collect(): Spark runs the result stage on as few
            # partitions as the limit needs, scaling up only when they fall short.
            continue
        node_id = reads.node_id
        where = f" in node {node_id} {reads.node_name}" if node_id is not None else ""
        evidence = [
            ev("n_tasks", "tasks", s.n_successful, "count"),
            ev("n_cores", "task slots alive", cores, "count"),
            ev("idle_core_share", "slots left idle", idle, "share"),
            ev("stage_wall_ms", "stage wall time", wall.wall_ms, "ms"),
            ev("running_ms", "of which running", running_ms, "ms"),
        ]
        if s.read_sum_records:
            evidence.append(ev("records_read", "records read", s.read_sum_records, "count"))
        splittable = (
            split_can_shrink(s.read_max_bytes, ctx.properties) if s.read_sum_bytes else False
        )
        reads_files = s.shuffle_read_median_bytes == 0 and s.read_sum_bytes > 0
        reads_rdd = not reads_files and s.shuffle_read_max_bytes > 0 and not reads.reads_exchange
        generated = s.read_sum_bytes == 0  # rows made in the task (range, parallelize)
        advice: Advice | None = None
        asked: int | None = None
        coalesced = (
            reads.coalesce if reads.coalesce is not None and reads.coalesce < cores else None
        )
        if coalesced is not None:
            evidence.append(ev("coalesce", "the query's coalesce()", coalesced, "count"))
        elif single is not None:
            evidence.append(
                ev("single_partition", "reads", "a single-partition shuffle (one task)", "text")
            )
        elif reads_rdd:
            evidence.append(
                ev("rdd_shuffle", "reads", "an RDD's shuffle, outside the SQL plan", "text")
            )
        elif generated:
            evidence.append(ev("generated", "reads", "no file or shuffle", "text"))
        elif reads_files:
            advice = max_partition_bytes_to_spread(
                ctx.properties, s.read_sum_bytes, s.read_max_bytes, cores
            )
        else:
            asked = user_repartition(analysis, execution_id, s.stage_id)
            advice = (
                shuffle_partitions_for_size(ctx.properties, s.read_sum_bytes, cores)
                if asked is None
                else not_sized_by_setting(ctx.properties, asked)
            )
            setting = decimal_int(ctx.properties.get(SHUFFLE_PARTITIONS_KEY, "200"))
            if asked is not None:
                evidence.append(ev("repartition", "the query's repartition()", asked, "count"))
            elif advice.value is not None and setting is not None and int(advice.value) <= setting:
                # The setting already allows more tasks than ran: raising it again does nothing.
                advice = no_value(
                    ctx.properties,
                    SHUFFLE_PARTITIONS_KEY,
                    "200",
                    f"no value: it already allows {fmt_count(setting)} partitions and the stage "
                    f"ran {fmt_count(s.n_successful)}: "
                    + (
                        "AQE coalesced them, or the shuffle's keys have that few values"
                        if under_aqe(analysis, execution_id)
                        else OWN_PARTITIONING
                    ),
                    "count",
                )
        findings.append(
            Finding(
                rule=RULE,
                severity=ctx.severity(lost_ms, execution_id, thresholds),
                title=(
                    f"Stage {s.stage_id}: {fmt_count(s.n_successful)} "
                    f"task{'' if s.n_successful == 1 else 's'} for {fmt_count(cores)} task "
                    f"slots ran {fmt_duration_ms(running_ms)}{where}"
                ),
                suggestion=(
                    _coalesce_suggestion(coalesced)
                    if coalesced is not None
                    else _repartition_suggestion(asked, cores)
                    if asked is not None
                    else _suggestion(
                        single,
                        reads_rdd,
                        generated,
                        reads_files,
                        splittable and advice is not None and advice.value is not None,
                        advice,
                    )
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


SINGLE_FIXES = {
    WINDOW: "give the window a PARTITION BY (without one, every row goes to one task)",
    SORT_OR_LIMIT: (
        "sort or limit within partitions, or after the heavy step, rather than globally before it"
    ),
    REPARTITION: "drop the repartition(1) before the heavy step, or move it after",
    UNKNOWN: (
        "find what asks for one partition (a window without PARTITION BY, a global sort or "
        "limit, repartition(1)) and move it after the heavy step"
    ),
}
"""The fix for each kind of single-partition read, as the suggestion words it."""


def _repartition_suggestion(asked: int, slots: int) -> str:
    """What spreads a stage that reads the query's own `repartition(asked)`: that number, which
    no setting changes."""
    return (
        f"Spread the work: the stage reads the query's repartition({fmt_count(asked)}), which "
        "sets its task count whatever spark.sql.shuffle.partitions says: raise it to at least "
        f"the {fmt_count(slots)} task slots, or drop it. If it is there to write that few "
        "output files, this wait is what so few files cost."
    )


def _coalesce_suggestion(asked: int) -> str:
    """What spreads a stage the query's own `coalesce(asked)` ran in that many tasks: a
    coalesce merges the partitions of everything before it in the stage, its scan included."""
    return (
        f"Spread the work: the query's coalesce({fmt_count(asked)}) ran the whole stage, the "
        f"work before it included, in {fmt_count(asked)} task{'' if asked == 1 else 's'}, and no "
        "partition setting changes that: drop it, or, where the work before it is the heavy "
        f"part, use repartition({fmt_count(asked)}), which shuffles once but runs that work on "
        "every slot."
    )


def _scanned_file_bytes(analysis: Analysis, execution_id: int, stage_id: int) -> int:
    """The bytes of the files the query's scans in a stage read (their `size of files read`),
    0 when none says."""
    times = analysis.times.get(execution_id)
    execution = context(analysis).executions.get(execution_id)
    stats = analysis.node_stats.get(execution_id)
    if times is None or execution is None or stats is None:
        return 0
    total = 0
    for node_id, nt in times.nodes.items():
        if stage_id not in nt.stage_ids:
            continue
        if not execution.final_plan.graph.node(node_id).name.startswith("Scan"):
            continue
        ns = stats.get(node_id)
        for m in ns.metrics if ns is not None else ():
            if m.name == "size of files read":
                total += m.total
    return total


def _collects_a_limit(execution: Execution | None) -> bool:
    """True when a query returns its first rows to the driver (`CollectLimit`: show(), take(),
    limit().collect()): its result stage runs on as few partitions as the limit needs."""
    if execution is None:
        return False
    graph = execution.final_plan.graph
    tops = graph.roots
    while len(tops) == 1 and tops[0].name == "AdaptiveSparkPlan":
        tops = graph.children_of(tops[0].node_id)
    return len(tops) == 1 and tops[0].name == "CollectLimit"


def _suggestion(
    single: str | None,
    reads_rdd: bool,
    generated: bool,
    reads_files: bool,
    splittable: bool,
    advice: Advice | None,
) -> str:
    """What spreads the work: never smaller file splits where the input cannot be split, nor
    SQL shuffle partitions where no SQL shuffle sizes the tasks."""
    if single is not None:
        fix = SINGLE_FIXES.get(single, SINGLE_FIXES[UNKNOWN])
        return f"Spread the work: {fix}: a single-partition shuffle ignores the partition settings."
    if reads_rdd:
        return (
            "Spread the work: repartition() before the expensive step: the stage reads the "
            "shuffle of an RDD under the plan (a Dataset made from an RDD, a cached state), "
            "whose partitions no SQL partition setting sizes."
        )
    if generated:
        return (
            "Spread the work: give the source more partitions (range(), parallelize()), or "
            "repartition() before the expensive step: the stage reads no file or shuffle, so "
            "no partition setting sizes its tasks."
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
    if value is None:
        return (
            "Spread the work: the shuffle partition setting already allows more tasks than ran, "
            "so AQE coalesced the partitions (by its advisory partition size) or the shuffle's "
            "keys have few values: repartition() on a key with more values before the "
            "expensive step."
        )
    return (
        f"Use more partitions: set spark.sql.shuffle.partitions={value} (AQE may coalesce "
        "them again, down to its advisory size), or repartition() before the expensive step."
    )


@dataclass(frozen=True, slots=True)
class StageReads:
    """Where a stage's work is in its SQL plan, and which of the plan's shuffles it reads."""

    node_id: int | None
    """The operator with the most self time in the stage (None when none has any)."""
    node_name: str
    reads_exchange: bool
    """Whether the stage reads an Exchange of the plan; a stage that reads a shuffle without
    reading one reads an RDD's shuffle, which `spark.sql.shuffle.partitions` does not size."""
    single: str | None
    """What reads a single-partition exchange in the stage (`WINDOW` …), None when none."""
    coalesce: int | None = None
    """The partition count of the query's `coalesce(n)` in the stage (the smallest, if
    several), None when it has none."""
    delta_state: bool = False
    """Whether the stage scans Delta's state of a table (`Scan ExistingRDD Delta Table State`
    of its `_delta_log`): Delta computes it for its own snapshot, in partitions it chooses."""


def _stage_reads(analysis: Analysis, execution_id: int, stage_id: int) -> StageReads:
    """Find the operator with the most self time in a stage, and the exchanges it reads."""
    times = analysis.times.get(execution_id)
    execution = context(analysis).executions.get(execution_id)
    if times is None or execution is None:
        return StageReads(None, "", reads_exchange=False, single=None)
    graph = execution.final_plan.graph
    stages = {nt.node_id: dict(nt.by_stage) for nt in times.nodes.values()}
    best: tuple[float, int] | None = None
    reads_exchange = False
    single: str | None = None
    delta_state = False
    coalesce: int | None = None
    for node_id, by_stage in stages.items():
        ms = by_stage.get(stage_id)
        if ms is None:
            continue
        node = graph.node(node_id)
        delta_state = delta_state or is_delta_state_scan(node)
        if node.name == "Coalesce":
            n = _COALESCE.fullmatch(node.desc.strip())
            if n is not None:
                coalesce = min(int(n.group(1)), coalesce or int(n.group(1)))
        if "Exchange" in node.name:
            readers = _readers(graph, stages, node_id, stage_id)
            reads_exchange = reads_exchange or bool(readers)
            if readers and SINGLE_PARTITION in node.desc:
                single = _single_kind(readers, node.desc)
            continue
        if best is None or ms > best[0]:
            best = (ms, node_id)
    if best is None:
        return StageReads(None, "", reads_exchange, single, coalesce, delta_state)
    return StageReads(
        best[1], graph.node(best[1]).name, reads_exchange, single, coalesce, delta_state
    )


def is_delta_state_scan(node: PlanNode) -> bool:
    """True for Delta's scan of a table's state: the actions of its `_delta_log` that Delta
    reads into a Dataset of its own to compute a snapshot (`Scan ExistingRDD Delta Table
    State #9 - …/_delta_log`).

    >>> from analyzer.model.plan import PlanNode
    >>> is_delta_state_scan(PlanNode(node_id=6, name="Scan ExistingRDD Delta Table State #9 - "
    ...     "abfss://c@a.dfs.core.windows.net/t/_delta_log", desc=""))
    True
    """
    if not node.name.startswith("Scan"):
        return False
    return "Delta Table State" in node.name or "/_delta_log" in f"{node.name} {node.desc}"


def _readers(
    graph: PlanGraph, stages: dict[int, dict[int, float]], exchange_id: int, stage_id: int
) -> list[PlanNode]:
    """The operators that read an exchange in `stage_id`: none when that stage only writes it.

    They are the operators above the exchange up to the stage's end; nodes that only wrap
    others (query stages, codegen inputs, AQE's shuffle reads) run in no stage of their own
    and are passed through.
    """
    readers = []
    parent = graph.parent_of(exchange_id)
    while parent is not None:
        by_stage = stages.get(parent.node_id, {})
        if by_stage and stage_id not in by_stage:
            break
        if by_stage:
            readers.append(parent)
        parent = graph.parent_of(parent.node_id)
    return readers


def _single_kind(readers: list[PlanNode], exchange_desc: str) -> str:
    """What asked a single-partition exchange for its one partition, read off its readers."""
    first = readers[0]
    if first.name.endswith("Aggregate") and "keys=[]" in first.desc:
        return GLOBAL_AGGREGATE
    if any(n.name.startswith("Window") for n in readers):
        return WINDOW
    if "REPARTITION" in exchange_desc:
        return REPARTITION
    if any(n.name in SORT_OR_LIMIT_NODES for n in readers):
        return SORT_OR_LIMIT
    return UNKNOWN
