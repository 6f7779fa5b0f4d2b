"""Free text from the log (descriptions, error messages, failure reasons, call sites): its
quoted strings and numbers, and where our own text quotes them again.

A number is a value unless Spark's words say it is an id or a measure (`task 3`, `4 times`,
`10.4 GB`, `file.py:12`). Reports quote free text whole, cut (`…`) or in part (a root cause is
the last line of an error message), so each literal is remembered with the words beside it in
the log (a `Fragment`) and replaced wherever those words stand next to it again; `task 4242` of
our own text is left alone, because the words differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from analyzer.redact.pseudonyms import Pseudonyms
from analyzer.redact.spans import Spans


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_QUOTED = re.compile(r"(?<![\w'\"])([rRbBuUfF]{0,2})(['\"])([^'\"\n]{1,500})\2(?![\w])")
_FREE_NUMBER = re.compile(r"(?<![\w.$#@/\\-])\d+(?:[.:/-]\d+)*(?![\w]|[.:/-]\d)")
_KEEP_AFTER_WORD = _words(
    """task tasks stage stages tid executor executors job jobs attempt attempts line lines
    partition partitions port code sqlstate version spark java python scala jdk retry retries
    worker workers shuffle map reduce rdd block broadcast batch epoch query execution node
    operator codegen thread pid"""
)
"""A number after one of these words is Spark's id or a code line, not a value (`task 3`)."""
_KEEP_BEFORE_WORD = _words(
    """times time tasks task attempts attempt retries executors executor cores core partitions
    ms s sec secs second seconds min mins minute minutes h hour hours b kb mb gb tb kib mib
    gib tib bytes byte % rows paths files"""
)
"""A number before one of these words is a count or a measure (`4 times`, `10.4 GB`)."""
_WORD_BEFORE = re.compile(r"([A-Za-z%]+)\W{0,3}$")
_WORD_AFTER = re.compile(r"^\s?([A-Za-z%]+)")
_CONTEXT_WORDS = 2
_CONTEXT_CHARS = 30


@dataclass(frozen=True)
class Fragment:
    """A literal of free text with the words beside it in the log, to be found in our own text.

    Reports quote free text whole, cut (`…`) or in part (a root cause is the last line of an
    error message): the literal is replaced wherever it appears with the same neighbouring words
    (`customer id 4242`), so that `task 4242` of our own text is left alone.
    """

    before: str
    """Raw text just before the literal (up to two words), or empty."""
    literal: str
    after: str
    """Raw text just after it, used when nothing stands before it."""
    token: str
    pattern: re.Pattern[str]


def _flex(text: str) -> str:
    """A regex matching `text` with any run of whitespace for each run of whitespace."""
    return r"\s+".join(re.escape(part) for part in re.split(r"\s+", text))


def _fragment(before: str, literal: str, after: str, token: str) -> Fragment:
    guard = r"(?![\w])" if literal[-1:].isalnum() or literal[-1:] == "_" else ""
    lead = r"(?<![\w])" if literal[:1].isalnum() else ""
    body = _flex(literal)
    if before:
        # The literal whole, or cut by a report (`…`) after at least one character.
        pattern = rf"({_flex(before)})(?:({body}){guard}|([^…\n]{{1,{len(literal)}}})…)"
    else:
        pattern = rf"{lead}()({body})({_flex(after)})"
    return Fragment(before, literal, after, token, re.compile(pattern))


class Fragments:
    """The literals of free text seen so far, each with its neighbouring words, by word."""

    def __init__(self, on_learn: Callable[[], None]) -> None:
        """Make an empty store; `on_learn` is called whenever a literal is remembered."""
        self._on_learn = on_learn
        self._fragments: list[Fragment] = []
        self._by_word: dict[str, list[int]] = {}

    def remember(self, spans: Spans, start: int, end: int, token: str, value: str) -> None:
        """Remember the literal at [start, end) of free text with the words beside it."""
        # The context is the log's raw text, other literals in it included: fragments are all
        # matched on the raw string of a report, each claiming only its own literal.
        text = spans.text
        line_start = text.rfind("\n", 0, start) + 1
        before = text[max(line_start, start - _CONTEXT_CHARS) : start]
        words = before.split(" ")
        before = " ".join(words[-(_CONTEXT_WORDS + 1) :]) if len(words) > _CONTEXT_WORDS else before
        before = before if any(c.isalnum() for c in before) else ""
        after = ""
        if not before:
            line_end = text.find("\n", end)
            after = text[end : min(len(text) if line_end < 0 else line_end, end + _CONTEXT_CHARS)]
            after = " ".join(after.split(" ")[: _CONTEXT_WORDS + 1])
            if not any(c.isalnum() for c in after) and len(value) < 5:
                return  # a short literal with no words beside it: only the exact text has it
        fragment = _fragment(before, value, after, token)
        index = len(self._fragments)
        self._fragments.append(fragment)
        for word in set(re.findall(r"\w+", value)[:1] + re.findall(r"\w+", before)[-1:]):
            self._by_word.setdefault(word, []).append(index)
        self._on_learn()

    def claim(self, spans: Spans) -> None:
        """Claim every remembered literal where it stands with its words in `spans.text`."""
        if not self._fragments:
            return
        text = spans.text
        chosen: set[int] = set()
        for word in re.findall(r"\w+", text):
            chosen.update(self._by_word.get(word, ()))
        for index in sorted(chosen):
            fragment = self._fragments[index]
            for m in fragment.pattern.finditer(text):
                if fragment.before:
                    if m.group(2) is not None:
                        spans.claim(m.start(2), m.end(2), fragment.token, "num")
                    elif _flex_prefix(m.group(3), fragment.literal):
                        spans.claim(m.start(3), m.end(3), fragment.token, "num")
                else:
                    spans.claim(m.start(2), m.end(2), fragment.token, "num")


def _flex_prefix(cut: str, literal: str) -> bool:
    """Tell whether `cut` is a prefix of `literal`, whitespace runs aside."""
    return " ".join(literal.split()).startswith(" ".join(cut.split())) and bool(cut.strip())


def claim_free_text_literals(spans: Spans, pseudonyms: Pseudonyms) -> None:
    """Claim the quoted strings and the numbers of free text that are values, not Spark's ids
    or measures."""
    text = spans.text
    for m in _QUOTED.finditer(text):
        start, end = m.start(2), m.end()
        inner = [it for it in spans.items if start <= it[0] and it[1] <= end]
        crossing = [it for it in spans.items if it[0] < end and it[1] > start]
        if len(crossing) != len(inner):
            continue  # overlaps a replacement it does not contain
        if len(inner) == 1 and (inner[0][0], inner[0][1]) == (m.start(3), m.end(3)):
            continue  # a quoted path or host: already a token
        spans.absorb(start, end, pseudonyms.token("str", m.group(3)), "str")
    for m in _FREE_NUMBER.finditer(text):
        start, end = m.start(), m.end()
        if not spans.free(start, end):
            continue
        before = text[max(0, start - 24) : start]
        if start > 0 and text[start - 1] == ":" and start > 1 and not text[start - 2].isspace():
            continue  # file:line
        word = _WORD_BEFORE.search(before)
        if word and word.group(1).lower() in _KEEP_AFTER_WORD:
            continue
        after = _WORD_AFTER.match(text[end : end + 16])
        if after and after.group(1).lower() in _KEEP_BEFORE_WORD:
            continue
        spans.claim(start, end, pseudonyms.token("num", m.group(0)), "num")
