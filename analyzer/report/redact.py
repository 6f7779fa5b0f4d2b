"""Ticket-ready redaction (`--redact`): values from the user's data, code and environment become
stable pseudonyms in every format.

One `Redactor` is made per analysis. It first reads the application (names, descriptions, error
messages, plans, hosts, users, configuration) in a fixed order, so that tokens are numbered by
first sight in the log and agree between the formats of one analysis; then `redact_view` walks
every string of a report's frozen view models (or of its JSON document) just before rendering,
so that whatever a format shows, now or later, passes through it. What is replaced:

- file paths and locations (`/data/x`, `file:/tmp/t`, `hdfs://nn:8020/w`, `C:\\x`, `~/x`):
  `path-N`, a URL's scheme kept (`hdfs://path-2`);
- hosts: every executor's and the driver's host, IP addresses, fully qualified names, a URL's
  host: `host-N`;
- users: the application's user, configured user names, names in `/home/NAME` and
  `/user/NAME`, e-mail addresses: `user-N`;
- literals in plans (recognized by Spark's plan syntax: comparisons with a column, `IN` and
  `INSET` lists, data source filters, numbers in expressions, `Range`, limits, samples) and in
  free text from the log (descriptions, error messages, failure reasons, call sites: quoted
  strings and numbers other than Spark's task, stage, line and similar ids): `num-N`, `'str-N'`.

Our own measurements (durations, rows, bytes, ids) are never touched: plan literals are found
only inside plan syntax, and a literal of free text is replaced only where its own words from
the log stand next to it (see `Fragment`). The mapping is never written out.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal, TypeVar, cast

from analyzer.aggregate.analysis import Analysis

TokenKind = Literal["host", "path", "user", "num", "str"]
TOKEN_KINDS: tuple[TokenKind, ...] = ("host", "path", "user", "num", "str")
"""Every kind of token, in the order the output lists them."""

REDACTION_NOTE = (
    "redacted: literals, paths, hosts and users are replaced by stable tokens "
    "(host-N, path-N, user-N, num-N, 'str-N'); see docs/redaction.md"
)
"""The line a redacted report carries (text, HTML banner, Markdown)."""

T = TypeVar("T")


class Pseudonyms:
    """Stable tokens: the same value of a kind always gets the same token, numbered by first sight.

    >>> p = Pseudonyms()
    >>> p.token("host", "10.0.0.1"), p.token("num", "42"), p.token("host", "10.0.0.1")
    ('host-1', 'num-1', 'host-1')
    >>> p.token("str", "abc"), p.kinds
    ("'str-1'", ('host', 'num', 'str'))
    """

    def __init__(self) -> None:
        self._tokens: dict[tuple[TokenKind, str], str] = {}
        self._counts: dict[TokenKind, int] = {}
        self._issued: set[str] = set()

    def token(self, kind: TokenKind, value: str) -> str:
        """Return the token of `value`, making the next one of its kind on first sight."""
        key = (kind, value)
        found = self._tokens.get(key)
        if found is not None:
            return found
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        token = f"'str-{n}'" if kind == "str" else f"{kind}-{n}"
        self._tokens[key] = token
        self._issued.add(token)
        return token

    def is_token(self, text: str) -> bool:
        """Tell whether `text` is a token this mapping issued."""
        return text in self._issued

    @property
    def kinds(self) -> tuple[TokenKind, ...]:
        """The kinds of the tokens issued so far, in `TOKEN_KINDS` order."""
        return tuple(k for k in TOKEN_KINDS if k in self._counts)


# ---------------------------------------------------------------------------------------------
# Spans: every pass marks what it replaces on the original string; the first pass to claim a
# character wins, and the string is rebuilt once at the end. No pass ever reads another's output.


@dataclass
class _Spans:
    """Replacements claimed on one string, by character range."""

    text: str
    items: list[tuple[int, int, str, TokenKind | None, str]] = dataclasses.field(
        default_factory=list
    )
    """(start, end, replacement, kind of a literal or None, the original value)."""
    taken: bytearray = dataclasses.field(default_factory=bytearray)

    def __post_init__(self) -> None:
        self.taken = bytearray(len(self.text))

    def free(self, start: int, end: int) -> bool:
        return start < end and not any(self.taken[start:end])

    def claim(self, start: int, end: int, replacement: str, kind: TokenKind | None = None) -> bool:
        """Replace [start, end) unless part of it is already replaced."""
        if not self.free(start, end):
            return False
        self.taken[start:end] = b"\x01" * (end - start)
        self.items.append((start, end, replacement, kind, self.text[start:end]))
        return True

    def absorb(self, start: int, end: int, replacement: str, kind: TokenKind) -> None:
        """Replace [start, end) as a whole, dropping the replacements inside it."""
        self.items = [it for it in self.items if not (start <= it[0] and it[1] <= end)]
        self.taken[start:end] = b"\x01" * (end - start)
        self.items.append((start, end, replacement, kind, self.text[start:end]))

    def render(self) -> str:
        out: list[str] = []
        pos = 0
        for start, end, replacement, _, _ in sorted(self.items):
            out.append(self.text[pos:start])
            out.append(replacement)
            pos = end
        out.append(self.text[pos:])
        return "".join(out)


# ---------------------------------------------------------------------------------------------
# Environment: paths, URLs, hosts, IP addresses, users. These patterns never match our own text.

_STOP = r"\s'\"<>()\[\]{},;|*?`"
_URL = re.compile(
    r"(?<![\w+.-])((?:[A-Za-z][A-Za-z0-9+.-]*:)+)//([^/" + _STOP + r"]*)(/[^" + _STOP + r"]*)?"
)
_SCHEME_PATH = re.compile(r"(?<![\w+.-])([A-Za-z][A-Za-z0-9+.-]*):(/(?!/)[^:" + _STOP + r"]+)")
_WINDOWS_PATH = re.compile(r"(?<![\w])[A-Za-z]:\\[^" + _STOP + r"]+")
_HOME_PATH = re.compile(r"(?<![\w/])~[\w.-]*/[^:" + _STOP + r"]+")
_POSIX_PATH = re.compile(r"(?<![\w.:/~$@\\+%-])/(?=[\w.~@%+=-])[^:" + _STOP + r"]*")
_IPV4 = re.compile(
    r"(?<![\w.])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\w]|\.\d)"
)
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:.])")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?![\w-])")
_FQDN = re.compile(
    r"(?<![\w.@/-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
    r"(?:com|net|org|io|internal|local|localdomain|lan|corp|cloud|edu|gov|svc)(?![\w-]|\.\w)"
)
_HOME_USER = re.compile(r"/(?:home|user|Users)/([\w.-]+)")
_USER_KEYS = frozenset(
    {"spark.user", "user.name", "spark.yarn.user", "hadoop_user_name", "user", "spark.sparkuser"}
)
_HOST_KEYS = frozenset({"spark.driver.host", "spark.driver.bindaddress", "spark.local.ip"})
_COMMON_USERS = frozenset(
    {"root", "user", "admin", "test", "default", "nobody", "spark", "hadoop", "yarn", "hdfs",
     "hive", "ubuntu", "centos", "ec2-user", "none", "unknown", "stage", "task", "job",
     "node", "query", "driver", "executor", "data", "report", "time", "plan", "spill",
     "shuffle", "metrics", "summary", "full", "info", "warning", "critical", "read", "write"}
)  # fmt: skip
"""User names that are also service accounts or words of our own text: replaced only where
they stand as a user (whole value, `user=NAME`), never as a word anywhere."""


def _trim_path(path: str) -> str:
    """Drop sentence punctuation after a path, keeping Spark's `...` truncation mark."""
    while path and path[-1] in ".:" and not path.endswith("..."):
        path = path[:-1]
    return path


