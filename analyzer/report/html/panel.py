"""The detail panel of a plan node: every metric worded, its findings, and its per-task data.

The per-task rows and histograms go to the page as JSON data (drawn by the page's script);
everything else is laid out by `templates/_panel.html.j2`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import MetricStats, NodeStats
from analyzer.aggregate.task_detail import NodeTaskQuery
from analyzer.model.application import Execution
from analyzer.model.plan import PlanNode
from analyzer.report.findings import FindingView
from analyzer.report.metrics import MetricView, build_metric_view, stage_ids_str
from analyzer.units import fmt_duration_ms, fmt_metric_value

HIST_BINS = 20
MAX_TASK_ROWS_PER_NODE = 100
"""Per plan node, the page lists at most this many tasks (those with the largest main metric)."""
MAX_TASK_ROWS_TOTAL = 20_000
"""Over the whole page, at most this many per-task rows; later executions share what is left."""


@dataclass(frozen=True)
class FindingRefView:
    """A link to one finding of the Findings section, from the place it points at."""

    dom_id: str = field(metadata={"help": "Element id of the finding (`finding-2`)."})
    label_str: str = field(
        metadata={"help": "Link text: `⚠ 2 · spill: Stage 9: spilled 1.2 GiB in Sort`."}
    )


@dataclass(frozen=True)
class FoldedOperatorView:
    """A trivial operator hidden from the plan graph on request, shown in its consumer's panel."""

    title: str = field(metadata={"help": "Operator name and id: `ColumnarToRow (node 72)`."})
    self_time_str: str = field(metadata={"help": "Its self time, or empty."})
    metrics: tuple[MetricView, ...] = field(metadata={"help": "Its metrics with values."})


@dataclass(frozen=True)
class NodePanelView:
    """The detail panel a click on a node opens."""

    dom_id: str = field(metadata={"help": "Same id as the graph node or cluster it belongs to."})
    title: str = field(metadata={"help": "Node name and id."})
    desc: str = field(metadata={"help": "Spark's one-line description."})
    stage_str: str = field(metadata={"help": "Stages the node ran in."})
    metrics: tuple[MetricView, ...] = field(
        metadata={"help": "Every metric with values, in declared order."}
    )
    metadata: tuple[tuple[str, str], ...] = field(
        metadata={"help": "Scan metadata pairs (Location, ReadSchema, …)."}
    )
    findings: tuple[FindingRefView, ...] = field(
        metadata={"help": "Links to the findings pointing at the node, by rank."}
    )
    folded: tuple[FoldedOperatorView, ...] = field(
        metadata={
            "help": "Trivial operators (and codegen wrappers) folded into this node when the "
            "graph hides them, by node id."
        }
    )


def finding_ref(finding: FindingView) -> FindingRefView:
    """Return the link to a finding, worded `⚠ 2 · rule: title`."""
    return FindingRefView(
        dom_id=finding.dom_id,
        label_str=f"{finding.mark} {finding.rank} · {finding.rule}: {finding.title}",
    )


def build_folded(node: PlanNode, stats: NodeStats | None, self_ms: float) -> FoldedOperatorView:
    """Describe a hidden operator for its consumer's panel."""
    return FoldedOperatorView(
        title=f"{node.name} (node {node.node_id})",
        self_time_str=f"self {fmt_duration_ms(self_ms)}" if self_ms else "",
        metrics=tuple(build_metric_view(m) for m in (stats.metrics if stats else ())),
    )


def build_panel(
    dom_id: str,
    node: PlanNode,
    stats: NodeStats | None,
    findings: Sequence[FindingView],
    folded: Sequence[FoldedOperatorView] = (),
) -> NodePanelView:
    """Describe one node (or codegen cluster) for its panel."""
    return NodePanelView(
        dom_id=dom_id,
        title=f"{node.name} (node {node.node_id})",
        desc=node.desc,
        stage_str=stage_ids_str(stats.stage_ids if stats else ()),
        metrics=tuple(build_metric_view(m) for m in (stats.metrics if stats else ())),
        metadata=node.metadata,
        findings=tuple(finding_ref(f) for f in findings),
        folded=tuple(folded),
    )


def main_metric(metrics: Iterable[MetricStats]) -> MetricStats | None:
    """The metric ranking a node's tasks: the first timing metric with a value, else the first."""
    metrics = list(metrics)
    for m in metrics:
        if m.metric_type in ("timing", "nsTiming") and m.total > 0:
            return m
    return metrics[0] if metrics else None


def metric_histograms_data(
    analysis: Analysis, execution_id: int, types: dict[int, str]
) -> dict[str, dict[str, Any]]:
    """Each metric's histogram (over the values its statistics are over), bounds formatted;
    `types` gives the metric type of each accumulator to show (the others are left out)."""
    out: dict[str, dict[str, Any]] = {}
    for acc_id, hist in analysis.metric_histograms(execution_id, HIST_BINS).items():
        kind = types.get(acc_id)
        if kind is None:  # an operator the page does not draw
            continue
        out[str(acc_id)] = {
            "lo": hist.lo,
            "hi": hist.hi,
            "lo_str": fmt_metric_value(kind, hist.lo),
            "hi_str": fmt_metric_value(kind, hist.hi),
            "counts": list(hist.counts),
        }
    return out


def _task_row(row: tuple[Any, ...]) -> list[Any]:
    """A task row for the page's table, its partition (third) null where the log has none:
    Spark before 3.3 logs no `Partition ID`, and its placeholder -1 is no partition.

    >>> _task_row((25, 2, -1, "driver", "h", 1502)), _task_row((7, 1, 3, "1", "h", 10))
    ([25, 2, None, 'driver', 'h', 1502], [7, 1, 3, '1', 'h', 10])
    """
    out = list(row)
    if out[2] is not None and out[2] < 0:
        out[2] = None
    return out


def task_rows_data(
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
        main = main_metric(metrics)
        if main is None:
            continue
        mains[dom_id] = main
        queries[dom_id] = NodeTaskQuery(
            accumulator_ids=tuple(m.accumulator_id for m in metrics),
            main_accumulator_id=main.accumulator_id,
        )
    found = analysis.node_task_rows(execution.execution_id, queries, max_rows)
    out: dict[str, dict[str, Any]] = {}
    for dom_id, node_rows in found.items():
        present = set(node_rows.accumulator_ids)
        out[dom_id] = {
            "columns": [
                {"name": m.name, "type": m.metric_type}
                for m in node_metrics[dom_id]
                if m.accumulator_id in present
            ],
            "rows": [_task_row(r) for r in node_rows.rows],
            "n_tasks": node_rows.n_tasks,
            "main": mains[dom_id].name,
        }
    return out
