"""A batch run over a log directory: list, plan, run the jobs on an engine, write the outputs.

The steps are separate: `listing` reads the directory (one failure per log, never for the run),
`plan` decides what to analyze and where its reports go (pure), the engine runs the jobs, and
this module writes every output from the results, under the output directory's lock.

Order of writes, so that a run killed at any moment leaves a consistent directory that the next
run completes: each application's reports (atomically, through `.*.tmp` files), then its
manifest entry, then at the end the manifest, the fleet tables and `index.html`, rebuilt from the
manifest and the JSON reports every run. Leftovers of a killed run are removed at the start.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from analyzer.batch.engine import ENGINES, Engine, EngineConfig
from analyzer.batch.fleet import TABLE_NAMES, ReportDocError, Row, fleet_rows, parse_report
from analyzer.batch.jobs import REPORT_FILES, Job, JobResult, JobSettings
from analyzer.batch.layout import APPS_DIR, INDEX_NAME, OWN_NAMES, OutputLayout, is_app_key
from analyzer.batch.limits import DEFAULT_MAX_MEMORY_MB, DEFAULT_TIMEOUT_S
from analyzer.batch.listing import fingerprint_logs, list_logs
from analyzer.batch.manifest import Manifest, ManifestEntry, load_manifest
from analyzer.batch.outputs import (
    OutputWriter,
    prepare_output_dir,
    remove_leftovers,
    remove_legacy_report_dirs,
    writing,
)
from analyzer.batch.plan import BatchPlan, Criteria, plan_batch, select_logs
from analyzer.batch.progress import Progress
from analyzer.errors import BatchBusyError, CannotWriteError, Strictness, UsageError
from analyzer.eventlog.source import is_url
from analyzer.render.terminal import neutralize
from analyzer.report.batch_index import IndexEntry, build_index_view
from analyzer.report.options import ReportOptions

MIN_MEMORY_MB = 256
"""Below this a worker cannot even import the analyzer."""
MAX_SINCE_MS = 100 * 365 * 86_400_000
"""`--since` beyond a century is refused as a typo."""
MANIFEST_SAVE_INTERVAL_S = 1.0
"""The manifest is rewritten at most this often while results come in (and once at the end)."""

_SINCE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_SINCE_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str) -> int:
    """Return a `--since` age (`90m`, `24h`, `7d`, `2w`, `30s`) in milliseconds.

    >>> parse_since("24h")
    86400000
    """
    m = _SINCE_RE.match(text)
    if m is None:
        raise UsageError(f"cannot read --since {text!r}; use a number and s, m, h, d or w: 24h, 7d")
    age_ms = float(m.group(1)) * _SINCE_UNIT_S[m.group(2)] * 1000
    if not math.isfinite(age_ms) or age_ms > MAX_SINCE_MS:
        raise UsageError(f"--since {m.group(1)[:20]}… is too long; at most 100 years")
    return int(age_ms)


@dataclass(frozen=True)
class BatchOptions:
    """Every option of a batch run, validated when built (a bad value is a `UsageError`)."""

    since: str | None = None
    """Only logs modified within this age (`parse_since`)."""
    match: str | None = None
    """Only applications whose id or name matches this regular expression."""
    include_incomplete: bool = False
    engine: str = "local"
    jobs: int | None = None
    """Worker processes of the local engine (None: the CPU count)."""
    master: str | None = None
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB
    """Data size one worker may use, MiB (0: no limit)."""
    timeout_s: int = DEFAULT_TIMEOUT_S
    """Wall time one log may take, seconds (0: no limit)."""
    strictness: Strictness = Strictness.STRICT
    report: ReportOptions = field(default_factory=ReportOptions)
    """Options of every report (thresholds); the format is set per report."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(f"unknown --engine {self.engine!r}; use {' or '.join(ENGINES)}")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if self.max_memory_mb != 0 and self.max_memory_mb < MIN_MEMORY_MB:
            raise UsageError(f"--max-memory-mb must be 0 (no limit) or at least {MIN_MEMORY_MB}")
        if self.timeout_s < 0:
            raise UsageError("--timeout-s must be 0 (no limit) or more")
        if self.since is not None:
            parse_since(self.since)
        if self.match is not None:
            try:
                re.compile(self.match)
            except (re.error, OverflowError, RecursionError) as error:
                raise UsageError(f"--match is not a valid regular expression: {error}") from None

    @cached_property
    def max_age_ms(self) -> int | None:
        """`since` in milliseconds."""
        return parse_since(self.since) if self.since is not None else None

    def job_settings(self) -> JobSettings:
        """Return the settings every job of the run gets."""
        return JobSettings(
            strictness=self.strictness,
            report=replace(self.report, color=False),
            max_memory_mb=self.max_memory_mb,
            timeout_s=self.timeout_s,
        )


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
    output_errors: list[str] = field(default_factory=list)
    """One line per output that could not be written (the run stopped at the first)."""
    elapsed_s: float = 0.0

    def line(self) -> str:
        """Return the one-line summary printed at the end of a run (it quotes log-derived text:
        neutralize it for a terminal)."""
        return (
            f"batch: {self.n_selected} of {self.n_logs} logs selected: {self.n_analyzed} analyzed, "
            f"{self.n_unchanged} unchanged, {self.n_failed} failed; "
            f"index {Path(self.out_dir) / INDEX_NAME} ({self.elapsed_s:.1f} s, {self.engine})"
        )


