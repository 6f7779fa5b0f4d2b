"""Tidy layered layout of a plan graph whose codegen clusters never overlap.

A plan is nearly a tree: every operator feeds one consumer except reused exchanges and
subqueries. The layout takes the spanning tree a depth-first walk from the outputs meets (a
reused operator is placed under its first consumer; its other edges are drawn as they fall),
puts each operator on the row of its depth (the output at the bottom, inputs above it), and
packs subtrees side by side as Reingold and Tilford's tidy trees do: per row, the leftmost and
rightmost x a subtree takes (its contour), and a sibling goes as close as the contours allow.

Codegen clusters are laid out as blocks: a cluster's operators first, as a small tidy tree of
their own, then its box (operators, padding and label) is one solid rectangle over all its rows,
and the inputs that come from outside the cluster are packed around that rectangle, nearest
first, directly above the operator that reads them when there is room. Since every block and
subtree is placed clear of the contour of everything already placed, no two boxes overlap.

The walks keep their own stacks and contours merge small into large, so a plan of any depth or
width lays out in about O(n log n).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

NODE_WIDTH = 196
NODE_HEIGHT = 46
LAYER_HEIGHT = 92
"""Vertical distance between two rows: leaves room for a cluster's label between them."""
GAP = 18
"""Horizontal space between two boxes (operators or cluster boxes)."""
MARGIN = 24
CLUSTER_PAD = 10
CLUSTER_LABEL = 18
"""Height of a cluster's label line, above its top operator."""


@dataclass(frozen=True)
class Box:
    """A rectangle in SVG pixels."""

    x: float
    y: float
    width: float
    height: float

    def overlaps(self, other: Box) -> bool:
        """True when the two rectangles share more than an edge."""
        return (
            self.x < other.x + other.width
            and other.x < self.x + self.width
            and self.y < other.y + other.height
            and other.y < self.y + self.height
        )


@dataclass(frozen=True)
class Layout:
    """Where every operator and cluster box goes."""

    nodes: dict[int, Box]
    """Operator boxes by node id."""
    groups: tuple[tuple[int, Box], ...]
    """Cluster boxes: (cluster id, box); a cluster whose operators are not connected in the
    spanning tree gets one box per connected part."""
    tree_parent: dict[int, int]
    """The consumer under which each operator was placed (absent for the outputs)."""
    width: float
    height: float


class _Contour:
    """Per row, the leftmost and rightmost x a subtree takes, stored relative to `base`."""

    __slots__ = ("base", "rows")

    def __init__(self) -> None:
        self.rows: dict[int, list[float]] = {}
        self.base = 0.0

    def add(self, row: int, left: float, right: float) -> None:
        """Take [left, right] on `row` (in the owner's frame)."""
        lo, hi = left - self.base, right - self.base
        cur = self.rows.get(row)
        if cur is None:
            self.rows[row] = [lo, hi]
        else:
            cur[0] = min(cur[0], lo)
            cur[1] = max(cur[1], hi)


def _clearances(acc: _Contour, child: _Contour) -> tuple[float, float]:
    """Offsets at which `child` clears `acc`: it must lie at or right of the first, or at or
    left of the second, on every row both take (±inf when they share no row)."""
    need_right, need_left = -math.inf, math.inf
    small, large = (child, acc) if len(child.rows) <= len(acc.rows) else (acc, child)
    for row, (a, b) in small.rows.items():
        other = large.rows.get(row)
        if other is None:
            continue
        if small is child:
            cl, cr = a + child.base, b + child.base
            al, ar = other[0] + acc.base, other[1] + acc.base
        else:
            al, ar = a + acc.base, b + acc.base
            cl, cr = other[0] + child.base, other[1] + child.base
        need_right = max(need_right, ar + GAP - cl)
        need_left = min(need_left, al - GAP - cr)
    return need_right, need_left


def _place(acc: _Contour, child: _Contour, ideal: float, right_only: bool) -> float:
    """The offset nearest `ideal` at which `child` clears `acc` (only to the right, if asked)."""
    need_right, need_left = _clearances(acc, child)
    if ideal >= need_right or (ideal <= need_left and not right_only):
        return ideal
    right = max(ideal, need_right)
    if right_only:
        return right
    left = min(ideal, need_left)
    return right if right - ideal <= ideal - left else left


