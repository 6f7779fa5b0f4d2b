"""A plan bounded for display: at most `MAX_SHOWN_NODES` operators per plan version, the rest
folded into `… N more` nodes that carry their totals.

A log can hold a plan of 100,000 operators (a union of as many scans); drawn whole it makes a
page of hundreds of MB that no browser opens, and building it takes gigabytes. The page and the
text report it embeds show the operators nearest the output, breadth first, at most
`MAX_SHOWN_INPUTS` inputs of any one operator; each operator whose inputs were not all kept gets
one extra input, `… N more`, standing for every operator below it that is not shown: its metrics
are over those operators' totals (total, and min / median / max of one operator's total), its
self time their sum. The JSON report keeps every operator.
"""

from __future__ import annotations

from array import array
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from analyzer.aggregate.node_metrics import FoldedMetricStats, MetricStats, NodeStats
from analyzer.model.plan import PlanEdge, PlanGraph, PlanNode

MAX_SHOWN_NODES = 500
"""Operators a page (and the text report it embeds) draws per plan version, at most."""
MAX_SHOWN_INPUTS = 50
"""Inputs of one operator drawn, at most; the rest are in its `… N more` node."""
ADDITIVE_TYPES = frozenset({"sum", "size", "timing", "nsTiming"})
"""Metric types whose values add up over operators (averages do not)."""
FOLD_NAME_PREFIX = "… "


@dataclass(frozen=True)
class ShownPlan:
    """A plan version as a page shows it: the kept operators and the fold nodes."""

    graph: PlanGraph
    """The kept operators (and the codegen clusters holding any), the fold nodes and the edges
    between them, with the plan's accumulator ids; fold nodes get ids above every id of the
    plan."""
    fold_stats: dict[int, NodeStats]
    """Per fold node id: metrics over the folded operators' totals, by metric name and type."""
    fold_self_time_ms: dict[int, float]
    """Per fold node id: the summed self time of the folded operators, in ms."""
    n_operators: int
    """Operators of the plan (clusters aside)."""
    n_hidden: int
    """Of those, the operators not shown."""


def _quantile(values: list[int], fraction: float) -> int:
    return values[min(len(values) - 1, int(len(values) * fraction))]


