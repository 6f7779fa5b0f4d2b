"""The per-application step of a batch run, the same on both engines: analyze once, find issues
once, render three reports and the index facts from them.

Given the run's staging directory (the local engine's workers), `process_application` writes the
reports there piece by piece, as `spark-explain report` writes one, and the driver, which holds
the output directory's lock, moves them in place: a report of tens of thousands of executions
(hundreds of MB of JSON) is never whole in memory. Without one it returns the reports' text in
its `JobResult` for the driver to write (a Spark executor then may put them into the staging
directory with `stage_reports`, when it sees the output directory).
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from pathlib import Path

from analyzer import api
from analyzer.batch.jobkey import JobKeyRule
from analyzer.batch.jobs import (
    REPORT_FILES,
    AnyJob,
    DiffJob,
    FailureKind,
    Job,
    JobResult,
    JobSettings,
)
from analyzer.batch.outputs import OUTPUT_HINT
from analyzer.errors import (
    AnalyzerError,
    CannotWriteError,
    LogNotFoundError,
    RemoteStorageError,
)
from analyzer.insights import Finding
from analyzer.output import write_atomic
from analyzer.redact import Redactor, redact_view, scrub_secrets
from analyzer.report.batch_index import summarize


def one_line(error: BaseException) -> str:
    """Return the first line of an error; a non-`AnalyzerError` is prefixed with its type."""
    lines = str(error).strip().splitlines()
    first = lines[0] if lines else ""
    return first if isinstance(error, AnalyzerError) else f"{type(error).__name__}: {first}"


def process_job(job: AnyJob, settings: JobSettings, staging_dir: Path | None = None) -> JobResult:
    """Run one job of either kind: analyze an application (its reports written into
    `staging_dir` when given, see `process_application`), or compare a regressed run."""
    if isinstance(job, DiffJob):
        return process_diff(job, settings)
    return process_application(job, settings, staging_dir)


def render_previous_run_diff(
    baseline_log_path: str, candidate_log_path: str, settings: JobSettings
) -> str | None:
    """Return the HTML diff report of a regressed run (candidate) against the previous run of its
    job (baseline), with the batch's thresholds and redaction (docs/diff.md)."""
    baseline = api.analyze(
        baseline_log_path, settings.strictness, read_workers=0, remote=settings.remote
    )
    candidate = api.analyze(
        candidate_log_path, settings.strictness, read_workers=0, remote=settings.remote
    )
    result = api.diff(baseline, candidate, settings.report.thresholds)
    options = dataclasses.replace(settings.report, fmt="html", top=None, executions=())
    return api.render_diff(result, options)


def process_diff(job: DiffJob, settings: JobSettings) -> JobResult:
    """Render the diff report of a regressed run against the previous run; never raises.

    Failures are of kind `retry`: the diff is not recorded anywhere, the next run tries again.
    """
    started = time.monotonic()

    def failed(error: str, kind: FailureKind, trace: str | None = None) -> JobResult:
        elapsed_ms = int((time.monotonic() - started) * 1000)
        return JobResult(job.log_name, error=error, failure=kind, elapsed_ms=elapsed_ms,
                         traceback=trace)  # fmt: skip

    try:
        html = render_previous_run_diff(job.baseline_log_path, job.log_path, settings)
    except MemoryError:
        return failed(settings.memory_error(), "limit")
    except AnalyzerError as error:
        return failed(one_line(error), "retry")
    except Exception as error:
        return failed(f"internal error: {one_line(error)}", "retry", traceback.format_exc())
    reports = ((job.file_name, html),) if html is not None else ()
    return JobResult(
        job.log_name, reports=reports, elapsed_ms=int((time.monotonic() - started) * 1000)
    )


