"""Render the JSON document of an analysis."""

from __future__ import annotations

import json

from analyzer.aggregate.analysis import Analysis
from analyzer.report.json_view import build_json_view


def render_json(analysis: Analysis) -> str:
    """Return the analysis as pretty-printed, key-stable JSON text."""
    return json.dumps(build_json_view(analysis), indent=2, ensure_ascii=False) + "\n"
