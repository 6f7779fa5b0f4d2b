r"""Markdown for GitHub and GitLab comments: escaping for untrusted text, the environment, tables.

Everything read from a log is untrusted here as in HTML: a description can hold `|` (which would
cut a table row), backticks, `<script>`, `[text](javascript:…)`, `@someone` (a notification),
`#12` (a link to an issue), a URL (a link), or terminal control characters. Two ways out:

- `md_text`: plain text. Control characters are shown (`\x1b`), line breaks become spaces,
  the characters that make emphasis, code, links, HTML, tables and entities are escaped with a
  backslash (CommonMark allows it before any ASCII punctuation), so is what would start a block
  (a list, a heading, a rule), and what GitHub and GitLab turn into links or notifications even
  when escaped (`@name`, `#12`, `!12`, `~label`, `https://`, `www.`) gets a zero-width space
  after its sign, which breaks the reference and stays invisible.
- `md_code`: a code span, for names, plans and values: nothing inside one is a link, a mention,
  HTML or emphasis. Its fence is one backtick longer than the longest run of backticks inside.
  In a table cell (`md_cell_code`) a pipe is written `\|`, which GFM tables read as a pipe even
  inside code.

The markdown environment prints every value through `md_text` unless a filter already made it
safe (`MdSafe`), as the HTML environment autoescapes.

Tables are written row by row in the templates (`| a | b |` with escaped cells). Measured on 500
escaped operator rows with descriptions of 5 to 100 characters: `tabulate`'s `github` format
writes 86,845 characters and py-markdown-table 80,319, both padding every cell to its column's
widest; the rows written by hand are 47,086 (the 60,000-character budget of a comment goes to
content), take a millisecond instead of 50 to 120, need no dependency, and every cell goes through
the same escaping. Neither package escapes a cell: a `|` from a log adds a column.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from functools import cache

import jinja2
import markupsafe

from analyzer import units
from analyzer.render import terminal
from analyzer.render.environment import TEMPLATE_DIRS
from analyzer.report.markdown import MarkdownReportView

MAX_MARKDOWN_CHARS = 60_000
"""A Markdown report or diff stays under this many characters (GitHub allows 65,536 in a comment;
GitLab more), whatever the log's size."""

MAX_TEXT_CHARS = 1_000
"""Text longer than this is cut (with `…`) before it is escaped …"""
MAX_CODE_CHARS = 300
"""… and values in code spans longer than this: a 1 MB application name stays one line."""

ZWSP = "\u200b"
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x85]")
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
_REFERENCE = re.compile(r"([@#!~%$&])(?=[\w\"'])")
_BLOCK_START = re.compile(r"^(\s*)([-+*](?=\s|$)|[-=]{3,}|#|\d+[.)](?=\s|$))")
_AUTOLINK = re.compile(r"(?i):(?=//)|www\.")


class MdSafe(str):
    """Markdown that is already safe to print: our own syntax around escaped values."""

    __slots__ = ()


