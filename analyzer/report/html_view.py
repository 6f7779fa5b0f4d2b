"""View models of the HTML report: every number laid out, formatted and bounded before rendering.

The template only places what is built here: plan graphs come with their coordinates (a layered,
top-down layout like Spark's SQL tab), panels with formatted metric rows, stages with task
quantiles, and per-task detail as JSON data for the page's script, capped for huge stages.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import MaxLocation, MetricStats, NodeStats
from analyzer.aggregate.task_detail import (
    NodeTaskQuery,
    TimelineTask,
    metric_histograms,
    successful_task_values,
    task_counts,
    task_quantiles,
    timeline_tasks,
    top_task_rows,
)
from analyzer.insights import Finding, Thresholds, detect_all
from analyzer.model.application import Execution, PlanVersion
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.report.formatters import (
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_metric_value,
    fmt_pct,
    fmt_timestamp_ms,
)
from analyzer.report.views import (
    FINDINGS_DOC,
    SEVERITY_MARKS,
    finding_lost_str,
    finding_where,
    is_skewed,
)

NODE_WIDTH = 196
NODE_HEIGHT = 46
SLOT_WIDTH = 216
LAYER_HEIGHT = 92
MARGIN = 24
CLUSTER_PAD = 10
CLUSTER_LABEL = 18
N_SHADES = 10
HIST_BINS = 20
MAX_TASK_ROWS_PER_NODE = 100
"""Per plan node, the page lists at most this many tasks (those with the largest main metric)."""
MAX_TIMELINE_TASKS = 1500
"""Per execution, the timeline draws at most this many task attempts (the longest ones)."""
MAX_TASK_ROWS_TOTAL = 20_000
"""Over the whole page, at most this many per-task rows; later executions share what is left."""
MAX_TIMELINE_TASKS_TOTAL = 6_000
"""Over the whole page, at most this many timeline bars."""
MAX_DETAILED_EXECUTIONS = 25
"""Unless executions are chosen explicitly, only the slowest this many get a detailed section."""
MAX_TIMELINE_LANES = 60
TIMELINE_WIDTH = 1000
SUBLANE_HEIGHT = 4


@dataclass(frozen=True)
class FindingRefView:
    """A link to one finding of the Findings section, from the place it points at."""

    dom_id: str = field(metadata={"help": "Element id of the finding (`finding-2`)."})
    label_str: str = field(
        metadata={"help": "Link text: `⚠ 2 · spill: Stage 9: spilled 1.2 GiB in Sort`."}
    )


@dataclass(frozen=True)
class FindingView:
    """One finding of the Findings section, formatted, with links to what it points at."""

    dom_id: str = field(metadata={"help": "Element id of the finding: `finding-<rank>`."})
    rank: int = field(metadata={"help": "Its number in the list (1: largest estimated time lost)."})
    rule: str = field(metadata={"help": "Rule id, e.g. `data-skew`."})
    severity: str = field(metadata={"help": "`info`, `warning` or `critical` (also a CSS class)."})
    mark: str = field(metadata={"help": "Severity mark: `✖` critical, `⚠` warning, `ℹ` info."})
    title: str = field(metadata={"help": "One line naming the problem, as the rule wrote it."})
    where_str: str = field(
        metadata={
            "help": "`SQL execution 3 · node #12 SortMergeJoin · stage 5.0 · tasks 9, 10`, the "
            "parts it has; `the application` when it points at nothing narrower."
        }
    )
    lost_str: str = field(
        metadata={"help": "`est. 4.2 s lost`, or `no time cost estimated` when the estimate is 0."}
    )
    estimate_str: str = field(metadata={"help": "How the estimate was made, in one sentence."})
    evidence: tuple[tuple[str, str], ...] = field(
        metadata={"help": "(label, formatted value) pairs, in reading order."}
    )
    suggestion: str = field(metadata={"help": "What to change: a Spark setting or a query change."})
    docs_anchor: str = field(
        metadata={"help": "Where the rule is explained: `docs/findings.md#rule` (plain text)."}
    )
    execution_anchor: str = field(
        metadata={
            "help": "Element id of the section of its execution; empty when it has no execution "
            "or its execution has no section in the page."
        }
    )
    execution_str: str = field(
        metadata={"help": "Link text to that section: `execution 3`, or empty."}
    )
    node_dom_id: str = field(
        metadata={
            "help": "Element id of its operator in the final plan graph (a click opens the "
            "node's panel); empty without a node, or when the node is not drawn."
        }
    )
    node_str: str = field(
        metadata={"help": "Link text to that node: `#12 SortMergeJoin`, or empty."}
    )


@dataclass(frozen=True)
class GraphNodeView:
    """One operator box of a plan graph."""

    dom_id: str = field(metadata={"help": "Unique element id of the node."})
    panel_id: str = field(
        metadata={
            "help": "Key of its panel and task data (shared with the final plan's same operator)."
        }
    )
    node_id: int = field(metadata={"help": "Spark's node id in this plan."})
    name: str = field(metadata={"help": "Operator name, as Spark's UI shows it."})
    label_str: str = field(metadata={"help": "The name shortened to fit the box."})
    desc: str = field(metadata={"help": "Spark's one-line description (shown as a tooltip)."})
    detail_str: str = field(metadata={"help": "The node's headline numbers: time and rows."})
    stage_str: str = field(
        metadata={"help": "`stage 3` / `stages 3, 5` where the node ran, or empty."}
    )
    x: int = field(metadata={"help": "Left edge in SVG pixels."})
    y: int = field(metadata={"help": "Top edge in SVG pixels."})
    width: int = field(metadata={"help": "Box width in pixels."})
    height: int = field(metadata={"help": "Box height in pixels."})
    shade: int = field(
        metadata={"help": "0..9: the node's time relative to the slowest node of the plan."}
    )
    time_share_str: str = field(
        metadata={"help": "The node's share of the plan's operator time, e.g. `42.0 %`."}
    )
    skewed: bool = field(
        metadata={"help": "True when one of its metrics has a max far above the median."}
    )
    skew_str: str = field(metadata={"help": "Which metric is skewed and by how much, or empty."})
    is_exchange: bool = field(metadata={"help": "True for exchanges (stage boundaries)."})
    finding_mark: str = field(
        metadata={"help": "Mark of the most severe finding pointing at the node, or empty."}
    )
    findings_str: str = field(
        metadata={
            "help": "The findings pointing at the node, one `⚠ 2 · spill` per line (tooltip), or "
            "empty."
        }
    )


@dataclass(frozen=True)
class GraphClusterView:
    """A WholeStageCodegen box drawn around its member operators."""

    dom_id: str = field(metadata={"help": "Element id of the cluster, also the key of its panel."})
    label_str: str = field(metadata={"help": "`WholeStageCodegen (3)` and its duration."})
    stage_str: str = field(metadata={"help": "The stages the generated code ran in, or empty."})
    x: int = field(metadata={"help": "Left edge in SVG pixels."})
    y: int = field(metadata={"help": "Top edge in SVG pixels."})
    width: int = field(metadata={"help": "Width in pixels."})
    height: int = field(metadata={"help": "Height in pixels."})


@dataclass(frozen=True)
class GraphEdgeView:
    """An edge from a child operator (drawn above) to the operator consuming it."""

    path_d: str = field(metadata={"help": "SVG path data of the curve, arrow at the consumer."})


@dataclass(frozen=True)
class PlanGraphView:
    """One plan version of an execution, laid out for SVG."""

    dom_id: str = field(metadata={"help": "Element id of the plan's container."})
    title: str = field(metadata={"help": "`final plan`, `initial plan` or `re-plan N`."})
    is_final: bool = field(metadata={"help": "True for the plan shown by default (the final one)."})
    width: int = field(metadata={"help": "SVG width in pixels."})
    height: int = field(metadata={"help": "SVG height in pixels."})
    nodes: tuple[GraphNodeView, ...] = field(metadata={"help": "Operator boxes."})
    clusters: tuple[GraphClusterView, ...] = field(
        metadata={"help": "Codegen boxes, drawn under the operators."}
    )
    edges: tuple[GraphEdgeView, ...] = field(metadata={"help": "Edges, drawn under the boxes."})


@dataclass(frozen=True)
class MetricRowView:
    """One metric of a node's panel, formatted by its type."""

    name: str = field(metadata={"help": "Metric name as Spark declares it."})
    metric_type: str = field(
        metadata={"help": "Spark's metric type: sum, size, timing, nsTiming, average."}
    )
    total_str: str = field(metadata={"help": "Sum over all values."})
    min_str: str = field(metadata={"help": "Smallest value."})
    median_str: str = field(metadata={"help": "Spark's (upper) median."})
    p95_str: str = field(metadata={"help": "95th percentile."})
    max_str: str = field(metadata={"help": "Largest value."})
    count_str: str = field(metadata={"help": "How many values the statistics are over."})
    skew_str: str = field(metadata={"help": "max / median, e.g. `12.0×`, or `–`."})
    skewed: bool = field(metadata={"help": "True when this metric is marked skewed."})
    max_at_str: str = field(
        metadata={"help": "Where the max came from: stage, task, partition, executor, host."}
    )
    spark_ui: str = field(
        metadata={"help": "The string Spark's own SQL tab shows for this metric."}
    )
    hist_key: str = field(
        metadata={"help": "Key of the metric's histogram in the execution's JSON data."}
    )


