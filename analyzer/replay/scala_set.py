"""Iteration order of Scala 2.13's immutable `Set[Int]`, which decides Spark's max-task ties.

Spark's SQL listener collects an execution's stage ids into an immutable Set and walks it when
it picks the task that holds a metric's maximum; where stages tie, the first in this order wins.
Up to four elements the set keeps insertion order (Set1..Set4); beyond that it is a CHAMP hash
trie whose order depends only on the elements' improved hashes.
"""

from __future__ import annotations

from collections.abc import Iterable

_MASK32 = 0xFFFFFFFF


def _improve(x: int) -> int:
    """Scala's `Hashing.improve` on a 32-bit Int hash code, as an unsigned 32-bit value."""
    h = x & _MASK32
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    h ^= h >> 10
    return h


def _champ_order(elems: list[int], shift: int) -> list[int]:
    """Order of `elems` in a CHAMP node at `shift`: own payload by fragment, then sub-nodes."""
    if shift >= 35 or len(elems) <= 1:
        return list(elems)
    groups: dict[int, list[int]] = {}
    for e in elems:
        groups.setdefault((_improve(e) >> shift) & 31, []).append(e)
    payload = [g[0] for _, g in sorted(groups.items()) if len(g) == 1]
    out = list(payload)
    for _, g in sorted(groups.items()):
        if len(g) > 1:
            out.extend(_champ_order(g, shift + 5))
    return out


class ScalaIntSet:
    """An insertion-tracking set of ints that iterates like Scala 2.13's immutable Set."""

    def __init__(self) -> None:
        self._items: list[int] = []
        self._members: set[int] = set()

    def add_all(self, values: Iterable[int]) -> None:
        """Add values as `set ++ values.toSet` does (duplicates ignored)."""
        for v in dict.fromkeys(values):
            if v not in self._members:
                self._members.add(v)
                self._items.append(v)

    def __contains__(self, value: object) -> bool:
        return value in self._members

    def members(self) -> set[int]:
        """Return the elements as a plain set (no order)."""
        return self._members

    def inserted(self) -> list[int]:
        """Return the elements in the order first added (`add_all` of them rebuilds the set)."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def ordered(self) -> list[int]:
        """Return the elements in Scala's iteration order."""
        if len(self._items) <= 4:
            return list(self._items)
        return _champ_order(sorted(self._items), 0)
