"""Render the JSON document of an analysis."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
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


def render_json_bytes(document: dict[str, Any]) -> bytes:
    """Return the document as pretty-printed, key-stable UTF-8 JSON with a final newline, its
    invisible characters escaped (`visible_json`).

    orjson writes the same text as `json.dumps(indent=2, ensure_ascii=False)`, several times
    faster on large applications; a report written to a file is written from these bytes,
    with no text copy of a document that can be hundreds of MB.
    """
    return visible_json(orjson.dumps(document, option=_OPTIONS))


def render_json(document: dict[str, Any]) -> str:
    """Return the document as JSON text (see `render_json_bytes`)."""
    return render_json_bytes(document).decode("utf-8")


def render_json_chunks(
    document: dict[str, Any],
    key: str,
    placeholder: str,
    items: Iterable[dict[str, Any]],
    more: Iterable[tuple[str, str, Iterable[dict[str, Any]]]] = (),
) -> Iterator[bytes | memoryview]:
    """Yield the bytes of `render_json_bytes` of `document` with `items` as its top-level `key`,
    one item at a time: `document[key]` holds `placeholder` until then. `more` streams other
    top-level keys the same way, as (key, placeholder, items).

    Each item is serialized on its own and indented to its place, so the items are never all
    in memory, as objects or as text. The chunks joined are exactly `render_json_bytes` of the
    whole document: an item's JSON holds no raw newline (strings escape theirs), so indenting
    every line of it is a byte replacement.
    """
    text = render_json_bytes(document)
    places = []
    for name, marker, values in ((key, placeholder, items), *more):
        value = orjson.dumps(marker)
        at = text.index(b'\n  "' + name.encode() + b'": ' + value) + len(name) + 7
        places.append((at, len(value), values))
    places.sort(key=lambda place: place[0])
    # Views of the text, not copies: the document's head can be tens of MB.
    whole = memoryview(text)
    done = 0
    for at, size, values in places:
        yield whole[done:at]
        first = True
        for item in values:
            body = visible_json(orjson.dumps(item, option=orjson.OPT_INDENT_2))
            # The separator apart: joined to the item, it would copy the item's bytes again.
            yield b"[\n    " if first else b",\n    "
            yield body.replace(b"\n", b"\n    ")
            first = False
        yield b"[]" if first else b"\n  ]"
        done = at + size
    yield whole[done:]
