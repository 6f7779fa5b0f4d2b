"""The plan graph of a SQL execution, numbered exactly as Spark's UI and REST API number it.

Plan nodes, their metrics and edges are pydantic dataclasses with slots: a log of thousands of
SQL executions holds hundreds of thousands of them, and a slotted instance is a fifth of a
`BaseModel`'s size. The replay builds them with `typed`, from values msgspec already typed,
without pydantic's validation (it would cost more than the rest of the plan's replay).

A node holds what every run of its plan has in common: its operator's texts and the names and
types of its metrics (`MetricSpec`). The accumulator ids of those metrics are new in every run
of a query, so they are the graph's (`PlanGraph.accumulator_ids`): the plans of the runs of a
repeated query share one `PlanShape` (nodes, edges, children and parents) and each keeps only
its ids, or only the first of them when they follow the pattern of the shape's first run.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, model_serializer, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import core_schema

from analyzer.model.trusted import Trusted, slot_setters

_new = object.__new__


@dataclass(frozen=True, slots=True)
class MetricDef:
    """A metric of one execution: its name, accumulator id and Spark metric type."""

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
class MetricSpec:
    """A metric an operator declares, as every run of its plan declares it: its name and Spark
    metric type. Its accumulator id is the run's (`PlanGraph.accumulator_ids`)."""

    name: str
    metric_type: str
    """`sum`, `size`, `timing`, `nsTiming`, `average` or `v2Custom_<class>`."""

    @classmethod
    def typed(cls, name: str, metric_type: str) -> MetricSpec:
        """Build from values already of the fields' types, without validating them again."""
        out = _new(cls)
        set_name, set_metric_type = _METRIC_SPEC_SLOTS
        set_name(out, name)
        set_metric_type(out, metric_type)
        return out


@dataclass(frozen=True, slots=True)
class PlanNode:
    """One node of Spark's plan graph: an operator, or a WholeStageCodegen cluster.

    Nothing in it is of one run: the nodes of the runs of a repeated query are one object.
    """

    node_id: int
    name: str
    """The operator's nodeName, trimmed as the REST API trims it."""
    desc: str
    """The operator's simpleString (one-line description)."""
    metrics: tuple[MetricSpec, ...] = ()
    """The metrics it declares, in Spark's order; their accumulator ids are the graph's
    (`PlanGraph.accumulator_ids`, in the same order)."""
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
        metrics: tuple[MetricSpec, ...],
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


_METRIC_DEF_SLOTS = slot_setters(MetricDef)
_METRIC_SPEC_SLOTS = slot_setters(MetricSpec)
_PLAN_NODE_SLOTS = slot_setters(PlanNode)
_NO_IDS: array[int] = array("q")


def _metric_dicts(specs: Iterable[MetricSpec], ids: Iterable[int]) -> list[dict[str, Any]]:
    """Metrics as `MetricDef`s dump: the model's JSON keeps its layout."""
    return [
        {"name": m.name, "accumulator_id": acc_id, "metric_type": m.metric_type}
        for m, acc_id in zip(specs, ids, strict=True)
    ]


class MetricCatalog:
    """Every metric an execution tracks over all its plan versions (and those AQE adds), in the
    order they were first declared: their accumulator ids in one array, their names and types
    in a tuple the runs of a repeated query share. Iterating yields `MetricDef`s."""

    __slots__ = ("accumulator_ids", "specs")

    def __init__(self, accumulator_ids: array[int], specs: tuple[MetricSpec, ...]) -> None:
        if len(accumulator_ids) != len(specs):
            raise ValueError("a metric catalog needs one accumulator id per metric")
        self.accumulator_ids = accumulator_ids
        self.specs = specs

    @classmethod
    def of(cls, metrics: Iterable[MetricDef]) -> MetricCatalog:
        """The catalog of these metrics, in this order."""
        listed = list(metrics)
        return cls(
            array("q", [m.accumulator_id for m in listed]),
            tuple(MetricSpec.typed(m.name, m.metric_type) for m in listed),
        )

    def __len__(self) -> int:
        return len(self.specs)

    def __iter__(self) -> Iterator[MetricDef]:
        typed = MetricDef.typed
        for spec, acc_id in zip(self.specs, self.accumulator_ids, strict=True):
            yield typed(spec.name, acc_id, spec.metric_type)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricCatalog):
            return NotImplemented
        return self.accumulator_ids == other.accumulator_ids and self.specs == other.specs

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MetricCatalog({list(self)!r})"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Validated from a catalog or `MetricDef`s; dumped as a list of `MetricDef`s."""
        return core_schema.no_info_plain_validator_function(
            cls._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(cls._dump),
        )

    @classmethod
    def _validate(cls, value: object) -> MetricCatalog:
        if isinstance(value, MetricCatalog):
            return value
        if isinstance(value, (list, tuple)) and all(isinstance(m, MetricDef) for m in value):
            return cls.of(value)
        raise ValueError("expected a MetricCatalog or a sequence of MetricDef")

    def _dump(self) -> list[dict[str, Any]]:
        return _metric_dicts(self.specs, self.accumulator_ids)


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


