"""Render the JSON document of an analysis."""

from __future__ import annotations

import json

from analyzer.aggregate.analysis import Analysis
from analyzer.insights import Thresholds
from analyzer.report.json_view import build_json_view


def render_json(analysis: Analysis, thresholds: Thresholds | None = None) -> str:
    """Return the analysis as pretty-printed, key-stable JSON text (findings use `thresholds`)."""
    view = build_json_view(analysis, thresholds)
    return json.dumps(view, indent=2, ensure_ascii=False) + "\n"
