"""The plan graph of a SQL execution, numbered exactly as Spark's UI and REST API number it.

Plan nodes, their metric declarations and edges are pydantic dataclasses with slots: a log of
thousands of SQL executions holds hundreds of thousands of them, and a slotted instance is a
fifth of a `BaseModel`'s size. The replay builds them with `typed`, from values msgspec already
typed, without pydantic's validation (it would cost more than the rest of the plan's replay).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.dataclasses import dataclass

_new = object.__new__


def _slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of the slots of dataclass `cls`, in field order: they store a value as is,
    frozen or not, and cost half of `object.__setattr__`, which finds the slot by name."""
    return tuple(vars(cls)[f.name].__set__ for f in dataclasses.fields(cls))


@dataclass(frozen=True, slots=True)
class MetricDef:
    """A metric an operator declares: its name, accumulator id and Spark metric type."""

    name: str
    accumulator_id: int
    metric_type: str
    """`sum`, `size`, `timing`, `nsTiming`, `average` or `v2Custom_<class>`."""

    @classmethod
    def typed(cls, name: str, accumulator_id: int, metric_type: str) -> MetricDef:
        """Build from values already of the fields' types, without validating them again."""
        out = _new(cls)
        set_name, set_accumulator_id, set_metric_type = _METRIC_DEF_SLOTS
        set_name(out, name)
        set_accumulator_id(out, accumulator_id)
        set_metric_type(out, metric_type)
        return out


