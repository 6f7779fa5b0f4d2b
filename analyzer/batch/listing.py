"""Reading what planning needs from the log directory: one entry per log, and fingerprints.

This runs in the driver, so no single log may stop it: whatever goes wrong while one entry is read
(an `AnalyzerError`, an `OSError`, or anything else) becomes that entry's one-line error.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable

from analyzer.batch.manifest import Fingerprint, fingerprint_log
from analyzer.batch.plan import Candidate, ListedLog
from analyzer.batch.worker import one_line
from analyzer.errors import LogNotFoundError
from analyzer.eventlog.discover import (
    AppInfo,
    app_dir_name,
    describe_entry,
    log_dir_entries,
)
from analyzer.eventlog.remote import RemoteOptions
from analyzer.eventlog.source import is_databricks_dir, is_rolling_dir, resolve_log
from analyzer.eventlog.storage import Entry, Storage, is_url


def _describe(entry: Entry, children: list[Entry] | None, storage: Storage) -> AppInfo | None:
    """Describe a file, or a directory that is a log; None for another directory."""
    if children is not None and not (
        is_databricks_dir(children) or is_rolling_dir(entry.name, children)
    ):
        return None  # not listed, as in `apps`
    return describe_entry(entry, children, storage)


def list_logs(
    log_dir: str, skip: Collection[str] = (), remote: RemoteOptions | None = None
) -> list[ListedLog]:
    """Return one `ListedLog` per event log in `log_dir`, in name order.

    Entries named in `skip` (batch's own outputs when the output directory is the log directory)
    are left out. Raises `LogNotFoundError` if `log_dir` is not a readable directory, and
    `RemoteStorageError` if its storage cannot be reached.
    """
    storage, entries = log_dir_entries(log_dir, remote, "`batch` reads")
    listed: list[ListedLog] = []
    for entry in entries:
        if entry.name in skip:
            continue
        info: AppInfo | None
        if entry.error is not None:  # a pipe, a socket, a device, a loop: listed, never opened
            unreadable = LogNotFoundError(entry.error, path=entry.path)
            info = AppInfo(path=entry.path, size_bytes=entry.size_bytes, error=one_line(unreadable))
            listed.append(ListedLog(app_dir_name(entry.path), info, entry.modified_ms))
            continue
        try:
            children = storage.list(entry.path) if entry.is_dir else None
            info = _describe(entry, children, storage)
        except Exception as error:  # one entry must not stop the listing of the others
            info = AppInfo(path=entry.path, size_bytes=entry.size_bytes, error=one_line(error))
        if info is not None:
            listed.append(ListedLog(app_dir_name(entry.path), info, entry.modified_ms))
    return listed


def fingerprint_logs(
    logs: Iterable[ListedLog], remote: RemoteOptions | None = None
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """Fingerprint each log (64 KiB at each end); return the candidates and the failures."""
    candidates: list[Candidate] = []
    failed: list[tuple[str, str]] = []
    for log in logs:
        path = log.info.path
        try:
            fingerprint: Fingerprint = fingerprint_log(resolve_log(path, remote))
        except Exception as error:  # as in the listing: a per-log failure
            failed.append((log.log_name, one_line(error)))
            continue
        # Absolute: workers and Spark executors may run in another directory.
        absolute = path if is_url(path) else os.path.abspath(path)
        candidates.append(Candidate(log, absolute, fingerprint))
    return candidates, failed
