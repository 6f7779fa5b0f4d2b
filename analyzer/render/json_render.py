"""Render the JSON document of an analysis."""

from __future__ import annotations

import orjson

from analyzer.aggregate.analysis import Analysis
from analyzer.insights import Thresholds
from analyzer.report.json_view import build_json_view


def render_json(analysis: Analysis, thresholds: Thresholds | None = None) -> str:
    """Return the analysis as pretty-printed, key-stable JSON text (findings use `thresholds`).

    orjson writes the same text as `json.dumps(indent=2, ensure_ascii=False)`, several times
    faster on large applications.
    """
    view = build_json_view(analysis, thresholds)
    return orjson.dumps(view, option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"
