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

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.batch.engine import ENGINES, Engine, EngineConfig
from analyzer.batch.fleet import FleetFrames, ReportDocError
from analyzer.batch.history import (
    SPARKLINE_RUNS,
    AdviceAppliedRecord,
    History,
    HistoryStore,
    RegressionRule,
    RunInput,
    RunRecord,
    job_states,
    new_records,
)
from analyzer.batch.jobkey import normalize_app_name
from analyzer.batch.jobs import REPORT_FILES, DiffJob, Job, JobResult, JobSettings
from analyzer.batch.layout import (
    APPS_DIR,
    DIFF_FILE,
    INDEX_NAME,
    OWN_NAMES,
    OutputLayout,
    is_app_key,
)
from analyzer.batch.limits import available_cores
from analyzer.batch.listing import fingerprint_logs, list_logs
from analyzer.batch.manifest import Manifest, ManifestEntry, load_manifest
from analyzer.batch.options import BatchOptions, parse_since
from analyzer.batch.outputs import (
    OutputWriter,
    check_output_dir,
    locked,
    prepare_output_dir,
    remove_leftovers,
    remove_legacy_report_dirs,
    same_directory,
)
from analyzer.batch.plan import BatchPlan, Criteria, plan_batch, select_logs
from analyzer.batch.progress import Progress
from analyzer.batch.report_reader import read_for_tables
from analyzer.errors import CannotWriteError, path_in_error
from analyzer.eventlog.discover import check_log_dir
from analyzer.eventlog.storage import is_url
from analyzer.render.terminal import neutralize
from analyzer.report.batch_index import (
    IndexEntry,
    JobAdviceEntry,
    JobCostEntry,
    JobEntry,
    JobFindingEntry,
    JobRunPoint,
    build_index_view,
)
from analyzer.report.bounds import clip_view
from analyzer.units import plural

if TYPE_CHECKING:
    import polars as pl

MANIFEST_SAVE_INTERVAL_S = 1.0
"""The manifest is rewritten at most this often while results come in (and once at the end)."""
MAX_FAILURE_LINES = 20
"""The most failed logs a run names on the terminal; the index lists every one."""


@dataclass
class BatchSummary:
    """What a batch run did, for the one-line summary and the exit status."""

    out_dir: str
    engine: str
    log_dir: str = ""
    """The log directory as given (the failed logs' paths are shown under it)."""
    n_logs: int = 0
    """Entries found in the log directory."""
    n_selected: int = 0
    """Logs chosen by the filters (completed unless --include-incomplete, --since, --match)."""
    n_analyzed: int = 0
    n_unchanged: int = 0
    """Selected logs skipped because the manifest holds this same version of them, analyzed (a
    skipped log that failed before is among `n_failed`)."""
    n_failed: int = 0
    """Logs that could not be read or analyzed, including unchanged ones that failed before."""
    n_unlisted: int = 0
    """Of those, entries that could not be read to be selected (not among `n_selected`)."""
    n_incomplete: int = 0
    """Incomplete logs left out (no `--include-incomplete`)."""
    failures: list[tuple[str, str]] = field(default_factory=list)
    """(log name, one-line error) of each failed log."""
    output_errors: list[str] = field(default_factory=list)
    """One line per output that could not be written (the run stopped at the first)."""
    warnings: list[str] = field(default_factory=list)
    """One line per problem that did not stop any output (a history file that cannot be read, a
    diff report that could not be rendered)."""
    n_recorded: int = 0
    """Runs added to the job history."""
    n_regressed: int = 0
    """Of those, runs that regressed."""
    elapsed_s: float = 0.0
    index_written: bool = False
    """`index.html` was written by this run (the summary names it only then)."""

    def failure_lines(self, max_lines: int = MAX_FAILURE_LINES) -> list[str]:
        """Return one line per failed log, at most `max_lines` of them then how many more and
        where they are listed (the lines quote log-derived text: neutralize them for a terminal).

        A line is the log's one-line error when that names the log (an `AnalyzerError` names
        its file), else the log's path and the error (`took longer than 3 s`). A log that failed
        because its report could not be written is left to its `output_errors` line.

        >>> s = BatchSummary("out", "local", "logs", failures=[("a.zstd", "took longer than 3 s"),
        ...     ("b", "logs/b:1: not a JSON object [not-an-event-log]")])
        >>> s.failure_lines()
        ['logs/a.zstd: took longer than 3 s', 'logs/b:1: not a JSON object [not-an-event-log]']
        >>> s.failure_lines(1)
        ['logs/a.zstd: took longer than 3 s', '… and 1 more failed log; index not written']
        """
        said = set(self.output_errors)
        failures = [(name, error) for name, error in self.failures if error not in said]
        lines = [
            error if path_in_error(log_name) in error else f"{self.listed_path(log_name)}: {error}"
            for log_name, error in failures[:max_lines]
        ]
        n_more = len(failures) - len(lines)
        if n_more > 0:
            index = Path(self.out_dir) / INDEX_NAME
            where = f"see {index}" if self.index_written else "index not written"
            lines.append(f"… and {n_more} more failed log{'' if n_more == 1 else 's'}; {where}")
        return lines

    def listed_path(self, log_name: str) -> str:
        """The path of a log of the log directory, as the user would write it."""
        if not self.log_dir:
            return log_name
        if is_url(self.log_dir):
            return f"{self.log_dir.rstrip('/')}/{log_name}"
        return os.path.join(self.log_dir, log_name)

    def line(self) -> str:
        """Return the one-line summary printed at the end of a run (it quotes log-derived text:
        neutralize it for a terminal)."""
        runs = "run" if self.n_recorded == 1 else "runs"
        index = (
            f"index {Path(self.out_dir) / INDEX_NAME}"
            if self.index_written
            else "index not written"
        )
        left_out = [
            f"{plural(self.n_unlisted, 'other entry', 'other entries')} failed"
            if self.n_unlisted
            else "",
            f"{self.n_incomplete} incomplete left out (--include-incomplete analyzes them)"
            if self.n_incomplete
            else "",
        ]
        return (
            f"batch: {self.n_selected} of {self.n_logs} logs selected: {self.n_analyzed} analyzed, "
            f"{self.n_unchanged} unchanged, {self.n_failed - self.n_unlisted} failed; "
            + "".join(f"{part}; " for part in left_out if part)
            + f"{self.n_recorded} {runs} recorded, {self.n_regressed} of them regressed; "
            f"{index} ({self.elapsed_s:.1f} s, {self.engine})"
        )


