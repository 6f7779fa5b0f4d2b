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


def _plan_key(info: SparkPlanInfo, memo: dict[int, object]) -> object:
    """Return a hashable key equal for plans Spark's `SparkPlanInfo.equals` deems equal."""
    key = memo.get(id(info))
    if key is None:
        key = (info.node_name, info.simple_string, tuple(_plan_key(c, memo) for c in info.children))
        memo[id(info)] = key
    return key


class _Builder:
    def __init__(self) -> None:
        self.next_id = 0
        self.nodes: dict[int, dict[str, object]] = {}
        self.edges: list[tuple[int, int]] = []
        self.exchanges: dict[object, int] = {}
        self.memo: dict[int, object] = {}

    def key(self, info: SparkPlanInfo) -> object:
        return _plan_key(info, self.memo)

    def edge(self, from_id: int, to_id: int | None) -> None:
        if to_id is not None:
            self.edges.append((from_id, to_id))

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

    def build(self, info: SparkPlanInfo, parent: int | None, cluster: int | None) -> None:
        name = info.node_name
        first_child = info.children[0] if info.children else None
        if name.startswith("WholeStageCodegen"):
            new_cluster = self.new_node(info, None, True)
            if first_child is not None:
                self.build(first_child, parent, new_cluster)
        elif name == "InputAdapter":
            if first_child is not None:
                self.build(first_child, parent, None)
        elif name in ("BroadcastQueryStage", "ShuffleQueryStage"):
            if first_child is None:
                return
            reused = self.exchanges.get(self.key(first_child))
            if reused is not None:
                self.edge(reused, parent)
            else:
                self.build(first_child, parent, None)
        elif name in ("TableCacheQueryStage", "ResultQueryStage"):
            if first_child is not None:
                self.build(first_child, parent, None)
        elif name == "Subquery" and cluster is not None:
            self.build(info, parent, None)
        elif name == "Subquery" and self.key(info) in self.exchanges:
            pair = (self.exchanges[self.key(info)], parent)
            if parent is not None and pair not in self.edges:
                self.edge(*pair)
        elif name == "ReusedSubquery":
            if first_child is not None:
                self.build(first_child, parent, cluster)
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
            for child in info.children:
                self.build(child, node_id, cluster)

    def graph(self) -> PlanGraph:
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
            out.append(
                PlanNode(
                    node_id=node_id,
                    name=info.node_name.strip(),
                    desc=info.simple_string,
                    metrics=tuple(
                        MetricDef(
                            name=m.name.strip(),
                            accumulator_id=m.accumulator_id,
                            metric_type=m.metric_type,
                        )
                        for m in info.metrics
                    ),
                    is_cluster=bool(raw["is_cluster"]),
                    cluster_id=cluster,
                    codegen_id=codegen_id,
                    member_ids=tuple(members),
                    metadata=tuple(sorted(info.metadata.items())),
                )
            )
        return PlanGraph(
            nodes=tuple(out), edges=tuple(PlanEdge(from_id=f, to_id=t) for f, t in self.edges)
        )


def build_plan_graph(plan: SparkPlanInfo) -> PlanGraph:
    """Return the plan graph of `plan`, node ids and edges exactly as Spark's REST API shows."""
    builder = _Builder()
    builder.build(plan, None, None)
    return builder.graph()
