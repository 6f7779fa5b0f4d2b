"""A plan version laid out for SVG: operator boxes, codegen clusters, edges, shading and marks.

A layered, top-down layout like Spark's SQL tab: inputs at the top, the output at the bottom.
Each node also gets its detail panel (see `report.html.panel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.aggregate.node_metrics import MetricStats, NodeStats
from analyzer.model.application import Execution, PlanVersion
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.report.findings import SEVERITY_MARKS, FindingView
from analyzer.report.html.panel import NodePanelView, build_panel
from analyzer.report.metrics import is_skewed, stage_ids_str
from analyzer.units import fmt_count, fmt_duration_ms, fmt_metric_value, fmt_pct

NODE_WIDTH = 196
NODE_HEIGHT = 46
SLOT_WIDTH = 216
LAYER_HEIGHT = 92
MARGIN = 24
CLUSTER_PAD = 10
CLUSTER_LABEL = 18
N_SHADES = 10


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
class _Placed:
    """Where the layout puts an operator box."""

    x: int
    """Left edge in SVG pixels."""
    y: int
    """Top edge in SVG pixels."""


def layout_plan(graph: PlanGraph) -> dict[int, _Placed]:
    """Place every operator (clusters excluded): layers by longest path from the output, leaves
    left to right in depth-first order, parents centred over their children; inputs at the top.

    Both walks keep their own stacks, so a plan of any depth lays out.
    """
    layer: dict[int, int] = {}

    def assign_layer(start: int) -> None:
        # A node's layer is 1 + the largest layer of its consumers (0 for an output); a node
        # met again while its own layer is being worked out counts as 0 (there are no cycles
        # in a plan, but a reused exchange is reached along several paths).
        layer[start] = 0
        frames: list[list[Any]] = [[start, graph.parents_of(start), 0, -1]]
        while frames:
            frame = frames[-1]
            node_id, parents, i, best = frame
            if i < len(parents):
                frame[2] = i + 1
                parent = parents[i].node_id
                if parent in layer:
                    frame[3] = max(best, layer[parent])
                else:
                    layer[parent] = 0
                    frames.append([parent, graph.parents_of(parent), 0, -1])
                continue
            layer[node_id] = 1 + best
            frames.pop()
            if frames:
                frames[-1][3] = max(frames[-1][3], layer[node_id])

    ops = [n for n in graph.nodes if not n.is_cluster]
    for n in ops:
        if n.node_id not in layer:
            assign_layer(n.node_id)
    x_slot: dict[int, float] = {}
    next_slot = 0.0

    def place(start: int) -> None:
        # Children first (each placed once, where it is first met), then the node over them.
        nonlocal next_slot
        frames: list[list[Any]] = [[start, graph.children_of(start), 0, []]]
        while frames:
            frame = frames[-1]
            node_id, children, i, first = frame
            if i < len(children):
                frame[2] = i + 1
                child = children[i].node_id
                if child not in x_slot:
                    x_slot[child] = -1  # reserve: a reused child is placed once
                    first.append(child)
                    frames.append([child, graph.children_of(child), 0, []])
                continue
            if first:
                x_slot[node_id] = sum(x_slot[c] for c in first) / len(first)
            else:
                x_slot[node_id] = next_slot
                next_slot += 1
            frames.pop()

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


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def node_detail_str(node: PlanNode, stats: NodeStats | None, self_ms: float | None) -> str:
    """The headline of a node's box: its self time and its output rows."""
    parts = []
    if self_ms:
        parts.append(f"self {fmt_duration_ms(self_ms)}")
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


def plan_dom_id(execution_id: int, plan_index: int) -> str:
    """Element id of a plan version's container, also the prefix of its nodes' ids."""
    return f"e{execution_id}-p{plan_index}"


def node_dom_id(plan_dom_id: str, node_id: int) -> str:
    """Element id of a node (or key of a cluster) in a plan graph."""
    return f"{plan_dom_id}-n{node_id}"


def _worst_mark(findings: Sequence[FindingView]) -> str:
    """The mark of the most severe of `findings`, or empty."""
    order = list(SEVERITY_MARKS)  # most severe first
    worst = min((order.index(f.severity) for f in findings), default=None)
    return "" if worst is None else SEVERITY_MARKS[order[worst]]


def build_plan_graph_view(
    execution: Execution,
    plan: PlanVersion,
    stats_by_acc: dict[int, MetricStats],
    final_stats: dict[int, NodeStats],
    panels: list[NodePanelView],
    task_metrics: dict[str, tuple[MetricStats, ...]],
    final_ids: dict[tuple[int, ...], str],
    node_findings: dict[int, list[FindingView]],
    self_times: dict[int, float],
) -> PlanGraphView:
    """Lay out one plan version and collect a panel per node; `node_findings` and `self_times`
    (by node id of the final plan) mark and shade the final plan's nodes."""
    graph = plan.graph
    is_final = plan.index == execution.final_plan.index
    prefix = plan_dom_id(execution.execution_id, plan.index)
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
        n.node_id: self_times.get(n.node_id, 0.0) if is_final else 0.0
        for n in graph.nodes
        if not n.is_cluster
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
        dom_id = node_dom_id(prefix, node.node_id)
        shared = final_ids.get(tuple(m.accumulator_id for m in metrics)) if metrics else None
        panel_id = dom_id
        if not is_final and shared is not None:
            panel_id = shared  # the same operator as in the final plan: share its panel
        else:
            panels.append(build_panel(dom_id, node, stats, marked.get(node.node_id, ())))
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
                label_str=shorten(node.name, 26),
                desc=node.desc,
                detail_str=node_detail_str(node, stats, op_times[node.node_id]),
                stage_str=stage_ids_str(stats.stage_ids if stats else ()),
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
        duration = sum(op_times.get(m, 0.0) for m in node.member_ids)
        dom_id = node_dom_id(prefix, node.node_id)
        clusters.append(
            GraphClusterView(
                dom_id=dom_id,
                label_str=node.name + (f" · self {fmt_duration_ms(duration)}" if duration else ""),
                stage_str=stage_ids_str(stats.stage_ids if stats else ()),
                x=x0,
                y=y0,
                width=x1 - x0,
                height=y1 - y0,
            )
        )
        panels.append(build_panel(dom_id, node, stats, marked.get(node.node_id, ())))
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