def run_batch(log_dir: str, output: str, options: BatchOptions | None = None) -> BatchSummary:
    """Analyze every chosen application of `log_dir` into `output`; see docs/batch.md.

    Raises `LogNotFoundError` if `log_dir` is not a directory, `CannotWriteError` if `output` cannot
    be written at all, `BatchBusyError` if another run holds it; a log that cannot be analyzed is
    counted in the summary instead, and so is an output that cannot be written mid-run.
    """
    options = options if options is not None else BatchOptions()
    started = time.monotonic()
    started_ms = int(time.time() * 1000)
    if not is_url(log_dir):
        # Nothing is written for a log directory that is not there (a URL is listed first).
        check_log_dir(log_dir, options.remote, "`batch` reads")
    check_output_dir(log_dir, output)
    layout = prepare_output_dir(output)
    summary = BatchSummary(out_dir=str(layout.root), engine=options.engine, log_dir=log_dir)
    cores = available_cores()
    if options.engine == "local" and options.jobs is not None and options.jobs > cores:
        # Each worker holds a whole analysis: more workers than cores only add memory.
        summary.warnings.append(
            f"--jobs {options.jobs} is more than the {cores} cores this process may use: "
            f"running {cores} workers"
        )
        options = replace(options, jobs=cores)
    with locked(layout):
        remove_leftovers(layout)
        HistoryStore(layout.tables_dir).remove_uncommitted()
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
        _Run(layout, plan, settings, summary, options.regression_rule, started_ms).execute(
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
    own_names = OWN_NAMES if same_directory(log_dir, layout.root) else ()
    listed = list_logs(log_dir, own_names, options.remote)
    criteria = Criteria(
        now_ms=int(time.time() * 1000),
        max_age_ms=options.max_age_ms,
        match=options.match,
        include_incomplete=options.include_incomplete,
    )
    selection = select_logs(listed, criteria)
    candidates, unreadable = fingerprint_logs(selection.selected, options.remote)
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
    summary.n_unlisted = len(selection.failed)
    summary.n_incomplete = selection.n_incomplete
    # A log that failed before is one of the failures, not of the unchanged: each selected log
    # is counted once.
    summary.n_unchanged = sum(1 for e in plan.unchanged if e.ok)
    for name, error in plan.failed:
        summary.failures.append((name, error))
    for entry in plan.unchanged:
        if not entry.ok:
            summary.failures.append((entry.log_name, entry.error or "failed"))
    summary.n_failed = len(summary.failures)
    return plan


def _may_exist(path: str | None) -> bool:
    """False for a log known to be gone (a local path that does not exist); True for a URL."""
    if path is None:
        return False
    return is_url(path) or os.path.exists(path)


def _print_traceback(log_name: str, trace: str) -> None:
    """Print a worker's traceback (a bug) on stderr, each line neutralized: it quotes the log."""
    lines = [f"{neutralize(log_name)}: internal error, please report it:"]
    lines += [neutralize(line) for line in trace.rstrip().splitlines()]
    sys.stderr.write("\n".join(lines) + "\n")


class _Run:
    """The driver side of one run: records results as they come, then writes the outputs."""

    def __init__(
        self,
        layout: OutputLayout,
        plan: BatchPlan,
        settings: JobSettings,
        summary: BatchSummary,
        regression_rule: RegressionRule,
        started_ms: int,
    ) -> None:
        self.layout = layout
        self.regression_rule = regression_rule
        self.started_ms = started_ms
        """When this batch run started: the `batch_run_ms` of the history rows it adds."""
        self.store = HistoryStore(layout.tables_dir)
        self.history = History()
        self._regressed_now: list[RunRecord] = []
        """Runs this batch recorded as regressed."""
        self.diff_errors: dict[str, str] = {}
        """App key → why its diff report could not be written (this run)."""
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
        if result.cannot_write is not None:  # a worker could not stage a report
            message, path, hint = result.cannot_write
            error = CannotWriteError(message, path=path, hint=hint)
            self._failed(job.log_name, str(error))
            raise error
        if result.ok:
            try:
                self.writer.write_reports(job, result)
            except CannotWriteError as error:
                self._failed(job.log_name, str(error))
                raise
            self._record(job, result)
            self.summary.n_analyzed += 1
        else:
            reason = self._as_listed(result.error or "failed", job)
            if reason != result.error:
                result = replace(result, error=reason)
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

    def _as_listed(self, error: str, job: Job) -> str:
        """An analysis error that names the log by the absolute path the worker read it at,
        named as the listing names it (under the log directory as given), like every other
        failure line."""
        read_at = path_in_error(job.log_path)
        if not error.startswith(read_at):
            return error
        return path_in_error(self.summary.listed_path(job.log_name)) + error[len(read_at) :]

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
            job_key=result.job_key if result.ok else None,
        )

    def finish(self, engine: Engine) -> None:
        """Write the manifest, the fleet tables, the history, the diff reports of regressed runs
        and the index; each failure is one output error."""
        tables, inputs = self._table_rows()
        steps: tuple[Callable[[], None], ...] = (
            lambda: self.writer.save_manifest(self.manifest),
            lambda: engine.write_tables(tables, self.layout.tables_dir),
            lambda: self._record_history(inputs),
            lambda: self._write_diffs(engine),
            self._write_index,
        )
        for step in steps:
            try:
                step()
            except CannotWriteError as error:
                self.summary.output_errors.append(str(error))

    def _write_index(self) -> None:
        self.writer.write_index(self._index_html())
        self.summary.index_written = True

    def _table_rows(self) -> tuple[dict[str, pl.DataFrame], list[RunInput]]:
        """Read every analyzed application's JSON report into the fleet tables and history
        inputs (each application's rows made columns as it is read: `FleetFrames`).

        An entry whose report is gone or damaged is dropped from the manifest, so the next run
        analyzes its log again.
        """
        tables = FleetFrames()
        inputs: list[RunInput] = []
        for name, entry in sorted(self.manifest.entries.items()):
            if not entry.ok or entry.app_key is None:
                continue
            path = self.layout.app_dir(entry.app_key) / REPORT_FILES["json"]
            try:
                doc, app_rows = read_for_tables(path, entry.app_key)
            except (OSError, ReportDocError):
                del self.manifest.entries[name]
                continue
            tables.add(app_rows)
            del app_rows
            summary = entry.summary
            job_key = entry.job_key or normalize_app_name(doc.application.name or "")
            n_failed_tasks = summary.n_failed_tasks if summary is not None else 0
            inputs.append(RunInput(entry.app_key, job_key, entry.log_path, n_failed_tasks, doc))
        return tables.frames(), inputs

    def _record_history(self, inputs: list[RunInput]) -> None:
        """Append the runs not recorded yet to the history tables (read first)."""
        self.history = self.store.load()
        self.summary.warnings.extend(self.history.unreadable)
        records = new_records(self.history, inputs, self.regression_rule, self.started_ms)
        self.store.append(records, self.started_ms)
        self.history.runs.extend(records.runs)
        self.history.findings.extend(records.findings)
        self.history.applied.extend(records.applied)
        self.summary.n_recorded = len(records.runs)
        self.summary.n_regressed = sum(1 for r in records.runs if r.regressed)
        self._regressed_now = [r for r in records.runs if r.regressed]

    def _write_diffs(self, engine: Engine) -> None:
        """Render the diff report of each regressed run that has none yet, on the engine.

        The runs recorded as regressed in this batch, and the latest run of each job that is
        regressed by the current regression rule; each against the run of its job before it.
        """
        if self.summary.output_errors:  # a full disk: no more work
            return
        targets = {r.app_key: r for r in self._regressed_now}
        for state in job_states(self.history, self.regression_rule):
            if state.comparison.regressed:
                targets.setdefault(state.latest.app_key, state.latest)
        by_job: dict[str, list[RunRecord]] = {}
        for run in self.history.runs:
            by_job.setdefault(run.job_key, []).append(run)
        jobs: list[DiffJob] = []
        for run in targets.values():
            earlier = sorted(
                (r for r in by_job[run.job_key] if r.run_start_ms < run.run_start_ms),
                key=lambda r: r.run_start_ms,
            )
            if not earlier or not is_app_key(run.app_key):
                continue
            previous = earlier[-1]
            if (self.layout.app_dir(run.app_key) / DIFF_FILE).is_file():
                continue
            missing = [p for p in (previous.log_path, run.log_path) if not _may_exist(p)]
            if missing:
                self.diff_errors[run.app_key] = f"the log {missing[0]} is gone"
                continue
            assert run.log_path is not None and previous.log_path is not None
            jobs.append(
                DiffJob(
                    log_name=f"diff {run.app_key}",
                    log_path=run.log_path,
                    app_key=run.app_key,
                    baseline_log_path=previous.log_path,
                    baseline_app_key=previous.app_key,
                    file_name=DIFF_FILE,
                )
            )
        if not jobs:
            return
        by_name = {job.log_name: job for job in jobs}

        def on_result(result: JobResult) -> None:
            job = by_name[result.log_name]
            if result.traceback is not None:
                _print_traceback(job.log_name, result.traceback)
            if not result.ok:
                reason = result.error or "failed"
                self.diff_errors[job.app_key] = reason
                self.summary.warnings.append(
                    f"{job.app_key}: no diff report against {job.baseline_app_key}: {reason}"
                )
                return
            self.writer.write_files(job.app_key, job.file_name, result)

        engine.run(jobs, self.settings, on_result, lambda n_done: None)

    def _index_html(self) -> str:
        from analyzer.render.batch_index import render_batch_index

        entries = [_index_entry(e) for e in self.manifest.entries.values()]
        errors = {**dict(self.plan.failed), **self.fresh_failures}
        entries += [IndexEntry(name, None, None, error) for name, error in sorted(errors.items())]
        view = clip_view(
            build_index_view(
                entries,
                generated_at_ms=int(time.time() * 1000),
                jobs=self._job_entries(),
                regression_rule=self.regression_rule.describe(),
                history_notes=self.history.unreadable,
                n_incomplete=self.summary.n_incomplete,
            )
        )
        return render_batch_index(view)

    def _job_entries(self) -> list[JobEntry]:
        """Every job of the history, its latest run compared by the current regression rule."""
        entries: list[JobEntry] = []
        for state in job_states(self.history, self.regression_rule):
            latest = state.latest
            key = latest.app_key
            safe = is_app_key(key)
            report = safe and (self.layout.app_dir(key) / REPORT_FILES["html"]).is_file()
            diff = safe and (self.layout.app_dir(key) / DIFF_FILE).is_file()
            previous = state.comparison.previous
            entries.append(
                JobEntry(
                    job_key=state.job_key,
                    name=latest.name,
                    runs=tuple(
                        JobRunPoint(r.app_key, r.run_start_ms, r.duration_ms)
                        for r in state.runs[-SPARKLINE_RUNS:]
                    ),
                    n_runs=len(state.runs),
                    previous_duration_ms=previous.duration_ms if previous is not None else None,
                    median_ms=state.comparison.median_ms,
                    n_median_runs=state.comparison.n_median_runs,
                    regressed=state.comparison.regressed,
                    findings=tuple(
                        JobFindingEntry(f.title, f.severity, f.is_new) for f in state.findings
                    ),
                    report_href=self.layout.app_href(key, REPORT_FILES["html"]) if report else None,
                    diff_href=self.layout.app_href(key, DIFF_FILE) if diff else None,
                    diff_note=self.diff_errors.get(key) if state.comparison.regressed else None,
                    advice_applied=tuple(job_advice(a) for a in state.applied),
                    cost=JobCostEntry(
                        core_hours_allocated=latest.core_hours_allocated,
                        idle_core_hours=latest.idle_core_hours,
                        idle_share=latest.idle_share,
                        cost=latest.cost,
                        cost_idle=latest.cost_idle,
                        currency=latest.currency,
                    ),
                )
            )
        return entries


def job_advice(a: AdviceAppliedRecord) -> JobAdviceEntry:
    """An applied advice of the history, for the index."""
    return JobAdviceEntry(
        a.setting, a.before, a.after, a.status, a.rule, a.before_ms, a.predicted_ms, a.after_ms
    )


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


__all__ = ["BatchOptions", "BatchSummary", "check_output_dir", "parse_since", "run_batch"]