@contextlib.contextmanager
def _locked(layout: OutputLayout) -> Iterator[None]:
    """Hold an exclusive lock on the output directory: two runs must not interleave writes."""
    with writing(layout.lock_path):
        handle = open(layout.lock_path, "a+b")  # noqa: SIM115  # closed below
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BatchBusyError(
                "another batch run is writing this output directory",
                path=str(layout.root),
                hint="wait for it to finish, or choose another output directory",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _same_directory(log_dir: str, out_dir: Path) -> bool:
    if is_url(log_dir):
        return False
    try:
        return os.path.samefile(log_dir, out_dir)
    except OSError:
        return False


def run_batch(log_dir: str, output: str, options: BatchOptions | None = None) -> BatchSummary:
    """Analyze every chosen application of `log_dir` into `output`; see docs/batch.md.

    Raises `LogNotFoundError` if `log_dir` is not a directory, `CannotWriteError` if `output` cannot
    be written at all, `BatchBusyError` if another run holds it; a log that cannot be analyzed is
    counted in the summary instead, and so is an output that cannot be written mid-run.
    """
    options = options if options is not None else BatchOptions()
    started = time.monotonic()
    layout = prepare_output_dir(output)
    summary = BatchSummary(out_dir=str(layout.root), engine=options.engine)
    with _locked(layout):
        remove_leftovers(layout)
        loaded = load_manifest(layout.manifest_path)
        if loaded.foreign:
            raise CannotWriteError(
                "exists and is not a batch manifest",
                path=str(layout.manifest_path),
                hint="choose an output directory of its own, or remove the file",
            )
        remove_legacy_report_dirs(layout, loaded.legacy_report_dirs)
        settings = options.job_settings()
        plan = _plan(log_dir, layout, loaded.manifest, options, settings, summary)
        _Run(layout, plan, settings, summary).execute(
            ENGINES[options.engine](EngineConfig(layout, options.jobs, options.master))
        )
    summary.elapsed_s = time.monotonic() - started
    return summary


def _plan(
    log_dir: str,
    layout: OutputLayout,
    manifest: Manifest,
    options: BatchOptions,
    settings: JobSettings,
    summary: BatchSummary,
) -> BatchPlan:
    """List the log directory, fingerprint the selected logs, and plan (counts go to `summary`)."""
    listed = list_logs(log_dir, OWN_NAMES if _same_directory(log_dir, layout.root) else ())
    criteria = Criteria(
        now_ms=int(time.time() * 1000),
        max_age_ms=options.max_age_ms,
        match=options.match,
        include_incomplete=options.include_incomplete,
    )
    selection = select_logs(listed, criteria)
    candidates, unreadable = fingerprint_logs(selection.selected)
    on_disk = {
        e.app_key
        for e in manifest.entries.values()
        if e.app_key is not None
        and is_app_key(e.app_key)
        and (layout.app_dir(e.app_key) / REPORT_FILES["json"]).is_file()
    }
    plan = plan_batch(
        present={log.log_name for log in listed},
        candidates=candidates,
        failed=[*selection.failed, *unreadable],
        manifest=manifest,
        reports_on_disk=on_disk,
        settings=settings.digest(),
        limits=settings.limits_str(),
    )
    summary.n_logs = len(listed)
    summary.n_selected = len(selection.selected)
    summary.n_unchanged = len(plan.unchanged)
    for name, error in plan.failed:
        summary.failures.append((name, error))
    for entry in plan.unchanged:
        if not entry.ok:
            summary.failures.append((entry.log_name, entry.error or "failed"))
    summary.n_failed = len(summary.failures)
    return plan


def _print_traceback(log_name: str, trace: str) -> None:
    """Print a worker's traceback (a bug) on stderr, each line neutralized: it quotes the log."""
    lines = [f"{neutralize(log_name)}: internal error, please report it:"]
    lines += [neutralize(line) for line in trace.rstrip().splitlines()]
    sys.stderr.write("\n".join(lines) + "\n")


class _Run:
    """The driver side of one run: records results as they come, then writes the outputs."""

    def __init__(
        self, layout: OutputLayout, plan: BatchPlan, settings: JobSettings, summary: BatchSummary
    ) -> None:
        self.layout = layout
        self.plan = plan
        self.settings = settings
        self.summary = summary
        self.writer = OutputWriter(layout)
        self.manifest = Manifest({e.log_name: e for e in plan.kept})
        self.jobs: dict[str, Job] = {job.log_name: job for job in plan.jobs}
        self.fresh_failures: dict[str, str] = {}
        """Failures of this run that are not recorded in the manifest (retried next run)."""
        self.progress = Progress(len(plan.jobs))
        self._saved_at = 0.0

    def execute(self, engine: Engine) -> None:
        """Run the plan's jobs on `engine`, then write the manifest, tables and index."""
        try:
            try:
                engine.run(self.plan.jobs, self.settings, self.on_result, self.progress.advance)
            except CannotWriteError as error:
                self.summary.output_errors.append(str(error))
            finally:
                self.progress.close()
            self.finish(engine)
        finally:
            engine.close()

    def on_result(self, result: JobResult) -> None:
        """Record one application's result: write its reports, then its manifest entry.

        Raises `CannotWriteError` if a report or the manifest cannot be written: the run stops.
        """
        job = self.jobs[result.log_name]
        if result.traceback is not None:
            _print_traceback(job.log_name, result.traceback)
        if result.ok:
            try:
                self.writer.write_reports(job, result)
            except CannotWriteError as error:
                self._failed(job.log_name, str(error))
                raise
            self._record(job, result)
            self.summary.n_analyzed += 1
        else:
            reason = result.error or "failed"
            if result.failure in ("bad-log", "limit"):
                self._record(job, result)
            else:
                self.manifest.entries.pop(job.log_name, None)
                self.fresh_failures[job.log_name] = reason
            self._failed(job.log_name, reason)
        now = time.monotonic()
        if now - self._saved_at >= MANIFEST_SAVE_INTERVAL_S:
            self.writer.save_manifest(self.manifest)
            self._saved_at = now

    def _failed(self, log_name: str, error: str) -> None:
        self.summary.n_failed += 1
        self.summary.failures.append((log_name, error))
        self.progress.count_failure()

    def _record(self, job: Job, result: JobResult) -> None:
        self.manifest.entries[job.log_name] = ManifestEntry(
            log_name=job.log_name,
            log_path=job.log_path,
            fingerprint=job.fingerprint,
            settings=self.settings.digest(),
            ok=result.ok,
            app_key=job.app_key if result.ok else None,
            error=result.error,
            limits=self.settings.limits_str() if result.failure == "limit" else None,
            summary=result.summary if result.ok else None,
            format_errors=dict(result.format_errors),
            analyzed_at_ms=int(time.time() * 1000),
        )

    def finish(self, engine: Engine) -> None:
        """Write the manifest, the fleet tables and the index; each failure is one output error."""
        rows = self._table_rows()
        steps: tuple[Callable[[], None], ...] = (
            lambda: self.writer.save_manifest(self.manifest),
            lambda: engine.write_tables(rows, self.layout.tables_dir),
            lambda: self.writer.write_index(self._index_html()),
        )
        for step in steps:
            try:
                step()
            except CannotWriteError as error:
                self.summary.output_errors.append(str(error))

    def _table_rows(self) -> dict[str, list[Row]]:
        """Read every analyzed application's JSON report into table rows.

        An entry whose report is gone or damaged is dropped from the manifest, so the next run
        analyzes its log again.
        """
        rows: dict[str, list[Row]] = {name: [] for name in TABLE_NAMES}
        for name, entry in sorted(self.manifest.entries.items()):
            if not entry.ok or entry.app_key is None:
                continue
            path = self.layout.app_dir(entry.app_key) / REPORT_FILES["json"]
            try:
                doc = parse_report(path.read_bytes())
            except (OSError, ReportDocError):
                del self.manifest.entries[name]
                continue
            for table, table_rows in fleet_rows(entry.app_key, doc).items():
                rows[table].extend(table_rows)
        return rows

    def _index_html(self) -> str:
        from analyzer.render.batch_index import render_batch_index

        entries = [_index_entry(e) for e in self.manifest.entries.values()]
        errors = {**dict(self.plan.failed), **self.fresh_failures}
        entries += [IndexEntry(name, None, None, error) for name, error in sorted(errors.items())]
        view = build_index_view(entries, generated_at_ms=int(time.time() * 1000))
        return render_batch_index(view)


def _index_entry(entry: ManifestEntry) -> IndexEntry:
    files = tuple(
        (fmt, name) for fmt, name in REPORT_FILES.items() if fmt not in entry.format_errors
    )
    return IndexEntry(
        log_name=entry.log_name,
        report_dir=f"{APPS_DIR}/{entry.app_key}" if entry.app_key is not None else None,
        summary=entry.summary if entry.ok else None,
        error=None if entry.ok else entry.error,
        report_files=files if entry.ok else (),
        format_errors=tuple(sorted(entry.format_errors.items())),
    )
