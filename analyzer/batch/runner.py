"""A batch run over a log directory: pick logs, skip unchanged ones, analyze, write index, tables.

Order of writes, so that a run killed at any moment leaves a consistent directory that the next
run completes: each application's reports (atomically, through `.*.tmp` files), then its
manifest entry, then at the end the fleet tables and `index.html`, both rebuilt from the manifest
and the JSON reports every run. Stray `.*.tmp` files of a killed run are removed at the start.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from analyzer import api
from analyzer.batch.fleet import TABLE_NAMES, Row, fleet_rows
from analyzer.batch.manifest import (
    MANIFEST_NAME,
    Fingerprint,
    Manifest,
    ManifestEntry,
    fingerprint_log,
    load_manifest,
)
from analyzer.batch.worker import REPORT_FILES
from analyzer.errors import AnalyzerError, UsageError
from analyzer.eventlog.discover import AppInfo, app_dir_name, discover_applications
from analyzer.eventlog.source import is_url, resolve_log, storage_for
from analyzer.report.batch_index import IndexEntry, build_index_view, summary_from_dict

ENGINES = ("local", "spark")
INDEX_NAME = "index.html"
TABLES_DIR = "tables"
LOCK_NAME = ".batch.lock"
MANIFEST_SAVE_INTERVAL_S = 1.0
"""The manifest is rewritten at most this often while results come in (and once at the end)."""

_SINCE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_SINCE_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")


def parse_since(text: str) -> int:
    """Return a `--since` age (`90m`, `24h`, `7d`, `2w`, `30s`) in milliseconds.

    >>> parse_since("24h")
    86400000
    """
    m = _SINCE_RE.match(text)
    if m is None:
        raise UsageError(f"cannot read --since {text!r}; use a number and s, m, h, d or w: 24h, 7d")
    return int(float(m.group(1)) * _SINCE_UNIT_S[m.group(2)] * 1000)


def report_dir_name(app_id: str | None, attempt_id: str | None, log_name: str) -> str:
    """Return `<app-id>[_<attempt>]` made safe as one directory name (the log name if no id).

    >>> report_dir_name("application_1_0001", "2", "x")
    'application_1_0001_2'
    """
    base = app_id or log_name
    if attempt_id:
        base = f"{base}_{attempt_id}"
    safe = _UNSAFE_RE.sub("-", base).strip(".-") or "app"
    return safe


@dataclass
class BatchSummary:
    """What a batch run did, for the one-line summary and the exit status."""

    out_dir: str
    engine: str
    n_logs: int = 0
    """Entries found in the log directory."""
    n_selected: int = 0
    """Logs chosen by the filters (completed unless --include-incomplete, --since, --match)."""
    n_analyzed: int = 0
    n_unchanged: int = 0
    """Selected logs skipped because the manifest holds this same version of them."""
    n_failed: int = 0
    """Logs that could not be read or analyzed, including unchanged ones that failed before."""
    failures: list[tuple[str, str]] = field(default_factory=list)
    """(log name, one-line error) of each failed log."""
    elapsed_s: float = 0.0

    def line(self) -> str:
        """Return the one-line summary printed at the end of a run."""
        return (
            f"batch: {self.n_selected} of {self.n_logs} logs selected: {self.n_analyzed} analyzed, "
            f"{self.n_unchanged} unchanged, {self.n_failed} failed; "
            f"index {Path(self.out_dir) / INDEX_NAME} ({self.elapsed_s:.1f} s, {self.engine})"
        )


class _Engine(Protocol):
    def write_tables(self, rows: dict[str, list[Row]], tables_dir: Path) -> None: ...

    def close(self) -> None: ...


class _Progress:
    """Applications done / total and failures, drawn with rich on a terminal, else silent."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self._bar: Any = None
        self._task: Any = None
        if total and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._bar = Progress(
                TextColumn("analyzing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} failed"),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._bar.add_task("batch", total=total, failed=0)
            self._bar.start()

    def result(self, ok: bool) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)

    def started_tasks_done(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=min(n, self.total))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