@dataclass(frozen=True)
class NodePanelView:
    """The detail panel a click on a node opens."""

    dom_id: str = field(metadata={"help": "Same id as the graph node or cluster it belongs to."})
    title: str = field(metadata={"help": "Node name and id."})
    desc: str = field(metadata={"help": "Spark's one-line description."})
    stage_str: str = field(metadata={"help": "Stages the node ran in."})
    metrics: tuple[MetricRowView, ...] = field(
        metadata={"help": "Every metric with values, in declared order."}
    )
    metadata: tuple[tuple[str, str], ...] = field(
        metadata={"help": "Scan metadata pairs (Location, ReadSchema, …)."}
    )
    findings: tuple[FindingRefView, ...] = field(
        metadata={"help": "Links to the findings pointing at the node, by rank."}
    )


@dataclass(frozen=True)
class QuantileRowView:
    """One task metric of a stage, at Spark's stage-page quantiles."""

    label: str = field(metadata={"help": "Metric name, e.g. `Duration`."})
    values: tuple[str, ...] = field(
        metadata={"help": "Min, 25th percentile, median, 75th percentile, max."}
    )


@dataclass(frozen=True)
class StageRowView:
    """One stage attempt of an execution, with its task quantiles."""

    stage_str: str = field(metadata={"help": "`3` or `3.1` for a retried attempt."})
    name: str = field(metadata={"help": "Spark's stage name (the call site)."})
    status: str = field(metadata={"help": "COMPLETE, FAILED, SKIPPED or ACTIVE."})
    failed: bool = field(metadata={"help": "True for a failed attempt."})
    n_tasks_str: str = field(metadata={"help": "Task attempts run, and how many failed."})
    duration_str: str = field(metadata={"help": "Submission to completion."})
    quantiles: tuple[QuantileRowView, ...] = field(
        metadata={"help": "Quantile rows over successful tasks."}
    )


@dataclass(frozen=True)
class TimelineLaneView:
    """One executor's lane in the task timeline."""

    label: str = field(metadata={"help": "Executor id and host."})
    y: int = field(metadata={"help": "Top of the lane in pixels."})
    height: int = field(metadata={"help": "Height of the lane in pixels."})


@dataclass(frozen=True)
class TimelineBarView:
    """One task attempt in the timeline."""

    x: float = field(metadata={"help": "Left edge in pixels."})
    y: int = field(metadata={"help": "Top edge in pixels."})
    width: float = field(metadata={"help": "Width in pixels (at least 1)."})
    css_class: str = field(metadata={"help": "`stage-color-N`, plus `failed` for failed attempts."})
    title: str = field(metadata={"help": "Tooltip: task, stage, partition, duration."})


