"""Render the batch index page: one self-contained HTML file, no external requests."""

from __future__ import annotations

from analyzer.render.environment import html_env
from analyzer.render.html import inline_asset
from analyzer.report.batch_index import BatchIndexView


def render_batch_index(view: BatchIndexView) -> str:
    """Return the index page of a batch output directory."""
    template = html_env().get_template("batch_index.html.j2")
    return template.render(
        view=view,
        css=inline_asset("batch_index.css", "</style"),
        js=inline_asset("batch_index.js", "</script"),
    )
