"""Render the plain-text EXPLAIN ANALYZE report: its view model through `report.txt.j2`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from analyzer.render.environment import text_env
from analyzer.render.terminal import apply_colour, fit_line, fit_width
from analyzer.report.text import TextExecutionView, TextReportView

CHUNK_CHARS = 1 << 20
"""A streamed text report is handed out in pieces of about this many characters, whole lines."""


def render_text(view: TextReportView, width: int = 100, color: bool = False) -> str:
    """Render the text report, every line fitted to `width` columns, coloured only if `color`.

    Values from the log are neutralized as they are printed (see `render.environment`); the
    colour marks become ANSI escapes only after the lines are fitted.
    """
    template = text_env().get_template("report.txt.j2")
    text = template.render(
        app=view, executions=view.executions, color=color, width=width, rule="═" * width
    )
    return apply_colour(fit_width(_without_leading_rule(text), width))


def render_text_chunks(
    view: TextReportView,
    executions: Iterable[TextExecutionView],
    width: int = 100,
    color: bool = False,
) -> Iterator[str]:
    """Render the text report of `view` with `executions` as its executions, in pieces: the
    pieces joined are `render_text` of the view holding those executions.

    The template is rendered as it is read (`Template.generate`), so an execution's view is
    made, printed and dropped before the next: a report of tens of thousands of executions is
    never whole in memory, as views or as text.
    """
    template = text_env().get_template("report.txt.j2")
    pieces = template.generate(
        app=view, executions=executions, color=color, width=width, rule="═" * width
    )
    parts = _fitted_parts(_lines(_raw_without_leading_rule(pieces)), width)
    out: list[str] = []
    size = 0
    for i, part in enumerate(parts):
        if i:
            out.append("\n")
        out.append(part)
        size += len(part) + 1
        if size >= CHUNK_CHARS:
            yield apply_colour("".join(out))
            out, size = [], 0
    if out:
        yield apply_colour("".join(out))


def _without_leading_rule(text: str) -> str:
    # Without the summary section the first section's blank line and rule would lead.
    text = text.lstrip("\n")
    if text.startswith("═"):
        text = text.partition("\n")[2]
    return text


def _raw_without_leading_rule(pieces: Iterator[str]) -> Iterator[str]:
    """`pieces` with what `_without_leading_rule` takes off the whole text taken off its start."""
    head = ""
    for piece in pieces:
        head += piece
        stripped = head.lstrip("\n")
        if stripped and (not stripped.startswith("═") or "\n" in stripped):
            yield _without_leading_rule(head)
            break
    else:
        yield _without_leading_rule(head)
        return
    yield from pieces


def _lines(pieces: Iterator[str]) -> Iterator[str]:
    """The lines of the text the pieces make, without their line ends (the last one maybe
    empty), as `str.split("\n")` gives them."""
    pending = ""
    for piece in pieces:
        if "\n" not in piece:
            pending += piece
            continue
        lines = (pending + piece).split("\n")
        pending = lines.pop()
        yield from lines
    yield pending


def _fitted_parts(lines: Iterator[str], width: int) -> Iterator[str]:
    """Every line fitted to `width` columns, part after part, as `fit_width` joins them."""
    for line in lines:
        yield from fit_line(line.rstrip(), width)
