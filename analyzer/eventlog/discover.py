"""Find the applications in a log directory by reading only file names and log heads.

INTERFACE (implementation to be completed).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from analyzer.eventlog.source import Codec, Layout


class AppInfo(BaseModel):
    """One application found in a log directory (or the error that kept it from being read)."""

    model_config = ConfigDict(frozen=True)

    path: str
    app_id: str | None = None
    attempt_id: str | None = None
    name: str | None = None
    spark_version: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    completed: bool = False
    codec: Codec = "none"
    layout: Layout = "single"
    size_bytes: int = 0
    error: str | None = None
    """One-line description of why this entry could not be read, if it could not."""


def discover_applications(log_dir: str) -> list[AppInfo]:
    """Return one `AppInfo` per event log in `log_dir`, sorted by start time then path."""
    raise NotImplementedError
