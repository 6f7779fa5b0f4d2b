"""Secrets in configuration values, redacted as Spark's `Utils.redact` does it.

Spark redacts properties whose key or value matches `spark.redaction.regex` before it writes them
to the event log, but with the application's own regex and only where the application did not
turn it off. The model applies Spark's default pattern again, so no layer above it ever holds a
secret a log let through. The application's own regex is not applied: a regex read from an
untrusted log could take exponential time to match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTION_PATTERN = re.compile(r"(?i)secret|password|token|access[.]?key")
"""Spark's default `spark.redaction.regex`."""

REDACTED = "*********(redacted)"
"""The value Spark writes in place of a redacted one (`Utils.REDACTION_REPLACEMENT_TEXT`)."""


def is_secret(key: str, value: str) -> bool:
    """Tell whether Spark's default pattern matches the key or the value of a property.

    >>> is_secret("spark.ssl.keyPassword", "x"), is_secret("spark.app.name", "ok")
    (True, False)
    >>> is_secret("sun.java.command", "App --conf spark.x.password=hunter2")
    True
    """
    return REDACTION_PATTERN.search(key) is not None or REDACTION_PATTERN.search(value) is not None


def redact_pairs(
    pairs: Iterable[tuple[str, str]], *, match_values: bool = True
) -> tuple[tuple[str, str], ...]:
    """Return the pairs with every secret value replaced by `REDACTED`, in the same order.

    With `match_values` (Spark's rule for configuration), a value is redacted when the pattern
    matches its key or the value itself; without it, only the key is looked at (for local
    properties such as a job description, which Spark logs as they are).

    >>> redact_pairs([("spark.hadoop.fs.s3a.access.key", "AKIA"), ("spark.app.name", "x")])
    (('spark.hadoop.fs.s3a.access.key', '*********(redacted)'), ('spark.app.name', 'x'))
    """
    out: list[tuple[str, str]] = []
    for key, value in pairs:
        secret = (
            is_secret(key, value) if match_values else REDACTION_PATTERN.search(key) is not None
        )
        out.append((key, REDACTED if secret else value))
    return tuple(out)