@dataclass(frozen=True, slots=True)
class PlanNode:
    """One node of Spark's plan graph: an operator, or a WholeStageCodegen cluster."""

    node_id: int
    name: str
    """The operator's nodeName, trimmed as the REST API trims it."""
    desc: str
    """The operator's simpleString (one-line description)."""
    metrics: tuple[MetricDef, ...] = ()
    is_cluster: bool = False
    """True for a WholeStageCodegen cluster node."""
    cluster_id: int | None = None
    """Node id of the WholeStageCodegen cluster this operator runs inside, if any."""
    codegen_id: int | None = None
    """The N of the enclosing `WholeStageCodegen (N)`, as the REST API's wholeStageCodegenId."""
    member_ids: tuple[int, ...] = ()
    """For a cluster: the ids of the operators inside it, in build order."""
    metadata: tuple[tuple[str, str], ...] = ()
    """Scan metadata (Location, ReadSchema, PartitionFilters, …) when Spark logged it."""

    @classmethod
    def typed(
        cls,
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
        """Build from values already of the fields' types, without validating them again."""
        out = _new(cls)
        (
            set_node_id,
            set_name,
            set_desc,
            set_metrics,
            set_is_cluster,
            set_cluster_id,
            set_codegen_id,
            set_member_ids,
            set_metadata,
        ) = _PLAN_NODE_SLOTS
        set_node_id(out, node_id)
        set_name(out, name)
        set_desc(out, desc)
        set_metrics(out, metrics)
        set_is_cluster(out, is_cluster)
        set_cluster_id(out, cluster_id)
        set_codegen_id(out, codegen_id)
        set_member_ids(out, member_ids)
        set_metadata(out, metadata)
        return out


@dataclass(frozen=True, slots=True)
class PlanEdge:
    """An edge from a child operator (`from_id`) to the parent that consumes it (`to_id`)."""

    from_id: int
    to_id: int


_METRIC_DEF_SLOTS = _slot_setters(MetricDef)
_PLAN_NODE_SLOTS = _slot_setters(PlanNode)


class PlanLinks:
    """The children and parents of each node of a graph whose node ids are 0 to `n_nodes` - 1,
    made on first use and shared by every graph with the same edges: the plans of the runs of
    a repeated query (micro-batches) have the same shape, so one copy serves them all."""

    __slots__ = ("_children", "_parents", "edges", "n_nodes")

    def __init__(self, n_nodes: int, edges: tuple[PlanEdge, ...]) -> None:
        self.n_nodes = n_nodes
        self.edges = edges
        self._children: dict[int, list[int]] | None = None
        self._parents: dict[int, list[int]] | None = None

    def children(self) -> dict[int, list[int]]:
        """Node id → the ids of the operators feeding it, in build order."""
        if self._children is None:
            self._children = _children_by_id(range(self.n_nodes), self.edges)
        return self._children

    def parents(self) -> dict[int, list[int]]:
        """Node id → the ids of the operators consuming it, in build order."""
        if self._parents is None:
            self._parents = _parents_by_id(range(self.n_nodes), self.edges)
        return self._parents


def _children_by_id(node_ids: Iterable[int], edges: tuple[PlanEdge, ...]) -> dict[int, list[int]]:
    # An ordered set per node: a node with many children stays linear to build.
    seen: dict[int, dict[int, None]] = {node_id: {} for node_id in node_ids}
    for e in edges:
        seen[e.to_id][e.from_id] = None
    return {node_id: list(children) for node_id, children in seen.items()}


def _parents_by_id(node_ids: Iterable[int], edges: tuple[PlanEdge, ...]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {node_id: [] for node_id in node_ids}
    for e in edges:
        out[e.from_id].append(e.to_id)
    return out


class PlanGraph(BaseModel):
    """A physical plan as Spark's SparkPlanGraph: nodes, clusters and child→parent edges."""

    model_config = ConfigDict(frozen=True)

    nodes: tuple[PlanNode, ...]
    """Every node, clusters included, sorted by node id."""
    edges: tuple[PlanEdge, ...]
    """Edges in Spark's build order."""

    @classmethod
    def typed(
        cls,
        nodes: tuple[PlanNode, ...],
        edges: tuple[PlanEdge, ...],
        links: PlanLinks | None = None,
    ) -> PlanGraph:
        """Build from values already of the fields' types, without validating them again.

        Validation would copy both tuples (equal edge lists are one tuple, see
        `replay.plan_graph.PlanParts`), and every graph would hold its own set of the names of
        the fields it was given: a log of thousands of executions holds a graph per plan
        version. `links`, for nodes numbered 0 to n - 1 and these edges, lends the children
        and parents of each node made once for every graph of the same shape.
        """
        graph = cls.model_construct(_PLAN_GRAPH_FIELDS, nodes=nodes, edges=edges)
        if links is not None:
            assert links.n_nodes == len(nodes) and links.edges is edges, "links of another graph"
            graph.__dict__["_links"] = links
        return graph

    @cached_property
    def _by_id(self) -> dict[int, PlanNode]:
        return {n.node_id: n for n in self.nodes}

    @cached_property
    def _children(self) -> dict[int, list[int]]:
        links: PlanLinks | None = self.__dict__.get("_links")
        if links is not None:
            return links.children()
        return _children_by_id((n.node_id for n in self.nodes), self.edges)

    @cached_property
    def _parents(self) -> dict[int, list[int]]:
        links: PlanLinks | None = self.__dict__.get("_links")
        if links is not None:
            return links.parents()
        return _parents_by_id((n.node_id for n in self.nodes), self.edges)

    def _node(self, node_id: int) -> PlanNode:
        """The node with this id: found at its place when the ids are 0 to n - 1, as in every
        graph the replay builds, so no graph needs its own index of them."""
        nodes = self.nodes
        if 0 <= node_id < len(nodes):
            node = nodes[node_id]
            if node.node_id == node_id:
                return node
        return self._by_id[node_id]

    def node(self, node_id: int) -> PlanNode:
        """Return the node with this id (KeyError if absent)."""
        return self._node(node_id)

    def children_of(self, node_id: int) -> list[PlanNode]:
        """Return the operators feeding `node_id`, in build order."""
        return [self._node(c) for c in self._children[node_id]]

    def parents_of(self, node_id: int) -> list[PlanNode]:
        """Return the operators consuming `node_id` (several for a reused exchange)."""
        return [self._node(p) for p in self._parents[node_id]]

    def parent_of(self, node_id: int) -> PlanNode | None:
        """Return the first consumer of `node_id`, or None for a root."""
        parents = self._parents[node_id]
        return self._node(parents[0]) if parents else None

    @property
    def roots(self) -> list[PlanNode]:
        """Operators with no consumer (clusters excluded), in id order."""
        return [n for n in self.nodes if not n.is_cluster and not self._parents[n.node_id]]

    def walk(self) -> Iterator[tuple[PlanNode, int, bool]]:
        """Yield (node, depth, already_shown) depth-first from the roots, children in order.

        A node reached a second time (a reused exchange or subquery) is yielded once more with
        `already_shown=True` and its subtree is not repeated. The walk keeps its own stack, so a
        plan of any depth is walked without recursion.
        """
        seen: set[int] = set()
        for root in self.roots:
            stack: list[tuple[int, int]] = [(root.node_id, 0)]
            while stack:
                node_id, depth = stack.pop()
                node = self._node(node_id)
                if node_id in seen:
                    yield node, depth, True
                    continue
                seen.add(node_id)
                yield node, depth, False
                stack.extend((child, depth + 1) for child in reversed(self._children[node_id]))

    def find_all(self, name_part: str) -> list[PlanNode]:
        """Return the nodes whose name contains `name_part`, in id order."""
        return [n for n in self.nodes if name_part in n.name]

    def to_s(self) -> str:
        """Return a readable indented dump, for debugging and tests."""
        lines = []
        for node, depth, again in self.walk():
            mark = " (again)" if again else ""
            cg = f" [codegen {node.codegen_id}]" if node.codegen_id is not None else ""
            lines.append(f"{'  ' * depth}{node.node_id} {node.name}{cg}{mark}")
        return "\n".join(lines)


_PLAN_GRAPH_FIELDS = set(PlanGraph.model_fields)
"""The fields every `PlanGraph.typed` sets: one set for all (frozen models never change it)."""