@dataclass(frozen=True)
class TimelineView:
    """Task attempts of an execution per executor over time."""

    width: int = field(metadata={"help": "SVG width in pixels, lane labels included."})
    height: int = field(metadata={"help": "SVG height in pixels."})
    label_width: int = field(metadata={"help": "Width of the lane-label column."})
    lanes: tuple[TimelineLaneView, ...] = field(metadata={"help": "One lane per executor."})
    bars: tuple[TimelineBarView, ...] = field(metadata={"help": "The drawn task attempts."})
    ticks: tuple[tuple[float, str], ...] = field(
        metadata={"help": "Axis ticks: x position and elapsed time."}
    )
    note: str = field(metadata={"help": "Says what was left out, or empty."})


@dataclass(frozen=True)
class ExecutionRowView:
    """One line of the summary's execution list."""

    anchor: str = field(
        metadata={"help": "Element id of the execution's section, empty when it has none."}
    )
    execution_id: int = field(metadata={"help": "Spark's SQL execution id."})
    description: str = field(
        metadata={"help": "The description (often the query text), shortened."}
    )
    status: str = field(metadata={"help": "COMPLETED, FAILED or RUNNING."})
    duration_str: str = field(metadata={"help": "Wall time."})
    duration_share: float = field(
        metadata={"help": "0..1 relative to the slowest listed execution (bar width)."}
    )
    n_jobs: int = field(metadata={"help": "Jobs run for the execution."})


@dataclass(frozen=True)
class ExecutionView:
    """Everything shown about one SQL execution."""

    anchor: str = field(metadata={"help": "Element id of the section."})
    execution_id: int = field(metadata={"help": "Spark's SQL execution id."})
    description: str = field(metadata={"help": "Full description."})
    status: str = field(metadata={"help": "COMPLETED, FAILED or RUNNING."})
    error_message: str = field(metadata={"help": "Spark's error message, or empty."})
    start_str: str = field(metadata={"help": "Start time, UTC."})
    duration_str: str = field(metadata={"help": "Wall time."})
    jobs_str: str = field(metadata={"help": "Job ids."})
    plans: tuple[PlanGraphView, ...] = field(
        metadata={"help": "Final plan first, then the initial one (AQE)."}
    )
    panels: tuple[NodePanelView, ...] = field(
        metadata={"help": "One panel per node of every plan version."}
    )
    stages: tuple[StageRowView, ...] = field(
        metadata={"help": "Stage attempts with task quantiles."}
    )
    timeline: TimelineView | None = field(metadata={"help": "Task timeline, None without tasks."})
    plan_text: str = field(
        metadata={"help": "Spark's physical plan description of the final plan."}
    )
    data_id: str = field(
        metadata={"help": "Element id of the execution's JSON data (histograms, task rows)."}
    )
    data: dict[str, Any] = field(
        metadata={"help": "Histograms and task rows for the page's script."}
    )
    notes: tuple[str, ...] = field(
        metadata={"help": "Whether the execution is incomplete, and what was capped or left out."}
    )
    findings: tuple[FindingRefView, ...] = field(
        metadata={"help": "Links to the findings pointing at this execution, by rank."}
    )


@dataclass(frozen=True)
class HtmlReportView:
    """The whole HTML page of one application."""

    title: str = field(metadata={"help": "Page title."})
    app_name: str = field(metadata={"help": "Application name."})
    app_id: str = field(metadata={"help": "Application id (and attempt), or `–`."})
    spark_version: str = field(metadata={"help": "Spark version that wrote the log."})
    user: str = field(metadata={"help": "User that ran the application."})
    start_str: str = field(metadata={"help": "Application start, UTC."})
    duration_str: str = field(metadata={"help": "Application wall time."})
    n_executors_str: str = field(
        metadata={"help": "Executors (the driver not counted) and their total cores."}
    )
    n_tasks_str: str = field(metadata={"help": "Task attempts."})
    failed_tasks_str: str = field(metadata={"help": "Failed and killed task attempts."})
    failed_stages_str: str = field(metadata={"help": "Failed stage attempts."})
    has_failures: bool = field(metadata={"help": "True when any task or stage failed."})
    log_str: str = field(metadata={"help": "The log's path, codec and size."})
    executions_total: int = field(metadata={"help": "SQL executions in the application."})
    execution_rows: tuple[ExecutionRowView, ...] = field(
        metadata={"help": "Listed executions, slowest first."}
    )
    executions: tuple[ExecutionView, ...] = field(
        metadata={"help": "Detailed executions, slowest first."}
    )
    text_report: str = field(
        metadata={"help": "The text report for copying, or empty when unavailable."}
    )
    generated_str: str = field(metadata={"help": "When the report was rendered, UTC."})
    findings: tuple[FindingView, ...] = field(
        metadata={
            "help": "Findings of the listed executions and of the application, largest "
            "estimated time lost first."
        }
    )
    findings_str: str = field(
        metadata={"help": "The Findings section's heading note: how many, in what order."}
    )
    notes: tuple[str, ...] = field(
        metadata={"help": "Report-wide caveats (truncated log, skipped lines)."}
    )


# ---------------------------------------------------------------- layout


@dataclass(frozen=True)
class _Placed:
    """Where the layout puts an operator box."""

    x: int
    """Left edge in SVG pixels."""
    y: int
    """Top edge in SVG pixels."""


