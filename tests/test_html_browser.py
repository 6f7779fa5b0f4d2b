"""The HTML report in a real headless chromium: no errors, no requests, panels match the JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reports import html_of, json_of, report_log_params

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
LOGS = report_log_params()

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
    page.screenshot(path=str(tmp_path / "summary.png"))
    target = _node_to_click(json_of(path))
    if target is not None:
        dom_id, node = target
        page.locator(f'[id="{dom_id}"]').click()
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
        page.screenshot(path=str(tmp_path / "panel.png"))
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