def _is_ipv6(text: str) -> bool:
    groups = text.split(":")
    return ("::" in text or len(groups) == 8) and any(c.isdigit() for c in text) and len(text) > 3


# ---------------------------------------------------------------------------------------------
# Plans: literals recognized by Spark's plan syntax (`(col#12 = 5)`, `IN (…)`, `EqualTo(col,5)`).

_ATTR = re.compile(r"[A-Za-z_][\w$]*#\d+L?\b")
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
     "REPARTITION_BY_NUM", "REBALANCE_PARTITIONS_BY_COL", "REBALANCE_PARTITIONS_BY_NONE",
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


# ---------------------------------------------------------------------------------------------
# Free text from the log: descriptions, error messages, failure reasons, call sites.


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


# ---------------------------------------------------------------------------------------------


class Redactor:
    """Replace values from the log with stable tokens; see the module's docstring."""

    def __init__(
        self,
        hosts: Iterable[str] = (),
        users: Iterable[str] = (),
        paths: Iterable[str] = (),
        pseudonyms: Pseudonyms | None = None,
    ) -> None:
        self.pseudonyms = pseudonyms if pseudonyms is not None else Pseudonyms()
        self._hosts: set[str] = set()
        self._users: set[str] = set()
        self._names: set[str] = set()
        self._hosts_re: re.Pattern[str] | None = None
        self._users_re: re.Pattern[str] | None = None
        self._names_re: re.Pattern[str] | None = None
        self._fragments: list[Fragment] = []
        self._by_word: dict[str, list[int]] = {}
        self._exact: dict[str, str] = {}
        self._cache: dict[str, str] = {}
        for host in hosts:
            self.add_host(host)
        for user in users:
            self.add_user(user)
        for name in paths:
            self.add_path_name(name)

    # -- what is known ------------------------------------------------------------------------

    def add_host(self, host: str) -> None:
        """Know `host` (an executor's or the driver's), to replace it wherever it appears."""
        host = host.strip().strip("[]")
        if not host or host in self._hosts or len(host) < 2:
            return
        self.pseudonyms.token("host", host)
        self._hosts.add(host)
        first = host.split(".")[0]
        # A machine's short name appears in messages too (`ip-10-0-0-7`, `worker-3`).
        short = first != host and not _IPV4.fullmatch(host) and len(first) >= 4
        if short and any(c.isdigit() or c == "-" for c in first):
            self._hosts.add(first)
        self._hosts_re = None
        self._cache.clear()

    def add_user(self, user: str) -> None:
        """Know a user name, to replace it where it stands as a user (and anywhere if rare)."""
        user = user.strip()
        if not user or user in self._users or user == "*********(redacted)":
            return
        self.pseudonyms.token("user", user)
        self._users.add(user)
        self._users_re = None
        self._cache.clear()

    def add_path_name(self, name: str) -> None:
        """Know a file name from the user's file system (the log's own), to replace it whole."""
        if not name or name in self._names or len(name) < 3:
            return
        self.pseudonyms.token("path", name)
        self._names.add(name)
        self._names_re = None
        self._cache.clear()

    def _known(self, values: set[str], boundary: str) -> re.Pattern[str] | None:
        if not values:
            return None
        alts = "|".join(re.escape(v) for v in sorted(values, key=lambda v: (-len(v), v)))
        return re.compile(rf"(?<![\w.{boundary}])(?:{alts})(?![\w{boundary}]|\.\w)")

    # -- passes --------------------------------------------------------------------------------

    def _token(self, kind: TokenKind, value: str) -> str:
        return self.pseudonyms.token(kind, value)

    def _path_token(self, path: str) -> str:
        for match in _HOME_USER.finditer(path):
            self.add_user(match.group(1))
        return self._token("path", path)

    def _environment(self, spans: _Spans) -> None:
        text = spans.text
        if any(c in text for c in "/\\:~"):
            for m in _URL.finditer(text):
                scheme, authority, path = m.group(1), m.group(2), m.group(3) or ""
                if path and _trim_path(path) not in ("", "/"):
                    value = _trim_path(authority + path)
                    spans.claim(
                        m.start(), m.start(2) + len(value), f"{scheme}//{self._path_token(value)}"
                    )
                    continue
                user, _, hostport = authority.rpartition("@")
                host, colon, port = hostport.partition(":")
                if hostport.startswith("["):
                    host, _, rest = hostport[1:].partition("]")
                    colon, port = (":", rest[1:]) if rest.startswith(":") else ("", "")
                if not host:
                    continue
                replaced = scheme + "//"
                if user:
                    replaced += self._token("user", user) + "@"
                replaced += self._token("host", host) + colon + port + (path or "")
                spans.claim(m.start(), m.end(), replaced)
            for m in _SCHEME_PATH.finditer(text):
                value = _trim_path(m.group(2))
                spans.claim(
                    m.start(), m.start(2) + len(value), f"{m.group(1)}:{self._path_token(value)}"
                )
            for regex in (_WINDOWS_PATH, _HOME_PATH, _POSIX_PATH):
                for m in regex.finditer(text):
                    value = _trim_path(m.group(0))
                    if len(value) > 1:
                        spans.claim(m.start(), m.start() + len(value), self._path_token(value))
        if "@" in text:
            for m in _EMAIL.finditer(text):
                spans.claim(m.start(), m.end(), self._token("user", m.group(0)))
        self._known_values(spans)
        if "." in text:
            for m in _IPV4.finditer(text):
                spans.claim(m.start(), m.end(), self._token("host", m.group(0)))
            for m in _FQDN.finditer(text):
                spans.claim(m.start(), m.end(), self._token("host", m.group(0)))
        if text.count(":") >= 2:
            for m in _IPV6.finditer(text):
                if _is_ipv6(m.group(0)):
                    spans.claim(m.start(), m.end(), self._token("host", m.group(0)))

    def _known_values(self, spans: _Spans) -> None:
        text = spans.text
        if self._hosts and self._hosts_re is None:
            self._hosts_re = self._known(self._hosts, "-")
        if self._names and self._names_re is None:
            self._names_re = self._known(self._names, "-")
        if self._users and self._users_re is None:
            rare = {u for u in self._users if u.lower() not in _COMMON_USERS and len(u) >= 3}
            self._users_re = self._known(rare, "-") or re.compile(r"(?!x)x")
        if self._hosts_re is not None:
            for m in self._hosts_re.finditer(text):
                host = m.group(0)
                full = next((h for h in self._hosts if h.split(".")[0] == host and h != host), host)
                spans.claim(m.start(), m.end(), self._token("host", full))
        if self._names_re is not None:
            for m in self._names_re.finditer(text):
                spans.claim(m.start(), m.end(), self._token("path", m.group(0)))
        if self._users:
            stripped = text.strip()
            if stripped in self._users:
                start = text.index(stripped)
                spans.claim(start, start + len(stripped), self._token("user", stripped))
                return
            for user in self._users:
                if user in text:
                    for m in re.finditer(
                        rf"(?i:\buser(?:name)?\s*[=:]\s*)({re.escape(user)})(?![\w-])", text
                    ):
                        spans.claim(m.start(1), m.end(1), self._token("user", user))
            assert self._users_re is not None
            for m in self._users_re.finditer(text):
                spans.claim(m.start(), m.end(), self._token("user", m.group(0)))

    def _plan(self, spans: _Spans) -> None:
        text = spans.text
        offset = 0
        for line in text.split("\n"):
            self._plan_line(spans, line, offset)
            offset += len(line) + 1

    def _literal(self, spans: _Spans, start: int, end: int) -> None:
        start, end = _strip_span(spans.text, start, end)
        value = spans.text[start:end]
        if value in _PLAN_KEYWORDS or not spans.free(start, end):
            return
        spans.claim(start, end, self._token(_literal_kind(value), value), _literal_kind(value))

    def _plan_line(self, spans: _Spans, line: str, offset: int) -> None:
        text = spans.text
        for regex in (_RANGE, _SAMPLE, _LIMIT):
            for m in regex.finditer(line):
                for g in range(1, (m.lastindex or 0) + 1):
                    if m.group(g) is not None:
                        self._literal(spans, offset + m.start(g), offset + m.end(g))
        for m in _FILTER.finditer(line):
            close = _close(line, m.end())
            args = list(_split_args(line, m.end(), close))
            if len(args) >= 2:
                self._literal(spans, offset + args[1][0], offset + args[-1][1])
        for m in _SOURCE_IN.finditer(line):
            close = _close(line, m.end())
            bracket = line.find("[", m.end(), close)
            if bracket >= 0:
                end = _close(line, bracket + 1, close)
                for a, b in _split_args(line, bracket + 1, end):
                    self._literal(spans, offset + a, offset + b)
        if not _ATTR.search(line):
            return
        for m in _COMPARISON.finditer(line):
            left_start = _open(line, m.start())
            right_end = _close(line, m.end())
            left = line[left_start : m.start()]
            right = line[m.end() : right_end]
            if left_start > 0 and line[left_start - 1] == "[":
                continue  # `[ checkpoint = …, runId = … ]`: not an expression
            if not _is_expression(right):
                self._literal(spans, offset + m.end(), offset + right_end)
            elif not _is_expression(left) and _ATTR.search(right):
                self._literal(spans, offset + left_start, offset + m.start())
        for m in _IN_LIST.finditer(line):
            close = _close(line, m.end())
            for a, b in _split_args(line, m.end(), close):
                if not _is_expression(line[a:b]):
                    self._literal(spans, offset + a, offset + b)
        for m in _INSET.finditer(line):
            close = _close(line, m.end())
            for a, b in _split_args(line, m.end(), close):
                self._literal(spans, offset + a, offset + b)
        self._bare_strings(spans, line, offset)
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
                spans.claim(start, end, self._token("num", value), "num")

    def _bare_strings(self, spans: _Spans, line: str, offset: int) -> None:
        """Claim the unquoted string literals of an expression line: a call's bare-word argument
        (`reflect(java.lang.Thread, sleep)`, `concat(a#1, -)`), a CASE branch's bare value."""
        for m in _CALL.finditer(line):
            if m.group(1) in _STRUCTURAL_CALLS:
                continue
            close = _close(line, m.end())
            for a, b in _split_args(line, m.end(), close):
                a, b = _strip_span(line, a, b)
                value = line[a:b]
                if _BARE.fullmatch(value) and value not in _PLAN_WORDS:
                    self._literal(spans, offset + a, offset + b)
        for m in _CASE_VALUE.finditer(line):
            if m.group(1) not in _PLAN_WORDS:
                self._literal(spans, offset + m.start(1), offset + m.end(1))

    def _free_text(self, spans: _Spans) -> None:
        text = spans.text
        for m in _QUOTED.finditer(text):
            start, end = m.start(2), m.end()
            inner = [it for it in spans.items if start <= it[0] and it[1] <= end]
            crossing = [it for it in spans.items if it[0] < end and it[1] > start]
            if len(crossing) != len(inner):
                continue  # overlaps a replacement it does not contain
            if len(inner) == 1 and (inner[0][0], inner[0][1]) == (m.start(3), m.end(3)):
                continue  # a quoted path or host: already a token
            spans.absorb(start, end, self._token("str", m.group(3)), "str")
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
            spans.claim(start, end, self._token("num", m.group(0)), "num")

    # -- applying ------------------------------------------------------------------------------

    def text(self, text: str) -> str:
        """Return `text` with every value from the log replaced by its token."""
        found = self._cache.get(text)
        if found is not None:
            return found
        exact = self._exact.get(text)
        if exact is not None:
            return exact
        spans = _Spans(text)
        self._apply_fragments(spans)
        self._environment(spans)
        if "#" in text or any(k in text for k in ("Range (", "Limit ", "limit=", "Sample ", "(")):
            self._plan(spans)
        out = spans.render()
        if len(self._cache) < 200_000:
            self._cache[text] = out
        return out

    def free_text(self, text: str) -> str:
        """Redact free text from the log (a description, an error message) and remember its
        literals with their neighbouring words, to find them in text that quotes it."""
        if not text:
            return text
        spans = _Spans(text)
        self._apply_fragments(spans)
        self._environment(spans)
        self._plan(spans)
        self._free_text(spans)
        for start, end, token, kind, value in sorted(spans.items):
            if kind is not None:
                self._remember(spans, start, end, token, value)
        out = spans.render()
        if any(c.isalpha() for c in text):
            # Shown whole, it reads as this; a bare number (`4`) could be one of our counts.
            self._exact[text] = out
        return out

    def _remember(self, spans: _Spans, start: int, end: int, token: str, value: str) -> None:
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
        self._cache.clear()

    def _apply_fragments(self, spans: _Spans) -> None:
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

    # -- the application -------------------------------------------------------------------

    @classmethod
    def for_analysis(cls, *analyses: Analysis) -> Redactor:
        """Make the redactor of one analysis (or of several shown in one report, such as the
        two runs of a diff): read their hosts, users and free text in log order."""
        redactor = cls()
        for analysis in analyses:
            redactor.read(analysis)
        return redactor

    def read(self, analysis: Analysis) -> None:
        """Learn the hosts, users, paths and free text of an analysis, numbering their tokens."""
        app = analysis.application
        redactor = self
        props = [*app.spark_properties, *app.environment.spark_properties]
        system = list(app.environment.system_properties)
        if app.user:
            redactor.add_user(app.user)
        for key, value in [*props, *system]:
            if key.lower() in _USER_KEYS:
                redactor.add_user(value)
            elif key.lower() in _HOST_KEYS:
                redactor.add_host(value)
        for executor in app.executors:
            redactor.add_host(executor.host)
            if executor.host_port:
                redactor.add_host(executor.host_port.rpartition(":")[0] or executor.host_port)
        source = analysis.source
        redactor.text(source.path)
        redactor.add_path_name(PurePath(source.path).name)
        for part in analysis.read_stats.truncated_parts:
            redactor.add_path_name(PurePath(part).name)
        redactor.free_text(app.name)
        for _, value in [*props, *system]:
            redactor.text(value)
        for ex in app.executions:
            redactor.free_text(ex.description)
            redactor.free_text(ex.error_message or "")
            for plan in ex.plans:
                for node in plan.graph.nodes:
                    redactor.text(node.desc)
                    for _, value in node.metadata:
                        redactor.text(value)
            redactor.text(ex.final_plan.physical_plan_description)
        for job in app.jobs:
            for text in (
                job.description,
                job.error_message,
                job.job_group,
                job.name,
                *job.job_tags,
            ):
                redactor.free_text(text or "")
        for stage in app.stages:
            redactor.free_text(stage.name)
            redactor.free_text(stage.failure_reason or "")
        for executor in app.executors:
            redactor.free_text(executor.removed_reason or "")


