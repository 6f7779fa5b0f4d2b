"""A plan as a canonical tree, and its fingerprints: what makes two runs' queries the same query.

Spark numbers expressions (`amount#33`), exchanges (`[plan_id=518]`) and subqueries afresh in
every run, so two runs of one query never print the same plan. The canonical tree drops those
numbers and the nodes that only wrap others (`AdaptiveSparkPlan`, `InputAdapter`, query stages);
it keeps literals, so `Range (0, 4000000, …)` and `Range (0, 1000000, …)` differ. Two
fingerprints come from it (docs/diff.md#matching-executions):

- the **plan fingerprint**: every operator's name and normalized description, in tree order;
- the **shape fingerprint**: the logical skeleton only: join strategies folded into `Join`,
  aggregate strategies into `Aggregate`, the operators that only move or order data for another
  (exchanges, local sorts, shuffle reads, row/column conversions) left out, and no descriptions.
  A query whose join became a sort-merge join, or whose literals changed, keeps its shape.

The walk keeps its own stack: a plan of any depth is handled without recursion.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from analyzer.model.plan import PlanGraph

WRAPPERS = frozenset(
    {
        "AdaptiveSparkPlan",
        "InputAdapter",
        "WholeStageCodegen",
        "ShuffleQueryStage",
        "BroadcastQueryStage",
        "TableCacheQueryStage",
        "ResultQueryStage",
    }
)
"""Operators that only wrap their child: left out of the canonical tree. An AQE run's initial
plan is wrapped in `AdaptiveSparkPlan`; the same query run without AQE is not."""

TRANSPARENT = frozenset(
    {
        "Exchange",
        "BroadcastExchange",
        "AQEShuffleRead",
        "CustomShuffleReader",
        "ReusedExchange",
        "ColumnarToRow",
        "RowToColumnar",
        "GpuColumnarToRow",
        "GpuRowToColumnar",
        "GpuShuffleCoalesce",
        "GpuCoalesceBatches",
        "GpuColumnarExchange",
        "GpuBroadcastExchange",
    }
)
"""Operators that move or convert data for another one: left out of the shape, and looked
through when aligning two plans. A local `Sort` (one a join or window needs) is one too."""

_EXPR_ID = re.compile(r"#\d+L?\b")
_PLAN_ID = re.compile(r",?\s*\[plan_id=\d+\]")
_EPOCH = re.compile(r"(MicroBatchWrite\[epoch: )\d+")
_STATE_INFO = re.compile(r"(runId = )[0-9a-f-]{36}|(ver = )\d+")
_STATE_WATERMARKS = re.compile(r"\b(Append|Update|Complete), -?\d+, -?\d+")
_JVM_OBJECT = re.compile(r"(\$\$Lambda)\$\d+/0x[0-9a-f]+|(\$?@)[0-9a-f]{1,8}\b")
_SPACES = re.compile(r"\s+")
_DIGITS = re.compile(r"\d+")
UUID_TEXT = r"(?<![0-9A-Za-z])[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}(?![0-9A-Za-z])"
"""A UUID not inside a longer run of letters and digits (`job_<uuid>` has one): the pattern that
execution descriptions and batch's job keys fold."""
_UUID = re.compile(UUID_TEXT)
_LOCAL_SORT = re.compile(r"\],\s*false,\s*\d+\s*$")


def normalize_desc(desc: str) -> str:
    """Return an operator description without Spark's per-run numbers, whitespace folded.

    >>> normalize_desc("Exchange hashpartitioning(id#31L, 200), ENSURE_REQUIREMENTS, [plan_id=518]")
    'Exchange hashpartitioning(id, 200), ENSURE_REQUIREMENTS'
    >>> normalize_desc("Subquery subquery#45, [id=#123]")
    'Subquery subquery, [id=]'

    A streaming query numbers its micro-batches in the write (`epoch`) and the state store
    versions (`ver`), gives each run of the query a new `runId`, and puts the batch's watermarks
    in a stateful operator's description: every batch would be a different plan.

    >>> normalize_desc("WriteToDataSourceV2 MicroBatchWrite[epoch: 12, writer: NoopStreamingWrite]")
    'WriteToDataSourceV2 MicroBatchWrite[epoch: , writer: NoopStreamingWrite]'

    Spark 3.5 prints the write's objects with their JVM identity hashes, new every batch:

    >>> normalize_desc("MicroBatchWrite[epoch: 3, writer: noop.NoopStreamingWrite$@617eaf2d], "
    ...     "v2.DataSourceV2Strategy$$Lambda$3906/0x00007f90390cb050@66a1d6ed")
    'MicroBatchWrite[epoch: , writer: noop.NoopStreamingWrite$@], v2.DataSourceV2Strategy$$Lambda@'
    >>> normalize_desc("StateStoreSave [page_id#7], state info [ checkpoint = file:/c, "
    ...     "runId = 1fd651fa-972e-4937-aef6-d31b59d07c03, opId = 0, ver = 3, numPartitions = 2]"
    ...     " Append, 1795620240000, 1795620239000, 2").split("[ ")[1]
    'checkpoint = file:/c, runId = , opId = 0, ver = , numPartitions = 2] Append, , , 2'
    """
    text = _PLAN_ID.sub("", desc)
    text = _EXPR_ID.sub("", text)
    if "MicroBatchWrite[" in text:
        text = _EPOCH.sub(r"\1", text)
    if "@" in text:
        text = _JVM_OBJECT.sub(lambda m: m.group(1) or m.group(2), text)
    if "state info [" in text:
        text = _STATE_INFO.sub(lambda m: m.group(1) or m.group(2), text)
        text = _STATE_WATERMARKS.sub(r"\1, , ", text)
    return _SPACES.sub(" ", text).strip()


