"""Render the plain-text EXPLAIN ANALYZE report: its view model through `report.txt.j2`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

from analyzer.render.environment import text_env
from analyzer.render.terminal import apply_colour, fit_line
from analyzer.report.text import TextExecutionView, TextReportView

PIECES_PER_BATCH = 1 << 16
"""A streamed text report is handed out in batches of this many of the template's pieces (a few
characters each: about 1 MB), cut at line ends."""


def render_text(view: TextReportView, width: int = 100, color: bool = False) -> str:
    """Render the text report, every line fitted to `width` columns, coloured only if `color`.

    Values from the log are neutralized as they are printed (see `render.environment`); the
    colour marks become ANSI escapes only after the lines are fitted.
    """
    return "".join(render_text_chunks(view, view.executions, width, color))


def render_text_chunks(
    view: TextReportView,
    executions: Iterable[TextExecutionView],
    width: int = 100,
    color: bool = False,
) -> Iterator[str]:
    """Render the text report of `view` with `executions` as its executions, in pieces whose
    concatenation is the report (`render_text`).

    The template is rendered as it is read (`Template.generate`), so an execution's view is
    made, printed and dropped before the next: a report of tens of thousands of executions is
    never whole in memory, as views or as text. Lines are fitted as whole lines arrive, one line
    end between the fitted parts.
    """
    template = text_env().get_template("report.txt.j2")
    pieces = template.generate(
        app=view, executions=executions, color=color, width=width, rule="═" * width
    )
    first = True
    for lines in _line_batches(pieces):
        parts = [part for line in lines for part in fit_line(line.rstrip(), width)]
        if parts:
            text = "\n".join(parts)
            yield apply_colour(text if first else "\n" + text)
            first = False


def _without_leading_rule(text: str) -> str:
    # Without the summary section the first section's blank line and rule would lead.
    text = text.lstrip("\n")
    if text.startswith("═"):
        text = text.partition("\n")[2]
    return text


def _line_batches(pieces: Iterator[str]) -> Iterator[list[str]]:
    """The lines of the text the pieces make, less what `_without_leading_rule` takes off its
    start, without their line ends (the last one maybe empty), as `str.split("\\n")` gives
    them, in batches of `PIECES_PER_BATCH` pieces.

    The template hands out millions of pieces of a few characters: they are taken and joined a
    batch at a time (`islice`, `str.join`), with no Python step per piece.
    """
    pending = ""
    started = False
    while batch := list(islice(pieces, PIECES_PER_BATCH)):
        text = pending + "".join(batch)
        if not started:
            head = text.lstrip("\n")
            if not head or (head.startswith("═") and "\n" not in head):
                pending = text  # the leading rule's line is not whole yet
                continue
            text, started = _without_leading_rule(text), True
        lines = text.split("\n")
        pending = lines.pop()
        yield lines
    yield (pending if started else _without_leading_rule(pending)).split("\n")
