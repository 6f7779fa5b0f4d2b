"""One object for every equal value: the figures of thousands of executions repeat.

The statistics, self times and task quantiles of a log of thousands of SQL executions are
hundreds of thousands of small Python objects, and most of their values repeat (zeros, the same
counts, sums and Spark strings in every run of a repeated query or micro-batch, the same task
holding the maximum of several metrics). Each aggregation that builds many of them hands its
values to one `SharedValues`, and keeps the one object it returns; a figure per plan node is
kept in a `ByNodeId` rather than a dict of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, ItemsView, Iterator, Mapping, ValuesView
from math import copysign
from typing import Any, TypeVar, cast

H = TypeVar("H", bound=Hashable)
N = TypeVar("N", bound=int | None)
V = TypeVar("V")

_ZERO = 0.0


def plain_float(value: object) -> bool:
    """Whether `value` is a float other than a negative zero: equal such floats are the same
    number, so one object can stand for all of them.

    >>> plain_float(0.0), plain_float(-0.0), plain_float(0), plain_float(2.5)
    (True, False, False, True)
    """
    return type(value) is float and (value != 0.0 or copysign(1.0, value) > 0)


class SharedValues:
    """Hands out one object for every equal value it is given.

    One pool per kind, since 1 == 1.0 == True and 0.0 == -0.0: an int never comes back as an
    equal float, nor a float as an int, and a negative zero stays itself.

    >>> shared = SharedValues()
    >>> a, b = shared.numbers((1000, None, 7)), shared.numbers((7, 1000))
    >>> a[0] is b[1], shared.one((1, 2)) is shared.one((1, 2))
    (True, True)
    >>> shared.real(1.0), shared.real(-0.0), shared.numbers((1.0,))
    (1.0, -0.0, (1.0,))
    """

    def __init__(self) -> None:
        self._ints: dict[int, int] = {}
        self._floats: dict[float, float] = {}
        self._objects: dict[Hashable, Hashable] = {}

    def number(self, value: int | None) -> int | None:
        """The one object of this int (None and anything not an int as they are)."""
        if type(value) is not int:
            return value
        return self._ints.setdefault(value, value)

    def numbers(self, values: tuple[N, ...]) -> tuple[N, ...]:
        """The values, each int the one object of its value (the tuple itself a new one)."""
        ints = cast(dict[N, N], self._ints)
        return tuple([ints.setdefault(v, v) if type(v) is int else v for v in values])

    def real(self, value: float) -> float:
        """The one object of this float (a negative zero, and anything not a float, as is)."""
        if not plain_float(value):
            return value
        return self._floats.setdefault(value, value) if value else _ZERO

    def made(self, kind: type[H], fields: tuple[Any, ...], make: Callable[[Any], H]) -> H:
        """The one object of type `kind` made from these field values by `make`: made the
        first time, found by the values after (no object is built to look it up)."""
        key = (kind, fields)
        found = self._objects.get(key)
        if found is None:
            found = self._objects[key] = make(fields)
        return found  # type: ignore[return-value]

    def one(self, value: H) -> H:
        """The one object equal to `value` and of its type: a string, a frozen record, a tuple of
        ints, strings and None (a tuple of floats would be equal to one of ints)."""
        key = (type(value), value)
        return self._objects.setdefault(key, value)  # type: ignore[return-value]


class ByNodeId(Mapping[int, V]):
    """A read-only mapping from node ids 0 to n - 1 to values, held as one tuple.

    Every plan graph the replay builds numbers its nodes 0 to n - 1, so a per-node figure of
    every execution needs no dict of its own (a dict of ten entries is four times the size of a
    tuple of ten). Reads like the dict it replaces, its repr too.

    >>> table = ByNodeId(("a", "b"))
    >>> table[1], table.get(2), list(table.items()), table
    ('b', None, [(0, 'a'), (1, 'b')], {0: 'a', 1: 'b'})
    """

    __slots__ = ("_values",)

    def __init__(self, values: tuple[V, ...]) -> None:
        self._values = values

    def __getitem__(self, node_id: int) -> V:
        if type(node_id) is int and 0 <= node_id < len(self._values):
            return self._values[node_id]
        raise KeyError(node_id)

    def get(self, node_id: int, default: Any = None) -> Any:
        """The value of `node_id`, else `default`."""
        if type(node_id) is int and 0 <= node_id < len(self._values):
            return self._values[node_id]
        return default

    def __contains__(self, node_id: object) -> bool:
        return type(node_id) is int and 0 <= node_id < len(self._values)

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._values)))

    def __len__(self) -> int:
        return len(self._values)

    def values(self) -> ValuesView[V]:
        """The values in node id order (iterated off the tuple)."""
        return _Values(self)

    def items(self) -> ItemsView[int, V]:
        """(node id, value) pairs in node id order (iterated off the tuple)."""
        return _Items(self)

    def __repr__(self) -> str:
        return repr(dict(enumerate(self._values)))


class _Values(ValuesView[V]):
    """A `ByNodeId`'s values, iterated without looking each one up."""

    __slots__ = ("_tuple",)

    def __init__(self, table: ByNodeId[V]) -> None:
        super().__init__(table)
        self._tuple = table._values

    def __iter__(self) -> Iterator[V]:
        return iter(self._tuple)


class _Items(ItemsView[int, V]):
    """A `ByNodeId`'s items, iterated without looking each one up."""

    __slots__ = ("_tuple",)

    def __init__(self, table: ByNodeId[V]) -> None:
        super().__init__(table)
        self._tuple = table._values

    def __iter__(self) -> Iterator[tuple[int, V]]:
        return enumerate(self._tuple)


def by_node_id(values: dict[int, V]) -> Mapping[int, V]:
    """`values` as a `ByNodeId` when its keys are 0 to n - 1 in order, else as it is."""
    if all(key == i for i, key in enumerate(values)):
        return ByNodeId(tuple(values.values()))
    return values
