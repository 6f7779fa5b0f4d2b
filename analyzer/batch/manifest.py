"""The batch manifest: what was analyzed from which version of each log, so re-runs skip it.

`OUTDIR/manifest.json` maps each log (by its name in the log directory) to the fingerprint of the
log when it was analyzed, the settings it was analyzed with, and the outcome: the application's
key (its report directory under `OUTDIR/apps/`) and index facts, or the error. An entry is written
only after the reports it describes, so a run killed at any moment never records a report that is
not on disk. The format is documented in docs/batch.md.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analyzer import __version__
from analyzer.eventlog.source import LogSource, open_part
from analyzer.render.json_render import visible_json
from analyzer.report.batch_index import AppSummary

MANIFEST_FORMAT_VERSION = 2
"""History: 1 — reports in `OUTDIR/<report_dir>/`; 2 — reports in `OUTDIR/apps/<app_key>/`, the
settings digest and the limits of limit failures, `summary` null for failed logs."""
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
        h.update(
            f"{Path(part.path).name}\0{part.size_bytes}\0{part.modified_ms}\n".encode(
                "utf-8", "surrogatepass"
            )
        )
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
    settings: str
    """`JobSettings.digest()` of the run that analyzed it: other settings analyze it again."""
    ok: bool
    """True when the log was analyzed and its JSON report written."""
    app_key: str | None
    """Its report directory under `OUTDIR/apps/`, None if it failed."""
    error: str | None
    """One-line error of a failed analysis."""
    limits: str | None = None
    """For a failure caused by the memory or time limit, the limits then (`JobSettings.limits_str`):
    other limits analyze it again."""
    summary: AppSummary | None = None
    """The application's index facts, None if it failed."""
    format_errors: dict[str, str] = field(default_factory=dict)
    """Report formats that could not be written, with the one-line reason."""
    analyzed_at_ms: int = 0
    job_key: str | None = None
    """The recurring job the application is a run of, None if it failed."""


@dataclass
class Manifest:
    """All entries of one output directory, written as one JSON file."""

    entries: dict[str, ManifestEntry] = field(default_factory=dict)

    def unchanged(
        self, log_name: str, fingerprint: Fingerprint, settings: str, limits: str
    ) -> ManifestEntry | None:
        """Return the entry of `log_name` if it holds the outcome a new analysis would have.

        That is: the same version of the log, analyzed with the same settings, and for a failure
        caused by a limit, under the same limits.
        """
        entry = self.entries.get(log_name)
        if (
            entry is None
            or entry.fingerprint != fingerprint
            or entry.settings != settings
            or (entry.limits is not None and entry.limits != limits)
        ):
            return None
        return entry

    def to_json(self) -> str:
        """Return the manifest document as stable JSON text."""
        doc = {
            "format_version": MANIFEST_FORMAT_VERSION,
            "analyzer_version": __version__,
            "entries": {k: asdict(v) for k, v in sorted(self.entries.items())},
        }
        text = json.dumps(doc, indent=1, ensure_ascii=False)
        try:
            # A bidi override or an invisible character in a log's name or error is written as
            # an escape: the same string read back, seen by whoever opens the file.
            text = visible_json(text.encode("utf-8")).decode("utf-8")
        except UnicodeEncodeError:
            # A log name whose bytes are not UTF-8 (kept by Python as lone surrogates): escaped,
            # it reads back as the same name.
            text = json.dumps(doc, indent=1, ensure_ascii=True)
        return text + "\n"


@dataclass(frozen=True)
class LoadedManifest:
    """A manifest read from disk, and what an older layout left to clean up."""

    manifest: Manifest
    legacy_report_dirs: tuple[str, ...] = ()
    """Report directories at the top of OUTDIR named by a format-1 manifest."""
    foreign: bool = False
    """`manifest.json` exists but is not a batch manifest (then batch refuses to overwrite it)."""


def _entry(data: dict[str, Any]) -> ManifestEntry:
    fp = Fingerprint(**data.pop("fingerprint"))
    summary = data.pop("summary", None)
    return ManifestEntry(
        fingerprint=fp,
        summary=AppSummary(**summary) if summary is not None else None,
        **data,
    )


def parse_manifest(text: str) -> LoadedManifest:
    """Read a manifest document; entries of another analyzer version or format are dropped.

    Dropping them makes an upgrade analyze every log again. A format-1 document yields the report
    directories it names, so the caller can remove the old layout.
    """
    try:
        doc = json.loads(text)
    except ValueError:
        return LoadedManifest(Manifest(), foreign=True)
    if not isinstance(doc, dict) or "format_version" not in doc:
        return LoadedManifest(Manifest(), foreign=True)
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, dict):
        return LoadedManifest(Manifest())
    if doc["format_version"] == 1:
        legacy = sorted(
            {
                v["report_dir"]
                for v in raw_entries.values()
                if isinstance(v, dict) and isinstance(v.get("report_dir"), str)
            }
        )
        return LoadedManifest(Manifest(), legacy_report_dirs=tuple(legacy))
    if doc["format_version"] != MANIFEST_FORMAT_VERSION or doc.get("analyzer_version") != (
        __version__
    ):
        return LoadedManifest(Manifest())
    entries: dict[str, ManifestEntry] = {}
    for key, value in raw_entries.items():
        try:
            entries[key] = _entry(dict(value))
        except (TypeError, KeyError, ValueError):
            continue  # a hand-edited entry: analyze that log again
    return LoadedManifest(Manifest(entries))


def load_manifest(path: Path) -> LoadedManifest:
    """Read the manifest at `path`; a missing or unreadable one is empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LoadedManifest(Manifest())
    except (OSError, UnicodeDecodeError):
        return LoadedManifest(Manifest(), foreign=True)
    return parse_manifest(text)
