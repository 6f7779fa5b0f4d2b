"""The `Redactor`: one mapping of values from a log to pseudonyms, applied to any string.

It composes the passes of this package on one `Spans` per string, in a fixed order (the first to
claim a character wins, except that a path or URL token takes in the secrets inside it): secret
shapes (`secrets`), literals of free text already seen where our text quotes them
(`free_text.Fragments`), the environment (`environment`), then plan syntax (`plan_text`), and,
for free text read from the log, its quoted strings and numbers (`free_text`).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.redact.environment import Environment
from analyzer.redact.free_text import Fragments, claim_free_text_literals
from analyzer.redact.plan_text import claim_plan_literals, may_hold_plan_syntax
from analyzer.redact.pseudonyms import Pseudonyms
from analyzer.redact.secrets import claim_secrets
from analyzer.redact.spans import Spans

_CACHE_ENTRIES = 200_000
"""The most redacted strings kept for reuse (views repeat many strings: hosts, operator names)."""


class Redactor:
    """Replace values from the log with stable tokens (docs/redaction.md).

    >>> r = Redactor(hosts=["10.0.0.7"])
    >>> r.text("Lost executor 3 on 10.0.0.7 reading /data/x")
    'Lost executor 3 on host-1 reading path-1'
    """

    def __init__(self, hosts: Iterable[str] = (), users: Iterable[str] = ()) -> None:
        self.pseudonyms = Pseudonyms()
        self._cache: dict[str, str] = {}
        self._exact: dict[str, str] = {}
        self._environment = Environment(self.pseudonyms, self._cache.clear)
        self._fragments = Fragments(self._cache.clear)
        for host in hosts:
            self.add_host(host)
        for user in users:
            self.add_user(user)

    def add_host(self, host: str) -> None:
        """Know `host` (an executor's or the driver's), to replace it wherever it appears."""
        self._environment.add_host(host)

    def add_user(self, user: str) -> None:
        """Know a user name, to replace it where it stands as a user (and anywhere if rare)."""
        self._environment.add_user(user)

    def add_path_name(self, name: str) -> None:
        """Know a file name from the user's file system (the log's own), to replace it whole."""
        self._environment.add_path_name(name)

    def text(self, text: str) -> str:
        """Return `text` with every value from the log replaced by its token."""
        found = self._cache.get(text)
        if found is not None:
            return found
        exact = self._exact.get(text)
        if exact is not None:
            return exact
        spans = Spans(text)
        claim_secrets(spans)
        self._fragments.claim(spans)
        self._environment.claim(spans)
        if may_hold_plan_syntax(text):
            claim_plan_literals(spans, self.pseudonyms)
        out = spans.render()
        if len(self._cache) < _CACHE_ENTRIES:
            self._cache[text] = out
        return out

    def free_text(self, text: str) -> str:
        """Redact free text from the log (a description, an error message) and remember its
        literals with their neighbouring words, to find them in text that quotes it."""
        if not text:
            return text
        spans = Spans(text)
        claim_secrets(spans)
        self._fragments.claim(spans)
        self._environment.claim(spans)
        claim_plan_literals(spans, self.pseudonyms)
        claim_free_text_literals(spans, self.pseudonyms)
        for start, end, token, kind, value in sorted(spans.items):
            if kind is not None:
                self._fragments.remember(spans, start, end, token, value)
        out = spans.render()
        if any(c.isalpha() for c in text):
            # Shown whole, it reads as this; a bare number (`4`) could be one of our counts.
            self._exact[text] = out
        return out
