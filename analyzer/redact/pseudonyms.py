"""Pseudonyms: the stable tokens (`host-3`, `path-1`, `'str-2'`) that replace values from a log."""

from __future__ import annotations

from typing import Literal

TokenKind = Literal["host", "path", "user", "num", "str"]
TOKEN_KINDS: tuple[TokenKind, ...] = ("host", "path", "user", "num", "str")
"""Every kind of token, in the order the output lists them."""


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
        return token

    @property
    def kinds(self) -> tuple[TokenKind, ...]:
        """The kinds of the tokens issued so far, in `TOKEN_KINDS` order."""
        return tuple(k for k in TOKEN_KINDS if k in self._counts)
