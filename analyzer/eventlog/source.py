"""Resolve what the user pointed at (a file, a rolling directory, a Databricks directory) into parts.

INTERFACE (implementation to be completed): other layers rely on these names and fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Codec = Literal["none", "zstd", "lz4", "lzf", "snappy", "gz"]
Layout = Literal["single", "rolling", "databricks"]


@dataclass(frozen=True)
class LogPart:
    """One physical file of an event log, read in order with the others of its log."""

    path: str
    """Local path or URL of the file."""
    codec: Codec
    size_bytes: int
    modified_ms: int
    """Last modification time, epoch milliseconds."""


@dataclass(frozen=True)
class LogSource:
    """An application's event log: one or more parts, read in order, as one stream of lines."""

    path: str
    """What the user named: the file or the directory."""
    layout: Layout
    parts: tuple[LogPart, ...]
    in_progress: bool
    """True for `.inprogress` files and rolling dirs whose appstatus file is still `.inprogress`."""

    @property
    def size_bytes(self) -> int:
        """Total on-disk size of all parts."""
        return sum(p.size_bytes for p in self.parts)

    @property
    def codec(self) -> Codec:
        """The codec of the last part (what the writer is using now)."""
        return self.parts[-1].codec if self.parts else "none"


def resolve_log(path: str) -> LogSource:
    """Resolve a path or URL into a `LogSource`; raise an `AnalyzerError` subclass if it is not a log."""
    raise NotImplementedError
