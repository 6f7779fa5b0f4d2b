"""Render the batch index page: one self-contained HTML file, no external requests."""

from __future__ import annotations

from markupsafe import Markup

from analyzer.render.environment import read_asset, template_env
from analyzer.report.batch_index import BatchIndexView


def _inline(name: str, closing: str) -> Markup:
    """Return a static asset for inlining, refusing one that would close its own element."""
    text = read_asset(name)
    if closing in text.lower():
        raise ValueError(f"static/{name} contains {closing!r} and cannot be inlined")
    return Markup(text)


def render_batch_index(view: BatchIndexView) -> str:
    """Return the index page of a batch output directory."""
    template = template_env().get_template("batch_index.html.j2")
    return template.render(
        view=view,
        css=_inline("batch_index.css", "</style"),
        js=_inline("batch_index.js", "</script"),
    )