def _fold_metrics(
    hidden: list[PlanNode], stats_of: Callable[[PlanNode], NodeStats | None], first_acc: int
) -> tuple[MetricStats, ...]:
    """Per (name, type) of additive metric: statistics over the hidden operators' totals."""
    totals: dict[tuple[str, str], list[int]] = {}
    for node in hidden:
        stats = stats_of(node)
        for m in stats.metrics if stats is not None else ():
            if m.metric_type in ADDITIVE_TYPES:
                totals.setdefault((m.name, m.metric_type), []).append(m.total)
    out = []
    for i, ((name, kind), values) in enumerate(totals.items()):
        values.sort()
        out.append(
            FoldedMetricStats(
                name=name,
                metric_type=kind,
                accumulator_id=first_acc - i,
                spark_ui="",
                numbers=(
                    len(values),
                    sum(values),
                    values[0],
                    values[len(values) // 2],
                    values[-1],
                    _quantile(values, 0.25),
                    _quantile(values, 0.75),
                    _quantile(values, 0.95),
                ),
                max_at=None,
            )
        )
    return tuple(out)


def bound_plan(
    graph: PlanGraph,
    stats_of: Callable[[PlanNode], NodeStats | None],
    self_time_of: Callable[[int], float],
    max_nodes: int = MAX_SHOWN_NODES,
    max_inputs: int = MAX_SHOWN_INPUTS,
) -> ShownPlan | None:
    """Return the plan as shown within `max_nodes` operators and `max_inputs` inputs per
    operator, or None when the whole plan fits.

    `stats_of` gives an operator's metric statistics and `self_time_of` its self time (ms) by
    node id. Linear in the plan's size; a reused operator is folded once.
    """
    ops = [n for n in graph.nodes if not n.is_cluster]
    children: dict[int, list[int]] = {
        n.node_id: [c.node_id for c in graph.children_of(n.node_id) if not c.is_cluster]
        for n in ops
    }
    if len(ops) <= max_nodes and all(len(c) <= max_inputs for c in children.values()):
        return None
    kept: dict[int, None] = {}
    queue: deque[int] = deque()
    for root in graph.roots[:max_inputs]:
        if len(kept) < max_nodes:
            kept[root.node_id] = None
            queue.append(root.node_id)
    while queue and len(kept) < max_nodes:
        for child in children[queue.popleft()][:max_inputs]:
            if child in kept:
                continue
            if len(kept) >= max_nodes:
                break
            kept[child] = None
            queue.append(child)
    # Every operator not kept goes to the fold of the first kept operator (breadth first) above
    # it; operators above no kept one (roots beyond the first ones) to a fold of their own.
    next_id = max(n.node_id for n in graph.nodes) + 1
    assigned: set[int] = set(kept)
    folds: list[tuple[int | None, list[PlanNode]]] = []
    parents: list[int | None] = [*kept, None]
    for parent in parents:
        starts = (
            children[parent]
            if parent is not None
            else [r.node_id for r in graph.roots if r.node_id not in kept]
        )
        hidden: list[PlanNode] = []
        stack = [c for c in reversed(starts) if c not in assigned]
        while stack:
            node_id = stack.pop()
            if node_id in assigned:
                continue
            assigned.add(node_id)
            hidden.append(graph.node(node_id))
            stack.extend(c for c in reversed(children[node_id]) if c not in assigned)
        if hidden:
            folds.append((parent, hidden))
    nodes: list[PlanNode] = []
    for node in graph.nodes:
        if node.is_cluster:
            members = tuple(m for m in node.member_ids if m in kept)
            if members:
                nodes.append(
                    PlanNode.typed(
                        node.node_id,
                        node.name,
                        node.desc,
                        node.metrics,
                        True,
                        node.cluster_id,
                        node.codegen_id,
                        members,
                        node.metadata,
                    )
                )
        elif node.node_id in kept:
            nodes.append(node)
    edges = [e for e in graph.edges if e.from_id in kept and e.to_id in kept]
    fold_stats: dict[int, NodeStats] = {}
    fold_times: dict[int, float] = {}
    first_acc = -1
    for parent, hidden in folds:
        fold_id = next_id
        next_id += 1
        names = Counter(n.name for n in hidden)
        listed = ", ".join(f"{name} ×{count:,}" for name, count in names.most_common(5))
        if len(names) > 5:
            listed += f" and {len(names) - 5:,} more kinds"
        metrics = _fold_metrics(hidden, stats_of, first_acc)
        first_acc -= len(metrics)
        nodes.append(
            PlanNode.typed(
                fold_id,
                f"{FOLD_NAME_PREFIX}{len(hidden):,} more",
                f"{len(hidden):,} operators not drawn ({listed}); the metrics are over their "
                "totals: the sum, and one operator's min, median and max",
                (),
                False,
                None,
                None,
                (),
                (),
            )
        )
        if parent is not None:
            edges.append(PlanEdge(from_id=fold_id, to_id=parent))
        stage_ids = sorted(
            {s for n in hidden if (st := stats_of(n)) is not None for s in st.stage_ids}
        )
        fold_stats[fold_id] = NodeStats(fold_id, metrics, tuple(stage_ids))
        fold_times[fold_id] = sum(self_time_of(n.node_id) for n in hidden)
    shown_nodes = tuple(sorted(nodes, key=lambda n: n.node_id))
    ids: array[int] = array("q")
    for node in shown_nodes:
        if node.metrics:  # a kept operator or cluster: its ids are the plan's
            ids.extend(graph.accumulator_ids(node.node_id))
    shown = PlanGraph.typed(shown_nodes, tuple(edges), ids)
    return ShownPlan(
        graph=shown,
        fold_stats=fold_stats,
        fold_self_time_ms=fold_times,
        n_operators=len(ops),
        n_hidden=len(ops) - len(kept),
    )
