"""Build a `PlanGraph` from a logged SparkPlanInfo tree, numbering nodes as Spark's UI does.

This follows the rules of Spark's `SparkPlanGraph.buildSparkPlanGraphNode`: a pre-order walk
with one counter; WholeStageCodegen becomes a cluster; InputAdapter and query-stage wrappers
vanish; reused exchanges and subqueries become extra edges to the node first built for the same
plan (plans compare by name, simpleString and children, not metrics).
"""

from __future__ import annotations

import re

from analyzer.eventlog.events import SparkPlanInfo
from analyzer.model.plan import MetricDef, PlanEdge, PlanGraph, PlanNode

_CODEGEN_ID = re.compile(r"WholeStageCodegen \((\d+)\)")


def _plan_key(
    info: SparkPlanInfo, memo: dict[int, int], interned: dict[tuple[str, str, tuple[int, ...]], int]
) -> int:
    """Return an integer equal for plans Spark's `SparkPlanInfo.equals` deems equal.

    Equal subtrees (same name, simpleString and children) get the same number, assigned
    bottom-up with an explicit stack and memoized per node: linear in the plan's size, with no
    recursion and no nested keys, whatever the plan's depth.
    """
    stack: list[tuple[SparkPlanInfo, bool]] = [(info, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in memo:
            continue
        if children_done:
            key = (node.node_name, node.simple_string, tuple(memo[id(c)] for c in node.children))
            memo[id(node)] = interned.setdefault(key, len(interned))
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(node.children) if id(c) not in memo)
    return memo[id(info)]


class _Builder:
    def __init__(self) -> None:
        self.next_id = 0
        self.nodes: dict[int, dict[str, object]] = {}
        self.edges: list[tuple[int, int]] = []
        self.edge_set: set[tuple[int, int]] = set()
        self.exchanges: dict[int, int] = {}
        self.memo: dict[int, int] = {}
        self.interned: dict[tuple[str, str, tuple[int, ...]], int] = {}

    def key(self, info: SparkPlanInfo) -> int:
        return _plan_key(info, self.memo, self.interned)

    def edge(self, from_id: int, to_id: int | None) -> None:
        if to_id is not None:
            self.edges.append((from_id, to_id))
            self.edge_set.add((from_id, to_id))

    def new_node(self, info: SparkPlanInfo, cluster: int | None, is_cluster: bool) -> int:
        node_id = self.next_id
        self.next_id += 1
        self.nodes[node_id] = {
            "info": info,
            "cluster": cluster,
            "is_cluster": is_cluster,
            "members": [],
        }
        if cluster is not None:
            members = self.nodes[cluster]["members"]
            assert isinstance(members, list)
            members.append(node_id)
        return node_id

    def build(self, root: SparkPlanInfo) -> None:
        """Number the plan's nodes in Spark's pre-order, with an explicit stack.

        Each step is what Spark's recursive `buildSparkPlanGraphNode` does for one call; a call
        never does anything after its recursive calls, so visiting (plan, parent, cluster)
        triples from a stack, children pushed in reverse, gives the same order at any depth.
        """
        stack: list[tuple[SparkPlanInfo, int | None, int | None]] = [(root, None, None)]
        while stack:
            info, parent, cluster = stack.pop()
            name = info.node_name
            first_child = info.children[0] if info.children else None
            if name.startswith("WholeStageCodegen"):
                new_cluster = self.new_node(info, None, True)
                if first_child is not None:
                    stack.append((first_child, parent, new_cluster))
            elif name == "InputAdapter":
                if first_child is not None:
                    stack.append((first_child, parent, None))
            elif name in ("BroadcastQueryStage", "ShuffleQueryStage"):
                if first_child is None:
                    continue
                reused = self.exchanges.get(self.key(first_child))
                if reused is not None:
                    self.edge(reused, parent)
                else:
                    stack.append((first_child, parent, None))
            elif name in ("TableCacheQueryStage", "ResultQueryStage"):
                if first_child is not None:
                    stack.append((first_child, parent, None))
            elif name == "Subquery" and cluster is not None:
                stack.append((info, parent, None))
            elif name == "Subquery" and self.key(info) in self.exchanges:
                pair = (self.exchanges[self.key(info)], parent)
                if parent is not None and pair not in self.edge_set:
                    self.edge(*pair)
            elif name == "ReusedSubquery":
                if first_child is not None:
                    stack.append((first_child, parent, cluster))
            elif (
                name == "ReusedExchange"
                and first_child is not None
                and self.key(first_child) in self.exchanges
            ):
                self.edge(self.exchanges[self.key(first_child)], parent)
            else:
                node_id = self.new_node(info, cluster, False)
                if "Exchange" in name or name == "Subquery":
                    self.exchanges[self.key(info)] = node_id
                self.edge(node_id, parent)
                stack.extend((child, node_id, cluster) for child in reversed(info.children))

    def graph(self, shared: PlanParts | None = None) -> PlanGraph:
        shared = shared if shared is not None else PlanParts()
        out: list[PlanNode] = []
        for node_id, raw in sorted(self.nodes.items()):
            info = raw["info"]
            assert isinstance(info, SparkPlanInfo)
            cluster = raw["cluster"]
            assert cluster is None or isinstance(cluster, int)
            codegen_id = None
            if cluster is not None:
                cluster_info = self.nodes[cluster]["info"]
                assert isinstance(cluster_info, SparkPlanInfo)
                match = _CODEGEN_ID.search(cluster_info.node_name)
                codegen_id = int(match.group(1)) if match else None
            members = raw["members"]
            assert isinstance(members, list)
            text = shared.text
            metrics = tuple(
                shared.metric(text(m.name.strip()), m.accumulator_id, text(m.metric_type))
                for m in info.metrics
            )
            out.append(
                shared.node(
                    node_id,
                    text(info.node_name.strip()),
                    text(info.simple_string),
                    metrics,
                    bool(raw["is_cluster"]),
                    cluster,
                    codegen_id,
                    tuple(members),
                    tuple(sorted((text(k), text(v)) for k, v in info.metadata.items())),
                )
            )
        return PlanGraph(
            nodes=tuple(out), edges=tuple(PlanEdge(from_id=f, to_id=t) for f, t in self.edges)
        )


class PlanParts:
    """The plan nodes, metric declarations and texts built so far, shared by the plan graphs of
    an application: an adaptive execution logs its whole plan again at every update, and most
    nodes come back unchanged, so one frozen object serves every version; and the executions of
    a repeated query (micro-batches) share their operator texts. Memory grows with distinct
    nodes and texts, not with plan versions and executions."""

    def __init__(self) -> None:
        self._metrics: dict[tuple[str, int, str], MetricDef] = {}
        self._nodes: dict[tuple[object, ...], PlanNode] = {}
        self._texts: dict[str, str] = {}

    def text(self, value: str) -> str:
        """The one copy of a string equal to `value`."""
        return self._texts.setdefault(value, value)

    def metric(self, name: str, accumulator_id: int, metric_type: str) -> MetricDef:
        """The metric declaration with these fields."""
        key = (name, accumulator_id, metric_type)
        found = self._metrics.get(key)
        if found is None:
            found = self._metrics[key] = MetricDef(
                name=name, accumulator_id=accumulator_id, metric_type=metric_type
            )
        return found

    def node(
        self,
        node_id: int,
        name: str,
        desc: str,
        metrics: tuple[MetricDef, ...],
        is_cluster: bool,
        cluster_id: int | None,
        codegen_id: int | None,
        member_ids: tuple[int, ...],
        metadata: tuple[tuple[str, str], ...],
    ) -> PlanNode:
        """The plan node with these fields (metrics compared by identity: they are shared)."""
        key = (
            node_id,
            name,
            desc,
            tuple(map(id, metrics)),
            is_cluster,
            cluster_id,
            codegen_id,
            member_ids,
            metadata,
        )
        found = self._nodes.get(key)
        if found is None:
            found = self._nodes[key] = PlanNode(
                node_id=node_id,
                name=name,
                desc=desc,
                metrics=metrics,
                is_cluster=is_cluster,
                cluster_id=cluster_id,
                codegen_id=codegen_id,
                member_ids=member_ids,
                metadata=metadata,
            )
        return found


def build_plan_graph(plan: SparkPlanInfo, shared: PlanParts | None = None) -> PlanGraph:
    """Return the plan graph of `plan`, node ids and edges exactly as Spark's REST API shows.

    `shared` lends nodes equal to those of graphs built before (see `PlanParts`).
    """
    builder = _Builder()
    builder.build(plan)
    return builder.graph(shared)
