"""Rule `data-skew`: one task of a stage handled far more rows than the median task, traced back
to where the skew starts: the scan whose files or splits are uneven (or whose row groups are
larger than its splits, so that most splits read none), or the operator whose keys are (the join
or aggregate above the shuffle that grouped the hot key into one partition)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import MetricStats, NodeStats
from analyzer.aggregate.stage_stats import (
    StageTaskStats,
    end_saved_ms,
    task_durations,
    task_input_bytes,
)
from analyzer.aggregate.task_detail import task_metric_shares, task_metric_values
from analyzer.insights._common import (
    ROW_GROUP_BYTES,
    ancestors_in_stage,
    context,
    descendants_in_stage,
    metric,
    parse_bytes,
    split_can_shrink,
)
from analyzer.insights.advice import current, flag, no_value
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Execution
from analyzer.model.plan import PlanNode
from analyzer.units import (
    decimal_int,
    fmt_bytes,
    fmt_count,
    fmt_factor,
    fmt_partition,
    fmt_pct,
)

RULE = "data-skew"
METHOD = (
    "duration of the task holding the most rows minus the median task duration of its stage: the "
    "stage would have ended that much sooner with evenly spread rows; at most its wall time less "
    "its task time spread evenly over its task slots"
)
ROW_METRICS = ("number of output rows", "records read")
"""Per-task row counts that show how data is spread over partitions."""
KEYED = ("Join", "Aggregate", "Window")
"""Operators whose input partitions are grouped by key: skew read from a shuffle is theirs."""
HOT_TASK_SHARE = 0.5
"""A task holding at least this share of the largest task's rows carries the skew with it."""
TASK_IDS_KEPT = 5
"""How many of the tasks carrying the rows a finding names."""
COLUMNAR_UNITS = {
    "parquet": ("Parquet", "row groups", "middle", "parquet.block.size", "128m"),
    "orc": ("ORC", "stripes", "start", "orc.stripe.size", "64m"),
}
"""Per columnar format: its name, the unit a scan cannot split, which byte of a unit places it
in a split (parquet-mr keeps a row group whose midpoint is in the split, ORC a stripe that
starts in it), the writer's setting that sizes the unit, and that setting's default."""
_COLUMNAR_SCAN = re.compile(r"\bScan (parquet|orc)\b", re.IGNORECASE)
_FILTER_NAME = re.compile(r"([A-Za-z]+)\(")
_NOT_NULL_ONLY = frozenset(("IsNotNull",))
"""Pushed filters that skip no row group a split holds rows of (a row group of nulls only)."""


def skips_row_groups(node: PlanNode) -> bool:
    """Whether a file scan pushes a filter down that can skip whole row groups (stripes) by
    their statistics: anything but `IsNotNull`. The splits of skipped row groups read no rows
    either, so empty splits then say nothing of the row groups' size.

    >>> from analyzer.model.plan import PlanNode
    >>> scan = PlanNode(node_id=0, name="Scan parquet", desc="",
    ...     metadata=(("PushedFilters", "[IsNotNull(id), LessThan(id,5000)]"),))
    >>> skips_row_groups(scan)
    True
    """
    pushed = dict(node.metadata or ()).get("PushedFilters", "")
    return any(name not in _NOT_NULL_ONLY for name in _FILTER_NAME.findall(pushed))


@dataclass(frozen=True)
class RowSpread:
    """How a scan's rows were spread over the tasks of its stage."""

    n_tasks: int
    hot_task_ids: tuple[int, ...]
    """The tasks holding at least `HOT_TASK_SHARE` of the largest task's rows, most rows first."""
    hot_share: float
    """Their share of the scan's rows in the stage."""
    n_empty: int
    """Tasks that read no rows (a split that held no row group, or only filtered-out ones)."""

    @property
    def several_hot(self) -> bool:
        """Whether more than one task carries the rows."""
        return len(self.hot_task_ids) > 1


def row_spread(values: tuple[tuple[int, int], ...]) -> RowSpread:
    """Summarize `(task id, rows)` per task slot, largest first, into a `RowSpread`.

    >>> s = row_spread(((64, 90), (71, 90), (89, 20), (61, 0), (62, 0)))
    >>> s.n_tasks, s.hot_task_ids, round(s.hot_share, 2), s.n_empty
    (5, (64, 71), 0.9, 2)
    """
    total = sum(v for _, v in values)
    top = values[0][1] if values else 0
    hot = [(t, v) for t, v in values if top > 0 and v >= HOT_TASK_SHARE * top]
    return RowSpread(
        n_tasks=len(values),
        hot_task_ids=tuple(t for t, _ in hot),
        hot_share=sum(v for _, v in hot) / total if total else 0.0,
        n_empty=sum(1 for _, v in values if v == 0),
    )


