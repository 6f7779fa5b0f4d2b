"""One object for every equal value: the figures of thousands of executions repeat.

The statistics, self times and task quantiles of a log of thousands of SQL executions are
hundreds of thousands of small Python objects, and most of their values repeat (zeros, the same
counts, sums and Spark strings in every run of a repeated query or micro-batch, the same task
holding the maximum of several metrics). Each aggregation that builds many of them hands its
values to one `SharedValues`, and keeps the one object it returns.
"""

from __future__ import annotations

from collections.abc import Hashable
from math import copysign
from typing import TypeVar, cast

H = TypeVar("H", bound=Hashable)
N = TypeVar("N", bound=int | None)

_ZERO = 0.0


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
        if type(value) is not float:
            return value
        if value:
            return self._floats.setdefault(value, value)
        return _ZERO if copysign(1.0, value) > 0 else value

    def one(self, value: H) -> H:
        """The one object equal to `value` and of its type: a string, a frozen record, a tuple of
        ints, strings and None (a tuple of floats would be equal to one of ints)."""
        key = (type(value), value)
        return self._objects.setdefault(key, value)  # type: ignore[return-value]
