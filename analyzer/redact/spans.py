"""Replacements claimed on one string by character range, the string rebuilt once at the end.

Every pass of the redactor marks what it replaces on the original string; the first pass to
claim a character wins. No pass ever reads another's output, so a token is never redacted again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from analyzer.redact.pseudonyms import TokenKind


@dataclass
class Spans:
    """Replacements claimed on one string, by character range.

    >>> spans = Spans("a 42 b")
    >>> spans.claim(2, 4, "num-1", "num"), spans.claim(3, 5, "x")
    (True, False)
    >>> spans.render()
    'a num-1 b'
    """

    text: str
    items: list[tuple[int, int, str, TokenKind | None, str]] = dataclasses.field(
        default_factory=list
    )
    """(start, end, replacement, kind of a literal or None, the original value)."""
    taken: bytearray = dataclasses.field(default_factory=bytearray)
    """Per character: 0 free, 1 claimed, 2 claimed as a secret."""
    secrets: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    """The ranges claimed as secrets (`claim_secret`)."""

    def __post_init__(self) -> None:
        self.taken = bytearray(len(self.text))

    def free(self, start: int, end: int) -> bool:
        """Tell whether [start, end) is not empty and no part of it is claimed."""
        return start < end and not any(self.taken[start:end])

    def claim(self, start: int, end: int, replacement: str, kind: TokenKind | None = None) -> bool:
        """Replace [start, end) unless part of it is already replaced.

        Secrets wholly inside the range are replaced with it: a URL or a path that holds a
        password is still replaced whole by its token.
        """
        if not self.free(start, end):
            if start >= end or not self._only_secrets_inside(start, end):
                return False
            self.items = [it for it in self.items if not (start <= it[0] and it[1] <= end)]
            self.secrets = [s for s in self.secrets if not (start <= s[0] and s[1] <= end)]
        self.taken[start:end] = b"\x01" * (end - start)
        self.items.append((start, end, replacement, kind, self.text[start:end]))
        return True

    def claim_secret(self, start: int, end: int, replacement: str) -> bool:
        """Replace [start, end), a secret, unless part of it is already replaced."""
        if not self.free(start, end):
            return False
        self.taken[start:end] = b"\x02" * (end - start)
        self.secrets.append((start, end))
        self.items.append((start, end, replacement, None, self.text[start:end]))
        return True

    def _only_secrets_inside(self, start: int, end: int) -> bool:
        """Tell whether every claimed character of [start, end) is of a secret wholly inside."""
        if 1 in self.taken[start:end]:
            return False
        return all(
            start <= s_start and s_end <= end
            for s_start, s_end in self.secrets
            if s_start < end and s_end > start
        )

    def absorb(self, start: int, end: int, replacement: str, kind: TokenKind) -> None:
        """Replace [start, end) as a whole, dropping the replacements inside it."""
        self.items = [it for it in self.items if not (start <= it[0] and it[1] <= end)]
        self.secrets = [s for s in self.secrets if not (start <= s[0] and s[1] <= end)]
        self.taken[start:end] = b"\x01" * (end - start)
        self.items.append((start, end, replacement, kind, self.text[start:end]))

    def render(self) -> str:
        """Return the text with every claimed range replaced."""
        out: list[str] = []
        pos = 0
        for start, end, replacement, _, _ in sorted(self.items):
            out.append(self.text[pos:start])
            out.append(replacement)
            pos = end
        out.append(self.text[pos:])
        return "".join(out)
