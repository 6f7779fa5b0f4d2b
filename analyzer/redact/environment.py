"""The environment a log names: file paths and URLs, hosts and IP addresses, users.

Paths, URLs, IP addresses, fully qualified host names and e-mail addresses are found by their
shape anywhere; hosts, users and file names the log declares (an executor's host, the
application's user, the log's own file name) are learned first and then found as whole words.
These patterns never match our own text (durations, counts, ids).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from analyzer.model.config_secrets import REDACTED
from analyzer.redact.pseudonyms import Pseudonyms
from analyzer.redact.spans import Spans

_STOP = r"\s'\"<>()\[\]{},;|*?`"
MAX_SCHEME_PARTS = 8
"""The most `name:` parts a URL's scheme chain is read with (`jdbc:mysql:loadbalance:`): a start
after each colon of a longer run of them would read it to its end again, and the parts before
the last eight are kept as they are either way (a scheme is never replaced)."""
_URL = re.compile(
    rf"(?<![\w+.-])((?:[A-Za-z][A-Za-z0-9+.-]*:){{1,{MAX_SCHEME_PARTS}}})//([^/"
    + _STOP
    + r"]*)(/[^"
    + _STOP
    + r"]*)?"
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
MAX_HOST_CHARS = 253
"""The longest host name DNS allows: a cut word longer than this begins no host."""
_CUT_WORD = re.compile(rf"(?<![\w.-])([\w.:-]{{3,{MAX_HOST_CHARS}}})…")
"""A word cut by a report (`worker-17.c.pro…`): it may be the beginning of a known host."""
_CUT_HOST_CHARS = 3
"""A cut word this long or longer that begins a known host is replaced."""
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


MAX_PATTERN_VALUE_CHARS = 256
"""Known values up to this long are found by one compiled pattern; longer ones by a plain
search. `re` compiles a 10 MB literal in seconds, into gigabytes (a hostile log's host)."""
_WORD_CHAR = re.compile(r"\w")


class _KnownValues:
    """Finds known values (hosts, users, file names) as whole words: not after a word
    character, a dot or `boundary`, and not before a word character, `boundary` or a dot and a
    word character. At each place the longest value wins, leftmost first, as a pattern of the
    values, longest first, finds them."""

    def __init__(
        self, values: set[str], boundary: str, max_pattern_chars: int = MAX_PATTERN_VALUE_CHARS
    ) -> None:
        ordered = sorted(values, key=lambda v: (-len(v), v))
        short = [v for v in ordered if len(v) <= max_pattern_chars]
        self._long = [v for v in ordered if len(v) > max_pattern_chars]
        self._boundary = boundary
        alts = "|".join(map(re.escape, short))
        self._pattern = (
            re.compile(rf"(?<![\w.{boundary}])(?:{alts})(?![\w{boundary}]|\.\w)") if short else None
        )

    def _is_word(self, text: str, start: int, end: int) -> bool:
        before = text[start - 1] if start else ""
        if before and (before in "." + self._boundary or _WORD_CHAR.match(before)):
            return False
        after = text[end : end + 2]
        if not after:
            return True
        if after[0] in self._boundary or _WORD_CHAR.match(after[0]):
            return False
        return not (after[0] == "." and _WORD_CHAR.match(after[1:2]) is not None)

    def finditer(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, value) of every whole-word occurrence, in order, none overlapping."""
        found: list[tuple[int, int, str]] = []
        for value in self._long:
            at = text.find(value)
            while at >= 0:
                if self._is_word(text, at, at + len(value)):
                    found.append((at, at + len(value), value))
                    at = text.find(value, at + len(value))
                else:
                    at = text.find(value, at + 1)
        if self._pattern is not None:
            found.extend((m.start(), m.end(), m.group(0)) for m in self._pattern.finditer(text))
        if not self._long:
            return found
        found.sort(key=lambda f: (f[0], -f[1]))
        kept: list[tuple[int, int, str]] = []
        for item in found:
            if not kept or item[0] >= kept[-1][1]:
                kept.append(item)
        return kept


class Environment:
    """The hosts, users and file names learned from a log, and the passes that replace them."""

    def __init__(self, pseudonyms: Pseudonyms, on_learn: Callable[[], None]) -> None:
        """Make an empty one; `on_learn` is called whenever a value is learned (a cache of
        redacted strings is stale then)."""
        self.pseudonyms = pseudonyms
        self._on_learn = on_learn
        self._hosts: set[str] = set()
        self._users: set[str] = set()
        self._names: set[str] = set()
        self._hosts_re: _KnownValues | None = None
        self._users_re: _KnownValues | None = None
        self._names_re: _KnownValues | None = None

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
        self._on_learn()

    def add_user(self, user: str) -> None:
        """Know a user name, to replace it where it stands as a user (and anywhere if rare)."""
        user = user.strip()
        if not user or user in self._users or user == REDACTED:
            return
        self.pseudonyms.token("user", user)
        self._users.add(user)
        self._users_re = None
        self._on_learn()

    def add_path_name(self, name: str) -> None:
        """Know a file name from the user's file system (the log's own), to replace it whole."""
        if not name or name in self._names or len(name) < 3:
            return
        self.pseudonyms.token("path", name)
        self._names.add(name)
        self._names_re = None
        self._on_learn()

    def _known(self, values: set[str], boundary: str) -> _KnownValues | None:
        return _KnownValues(values, boundary) if values else None

    def _path_token(self, path: str) -> str:
        for match in _HOME_USER.finditer(path):
            self.add_user(match.group(1))
        return self.pseudonyms.token("path", path)

    def claim(self, spans: Spans) -> None:
        """Claim every path, URL, e-mail address, IP address, host name and known value."""
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
                    replaced += self.pseudonyms.token("user", user) + "@"
                replaced += self.pseudonyms.token("host", host) + colon + port + (path or "")
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
                spans.claim(m.start(), m.end(), self.pseudonyms.token("user", m.group(0)))
        self._known_values(spans)
        if "." in text:
            for m in _IPV4.finditer(text):
                spans.claim(m.start(), m.end(), self.pseudonyms.token("host", m.group(0)))
            for m in _FQDN.finditer(text):
                spans.claim(m.start(), m.end(), self.pseudonyms.token("host", m.group(0)))
        if text.count(":") >= 2:
            for m in _IPV6.finditer(text):
                if _is_ipv6(m.group(0)):
                    spans.claim(m.start(), m.end(), self.pseudonyms.token("host", m.group(0)))

    def _known_values(self, spans: Spans) -> None:
        text = spans.text
        if self._hosts and self._hosts_re is None:
            self._hosts_re = self._known(self._hosts, "-")
        if self._names and self._names_re is None:
            self._names_re = self._known(self._names, "-")
        if self._users and self._users_re is None:
            rare = {u for u in self._users if u.lower() not in _COMMON_USERS and len(u) >= 3}
            self._users_re = _KnownValues(rare, "-")
        if self._hosts_re is not None:
            for start, end, value in self._hosts_re.finditer(text):
                full = self._full_host(value)
                spans.claim(start, end, self.pseudonyms.token("host", full))
        if self._hosts and "…" in text:
            self._cut_hosts(spans)
        if self._names_re is not None:
            for start, end, value in self._names_re.finditer(text):
                spans.claim(start, end, self.pseudonyms.token("path", value))
        if self._users:
            stripped = text.strip()
            if stripped in self._users:
                start = text.index(stripped)
                spans.claim(start, start + len(stripped), self.pseudonyms.token("user", stripped))
                return
            for user in self._users:
                # A long user is rare, so the pass below finds it anywhere; a pattern made of a
                # user of megabytes would take seconds and gigabytes to compile.
                if len(user) <= MAX_PATTERN_VALUE_CHARS and user in text:
                    for m in re.finditer(
                        rf"(?i:\buser(?:name)?\s*[=:]\s*)({re.escape(user)})(?![\w-])", text
                    ):
                        spans.claim(m.start(1), m.end(1), self.pseudonyms.token("user", user))
            assert self._users_re is not None
            for start, end, value in self._users_re.finditer(text):
                spans.claim(start, end, self.pseudonyms.token("user", value))

    def _cut_hosts(self, spans: Spans) -> None:
        """Claim the beginning of a known host cut by a report (`worker-17.c.pro…`): its
        token when only one host begins so, else `host-` (the cut hides which one).

        Reports cut long text to fit (a timeline label, a quoted error message) before
        redaction sees it; a host cut in the middle no longer matches as a whole word.
        """
        for m in _CUT_WORD.finditer(spans.text):
            word = m.group(1)
            if len(word) < _CUT_HOST_CHARS:
                continue
            hosts = {self._full_host(h) for h in self._hosts if h.startswith(word) and h != word}
            if len(hosts) == 1:
                spans.claim(m.start(1), m.end(), self.pseudonyms.token("host", hosts.pop()))
            elif hosts:
                spans.claim(m.start(1), m.end(1), "host-")

    def _full_host(self, host: str) -> str:
        """The host a learned short name stands for (`worker-3` of `worker-3.example.com`)."""
        return next((h for h in self._hosts if h.split(".")[0] == host and h != host), host)