def layout_plan(graph: PlanGraph) -> dict[int, _Placed]:
    """Place every operator (clusters excluded): layers by longest path from the output, leaves
    left to right in depth-first order, parents centred over their children; inputs at the top."""
    layer: dict[int, int] = {}

    def depth(node_id: int) -> int:
        if node_id not in layer:
            parents = graph.parents_of(node_id)
            layer[node_id] = 0
            layer[node_id] = 1 + max((depth(p.node_id) for p in parents), default=-1)
        return layer[node_id]

    ops = [n for n in graph.nodes if not n.is_cluster]
    for n in ops:
        depth(n.node_id)
    x_slot: dict[int, float] = {}
    next_slot = 0.0

    def place(node_id: int) -> None:
        nonlocal next_slot
        first = []
        for child in graph.children_of(node_id):
            if child.node_id not in x_slot:
                x_slot[child.node_id] = -1  # reserve: a reused child is placed once
                place(child.node_id)
                first.append(child.node_id)
        if first:
            x_slot[node_id] = sum(x_slot[c] for c in first) / len(first)
        else:
            x_slot[node_id] = next_slot
            next_slot += 1

    for root in graph.roots:
        if root.node_id not in x_slot:
            x_slot[root.node_id] = -1
            place(root.node_id)
    for n in ops:  # anything unreachable from a root (should not happen) goes to the right
        if n.node_id not in x_slot:
            x_slot[n.node_id] = next_slot
            next_slot += 1
    max_layer = max((layer[n.node_id] for n in ops), default=0)
    return {
        n.node_id: _Placed(
            x=MARGIN + round(x_slot[n.node_id] * SLOT_WIDTH),
            y=MARGIN + CLUSTER_LABEL + (max_layer - layer[n.node_id]) * LAYER_HEIGHT,
        )
        for n in ops
    }


def _edge_path(child: _Placed, parent: _Placed) -> str:
    """An S-curve from the bottom of the child box to the top of the parent box."""
    x1, y1 = child.x + NODE_WIDTH // 2, child.y + NODE_HEIGHT
    x2, y2 = parent.x + NODE_WIDTH // 2, parent.y
    if y2 <= y1:  # a reused node drawn below its consumer: go round the side
        return f"M{x1},{y1} C{x1},{y1 + 40} {x2},{y2 - 40} {x2},{y2}"
    mid = (y1 + y2) / 2
    return f"M{x1},{y1} C{x1},{mid:g} {x2},{mid:g} {x2},{y2}"


# ---------------------------------------------------------------- metrics


def _node_time_ms(stats: NodeStats | None) -> float:
    """Total of a node's timing metrics in ms (what the shading compares)."""
    if stats is None:
        return 0.0
    total = 0.0
    for m in stats.metrics:
        if m.metric_type == "timing":
            total += m.total
        elif m.metric_type == "nsTiming":
            total += m.total / 1_000_000
    return total


def _fmt_max_at(at: MaxLocation | None) -> str:
    if at is None:
        return "–"
    if at.stage_id is None:
        return at.executor_id or "driver"
    parts = [f"stage {at.stage_id}.{at.stage_attempt_id}"]
    if at.task_id is not None:
        parts.append(f"task {at.task_id}")
    if at.partition_id is not None:
        parts.append(f"partition {at.partition_id}")
    if at.executor_id is not None:
        parts.append(f"executor {at.executor_id}")
    if at.host:
        parts.append(f"host {at.host}")
    return ", ".join(parts)


def _stage_str(stage_ids: Sequence[int]) -> str:
    if not stage_ids:
        return ""
    word = "stage" if len(stage_ids) == 1 else "stages"
    return f"{word} {', '.join(str(s) for s in stage_ids)}"


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _main_metric(metrics: Iterable[MetricStats]) -> MetricStats | None:
    """The metric ranking a node's tasks: the first timing metric with a value, else the first."""
    metrics = list(metrics)
    for m in metrics:
        if m.metric_type in ("timing", "nsTiming") and m.total > 0:
            return m
    return metrics[0] if metrics else None


def _detail_str(node: PlanNode, stats: NodeStats | None) -> str:
    if stats is None or not stats.metrics:
        return ""
    parts = []
    time_ms = _node_time_ms(stats)
    if time_ms > 0:
        parts.append(fmt_duration_ms(time_ms))
    for m in stats.metrics:
        if m.name == "number of output rows":
            parts.append(f"{fmt_count(m.total)} rows")
            break
    if not parts:
        m = stats.metrics[0]
        parts.append(f"{m.name}: {fmt_metric_value(m.metric_type, m.total)}")
    return " · ".join(parts)


# ---------------------------------------------------------------- per-execution data


def _histograms(
    analysis: Analysis, execution_id: int, types: dict[int, str]
) -> dict[str, dict[str, Any]]:
    """Each metric's histogram (over the values its statistics are over), bounds formatted."""
    out: dict[str, dict[str, Any]] = {}
    for acc_id, hist in metric_histograms(analysis, execution_id, types, HIST_BINS).items():
        kind = types[acc_id]
        out[str(acc_id)] = {
            "lo": hist.lo,
            "hi": hist.hi,
            "lo_str": fmt_metric_value(kind, hist.lo),
            "hi_str": fmt_metric_value(kind, hist.hi),
            "counts": list(hist.counts),
        }
    return out


def _task_rows(
    analysis: Analysis,
    execution: Execution,
    node_metrics: dict[str, tuple[MetricStats, ...]],
    max_rows: int,
) -> dict[str, dict[str, Any]]:
    """Per node: the tasks with the largest main metric (at most `max_rows`) and all of the
    node's metric values for them, as compact rows for a sortable table."""
    queries: dict[str, NodeTaskQuery] = {}
    mains: dict[str, MetricStats] = {}
    for dom_id, metrics in node_metrics.items():
        main = _main_metric(metrics)
        if main is None:
            continue
        mains[dom_id] = main
        queries[dom_id] = NodeTaskQuery(
            accumulator_ids=tuple(m.accumulator_id for m in metrics),
            main_accumulator_id=main.accumulator_id,
        )
    found = top_task_rows(analysis, execution.execution_id, execution.stage_ids, queries, max_rows)
    out: dict[str, dict[str, Any]] = {}
    for dom_id, node_rows in found.items():
        present = set(node_rows.accumulator_ids)
        out[dom_id] = {
            "columns": [
                {"name": m.name, "type": m.metric_type}
                for m in node_metrics[dom_id]
                if m.accumulator_id in present
            ],
            "rows": [list(r) for r in node_rows.rows],
            "n_tasks": node_rows.n_tasks,
            "main": mains[dom_id].name,
        }
    return out


