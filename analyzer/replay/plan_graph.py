"""Build a `PlanGraph` from a logged SparkPlanInfo tree, numbering nodes as Spark's UI does.

This follows the rules of Spark's `SparkPlanGraph.buildSparkPlanGraphNode`: a pre-order walk
with one counter; WholeStageCodegen becomes a cluster; InputAdapter and query-stage wrappers
vanish; reused exchanges and subqueries become extra edges to the node first built for the same
plan (plans compare by name, simpleString and children, not metrics).
"""

from __future__ import annotations

import re

from analyzer.eventlog.app_events import SparkPlanInfo, SqlPlanMetric
from analyzer.model.plan import MetricDef, PlanEdge, PlanGraph, PlanLinks, PlanNode

_CODEGEN_ID = re.compile(r"WholeStageCodegen \((\d+)\)")
_SPECIAL = frozenset(
    (
        "InputAdapter",
        "BroadcastQueryStage",
        "ShuffleQueryStage",
        "TableCacheQueryStage",
        "ResultQueryStage",
        "Subquery",
        "ReusedSubquery",
        "ReusedExchange",
    )
)
"""Operator names `_Builder.build` treats apart (besides WholeStageCodegen clusters)."""

_Operator = tuple[str, str, tuple[MetricDef, ...], tuple[tuple[str, str], ...]]
"""An operator's own fields, shared by its nodes: name, description, metrics, sorted metadata."""


def _plan_key(
    info: SparkPlanInfo, memo: dict[int, int], interned: dict[tuple[str, str, tuple[int, ...]], int]
) -> int:
    """Return an integer equal for plans Spark's `SparkPlanInfo.equals` deems equal.

    Equal subtrees (same name, simpleString and children) get the same number, assigned
    bottom-up with an explicit stack and memoized per node: linear in the plan's size, with no
    recursion and no nested keys, whatever the plan's depth.
    """
    child_key = memo.__getitem__
    stack: list[tuple[SparkPlanInfo, bool]] = [(info, False)]
    while stack:
        node, children_done = stack.pop()
        node_ref = id(node)
        if node_ref in memo:
            continue
        children = node.children
        if children_done or not children:
            key = (node.node_name, node.simple_string, tuple(map(child_key, map(id, children))))
            memo[node_ref] = interned.setdefault(key, len(interned))
            continue
        stack.append((node, True))
        stack.extend([(c, False) for c in reversed(children) if id(c) not in memo])
    return memo[id(info)]


