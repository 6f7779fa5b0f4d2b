"""Render the JSON document of an analysis."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any

import orjson

from analyzer.units import INVISIBLE_CHARS

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
_INVISIBLE = re.compile(f"[{INVISIBLE_CHARS}]")


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character beyond the BMP as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible_json(data: bytes) -> bytes:
    r"""Return JSON text `data` with every invisible or reordering character (`units.
    show_invisible`'s set) written as a `\uXXXX` escape: the same JSON value, but a bidi
    override or a tag character in a name is seen, not acted on, by whoever opens the file.

    Such characters can only be inside strings, where the escape means the same character.

    >>> visible_json('{"n": "a\u202eb\U000e0041"}'.encode())
    b'{"n": "a\\u202eb\\udb40\\udc41"}'
    """
    if data.isascii() and b"\x7f" not in data:
        return data  # orjson escapes C0 controls; everything else to show is non-ASCII
    return _INVISIBLE.sub(_json_escape, data.decode("utf-8")).encode("utf-8")


def _dumps(value: Any, option: int) -> bytes:
    """`orjson.dumps`, or Python's `json` where orjson refuses an integer of more than 64 bits:
    a hostile log's values can add up past them. Both write the same layout (two spaces of
    indent, `": "` after a key); `json` writes any integer, so the document stays whole."""
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        text = json.dumps(
            value, indent=2 if option & orjson.OPT_INDENT_2 else None, ensure_ascii=False
        )
        return (text + "\n" if option & orjson.OPT_APPEND_NEWLINE else text).encode("utf-8")


def render_json_bytes(document: dict[str, Any]) -> bytes:
    """Return the document as pretty-printed, key-stable UTF-8 JSON with a final newline, its
    invisible characters escaped (`visible_json`).

    orjson writes the same text as `json.dumps(indent=2, ensure_ascii=False)`, several times
    faster on large applications; a report written to a file is written from these bytes,
    with no text copy of a document that can be hundreds of MB.
    """
    return visible_json(_dumps(document, _OPTIONS))


def render_json(document: dict[str, Any]) -> str:
    """Return the document as JSON text (see `render_json_bytes`)."""
    return render_json_bytes(document).decode("utf-8")


_BATCH_ITEMS = 256
"""The most items of a streamed list serialized in one call: one orjson call per item costs
more than the item for lists of small items (a what-if scenario's executions)."""
_BATCH_BYTES = 256 * 1024
"""About how much JSON text one batch makes: a list of large items (executions of tens of KB)
is serialized a few at a time, so their objects and text are never many at once."""


def render_json_chunks(document: Mapping[str, Any]) -> Iterator[bytes | memoryview]:
    """Yield the bytes of `render_json_bytes` of `document`, where every iterator in it (at any
    depth) stands for a list whose items are made as they are written.

    The iterators' items are serialized a batch at a time and indented to their place, so a
    long list is never all in memory, as objects or as text. The chunks joined are exactly
    `render_json_bytes` of the document with each iterator made a list: an item's JSON holds
    no raw newline (strings escape theirs), so indenting every line of it is a byte
    replacement. The iterators are consumed in the order the document lists them.
    """
    streams: list[tuple[bytes, Iterator[Any]]] = []
    # A fresh random marker per report: no text in the log can be mistaken for one.
    head = _with_markers(document, f"@stream-{secrets.token_hex(8)}-", streams)
    text = render_json_bytes(head)
    places = sorted((text.index(marker), len(marker), items) for marker, items in streams)
    # Views of the text, not copies: the document's head can be tens of MB.
    whole = memoryview(text)
    done = 0
    for at, size, items in places:
        yield whole[done:at]
        line = text.rindex(b"\n", 0, at) + 1
        indent = len(text[line:at]) - len(text[line:at].lstrip(b" "))
        yield from _list_chunks(items, b"\n" + b" " * indent)
        done = at + size
    yield whole[done:]


def _list_chunks(items: Iterator[Any], newline: bytes) -> Iterator[bytes]:
    """The JSON of a list of `items` whose opening bracket ends a line starting with
    `newline`'s indentation, as `render_json_bytes` writes it inside a document."""
    first = True
    size = 1  # items in the next batch: as many as make about `_BATCH_BYTES` of text
    while batch := list(islice(items, size)):
        # "[\n  A,\n  B\n]": the items at an indent of two, between "[\n  " and "\n]".
        body = visible_json(_dumps(batch, orjson.OPT_INDENT_2))[4:-2]
        size = max(1, min(_BATCH_ITEMS, _BATCH_BYTES * len(batch) // max(1, len(body))))
        del batch
        # The separator apart: joined to the batch, it would copy the batch's bytes again.
        yield b"[" + newline + b"  " if first else b"," + newline + b"  "
        yield body.replace(b"\n", newline)
        first = False
    yield b"[]" if first else newline + b"]"


def _with_markers(value: Any, prefix: str, streams: list[tuple[bytes, Iterator[Any]]]) -> Any:
    """`value` with every iterator in it replaced by a marker string, noted in `streams` as
    (the marker's JSON, the iterator); containers holding none are returned as they are."""
    if isinstance(value, dict):
        marked = {key: _with_markers(item, prefix, streams) for key, item in value.items()}
        return value if all(marked[k] is v for k, v in value.items()) else marked
    if isinstance(value, list | tuple):
        items = [_with_markers(item, prefix, streams) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, Iterator):
        marker = f"{prefix}{len(streams)}@"
        streams.append((orjson.dumps(marker), value))
        return marker
    return value
