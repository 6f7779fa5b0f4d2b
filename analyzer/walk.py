"""One walk over every string of a tree of frozen dataclasses, tuples, lists and dicts.

Report views (and the JSON report's document) are such trees. Two steps go over every string of
one just before it is laid out: redaction (`analyzer.redact`) passes each through a redactor, and
display bounds (`report.bounds`) clip each to a length its field may declare. Both use this walk,
so that what counts as "a string of the view" is decided in one place: fields of dataclasses (the
fields `__init__` takes), items of tuples and lists, keys and values of dicts, at any depth; other
values are kept as they are. The walk uses an explicit stack, never recursion: a plan of a
thousand nested operators makes a view that deep. A value derived from another field (a label
cut to fit) is a field with `init=False` set in `__post_init__`: the walk does not visit it, and
rebuilding the record derives it again from the mapped value, so it is never left derived from
the raw one. Strings are visited in order (fields in
declaration order, a dict's key before its value), which keeps tokens numbered by first sight.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

StringMap = Callable[[str, int | None], str]
"""`(text, limit) -> text`: the function a walk applies to each string; `limit` is the
`max_chars` metadata of the dataclass field holding the string directly, else None."""
StringTest = Callable[[str, int | None], bool]
"""`(text, limit) -> bool`: a question asked of each string, with `limit` as for `StringMap`."""
RecordHook = Callable[[Any, Any, StringMap], Any]
"""`(original, mapped, fn) -> record`: called on each dataclass once its fields are mapped."""

_SCALARS = frozenset({int, float, bool, type(None)})


class _Shape:
    """The fields of one dataclass type: their names, and each one's `max_chars` metadata."""

    __slots__ = ("limits", "names")

    def __init__(self, kind: type) -> None:
        fields = [f for f in dataclasses.fields(kind) if f.init]
        self.names = tuple(f.name for f in fields)
        self.limits: tuple[int | None, ...] = tuple(f.metadata.get("max_chars") for f in fields)


_SHAPES: dict[type, _Shape | None] = {}
"""The one cache of dataclass fields, by type (None: not a dataclass)."""


def _shape(kind: type) -> _Shape | None:
    found = _SHAPES.get(kind, False)
    if found is False:
        found = _Shape(kind) if dataclasses.is_dataclass(kind) else None
        _SHAPES[kind] = found
    return found  # type: ignore[return-value]


def field_names(kind: type) -> tuple[str, ...]:
    """The fields a walk visits on a dataclass type (those `__init__` takes); () for others."""
    shape = _shape(kind)
    return shape.names if shape is not None else ()


def _parts(value: Any) -> tuple[list[Any], tuple[int | None, ...] | None] | None:
    """The values directly inside `value` and, for a dataclass, each one's limit; None for a
    leaf (a scalar, a string, a container of numbers only, any other object)."""
    shape = _shape(type(value))
    if shape is not None:
        return [getattr(value, name) for name in shape.names], shape.limits
    if isinstance(value, tuple | list):
        if set(map(type, value)) <= _SCALARS:
            return None  # numbers only (per-task data): no string in it
        return list(value), None
    if isinstance(value, dict):
        return [item for pair in value.items() for item in pair], None
    return None


def any_string(root: Any, test: StringTest) -> bool:
    """Tell whether `test` holds for some string in `root` (visited as `map_strings` does).

    >>> any_string({"a": ("x", 1)}, lambda text, limit: text == "x")
    True
    """
    # `_parts` inlined: this walks every value of a page's view (tens of thousands of them).
    stack = [root]
    pop, push = stack.pop, stack.append
    scalars = _SCALARS
    shapes = _SHAPES
    while stack:
        value = pop()
        kind = type(value)
        shape = shapes[kind] if kind in shapes else _shape(kind)
        if shape is not None:
            for name, limit in zip(shape.names, shape.limits, strict=True):
                part = getattr(value, name)
                part_kind = type(part)
                if part_kind is str:
                    if test(part, limit):
                        return True
                elif part_kind not in scalars:
                    push(part)
            continue
        if isinstance(value, dict):
            items: Any = (item for pair in value.items() for item in pair)
        elif isinstance(value, tuple | list):
            items = value
        else:
            continue
        for part in items:
            part_kind = type(part)
            if part_kind is str:
                if test(part, None):
                    return True
            elif part_kind not in scalars:
                push(part)
    return False


def map_strings(root: T, fn: StringMap, record_hook: RecordHook | None = None) -> T:
    """Return `root` with every string in it replaced by `fn(text, limit)`.

    Only the containers holding a changed string are rebuilt (dataclasses with
    `dataclasses.replace`, tuples and lists as new ones, dicts as new dicts); the rest of the
    tree is returned as it was. `record_hook`, when given, sees each dataclass after its fields
    are mapped and returns the record to keep.

    >>> map_strings({"k": ["a", 2, ("b",)]}, lambda text, limit: text.upper())
    {'K': ['A', 2, ('B',)]}
    """
    # Post-order over an explicit stack of (value, its limit, children done?) frames.
    results: list[Any] = []
    stack: list[tuple[Any, int | None, bool]] = [(root, None, False)]
    while stack:
        value, limit, expanded = stack.pop()
        if type(value) is str:
            out = fn(value, limit)
            results.append(value if out == value else out)
            continue
        found = _parts(value)
        if found is None:
            results.append(value)
            continue
        parts, limits = found
        if not expanded:
            stack.append((value, limit, True))
            for i in reversed(range(len(parts))):
                stack.append((parts[i], limits[i] if limits else None, False))
            continue
        n = len(parts)
        new_parts = results[len(results) - n :] if n else []
        if n:
            del results[len(results) - n :]
        same = all(a is b for a, b in zip(new_parts, parts, strict=True))
        new = value if same else _rebuild(value, new_parts)
        if record_hook is not None and limits is not None:
            new = record_hook(value, new, fn)
        results.append(new)
    mapped: T = results[0]
    return mapped


def _rebuild(value: Any, parts: list[Any]) -> Any:
    shape = _shape(type(value))
    if shape is not None:
        return dataclasses.replace(value, **dict(zip(shape.names, parts, strict=True)))
    if isinstance(value, tuple):
        return tuple(parts)
    if isinstance(value, list):
        return parts
    return dict(zip(parts[0::2], parts[1::2], strict=True))
