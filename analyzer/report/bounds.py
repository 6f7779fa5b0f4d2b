"""Display bounds: every string a text or HTML report shows has a bounded length, and shows
the characters that cannot be seen (bidi overrides, tag characters, fillers) as escapes.

Strings in a log are written by whoever submits the job and can be megabytes long (an app name,
a host, a metric name). Shown whole they make reports of hundreds of megabytes, and wrapping
them takes minutes; so the text and HTML views are clipped in one pass, after they are built and
before they are laid out. A value is clipped to `DISPLAY_CHARS`, or to the `max_chars` its view
field declares in its metadata (Spark's physical plan text is long by nature). The JSON report
keeps every value whole.

The same pass writes invisible and reordering characters visibly (`units.show_invisible`), so
the HTML page, whose values a browser would otherwise lay out right to left or hide, shows them
as the text and Markdown reports do.
"""

from __future__ import annotations

from typing import TypeVar

from analyzer.units import has_invisible, show_invisible
from analyzer.walk import any_string, map_strings

DISPLAY_CHARS = 10_000
"""The most characters of one value a text or HTML report shows, unless its field says more."""
LONG_TEXT_CHARS = 4_000_000
"""`max_chars` of fields meant for long text (a physical plan description)."""

T = TypeVar("T")


def long_text() -> dict[str, int]:
    """Field metadata of a view field that may hold up to `LONG_TEXT_CHARS` characters."""
    return {"max_chars": LONG_TEXT_CHARS}


def clip_display(text: str, limit: int = DISPLAY_CHARS) -> str:
    """Return `text`, or its first `limit` characters and how many more there were.

    >>> clip_display("abcdef", 3)
    'abc… (3 more characters; the JSON report has them all)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters; the JSON report has them all)"


def clip_view(view: T) -> T:
    """Return `view` with every string in it clipped by `clip_display` to `DISPLAY_CHARS` (or to
    the `max_chars` of the dataclass field holding it) and its invisible characters shown
    (`show_invisible`).

    A first, cheap look (`walk.any_string`) decides whether any string needs either; only then
    is the view rebuilt (`walk.map_strings`), and only along the paths that hold such a string.
    """
    if not any_string(view, _to_show_otherwise):
        return view
    return map_strings(view, _shown)


def _to_show_otherwise(text: str, limit: int | None) -> bool:
    # Asked of every string of a page: plain ASCII (nearly all of them) is answered without a
    # second call (`has_invisible` begins with the same test).
    if len(text) > (limit or DISPLAY_CHARS):
        return True
    return not (text.isascii() and text.isprintable()) and has_invisible(text)


def _shown(text: str, limit: int | None) -> str:
    return show_invisible(clip_display(text, limit or DISPLAY_CHARS))