def _merge(acc: _Contour, child: _Contour, offset: float) -> _Contour:
    """Add `child`, shifted by `offset`, to `acc`; the larger of the two is reused."""
    if len(child.rows) > len(acc.rows):
        child.base += offset
        for row, (lo, hi) in acc.rows.items():
            child.add(row, lo + acc.base, hi + acc.base)
        return child
    for row, (lo, hi) in child.rows.items():
        acc.add(row, lo + child.base + offset, hi + child.base + offset)
    return acc


def _spanning_tree(
    node_ids: Sequence[int], children: Callable[[int], Sequence[int]]
) -> tuple[list[int], dict[int, int], dict[int, list[int]], dict[int, int], list[int]]:
    """Walk depth first from the outputs (nodes no other node reads), then from anything left.

    Returns the pre-order, the depth of each node, its tree children, its tree parent, and the
    roots of the walk.
    """
    known = set(node_ids)
    has_parent: set[int] = set()
    for n in node_ids:
        has_parent.update(c for c in children(n) if c in known)
    starts = [n for n in node_ids if n not in has_parent] + list(node_ids)
    order: list[int] = []
    depth: dict[int, int] = {}
    tree_children: dict[int, list[int]] = {n: [] for n in node_ids}
    tree_parent: dict[int, int] = {}
    roots: list[int] = []
    for start in starts:
        if start in depth:
            continue
        roots.append(start)
        depth[start] = 0
        stack = [start]
        while stack:
            node = stack.pop()
            order.append(node)
            fresh = []
            for c in children(node):
                if c in known and c not in depth:
                    depth[c] = depth[node] + 1
                    tree_parent[c] = node
                    tree_children[node].append(c)
                    fresh.append(c)
            stack.extend(reversed(fresh))
    return order, depth, tree_children, tree_parent, roots