class _Builder:
    def __init__(self) -> None:
        self.infos: list[SparkPlanInfo] = []
        """The plan of each node, by node id."""
        self.clusters: list[int | None] = []
        """The enclosing cluster of each node, by node id (None for a cluster)."""
        self.members: dict[int, list[int]] = {}
        """Cluster node id → the operators inside it, in build order."""
        self.edges: list[tuple[int, int]] = []
        self.edge_set: set[tuple[int, int]] = set()
        self.exchanges: dict[int, int] = {}
        """Plan key → the node built for the last exchange or subquery with that key."""
        self.unkeyed: list[tuple[SparkPlanInfo, int]] = []
        """Exchanges and subqueries built since the last look-up, keyed only when one comes: a
        plan that reuses nothing (most initial plans) never computes a key."""
        self.memo: dict[int, int] = {}
        self.interned: dict[tuple[str, str, tuple[int, ...]], int] = {}

    def key(self, info: SparkPlanInfo) -> int:
        return _plan_key(info, self.memo, self.interned)

    def exchange_of(self, info: SparkPlanInfo) -> int | None:
        """The node built for the last exchange or subquery equal to `info`, if any."""
        if self.unkeyed:
            for plan, node_id in self.unkeyed:
                self.exchanges[self.key(plan)] = node_id
            self.unkeyed.clear()
        return self.exchanges.get(self.key(info))

    def edge(self, from_id: int, to_id: int | None) -> None:
        if to_id is not None:
            self.edges.append((from_id, to_id))
            self.edge_set.add((from_id, to_id))

    def new_node(self, info: SparkPlanInfo, cluster: int | None) -> int:
        node_id = len(self.infos)
        self.infos.append(info)
        self.clusters.append(cluster)
        if cluster is not None:
            self.members[cluster].append(node_id)
        return node_id

    def build(self, root: SparkPlanInfo) -> None:
        """Number the plan's nodes in Spark's pre-order, with an explicit stack.

        Each step is what Spark's recursive `buildSparkPlanGraphNode` does for one call; a call
        never does anything after its recursive calls, so visiting (plan, parent, cluster)
        triples from a stack, children pushed in reverse, gives the same order at any depth.
        """
        infos = self.infos
        clusters = self.clusters
        stack: list[tuple[SparkPlanInfo, int | None, int | None]] = [(root, None, None)]
        while stack:
            info, parent, cluster = stack.pop()
            name = info.node_name
            if name not in _SPECIAL and not name.startswith("WholeStageCodegen"):
                # An operator: the usual case, decided with one set lookup.
                node_id = len(infos)
                infos.append(info)
                clusters.append(cluster)
                if cluster is not None:
                    self.members[cluster].append(node_id)
                if "Exchange" in name:
                    self.unkeyed.append((info, node_id))
                if parent is not None:
                    self.edges.append((node_id, parent))
                    self.edge_set.add((node_id, parent))
                stack.extend((child, node_id, cluster) for child in reversed(info.children))
                continue
            first_child = info.children[0] if info.children else None
            if name.startswith("WholeStageCodegen"):
                new_cluster = self.new_node(info, None)
                self.members[new_cluster] = []
                if first_child is not None:
                    stack.append((first_child, parent, new_cluster))
            elif name == "InputAdapter":
                if first_child is not None:
                    stack.append((first_child, parent, None))
            elif name in ("BroadcastQueryStage", "ShuffleQueryStage"):
                if first_child is None:
                    continue
                reused = self.exchange_of(first_child)
                if reused is not None:
                    self.edge(reused, parent)
                else:
                    stack.append((first_child, parent, None))
            elif name in ("TableCacheQueryStage", "ResultQueryStage"):
                if first_child is not None:
                    stack.append((first_child, parent, None))
            elif name == "Subquery" and cluster is not None:
                stack.append((info, parent, None))
            elif name == "Subquery" and (reused := self.exchange_of(info)) is not None:
                pair = (reused, parent)
                if parent is not None and pair not in self.edge_set:
                    self.edge(*pair)
            elif name == "ReusedSubquery":
                if first_child is not None:
                    stack.append((first_child, parent, cluster))
            elif (
                name == "ReusedExchange"
                and first_child is not None
                and (reused := self.exchange_of(first_child)) is not None
            ):
                self.edge(reused, parent)
            else:
                node_id = self.new_node(info, cluster)
                if "Exchange" in name or name == "Subquery":
                    self.unkeyed.append((info, node_id))
                self.edge(node_id, parent)
                stack.extend((child, node_id, cluster) for child in reversed(info.children))

    def graph(self, shared: PlanParts | None = None, execution_id: int | None = None) -> PlanGraph:
        parts = shared if shared is not None else PlanParts()
        codegen_ids: dict[int, int | None] = {}
        for cluster in self.members:
            match = _CODEGEN_ID.search(self.infos[cluster].node_name)
            codegen_ids[cluster] = int(match.group(1)) if match else None
        members = self.members
        node = parts.node
        scope = parts.scope(execution_id)
        nodes = tuple(
            node(
                scope,
                node_id,
                info,
                cluster,
                None if cluster is None else codegen_ids[cluster],
                node_id in members,
                tuple(members[node_id]) if node_id in members else (),
            )
            for node_id, (info, cluster) in enumerate(zip(self.infos, self.clusters, strict=True))
        )
        edges = parts.edges(tuple(self.edges))
        return PlanGraph.typed(nodes=nodes, edges=edges, links=parts.links(len(nodes), edges))


class _Scope:
    """Operators (their fields, by their logged fields) and the nodes built of them."""

    __slots__ = ("nodes", "operators")

    def __init__(self) -> None:
        self.operators: dict[tuple[object, ...], _Operator] = {}
        self.nodes: dict[tuple[object, ...], PlanNode] = {}


