"""Render the HTML report: one self-contained page per application, no external requests."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from analyzer.aggregate.analysis import Analysis
from analyzer.insights import Thresholds
from analyzer.render.environment import read_asset, template_env
from analyzer.report.html_view import HtmlReportView, build_html_view

MAX_SECTIONS_BYTES = 4_000_000
"""Execution sections are added slowest first while the page stays under this size (the first
one always), so that even applications with hundreds of queries give a page a browser opens fast."""


def _inline(name: str, closing: str) -> Markup:
    """Return a static asset for inlining, refusing one that would close its own element."""
    text = read_asset(name)
    if closing in text.lower():
        raise ValueError(f"static/{name} contains {closing!r} and cannot be inlined")
    return Markup(text)


def _text_report(
    analysis: Analysis,
    executions: Sequence[int] | None,
    top: int | None,
    now_ms: int | None,
    thresholds: Thresholds | None,
) -> str:
    """The text report for copying from the page, when the text renderer is available."""
    try:
        from analyzer.render.text import render_text
    except ImportError:
        return ""
    options: dict[str, Any] = {}
    if thresholds is not None and "thresholds" in inspect.signature(render_text).parameters:
        options["thresholds"] = thresholds  # the same findings as the page
    return render_text(
        analysis, executions=executions, top=top, color=False, now_ms=now_ms, **options
    )


def render_html(
    analysis: Analysis,
    executions: Sequence[int] | None = None,
    top: int | None = None,
    now_ms: int | None = None,
    thresholds: Thresholds | None = None,
) -> str:
    """Return the HTML report of an analysis as one self-contained page.

    `executions` limits it to those SQL execution ids, `top` to the N slowest; `now_ms` fixes the
    "generated at" time (gold files) instead of the clock; `thresholds` tunes the findings shown
    first (default `Thresholds()`).
    """
    view = build_html_view(
        analysis, executions=executions, top=top, now_ms=now_ms, thresholds=thresholds
    )
    view, sections = _fit_sections(view)
    shown = [e.execution_id for e in view.executions]
    view = dataclasses.replace(
        view, text_report=_text_report(analysis, shown, None, now_ms, thresholds)
    )
    template = template_env().get_template("report.html.j2")
    return template.render(
        report=view,
        sections=sections,
        css=_inline("report.css", "</style"),
        js=_inline("report.js", "</script"),
    )


def _fit_sections(view: HtmlReportView) -> tuple[HtmlReportView, list[Markup]]:
    """Render the execution sections slowest first until MAX_SECTIONS_BYTES; unlink the rest."""
    template = template_env().get_template("_execution.html.j2")
    sections: list[Markup] = []
    used = 0
    for execution in view.executions:
        html = template.render(execution=execution)
        size = len(html.encode("utf-8"))
        if sections and used + size > MAX_SECTIONS_BYTES:
            break
        sections.append(Markup(html))
        used += size
    if len(sections) == len(view.executions):
        return view, sections
    kept = view.executions[: len(sections)]
    kept_anchors = {e.anchor for e in kept}
    rows = tuple(
        row if row.anchor in kept_anchors else dataclasses.replace(row, anchor="")
        for row in view.execution_rows
    )
    note = (
        f"To keep the page small, detailed sections cover the {len(kept)} slowest executions; "
        "choose others with --execution or --top."
    )
    notes = (*view.notes, note)
    findings = tuple(
        f
        if f.execution_anchor in kept_anchors
        else dataclasses.replace(
            f, execution_anchor="", execution_str="", node_dom_id="", node_str=""
        )
        for f in view.findings
    )
    return dataclasses.replace(
        view, executions=kept, execution_rows=rows, notes=notes, findings=findings
    ), sections
