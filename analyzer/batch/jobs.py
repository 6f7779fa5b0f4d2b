"""What travels between the batch driver and its workers: jobs, their settings and their results.

All are frozen dataclasses of plain values, picklable for local worker processes and for Spark
executors alike.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Literal

from analyzer.batch.manifest import Fingerprint
from analyzer.errors import Strictness
from analyzer.eventlog.remote import RemoteOptions
from analyzer.report.batch_index import AppSummary
from analyzer.report.options import ReportFormat, ReportOptions

REPORT_FILES: dict[ReportFormat, str] = {
    "html": "report.html",
    "text": "report.txt",
    "json": "report.json",
}
"""Report format → file name inside an application's report directory."""

FailureKind = Literal["bad-log", "limit", "retry"]
"""Why a job failed: the log's own bytes (recorded, not read again until it changes), a memory or
time limit (recorded with the limits: retried when they change), or something that may pass next
time (a log that could not be reached, a dead worker, a bug: not recorded)."""


@dataclass(frozen=True)
class Job:
    """One log to analyze, and where its reports go."""

    log_name: str
    """The log's name in the log directory: the manifest key."""
    log_path: str
    """Absolute path or URL: workers may run in another directory or on another machine."""
    app_key: str
    """The application's report directory under `OUTDIR/apps/` (see `layout.app_key`)."""
    fingerprint: Fingerprint
    """The version of the log this job analyzes, recorded in the manifest with the outcome."""


@dataclass(frozen=True)
class DiffJob:
    """A regressed run to compare with the previous run of its job: a diff report to render."""

    log_name: str
    """What names the job in its result (`diff <app key>`): never a log of the directory."""
    log_path: str
    """The regressed run's log (the diff's candidate)."""
    app_key: str
    """The regressed run's report directory under `OUTDIR/apps/`, where the diff report goes."""
    baseline_log_path: str
    """The previous run's log (the diff's baseline)."""
    baseline_app_key: str
    """The previous run's report directory (for the report's links)."""
    file_name: str
    """The diff report's file name in the regressed run's directory."""


AnyJob = Job | DiffJob
"""What an engine runs: an application to analyze or a regressed run to compare."""


@dataclass(frozen=True)
class JobSettings:
    """How every job of a run is analyzed and rendered, and the limits of one job."""

    strictness: Strictness = Strictness.STRICT
    report: ReportOptions = field(default_factory=ReportOptions)
    """Options of the three reports; `fmt` is set per report."""
    max_memory_mb: int = 0
    """Data size a worker may reach (RLIMIT_DATA) in MiB; 0: no limit."""
    timeout_s: int = 0
    """Wall time one log may take, in seconds; 0: no limit."""
    job_key: str | None = None
    """`--job-key`: how the application's job key is made (`jobkey.JobKeyRule`). It does not
    change the reports, so it is not part of `digest`."""
    remote: RemoteOptions = field(default_factory=RemoteOptions)
    """How remote logs are reached. The same bytes give the same reports however they are
    reached, so it is not part of `digest` either."""

    def digest(self) -> str:
        """Return a short hash of what changes the reports (strictness and report options)."""
        report = dataclasses.asdict(dataclasses.replace(self.report, fmt="text"))
        text = json.dumps(
            {"strictness": self.strictness.value, "report": report}, sort_keys=True, default=str
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def limits_str(self) -> str:
        """Return the limits in words, recorded with a failure caused by them."""
        memory = f"{self.max_memory_mb} MiB" if self.max_memory_mb else "no memory limit"
        time_limit = f"{self.timeout_s} s" if self.timeout_s else "no time limit"
        return f"{memory}, {time_limit}"

    def memory_error(self) -> str:
        """Return the one-line reason of a job stopped by the memory limit."""
        if self.max_memory_mb:
            return (
                f"exceeded the memory limit of {self.max_memory_mb} MiB; raise --max-memory-mb "
                "(0: no limit) to analyze it"
            )
        return "ran out of memory"

    def time_error(self) -> str:
        """Return the one-line reason of a job stopped by the time limit."""
        return f"took longer than {self.timeout_s} s; raise --timeout-s (0: no limit) to analyze it"


@dataclass(frozen=True)
class JobResult:
    """The outcome of one job, as a worker returns it to the driver (which writes everything)."""

    log_name: str
    error: str | None = None
    """One-line reason the log could not be analyzed; None when it was."""
    failure: FailureKind | None = None
    """Why it failed (None when analyzed)."""
    summary: AppSummary | None = None
    """The facts the index shows."""
    job_key: str | None = None
    """The recurring job the application is a run of (`jobkey.JobKeyRule.key`)."""
    format_errors: tuple[tuple[str, str], ...] = ()
    """(format or `insights`, one-line reason) of parts that could not be produced."""
    reports: tuple[tuple[str, str], ...] = ()
    """(file name, text) of each report rendered, for the driver to write."""
    staged_dir: str | None = None
    """Instead of `reports`: a directory holding the report files, for the driver to move in."""
    cannot_write: tuple[str, str | None, str | None] | None = None
    """A report could not be staged: the (message, path, hint) of its `CannotWriteError`. The
    driver stops the run with it, as when it cannot write a report itself."""
    elapsed_ms: int = 0
    traceback: str | None = None
    """The traceback of an internal error (a bug), for the driver to print."""

    @property
    def ok(self) -> bool:
        """True when the log was analyzed and its JSON report rendered."""
        return self.error is None
