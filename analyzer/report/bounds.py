"""Display bounds: every string a text or HTML report shows has a bounded length, and shows
the characters that cannot be seen (bidi overrides, tag characters, fillers) as escapes.

Strings in a log are written by whoever submits the job and can be megabytes long (an app name,
a host, a metric name). Shown whole they make reports of hundreds of megabytes, and wrapping
them takes minutes; so the text and HTML views are clipped in one pass, after they are built and
before they are laid out. A value is clipped to `DISPLAY_CHARS`, or to the `max_chars` its view
field declares in its metadata (Spark's physical plan text is long by nature). The JSON report
keeps every value whole.

The same pass writes invisible and reordering characters visibly (`units.show_invisible`), so
the HTML page, whose values a browser would otherwise lay out right to left or hide, shows them
as the text and Markdown reports do.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from analyzer.units import has_invisible, show_invisible

DISPLAY_CHARS = 10_000
"""The most characters of one value a text or HTML report shows, unless its field says more."""
LONG_TEXT_CHARS = 4_000_000
"""`max_chars` of fields meant for long text (a physical plan description)."""

T = TypeVar("T")
_SCALARS = frozenset({int, float, bool, type(None)})


def long_text() -> dict[str, int]:
    """Field metadata of a view field that may hold up to `LONG_TEXT_CHARS` characters."""
    return {"max_chars": LONG_TEXT_CHARS}


def clip_display(text: str, limit: int = DISPLAY_CHARS) -> str:
    """Return `text`, or its first `limit` characters and how many more there were.

    >>> clip_display("abcdef", 3)
    'abc… (3 more characters; the JSON report has them all)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters; the JSON report has them all)"


def clip_view(view: T, limit: int = DISPLAY_CHARS) -> T:
    """Return `view` with every string in it clipped by `clip_display` and its invisible
    characters shown (`show_invisible`).

    Walks frozen dataclasses, tuples, lists and dicts (keys and values) without recursion. A
    first, cheap look decides whether anything is too long; only then is the view rebuilt, and
    only along the paths that hold a long string.
    """
    if not _has_string_to_show_otherwise(view, limit):
        return view
    clipped: T = _clip(view, limit)
    return clipped


class _Field:
    """The dataclass fields of one view type: names, and the length limit of each."""

    __slots__ = ("init", "limits", "names")

    def __init__(self, kind: type) -> None:
        fields = dataclasses.fields(kind)
        self.names = tuple(f.name for f in fields)
        self.limits = tuple(f.metadata.get("max_chars") for f in fields)
        self.init = frozenset(f.name for f in fields if f.init)


_FIELDS: dict[type, _Field | None] = {}


def _fields_of(kind: type) -> _Field | None:
    if kind not in _FIELDS:
        _FIELDS[kind] = _Field(kind) if dataclasses.is_dataclass(kind) else None
    return _FIELDS[kind]


def _parts(value: Any) -> tuple[list[Any], tuple[int | None, ...] | None] | None:
    """The values inside `value` and, for a dataclass, each one's own limit; None for a leaf."""
    fields = _fields_of(type(value))
    if fields is not None:
        return [getattr(value, name) for name in fields.names], fields.limits
    if isinstance(value, tuple | list):
        if set(map(type, value)) <= _SCALARS:
            return None  # numbers only (per-task data): nothing to clip
        return list(value), None
    if isinstance(value, dict):
        return [item for pair in value.items() for item in pair], None
    return None


def _has_string_to_show_otherwise(root: Any, limit: int) -> bool:
    # `_parts` inlined: this walks every value of a page's view (tens of thousands of them).
    stack = [root]
    pop, push = stack.pop, stack.append
    scalars = _SCALARS
    while stack:
        value = pop()
        kind = type(value)
        fields = _FIELDS[kind] if kind in _FIELDS else _fields_of(kind)
        if fields is not None:
            for name, own in zip(fields.names, fields.limits, strict=True):
                part = getattr(value, name)
                part_kind = type(part)
                if part_kind is str:
                    if len(part) > (own or limit) or has_invisible(part):
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
                if len(part) > limit or has_invisible(part):
                    return True
            elif part_kind not in scalars:
                push(part)
    return False


def _clip(root: Any, limit: int) -> Any:
    # Post-order over an explicit stack of (value, own limit, children done?) frames.
    results: list[Any] = []
    stack: list[tuple[Any, int, bool]] = [(root, limit, False)]
    while stack:
        value, own_limit, expanded = stack.pop()
        if type(value) is str:
            results.append(show_invisible(clip_display(value, own_limit)))
            continue
        found = _parts(value)
        if found is None:
            results.append(value)
            continue
        parts, limits = found
        if not expanded:
            stack.append((value, own_limit, True))
            for i in reversed(range(len(parts))):
                stack.append((parts[i], (limits[i] if limits else None) or limit, False))
            continue
        n = len(parts)
        new_parts = results[len(results) - n :] if n else []
        if n:
            del results[len(results) - n :]
        if all(a is b for a, b in zip(new_parts, parts, strict=True)):
            results.append(value)
        else:
            results.append(_rebuild(value, new_parts))
    return results[0]


def _rebuild(value: Any, parts: list[Any]) -> Any:
    fields = _fields_of(type(value))
    if fields is not None:
        changes = {
            name: part
            for name, part in zip(fields.names, parts, strict=True)
            if name in fields.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return type(value)(*parts) if hasattr(value, "_fields") else tuple(parts)
    if isinstance(value, list):
        return parts
    return dict(zip(parts[0::2], parts[1::2], strict=True))
