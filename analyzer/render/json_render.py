"""Render the JSON document of an analysis."""

from __future__ import annotations

from typing import Any

import orjson


def render_json_bytes(document: dict[str, Any]) -> bytes:
    """Return the document as pretty-printed, key-stable UTF-8 JSON with a final newline.

    orjson writes the same text as `json.dumps(indent=2, ensure_ascii=False)`, several times
    faster on large applications; a report written to a file is written from these bytes,
    with no text copy of a document that can be hundreds of MB.
    """
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def render_json(document: dict[str, Any]) -> str:
    """Return the document as JSON text (see `render_json_bytes`)."""
    return render_json_bytes(document).decode("utf-8")