def _is_expression(text: str) -> bool:
    """Tell whether a side of a comparison is an expression (a column, a call), not a literal."""
    stripped = text.strip()
    return bool(_ATTR.search(stripped)) or "(" in stripped or stripped.startswith("Subquery")


def _flex_prefix(cut: str, literal: str) -> bool:
    """Tell whether `cut` is a prefix of `literal`, whitespace runs aside."""
    return " ".join(literal.split()).startswith(" ".join(cut.split())) and bool(cut.strip())


# ---------------------------------------------------------------------------------------------


def redact_view(view: T, redactor: Redactor) -> T:
    """Return `view` with every string in it (fields of frozen dataclasses, tuples, lists, dict
    keys and values, at any depth) passed through `redactor.text`; other values are kept."""
    return _walk(view, redactor.text)  # type: ignore[no-any-return]


_SCALARS = (int, float, bool, type(None))


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        _FIELDS[cls] = names
    return names


_FIELDS: dict[type, tuple[str, ...]] = {}


def _walk(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        out = fn(value)
        return value if out == value else out
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, tuple | list):
        items = [v if isinstance(v, _SCALARS) else _walk(v, fn) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {_walk(k, fn): _walk(v, fn) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        names = _fields(type(value))
        for name in names:
            old = getattr(value, name)
            new = _walk(old, fn)
            if new is not old:
                changes[name] = new
        detail = getattr(value, "detail_str", None)
        if "name" in names and isinstance(detail, str) and detail:
            # An operator's description without its name (`21` of `CollectLimit 21`) is read
            # as plan syntax only with the name in front of it.
            name = str(getattr(value, "name", ""))
            whole = fn(f"{name} {detail}")
            if whole.startswith(fn(name) + " "):
                changes["detail_str"] = whole[len(fn(name)) + 1 :]
        return dataclasses.replace(value, **changes) if changes else value
    return value


def redact_report(view: T, redactor: Redactor) -> T:
    """Return a report's view redacted (see `redact_view`), its header saying so.

    Every format built from a view with an `ApplicationHeaderView` as `header` uses this, so
    that it carries `REDACTION_NOTE`; a view without one is only walked.
    """
    redacted: Any = redact_view(view, redactor)
    header: Any = getattr(redacted, "header", None)
    if header is not None and hasattr(header, "redaction_str"):
        header = dataclasses.replace(header, redaction_str=REDACTION_NOTE)
        redacted = dataclasses.replace(redacted, header=header)
    return cast(T, redacted)


def mark_document(document: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """Return the JSON document redacted, saying so: `redacted: true` and the token kinds used."""
    redacted = redact_view(document, redactor)
    out: dict[str, Any] = {}
    for key, value in redacted.items():
        out[key] = value
        if key == "format_version":
            out["redacted"] = True
            out["redaction"] = {"token_kinds": list(redactor.pseudonyms.kinds)}
    if "redacted" not in out:
        out["redacted"] = True
        out["redaction"] = {"token_kinds": list(redactor.pseudonyms.kinds)}
    return out