_STAGE_METRICS: tuple[tuple[str, str, str], ...] = (
    ("Duration", "duration_ms", "ms"),
    ("GC time", "gc_ms", "ms"),
    ("Input", "input_bytes", "bytes"),
    ("Shuffle read", "shuffle_read_bytes", "bytes"),
    ("Shuffle write", "shuffle_write_bytes", "bytes"),
    ("Spill (memory)", "memory_bytes_spilled", "bytes"),
    ("Spill (disk)", "disk_bytes_spilled", "bytes"),
)


def _stage_rows(analysis: Analysis, execution: Execution) -> list[StageRowView]:
    wanted = set(execution.stage_ids)
    columns = [c for _, c, _ in _STAGE_METRICS]
    per_attempt = successful_task_values(analysis, execution.stage_ids, columns)
    rows = []
    for stage in sorted(
        (s for s in analysis.application.stages if s.stage_id in wanted),
        key=lambda s: (s.stage_id, s.attempt_id),
    ):
        values = per_attempt.get((stage.stage_id, stage.attempt_id))
        quantiles = []
        for i, (label, _column, unit) in enumerate(_STAGE_METRICS):
            column = values[i] if values is not None else ()
            if not column or (i > 0 and not any(column)):
                continue
            fmt = fmt_duration_ms if unit == "ms" else fmt_bytes
            quantiles.append(
                QuantileRowView(label=label, values=tuple(fmt(v) for v in task_quantiles(column)))
            )
        failed = stage.n_failed_attempts
        n_tasks = f"{fmt_count(stage.n_task_attempts)} of {fmt_count(stage.n_tasks)}"
        if failed:
            n_tasks += f", {fmt_count(failed)} failed"
        rows.append(
            StageRowView(
                stage_str=str(stage.stage_id)
                if stage.attempt_id == 0
                else f"{stage.stage_id}.{stage.attempt_id}",
                name=stage.name,
                status=stage.status,
                failed=stage.status == "FAILED",
                n_tasks_str=n_tasks,
                duration_str=fmt_duration_ms(stage.duration_ms),
                quantiles=tuple(quantiles),
            )
        )
    return rows


def _timeline(execution: Execution, analysis: Analysis, max_bars: int) -> TimelineView | None:
    """Lay task attempts out per executor (at most `max_bars`, the longest); overlapping tasks
    stack in sub-lanes."""
    rows, n_all = timeline_tasks(analysis, execution.stage_ids, max_bars)
    if not rows:
        return None
    note = ""
    if n_all > max_bars:
        note = (
            f"The timeline shows the {fmt_count(max_bars)} longest of "
            f"{fmt_count(n_all)} task attempts."
        )
    t0 = min(r.launch_ms for r in rows)
    t1 = max(r.finish_ms for r in rows)
    span = max(t1 - t0, 1)
    label_width = 150
    scale = TIMELINE_WIDTH / span
    by_exec: dict[str, list[TimelineTask]] = defaultdict(list)
    hosts: dict[str, str] = {}
    for r in rows:
        by_exec[r.executor_id].append(r)
        hosts[r.executor_id] = r.host

    def exec_key(executor_id: str) -> tuple[int, str]:
        return (int(executor_id), "") if executor_id.isdigit() else (-1, executor_id)

    executors = sorted(by_exec, key=exec_key)
    if len(executors) > MAX_TIMELINE_LANES:
        busiest = sorted(executors, key=lambda e: -len(by_exec[e]))[:MAX_TIMELINE_LANES]
        note = (note + " " if note else "") + (
            f"The timeline shows the {MAX_TIMELINE_LANES} busiest of {len(executors)} executors."
        )
        executors = sorted(busiest, key=exec_key)
    lanes, bars = [], []
    y = 4
    for executor_id in executors:
        ends: list[int] = []  # sub-lane → finish time of its last task
        placed = []
        for r in by_exec[executor_id]:
            for i, end in enumerate(ends):
                if end <= r.launch_ms:
                    ends[i] = r.finish_ms
                    break
            else:
                i = len(ends)
                ends.append(r.finish_ms)
            placed.append((i, r))
        height = max(len(ends) * SUBLANE_HEIGHT, 14) + 4
        lanes.append(
            TimelineLaneView(label=f"{executor_id} · {hosts[executor_id]}", y=y, height=height)
        )
        for i, r in placed:
            status = " failed" if r.failed or r.killed else ""
            bars.append(
                TimelineBarView(
                    x=round(label_width + (r.launch_ms - t0) * scale, 1),
                    y=y + 2 + i * SUBLANE_HEIGHT,
                    width=round(max((r.finish_ms - r.launch_ms) * scale, 1.0), 1),
                    css_class=f"stage-color-{r.stage_id % 8}{status}",
                    title=f"task {r.task_id}, stage {r.stage_id}.{r.stage_attempt_id}, "
                    f"partition {r.partition_id}, "
                    f"{fmt_duration_ms(r.finish_ms - r.launch_ms)}{status}",
                )
            )
        y += height
    ticks = tuple(
        (round(label_width + TIMELINE_WIDTH * k / 5, 1), fmt_duration_ms(span * k / 5))
        for k in range(6)
    )
    return TimelineView(
        width=label_width + TIMELINE_WIDTH + 40,
        height=y + 22,
        label_width=label_width,
        lanes=tuple(lanes),
        bars=tuple(bars),
        ticks=ticks,
        note=note,
    )


# ---------------------------------------------------------------- findings


def _plan_dom_id(execution_id: int, plan_index: int) -> str:
    """Element id of a plan version's container, also the prefix of its nodes' ids."""
    return f"e{execution_id}-p{plan_index}"


def _node_dom_id(plan_dom_id: str, node_id: int) -> str:
    """Element id of a node (or key of a cluster) in a plan graph."""
    return f"{plan_dom_id}-n{node_id}"


