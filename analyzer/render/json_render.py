"""Render the JSON document of an analysis."""

from __future__ import annotations

from typing import Any

import orjson


def render_json(document: dict[str, Any]) -> str:
    """Return the document as pretty-printed, key-stable JSON text.

    orjson writes the same text as `json.dumps(indent=2, ensure_ascii=False)`, several times
    faster on large applications.
    """
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"
