"""The plan-text scrubber: literals found by Spark's plan syntax, which our own text never uses.

A comparison whose other side is a column (`(d_year#50 = 2000)`), the items of `IN (…)`, `INSET`
and a data source's `In(col, […])`, the value of a data source filter (`EqualTo(state,CA)`),
`Range (…)`, limits, samples, and, on a line that references a column, every number except the
structural ones (`[plan_id=50]`, `decimal(7,2)`, the partition count of `hashpartitioning`),
bare-word arguments of calls and bare `THEN`/`ELSE` values. Brackets are matched by a small
parser of their own (`_close`, `_open`, `_split_args`): plan text is not a grammar regular
expressions can follow.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from analyzer.redact.pseudonyms import Pseudonyms, TokenKind
from analyzer.redact.spans import Spans

_ATTR_ID = re.compile(r"#\d+L?\b")
"""An attribute's id after its name: `#12`, `#5L`."""
_ASCII_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _has_attribute(text: str) -> bool:
    r"""Whether `text` names an attribute (`name#12`, `_c0#5L`): a run of word characters or `$`
    holding an ASCII letter or `_`, then `#`, digits and an optional `L`.

    It finds what the pattern `[A-Za-z_][\w$]*#\d+L?\b` finds, in time linear in the text: that
    pattern, searched in a run of a million word characters without a `#` (a log's text can be
    anything), starts again at each of them and took minutes.

    >>> [_has_attribute(t) for t in ("x#1", "sum(_c0#5L)", "#3", "12#3", "a b#x", "é_#7")]
    [True, True, False, False, False, True]
    """
    if "#" not in text:
        return False
    for m in _ATTR_ID.finditer(text):
        i = m.start() - 1
        while i >= 0 and (text[i].isalnum() or text[i] in "_$"):
            if text[i] in _ASCII_NAME_START:
                return True
            i -= 1
    return False