def build_finding_views(
    findings: Sequence[Finding], listed: Sequence[Execution], detailed_ids: set[int]
) -> list[tuple[FindingView, Finding]]:
    """Format the findings of the `listed` executions and of the application, in their order.

    Links go to the sections of the executions in `detailed_ids` and to the operators of their
    final plans. Each view comes with the finding it was made from.
    """
    by_id = {e.execution_id: e for e in listed}
    out: list[tuple[FindingView, Finding]] = []
    for finding in findings:
        eid = finding.execution_id
        execution = by_id.get(eid) if eid is not None else None
        if eid is not None and execution is None:
            continue
        rank = len(out) + 1
        node: PlanNode | None = None
        if execution is not None and finding.node_id is not None:
            try:
                node = execution.final_plan.graph.node(finding.node_id)
            except KeyError:  # a node id the final plan does not have: no node link
                node = None
        detailed = execution is not None and execution.execution_id in detailed_ids
        node_dom_id = ""
        if execution is not None and node is not None and detailed and not node.is_cluster:
            plan_id = _plan_dom_id(execution.execution_id, execution.final_plan.index)
            node_dom_id = _node_dom_id(plan_id, node.node_id)
        view = FindingView(
            dom_id=f"finding-{rank}",
            rank=rank,
            rule=finding.rule,
            severity=finding.severity,
            mark=SEVERITY_MARKS[finding.severity],
            title=finding.title,
            where_str=finding_where(finding, node.name if node is not None else "")[0],
            lost_str=finding_lost_str(finding),
            estimate_str=finding.estimate_method,
            evidence=finding.evidence,
            suggestion=finding.suggestion,
            docs_anchor=f"{FINDINGS_DOC}#{finding.rule}",
            execution_anchor=f"exec-{eid}" if detailed else "",
            execution_str=f"execution {eid}" if detailed else "",
            node_dom_id=node_dom_id,
            node_str=f"#{node.node_id} {node.name}" if node_dom_id and node is not None else "",
        )
        out.append((view, finding))
    return out


def _finding_ref(finding: FindingView) -> FindingRefView:
    return FindingRefView(
        dom_id=finding.dom_id,
        label_str=f"{finding.mark} {finding.rank} · {finding.rule}: {finding.title}",
    )


def _worst_mark(findings: Sequence[FindingView]) -> str:
    """The mark of the most severe of `findings`, or empty."""
    order = list(SEVERITY_MARKS)  # most severe first
    worst = min((order.index(f.severity) for f in findings), default=None)
    return "" if worst is None else SEVERITY_MARKS[order[worst]]


def _findings_str(n_shown: int, n_all: int) -> str:
    if n_all == 0:
        return "No findings with these thresholds."
    noun = "finding" if n_all == 1 else "findings"
    if n_shown < n_all:
        return (
            f"{n_shown} of {n_all} {noun} (those of the listed executions and of the "
            "application), largest estimated time lost first."
        )
    return f"{n_all} {noun}, largest estimated time lost first."


# ---------------------------------------------------------------- plans


def _plan_view(
    execution: Execution,
    plan: PlanVersion,
    stats_by_acc: dict[int, MetricStats],
    final_stats: dict[int, NodeStats],
    panels: list[NodePanelView],
    task_metrics: dict[str, tuple[MetricStats, ...]],
    final_ids: dict[tuple[int, ...], str],
    node_findings: dict[int, list[FindingView]],
) -> PlanGraphView:
    """Lay out one plan version and collect a panel per node; `node_findings` (by node id of the
    final plan) mark the final plan's nodes."""
    graph = plan.graph
    is_final = plan.index == execution.final_plan.index
    prefix = _plan_dom_id(execution.execution_id, plan.index)
    marked = node_findings if is_final else {}
    node_stats: dict[int, NodeStats] = {}
    for node in graph.nodes:
        if is_final and node.node_id in final_stats:
            node_stats[node.node_id] = final_stats[node.node_id]
        else:  # earlier plan versions share accumulators with the final plan's operators
            found = tuple(
                stats_by_acc[m.accumulator_id]
                for m in node.metrics
                if m.accumulator_id in stats_by_acc
            )
            node_stats[node.node_id] = NodeStats(node.node_id, found, ())
    places = layout_plan(graph)
    op_times = {
        n.node_id: _node_time_ms(node_stats.get(n.node_id)) for n in graph.nodes if not n.is_cluster
    }
    max_time = max(op_times.values(), default=0.0)
    sum_time = sum(op_times.values())
    nodes = []
    for node in graph.nodes:
        if node.is_cluster:
            continue
        stats = node_stats.get(node.node_id)
        metrics = stats.metrics if stats else ()
        skewed = [m for m in metrics if is_skewed(m)]
        worst = max(skewed, key=lambda m: m.skew_pct, default=None)
        skew_str = ""
        if worst is not None:
            ratio = f"{worst.skew_ratio:.1f}× median" if worst.skew_ratio else "median 0"
            max_str = fmt_metric_value(worst.metric_type, worst.max_value)
            skew_str = f"skew: {worst.name} max {max_str} ({ratio})"
        time_ms = op_times[node.node_id]
        place = places[node.node_id]
        dom_id = _node_dom_id(prefix, node.node_id)
        shared = final_ids.get(tuple(m.accumulator_id for m in metrics)) if metrics else None
        panel_id = dom_id
        if not is_final and shared is not None:
            panel_id = shared  # the same operator as in the final plan: share its panel
        else:
            panels.append(_panel(dom_id, node, stats, marked.get(node.node_id, ())))
            if metrics:
                task_metrics[dom_id] = metrics
            if is_final and metrics:
                final_ids[tuple(m.accumulator_id for m in metrics)] = dom_id
        nodes.append(
            GraphNodeView(
                dom_id=dom_id,
                panel_id=panel_id,
                node_id=node.node_id,
                name=node.name,
                label_str=_shorten(node.name, 26),
                desc=node.desc,
                detail_str=_detail_str(node, stats),
                stage_str=_stage_str(stats.stage_ids if stats else ()),
                x=place.x,
                y=place.y,
                width=NODE_WIDTH,
                height=NODE_HEIGHT,
                shade=min(N_SHADES - 1, int(N_SHADES * time_ms / max_time)) if max_time > 0 else 0,
                time_share_str=fmt_pct(time_ms / sum_time) if sum_time > 0 and time_ms > 0 else "",
                skewed=worst is not None,
                skew_str=skew_str,
                is_exchange="Exchange" in node.name,
                finding_mark=_worst_mark(marked.get(node.node_id, ())),
                findings_str="\n".join(
                    f"{f.mark} {f.rank} · {f.rule}" for f in marked.get(node.node_id, ())
                ),
            )
        )
    clusters = []
    for node in graph.nodes:
        if not node.is_cluster:
            continue
        members = [places[m] for m in node.member_ids if m in places]
        if not members:
            continue
        stats = node_stats.get(node.node_id)
        x0 = min(p.x for p in members) - CLUSTER_PAD
        y0 = min(p.y for p in members) - CLUSTER_PAD - CLUSTER_LABEL
        x1 = max(p.x for p in members) + NODE_WIDTH + CLUSTER_PAD
        y1 = max(p.y for p in members) + NODE_HEIGHT + CLUSTER_PAD
        duration = _node_time_ms(stats)
        dom_id = _node_dom_id(prefix, node.node_id)
        clusters.append(
            GraphClusterView(
                dom_id=dom_id,
                label_str=node.name + (f" · {fmt_duration_ms(duration)}" if duration else ""),
                stage_str=_stage_str(stats.stage_ids if stats else ()),
                x=x0,
                y=y0,
                width=x1 - x0,
                height=y1 - y0,
            )
        )
        panels.append(_panel(dom_id, node, stats, marked.get(node.node_id, ())))
        if stats is not None and stats.metrics:
            task_metrics[dom_id] = stats.metrics
    edges = []
    for e in graph.edges:
        if e.from_id in places and e.to_id in places:
            edges.append(GraphEdgeView(path_d=_edge_path(places[e.from_id], places[e.to_id])))
    width = max((p.x for p in places.values()), default=0) + NODE_WIDTH + MARGIN + CLUSTER_PAD
    height = max((p.y for p in places.values()), default=0) + NODE_HEIGHT + MARGIN + CLUSTER_PAD
    if is_final:
        title = "final plan" if len(execution.plans) > 1 else "plan"
    elif plan.index == 0:
        title = "initial plan"
    else:
        title = f"re-plan {plan.index}"
    return PlanGraphView(
        dom_id=prefix,
        title=title,
        is_final=is_final,
        width=width,
        height=height,
        nodes=tuple(nodes),
        clusters=tuple(clusters),
        edges=tuple(edges),
    )