def layout_graph(
    node_ids: Sequence[int],
    children: Callable[[int], Sequence[int]],
    group_of: Mapping[int, int],
    label_width: Mapping[int, float],
) -> Layout:
    """Lay out operators `node_ids` whose inputs are `children(id)` (in plan order).

    `group_of` maps an operator to its codegen cluster (absent: none), `label_width` the
    cluster to the width its label needs. Inputs are drawn above their consumer.
    """
    order, depth, tree_children, tree_parent, roots = _spanning_tree(node_ids, children)
    block_root: dict[int, int] = {}
    for n in order:  # parents come before their children in pre-order
        parent = tree_parent.get(n)
        group = group_of.get(n)
        if parent is not None and group is not None and group_of.get(parent) == group:
            block_root[n] = block_root[parent]
        else:
            block_root[n] = n
    members: dict[int, list[int]] = {}
    for n in order:
        members.setdefault(block_root[n], []).append(n)

    rel_x: dict[int, float] = {}
    """A member's x relative to its parent member (block-internal tidy tree)."""
    x_in_block: dict[int, float] = {}
    """A member's x in its block's frame (the block root at 0)."""
    block_offset: dict[int, float] = {}
    """A block root's x relative to the frame of the block it hangs off."""
    block_contour: dict[int, _Contour] = {}
    inner: dict[int, _Contour] = {}
    group_boxes: list[tuple[int, int, float, float, int, int]] = []
    """(cluster, block root, left, right, first row, last row) in the block's frame."""

    reach_row: dict[int, int] = {}
    """The deepest row of each operator's subtree."""
    for n in reversed(order):
        reach_row[n] = max((reach_row[c] for c in tree_children[n]), default=depth[n])
        root = block_root[n]
        # 1. The block-internal tidy tree: n over its children of the same block.
        inside = [c for c in tree_children[n] if block_root[c] == root]
        acc: _Contour | None = None
        offsets: list[float] = []
        for c in inside:
            contour = inner.pop(c)
            if acc is None:
                acc, off = contour, 0.0
            else:
                off = _place(acc, contour, -math.inf, right_only=True)
                acc = _merge(acc, contour, off)
            offsets.append(off)
        centre = (offsets[0] + offsets[-1]) / 2 if offsets else 0.0
        for c, off in zip(inside, offsets, strict=True):
            rel_x[c] = off - centre
        if acc is None:
            acc = _Contour()
        acc.base -= centre
        acc.add(depth[n], 0.0, NODE_WIDTH)
        if n != root:
            inner[n] = acc
            continue
        # 2. The block is complete: fix its members' x and take its rectangle.
        block = members[root]
        x_in_block[root] = 0.0
        for m in block[1:]:
            x_in_block[m] = x_in_block[tree_parent[m]] + rel_x[m]
        shape = _Contour()
        if len(block) > 1 or root in group_of:
            left = min(x_in_block[m] for m in block) - CLUSTER_PAD
            right = max(x_in_block[m] for m in block) + NODE_WIDTH + CLUSTER_PAD
            right = max(right, left + label_width.get(group_of[root], 0.0))
            top = max(depth[m] for m in block)
            for row in range(depth[root], top + 1):
                shape.add(row, left, right)
            group_boxes.append((group_of[root], root, left, right, depth[root], top))
        else:
            shape.add(depth[root], 0.0, NODE_WIDTH)
        # 3. Inputs from outside the block, packed around it.
        placed: list[tuple[int, float]] = []
        for m in block:
            first = True
            for c in tree_children[m]:
                if block_root[c] != c or c == root:
                    continue
                contour = block_contour.pop(c)
                off = _place(shape, contour, x_in_block[m], right_only=not first)
                shape = _merge(shape, contour, off)
                block_offset[c] = off
                placed.append((c, off))
                first = False
        # 4. An operator alone goes over its deepest input, the plan's main line, or centred
        # over its inputs when none is deepest (its row holds nothing else).
        if len(block) == 1 and root not in group_of and placed:
            reach = sorted(((reach_row[c], off) for c, off in placed), reverse=True)
            if len(reach) > 1 and reach[0][0] == reach[1][0]:
                shift = (min(o for _, o in placed) + max(o for _, o in placed)) / 2
            else:
                shift = reach[0][1]
            shape.rows[depth[root]] = [shift - shape.base, shift + NODE_WIDTH - shape.base]
            for c in tree_children[root]:
                if c in block_offset:
                    block_offset[c] -= shift
            shape.base -= shift
        block_contour[root] = shape

    # The outputs side by side, left to right.
    top_offset: dict[int, float] = {}
    acc_all: _Contour | None = None
    for r in roots:
        contour = block_contour.pop(r)
        if acc_all is None:
            acc_all, off = contour, 0.0
        else:
            off = _place(acc_all, contour, -math.inf, right_only=True)
            acc_all = _merge(acc_all, contour, off)
        top_offset[r] = off

    frame_x: dict[int, float] = {}
    """Absolute x of each block's frame."""
    for n in order:
        if block_root[n] != n:
            continue
        if n in top_offset:
            frame_x[n] = top_offset[n]
        else:
            parent_block = block_root[tree_parent[n]]
            frame_x[n] = frame_x[parent_block] + block_offset[n]
    xs = {n: frame_x[block_root[n]] + x_in_block[n] for n in order}
    lefts = [x for x in xs.values()]
    lefts += [frame_x[root] + left for _, root, left, _, _, _ in group_boxes]
    shift_x = MARGIN - min(lefts, default=0.0)
    max_depth = max(depth.values(), default=0)

    def row_y(row: int) -> float:
        return MARGIN + CLUSTER_LABEL + CLUSTER_PAD + (max_depth - row) * LAYER_HEIGHT

    nodes = {n: Box(xs[n] + shift_x, row_y(depth[n]), NODE_WIDTH, NODE_HEIGHT) for n in order}
    groups = tuple(
        (
            group,
            Box(
                frame_x[root] + left + shift_x,
                row_y(top) - CLUSTER_PAD - CLUSTER_LABEL,
                right - left,
                (top - first) * LAYER_HEIGHT + NODE_HEIGHT + 2 * CLUSTER_PAD + CLUSTER_LABEL,
            ),
        )
        for group, root, left, right, first, top in group_boxes
    )
    boxes = list(nodes.values()) + [b for _, b in groups]
    width = max((b.x + b.width for b in boxes), default=0.0) + MARGIN
    height = max((b.y + b.height for b in boxes), default=0.0) + MARGIN
    return Layout(nodes=nodes, groups=groups, tree_parent=tree_parent, width=width, height=height)
