"""Render the HTML report: one self-contained page per application, no external requests."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from markupsafe import Markup

from analyzer.render.environment import html_env, read_asset
from analyzer.report.html import HtmlReportView, detail_note

MAX_SECTIONS_BYTES = 4_000_000
"""Execution sections are kept slowest first while the page stays under this size (the first
one always), so that even applications with hundreds of queries give a page a browser opens fast."""

TextReport = Callable[[Sequence[int]], str]
"""Makes the text report of the given execution ids, for copying from the page."""


def inline_asset(name: str, closing: str) -> Markup:
    """Return a static asset for inlining, refusing one that would close its own element."""
    text = read_asset(name)
    if closing in text.lower():
        raise ValueError(f"static/{name} contains {closing!r} and cannot be inlined")
    return Markup(text)


def render_html(view: HtmlReportView, text_report: TextReport | None = None) -> str:
    """Return the page of `view`, its execution sections cut to the size budget.

    `text_report`, if given, makes the text report of the executions that kept a section; it is
    embedded for copying into a ticket.
    """
    view, sections = fit_sections(view)
    if text_report is not None:
        shown = [e.execution.execution_id for e in view.executions]
        view = dataclasses.replace(view, text_report=text_report(shown))
    template = html_env().get_template("report.html.j2")
    return template.render(
        report=view,
        sections=sections,
        css=inline_asset("report.css", "</style"),
        js=inline_asset("report.js", "</script"),
    )


def fit_sections(view: HtmlReportView) -> tuple[HtmlReportView, list[Markup]]:
    """Render execution sections, slowest first, until MAX_SECTIONS_BYTES; unlink the rest.

    The sections kept stay in the view's order (by start time).
    """
    template = html_env().get_template("_execution.html.j2")
    slowest = sorted(
        range(len(view.executions)),
        key=lambda i: (-(view.executions[i].execution.duration_ms or 0), i),
    )
    rendered: dict[int, Markup] = {}
    used = 0
    for i in slowest:
        html = template.render(hex=view.executions[i])
        size = len(html.encode("utf-8"))
        if rendered and used + size > MAX_SECTIONS_BYTES:
            break
        rendered[i] = Markup(html)
        used += size
    order = sorted(rendered)
    sections = [rendered[i] for i in order]
    if len(sections) == len(view.executions):
        return view, sections
    kept = tuple(view.executions[i] for i in order)
    kept_anchors = {e.execution.anchor for e in kept}
    rows = tuple(
        row if row.anchor in kept_anchors else dataclasses.replace(row, anchor="")
        for row in view.execution_rows
    )
    # One note of how many are detailed: the page's budgets may have cut them before its size.
    before = detail_note(len(view.executions), view.executions_selected)
    notes = (
        *(n for n in view.notes if n != before),
        detail_note(len(kept), view.executions_selected, to_fit=True),
    )
    links = tuple(
        link
        if link.execution_anchor in kept_anchors
        else dataclasses.replace(
            link, execution_anchor="", execution_str="", node_dom_id="", node_str=""
        )
        for link in view.finding_links
    )
    by_rank = {link.finding.rank: link for link in links}
    groups = tuple(
        dataclasses.replace(g, items=tuple(by_rank[i.finding.rank] for i in g.items))
        for g in view.finding_groups
    )
    verdict = view.verdict
    if verdict.root_cause_execution not in kept_anchors:
        verdict = dataclasses.replace(verdict, root_cause_execution="")
    return dataclasses.replace(
        view,
        executions=kept,
        execution_rows=rows,
        notes=notes,
        finding_links=links,
        finding_groups=groups,
        verdict=verdict,
    ), sections