@dataclass(frozen=True)
class OversizedUnits:
    """A columnar scan whose row groups (stripes) are larger than its splits."""

    format_name: str
    """`Parquet` or `ORC`."""
    unit: str
    """`row groups` or `stripes`."""
    placed_by: str
    """Which byte of a unit decides its split: `middle` (Parquet) or `start` (ORC)."""
    setting: str
    """The writer's setting that sizes them (`parquet.block.size`)."""
    default: str
    unit_bytes: int
    """The on-disk size of what the hot task read: the files' bytes × its share of the rows."""
    split_bytes: int
    """The scan's split size: Spark's `max size of file split` where logged (EMR), else worked
    out as Spark does (`scan_split_bytes`), else `spark.sql.files.maxPartitionBytes`."""
    split_source: str
    """`logged`, `computed` or `bound`: where `split_bytes` comes from."""


OPEN_COST_DEFAULT_BYTES = 4 << 20
"""`spark.sql.files.openCostInBytes` by default."""


def scan_split_bytes(
    files_bytes: int, n_files: int, parallelism: int, props: dict[str, str]
) -> int:
    """The split size Spark gives a file scan (`FilePartition.maxSplitBytes`): the files'
    bytes plus an open cost per file, spread over the minimum partition number (by default
    the default parallelism, the cores), at least the open cost and at most
    `spark.sql.files.maxPartitionBytes`. Small tables on many cores get small splits.

    >>> scan_split_bytes(3 * (48 << 20), 3, 200, {}) == 4 << 20  # the open cost
    True
    >>> scan_split_bytes(88 << 20, 3, 8, {}) / (1 << 20), scan_split_bytes(10 << 30, 40, 8, {})
    (12.5, 134217728)
    """
    max_bytes = parse_bytes(props.get("spark.sql.files.maxPartitionBytes"), 128 << 20)
    open_cost = parse_bytes(props.get("spark.sql.files.openCostInBytes"), OPEN_COST_DEFAULT_BYTES)
    parts = next(
        (
            n
            for key in (
                "spark.sql.files.minPartitionNum",
                "spark.sql.leafNodeDefaultParallelism",
                "spark.default.parallelism",
            )
            if (n := decimal_int(props.get(key, "").strip()) or 0) > 0
        ),
        max(parallelism, 2),
    )
    per_core = (files_bytes + n_files * open_cost) // parts
    return min(max_bytes, max(open_cost, per_core))


def _driver_total(stats: NodeStats, name: str) -> int | None:
    """A scan metric the driver sets (file sizes, split size), None when not logged."""
    m = metric(stats, name)
    return int(m.total) if m is not None and m.driver_values else None


def oversized_units(
    node: PlanNode,
    node_stats: NodeStats,
    spread: RowSpread,
    hot_rows: int,
    total_rows: int,
    hot_input_bytes: int,
    props: dict[str, str],
    parallelism: int = 0,
) -> OversizedUnits | None:
    """Row groups (ORC stripes) larger than the scan's splits, or None.

    Parquet and ORC split a file only between row groups (stripes): each goes to the one split
    that holds its midpoint (parquet-mr's `filterFileMetaDataByMidpoint`; ORC: its first
    byte), so when they are
    larger than the splits, most splits read only a footer and no row, and a few read a whole
    row group each. Told when at least half the tasks read no rows, the scan pushes no filter
    that skips row groups (`skips_row_groups`), and what the hot task read (the files' bytes
    times its share of the rows, else its input bytes) exceeds the split. Where the log does not
    give the split size, it is worked out as Spark does with `parallelism` task slots.
    """
    match = _COLUMNAR_SCAN.search(node.name)
    if match is None or spread.n_empty * 2 < spread.n_tasks or total_rows <= 0:
        return None
    if skips_row_groups(node):
        return None
    format_name, unit, placed_by, setting, default = COLUMNAR_UNITS[match.group(1).lower()]
    files = _driver_total(node_stats, "size of files read")
    n_files = _driver_total(node_stats, "number of files read")
    split = _driver_total(node_stats, "max size of file split")
    source = "logged"
    if split is None and files and n_files and parallelism > 0:
        split, source = scan_split_bytes(files, n_files, parallelism, props), "computed"
    elif split is None:
        split = parse_bytes(props.get("spark.sql.files.maxPartitionBytes"), 128 << 20)
        source = "bound"
    unit_bytes = files * hot_rows // total_rows if files else hot_input_bytes
    if split <= 0 or unit_bytes <= split:
        return None
    return OversizedUnits(format_name, unit, placed_by, setting, default, unit_bytes, split, source)


