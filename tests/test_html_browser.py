"""The HTML report in a real headless chromium: no errors, no requests, panels match the JSON."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import SAMPLES
from oracle.locations import PUBLIC_CORPUS
from reports import Q72, html_of, json_of, report_log_params

from analyzer.units import fmt_metric_value

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SLOW = pytest.mark.slow
QUICK_LOGS = {
    "local-1795449570708.zstd",  # findings at a plan node, one execution
    "local-1795622263284.zstd",  # a failed streaming query
    "eventlog_v2_local-1795320584980",  # a rolling log of many executions
}
"""The logs whose page the quick loop opens in chromium; every other log's page is opened by
the full run (`slow`): about a second of browser time per page."""
LOGS = [
    p if p.id in QUICK_LOGS else pytest.param(*p.values, id=p.id, marks=[*p.marks, SLOW])
    for p in report_log_params()
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (run .ci/install-browser.sh)"
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium for the module, launched from Debian's package (never a downloaded one)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _capture(page: Any, path: Path) -> None:
    """Screenshot the page. Under CPU load chromium's compositor can miss its frame and
    answer "Unable to capture screenshot"; that is retried twice, anything else fails."""
    for attempt in range(3):
        try:
            page.screenshot(path=str(path))
            return
        except Exception as error:  # playwright's Error; imported lazily with the browser
            if "Unable to capture screenshot" not in str(error) or attempt == 2:
                raise
            page.wait_for_timeout(500)


def _node_to_click(doc: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The operator with the most metrics in the slowest execution that has any."""
    executions = sorted(
        doc["executions"], key=lambda e: (-(e["duration_ms"] or 0), e["execution_id"])
    )
    for execution in executions:
        nodes = [n for n in execution["nodes"] if n["metrics"] and not n["is_cluster"]]
        if nodes:
            node = max(nodes, key=lambda n: (len(n["metrics"]), -n["node_id"]))
            prefix = f"e{execution['execution_id']}-p{execution['n_plan_versions'] - 1}"
            return f"{prefix}-n{node['node_id']}", node
    return None