def _panel(
    dom_id: str, node: PlanNode, stats: NodeStats | None, findings: Sequence[FindingView]
) -> NodePanelView:
    rows = []
    for m in stats.metrics if stats else ():
        fmt = m.metric_type
        rows.append(
            MetricRowView(
                name=m.name,
                metric_type=m.metric_type,
                total_str=fmt_metric_value(fmt, m.total),
                min_str=fmt_metric_value(fmt, m.min_value),
                median_str=fmt_metric_value(fmt, m.median),
                p95_str=fmt_metric_value(fmt, m.p95),
                max_str=fmt_metric_value(fmt, m.max_value),
                count_str=fmt_count(m.count),
                skew_str=f"{m.skew_ratio:.1f}×" if m.skew_ratio is not None else "–",
                skewed=is_skewed(m),
                max_at_str=_fmt_max_at(m.max_at),
                spark_ui=m.spark_ui,
                hist_key=str(m.accumulator_id),
            )
        )
    return NodePanelView(
        dom_id=dom_id,
        title=f"{node.name} (node {node.node_id})",
        desc=node.desc,
        stage_str=_stage_str(stats.stage_ids if stats else ()),
        metrics=tuple(rows),
        metadata=node.metadata,
        findings=tuple(_finding_ref(f) for f in findings),
    )


@dataclass
class _Budget:
    """What is left of the page-wide caps on per-task rows and timeline bars."""

    task_rows: int = MAX_TASK_ROWS_TOTAL
    """Per-task rows the remaining executions may still list."""
    timeline_bars: int = MAX_TIMELINE_TASKS_TOTAL
    """Timeline bars the remaining executions may still draw."""


