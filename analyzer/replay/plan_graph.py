"""Build a `PlanGraph` from a logged SparkPlanInfo tree, numbering nodes as Spark's UI does.

This follows the rules of Spark's `SparkPlanGraph.buildSparkPlanGraphNode`: a pre-order walk
with one counter; WholeStageCodegen becomes a cluster; InputAdapter and query-stage wrappers
vanish; reused exchanges and subqueries become extra edges to the node first built for the same
plan (plans compare by name, simpleString and children, not metrics).
"""

from __future__ import annotations

import re
from array import array

from analyzer.eventlog.app_events import SparkPlanInfo
from analyzer.eventlog.plans import LoggedPlan
from analyzer.model.config_secrets import redact_pairs
from analyzer.model.plan import (
    MetricCatalog,
    MetricSpec,
    PlanEdge,
    PlanGraph,
    PlanLinks,
    PlanNode,
    PlanShape,
)
from analyzer.units import decimal_int

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

_Operator = tuple[str, str, tuple[MetricSpec, ...], tuple[tuple[str, str], ...]]
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

    def graph(self, parts: PlanParts) -> tuple[PlanShape, array[int]]:
        """The plan's shape, its nodes and edges shared with equal ones built before, and the
        accumulator ids of its nodes' metrics, node after node."""
        codegen_ids: dict[int, int | None] = {}
        for cluster in self.members:
            match = _CODEGEN_ID.search(self.infos[cluster].node_name)
            codegen_ids[cluster] = decimal_int(match.group(1)) if match else None
        members = self.members
        node = parts.node
        nodes = tuple(
            node(
                node_id,
                info,
                cluster,
                None if cluster is None else codegen_ids[cluster],
                node_id in members,
                tuple(members[node_id]) if node_id in members else (),
            )
            for node_id, (info, cluster) in enumerate(zip(self.infos, self.clusters, strict=True))
        )
        ids: array[int] = array("q")
        for info in self.infos:
            if info.metrics:
                ids.extend([m.accumulator_id for m in info.metrics])
        return parts.shape(nodes, parts.edges(tuple(self.edges)), ids), ids


def _text_order(plan: SparkPlanInfo, infos: list[SparkPlanInfo]) -> array[int]:
    """For each metric of the nodes built of `infos`, node after node, its place among the
    metrics of `plan` in the order Spark writes them (and msgspec encodes them): a plan's fields
    in declaration order, so its children's metrics (depth first) before its own."""
    first: dict[int, int] = {}
    n_before = 0
    stack: list[tuple[SparkPlanInfo, bool]] = [(plan, False)]
    while stack:
        info, children_done = stack.pop()
        if children_done or not info.children:
            first[id(info)] = n_before
            n_before += len(info.metrics)
            continue
        stack.append((info, True))
        stack.extend([(c, False) for c in reversed(info.children)])
    order: array[int] = array("q")
    for info in infos:
        start = first[id(info)]
        order.extend(range(start, start + len(info.metrics)))
    return order


