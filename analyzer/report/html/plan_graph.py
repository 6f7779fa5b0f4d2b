"""A plan version laid out for SVG: operator boxes, codegen clusters, edges, shading and marks.

A layered, top-down layout like Spark's SQL tab: inputs at the top, the output at the bottom
(`report.html.layout`). Every plan is laid out twice: as Spark draws it, and with the trivial
operators (`TRIVIAL_OPERATORS`, codegen wrappers) folded into their consumers, which the page
switches to on request. Each node also gets its detail panel (see `report.html.panel`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.node_metrics import MetricStats, NodeStats
from analyzer.aggregate.plan_bounds import ShownPlan
from analyzer.model.application import Execution, PlanVersion
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.report.anchors import node_dom_id, plan_dom_id
from analyzer.report.findings import SEVERITY_MARKS, FindingView
from analyzer.report.html.layout import (
    CLUSTER_PAD,
    NODE_HEIGHT,
    NODE_WIDTH,
    Box,
    Layout,
    layout_graph,
)
from analyzer.report.html.panel import (
    FoldedOperatorView,
    NodePanelView,
    build_folded,
    build_panel,
)
from analyzer.report.metrics import is_skewed, stage_ids_str
from analyzer.report.time_spent import ESTIMATED_MARK
from analyzer.units import fmt_count, fmt_duration_ms, fmt_metric_value, fmt_pct

N_SHADES = 10
MAX_VIEW_HEIGHT = 640
"""The pan-and-zoom view of a plan is at most this tall; larger plans are zoomed and panned."""
LABEL_CHAR_PX = 6.6
"""Width of one character of a cluster label (11 px system font, generous), to size its box."""
CLUSTER_LABEL_EXTRA_PX = 2 * CLUSTER_PAD + 24
"""Room beside a cluster label: padding, and the collapse button at its right end."""

TRIVIAL_OPERATORS = frozenset(
    {
        "Project",
        "ColumnarToRow",
        "RowToColumnar",
        "InputAdapter",
        "AQEShuffleRead",
        "CustomShuffleReader",
        "GpuColumnarToRow",
        "GpuRowToColumnar",
        "GpuCoalesceBatches",
        "GpuProject",
    }
)
"""Operators that only reshape rows or batches: the graph can hide them, folding their metrics
into the panel of the operator that reads them."""


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
    detail_line_str: str = field(
        metadata={
            "help": "The box's second line: the headline numbers, and an exchange's stages, "
            "shortened to fit beside the skew mark."
        }
    )
    x: int = field(metadata={"help": "Left edge in SVG pixels, as Spark draws the plan."})
    y: int = field(metadata={"help": "Top edge in SVG pixels, as Spark draws the plan."})
    folded_x: int = field(
        metadata={"help": "Left edge with trivial operators hidden; -1 for a trivial one."}
    )
    folded_y: int = field(
        metadata={"help": "Top edge with trivial operators hidden; -1 for a trivial one."}
    )
    width: int = field(metadata={"help": "Box width in pixels."})
    height: int = field(metadata={"help": "Box height in pixels."})
    trivial: bool = field(
        metadata={"help": "True for an operator hidden when trivial operators are hidden."}
    )
    folded_into: str = field(
        metadata={
            "help": "Element id of the operator whose panel shows this one when trivial "
            "operators are hidden (its nearest non-trivial consumer), or empty."
        }
    )
    tree_parent: str = field(
        metadata={
            "help": "Element id of the consumer it is placed under (collapsing that consumer "
            "hides it), or empty for an output."
        }
    )
    folded_tree_parent: str = field(
        metadata={"help": "The same with trivial operators hidden, or empty."}
    )
    cluster: str = field(
        metadata={"help": "Element id of the codegen box it is drawn in, or empty."}
    )
    has_inputs: bool = field(
        metadata={"help": "True when other operators are placed above it (it can collapse)."}
    )
    shade: int = field(
        metadata={"help": "0..9: the node's self time relative to the largest in the plan."}
    )
    time_share_str: str = field(
        metadata={"help": "The node's share of the plan's self time, e.g. `42.0 %`."}
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

    dom_id: str = field(metadata={"help": "Unique element id of the box."})
    panel_id: str = field(metadata={"help": "Key of the cluster's panel."})
    label_str: str = field(
        metadata={"help": "`WholeStageCodegen (3) · self 1.2 s · stage 4`: name, time, stages."}
    )
    x: int = field(metadata={"help": "Left edge in SVG pixels."})
    y: int = field(metadata={"help": "Top edge in SVG pixels."})
    width: int = field(metadata={"help": "Width in pixels (wide enough for its label)."})
    height: int = field(metadata={"help": "Height in pixels."})


@dataclass(frozen=True)
class GraphEdgeView:
    """An edge from a child operator (drawn above) to the operator consuming it."""

    path_d: str = field(metadata={"help": "SVG path data of the curve, arrow at the consumer."})
    from_id: str = field(metadata={"help": "Element id of the input operator."})
    to_id: str = field(metadata={"help": "Element id of the consuming operator."})


@dataclass(frozen=True)
class PlanGraphView:
    """One plan version of an execution, laid out for SVG."""

    dom_id: str = field(metadata={"help": "Element id of the plan's container."})
    title: str = field(metadata={"help": "`final plan`, `initial plan` or `re-plan N`."})
    is_final: bool = field(metadata={"help": "True for the plan shown by default (the final one)."})
    width: int = field(metadata={"help": "SVG width in pixels."})
    height: int = field(metadata={"help": "SVG height in pixels."})
    folded_width: int = field(metadata={"help": "Width with trivial operators hidden."})
    folded_height: int = field(metadata={"help": "Height with trivial operators hidden."})
    view_height: int = field(
        metadata={
            "help": "Height of the pan-and-zoom view in pixels: the plan's own height, at most "
            "`MAX_VIEW_HEIGHT` (the page's style also keeps it within 72 % of the window)."
        }
    )
    hottest: str = field(
        metadata={
            "help": "Element id of the operator with the most self time (the view opens on "
            "it), or empty."
        }
    )
    n_trivial: int = field(metadata={"help": "Trivial operators the graph can hide."})
    nodes: tuple[GraphNodeView, ...] = field(metadata={"help": "Operator boxes."})
    clusters: tuple[GraphClusterView, ...] = field(
        metadata={"help": "Codegen boxes, drawn under the operators."}
    )
    edges: tuple[GraphEdgeView, ...] = field(metadata={"help": "Edges, drawn under the boxes."})


def is_trivial(node: PlanNode) -> bool:
    """True for an operator that only reshapes rows or batches (`TRIVIAL_OPERATORS`)."""
    return not node.is_cluster and node.name in TRIVIAL_OPERATORS


def fold_targets(graph: PlanGraph) -> dict[int, int]:
    """Map each trivial operator that has a consumer to its nearest non-trivial consumer.

    An output is never hidden, nor a chain of trivial operators without a non-trivial end.
    """
    out: dict[int, int] = {}
    for node in graph.nodes:
        if not is_trivial(node):
            continue
        seen = {node.node_id}
        current = node
        while True:
            parents = [p for p in graph.parents_of(current.node_id) if not p.is_cluster]
            if not parents or parents[0].node_id in seen:
                break
            current = parents[0]
            seen.add(current.node_id)
            if not is_trivial(current):
                out[node.node_id] = current.node_id
                break
    return out


def _op_children(graph: PlanGraph, node_id: int) -> list[int]:
    return [c.node_id for c in graph.children_of(node_id) if not c.is_cluster]


def _folded_children(graph: PlanGraph, fold: dict[int, int], node_id: int) -> list[int]:
    """The inputs of an operator once trivial ones are folded: through them to theirs."""
    out: list[int] = []
    seen: set[int] = set()
    stack = list(reversed(_op_children(graph, node_id)))
    while stack:
        c = stack.pop()
        if c in seen:
            continue
        seen.add(c)
        if c in fold:
            stack.extend(reversed(_op_children(graph, c)))
        else:
            out.append(c)
    return out


def edge_path(child: Box, parent: Box) -> str:
    """An S-curve from the bottom of the child box to the top of the parent box (the page's
    script draws the same curve when the graph changes)."""
    x1, y1 = round(child.x + child.width / 2), round(child.y + child.height)
    x2, y2 = round(parent.x + parent.width / 2), round(parent.y)
    if y2 <= y1:  # a reused node drawn below its consumer: go round the side
        return f"M{x1},{y1} C{x1},{y1 + 40} {x2},{y2 - 40} {x2},{y2}"
    mid = round((y1 + y2) / 2)
    return f"M{x1},{y1} C{x1},{mid} {x2},{mid} {x2},{y2}"


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


NAME_CHAR_PX = 8.4
"""Width of one character of a box's name (12.5 px semibold system font: 7.8 px on average
over the public logs' operator names in Chromium, 8.7 at most)."""
DETAIL_CHAR_PX = 6.0
"""Width of one character of a box's second line (11 px: 5.6 on average, 6.3 at most)."""
SHARE_CHAR_PX = 5.8
"""Width of one character of a box's share of the self time (10 px)."""
BOX_TEXT_PX = NODE_WIDTH - 8 - 6
"""Room for a line of text in a box: from its left inset to its right padding."""


