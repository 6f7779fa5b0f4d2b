"""Render the plain-text EXPLAIN ANALYZE report: its view model through `report.txt.j2`."""

from __future__ import annotations

from analyzer.render.environment import text_env
from analyzer.render.terminal import apply_colour, fit_width
from analyzer.report.text import TextReportView


def render_text(view: TextReportView, width: int = 100, color: bool = False) -> str:
    """Render the text report, every line fitted to `width` columns, coloured only if `color`.

    Values from the log are neutralized as they are printed (see `render.environment`); the
    colour marks become ANSI escapes only after the lines are fitted.
    """
    template = text_env().get_template("report.txt.j2")
    text = template.render(app=view, color=color, width=width, rule="═" * width)
    # Without the summary section the first section's blank line and rule would lead.
    text = text.lstrip("\n")
    if text.startswith("═"):
        text = text.partition("\n")[2]
    return apply_colour(fit_width(text, width))