def _one_line(value: object, limit: int | None = None) -> str:
    text = "" if value is None else str(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return terminal.neutralize(_LINE_BREAKS.sub(" ", text))


def md_text(value: object) -> MdSafe:
    r"""Escape untrusted text for Markdown: shown as it is, never acted on.

    >>> print(md_text("a|b `x` <img src=y> [l](javascript:z) *y*"))
    a\|b \`x\` \<img src=y\> \[l\](javascript:z) \*y\*
    >>> md_text("@bob #12 https://x.io WWW.y.io").replace(ZWSP, "+")
    '@+bob #+12 https+://x.io WWW+.y.io'
    >>> print(md_text("1. first\nsecond"))
    1\. first second
    """
    if isinstance(value, MdSafe):
        return value
    text = _one_line(value, MAX_TEXT_CHARS)
    text = _AUTOLINK.sub(lambda m: m.group(0)[:-1] + ZWSP + m.group(0)[-1], text)
    text = _REFERENCE.sub(lambda m: m.group(1) + ZWSP, text)
    text = _SPECIAL.sub(r"\\\1", text)
    text = _BLOCK_START.sub(_escape_block_start, text)
    return MdSafe(text)


def _escape_block_start(match: re.Match[str]) -> str:
    marker = match.group(2)
    if marker[0].isdigit():  # `1.` starts a list, `1\.` does not; a backslash before a digit
        return match.group(1) + marker[:-1] + "\\" + marker[-1]  # would print
    return match.group(1) + "\\" + marker


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * (longest + 1)


def md_code(value: object) -> MdSafe:
    """Put untrusted text in a code span (one line), whatever backticks it holds.

    >>> print(md_code("a `b` c"))
    `` a `b` c ``
    >>> md_code("")
    ''
    """
    text = _one_line(value, MAX_CODE_CHARS)
    if not text:
        return MdSafe("")
    fence = _fence(text)
    return MdSafe(f"{fence} {text} {fence}")


def md_cell_code(value: object) -> MdSafe:
    r"""`md_code` for a table cell: its pipes escaped as GFM tables read them.

    >>> print(md_cell_code("a|b"))
    ` a\|b `
    """
    return MdSafe(md_code(value).replace("|", "\\|"))


def md_code_block(lines: Iterable[object]) -> MdSafe:
    """Put untrusted lines in a fenced code block whose fence no line can close.

    >>> print(md_code_block(["a", "```b"]))
    ````
    a
    ```b
    ````
    """
    text = "\n".join(terminal.neutralize(_LINE_BREAKS.sub(" ", str(line))) for line in lines)
    fence = "`" * max(3, len(_fence(text)))
    return MdSafe(f"{fence}\n{text}\n{fence}")


def md_html(value: object) -> MdSafe:
    """Escape text for the inside of an HTML block (a `<summary>`), where Markdown is not read.

    >>> print(md_html("a <b> & c"))
    a &lt;b&gt; &amp; c
    """
    return MdSafe(str(markupsafe.escape(_one_line(value, MAX_TEXT_CHARS))))


def _finalize(value: object) -> object:
    if isinstance(value, MdSafe):
        return value
    if isinstance(value, bool | int | float):
        return md_text(str(value))
    return md_text(value)


@cache
def markdown_env() -> jinja2.Environment:
    """Return the cached environment of Markdown templates: every printed value escaped."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in TEMPLATE_DIRS]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        code=md_code,
        cell_code=md_cell_code,
        text=md_text,
        html=md_html,
        code_block=md_code_block,
        bytes=units.fmt_bytes,
        duration_ms=units.fmt_duration_ms,
        count=units.fmt_count,
        pct=units.fmt_pct,
    )
    return env


def cut_to_budget(text: str, limit: int = MAX_MARKDOWN_CHARS) -> str:
    """Cut a Markdown document at a line boundary to stay under `limit` characters, saying so.

    The renderers first drop detail to fit; this is the last guard.
    """
    if len(text) <= limit:
        return text
    note = "\n\n*(cut here: the rest would not fit in a comment; see the full report)*\n"
    keep = text[: limit - len(note) - 200]
    keep = keep[: keep.rfind("\n")] if "\n" in keep else keep
    # Close what the cut left open: a code fence, then <details> blocks.
    fence = ""
    for line in keep.split("\n"):
        if fence and line == fence:
            fence = ""
        elif not fence and re.fullmatch(r"`{3,}", line):
            fence = line
    closing = ("\n" + fence) if fence else ""
    closing += "\n\n</details>" * max(0, keep.count("<details>") - keep.count("</details>"))
    return keep + closing + note


def render_markdown_report(view: MarkdownReportView, limit: int = MAX_MARKDOWN_CHARS) -> str:
    """Render the Markdown summary of an application under `limit` characters.

    Detail is dropped until it fits: the hot plans beyond the slowest, then its tree, then
    findings beyond the first five; a last cut keeps the head.
    """
    template = markdown_env().get_template("report.md.j2")
    text = template.render(md=view)
    steps: tuple[Callable[[MarkdownReportView], MarkdownReportView], ...] = (
        lambda v: dataclasses.replace(v, hot_plans=v.hot_plans[:1]),
        lambda v: dataclasses.replace(
            v, hot_plans=tuple(dataclasses.replace(p, tree_lines=()) for p in v.hot_plans)
        ),
        lambda v: dataclasses.replace(
            v,
            findings=v.findings[:5],
            n_findings_hidden=v.n_findings_hidden + max(0, len(v.findings) - 5),
        ),
    )
    for step in steps:
        if len(text) <= limit:
            break
        view = step(view)
        text = template.render(md=view)
    return cut_to_budget(text, limit)