def fit_name(name: str, share_str: str) -> str:
    """A box's name shortened to the room its share of the self time leaves on the first line.

    >>> fit_name("BroadcastHashJoin", ""), fit_name("PhotonBroadcastHashJoin", "18.2 %")
    ('BroadcastHashJoin', 'PhotonBroadcast…')
    """
    room = BOX_TEXT_PX - (len(share_str) * SHARE_CHAR_PX + 8 if share_str else 0)
    return shorten(name, max(4, int(room // NAME_CHAR_PX)))


def fit_detail(detail: str, stage_str: str, skewed: bool) -> str:
    """A box's second line: its numbers and, for an exchange, `stage_str`, shortened to the room
    the skew mark leaves."""
    line = " · ".join(part for part in (detail, stage_str) if part)
    room = BOX_TEXT_PX - (12 if skewed else 0)
    return shorten(line, max(4, int(room // DETAIL_CHAR_PX)))


def node_detail_str(
    node: PlanNode, stats: NodeStats | None, self_ms: float | None, estimated: bool = False
) -> str:
    """The headline of a node's box: its self time (`~` when mostly estimated, as the other
    views mark it) and its output rows."""
    parts = []
    if self_ms:
        parts.append(f"self {ESTIMATED_MARK if estimated else ''}{fmt_duration_ms(self_ms)}")
    if stats is None or not stats.metrics:
        return " · ".join(parts)
    for m in stats.metrics:
        if m.name == "number of output rows":
            parts.append(f"{fmt_count(m.total)} rows")
            break
    if not parts:
        m = stats.metrics[0]
        parts.append(f"{m.name}: {fmt_metric_value(m.metric_type, m.total)}")
    return " · ".join(parts)


def _worst_mark(findings: Sequence[FindingView]) -> str:
    """The mark of the most severe of `findings`, or empty."""
    order = list(SEVERITY_MARKS)  # most severe first
    worst = min((order.index(f.severity) for f in findings), default=None)
    return "" if worst is None else SEVERITY_MARKS[order[worst]]


def _cluster_label(node: PlanNode, self_ms: float, stats: NodeStats | None) -> str:
    label = node.name + (f" · self {fmt_duration_ms(self_ms)}" if self_ms else "")
    stages = stage_ids_str(stats.stage_ids if stats else ())
    return label + (f" · {stages}" if stages else "")


def _skew_str(metrics: Sequence[MetricStats]) -> str:
    worst = max((m for m in metrics if is_skewed(m)), key=lambda m: m.skew_pct, default=None)
    if worst is None:
        return ""
    ratio = f"{worst.skew_ratio:.1f}× median" if worst.skew_ratio else "median 0"
    return (
        f"skew: {worst.name} max {fmt_metric_value(worst.metric_type, worst.max_value)} ({ratio})"
    )


def layout_plan(graph: PlanGraph, labels: dict[int, str]) -> tuple[Layout, Layout, dict[int, int]]:
    """Lay a plan out as Spark draws it and with trivial operators folded; `labels` are the
    cluster labels (their boxes are made wide enough). Returns both and the folding map."""
    ops = [n.node_id for n in graph.nodes if not n.is_cluster]
    group_of = {
        n.node_id: n.cluster_id
        for n in graph.nodes
        if not n.is_cluster and n.cluster_id is not None and n.cluster_id in labels
    }
    widths = {
        cid: len(label) * LABEL_CHAR_PX + CLUSTER_LABEL_EXTRA_PX for cid, label in labels.items()
    }
    full = layout_graph(ops, lambda n: _op_children(graph, n), group_of, widths)
    fold = fold_targets(graph)
    kept = [n for n in ops if n not in fold]
    folded = layout_graph(kept, lambda n: _folded_children(graph, fold, n), {}, {})
    return full, folded, fold


@dataclass(frozen=True)
class PlanGraphParts:
    """One plan version laid out for the page, with the node panels it adds."""

    graph: PlanGraphView
    panels: tuple[NodePanelView, ...]
    """A panel per node drawn (an earlier plan's node that is a final-plan operator shares its
    panel instead), then one per codegen cluster."""
    task_metrics: dict[str, tuple[MetricStats, ...]]
    """Per panel element id: the metrics its per-task table lists."""
    panel_of_metrics: dict[tuple[int, ...], str]
    """The final plan only: each operator's panel id by the accumulator ids of its metrics, for
    the earlier plans' copies of the operator."""


def build_plan_graph_view(
    execution: Execution,
    plan: PlanVersion,
    *,
    stats_by_acc: dict[int, MetricStats],
    final_stats: Mapping[int, NodeStats],
    node_findings: dict[int, list[FindingView]],
    self_times: dict[int, float],
    final_panels: Mapping[tuple[int, ...], str],
    estimated_ids: frozenset[int] = frozenset(),
    shown: ShownPlan | None = None,
) -> PlanGraphParts:
    """Lay out one plan version and make a panel per node; `node_findings` and `self_times`
    (by node id of the final plan) mark and shade the final plan's nodes, and an earlier plan's
    operator found in `final_panels` (the final plan's `panel_of_metrics`) opens that panel.
    With `shown`, only its operators are drawn, and its `… N more` nodes with their totals
    (`aggregate.plan_bounds`)."""
    panels: list[NodePanelView] = []
    task_metrics: dict[str, tuple[MetricStats, ...]] = {}
    final_ids: dict[tuple[int, ...], str] = {}
    graph = shown.graph if shown is not None else plan.graph
    folds = shown.fold_stats if shown is not None else {}
    is_final = plan.index == execution.final_plan.index
    prefix = plan_dom_id(execution.execution_id, plan.index)
    marked = node_findings if is_final else {}
    node_stats: dict[int, NodeStats] = {}
    for node in graph.nodes:
        if node.node_id in folds:
            node_stats[node.node_id] = folds[node.node_id]
        elif is_final and node.node_id in final_stats:
            node_stats[node.node_id] = final_stats[node.node_id]
        else:  # earlier plan versions share accumulators with the final plan's operators
            found = tuple(
                stats_by_acc[acc_id]
                for acc_id in graph.accumulator_ids(node.node_id)
                if acc_id in stats_by_acc
            )
            node_stats[node.node_id] = NodeStats(node.node_id, found, ())
    fold_times = shown.fold_self_time_ms if shown is not None else {}
    op_times = {
        n.node_id: (fold_times.get(n.node_id) or self_times.get(n.node_id, 0.0))
        if is_final
        else 0.0
        for n in graph.nodes
        if not n.is_cluster
    }
    cluster_times = {
        n.node_id: sum(op_times.get(m, 0.0) for m in n.member_ids)
        for n in graph.nodes
        if n.is_cluster
    }
    labels = {
        n.node_id: _cluster_label(n, cluster_times[n.node_id], node_stats.get(n.node_id))
        for n in graph.nodes
        if n.is_cluster and any(m in op_times for m in n.member_ids)
    }
    full, folded, fold = layout_plan(graph, labels)

    def dom(node_id: int) -> str:
        return node_dom_id(prefix, node_id)

    # What each shown operator's panel also holds when trivial operators are hidden.
    folded_into: dict[int, list[FoldedOperatorView]] = {}
    for node_id, target in sorted(fold.items()):
        node = graph.node(node_id)
        folded_into.setdefault(target, []).append(
            build_folded(node, node_stats.get(node_id), op_times[node_id])
        )
    cluster_boxes: dict[int, str] = {}
    clusters = []
    for i, (cid, box) in enumerate(full.groups):
        box_id = dom(cid) if cid not in cluster_boxes else f"{dom(cid)}-b{i}"
        cluster_boxes.setdefault(cid, box_id)
        clusters.append(
            GraphClusterView(
                dom_id=box_id,
                panel_id=dom(cid),
                label_str=labels[cid],
                x=round(box.x),
                y=round(box.y),
                width=round(box.width),
                height=round(box.height),
            )
        )
    for node in graph.nodes:
        if not node.is_cluster or node.node_id not in labels:
            continue
        # The codegen wrapper folds into the operator its code ends with.
        members = set(node.member_ids)
        outputs = [
            m
            for m in node.member_ids
            if m in op_times and not any(p.node_id in members for p in graph.parents_of(m))
        ]
        if outputs:
            target = fold.get(outputs[0], outputs[0])
            folded_into.setdefault(target, []).append(
                build_folded(node, node_stats.get(node.node_id), cluster_times[node.node_id])
            )

    max_time = max(op_times.values(), default=0.0)
    sum_time = sum(op_times.values())
    hottest = max(op_times, key=lambda n: (op_times[n], -n), default=None)
    nodes = []
    for node in graph.nodes:
        if node.is_cluster:
            continue
        node_id = node.node_id
        stats = node_stats.get(node_id)
        metrics = stats.metrics if stats else ()
        time_ms = op_times[node_id]
        box = full.nodes[node_id]
        fbox = folded.nodes.get(node_id)
        dom_id = dom(node_id)
        is_fold = node_id in folds
        shared = (
            final_panels.get(tuple(m.accumulator_id for m in metrics))
            if metrics and not is_fold
            else None
        )
        panel_id = dom_id
        if not is_final and shared is not None:
            panel_id = shared  # the same operator as in the final plan: share its panel
        else:
            panels.append(
                build_panel(
                    dom_id,
                    node,
                    stats,
                    marked.get(node_id, ()),
                    sorted(folded_into.get(node_id, ()), key=lambda f: f.title),
                )
            )
            if metrics and not is_fold:  # a fold's metrics are over operators, not tasks
                task_metrics[dom_id] = metrics
            if is_final and metrics and not is_fold:
                final_ids[tuple(m.accumulator_id for m in metrics)] = dom_id
        skew_str = _skew_str(metrics)
        share_str = fmt_pct(time_ms / sum_time) if sum_time > 0 and time_ms > 0 else ""
        detail = node_detail_str(node, stats, time_ms, is_final and node_id in estimated_ids)
        stage_str = stage_ids_str(stats.stage_ids if stats else ())
        is_exchange = "Exchange" in node.name
        parent = full.tree_parent.get(node_id)
        fparent = folded.tree_parent.get(node_id)
        cluster_id = node.cluster_id
        nodes.append(
            GraphNodeView(
                dom_id=dom_id,
                panel_id=panel_id,
                node_id=node_id,
                name=node.name,
                label_str=fit_name(node.name, share_str),
                desc=node.desc,
                detail_line_str=fit_detail(
                    detail, stage_str if is_exchange else "", bool(skew_str)
                ),
                x=round(box.x),
                y=round(box.y),
                folded_x=round(fbox.x) if fbox else -1,
                folded_y=round(fbox.y) if fbox else -1,
                width=NODE_WIDTH,
                height=NODE_HEIGHT,
                trivial=node_id in fold,
                folded_into=dom(fold[node_id]) if node_id in fold else "",
                tree_parent=dom(parent) if parent is not None else "",
                folded_tree_parent=dom(fparent) if fparent is not None else "",
                cluster=cluster_boxes.get(cluster_id, "") if cluster_id is not None else "",
                has_inputs=bool(_op_children(graph, node_id)),
                shade=min(N_SHADES - 1, int(N_SHADES * time_ms / max_time)) if max_time > 0 else 0,
                time_share_str=share_str,
                skewed=bool(skew_str),
                skew_str=skew_str,
                is_exchange=is_exchange,
                finding_mark=_worst_mark(marked.get(node_id, ())),
                findings_str="\n".join(
                    f"{f.mark} {f.rank} · {f.rule}" for f in marked.get(node_id, ())
                ),
            )
        )
    for node in graph.nodes:
        if node.is_cluster and node.node_id in labels:
            stats = node_stats.get(node.node_id)
            panels.append(build_panel(dom(node.node_id), node, stats, marked.get(node.node_id, ())))
            if stats is not None and stats.metrics:
                task_metrics[dom(node.node_id)] = stats.metrics
    edges = [
        GraphEdgeView(
            path_d=edge_path(full.nodes[e.from_id], full.nodes[e.to_id]),
            from_id=dom(e.from_id),
            to_id=dom(e.to_id),
        )
        for e in graph.edges
        if e.from_id in full.nodes and e.to_id in full.nodes
    ]
    if is_final:
        title = "final plan" if len(execution.plans) > 1 else "plan"
    elif plan.index == 0:
        title = "initial plan"
    else:
        title = f"re-plan {plan.index}"
    view = PlanGraphView(
        dom_id=prefix,
        title=title,
        is_final=is_final,
        width=round(full.width),
        height=round(full.height),
        folded_width=round(folded.width),
        folded_height=round(folded.height),
        view_height=min(round(full.height) + 8, MAX_VIEW_HEIGHT),
        hottest=dom(hottest) if hottest is not None and max_time > 0 else "",
        n_trivial=len(fold),
        nodes=tuple(nodes),
        clusters=tuple(clusters),
        edges=tuple(edges),
    )
    return PlanGraphParts(
        graph=view,
        panels=tuple(panels),
        task_metrics=task_metrics,
        panel_of_metrics=final_ids,
    )
