"""Pair the operators of two runs' plans: node ids differ between runs, places in the tree do not.

Three passes (docs/diff.md#matching-nodes):

1. **By position.** Both canonical trees are walked from their roots together. The children of
   two paired operators are aligned in order by operator family (a `BroadcastHashJoin` pairs with
   a `SortMergeJoin`: a switched join), looking through the operators that only move or order
   data (exchanges, local sorts, shuffle reads); those are paired along the way when both plans
   have them at that place.
2. **By name and description**, among the operators still unpaired, in tree order.
3. **By name and children**: an unpaired operator pairs with one of the same name whose
   children are paired with its children.

Whatever is left was added (candidate only) or removed (baseline only).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from analyzer.aggregate.fingerprint import CanonNode, family, is_transparent

MAX_ALIGN_CELLS = 1_000_000
"""Above this many child pairs (a union of thousands of inputs), children pair by position."""


@dataclass(frozen=True)
class NodeMatch:
    """How the operators of two plans pair up, by plan-graph node id."""

    pairs: tuple[tuple[int, int], ...]
    """(baseline node id, candidate node id), in the candidate's tree order."""
    removed: tuple[int, ...]
    """Baseline node ids with no partner, in tree order."""
    added: tuple[int, ...]
    """Candidate node ids with no partner, in tree order."""


def _align(left: Sequence[Hashable], right: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Longest common subsequence of two key lists, as pairs of positions in order.

    >>> _align(["Join", "Filter"], ["Filter"])
    [(1, 0)]
    """
    n, m = len(left), len(right)
    if n == 0 or m == 0:
        return []
    if n * m > MAX_ALIGN_CELLS:
        return [(i, i) for i in range(min(n, m)) if left[i] == right[i]]
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if left[i] == right[j] else max(below[j], row[j + 1])
    out = []
    i = j = 0
    while i < n and j < m:
        if left[i] == right[j]:
            out.append((i, j))
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


def _logical_children(tree: Sequence[CanonNode], index: int) -> list[tuple[int, tuple[int, ...]]]:
    """Return the first operators below `index` that are not transparent, each with the chain of
    transparent ones above it."""
    out: list[tuple[int, tuple[int, ...]]] = []
    stack: list[tuple[int, tuple[int, ...]]] = [(c, ()) for c in reversed(tree[index].children)]
    while stack:
        child, chain = stack.pop()
        node = tree[child]
        if is_transparent(node.name, node.desc) and not node.is_reference and node.children:
            stack.extend((c, (*chain, child)) for c in reversed(node.children))
        else:
            out.append((child, chain))
    return out


def _roots(tree: Sequence[CanonNode]) -> list[int]:
    return [n.index for n in tree if n.parent is None]


def match_nodes(base: Sequence[CanonNode], cand: Sequence[CanonNode]) -> NodeMatch:
    """Pair the operators of two canonical trees (see the module's docstring)."""
    paired_b: dict[int, int] = {}  # baseline index → candidate index
    paired_c: dict[int, int] = {}

    def pair(b: int, c: int) -> None:
        if b in paired_b or c in paired_c:
            return
        paired_b[b] = c
        paired_c[c] = b

    def key(tree: Sequence[CanonNode], i: int) -> Hashable:
        node = tree[i]
        return ("ref", node.name) if node.is_reference else family(node.name)

    def align(left: Sequence[int], right: Sequence[int], by_name: bool) -> list[tuple[int, int]]:
        kl = [base[i].name if by_name else key(base, i) for i in left]
        kr = [cand[i].name if by_name else key(cand, i) for i in right]
        return [(left[x], right[y]) for x, y in _align(kl, kr)]

    # 1. By position, from the roots down.
    stack: list[tuple[int, int]] = []
    for b, c in align(_roots(base), _roots(cand), by_name=False):
        pair(b, c)
        stack.append((b, c))
    while stack:
        b, c = stack.pop()
        if base[b].is_reference or cand[c].is_reference:
            continue
        below_b = _logical_children(base, b)
        below_c = _logical_children(cand, c)
        chains_b = dict(below_b)
        chains_c = dict(below_c)
        for x, y in align([i for i, _ in below_b], [i for i, _ in below_c], by_name=False):
            if x in paired_b or y in paired_c:
                continue
            pair(x, y)
            for u, v in align(chains_b[x], chains_c[y], by_name=True):
                pair(u, v)
            stack.append((x, y))

    # 2. By name and normalized description, in tree order.
    waiting: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n in base:
        if n.index not in paired_b and not n.is_reference:
            waiting[(n.name, n.desc)].append(n.index)
    for n in cand:
        if n.index in paired_c or n.is_reference:
            continue
        queue = waiting.get((n.name, n.desc))
        while queue and queue[0] in paired_b:
            queue.pop(0)
        if queue:
            pair(queue.pop(0), n.index)

    # 3. By name and paired children.
    by_name: dict[str, list[int]] = defaultdict(list)
    for n in base:
        if n.index not in paired_b and not n.is_reference and n.children:
            by_name[n.name].append(n.index)
    for n in cand:
        if n.index in paired_c or n.is_reference or not n.children:
            continue
        partners = {paired_c.get(ch) for ch in n.children}
        if None in partners:
            continue
        for b in by_name.get(n.name, []):
            if b not in paired_b and set(base[b].children) == partners:
                pair(b, n.index)
                break

    pairs = tuple(
        (base[paired_c[c.index]].node_id, c.node_id)
        for c in cand
        if c.index in paired_c and not c.is_reference and not base[paired_c[c.index]].is_reference
    )
    removed = tuple(n.node_id for n in base if n.index not in paired_b and not n.is_reference)
    added = tuple(n.node_id for n in cand if n.index not in paired_c and not n.is_reference)
    return NodeMatch(pairs=pairs, removed=removed, added=added)