def _execution_view(
    analysis: Analysis,
    execution: Execution,
    budget: _Budget,
    findings: Sequence[FindingView],
    node_findings: dict[int, list[FindingView]],
) -> ExecutionView:
    eid = execution.execution_id
    final_stats = analysis.node_stats.get(eid, {})
    stats_by_acc = {m.accumulator_id: m for ns in final_stats.values() for m in ns.metrics}
    panels: list[NodePanelView] = []
    task_metrics: dict[str, tuple[MetricStats, ...]] = {}
    # The initial plan and the final one: what AQE changed. Intermediate re-plans are left out.
    ordered = (
        [execution.final_plan, *execution.plans[:1]]
        if len(execution.plans) > 1
        else [execution.final_plan]
    )
    final_ids: dict[tuple[int, ...], str] = {}
    plans = tuple(
        _plan_view(
            execution, p, stats_by_acc, final_stats, panels, task_metrics, final_ids, node_findings
        )
        for p in ordered
    )
    types = {m.accumulator_id: m.metric_type for m in stats_by_acc.values()}
    final_prefix = f"e{eid}-p{execution.final_plan.index}-"
    final_metrics = {k: v for k, v in task_metrics.items() if k.startswith(final_prefix)}
    per_node = min(MAX_TASK_ROWS_PER_NODE, budget.task_rows // max(len(final_metrics), 1))
    task_rows = _task_rows(analysis, execution, final_metrics, per_node) if per_node > 0 else {}
    budget.task_rows -= sum(len(d["rows"]) for d in task_rows.values())
    notes = []
    if not execution.ended:
        notes.append(
            "Incomplete: the log has no end event for this execution; it is shown with what "
            "arrived before the log ends."
        )
    if any(d["n_tasks"] > per_node for d in task_rows.values()) or (final_metrics and not per_node):
        notes.append(
            f"Per-task tables list at most {per_node} tasks per node (those with the largest main "
            "metric); statistics and histograms cover every task."
        )
    timeline = _timeline(execution, analysis, min(MAX_TIMELINE_TASKS, budget.timeline_bars))
    if timeline is not None:
        budget.timeline_bars -= len(timeline.bars)
    if timeline is not None and timeline.note:
        notes.append(timeline.note)
    return ExecutionView(
        anchor=f"exec-{eid}",
        execution_id=eid,
        description=execution.description,
        status=execution.status,
        error_message=execution.error_message or "",
        start_str=fmt_timestamp_ms(execution.start_ms),
        duration_str=fmt_duration_ms(execution.duration_ms),
        jobs_str=", ".join(str(j) for j in sorted(execution.job_ids)) or "–",
        plans=plans,
        panels=tuple(panels),
        stages=tuple(_stage_rows(analysis, execution)),
        timeline=timeline,
        plan_text=execution.final_plan.physical_plan_description,
        data_id=f"data-e{eid}",
        data={"hist": _histograms(analysis, eid, types), "tasks": task_rows},
        notes=tuple(notes),
        findings=tuple(_finding_ref(f) for f in findings),
    )


def select_executions(
    analysis: Analysis, executions: Sequence[int] | None, top: int | None
) -> list[Execution]:
    """Pick the executions to report, slowest first: the ids asked for, then the `top` slowest."""
    chosen = list(analysis.application.executions)
    if executions:
        wanted = set(executions)
        chosen = [e for e in chosen if e.execution_id in wanted]
    chosen.sort(key=lambda e: (-(e.duration_ms or 0), e.execution_id))
    if top is not None:
        chosen = chosen[:top]
    return chosen


def build_html_view(
    analysis: Analysis,
    executions: Sequence[int] | None = None,
    top: int | None = None,
    now_ms: int | None = None,
    text_report: str = "",
    thresholds: Thresholds | None = None,
) -> HtmlReportView:
    """Build the page of one application; `now_ms` fixes the render time (for gold files).

    Findings come from `detect_all(analysis, thresholds)`; those of executions not listed are
    left out.
    """
    app = analysis.application
    chosen = select_executions(analysis, executions, top)
    detailed = chosen if executions else chosen[:MAX_DETAILED_EXECUTIONS]
    detailed_ids = {e.execution_id for e in detailed}
    longest = max((e.duration_ms or 0 for e in chosen), default=0)
    rows = tuple(
        ExecutionRowView(
            anchor=f"exec-{e.execution_id}" if e.execution_id in detailed_ids else "",
            execution_id=e.execution_id,
            description=_shorten(e.description, 120),
            status=e.status,
            duration_str=fmt_duration_ms(e.duration_ms),
            duration_share=(e.duration_ms or 0) / longest if longest else 0.0,
            n_jobs=len(e.job_ids),
        )
        for e in chosen
    )
    counts = task_counts(analysis)
    n_failed, n_killed = counts.n_failed, counts.n_killed
    failed_stages = sum(1 for s in app.stages if s.status == "FAILED")
    workers = [e for e in app.executors if e.executor_id != "driver"]
    source = analysis.source
    notes = []
    rs = analysis.read_stats
    if rs.truncated_tail:
        notes.append("The log ends in the middle of a line; the last line was dropped.")
    if rs.n_malformed_skipped:
        notes.append(f"{fmt_count(rs.n_malformed_skipped)} malformed lines were skipped.")
    if len(detailed) < len(chosen):
        notes.append(
            f"Detailed sections cover the {len(detailed)} slowest of {len(chosen)} executions; "
            "choose others with --execution or --top."
        )
    if not app.completed:
        notes.append("The log has no application-end event: the application was running or died.")
    app_id = app.app_id or "–"
    if app.attempt_id:
        app_id += f" (attempt {app.attempt_id})"
    budget = _Budget()
    all_findings = detect_all(analysis, thresholds)
    findings = build_finding_views(all_findings, chosen, detailed_ids)
    by_execution: dict[int, list[FindingView]] = defaultdict(list)
    by_node: dict[int, dict[int, list[FindingView]]] = defaultdict(lambda: defaultdict(list))
    for view, finding in findings:
        if finding.execution_id is not None:
            by_execution[finding.execution_id].append(view)
            if view.node_dom_id and finding.node_id is not None:
                by_node[finding.execution_id][finding.node_id].append(view)
    generated = now_ms if now_ms is not None else int(time.time() * 1000)
    return HtmlReportView(
        title=f"EXPLAIN ANALYZE · {app.name}",
        app_name=app.name,
        app_id=app_id,
        spark_version=app.spark_version or "–",
        user=app.user or "–",
        start_str=fmt_timestamp_ms(app.start_ms),
        duration_str=fmt_duration_ms(app.duration_ms),
        n_executors_str=(
            f"{len(workers)} ({sum(e.n_cores for e in workers)} cores)"
            if workers
            else "driver only (local mode)"
        ),
        n_tasks_str=fmt_count(counts.n_attempts),
        failed_tasks_str=f"{fmt_count(n_failed)} failed, {fmt_count(n_killed)} killed",
        failed_stages_str=fmt_count(failed_stages),
        has_failures=bool(n_failed or failed_stages),
        log_str=f"{source.path} ({source.codec or 'plain'}, {fmt_bytes(source.size_bytes)})",
        executions_total=len(app.executions),
        execution_rows=rows,
        executions=tuple(
            _execution_view(
                analysis,
                e,
                budget,
                by_execution.get(e.execution_id, []),
                by_node.get(e.execution_id, {}),
            )
            for e in detailed
        ),
        text_report=text_report,
        generated_str=fmt_timestamp_ms(generated),
        notes=tuple(notes),
        findings=tuple(view for view, _ in findings),
        findings_str=_findings_str(len(findings), len(all_findings)),
    )
