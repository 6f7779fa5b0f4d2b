"""The JSON report written one execution at a time is byte for byte the whole document's."""

from __future__ import annotations

from typing import Any

import pytest
from reports import analysis_of, report_logs

from analyzer import api
from analyzer.render.json_render import render_json_bytes, render_json_chunks
from analyzer.report.json_view import EXECUTIONS_PLACEHOLDER, build_json_view
from analyzer.report.options import ReportOptions

HOSTILE_ITEMS: list[dict[str, Any]] = [
    {"description": 'line\nbreak "quoted" \\ back', "nested": {"list": [1, [], {}]}},
    {"description": '\n  "executions": "@executions@"', "tabs": "\t\r\u2028\u0000"},
    {},
]


@pytest.mark.parametrize("items", [[], HOSTILE_ITEMS[:1], HOSTILE_ITEMS], ids=["0", "1", "3"])
def test_chunks_join_to_the_whole_document(items: list[dict[str, Any]]) -> None:
    document = {"a": [1, {"b": "c"}], "executions": EXECUTIONS_PLACEHOLDER, "findings": []}
    whole = render_json_bytes({**document, "executions": items})
    chunks = render_json_chunks(document, "executions", EXECUTIONS_PLACEHOLDER, iter(items))
    assert b"".join(chunks) == whole


@pytest.mark.parametrize("path", report_logs()[:3], ids=lambda p: p.name)
def test_the_report_is_the_whole_document(path: Any) -> None:
    analysis = analysis_of(path)
    findings = api.find_issues(analysis)
    report = api.render_report(analysis, ReportOptions(fmt="json"), findings)
    assert report.encode() == render_json_bytes(build_json_view(analysis, findings))
