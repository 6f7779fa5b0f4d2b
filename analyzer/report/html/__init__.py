"""View models of the HTML report, by section: the page, plan graphs, node panels, timeline."""

from analyzer.report.html.page import HtmlReportView, build_html_view, detail_note

__all__ = ["HtmlReportView", "build_html_view", "detail_note"]