_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_PLAN_NUMBER = re.compile(
    r"(?<![\w.#$@'\"-])(?:-(?=\d))?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[LDSBFY]?(?![\w.]|\.\d)"
)
_IS_NUMBER = re.compile(_NUMBER + r"[LDSBFY]?")
_COMPARISON = re.compile(r" (<=>|<=|>=|!=|<>|=|<|>) ")
_FILTER = re.compile(
    r"\b(?:EqualTo|EqualNullSafe|GreaterThanOrEqual|GreaterThan|LessThanOrEqual|LessThan|"
    r"StringStartsWith|StringEndsWith|StringContains)\("
)
_SOURCE_IN = re.compile(r"\bIn\(")
_IN_LIST = re.compile(r" IN \(")
_INSET = re.compile(r" INSET ")
_PLAN_KEYWORDS = frozenset({"true", "false", "null", "None", ""})
_PROTECTED = re.compile(
    r"\[(?:plan_id|id|loreId)=#?\d+\]|input\[\d+,|"
    r"\b(?:decimal|char|varchar|DecimalType|CharType|VarcharType)\(\d+(?:,\s*\d+)?\)|"
    r"\w*count\(1\)|\b[A-Z][\w ]* \[\d+\]:|\[codegen id : \d+\]|^\(\d+\) |Subquery:\d+|"
    r"operator id[:=]? =? ?\d+|splits=(?:Some\()?\d+|numPartitions = \d+|opId = \d+|"
    r"ver = \d+|WholeStageCodegen \(\d+\)|\], (?:true|false), \d+$|Statistics\([^)]*\)|"
    r"isFinalPlan=\w+|targetsize\(\d+\)|dynamicpruning#\d+, \d+|"
    r"\(\d+ paths\)|\.\.\. \d+ more fields|\d+ replicas\)"
)
_CALL = re.compile(r"\b([A-Za-z_][\w$]*)\(")
_BARE = re.compile(r"[^\s()\[\]{},#=\d][^\s()\[\]{},#=]*|-")
_CASE_VALUE = re.compile(
    r"\b(?:THEN|ELSE) ([^\s()\[\]{},#=\d][^\s()\[\]{},#=]*)(?= (?:WHEN|ELSE|END)\b)"
)
_STRUCTURAL_CALLS = frozenset(
    {"StorageLevel", "Statistics", "specifiedwindowframe", "HashedRelationBroadcastMode",
     "List", "ArrayBuffer", "Some", "windowspecdefinition", "Vector", "Seq", "Map"}
)  # fmt: skip
_PLAN_WORDS = frozenset(
    {"true", "false", "null", "None", "ASC", "DESC", "NULLS", "FIRST", "LAST", "RowFrame",
     "RangeFrame", "Inner", "LeftOuter", "RightOuter", "FullOuter", "LeftSemi", "LeftAnti",
     "Cross", "BuildLeft", "BuildRight", "ENSURE_REQUIREMENTS", "REPARTITION_BY_COL",
     "REPARTITION_BY_NUM", "REPARTITION_WITH_NUM", "REPARTITION", "REBALANCE_PARTITIONS_BY_COL",
     "REBALANCE_PARTITIONS_BY_NONE",
     "SinglePartition", "UnknownPartitioning", "unboundedpreceding$()", "currentrow$()",
     "unboundedfollowing$()"}
)  # fmt: skip
"""Spark's own words in expressions: never a string literal."""
_PARTITIONING = re.compile(r"\b(?:hashpartitioning|rangepartitioning|RoundRobinPartitioning)\(")
_RANGE = re.compile(
    r"\bRange \((" + _NUMBER + r"), (" + _NUMBER + r"), step=(" + _NUMBER + r"), splits="
)
_LIMIT = re.compile(
    r"\b(?:CollectLimit|GlobalLimit|LocalLimit|CollectTail|limit=) ?(\d+)(?:, (\d+))?"
)
_SAMPLE = re.compile(r"\bSample (" + _NUMBER + r"), (" + _NUMBER + r"), (?:true|false), (-?\d+)")


def _close(text: str, start: int, limit: int | None = None) -> int:
    """Return the index of the bracket closing the group open at `start` (or the end)."""
    depth = 0
    end = len(text) if limit is None else limit
    for i in range(start, end):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            if depth == 0:
                return i
            depth -= 1
    return end


def _open(text: str, end: int) -> int:
    """Return the index just after the bracket opening the group that ends at `end`."""
    depth = 0
    for i in range(end - 1, -1, -1):
        c = text[i]
        if c in ")]":
            depth += 1
        elif c in "([":
            if depth == 0:
                return i + 1
            depth -= 1
    return 0


