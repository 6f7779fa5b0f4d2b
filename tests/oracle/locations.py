"""Where the oracle finds event logs, relative to the repository (CI puts ../shared beside it)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PUBLIC_EVENTLOGS = REPO_ROOT.parent / "shared" / "eventlogs" / "public"
SAMPLE_EVENTLOGS = REPO_ROOT / "sample_eventlogs"
PUBLIC_CORPUS = SAMPLE_EVENTLOGS / "public"
"""Public real-world logs copied into the repository (its README says from where)."""