def normalize_description(description: str) -> str:
    """Return an execution description with UUIDs and digit runs folded and whitespace
    collapsed, so that `load 2024-01-01` and `load 2024-01-02` compare equal, and so do two runs'
    micro-batches (`q id = <uuid> runId = <uuid> batch = 3`).

    >>> normalize_description("nightly  load 2024-01-01")
    'nightly load 0-0-0'
    >>> normalize_description("q id = 1679caa7-207d-4da7-92ee-4b60f8bc6f53 batch = 12")
    'q id = <id> batch = 0'
    """
    return _DIGITS.sub("0", _UUID.sub("<id>", _SPACES.sub(" ", description).strip()))


def family(name: str) -> str:
    """Return the operator family two plans are aligned by: join and aggregate strategies fold.

    >>> family("BroadcastHashJoin"), family("SortMergeJoin"), family("ObjectHashAggregate")
    ('Join', 'Join', 'Aggregate')
    >>> family("Filter")
    'Filter'
    """
    bare = name.removeprefix("Gpu")
    if bare.endswith("Join") or bare == "CartesianProduct":
        return "Join"
    if bare.endswith("Aggregate"):
        return "Aggregate"
    return name


def is_join(name: str) -> bool:
    """Return True for a join operator of any strategy."""
    return family(name) == "Join"


def is_transparent(name: str, desc: str) -> bool:
    """Return True for an operator that only moves, converts or locally orders another's data.

    >>> is_transparent("Sort", "Sort [customer_id#31L ASC NULLS FIRST], false, 0")
    True
    >>> is_transparent("Sort", "Sort [total#9 DESC NULLS LAST], true, 0")
    False
    """
    if name in TRANSPARENT:
        return True
    return name in ("Sort", "GpuSort") and bool(_LOCAL_SORT.search(desc))


@dataclass(frozen=True)
class CanonNode:
    """One operator of a canonical tree (pre-order position `index`)."""

    index: int
    node_id: int
    """The operator's id in its plan graph."""
    name: str
    desc: str
    """Its description, normalized (`normalize_desc`)."""
    depth: int
    parent: int | None
    """Pre-order index of its parent in the canonical tree, None for a root."""
    children: tuple[int, ...]
    """Pre-order indexes of its children, in Spark's order."""
    is_reference: bool
    """A second reference to an operator met before (a reused exchange or subquery): it has
    no children here, and `node_id` is the operator's."""


def canonical_tree(graph: PlanGraph) -> tuple[CanonNode, ...]:
    """Return a plan's operators in pre-order with wrappers left out and descriptions normalized.

    A wrapper's children take its place under its parent. A node met a second time is a
    reference without children.
    """
    # (node id, name, normalized description, depth, parent index, is a reference)
    rows: list[tuple[int, str, str, int, int | None, bool]] = []
    children: list[list[int]] = []
    seen: set[int] = set()
    # (node id, parent index, depth)
    stack: list[tuple[int, int | None, int]] = [
        (root.node_id, None, 0) for root in reversed(graph.roots)
    ]
    while stack:
        node_id, parent, depth = stack.pop()
        node = graph.node(node_id)
        again = node_id in seen
        seen.add(node_id)
        if node.name in WRAPPERS and not again:
            for child in reversed(graph.children_of(node_id)):
                stack.append((child.node_id, parent, depth))
            continue
        index = len(rows)
        rows.append((node_id, node.name, normalize_desc(node.desc), depth, parent, again))
        children.append([])
        if parent is not None:
            children[parent].append(index)
        if not again:
            for child in reversed(graph.children_of(node_id)):
                stack.append((child.node_id, index, depth + 1))
    return tuple(
        CanonNode(
            index=i,
            node_id=node_id,
            name=name,
            desc=desc,
            depth=depth,
            parent=parent,
            children=tuple(children[i]),
            is_reference=again,
        )
        for i, (node_id, name, desc, depth, parent, again) in enumerate(rows)
    )


def _digest(lines: list[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()[:16]


def plan_fingerprint(tree: tuple[CanonNode, ...]) -> str:
    """Return the fingerprint of a canonical tree: operators, descriptions and their places."""
    by_node: dict[int, int] = {}
    lines = []
    for n in tree:
        if n.is_reference:
            lines.append(f"{n.depth} ref {by_node.get(n.node_id, -1)}")
            continue
        by_node[n.node_id] = n.index
        lines.append(f"{n.depth} {n.name} {n.desc}")
    return _digest(lines)


def shape_fingerprint(tree: tuple[CanonNode, ...]) -> str:
    """Return the fingerprint of a plan's logical skeleton (see the module's docstring)."""
    lines = []
    # The depth of a node in the shape: its canonical depth less the transparent nodes above it.
    hidden_above: dict[int, int] = {}
    for n in tree:
        above = 0 if n.parent is None else hidden_above[n.parent]
        hidden = is_transparent(n.name, n.desc) and not n.is_reference
        hidden_above[n.index] = above + (1 if hidden else 0)
        if hidden:
            continue
        name = "ref" if n.is_reference else family(n.name)
        lines.append(f"{n.depth - above} {name}")
    return _digest(lines)