class PlanShape:
    """What every plan graph of one shape shares: its nodes, numbered 0 to n - 1, its edges
    with each node's children and parents (`links`), and where each node's accumulator ids
    start in a graph's array. The runs of a repeated query log the same plan with new
    accumulator ids, so one shape serves them all; a stream's micro-batches, whose plans differ
    in a text or two (an epoch, a plan id), share their links and most nodes."""

    __slots__ = ("deltas", "links", "metrics", "nodes", "starts")

    def __init__(
        self,
        nodes: tuple[PlanNode, ...],
        links: PlanLinks,
        metrics: tuple[MetricSpec, ...] | None = None,
        starts: array[int] | None = None,
        deltas: array[int] | None = None,
    ) -> None:
        """`metrics` and `starts`, if given, are those of `nodes` (tuples and arrays equal for
        many shapes can be one); `deltas`, if given, the accumulator ids of a graph of this
        shape less the first of them."""
        if links.n_nodes != len(nodes) or any(n.node_id != i for i, n in enumerate(nodes)):
            raise ValueError("a plan shape's nodes are numbered 0 to n - 1, as its links")
        self.nodes = nodes
        self.links = links
        if metrics is None:
            metrics = tuple(m for n in nodes for m in n.metrics)
        self.metrics = metrics
        """Every node's metrics, node after node: the order of a graph's accumulator ids."""
        if starts is None:
            starts = array("q", [0])
            for n in nodes:
                starts.append(starts[-1] + len(n.metrics))
        self.starts = starts
        """Node id → where its accumulator ids start in a graph's array (one more entry: the
        number of ids)."""
        if deltas is not None and len(deltas) != len(metrics):
            raise ValueError("a plan shape's deltas are one per metric of its nodes")
        self.deltas = deltas
        """A graph's accumulator ids less the first of them, as one run logged them: Spark
        makes a plan's accumulators one after the other, so every run of a query has the same
        pattern, and a graph of this shape with it keeps only its first id."""

    @property
    def edges(self) -> tuple[PlanEdge, ...]:
        """The graph's edges, in Spark's build order."""
        return self.links.edges

    @property
    def n_metrics(self) -> int:
        """The accumulator ids a graph of this shape holds."""
        return len(self.metrics)


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
    """A physical plan as Spark's SparkPlanGraph: nodes, clusters and child→parent edges, and
    the accumulator ids of this run's metrics."""

    model_config = ConfigDict(frozen=True)

    nodes: tuple[PlanNode, ...]
    """Every node, clusters included, sorted by node id."""
    edges: tuple[PlanEdge, ...]
    """Edges in Spark's build order."""

    @model_validator(mode="after")
    def _no_metrics_without_ids(self) -> PlanGraph:
        # A validated graph has no accumulator ids to give its nodes' metrics.
        if any(n.metrics for n in self.nodes):
            raise ValueError("a graph whose nodes declare metrics is built with PlanGraph.typed")
        return self

    @classmethod
    def typed(
        cls,
        nodes: tuple[PlanNode, ...],
        edges: tuple[PlanEdge, ...],
        accumulator_ids: array[int] = _NO_IDS,
    ) -> PlanGraph:
        """Build from values already of the fields' types, without validating them again;
        `accumulator_ids` are those of every node's metrics, node after node in `nodes`' order.

        Validation would copy both tuples, and every graph would hold its own set of the names
        of the fields it was given. The replay builds its graphs with `of_shape`.
        """
        if len(accumulator_ids) != sum(len(n.metrics) for n in nodes):
            raise ValueError("a plan graph needs one accumulator id per metric of its nodes")
        graph = _PLAN_GRAPH(nodes=nodes, edges=edges)
        if accumulator_ids:
            graph.__dict__["_ids"] = accumulator_ids
        return graph

    @classmethod
    def of_shape(cls, shape: PlanShape, accumulator_ids: array[int]) -> PlanGraph:
        """The graph of one run of a plan of this shape, with the run's accumulator ids (those
        of every node's metrics, node after node).

        A log of thousands of executions holds a graph per plan version: it holds the shape's
        nodes and edges (no copies) and one set of the names of its fields for all, and finds
        each node's children, parents and accumulator ids through the shape.
        """
        if len(accumulator_ids) != shape.n_metrics:
            raise ValueError("a plan graph needs one accumulator id per metric of its nodes")
        graph = _PLAN_GRAPH(nodes=shape.nodes, edges=shape.edges)
        state = graph.__dict__
        if accumulator_ids:
            first = accumulator_ids[0]
            deltas = shape.deltas
            if deltas is not None and all(
                acc_id - first == delta
                for acc_id, delta in zip(accumulator_ids, deltas, strict=True)
            ):
                state["_first_id"] = first
            else:
                state["_ids"] = accumulator_ids
        state["_shape"] = shape
        return graph

    @model_serializer(mode="plain")
    def _dump(self) -> dict[str, Any]:
        """Dump each node with its metrics' accumulator ids, as `MetricDef`s."""
        ids = self.accumulator_ids
        return {
            "nodes": [
                {
                    "node_id": n.node_id,
                    "name": n.name,
                    "desc": n.desc,
                    "metrics": _metric_dicts(n.metrics, ids(n.node_id)),
                    "is_cluster": n.is_cluster,
                    "cluster_id": n.cluster_id,
                    "codegen_id": n.codegen_id,
                    "member_ids": list(n.member_ids),
                    "metadata": [list(pair) for pair in n.metadata],
                }
                for n in self.nodes
            ],
            "edges": [{"from_id": e.from_id, "to_id": e.to_id} for e in self.edges],
        }

    @cached_property
    def _by_id(self) -> dict[int, PlanNode]:
        return {n.node_id: n for n in self.nodes}

    @cached_property
    def _spans(self) -> dict[int, tuple[int, int]]:
        """Node id → where its accumulator ids start and end, for a graph without a shape."""
        out: dict[int, tuple[int, int]] = {}
        start = 0
        for n in self.nodes:
            end = start + len(n.metrics)
            out[n.node_id] = (start, end)
            start = end
        return out

    @cached_property
    def _children(self) -> dict[int, list[int]]:
        """Node id → its children's ids: the shape's, else made for this graph."""
        shape: PlanShape | None = self.__dict__.get("_shape")
        if shape is not None:
            return shape.links.children()
        return _children_by_id((n.node_id for n in self.nodes), self.edges)

    @cached_property
    def _parents(self) -> dict[int, list[int]]:
        """Node id → its parents' ids: the shape's, else made for this graph."""
        shape: PlanShape | None = self.__dict__.get("_shape")
        if shape is not None:
            return shape.links.parents()
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

    def accumulator_ids(self, node_id: int) -> Sequence[int]:
        """The accumulator ids of the metrics of node `node_id` in this run, in the order of
        its `metrics` (KeyError if there is no such node)."""
        state = self.__dict__
        shape: PlanShape | None = state.get("_shape")
        if shape is not None and 0 <= node_id < len(shape.nodes):
            starts = shape.starts
            start, end = starts[node_id], starts[node_id + 1]
            if start == end:
                return ()
            first: int | None = state.get("_first_id")
            if first is not None:
                assert shape.deltas is not None
                return [first + delta for delta in shape.deltas[start:end]]
        else:
            start, end = self._spans[node_id]
            if start == end:
                return ()
        ids: array[int] = state["_ids"]
        return ids[start:end]

    @property
    def all_accumulator_ids(self) -> Sequence[int]:
        """The accumulator ids of every node's metrics in this run, node after node."""
        state = self.__dict__
        first: int | None = state.get("_first_id")
        if first is not None:
            shape: PlanShape = state["_shape"]
            assert shape.deltas is not None
            return array("q", [first + delta for delta in shape.deltas])
        ids: array[int] = state.get("_ids", _NO_IDS)
        return ids

    def metrics(self, node_id: int) -> tuple[MetricDef, ...]:
        """The metrics of node `node_id` in this run, each with its accumulator id."""
        typed = MetricDef.typed
        return tuple(
            typed(m.name, acc_id, m.metric_type)
            for m, acc_id in zip(
                self._node(node_id).metrics, self.accumulator_ids(node_id), strict=True
            )
        )

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
        parents = self._parents
        return [n for n in self.nodes if not n.is_cluster and not parents[n.node_id]]

    def walk(self) -> Iterator[tuple[PlanNode, int, bool]]:
        """Yield (node, depth, already_shown) depth-first from the roots, children in order.

        A node reached a second time (a reused exchange or subquery) is yielded once more with
        `already_shown=True` and its subtree is not repeated. The walk keeps its own stack, so a
        plan of any depth is walked without recursion.
        """
        seen: set[int] = set()
        children = self._children
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
                stack.extend((child, depth + 1) for child in reversed(children[node_id]))

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


_PLAN_GRAPH = Trusted(PlanGraph)
"""Builds the graphs of `PlanGraph.typed` and `of_shape` unvalidated, with one set of field
names for all (frozen models never change it)."""
