"""Structural checks of the HTML report on real logs: node counts, no external URLs, escaping."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from reports import (
    ESCAPE_LOG,
    analysis_of,
    html_of,
    html_report,
    json_of,
    parse_page,
    report_log_params,
    report_logs,
)

import analyzer.report.html.page as html_page

LOGS = report_log_params()
ATTACK = "</script><img src=x onerror=alert(1)>"
URL_IN_CSS = re.compile(r"url\(\s*['\"]?([^'\")]*)", re.IGNORECASE)


def _node_ids(path: Path) -> Counter[str]:
    """Count the drawn plan nodes (operators and codegen clusters) per plan container prefix."""
    counts: Counter[str] = Counter()
    for tag, attrs in parse_page(html_of(path)).tags:
        if tag == "g" and "data-node" in attrs:
            # Operators carry their own id (their panel may be shared); clusters only data-node.
            counts[attrs.get("id", attrs["data-node"]).rsplit("-n", 1)[0]] += 1
    return counts


@pytest.mark.parametrize("path", LOGS)
def test_final_plan_node_counts_match_json(path: Path) -> None:
    counts = _node_ids(path)
    doc = json_of(path)
    page = html_of(path)
    for execution in doc["executions"]:
        prefix = f"e{execution['execution_id']}-p{execution['n_plan_versions'] - 1}"
        if f'id="exec-{execution["execution_id"]}"' not in page:
            continue  # listed only (beyond the detailed sections)
        drawn = [n for n in execution["nodes"] if not n["is_cluster"] or _has_members(n, execution)]
        assert counts[prefix] == len(drawn), prefix


def _has_members(cluster: dict[str, object], execution: dict[str, object]) -> bool:
    nodes = execution["nodes"]
    assert isinstance(nodes, list)
    return any(n["cluster_id"] == cluster["node_id"] for n in nodes)


@pytest.mark.parametrize("path", LOGS)
def test_no_external_requests(path: Path) -> None:
    page = parse_page(html_of(path))
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "object", "embed", "base", "img"), tag
        for name in ("src", "href", "xlink:href", "action", "poster", "srcset"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith(("#", "data:")), f"<{tag} {name}={value!r}>"
        for value in attrs.values():
            for target in URL_IN_CSS.findall(value):
                assert target.startswith(("#", "data:")), f"<{tag}> url({target})"
    for css in page.styles:
        assert "@import" not in css
        for target in URL_IN_CSS.findall(css):
            assert target.startswith(("#", "data:")), f"url({target}) in CSS"
    for attrs, body in page.scripts:
        if attrs.get("type") != "application/json":
            assert "fetch(" not in body and "XMLHttpRequest" not in body and "import(" not in body


def _policy_runs_only_its_script(html: str) -> None:
    page = parse_page(html)
    policies = [a["content"] for t, a in page.tags if t == "meta" and "content" in a
                and a.get("http-equiv", "").lower() == "content-security-policy"]  # fmt: skip
    assert len(policies) == 1
    directives = dict(d.strip().split(" ", 1) for d in policies[0].split(";") if d.strip())
    assert directives["default-src"] == "'none'"
    runnable = [body for attrs, body in page.scripts if attrs.get("type") != "application/json"]
    if not runnable:  # a page without a script allows none
        assert directives["script-src"] == "'none'"
        return
    assert len(runnable) == 1
    digest = base64.b64encode(hashlib.sha256(runnable[0].encode()).digest()).decode()
    assert directives["script-src"] == f"'sha256-{digest}'"
    assert "unsafe" not in directives["script-src"]


@pytest.mark.parametrize("path", LOGS)
def test_the_policy_runs_only_the_page_script(path: Path) -> None:
    _policy_runs_only_its_script(html_of(path))


def test_the_diff_page_policy_runs_only_its_script() -> None:
    from analyzer import api
    from analyzer.report.options import ReportOptions

    pair = sorted((Path(__file__).parent.parent / "sample_eventlogs/pairs/skew").glob("*.zstd"))
    result = api.diff(api.analyze(pair[0]), api.analyze(pair[1]))
    _policy_runs_only_its_script(api.render_diff(result, ReportOptions(fmt="html")))


@pytest.mark.parametrize("path", LOGS)
def test_data_scripts_are_json_covering_every_histogram(path: Path) -> None:
    page = parse_page(html_of(path))
    data = {
        attrs["id"]: json.loads(body)
        for attrs, body in page.scripts
        if attrs.get("type") == "application/json"
    }
    sections = [a for t, a in page.tags if t == "section" and "data-data-id" in a]
    assert len(data) == len(sections)
    hist_keys = {a["data-hist"] for t, a in page.tags if t == "div" and "data-hist" in a}
    all_hists = {k for d in data.values() for k in d["hist"]}
    assert hist_keys <= all_hists


@pytest.mark.parametrize("path", LOGS)
def test_panels_show_spark_strings_of_every_metric(path: Path) -> None:
    page = html_of(path)
    text = "".join(parse_page(page).text)
    for execution in json_of(path)["executions"]:
        if f'id="exec-{execution["execution_id"]}"' not in page:
            continue
        for node in execution["nodes"]:
            for metric in node["metrics"]:
                assert metric["spark_ui"] in text


def test_render_is_deterministic_with_a_fixed_clock() -> None:
    path = report_logs()[0] if report_logs() else ESCAPE_LOG
    analysis = analysis_of(path)
    assert html_report(analysis) == html_report(analysis)


def test_hostile_names_are_shown_as_text() -> None:
    html = html_of(ESCAPE_LOG)
    page = parse_page(html)
    assert [t for t, _ in page.tags if t == "img"] == []
    # Only our own two scripts: the page script and one JSON data element per execution.
    assert sum(1 for t, _ in page.tags if t == "script") == 2
    assert all(not any(k.startswith("on") for k in a) for _, a in page.tags)
    text = "".join(page.text)
    assert f"SELECT '{ATTACK}' FROM t" in text  # the description, as text
    assert f"Scan parquet {ATTACK}" in text  # the node name
    assert f"InMemoryFileIndex[file:/tmp/{ATTACK}]" in text  # scan metadata
    assert f"escape {ATTACK}" in text  # the application name
    for attrs, body in page.scripts:
        if attrs.get("type") == "application/json":
            assert "<" not in body and ">" not in body
            json.loads(body)


def test_top_and_execution_filters() -> None:
    path = report_logs()[-1] if report_logs() else ESCAPE_LOG
    analysis = analysis_of(path)
    slowest = max(
        analysis.application.executions, key=lambda e: (e.duration_ms or 0, -e.execution_id)
    )
    page = html_report(analysis, top=1)
    assert page.count('<section class="card execution"') == 1
    assert f'id="exec-{slowest.execution_id}"' in page
    first = analysis.application.executions[0].execution_id
    page = html_report(analysis, executions=(first,))
    assert page.count('<section class="card execution"') == 1
    assert f'id="exec-{first}"' in page


MULTI_SQL_LOG = (
    Path(__file__).resolve().parent.parent / "sample_eventlogs" / "local-1795320703822.lz4"
)
"""`sea-multi-sql`: nine short SQL executions."""


@pytest.mark.skipif(not MULTI_SQL_LOG.exists(), reason="sea-multi-sql sample missing")
def test_the_executions_list_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # A day of a streaming query is tens of thousands of executions: the page lists the slowest
    # up to its bound and says where the rest are.
    monkeypatch.setattr(html_page, "MAX_LISTED_EXECUTIONS", 4)
    analysis = analysis_of(MULTI_SQL_LOG)
    n = len(analysis.application.executions)
    assert n > 4
    page = html_report(analysis)
    start = page.index('id="executions"')
    listed = page[start : page.index("</section>", start)]
    assert f"4 of {n}, slowest first" in listed
    assert listed.count("<tr>") == 4 + 1  # the rows and the header
    assert f"holds the 4 slowest of {n}; the JSON report (--format json) lists every one" in page
    slowest = sorted(
        analysis.application.executions, key=lambda e: (-(e.duration_ms or 0), e.execution_id)
    )
    assert f'<a href="#exec-{slowest[0].execution_id}">' in listed
    monkeypatch.setattr(html_page, "MAX_LISTED_EXECUTIONS", n)
    assert "the JSON report (--format json) lists every one" not in html_report(analysis)


def test_one_note_says_how_many_executions_are_detailed(monkeypatch: pytest.MonkeyPatch) -> None:
    # The page details the slowest few (its budgets), then drops sections past its size bound:
    # one note, with the executions chosen, not two notes that disagree.
    import analyzer.render.html as html_render

    monkeypatch.setattr(html_page, "MAX_DETAILED_EXECUTIONS", 4)
    monkeypatch.setattr(html_render, "MAX_SECTIONS_BYTES", 1)
    analysis = analysis_of(MULTI_SQL_LOG)
    n = len(analysis.application.executions)
    page = html_report(analysis)
    assert page.count("sections cover the") == 1
    assert f"To keep the page small, detailed sections cover the 1 slowest of {n} executions" in (
        page
    )


def test_an_execution_with_no_end_event_reads_the_same_in_the_list_and_the_time_bar() -> None:
    # The public EMR log's query 1 has no end event: "Where the time went" counts it up to its
    # last activity, and the list and its section say the same, not "–" and 0.0 %.
    from oracle.locations import PUBLIC_CORPUS

    page = html_of(PUBLIC_CORPUS / "emr")
    start = page.index('id="executions"')
    listed = page[start : page.index("</section>", start)]
    assert "at least 1.0 s" in listed
    assert "17.1 %" in listed
    assert page.count("at least 1.0 s") >= 3  # the time bar, the list and the section