class PlanParts:
    """The plan nodes, metric declarations, edges and texts built so far, shared by the plan
    graphs of an application: an adaptive execution logs its whole plan again at every update,
    and most operators come back unchanged (often renumbered, when AQE inserted a node before
    them), so one frozen object serves every version; and the executions of a repeated query
    (micro-batches) share their operator texts and edges. Memory grows with distinct nodes and
    texts, not with plan versions and executions.

    An operator's own fields (name, description, metrics, metadata) are looked up as logged:
    its metrics compare as msgspec structs, in C, without building anything; then the node, by
    those fields and its place in the graph. The keys kept hold the shared texts, not the
    event's own copies.

    An operator that declares metrics is of one execution only (accumulator ids differ from
    run to run), so it and its nodes are kept in that execution's scope, dropped when the
    execution ends (`forget`): the keys, a copy of every logged declaration, would otherwise
    stay until the end of the replay, about 9 KB per execution. Operators without metrics are
    kept for the whole application."""

    def __init__(self) -> None:
        self._shared = _Scope()
        self._scopes: dict[int, _Scope] = {}
        self._edges: dict[tuple[tuple[int, int], ...], tuple[PlanEdge, ...]] = {}
        self._edge: dict[tuple[int, int], PlanEdge] = {}
        self._links: dict[tuple[int, int], PlanLinks] = {}
        self._texts: dict[str, str] = {}

    def scope(self, execution_id: int | None) -> _Scope:
        """The operators and nodes with metrics of this execution (None: of no execution, kept
        with those without metrics)."""
        if execution_id is None:
            return self._shared
        found = self._scopes.get(execution_id)
        if found is None:
            found = self._scopes[execution_id] = _Scope()
        return found

    def forget(self, execution_id: int) -> None:
        """Drop the operators and nodes with metrics of an execution that has ended."""
        self._scopes.pop(execution_id, None)

    def text(self, value: str) -> str:
        """The one copy of a string equal to `value`."""
        return self._texts.setdefault(value, value)

    def metric(self, logged: SqlPlanMetric) -> MetricDef:
        """The declaration of a logged metric: its name trimmed, its texts shared."""
        intern = self._texts.setdefault
        name = logged.name.strip()
        return MetricDef.typed(
            intern(name, name),
            logged.accumulator_id,
            intern(logged.metric_type, logged.metric_type),
        )

    def _operator(
        self, scope: _Scope, info: SparkPlanInfo, metadata: tuple[tuple[str, str], ...]
    ) -> _Operator:
        """Build and keep the fields of an operator not seen before (`info`'s own)."""
        intern = self._texts.setdefault
        keys: list[SqlPlanMetric] = []
        metrics: list[MetricDef] = []
        for logged in info.metrics:
            name = intern(logged.name, logged.name)
            metric_type = intern(logged.metric_type, logged.metric_type)
            keys.append(SqlPlanMetric(name, logged.accumulator_id, metric_type))
            trimmed = name.strip()
            if trimmed is not name:
                trimmed = intern(trimmed, trimmed)
            metrics.append(MetricDef.typed(trimmed, logged.accumulator_id, metric_type))
        metadata = tuple((intern(k, k), intern(v, v)) for k, v in metadata)
        name = intern(info.node_name, info.node_name)
        desc = intern(info.simple_string, info.simple_string)
        found = scope.operators[(name, desc, tuple(keys), metadata)] = (
            self.text(name.strip()),
            desc,
            tuple(metrics),
            tuple(sorted(metadata)),
        )
        return found

    def node(
        self,
        scope: _Scope,
        node_id: int,
        info: SparkPlanInfo,
        cluster_id: int | None,
        codegen_id: int | None,
        is_cluster: bool,
        member_ids: tuple[int, ...],
    ) -> PlanNode:
        """The plan node `node_id` built from `info` (its children are not looked at), kept in
        `scope` if its operator declares metrics."""
        if not info.metrics:
            scope = self._shared
        metadata = tuple(info.metadata.items()) if info.metadata else ()
        operator = scope.operators.get(
            (info.node_name, info.simple_string, tuple(info.metrics), metadata)
        )
        if operator is None:
            operator = self._operator(scope, info, metadata)
        # The operator is kept as long as the scope and its nodes, so its id stands for it.
        key = (node_id, id(operator), is_cluster, cluster_id, codegen_id, member_ids)
        found = scope.nodes.get(key)
        if found is None:
            name, desc, metrics, sorted_metadata = operator
            found = scope.nodes[key] = PlanNode.typed(
                node_id,
                name,
                desc,
                metrics,
                is_cluster,
                cluster_id,
                codegen_id,
                member_ids,
                sorted_metadata,
            )
        return found

    def edges(self, pairs: tuple[tuple[int, int], ...]) -> tuple[PlanEdge, ...]:
        """The edges (from id, to id) `pairs`, as one tuple shared by equal edge lists."""
        found = self._edges.get(pairs)
        if found is None:
            edge = self._edge
            found = self._edges[pairs] = tuple(
                edge.get(pair) or edge.setdefault(pair, PlanEdge(from_id=pair[0], to_id=pair[1]))
                for pair in pairs
            )
        return found

    def links(self, n_nodes: int, edges: tuple[PlanEdge, ...]) -> PlanLinks:
        """The one `PlanLinks` of graphs of `n_nodes` nodes and these edges (a tuple from
        `edges`, kept here, so its id stands for it)."""
        key = (n_nodes, id(edges))
        found = self._links.get(key)
        if found is None:
            found = self._links[key] = PlanLinks(n_nodes, edges)
        return found


def build_plan_graph(
    plan: SparkPlanInfo, shared: PlanParts | None = None, execution_id: int | None = None
) -> PlanGraph:
    """Return the plan graph of `plan`, node ids and edges exactly as Spark's REST API shows.

    `shared` lends nodes equal to those of graphs built before (see `PlanParts`), those with
    metrics from the graphs of the same `execution_id`.
    """
    builder = _Builder()
    builder.build(plan)
    return builder.graph(shared, execution_id)
