"""Render the JSON document of an analysis."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def render_json_bytes(document: dict[str, Any]) -> bytes:
    """Return the document as pretty-printed, key-stable UTF-8 JSON with a final newline.

    orjson writes the same text as `json.dumps(indent=2, ensure_ascii=False)`, several times
    faster on large applications; a report written to a file is written from these bytes,
    with no text copy of a document that can be hundreds of MB.
    """
    return orjson.dumps(document, option=_OPTIONS)


def render_json(document: dict[str, Any]) -> str:
    """Return the document as JSON text (see `render_json_bytes`)."""
    return render_json_bytes(document).decode("utf-8")


def render_json_chunks(
    document: dict[str, Any], key: str, placeholder: str, items: Iterable[dict[str, Any]]
) -> Iterator[bytes | memoryview]:
    """Yield the bytes of `render_json_bytes` of `document` with `items` as its top-level `key`,
    one item at a time: `document[key]` holds `placeholder` until then.

    Each item is serialized on its own and indented to its place, so the items are never all
    in memory, as objects or as text. The chunks joined are exactly `render_json_bytes` of the
    whole document: an item's JSON holds no raw newline (strings escape theirs), so indenting
    every line of it is a byte replacement.
    """
    text = render_json_bytes(document)
    value = orjson.dumps(placeholder)
    at = text.index(b'\n  "' + key.encode() + b'": ' + value) + len(key) + 7
    # Views of the text, not copies: the document's head can be tens of MB.
    whole = memoryview(text)
    yield whole[:at]
    first = True
    for item in items:
        body = orjson.dumps(item, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
        yield (b"[\n    " if first else b",\n    ") + body
        first = False
    yield b"[]" if first else b"\n  ]"
    yield whole[at + len(value) :]