@pytest.mark.parametrize("path", LOGS)
def test_report_in_browser(browser: Any, path: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(html_of(path), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    blocked: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r: Any) -> None:
        if r.request.url.startswith(("file:", "data:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(report.as_uri())
    _capture(page, tmp_path / "summary.png")
    target = _node_to_click(json_of(path))
    if target is not None:
        dom_id, node = target
        page.locator(f'[id="{dom_id}"]').dispatch_event("click")  # may lie outside the view
        panel = page.locator("#panel")
        assert panel.is_visible()
        rows = panel.locator("table.metrics tr.metric-extra .spark-ui code")
        assert rows.all_inner_texts() == [m["spark_ui"] for m in node["metrics"]]
        totals = panel.locator("table.metrics td.total").all_inner_texts()
        assert totals == [fmt_metric_value(m["type"], m["total"]) for m in node["metrics"]]
        assert panel.locator(".hist svg").count() == len(node["metrics"])
        if panel.locator(".task-table table").count():
            header = panel.locator(".task-table th").first
            header.click()  # sorting must not raise
        _capture(page, tmp_path / "panel.png")
        search = page.locator("#node-search")
        search.fill(node["name"][:6])
        assert page.locator("#search-count").inner_text() != ""
    page.close()
    assert errors == []
    assert blocked == []


UDF_LOG = Path(__file__).resolve().parent.parent / "sample_eventlogs" / "local-1795320380842.zstd"
"""A sample whose findings (spill) point at plan nodes of two AQE executions."""


@pytest.mark.skipif(not UDF_LOG.exists(), reason="Python UDF sample log missing")
def test_finding_link_opens_its_node_panel(browser: Any, tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text(html_of(UDF_LOG), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    # Findings of one rule share a line: open the groups to reach each finding's own line.
    page.evaluate(
        "document.querySelectorAll('#findings li.finding-group > details')"
        ".forEach(d => { d.open = true; })"
    )
    links = page.locator("#findings a.finding-node")
    assert links.count() == 2
    for i in range(links.count()):
        link = links.nth(i)
        dom_id = link.get_attribute("data-target-node")
        node = page.locator(f'[id="{dom_id}"]')
        section = node.locator("xpath=ancestor::section[contains(@class, 'execution')]")
        # Show the initial plan first: the link must switch back to the final plan's graph.
        other_tab = section.locator(".plan-tab:not(.active)")
        assert other_tab.count() == 1  # AQE: the initial plan's tab
        other_tab.click()
        assert not node.is_visible()
        if page.locator("#panel").is_visible():
            page.locator("#panel-close").click()
        link.click()
        panel = page.locator("#panel")
        assert panel.is_visible()
        assert node.is_visible()
        assert "selected" in (node.get_attribute("class") or "")
        name = node.get_attribute("data-name")
        node_id = dom_id.rsplit("-n", 1)[1] if dom_id else ""
        assert panel.locator("h3").inner_text() == f"{name} (node {node_id})"
        finding = (link.locator("xpath=ancestor::li[1]").get_attribute("id") or "").strip()
        assert panel.locator(f'.finding-refs a[href="#{finding}"]').count() == 1
    page.close()
    assert errors == []


# ---- The first screen and the plan graph at 1440×900 -------------------------------------------

FAILED_LOG = SAMPLES / "local-1795320428052"
"""sea-failed-query: query 1 fails with `sample failure: bucket 3 is rejected`."""
JOIN_LOGS = [
    SAMPLES / "local-1795320524741.lzf",  # sea-join-strategies
    SAMPLES / "local-1795320224872",  # sea-join-agg-aqe-off
    SAMPLES / "local-1795320174558.zstd",  # sea-join-agg-aqe-on
]
VIEWPORT = {"width": 1440, "height": 900}
DOCS_IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"


def _open(browser: Any, path: Path, tmp_path: Path) -> tuple[Any, list[str]]:
    """Open a log's report at 1440×900 with every request but the file itself refused."""
    report = tmp_path / f"{path.name}.html"
    report.write_text(html_of(path), encoding="utf-8")
    page = browser.new_page(viewport=VIEWPORT)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    def route(r: Any) -> None:
        if r.request.url.startswith(("file:", "data:")):
            r.continue_()
        else:
            problems.append(f"request to {r.request.url}")
            r.abort()

    page.route("**/*", route)
    page.goto(report.as_uri())
    return page, problems


def _on_first_screen(page: Any, locator: Any) -> bool:
    """True when the element is shown and lies entirely inside the window, unscrolled."""
    box = locator.bounding_box()
    return (
        locator.is_visible()
        and box is not None
        and page.evaluate("window.scrollY") == 0
        and box["y"] >= 0
        and box["y"] + box["height"] <= VIEWPORT["height"]
        and box["x"] + box["width"] <= VIEWPORT["width"]
    )


def _screenshot(page: Any, tmp_path: Path, name: str) -> None:
    """Save a screenshot in the test's directory, and into docs/images when asked to
    (SEA_UPDATE_SCREENSHOTS=1)."""
    _capture(page, tmp_path / name)
    if os.environ.get("SEA_UPDATE_SCREENSHOTS") == "1":
        _capture(page, DOCS_IMAGES / name)


@pytest.mark.skipif(not FAILED_LOG.exists(), reason="sea-failed-query sample missing")
def test_first_screen_of_a_failed_application(browser: Any, tmp_path: Path) -> None:
    page, problems = _open(browser, FAILED_LOG, tmp_path)
    badge = page.locator("#verdict .badge")
    assert badge.inner_text() == "FAILED"
    assert _on_first_screen(page, badge)
    cause = page.locator("#verdict .root-cause")
    assert "sample failure: bucket 3 is rejected" in cause.inner_text()
    assert "SQL execution 1" in cause.inner_text()
    assert _on_first_screen(page, cause)
    first = page.locator("#findings ul.findings > li").first
    assert "failed-query" in first.inner_text()
    assert _on_first_screen(page, first)
    assert _on_first_screen(page, page.locator("#executions table.executions tr").nth(3))
    _screenshot(page, tmp_path, "report-failed.png")
    # The root cause opens its finding, one click away.
    page.locator("#verdict .root-cause a", has_text="finding").click()
    assert page.locator("#findings li.finding .finding-body").first.is_visible()
    page.close()
    assert problems == []


@pytest.mark.slow
def test_first_screen_of_q72(browser: Any, tmp_path: Path) -> None:
    if not Q72.exists():
        pytest.skip(f"public event log {Q72} not present")
    page, problems = _open(browser, Q72, tmp_path)
    badge = page.locator("#verdict .badge")
    assert badge.inner_text() == "COMPLETED"
    assert _on_first_screen(page, badge)
    head = page.locator("#time-spent .tx-head").first
    assert "query 24" in head.inner_text() and "query72" in head.inner_text()
    assert _on_first_screen(page, head)
    stage = page.locator("#time-spent .hot-stages a.stage-link", has_text="stage 50")
    assert _on_first_screen(page, stage)
    smj = page.locator("#time-spent a.node-link", has_text="SortMergeJoin #30")
    assert _on_first_screen(page, smj)
    # One finding: no-partition-pruning is silent on catalog_returns, whose partition column
    # no filter or join names.
    findings = page.locator("#findings ul.findings > li")
    assert findings.count() == 1
    for i in range(findings.count()):
        assert _on_first_screen(page, findings.nth(i))
    assert "row-explosion" in findings.first.inner_text()
    _screenshot(page, tmp_path, "report-q72.png")
    # The stage link opens the stage table at its row; the operator link centres its node.
    stage.click()
    row = page.locator('[id="exec-24-stage-50"]')
    assert row.is_visible() and _in_window(row)
    page.evaluate("window.scrollTo(0, 0)")
    smj.click()
    node = page.locator(".node.selected")
    assert node.get_attribute("data-name") == "SortMergeJoin"
    assert _clear_of_panel(page, node)
    page.close()
    assert problems == []


def _in_window(locator: Any) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


def _clear_of_panel(page: Any, node: Any) -> bool:
    """True when the node is inside its plan's view and not under the side panel."""
    box = node.bounding_box()
    view = node.locator("xpath=ancestor::div[contains(@class, 'plan-view')]").bounding_box()
    panel = page.locator("#panel").bounding_box()
    assert box is not None and view is not None and panel is not None
    inside = (
        view["x"] <= box["x"]
        and box["x"] + box["width"] <= view["x"] + view["width"]
        and view["y"] <= box["y"]
        and box["y"] + box["height"] <= view["y"] + view["height"]
    )
    return bool(inside and box["x"] + box["width"] <= panel["x"] and _in_window(node))


def _q72_plan(page: Any) -> Any:
    plan = page.locator("#exec-24 .plan:not([hidden])")
    plan.locator(".plan-tools").scroll_into_view_if_needed()
    return plan


def _shown_nodes_inside_view(plan: Any) -> bool:
    return bool(
        plan.evaluate(
            """plan => {
              const v = plan.querySelector('.plan-view').getBoundingClientRect();
              const shown = [...plan.querySelectorAll('g.node')]
                .filter(n => n.style.display !== 'none');
              return shown.length > 0 && shown.every(n => {
                const r = n.querySelector('rect').getBoundingClientRect();
                return r.left >= v.left - 0.5 && r.right <= v.right + 0.5
                  && r.top >= v.top - 0.5 && r.bottom <= v.bottom + 0.5;
              });
            }"""
        )
    )


@pytest.mark.slow
def test_q72_fit_fold_and_collapse(browser: Any, tmp_path: Path) -> None:
    if not Q72.exists():
        pytest.skip(f"public event log {Q72} not present")
    page, problems = _open(browser, Q72, tmp_path)
    plan = _q72_plan(page)
    n_nodes = plan.locator("g.node").count()
    plan.locator("[data-pz=fit]").click()
    assert _shown_nodes_inside_view(plan)
    # Zoom and pan move the view; fit brings every node back.
    plan.locator("[data-pz=in]").click()
    plan.locator(".plan-view").hover()
    page.mouse.wheel(0, -300)
    assert not _shown_nodes_inside_view(plan)
    plan.locator("[data-pz=fit]").click()
    assert _shown_nodes_inside_view(plan)
    # Hiding trivial operators: they leave the graph, their metrics go to their reader's panel.
    plan.locator(".fold-trivial").check()
    hidden = plan.locator("g.node[data-into]")
    assert hidden.count() > 10
    assert plan.evaluate(
        "p => [...p.querySelectorAll('g.node[data-into]')].every(n => n.style.display === 'none')"
    )
    assert plan.evaluate(
        "p => [...p.querySelectorAll('g.cluster')].every(n => n.style.display === 'none')"
    )
    plan.locator("[data-pz=fit]").click()
    assert _shown_nodes_inside_view(plan)
    reader = hidden.first.get_attribute("data-into")
    page.locator(f'[id="{reader}"]').click()
    folded = page.locator("#panel .folded-ops")
    assert folded.is_visible()
    assert hidden.first.get_attribute("data-name") in folded.inner_text()
    page.locator("#panel-close").click()
    plan.locator(".fold-trivial").uncheck()
    # Collapsing an operator hides its inputs; expanding all shows them again.
    root = plan.locator("g.node:not([data-tp])").first
    root.locator(".collapse").click()
    assert (
        plan.evaluate(
            "p => [...p.querySelectorAll('g.node')].filter(n => n.style.display !== 'none').length"
        )
        == 1
    )
    plan.locator("[data-pz=expand]").click()
    assert (
        plan.evaluate(
            "p => [...p.querySelectorAll('g.node')].filter(n => n.style.display !== 'none').length"
        )
        == n_nodes
    )
    page.close()
    assert problems == []


@pytest.mark.slow
def test_q72_search_centres_the_node_beside_the_panel(browser: Any, tmp_path: Path) -> None:
    if not Q72.exists():
        pytest.skip(f"public event log {Q72} not present")
    page, problems = _open(browser, Q72, tmp_path)
    search = page.locator("#node-search")
    search.fill("SortMergeJoin")
    hits = page.locator("#exec-24 .plan:not([hidden]) g.node.match").count()
    assert hits == 2
    for _ in range(hits):
        search.press("Enter")
        assert page.locator("#panel").is_visible()
        node = page.locator(".node.selected")
        assert node.get_attribute("data-name") == "SortMergeJoin"
        assert _clear_of_panel(page, node)
    _screenshot(page, tmp_path, "report-q72-search.png")
    page.close()
    assert problems == []


@pytest.mark.parametrize(
    "path",
    [
        *(pytest.param(p, id=p.name) for p in JOIN_LOGS),
        pytest.param(Q72, id=Q72.name, marks=SLOW),  # a large report
    ],
)
def test_cluster_boxes_do_not_overlap_on_screen(browser: Any, path: Path, tmp_path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not present")
    page, problems = _open(browser, path, tmp_path)
    overlaps = page.evaluate(
        """() => {
          const found = [];
          document.querySelectorAll('.plan').forEach(plan => {
            const boxes = [...plan.querySelectorAll('g.cluster > rect')].map(r => r.getBBox());
            boxes.forEach((a, i) => boxes.slice(i + 1).forEach(b => {
              if (a.x < b.x + b.width && b.x < a.x + a.width
                  && a.y < b.y + b.height && b.y < a.y + a.height) found.push(plan.id);
            }));
          });
          return found;
        }"""
    )
    assert overlaps == []
    assert page.locator("g.cluster").count() > 0
    page.close()
    assert problems == []


@pytest.mark.slow
def test_timeline_legend_gives_each_stage_its_colour(browser: Any, tmp_path: Path) -> None:
    if not Q72.exists():
        pytest.skip(f"public event log {Q72} not present")
    page, problems = _open(browser, Q72, tmp_path)
    timeline = page.locator("#exec-24 details.timeline")
    timeline.locator("summary").click()
    legend = timeline.locator(".stage-legend [data-stage-class]")
    colours = legend.evaluate_all(
        "items => items.map(i => i.querySelector('rect').getAttribute('fill'))"
    )
    assert len(colours) == len(set(colours)) > 5
    bars = timeline.locator("rect.task").evaluate_all(
        "bars => [...new Set(bars.filter(b => !b.classList.contains('failed'))"
        ".map(b => b.getAttribute('fill')))]"
    )
    assert set(bars) <= set(colours)
    legend.first.hover()
    assert timeline.locator("rect.task.dim").count() > 0
    page.close()
    assert problems == []


BOX_TEXT_JS = """() => {
  const over = [];
  document.querySelectorAll('.plan').forEach(plan => { plan.hidden = false; });
  document.querySelectorAll('g.node').forEach(g => {
    const w = +g.querySelector('rect').getAttribute('width');
    const name = g.querySelector('text.name');
    const share = g.querySelector('text.share');
    const detail = g.querySelector('text.detail');
    const room = w - 8 - (share ? share.getComputedTextLength() + 6 : 2);
    if (name.getComputedTextLength() > room + 1) over.push(name.textContent);
    if (detail && detail.getComputedTextLength() > w - 10) over.push(detail.textContent);
  });
  return over;
}"""
"""The boxes whose name runs into their share of the self time, or whose second line runs past
their right edge, as laid out by the browser's own fonts."""


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(PUBLIC_CORPUS / "eventlog_v2_app-20240919162642-0000", id="photon-q88"),
        pytest.param(PUBLIC_CORPUS / "nds_q66_gpu.zstd", id="gpu-q66", marks=SLOW),
        pytest.param(Q72, id="dataproc-q72", marks=SLOW),
    ],
)
def test_operator_names_fit_their_boxes(browser: Any, path: Path, tmp_path: Path) -> None:
    # Photon's and the RAPIDS Accelerator's names are long (PhotonShuffleExchangeSink,
    # GpuColumnarExchange): a box shortens its name to the room its share leaves.
    if not path.exists():
        pytest.skip(f"public event log {path} not present")
    report = tmp_path / "report.html"
    report.write_text(html_of(path), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(report.as_uri())
    assert page.evaluate(BOX_TEXT_JS) == []
    page.close()
