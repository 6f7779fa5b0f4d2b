"""Terminal helpers for the text report and tables: ANSI colour, wrapping, clipping, width fitting.

Everything here is layout for a terminal or a plain-text ticket; numbers are worded by
`analyzer.units` before they get here.
"""

from __future__ import annotations

import os
import re

from analyzer.units import show_invisible


def neutralize(text: str) -> str:
    r"""Show every control, format and invisible character of `text` visibly, so a terminal only
    prints it (`units.show_invisible`, newlines included).

    Escape sequences, carriage returns, backspaces, newlines and bidi overrides from a log
    become `\x1b`, `\x0d`, `\u202e` …; a tab becomes a space.

    >>> neutralize("app\x1b]0;owned\x07 name\u202e\tx")
    'app\\x1b]0;owned\\x07 name\\u202e x'
    """
    if text.isascii() and text.isprintable():
        return text
    return show_invisible(text.replace("\t", " "), newlines=True)


_NONCE = os.urandom(8).hex()
"""A per-process secret in our own colour marks: text from a log cannot forge one (`os.urandom`,
what `secrets.token_hex` reads, without importing `secrets` and its hashing modules)."""
_MARK_OPEN = f"\ue000{_NONCE}:"
_MARK_CLOSE = "\ue001"
_MARK = re.compile(re.escape(_MARK_OPEN) + "([0-9;]+)" + re.escape(_MARK_CLOSE))


def clip_text(text: str, width: int) -> str:
    """Cut `text` to its first line and at most `width` characters, ending in `…` when cut.

    >>> clip_text("Exchange hashpartitioning(a#1, 200)", 12)
    'Exchange ha…'
    """
    first, _, rest = text.partition("\n")
    if len(first) <= width and not rest:
        return first
    return first[: max(width - 1, 0)].rstrip() + "…"


_UNITS = frozenset({"%", "ms", "s", "min", "h", "B", "KiB", "MiB", "GiB", "TiB"})
"""Units a number is never parted from at the end of a line (`0.0 %`, `1.2 s`)."""
_CLOSING = ",.;:)]"
"""What may follow a unit in the same word (`(6.5 %),`)."""


def _kept_together(words: list[str]) -> list[str]:
    """Join the words a line must not break between: a word and the number or `#id` after it
    (`stage 50`, `SQL execution 24`, `node #30`), and a number and its unit (`0.0 %`).

    >>> _kept_together("node #30 Sort · stage 50 · 0.0 % (ids 3, 5) (6.5 %),".split())
    ['node #30', 'Sort', '·', 'stage 50', '·', '0.0 %', '(ids 3,', '5)', '(6.5 %),']
    """
    out: list[str] = []
    for word in words:
        if out:
            last = out[-1]
            number_after_word = last[-1].isalpha() and (word[0].isdigit() or word[0] == "#")
            unit_after_number = word.rstrip(_CLOSING) in _UNITS and last[-1].isdigit()
            if number_after_word or unit_after_number:
                out[-1] = f"{last} {word}"
                continue
        out.append(word)
    return out


def wrap_text(text: str, width: int, max_lines: int | None = None) -> list[str]:
    """Break `text` into lines of at most `width` characters at spaces (long words are cut),
    never between a word and the number after it or a number and its unit (`_kept_together`).

    Newlines in `text` are kept; with `max_lines`, the last line kept ends in `…` if more followed.

    >>> wrap_text("select a, b from t where a > 1", 12)
    ['select a, b', 'from t where', 'a > 1']
    >>> wrap_text("SortMergeJoin · stage 50", 20)
    ['SortMergeJoin ·', 'stage 50']
    """
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        words = _kept_together(paragraph.split())
        current = ""
        for word in words:
            while len(word) > width:
                if current:
                    lines.append(current)
                    current = ""
                lines.append(word[:width])
                word = word[width:]
            candidate = f"{current} {word}" if current else word
            if len(candidate) <= width:
                current = candidate
            else:
                lines.append(current)
                current = word
        lines.append(current)
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = clip_text(lines[-1] + " …", width)
    return lines


ANSI_STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
"""The ANSI SGR codes the text report may use, by style name."""


def ansi(text: str, style: str, enabled: bool) -> str:
    """Mark `text` to be shown in `style` (`bold`, `red`, …) when `enabled`, else return it.

    The mark becomes an ANSI escape in `apply_colour`, after the template is rendered. An empty
    `style` leaves the text plain, so a view model can say "no colour".

    >>> ansi("FAILED", "red", False)
    'FAILED'
    >>> ansi("info", "", True)
    'info'
    """
    if not enabled or not text or not style:
        return text
    return f"{_MARK_OPEN}{ANSI_STYLES[style]}{_MARK_CLOSE}{text}{_MARK_OPEN}0{_MARK_CLOSE}"


def apply_colour(text: str) -> str:
    """Turn the colour marks `ansi` left in a rendered report into ANSI escape sequences.

    Marks stand in for escapes until every value from a log has been neutralized, so that the
    report's own colours are the only escape sequences in it.
    """
    return _MARK.sub(lambda m: f"\x1b[{m.group(1)}m", text)


def finalize_terminal(value: object) -> object:
    """Neutralize every string a text template prints (jinja's `finalize` for text templates)."""
    return neutralize(value) if isinstance(value, str) else value


def wrap_prefixed(
    text: str, prefix: str, width: int = 100, max_lines: int | None = None
) -> list[str]:
    """Wrap `text` to `width` columns after `prefix`, indenting later lines under the first
    (the prefix's colour marks take no column).

    >>> wrap_prefixed("one two three", "x: ", 10)
    ['x: one two', '   three']
    """
    inner = max(width - visible_len(prefix), 10)
    lines = wrap_text(text, inner, max_lines)
    pad = " " * visible_len(prefix)
    return [(prefix if i == 0 else pad) + line for i, line in enumerate(lines)]


def clip_after(tail: str, head: str, width: int = 100) -> str:
    """Clip `tail` so that `head + tail` fits in `width` columns (`head` is printed before it).

    >>> clip_after(" Exchange hashpartitioning(a#1)", "├─ Sort", 20)
    ' Exchange ha…'
    """
    return clip_text(tail, max(width - len(head), 1))


_ANSI = re.compile(r"\x1b\[[0-9;]*m|" + re.escape(_MARK_OPEN) + r"[0-9;]*" + re.escape(_MARK_CLOSE))
_LEAD = re.compile(r"^[ │├└─…·]*")


def visible_len(line: str) -> int:
    """Return the number of columns `line` takes on a terminal (colour escapes take none)."""
    return len(_ANSI.sub("", line))


def _continuation(lead: str) -> str:
    """Turn a line's tree guides into the guides of its wrapped continuation lines."""
    out = lead.replace("├", "│").replace("└", " ").replace("─", " ").replace("·", " ")
    return out + "  "


def fit_line(line: str, width: int = 100) -> list[str]:
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


def fit_width(text: str, width: int = 100) -> str:
    """Make every line of `text` fit in `width` columns (see `fit_line`)."""
    lines = text.split("\n")
    return "\n".join(part for line in lines for part in fit_line(line.rstrip(), width))