@contextlib.contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on the output directory: two runs must not interleave writes."""
    with open(out_dir / LOCK_NAME, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(
                f"another batch run is writing {out_dir}", hint="wait for it to finish"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remove_stray_temp_files(out_dir: Path) -> int:
    """Delete the `.*.tmp` files a killed run left behind; return how many."""
    n = 0
    for path in out_dir.rglob(".*.tmp"):
        if path.is_file():
            path.unlink(missing_ok=True)
            n += 1
    return n


def _modified_ms(info: AppInfo) -> int | None:
    storage, native = storage_for(info.path)
    try:
        entry = storage.stat(native)
    except AnalyzerError:
        return None
    return None if entry is None else entry.modified_ms


@dataclass
class _Candidate:
    info: AppInfo
    log_name: str
    fingerprint: Fingerprint


class _Run:
    """The state of one batch run (the driver side, whatever the engine)."""

    def __init__(self, out_dir: Path, manifest: Manifest, summary: BatchSummary) -> None:
        self.out_dir = out_dir
        self.manifest = manifest
        self.summary = summary
        self.fresh_failures: dict[str, str] = {}
        """Failures of this run that are not recorded in the manifest (bugs, dead workers)."""
        self.candidates: dict[str, _Candidate] = {}
        self.report_dirs: dict[str, str] = {}
        self._saved_at = 0.0
        self.progress: _Progress | None = None

    def save_manifest(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._saved_at >= MANIFEST_SAVE_INTERVAL_S:
            api.write_atomic(self.out_dir / MANIFEST_NAME, self.manifest.to_json())
            self._saved_at = now

    def on_result(self, result: dict[str, Any]) -> None:
        """Record one application's result: write returned reports, then its manifest entry."""
        log_name = result["log_name"]
        cand = self.candidates[log_name]
        report_dir = self.report_dirs[log_name]
        if result["ok"] and result["files"]:
            for file_name in REPORT_FILES.values():
                path = self.out_dir / report_dir / file_name
                if file_name in result["files"]:
                    api.write_atomic(path, result["files"][file_name])
                else:
                    path.unlink(missing_ok=True)
        if result["ok"] or result["deterministic"]:
            self.manifest.entries[log_name] = ManifestEntry(
                log_name=log_name,
                log_path=cand.info.path,
                fingerprint=cand.fingerprint,
                ok=bool(result["ok"]),
                report_dir=report_dir if result["ok"] else None,
                error=result["error"],
                summary=result["summary"] or {},
                format_errors=dict(result["format_errors"]),
                analyzed_at_ms=int(time.time() * 1000),
            )
            self.fresh_failures.pop(log_name, None)
        else:
            self.manifest.entries.pop(log_name, None)
            self.fresh_failures[log_name] = result["error"]
        if "traceback" in result:  # a bug, not a bad log: keep the traceback for the report
            sys.stderr.write(f"{log_name}: {result['traceback']}")
        if result["ok"]:
            self.summary.n_analyzed += 1
        else:
            self.summary.n_failed += 1
            self.summary.failures.append((log_name, result["error"]))
        if self.progress is not None:
            self.progress.result(bool(result["ok"]))
        self.save_manifest()


def _assign_report_dirs(
    candidates: list[_Candidate], manifest: Manifest, taken: set[str]
) -> dict[str, str]:
    """Give each log a report directory, keeping earlier choices; clashes get a hash suffix."""
    dirs: dict[str, str] = {}
    for cand in sorted(candidates, key=lambda c: c.log_name):
        previous = manifest.entries.get(cand.log_name)
        name = previous.report_dir if previous is not None and previous.report_dir else None
        if name is None or name in taken:
            name = report_dir_name(cand.info.app_id, cand.info.attempt_id, cand.log_name)
            if name in taken:
                digest = hashlib.sha256(cand.log_name.encode()).hexdigest()[:8]
                name = f"{name}~{digest}"
        taken.add(name)
        dirs[cand.log_name] = name
    return dirs


def _make_engine(engine: str, jobs: int | None, master: str | None) -> Any:
    if engine == "spark":
        from analyzer.batch.spark_engine import SparkEngine

        return SparkEngine(master)
    from analyzer.batch.local_engine import LocalEngine

    return LocalEngine(jobs)


def run_batch(
    log_dir: str,
    output: str,
    *,
    since: str | None = None,
    match: str | None = None,
    include_incomplete: bool = False,
    engine: str = "local",
    jobs: int | None = None,
    master: str | None = None,
) -> BatchSummary:
    """Analyze every chosen application of `log_dir` into `output`; see docs/batch.md.

    Raises `UsageError` for bad options and `LogNotFoundError` if `log_dir` is not a directory;
    a log that cannot be analyzed is counted in the summary instead.
    """
    started = time.monotonic()
    if engine not in ENGINES:
        raise UsageError(f"unknown --engine {engine!r}; use local or spark")
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    max_age_ms = parse_since(since) if since is not None else None
    try:
        pattern = re.compile(match) if match is not None else None
    except re.error as error:
        raise UsageError(f"--match is not a valid regular expression: {error}") from None
    out_dir = Path(output)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = BatchSummary(out_dir=str(out_dir), engine=engine)
    with _locked(out_dir):
        remove_stray_temp_files(out_dir)
        infos = discover_applications(log_dir)
        summary.n_logs = len(infos)
        run = _Run(out_dir, load_manifest(out_dir), summary)
        _run_locked(run, infos, max_age_ms, pattern, include_incomplete, engine, jobs, master)
    summary.elapsed_s = time.monotonic() - started
    return summary