def _row_metric(node_stats: tuple[MetricStats, ...]) -> MetricStats | None:
    for name in ROW_METRICS:
        for m in node_stats:
            if m.name == name:
                return m
    return None


def _is_scan(node: PlanNode) -> bool:
    return "Scan" in node.name and "Exchange" not in node.name


def _skewed(m: MetricStats, thresholds: Thresholds) -> bool:
    """True if one task's rows are far above the median task's."""
    if m.count < thresholds.skew_min_tasks or m.max_at is None or m.max_at.task_id is None:
        return False
    return m.max_value > 0 and (m.median == 0 or m.max_value >= thresholds.skew_ratio * m.median)


def _origin(
    analysis: Analysis,
    execution: Execution,
    stage_id: int,
    top: int,
    task_id: int,
    thresholds: Thresholds,
) -> tuple[int, float]:
    """Walk down from the skewed node to the deepest input where the hot task already held
    most of its share of the rows; return that node and the hot task's share there."""
    graph = execution.final_plan.graph
    stats = analysis.node_stats.get(execution.execution_id, {})
    in_stage = {nid for nid, ns in stats.items() if stage_id in ns.stage_ids}
    below = descendants_in_stage(graph, top, in_stage | _untimed(execution, in_stage))
    accs: dict[int, int] = {}
    for nid in [top, *below]:
        m = _row_metric(stats[nid].metrics) if nid in stats else None
        if m is not None:
            accs[nid] = m.accumulator_id
    shares = task_metric_shares(
        analysis, execution.execution_id, stage_id, task_id, set(accs.values())
    )

    def share(nid: int) -> float:
        task, total = shares.get(accs.get(nid, -1), (0, 0))
        return task / total if total else 0.0

    top_share = share(top)
    origin, origin_share = top, top_share
    for nid in below:
        if nid in accs and share(nid) >= thresholds.skew_origin_share * top_share:
            origin, origin_share = nid, share(nid)
    return origin, origin_share


def _untimed(execution: Execution, in_stage: set[int]) -> set[int]:
    """Operators with no metrics of their own inside the codegen clusters of a stage's nodes."""
    graph = execution.final_plan.graph
    clusters = {graph.node(n).cluster_id for n in in_stage} | in_stage
    return {n.node_id for n in graph.nodes if n.cluster_id in clusters}


def _keyed_consumer(execution: Execution, exchange: int, in_stage: set[int]) -> int | None:
    """The join or aggregate above a shuffle read, in the stage that reads it."""
    graph = execution.final_plan.graph
    for nid in ancestors_in_stage(graph, exchange, in_stage | _untimed(execution, in_stage)):
        if any(part in graph.node(nid).name for part in KEYED):
            return nid
    return None


