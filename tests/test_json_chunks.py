"""The JSON report written one execution at a time is byte for byte the whole document's."""

from __future__ import annotations

from typing import Any

import pytest
from reports import analysis_of, report_logs

from analyzer import api
from analyzer.render.json_render import render_json_bytes, render_json_chunks
from analyzer.report.json_view import build_json_view
from analyzer.report.options import ReportOptions

HOSTILE_ITEMS: list[dict[str, Any]] = [
    {"description": 'line\nbreak "quoted" \\ back', "nested": {"list": [1, [], {}]}},
    {"description": '\n  "executions": "@stream-0-0@"', "tabs": "\t\r\u2028\u0000"},
    {},
]


@pytest.mark.parametrize("n_items", [0, 1, 3, 255, 256, 257, 600])
def test_chunks_join_to_the_whole_document(n_items: int) -> None:
    items = [HOSTILE_ITEMS[i % len(HOSTILE_ITEMS)] | {"i": i} for i in range(n_items)]
    nested = {"b": "c", "deeper": [{"list": iter(items[:5])}, iter(items[:2])]}
    document = {"a": [1, nested], "executions": iter(items), "findings": [], "none": iter([])}
    whole = {
        "a": [1, {"b": "c", "deeper": [{"list": items[:5]}, items[:2]]}],
        "executions": items,
        "findings": [],
        "none": [],
    }
    assert b"".join(render_json_chunks(document)) == render_json_bytes(whole)


@pytest.mark.parametrize("path", report_logs()[:3], ids=lambda p: p.name)
def test_the_report_is_the_whole_document(path: Any) -> None:
    analysis = analysis_of(path)
    findings = api.find_issues(analysis)
    report = api.render_report(analysis, ReportOptions(fmt="json"), findings)
    assert report.encode() == render_json_bytes(build_json_view(analysis, findings))


def test_a_batch_of_large_items_holds_few_of_them() -> None:
    """Items of tens of KB are serialized a few at a time (a batch makes about 256 KB of text),
    small ones up to 256 per call, so a long list of large items is never many at once."""
    large = ({"i": i, "text": "x" * 100_000} for i in range(20))
    sizes = [len(chunk) for chunk in render_json_chunks({"items": large})]
    assert max(sizes) < 4 * 100_000
    small = ({"i": i} for i in range(2_000))
    n_chunks = sum(1 for _ in render_json_chunks({"items": small}))
    assert n_chunks < 2 * (2_000 // 256 + 10)
