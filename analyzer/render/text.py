"""The plain-text EXPLAIN ANALYZE report: view models through `templates/report.txt.j2`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from analyzer.aggregate.analysis import Analysis
from analyzer.insights import Thresholds
from analyzer.render.environment import template_env
from analyzer.report.views import MetricsLevel, build_application_view

WIDTH = 100
"""Columns every line of the text report fits in."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LEAD = re.compile(r"^[ │├└─…·]*")


def visible_len(line: str) -> int:
    """Return the number of columns `line` takes on a terminal (ANSI escapes take none)."""
    return len(_ANSI.sub("", line))


def _continuation(lead: str) -> str:
    """Turn a line's tree guides into the guides of its wrapped continuation lines."""
    out = lead.replace("├", "│").replace("└", " ").replace("─", " ").replace("·", " ")
    return out + "  "


def fit_line(line: str, width: int = WIDTH) -> list[str]:
    """Wrap one line at spaces to `width` columns, continuing under its tree guides.

    >>> fit_line("│  · rows 1,234 (min 0, med 5, max 9)", 24)
    ['│  · rows 1,234 (min 0,', '│      med 5, max 9)']
    """
    if visible_len(line) <= width:
        return [line]
    lead = _LEAD.match(line)
    lead_str = lead.group(0) if lead else ""
    cont = _continuation(lead_str)
    if len(cont) > width // 2:
        cont = "  "
    out: list[str] = []
    current = lead_str
    current_len = len(lead_str)
    for word in line[len(lead_str) :].split(" "):
        word_len = visible_len(word)
        base = len(cont) if out else len(lead_str)
        if current_len > base and current_len + 1 + word_len > width:
            out.append(current)
            current, current_len = cont, len(cont)
        while current_len + word_len > width and word_len > width - len(cont):
            room = width - current_len
            out.append(current + word[:room])
            word, word_len = word[room:], word_len - room
            current, current_len = cont, len(cont)
        sep = "" if current_len == (len(cont) if out else len(lead_str)) else " "
        current += sep + word
        current_len += len(sep) + word_len
    out.append(current)
    return out


def fit_width(text: str, width: int = WIDTH) -> str:
    """Make every line of `text` fit in `width` columns (see `fit_line`)."""
    lines = text.split("\n")
    return "\n".join(part for line in lines for part in fit_line(line.rstrip(), width))


def render_text(
    analysis: Analysis,
    executions: Sequence[int] | None = None,
    top: int | None = None,
    metrics: MetricsLevel = "summary",
    color: bool = False,
    now_ms: int | None = None,
    thresholds: Thresholds | None = None,
) -> str:
    """Render the text report of `analysis`, fitted to 100 columns, coloured only if `color`.

    The findings come first, then the executions. `executions` keeps only those SQL execution
    ids, `top` the N slowest (the Findings section keeps theirs and the application's); `metrics`
    is none (plan only), summary (main metrics) or full (every metric, and a line per task);
    `now_ms` is the clock, printed as the generation time when given; `thresholds` tunes the
    finding rules (default `Thresholds()`). Raises `UsageError` for bad options.
    """
    view = build_application_view(
        analysis,
        executions=executions,
        top=top,
        metrics_level=metrics,
        now_ms=now_ms,
        thresholds=thresholds,
    )
    template = template_env().get_template("report.txt.j2")
    text = template.render(app=view, color=color, width=WIDTH, rule="═" * WIDTH)
    return fit_width(text, WIDTH)
