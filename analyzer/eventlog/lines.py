"""Stream the decompressed lines of a `LogSource`, lazily, in constant memory.

INTERFACE (implementation to be completed).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from analyzer.eventlog.source import LogSource


@dataclass
class ReadStats:
    """What happened while reading; filled in as lines are produced."""

    n_lines: int = 0
    bytes_decompressed: int = 0
    truncated_tail: bool = False
    """The last line of the log was incomplete and was dropped (crashed or in-progress app)."""
    truncated_tail_path: str | None = None
    n_malformed_skipped: int = 0
    """Malformed lines skipped in lenient mode (set by the event decoder)."""
    malformed_examples: list[str] = field(default_factory=list)
    """Up to a few `path:line` locations of skipped malformed lines."""


@dataclass(frozen=True)
class Line:
    """One raw line of the log, without its trailing newline."""

    path: str
    line_no: int
    """1-based line number within `path` (a part of the log)."""
    data: bytes


def iter_lines(source: LogSource, stats: ReadStats) -> Iterator[Line]:
    """Yield every complete, non-empty line of every part of `source` in order."""
    raise NotImplementedError
