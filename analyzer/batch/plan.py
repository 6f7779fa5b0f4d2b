"""Planning a batch run, without touching any file: which logs to analyze, which are unchanged,
which failed already in the listing, and where each application's reports go.

Two pure steps around the one read they need (the fingerprint of each selected log):
`select_logs` applies the filters to the directory listing, `plan_batch` compares the fingerprints
with the manifest and assigns report directories.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from analyzer.batch.jobs import Job
from analyzer.batch.layout import app_key, is_app_key, with_clash_suffix
from analyzer.batch.manifest import Fingerprint, Manifest, ManifestEntry
from analyzer.eventlog.discover import AppInfo


@dataclass(frozen=True)
class ListedLog:
    """One entry of the log directory as the listing saw it."""

    log_name: str
    """The entry's name in the log directory (the manifest key)."""
    info: AppInfo
    """What its head and tail say, or `info.error` if they could not be read."""
    modified_ms: int | None
    """Modification time of the entry, epoch milliseconds (None if unknown)."""


@dataclass(frozen=True)
class Criteria:
    """Which logs a run picks (the `--since`, `--match` and `--include-incomplete` options)."""

    now_ms: int
    max_age_ms: int | None = None
    match: str | None = None
    """A regular expression searched in the application id and name (already validated)."""
    include_incomplete: bool = False


@dataclass(frozen=True)
class Selection:
    """The logs chosen by the criteria, and those whose listing failed."""

    selected: tuple[ListedLog, ...]
    failed: tuple[tuple[str, str], ...]
    """(log name, one-line error) of entries that could not be listed."""
    n_incomplete: int = 0
    """Logs left out because they are incomplete (no `--include-incomplete`), that the other
    criteria would have kept."""


def select_logs(listed: Sequence[ListedLog], criteria: Criteria) -> Selection:
    """Apply the criteria to a directory listing.

    An entry older than `--since` is left out even if it could not be read; one that could not be
    read is a failure unless `--match` is given (it has no id or name to match).
    """
    pattern = re.compile(criteria.match) if criteria.match is not None else None
    selected: list[ListedLog] = []
    failed: list[tuple[str, str]] = []
    n_incomplete = 0
    for log in listed:
        info = log.info
        if (
            criteria.max_age_ms is not None
            and log.modified_ms is not None
            and criteria.now_ms - log.modified_ms > criteria.max_age_ms
        ):
            continue
        if info.error is not None:
            if pattern is None:
                failed.append((log.log_name, info.error))
            continue
        if pattern is not None and not any(
            pattern.search(s) for s in (info.app_id, info.name) if s is not None
        ):
            continue
        if not (info.completed or criteria.include_incomplete):
            n_incomplete += 1
            continue
        selected.append(log)
    return Selection(tuple(selected), tuple(failed), n_incomplete)


@dataclass(frozen=True)
class Candidate:
    """A selected log with its fingerprint (the one read planning needs)."""

    log: ListedLog
    log_path: str
    """Absolute path or URL of the log."""
    fingerprint: Fingerprint


@dataclass(frozen=True)
class BatchPlan:
    """What a run does: the jobs, the unchanged logs, the failures known before analyzing."""

    jobs: tuple[Job, ...]
    """Logs to analyze, biggest first, so one large log does not start last and hold up the end."""
    unchanged: tuple[ManifestEntry, ...]
    """Selected logs whose manifest entry holds this version's outcome (some may have failed)."""
    failed: tuple[tuple[str, str], ...]
    """(log name, one-line error) of selected logs that failed before analysis (listing,
    fingerprint), sorted by name."""
    kept: tuple[ManifestEntry, ...]
    """Manifest entries that stay: logs still present and not failed in the listing. Entries of
    logs outside the selection stay too, so the index and the tables still cover them."""

    @property
    def n_failed_unchanged(self) -> int:
        """Unchanged logs whose recorded outcome is a failure."""
        return sum(1 for e in self.unchanged if not e.ok)


def plan_batch(
    *,
    present: Collection[str],
    candidates: Sequence[Candidate],
    failed: Sequence[tuple[str, str]],
    manifest: Manifest,
    reports_on_disk: Collection[str],
    settings: str,
    limits: str,
) -> BatchPlan:
    """Plan a run from the listing, the fingerprints and the manifest.

    `present` holds the name of every entry of the log directory, `failed` the selected or
    listed logs that could not be read, `reports_on_disk` the app keys whose `report.json`
    exists, `settings` and `limits` those of this run (`JobSettings.digest`, `limits_str`).
    An unchanged log whose report was deleted is analyzed again. Each log keeps its app key from
    run to run; a new one gets `layout.app_key`, with a hash of the log name if another log of
    the same application holds it already.
    """
    failed_names = {name for name, _ in failed}
    kept = {
        name: entry
        for name, entry in manifest.entries.items()
        if name in present and name not in failed_names
    }
    previous = Manifest(kept)
    unchanged: list[ManifestEntry] = []
    to_analyze: list[Candidate] = []
    for cand in candidates:
        entry = previous.unchanged(cand.log.log_name, cand.fingerprint, settings, limits)
        if entry is not None and (not entry.ok or entry.app_key in reports_on_disk):
            unchanged.append(entry)
        else:
            to_analyze.append(cand)
    analyzing = {c.log.log_name for c in to_analyze}
    taken = {
        e.app_key.casefold()
        for name, e in kept.items()
        if e.app_key is not None and name not in analyzing
    }
    jobs: list[Job] = []
    for cand in sorted(to_analyze, key=lambda c: c.log.log_name):
        key = _assign_key(cand, kept.get(cand.log.log_name), taken)
        taken.add(key.casefold())
        jobs.append(Job(cand.log.log_name, cand.log_path, key, cand.fingerprint))
    jobs.sort(key=lambda j: (-j.fingerprint.size_bytes, j.log_name))
    return BatchPlan(
        jobs=tuple(jobs),
        unchanged=tuple(unchanged),
        failed=tuple(sorted(failed)),
        kept=tuple(kept[name] for name in sorted(kept)),
    )


def _assign_key(cand: Candidate, previous: ManifestEntry | None, taken: set[str]) -> str:
    """Keep the log's earlier key if it is free and well formed, else make one."""
    if previous is not None and previous.app_key is not None:
        old = previous.app_key
        if is_app_key(old) and old.casefold() not in taken:
            return old
    info = cand.log.info
    key = app_key(info.app_id, info.attempt_id, cand.log.log_name)
    if key.casefold() in taken:
        key = with_clash_suffix(key, cand.log.log_name)
    return key