def _split_args(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Yield the spans of the comma-separated items of text[start:end], at bracket depth 0."""
    depth = 0
    item = start
    for i in range(start, end):
        c = text[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            yield item, i
            item = i + 1
    yield item, end


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _literal_kind(value: str) -> TokenKind:
    return "num" if _IS_NUMBER.fullmatch(value) else "str"


def _is_expression(text: str) -> bool:
    """Tell whether a side of a comparison is an expression (a column, a call), not a literal."""
    stripped = text.strip()
    return _has_attribute(stripped) or "(" in stripped or stripped.startswith("Subquery")


def may_hold_plan_syntax(text: str) -> bool:
    """Tell cheaply whether `text` may hold plan syntax worth the scrubber's passes."""
    return "#" in text or any(k in text for k in ("Range (", "Limit ", "limit=", "Sample ", "("))


def claim_plan_literals(spans: Spans, pseudonyms: Pseudonyms) -> None:
    """Claim the literals of every line of `spans.text` read as plan text."""
    offset = 0
    for line in spans.text.split("\n"):
        _PlanLine(spans, pseudonyms, line, offset).claim()
        offset += len(line) + 1


class _PlanLine:
    """One line of plan text, its literals claimed on the spans of the whole string."""

    def __init__(self, spans: Spans, pseudonyms: Pseudonyms, line: str, offset: int) -> None:
        self.spans = spans
        self.pseudonyms = pseudonyms
        self.line = line
        self.offset = offset

    def _literal(self, start: int, end: int) -> None:
        spans = self.spans
        start, end = _strip_span(spans.text, start, end)
        value = spans.text[start:end]
        if value in _PLAN_KEYWORDS or not spans.free(start, end):
            return
        kind = _literal_kind(value)
        spans.claim(start, end, self.pseudonyms.token(kind, value), kind)

    def claim(self) -> None:
        spans, line, offset = self.spans, self.line, self.offset
        text = spans.text
        for regex in (_RANGE, _SAMPLE, _LIMIT):
            for m in regex.finditer(line):
                for g in range(1, (m.lastindex or 0) + 1):
                    if m.group(g) is not None:
                        self._literal(offset + m.start(g), offset + m.end(g))
        for m in _FILTER.finditer(line):
            close = _close(line, m.end())
            args = list(_split_args(line, m.end(), close))
            if len(args) >= 2:
                self._literal(offset + args[1][0], offset + args[-1][1])
        for m in _SOURCE_IN.finditer(line):
            close = _close(line, m.end())
            bracket = line.find("[", m.end(), close)
            if bracket >= 0:
                end = _close(line, bracket + 1, close)
                for a, b in _split_args(line, bracket + 1, end):
                    self._literal(offset + a, offset + b)
        if not _has_attribute(line):
            return
        for m in _COMPARISON.finditer(line):
            left_start = _open(line, m.start())
            right_end = _close(line, m.end())
            left = line[left_start : m.start()]
            right = line[m.end() : right_end]
            if left_start > 0 and line[left_start - 1] == "[":
                continue  # `[ checkpoint = …, runId = … ]`: not an expression
            if not _is_expression(right):
                self._literal(offset + m.end(), offset + right_end)
            elif not _is_expression(left) and _has_attribute(right):
                self._literal(offset + left_start, offset + m.start())
        for m in _IN_LIST.finditer(line):
            close = _close(line, m.end())
            for a, b in _split_args(line, m.end(), close):
                if not _is_expression(line[a:b]):
                    self._literal(offset + a, offset + b)
        for m in _INSET.finditer(line):
            close = _close(line, m.end())
            for a, b in _split_args(line, m.end(), close):
                self._literal(offset + a, offset + b)
        self._bare_strings()
        protected = bytearray(len(line))
        for m in _PROTECTED.finditer(line):
            protected[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
        for m in _PARTITIONING.finditer(line):
            close = _close(line, m.end())
            last = list(_split_args(line, m.end(), close))[-1]
            protected[last[0] : last[1]] = b"\x01" * (last[1] - last[0])
        for m in _PLAN_NUMBER.finditer(line):
            if not any(protected[m.start() : m.end()]):
                start, end = offset + m.start(), offset + m.end()
                value = text[start:end]
                spans.claim(start, end, self.pseudonyms.token("num", value), "num")

    def _bare_strings(self) -> None:
        """Claim the unquoted string literals of an expression line: a call's bare-word argument
        (`reflect(java.lang.Thread, sleep)`, `concat(a#1, -)`), a CASE branch's bare value."""
        line, offset = self.line, self.offset
        for m in _CALL.finditer(line):
            if m.group(1) in _STRUCTURAL_CALLS:
                continue
            close = _close(line, m.end())
            for a, b in _split_args(line, m.end(), close):
                a, b = _strip_span(line, a, b)
                value = line[a:b]
                if _BARE.fullmatch(value) and value not in _PLAN_WORDS:
                    self._literal(offset + a, offset + b)
        for m in _CASE_VALUE.finditer(line):
            if m.group(1) not in _PLAN_WORDS:
                self._literal(offset + m.start(1), offset + m.end(1))
