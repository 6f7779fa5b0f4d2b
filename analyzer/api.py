"""The public entry points of the analyzer; the CLI and the batch runner are thin shells over these."""

from __future__ import annotations

from analyzer.eventlog.discover import AppInfo, discover_applications


def list_applications(log_dir: str) -> list[AppInfo]:
    """List the applications whose event logs are in `log_dir`, reading only their heads."""
    return discover_applications(log_dir)
