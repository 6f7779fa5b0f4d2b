"""The HTML report's Findings section: shown first, one entry per finding, links that resolve."""

from __future__ import annotations

from pathlib import Path

import pytest
from eventlog_samples import SAMPLES
from reports import (
    NOW_MS,
    analysis_of,
    html_of,
    html_report,
    parse_page,
    report_log_params,
)

import analyzer.render.html as html_render
from analyzer import api
from analyzer.insights import Thresholds, detect_all
from analyzer.report.options import ReportOptions

LOGS = report_log_params()
UDF_LOG = SAMPLES / "local-1795320380842.zstd"
"""The sample whose Python UDFs are findings at plan nodes of two executions, and whose retried
task is a finding at a stage of the first."""


def _attrs_with_class(html: str, tag: str, css_class: str) -> list[dict[str, str]]:
    return [
        attrs
        for t, attrs in parse_page(html).tags
        if t == tag and css_class in attrs.get("class", "").split()
    ]


def _ids(html: str) -> dict[str, dict[str, str]]:
    return {attrs["id"]: attrs for _, attrs in parse_page(html).tags if "id" in attrs}


@pytest.mark.parametrize("path", LOGS)
def test_findings_come_first_with_links_to_existing_nodes(path: Path) -> None:
    html = html_of(path)
    analysis = analysis_of(path)
    findings = detect_all(analysis)
    sections = [a for t, a in parse_page(html).tags if t == "section"]
    streaming = ["streaming"] if analysis.application.streaming else []
    assert [s.get("id") for s in sections[: 4 + len(streaming)]] == [
        "verdict",
        *streaming,
        "time-spent",
        "findings",
        "executions",
    ]
    items = _attrs_with_class(html, "li", "finding")
    # Grouped by rule, in the order of each rule's first finding: every finding once.
    assert sorted(int(a["id"].removeprefix("finding-")) for a in items) == list(
        range(1, len(findings) + 1)
    )
    ids = _ids(html)
    node_links = _attrs_with_class(html, "a", "finding-node")
    for link in node_links:
        target = link["data-target-node"]
        assert link["href"] == f"#{target}"
        assert "node" in ids[target]["class"].split()  # an operator box of a plan graph
        assert "has-finding" in ids[target]["class"].split()
    for link in _attrs_with_class(html, "a", "finding-execution"):
        assert ids[link["href"][1:]]["class"].split()[:2] == ["card", "execution"]
    # Every finding with a node of a shown execution links to that node of the final plan.
    shown = {
        int(a["id"].removeprefix("exec-"))
        for a in sections
        if "execution" in a.get("class", "").split()
    }
    final = {e.execution_id: e.final_plan for e in analysis.application.executions}
    expected = [
        f"e{f.execution_id}-p{final[f.execution_id].index}-n{f.node_id}"
        for f in findings
        if f.execution_id in shown
        and f.node_id is not None
        and not final[f.execution_id].graph.node(f.node_id).is_cluster
    ]
    assert sorted(link["data-target-node"] for link in node_links) == sorted(expected)
    for finding in findings:
        assert f"docs/findings.md#{finding.rule}" in html


@pytest.mark.skipif(not UDF_LOG.exists(), reason="spill sample log missing")
def test_nodes_and_panels_refer_back_to_their_findings() -> None:
    html = html_of(UDF_LOG)
    marked = _attrs_with_class(html, "g", "has-finding")
    assert len(marked) == 2
    assert html.count('<text class="finding-mark"') == 2
    # From its execution and its node's panel; the verdict names no top finding: both are
    # `info` (the Python workers' start-up, not the UDFs, took their time).
    assert html.count('<a href="#finding-1">') == 2
    assert html.count('<a href="#finding-2">') == 2


@pytest.mark.skipif(not UDF_LOG.exists(), reason="spill sample log missing")
def test_thresholds_reach_the_page_through_the_api() -> None:
    analysis = analysis_of(UDF_LOG)
    quiet = Thresholds().with_overrides(["min_query_share=1"])
    for html in (
        html_report(analysis, thresholds=quiet),
        api.render_report(analysis, ReportOptions(fmt="html", now_ms=NOW_MS, thresholds=quiet)),
    ):
        assert _attrs_with_class(html, "li", "finding") == []
        assert "No findings." in html
        assert _attrs_with_class(html, "g", "has-finding") == []


@pytest.mark.skipif(not UDF_LOG.exists(), reason="spill sample log missing")
def test_findings_of_unlisted_executions_are_left_out() -> None:
    analysis = analysis_of(UDF_LOG)
    findings = detect_all(analysis)
    first = findings[0].execution_id
    assert first is not None
    html = html_report(analysis, executions=(first,))
    items = _attrs_with_class(html, "li", "finding")
    assert len(items) == sum(1 for f in findings if f.execution_id == first) < len(findings)
    n_shown = sum(1 for f in findings if f.execution_id == first)
    assert f"{n_shown} of {len(findings)} (others belong to executions not shown)" in html


@pytest.mark.skipif(not UDF_LOG.exists(), reason="spill sample log missing")
def test_links_into_sections_left_out_for_size_are_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(html_render, "MAX_SECTIONS_BYTES", 1)  # keeps only the first section
    html = html_report(analysis_of(UDF_LOG))
    ids = _ids(html)
    assert sum(1 for a in ids.values() if "execution" in a.get("class", "").split()) == 1
    assert len(_attrs_with_class(html, "li", "finding")) == len(detect_all(analysis_of(UDF_LOG)))
    for link in _attrs_with_class(html, "a", "finding-node"):
        assert link["data-target-node"] in ids
    for link in _attrs_with_class(html, "a", "finding-execution"):
        assert link["href"][1:] in ids


@pytest.mark.parametrize("path", LOGS)
def test_every_link_in_the_page_has_its_target(path: Path) -> None:
    """Links of the first screen (time bar stages and operators, findings, executions) and of
    the sections all point at an element of the page."""
    html = html_of(path)
    ids = _ids(html)
    for tag, attrs in parse_page(html).tags:
        href = attrs.get("href", "")
        if tag == "a" and href.startswith("#"):
            assert href[1:] in ids, f"<a href={href!r}> has no target"


@pytest.mark.parametrize("path", LOGS)
def test_findings_of_one_rule_share_one_line(path: Path) -> None:
    html = html_of(path)
    rules = [f.rule for f in detect_all(analysis_of(path))]
    groups = _attrs_with_class(html, "li", "finding-group")
    repeated = {r for r in rules if rules.count(r) > 1}
    assert len(groups) == len(repeated)
    for rule in repeated:
        assert f'<code class="finding-rule">{rule}</code> <span class="finding-count">×' in html
