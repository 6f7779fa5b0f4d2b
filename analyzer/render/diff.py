"""Render a comparison of two runs: text, one self-contained HTML page, or Markdown."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from markupsafe import Markup

from analyzer.render.environment import html_env, text_env
from analyzer.render.html import inline_asset
from analyzer.render.markdown import MAX_MARKDOWN_CHARS, cut_to_budget, markdown_env
from analyzer.render.terminal import apply_colour, fit_width
from analyzer.report.diff import DiffView


def render_diff_text(view: DiffView, width: int = 100, color: bool = False) -> str:
    """Render the text diff, every line fitted to `width`, coloured only if `color`."""
    template = text_env().get_template("diff.txt.j2")
    text = template.render(diff=view, color=color, width=width, rule="═" * width)
    return apply_colour(fit_width(text, width))


def render_diff_html(view: DiffView) -> str:
    """Render the diff as one page with the report's styles and content security policy."""
    template = html_env().get_template("diff.html.j2")
    return template.render(
        diff=view,
        css=Markup(
            inline_asset("report.css", "</style") + "\n" + inline_asset("diff.css", "</style")
        ),
        js=Markup(""),
    )


def render_diff_markdown(view: DiffView, limit: int = MAX_MARKDOWN_CHARS) -> str:
    """Render the diff as Markdown for a comment, under `limit` characters.

    Detail is dropped until it fits: first the operators of each execution, then executions
    beyond the first few, then the unpaired ones and the settings; a last cut keeps the head.
    """
    template = markdown_env().get_template("diff.md.j2")
    text = template.render(diff=view)
    steps: tuple[Callable[[DiffView], DiffView], ...] = (
        lambda v: dataclasses.replace(
            v, executions=tuple(dataclasses.replace(e, nodes=e.nodes[:3]) for e in v.executions)
        ),
        lambda v: dataclasses.replace(
            v,
            executions=v.executions[:5],
            n_executions_hidden=v.n_executions_hidden + max(0, len(v.executions) - 5),
        ),
        lambda v: dataclasses.replace(
            v,
            executions=tuple(dataclasses.replace(e, nodes=()) for e in v.executions),
            unmatched=v.unmatched[:10],
            config=v.config[:20],
            new_findings=v.new_findings[:10],
            resolved_findings=v.resolved_findings[:10],
        ),
    )
    for step in steps:
        if len(text) <= limit:
            break
        view = step(view)
        text = template.render(diff=view)
    return cut_to_budget(text, limit)