def detect_data_skew(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages where one task handled `skew_ratio` × the median task's rows and the hot
    task's extra time is a meaningful share of the query's wall time.

    The finding names where the skew starts: a scan (its files or splits are uneven), else the
    join or aggregate that reads a skewed shuffle (a hot key), else the node itself.
    """
    ctx = context(analysis)
    findings: list[Finding] = []
    stats_by_stage = {key[0]: s for key, s in ctx.stage_stats.items()}
    # (execution, stage, its statistics, skew ratio, node id, row metric) of every skewed
    # stage; the hot tasks' durations are then looked up in one pass over the task frame.
    candidates: list[tuple[Execution, int, StageTaskStats, float, int, MetricStats]] = []
    for execution in analysis.application.executions:
        graph = execution.final_plan.graph
        per_stage: dict[int, list[tuple[float, int, MetricStats]]] = {}
        for node_id, ns in analysis.node_stats.get(execution.execution_id, {}).items():
            if graph.node(node_id).is_cluster:
                continue
            m = _row_metric(ns.metrics)
            if m is None or not _skewed(m, thresholds):
                continue
            assert m.max_at is not None and m.max_at.stage_id is not None
            ratio = m.max_value / m.median if m.median else float("inf")
            per_stage.setdefault(m.max_at.stage_id, []).append((ratio, node_id, m))
        for stage_id, hits in sorted(per_stage.items()):
            s = stats_by_stage.get(stage_id)
            if s is None or s.n_successful < thresholds.skew_min_tasks:
                continue
            # The node nearest the root among the skewed ones: the skew's furthest effect.
            hits.sort(key=lambda h: (h[1], -h[0]))
            ratio, node_id, m = hits[0]
            candidates.append((execution, stage_id, s, ratio, node_id, m))
    hot_task_ids = [
        m.max_at.task_id
        for *_, m in candidates
        if m.max_at is not None and m.max_at.task_id is not None
    ]
    durations = task_durations(analysis.tasks, hot_task_ids) if hot_task_ids else {}
    for execution, stage_id, s, ratio, node_id, m in candidates:
        graph = execution.final_plan.graph
        assert m.max_at is not None and m.max_at.task_id is not None
        task_id = m.max_at.task_id
        task_ms = durations.get(task_id, 0)
        lost_ms = max(0, task_ms - s.median_duration_ms)
        if not ctx.significant(lost_ms, execution.execution_id, thresholds):
            continue
        # Spreading rows moves work, it does not remove it: the stage cannot end before its
        # task time spread evenly over its slots (two hot tasks side by side on two slots
        # already did). Skew that costs little at this parallelism is still told, as `info`.
        wall = ctx.walls.get((stage_id, s.stage_attempt_id))
        attempt = ctx.attempts.get((stage_id, s.stage_attempt_id))
        if wall is not None and wall.slots > 0 and attempt is not None and attempt.duration_ms:
            floor_ms = -(-s.duration_sum_ms // wall.slots)
            lost_ms = min(lost_ms, max(0, attempt.duration_ms - floor_ms))
        if wall is not None and wall.peak_running > 0:
            # Every task carrying the rows (at least half the largest's) at the median: a hot
            # task that another one outlasts holds the stage no longer than that one does.
            hot = row_spread(
                task_metric_values(analysis, execution.execution_id, stage_id, m.accumulator_id)
            ).hot_task_ids
            lost_ms = min(
                lost_ms,
                end_saved_ms(
                    analysis.tasks,
                    stage_id,
                    s.stage_attempt_id,
                    hot or (task_id,),
                    s.median_duration_ms,
                    wall.peak_running,
                ),
            )
        severity = (
            ctx.severity(lost_ms, execution.execution_id, thresholds)
            if ctx.significant(lost_ms, execution.execution_id, thresholds)
            else "info"
        )
        origin, share = _origin(analysis, execution, stage_id, node_id, task_id, thresholds)
        stats = analysis.node_stats.get(execution.execution_id, {})
        in_stage = {nid for nid, ns in stats.items() if stage_id in ns.stage_ids}
        origin_node = graph.node(origin)
        spread: RowSpread | None = None
        oversized: OversizedUnits | None = None
        if _is_scan(origin_node):
            where, why = origin, "uneven files"
            rows = _row_metric(stats[origin].metrics)
            if rows is not None:
                values = task_metric_values(
                    analysis, execution.execution_id, stage_id, rows.accumulator_id
                )
                spread = row_spread(values)
                hot_rows = next((v for t, v in values if t == task_id), 0)
                oversized = oversized_units(
                    origin_node,
                    stats[origin],
                    spread,
                    hot_rows,
                    sum(v for _, v in values),
                    _input_bytes(analysis, task_id),
                    ctx.properties,
                    wall.slots if wall is not None else 0,
                )
        elif "Exchange" in origin_node.name:
            where = _keyed_consumer(execution, origin, in_stage) or node_id
            why = "hot key"
        else:
            where, why = origin, "hot key"
        node = graph.node(where)
        ratio_str = fmt_factor(ratio) if m.median else "∞ (median 0)"
        findings.append(
            _finding(
                execution,
                stage_id,
                node,
                m,
                why,
                ratio,
                ratio_str,
                share,
                task_id,
                task_ms,
                s.median_duration_ms,
                lost_ms,
                severity,
                f"{graph.node(node_id).name} (#{node_id})" if where != node_id else "",
                split_can_shrink(_input_bytes(analysis, task_id), ctx.properties),
                ctx.properties,
                _input_bytes(analysis, task_id),
                spread,
                oversized,
            )
        )
    return findings


def _input_bytes(analysis: Analysis, task_id: int) -> int:
    """Input bytes the task read from files."""
    return task_input_bytes(analysis.tasks, task_id)


def _finding(
    execution: Execution,
    stage_id: int,
    node: PlanNode,
    m: MetricStats,
    why: str,
    ratio: float,
    ratio_str: str,
    share: float,
    task_id: int,
    task_ms: int,
    median_ms: int,
    lost_ms: int,
    severity: str,
    skewed_at: str,
    splittable: bool = False,
    props: dict[str, str] | None = None,
    input_bytes: int = 0,
    spread: RowSpread | None = None,
    oversized: OversizedUnits | None = None,
) -> Finding:
    assert m.max_at is not None
    props = props or {}
    advice: tuple[Advice, ...] = ()
    if oversized is not None and spread is not None:
        advice = (_unit_size_advice(oversized, spread, props),)
    elif why == "uneven files":
        key = "spark.sql.files.maxPartitionBytes"
        if splittable:
            row_groups = max(1, input_bytes // ROW_GROUP_BYTES)
            advice = (
                Advice(
                    key,
                    f"{ROW_GROUP_BYTES >> 20}m",
                    current(props, key, "128m"),
                    f"the long task read {fmt_bytes(input_bytes)}, about {row_groups} row "
                    f"groups of {fmt_bytes(ROW_GROUP_BYTES)}: splits of one row group let "
                    "Spark spread them over tasks",
                    "bytes",
                ),
            )
        else:
            advice = (
                no_value(
                    props,
                    key,
                    "128m",
                    f"cannot split: the long task read {fmt_bytes(input_bytes)}, at most a row "
                    "group or one unsplittable file; rewrite with smaller row groups or files",
                    "bytes",
                ),
            )
    elif "Join" in node.name:
        advice = (
            flag(
                props,
                "spark.sql.adaptive.skewJoin.enabled",
                "true",
                "true",
                "AQE splits a skewed partition of a sort-merge join into several tasks",
            ),
        )
    if oversized is not None and spread is not None:
        title = f"Node {node.node_id} {node.name}: {_who_read(spread, share, True)}" + (
            f" ({oversized.unit} larger than the {fmt_bytes(oversized.split_bytes)} splits)"
        )
        suggestion = (
            f"Write the table with smaller {oversized.unit}: {oversized.format_name} gives "
            f"each to the one split holding its {oversized.placed_by}, and here they are about "
            f"{fmt_bytes(oversized.unit_bytes)} against splits of "
            f"{fmt_bytes(oversized.split_bytes)}, so {fmt_count(spread.n_empty)} of "
            f"{fmt_count(spread.n_tasks)} splits read no rows. Set {oversized.setting} to at "
            "most the split size on the job that writes the table, or write more, smaller "
            "files; smaller splits will not help. Until then, repartition() right after "
            "reading spreads the work of the operators above the scan."
        )
    elif why == "uneven files":
        title = (
            f"Node {node.node_id} {node.name}: {_who_read(spread, share)} (uneven files or splits)"
        )
        suggestion = (
            "Even out the input: rewrite the table into files of similar size (or more, smaller "
            f"ones), set spark.sql.files.maxPartitionBytes={advice[0].value} so large files "
            "are split, or repartition() right after reading."
            if splittable
            else "Even out the input: the long task's split cannot be split further (at most a "
            "row group or an unsplittable file), so smaller splits will not help; rewrite the "
            "table into files (and row groups) of similar size, or repartition() right after "
            "reading."
        )
    else:
        title = (
            f"Node {node.node_id} {node.name}: one task had {ratio_str} the median "
            f"{m.name} ({fmt_count(m.max_value)} vs {fmt_count(m.median)}), a hot key"
        )
        suggestion = (
            "Spread the hot key: set spark.sql.adaptive.skewJoin.enabled=true (AQE splits a "
            "skewed join partition), or salt the key; check for null or default keys."
            if advice
            else "Spread the hot key: salt the key or aggregate it separately; check for null "
            "or default keys."
        )
    partition = fmt_partition(m.max_at.partition_id)
    # The figures below are the skewed metric's, of the node where the skew was seen: when
    # that is not the node named (a scan below it), the metric line says whose they are.
    evidence = [
        ev("metric", "metric", f"{m.name} of {skewed_at}" if skewed_at else m.name, "text"),
        ev(
            "max_value",
            "largest task",
            m.max_value,
            "count",
            f" in task {task_id}" + (f" ({partition})" if partition else ""),
        ),
        ev("median_value", "median task", m.median, "count"),
        ev("ratio", "ratio", ratio if m.median else None, "ratio", "" if m.median else ratio_str),
        ev("total_value", "total", m.total, "count"),
        ev(
            "hot_task_share",
            "the hot task's share of the rows where the skew starts",
            share,
            "share",
        ),
        ev("max_task_duration_ms", "largest task duration", task_ms, "ms"),
        ev("median_task_duration_ms", "median task duration", median_ms, "ms"),
    ]
    many = spread is not None and spread.several_hot
    # The spread is the named node's (where the skew starts): when the figures above are of a
    # node downstream, say whose rows these are.
    of_node = f" of {node.name} (#{node.node_id})" if skewed_at else ""
    if spread is not None and (many or oversized is not None):
        evidence += [
            ev(
                "n_hot_tasks",
                f"tasks carrying the rows{of_node}",
                len(spread.hot_task_ids),
                "count",
                f" of {fmt_count(spread.n_tasks)} (each at least half the largest task's rows)",
            ),
            ev("hot_tasks_share", f"their share of the rows{of_node}", spread.hot_share, "share"),
            ev("n_empty_tasks", "tasks that read no rows", spread.n_empty, "count"),
        ]
    if oversized is not None:
        evidence += [
            ev(
                "unit_bytes",
                f"{oversized.unit}, each about",
                oversized.unit_bytes,
                "bytes",
                " (the files' bytes × the largest task's share of the rows)",
            ),
            ev(
                "split_bytes",
                "split size",
                oversized.split_bytes,
                "bytes",
                {
                    "logged": " (Spark's max size of file split)",
                    "computed": " (as Spark sizes it: the files' bytes and an open cost each "
                    "over the default parallelism, within openCostInBytes and "
                    "maxPartitionBytes)",
                    "bound": " (at most spark.sql.files.maxPartitionBytes)",
                }[oversized.split_source],
            ),
        ]
    if skewed_at:
        evidence.append(ev("skew_seen_at", "skewed output downstream at", skewed_at, "text"))
    task_ids = (
        spread.hot_task_ids[:TASK_IDS_KEPT]
        if spread is not None and (many or oversized is not None)
        else (task_id,)
    )
    return Finding(
        rule=RULE,
        severity=severity,  # type: ignore[arg-type]
        title=title,
        suggestion=suggestion,
        estimated_lost_ms=lost_ms,
        estimate_method=METHOD,
        execution_id=execution.execution_id,
        node_id=node.node_id,
        stage_id=stage_id,
        stage_attempt_id=m.max_at.stage_attempt_id,
        task_ids=task_ids,
        evidence=tuple(evidence),
        advice=advice,
    )


def _who_read(spread: RowSpread | None, share: float, oversized: bool = False) -> str:
    """Which tasks read the rows: the one hot task, or how many of them, and, when many or
    when the splits outsize nothing, how many read none.

    >>> _who_read(RowSpread(30, (64, 71, 78, 85), 0.911, 24), 0.228)
    '4 of 30 tasks read 91.1 % of the rows; 24 splits read no rows'
    >>> _who_read(RowSpread(9, (3,), 0.5, 0), 0.5)
    'one task read 50.0 % of the rows'
    """
    many = spread is not None and spread.several_hot
    if spread is None or not many:
        text = f"one task read {fmt_pct(share)} of the rows"
    else:
        text = (
            f"{fmt_count(len(spread.hot_task_ids))} of {fmt_count(spread.n_tasks)} tasks read "
            f"{fmt_pct(spread.hot_share)} of the rows"
        )
    if spread is not None and spread.n_empty and (many or oversized):
        text += f"; {fmt_count(spread.n_empty)} splits read no rows"
    return text


def _unit_size_advice(
    oversized: OversizedUnits, spread: RowSpread, props: dict[str, str]
) -> Advice:
    """The writer's row-group (stripe) size, with no value for this run: it is set where the
    table is written, so no setting of this run changes it, and no time is predicted."""
    return Advice(
        oversized.setting,
        None,
        props.get(f"spark.hadoop.{oversized.setting}")
        or f"the writing job's; {oversized.default} by default",
        f"set on the job that writes the table (a write option, or spark.hadoop."
        f"{oversized.setting}), at most the {fmt_bytes(oversized.split_bytes)} splits: "
        f"{fmt_count(len(spread.hot_task_ids))} tasks read {oversized.unit} of about "
        f"{fmt_bytes(oversized.unit_bytes)} while {fmt_count(spread.n_empty)} of "
        f"{fmt_count(spread.n_tasks)} splits read none; or write more, smaller files",
        "bytes",
    )