class PlanParts:
    """The plan shapes, nodes, metric specs, edges and texts built so far, shared by the plan
    graphs of an application: an adaptive execution logs its whole plan again at every update,
    and most operators come back unchanged (often renumbered, when AQE inserted a node before
    them), so one frozen object serves every version; and the runs of a repeated query
    (micro-batches) log the same plans with new accumulator ids, so they share whole shapes.
    Memory grows with distinct plans and texts, not with plan versions and executions.

    A logged plan is first looked up whole, by the digest of its JSON text less its accumulator
    ids (`eventlog.plans.LoggedPlan`): a plan seen before takes its shape and only reads its
    ids. Else it is built, each
    operator looked up by its own fields (texts, metric names and types, metadata), then the
    node by its operator and its place in the graph. The keys kept hold the shared texts, not
    the event's own copies.
    """

    def __init__(self) -> None:
        self._operators: dict[tuple[object, ...], _Operator] = {}
        self._nodes: dict[tuple[object, ...], PlanNode] = {}
        self._specs: dict[tuple[str, str], MetricSpec] = {}
        self._spec_tuples: dict[tuple[int, ...], tuple[MetricSpec, ...]] = {}
        self._node_tuples: dict[tuple[int, ...], tuple[PlanNode, ...]] = {}
        self._edges: dict[tuple[tuple[int, int], ...], tuple[PlanEdge, ...]] = {}
        self._edge: dict[tuple[int, int], PlanEdge] = {}
        self._links: dict[tuple[int, int], PlanLinks] = {}
        self._starts: dict[tuple[int, ...], array[int]] = {}
        self._shapes: dict[tuple[int, int], PlanShape] = {}
        self._known: dict[bytes, tuple[PlanShape, array[int]]] = {}
        """Digest of a plan's text less its ids → its shape, and for each of its graph's ids,
        node after node, the id's place among those of the text."""
        self._texts: dict[str, str] = {}
        self._configs: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}

    def text(self, value: str) -> str:
        """The one copy of a string equal to `value`."""
        return self._texts.setdefault(value, value)

    def configs(self, logged: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
        """The one copy of an execution's modified configurations, sorted by key and with
        secrets redacted (`redact_pairs`): every run of a repeated query logs the same ones."""
        key = tuple(sorted((logged or {}).items()))
        found = self._configs.get(key)
        if found is None:
            found = self._configs[key] = tuple(
                (self.text(k), self.text(v)) for k, v in redact_pairs(key)
            )
        return found

    def spec(self, name: str, metric_type: str) -> MetricSpec:
        """The one `MetricSpec` of a metric named `name` (trimmed) of this type."""
        name = name.strip()
        key = (name, metric_type)
        found = self._specs.get(key)
        if found is None:
            found = self._specs[key] = MetricSpec.typed(self.text(name), self.text(metric_type))
        return found

    def catalog(self, metrics: dict[int, MetricSpec]) -> MetricCatalog:
        """The catalog of these metrics (accumulator id → spec), its specs a tuple shared with
        every equal one."""
        specs = tuple(metrics.values())
        key = tuple(map(id, specs))
        shared = self._spec_tuples.get(key)
        if shared is None:
            shared = self._spec_tuples[key] = specs
        return MetricCatalog(array("q", metrics), shared)

    def graph(self, logged: LoggedPlan) -> tuple[PlanGraph, tuple[MetricSpec, ...]]:
        """The graph of a logged plan, and every metric its nodes declare, node after node (in
        the order of its accumulator ids)."""
        logged_ids = logged.ids
        known = self._known.get(logged.digest)
        if known is not None:
            shape, order = known
            ids = array("q", map(int, map(logged_ids.__getitem__, order)))
        else:
            plan = logged.plan()
            builder = _Builder()
            builder.build(plan)
            shape, ids = builder.graph(self)
            self._learn(logged.digest, shape, ids, logged_ids, plan, builder.infos)
        return PlanGraph.of_shape(shape, ids), shape.metrics

    def _learn(
        self,
        digest: bytes,
        shape: PlanShape,
        ids: array[int],
        logged_ids: list[bytes],
        plan: SparkPlanInfo,
        infos: list[SparkPlanInfo],
    ) -> None:
        """Keep where each of a new plan's graph ids is among the ids of its text: found by
        value when no id is logged twice (a reused exchange's plan is logged again with its
        ids), else by a walk in the order Spark writes a plan's fields, kept only if the text
        agrees (and not at all if an id of the graph is not where the text was split)."""
        in_text = list(map(int, logged_ids))
        place = {acc_id: i for i, acc_id in enumerate(in_text)}
        try:
            if len(place) == len(in_text):
                order = array("q", map(place.__getitem__, ids))
            else:
                order = _text_order(plan, infos)
                if list(map(in_text.__getitem__, order)) != ids.tolist():
                    return
        except (KeyError, IndexError):  # ids the text does not show as `"accumulatorId":N`
            return
        self._known[digest] = (shape, order)

    def _operator(self, info: SparkPlanInfo, metadata: tuple[tuple[str, str], ...]) -> _Operator:
        """Build and keep the fields of an operator not seen before (`info`'s own)."""
        intern = self._texts.setdefault
        spec = self.spec
        metrics = info.metrics
        names = tuple([intern(m.name, m.name) for m in metrics])
        types = tuple([intern(m.metric_type, m.metric_type) for m in metrics])
        metadata = tuple((intern(k, k), intern(v, v)) for k, v in metadata)
        name = intern(info.node_name, info.node_name)
        desc = intern(info.simple_string, info.simple_string)
        found = self._operators[(name, desc, names, types, metadata)] = (
            self.text(name.strip()),
            desc,
            tuple([spec(n, t) for n, t in zip(names, types, strict=True)]),
            tuple(sorted(metadata)),
        )
        return found

    def node(
        self,
        node_id: int,
        info: SparkPlanInfo,
        cluster_id: int | None,
        codegen_id: int | None,
        is_cluster: bool,
        member_ids: tuple[int, ...],
    ) -> PlanNode:
        """The plan node `node_id` built from `info` (its children are not looked at)."""
        metadata = tuple(info.metadata.items()) if info.metadata else ()
        metrics = info.metrics
        operator = self._operators.get(
            (
                info.node_name,
                info.simple_string,
                tuple([m.name for m in metrics]),
                tuple([m.metric_type for m in metrics]),
                metadata,
            )
        )
        if operator is None:
            operator = self._operator(info, metadata)
        # Operators are kept as long as their nodes, so an operator's id stands for it.
        key = (node_id, id(operator), is_cluster, cluster_id, codegen_id, member_ids)
        found = self._nodes.get(key)
        if found is None:
            name, desc, specs, sorted_metadata = operator
            found = self._nodes[key] = PlanNode.typed(
                node_id,
                name,
                desc,
                specs,
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

    def shape(
        self, nodes: tuple[PlanNode, ...], edges: tuple[PlanEdge, ...], ids: array[int]
    ) -> PlanShape:
        """The one `PlanShape` of these nodes (kept here, so their ids stand for them) and
        edges (a tuple from `edges`), its links, spec tuple and starts shared with other
        shapes where equal; a new shape takes the pattern of these accumulator ids."""
        node_ids = tuple(map(id, nodes))
        shared_nodes = self._node_tuples.get(node_ids)
        if shared_nodes is None:
            shared_nodes = self._node_tuples[node_ids] = nodes
        key = (id(shared_nodes), id(edges))
        found = self._shapes.get(key)
        if found is None:
            links_key = (len(nodes), id(edges))
            links = self._links.get(links_key)
            if links is None:
                links = self._links[links_key] = PlanLinks(len(nodes), edges)
            metrics = tuple(m for n in nodes for m in n.metrics)
            spec_ids = tuple(map(id, metrics))
            shared_metrics = self._spec_tuples.get(spec_ids)
            if shared_metrics is None:
                shared_metrics = self._spec_tuples[spec_ids] = metrics
            counts = tuple(len(n.metrics) for n in nodes)
            starts = self._starts.get(counts)
            if starts is None:
                starts = self._starts[counts] = array("q", [0])
                for count in counts:
                    starts.append(starts[-1] + count)
            first = ids[0] if ids else 0
            deltas: array[int] | None
            try:
                deltas = array("q", [acc_id - first for acc_id in ids])
            except OverflowError:  # ids far apart (not Spark's): each graph keeps its own
                deltas = None
            found = self._shapes[key] = PlanShape(
                shared_nodes, links, shared_metrics, starts, deltas
            )
        return found


def build_plan_graph(
    plan: LoggedPlan | SparkPlanInfo, shared: PlanParts | None = None
) -> tuple[PlanGraph, tuple[MetricSpec, ...]]:
    """Return the plan graph of `plan`, node ids and edges exactly as Spark's REST API shows,
    and every metric its nodes declare, node after node (in the order of its accumulator ids).

    `shared` lends the shapes, nodes and texts of graphs built before (see `PlanParts`).
    """
    logged = plan if isinstance(plan, LoggedPlan) else LoggedPlan.of(plan)
    return (shared if shared is not None else PlanParts()).graph(logged)