def _run_locked(
    run: _Run,
    infos: list[AppInfo],
    max_age_ms: int | None,
    pattern: re.Pattern[str] | None,
    include_incomplete: bool,
    engine_name: str,
    jobs: int | None,
    master: str | None,
) -> None:
    summary, manifest = run.summary, run.manifest
    now_ms = int(time.time() * 1000)
    present: set[str] = set()
    listing_errors: dict[str, str] = {}
    to_analyze: list[_Candidate] = []
    for info in infos:
        log_name = app_dir_name(info.path)
        present.add(log_name)
        if max_age_ms is not None:
            modified = _modified_ms(info)
            if modified is not None and now_ms - modified > max_age_ms:
                continue
        if info.error is not None:
            if pattern is None:
                listing_errors[log_name] = info.error
            continue
        if not (info.completed or include_incomplete):
            continue
        if pattern is not None and not any(
            pattern.search(s) for s in (info.app_id, info.name) if s is not None
        ):
            continue
        summary.n_selected += 1
        try:
            fingerprint = fingerprint_log(resolve_log(info.path))
        except (AnalyzerError, OSError) as read_error:
            listing_errors[log_name] = str(read_error).splitlines()[0]
            continue
        cand = _Candidate(info, log_name, fingerprint)
        run.candidates[log_name] = cand
        previous = manifest.unchanged(log_name, fingerprint)
        if previous is not None and (not previous.ok or _reports_present(run.out_dir, previous)):
            summary.n_unchanged += 1
            if not previous.ok:
                summary.n_failed += 1
                summary.failures.append((log_name, previous.error or "failed"))
            continue
        to_analyze.append(cand)
    for log_name, error in listing_errors.items():
        manifest.entries.pop(log_name, None)
        summary.n_failed += 1
        summary.failures.append((log_name, error))
    for gone in set(manifest.entries) - present:
        del manifest.entries[gone]
    analyzing = {c.log_name for c in to_analyze}
    taken = {
        e.report_dir for k, e in manifest.entries.items() if e.report_dir and k not in analyzing
    }
    run.report_dirs = _assign_report_dirs(to_analyze, manifest, taken)
    # Biggest logs first, so one large log does not start last and hold up the end of the run.
    to_analyze.sort(key=lambda c: -c.fingerprint.size_bytes)
    job_list = [
        {
            # Absolute: Spark executors and pool workers may run in another directory.
            "log_path": c.info.path if is_url(c.info.path) else os.path.abspath(c.info.path),
            "log_name": c.log_name,
            "report_dir": run.report_dirs[c.log_name],
            "out_dir": str(run.out_dir.resolve()),
        }
        for c in to_analyze
    ]
    engine = _make_engine(engine_name, jobs, master)
    try:
        run.progress = _Progress(len(job_list))
        try:
            if engine_name == "spark":
                engine.run(job_list, run.on_result, run.progress.started_tasks_done)
            else:
                engine.run(job_list, run.on_result)
        finally:
            run.progress.close()
        run.save_manifest(force=True)
        _write_tables(run, engine)
        _write_index(run, listing_errors)
    finally:
        engine.close()


def _reports_present(out_dir: Path, entry: ManifestEntry) -> bool:
    """True if the JSON report an `ok` entry describes is still on disk (someone may delete it)."""
    return entry.report_dir is not None and (out_dir / entry.report_dir / "report.json").is_file()


def _write_tables(run: _Run, engine: _Engine) -> None:
    rows: dict[str, list[Row]] = {name: [] for name in TABLE_NAMES}
    for entry in sorted(run.manifest.entries.values(), key=lambda e: e.log_name):
        if not entry.ok or entry.report_dir is None:
            continue
        path = run.out_dir / entry.report_dir / "report.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # deleted meanwhile: the next run analyzes the log again
        for table, table_rows in fleet_rows(entry.report_dir, doc).items():
            rows[table].extend(table_rows)
    engine.write_tables(rows, run.out_dir / TABLES_DIR)


def _index_entry(entry: ManifestEntry) -> IndexEntry:
    files = tuple(
        (fmt, name) for fmt, name in REPORT_FILES.items() if fmt not in entry.format_errors
    )
    return IndexEntry(
        log_name=entry.log_name,
        report_dir=entry.report_dir,
        summary=summary_from_dict(entry.summary) if entry.ok and entry.summary else None,
        error=None if entry.ok else entry.error,
        report_files=files if entry.ok else (),
        format_errors=tuple(sorted(entry.format_errors.items())),
    )


def _write_index(run: _Run, listing_errors: dict[str, str]) -> None:
    from analyzer.render.batch_index import render_batch_index

    entries = [_index_entry(e) for e in run.manifest.entries.values()]
    errors = {**listing_errors, **run.fresh_failures}
    entries.extend(IndexEntry(name, None, None, error) for name, error in sorted(errors.items()))
    view = build_index_view(entries, generated_at_ms=int(time.time() * 1000))
    api.write_atomic(run.out_dir / INDEX_NAME, render_batch_index(view))
