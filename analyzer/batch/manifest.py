"""The batch manifest: what was analyzed from which version of each log, so re-runs skip it.

`OUTDIR/manifest.json` maps each log (by its name in the log directory) to the fingerprint of the
log when it was analyzed and the outcome: the report directory, the one-line index summary, or
the error. An entry is written only after the reports it describes, so a run killed at any
moment never records a report that is not on disk. The format is documented in docs/batch.md.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analyzer import __version__
from analyzer.eventlog.source import LogSource, open_part

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT_VERSION = 1
"""History: 1 — first version."""
EDGE_BYTES = 64 << 10
"""Bytes hashed from the head of the first part and from the tail of the last part."""


@dataclass(frozen=True)
class Fingerprint:
    """What identifies one version of a log: sizes, times and the bytes at both ends."""

    size_bytes: int
    """Total on-disk size of all parts."""
    modified_ms: int
    """Latest modification time of any part, epoch milliseconds."""
    digest: str
    """sha256 over each part's name, size and mtime, the first and the last `EDGE_BYTES`."""


def fingerprint_log(source: LogSource) -> Fingerprint:
    """Fingerprint a log by reading only its parts' metadata and 64 KiB at each end."""
    h = hashlib.sha256()
    for part in source.parts:
        h.update(f"{Path(part.path).name}\0{part.size_bytes}\0{part.modified_ms}\n".encode())
    if source.parts:
        first, last = source.parts[0], source.parts[-1]
        with open_part(first) as stream:
            h.update(stream.read(EDGE_BYTES))
        with open_part(last) as stream:
            stream.seek(max(0, last.size_bytes - EDGE_BYTES))
            h.update(stream.read(EDGE_BYTES))
    return Fingerprint(
        size_bytes=source.size_bytes,
        modified_ms=max((p.modified_ms for p in source.parts), default=0),
        digest=h.hexdigest(),
    )


@dataclass(frozen=True)
class ManifestEntry:
    """The outcome of analyzing one version of one log."""

    log_name: str
    """The log's name in the log directory: the manifest key."""
    log_path: str
    fingerprint: Fingerprint
    ok: bool
    """True when the log was analyzed and its JSON report written."""
    report_dir: str | None
    """Directory of its reports under OUTDIR (`<app-id>[_<attempt>]`), None if it failed."""
    error: str | None
    """One-line error of a failed analysis (an `AnalyzerError`: the log itself is bad)."""
    summary: dict[str, Any] = field(default_factory=dict)
    """The application's index facts (`analyzer.report.batch_index.AppSummary` as a dict)."""
    format_errors: dict[str, str] = field(default_factory=dict)
    """Report formats that could not be written, with the one-line reason."""
    analyzed_at_ms: int = 0


@dataclass
class Manifest:
    """All entries of one output directory, written as one JSON file."""

    entries: dict[str, ManifestEntry] = field(default_factory=dict)

    def unchanged(self, log_name: str, fingerprint: Fingerprint) -> ManifestEntry | None:
        """Return the entry of `log_name` if it was made from this same version of the log."""
        entry = self.entries.get(log_name)
        if entry is None or entry.fingerprint != fingerprint:
            return None
        return entry

    def to_json(self) -> str:
        """Return the manifest document as stable JSON text."""
        return (
            json.dumps(
                {
                    "format_version": MANIFEST_FORMAT_VERSION,
                    "analyzer_version": __version__,
                    "entries": {k: asdict(v) for k, v in sorted(self.entries.items())},
                },
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )


def _entry(data: dict[str, Any]) -> ManifestEntry:
    fp = Fingerprint(**data.pop("fingerprint"))
    return ManifestEntry(fingerprint=fp, **data)


def load_manifest(out_dir: Path) -> Manifest:
    """Read `OUTDIR/manifest.json`; a missing, unreadable or older-version manifest is empty.

    Entries made by another analyzer version are dropped, so an upgrade re-analyzes every log.
    """
    path = out_dir / MANIFEST_NAME
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Manifest()
    if (
        not isinstance(doc, dict)
        or doc.get("format_version") != MANIFEST_FORMAT_VERSION
        or doc.get("analyzer_version") != __version__
    ):
        return Manifest()
    entries: dict[str, ManifestEntry] = {}
    for key, value in doc.get("entries", {}).items():
        try:
            entries[key] = _entry(dict(value))
        except (TypeError, KeyError):
            continue  # a hand-edited entry: analyze that log again
    return Manifest(entries)