def process_application(
    job: Job, settings: JobSettings, staging_dir: Path | None = None
) -> JobResult:
    """Analyze one log and render its three reports; never raises for a bad log.

    With `staging_dir`, the reports are written into `staging_dir/<app key>/` (the result names
    that directory and holds no text); without, their text is in the result.

    A `MemoryError` (the worker's memory limit) is a failure of kind `limit`; an `AnalyzerError`
    is the log's fault (`bad-log`) unless the log could not be reached or a report could not be
    staged (`retry`); anything else is a bug, returned with its traceback (`retry`).
    """
    started = time.monotonic()

    def failed(error: str, kind: FailureKind, trace: str | None = None) -> JobResult:
        if settings.report.redact:  # the index shows the error: no path or host in it
            error = Redactor().text(error)
        return JobResult(
            job.log_name,
            error=error,
            failure=kind,
            elapsed_ms=int((time.monotonic() - started) * 1000),
            traceback=trace,
        )

    try:
        # One pause of the cyclic collector over every step of the log (`api.collector_paused`).
        with api.collector_paused():
            analysis = api.analyze(
                job.log_path, settings.strictness, read_workers=0, remote=settings.remote
            )
            format_errors: dict[str, str] = {}
            trace: str | None = None
            findings: list[Finding] | None
            api.make_what_if(analysis, settings.report)
            try:
                findings = api.find_issues(analysis, settings.report.thresholds)
            except MemoryError:
                raise
            except Exception as error:  # a bug in a rule must not cost the application its reports
                format_errors["insights"] = f"internal error: {one_line(error)}"
                trace = traceback.format_exc()
                findings = None
            summary = summarize(analysis, findings)
            # One redactor for the three reports and the index entry: their tokens agree.
            redactor = api.make_redactor(analysis) if settings.report.redact else None
            if redactor is not None:
                summary = redact_view(summary, redactor)
            app = analysis.application
            job_key = JobKeyRule(settings.job_key).key(app.name, dict(app.spark_properties))
            if redactor is not None:
                # The key groups runs across logs, so it cannot take per-log tokens; but it is
                # shown in the index and kept in the history, so a secret in the name is not.
                job_key = scrub_secrets(job_key)
            reports: list[tuple[str, str]] = []
            target = staging_dir / job.app_key if staging_dir is not None else None
            for fmt, file_name in REPORT_FILES.items():
                options = dataclasses.replace(settings.report, fmt=fmt)
                if target is None:
                    text = api.render_report(analysis, options, findings or [], redactor)
                    reports.append((file_name, text))
                else:
                    path = target / file_name
                    api.write_report(
                        analysis, path, options, findings or [], redactor, hint=OUTPUT_HINT
                    )
            staged = str(target) if target is not None else None
            del analysis
    except MemoryError:
        return failed(settings.memory_error(), "limit")
    except CannotWriteError as error:  # the output directory's disk, not the log: next run
        result = failed(one_line(error), "retry")
        return dataclasses.replace(result, cannot_write=(error.message, error.path, error.hint))
    except AnalyzerError as error:
        # A log that cannot be reached from here (moved, unmounted, a remote outage) may be fine
        # next time; anything else is a property of the log's bytes.
        reachable = not isinstance(error, LogNotFoundError | RemoteStorageError)
        return failed(one_line(error), "bad-log" if reachable else "retry")
    except Exception as error:
        return failed(f"internal error: {one_line(error)}", "retry", traceback.format_exc())
    return JobResult(
        job.log_name,
        summary=summary,
        job_key=job_key,
        format_errors=tuple(sorted(format_errors.items())),
        reports=tuple(reports),
        staged_dir=staged,
        elapsed_ms=int((time.monotonic() - started) * 1000),
        traceback=trace,
    )


def stage_reports(result: JobResult, staging_dir: Path, job: AnyJob) -> JobResult:
    """Write a result's reports into `staging_dir/<app key>/` and return it without their text."""
    if not result.reports:
        return result
    target = staging_dir / job.app_key
    for file_name, text in result.reports:
        write_atomic(target / file_name, text)
    return dataclasses.replace(result, reports=(), staged_dir=str(target))
