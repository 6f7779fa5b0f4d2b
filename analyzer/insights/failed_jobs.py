"""Rule `failed-job`: a job outside any SQL execution failed (an RDD action, a file listing)."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Job
from analyzer.model.failure_cause import root_cause
from analyzer.units import first_line, fmt_duration_ms

RULE = "failed-job"
METHOD = "the failed job's wall time: its result was never produced"


def _succeeded_later(analysis: Analysis, job: Job) -> tuple[Job, int] | None:
    """The first job from the same call site that started after `job` ended and succeeded,
    with how long after: a failure its driver program retried, or a command fixed and run
    again (a notebook's). None when there is none."""
    end = job.completion_ms
    if end is None or not job.name:
        return None
    for other in analysis.application.jobs:
        if (
            other.name == job.name
            and other.status == "SUCCEEDED"
            and other.submission_ms is not None
            and other.submission_ms >= end
        ):
            return other, other.submission_ms - end
    return None


def detect_failed_jobs(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report every failed job that belongs to no SQL execution, with the error that failed it.

    Jobs cancelled because the application stopped are left out: they are what another
    failure (or the end) took down with it.
    """
    findings = []
    for job in analysis.application.jobs:
        if job.execution_id is not None or job.status != "FAILED" or job.cancelled:
            continue
        cause = root_cause(job.error_message) or "no error message in the log"
        duration = (
            job.completion_ms - job.submission_ms
            if job.completion_ms is not None and job.submission_ms is not None
            else 0
        )
        again = _succeeded_later(analysis, job)
        findings.append(
            Finding(
                rule=RULE,
                severity="critical",
                title=f"Job {job.job_id} failed: {cause}",
                suggestion=(
                    "Fix the error the root cause names; if it is an out-of-memory error or a "
                    "lost executor, give tasks more memory or smaller partitions."
                ),
                estimated_lost_ms=max(0, duration),
                estimate_method=METHOD,
                stage_id=max(job.stage_ids) if job.stage_ids else None,
                evidence=(
                    ev("root_cause", "root cause", cause, "text"),
                    ev("job", "job", first_line(job.description or job.name or ""), "text"),
                    ev("duration_ms", "duration", max(0, duration), "ms"),
                    *(
                        (
                            ev(
                                "succeeded_later_job",
                                "the same call site ran again and succeeded",
                                f"job {again[0].job_id}, "
                                f"{fmt_duration_ms(again[1])} after this one ended",
                                "text",
                            ),
                        )
                        if again is not None
                        else ()
                    ),
                ),
            )
        )
    return findings
