"""Rule `failed-query`: a SQL execution failed, so all of its work was lost."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds

RULE = "failed-query"
METHOD = "the failed execution's whole wall time: its result was never produced"
FIRST_LINE_CHARS = 200


def first_line(text: str, limit: int = FIRST_LINE_CHARS) -> str:
    """Return the first non-blank line of `text`, cut to `limit` characters.

    >>> first_line("\\n  boom: bad key\\n\\tat Foo.scala")
    'boom: bad key'
    """
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def detect_failed_queries(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report every SQL execution whose status is FAILED, with Spark's error message."""
    findings = []
    jobs = {j.job_id: j for j in analysis.application.jobs}
    for ex in analysis.application.executions:
        if ex.status != "FAILED":
            continue
        message = ex.error_message or next(
            (jobs[j].error_message for j in ex.job_ids if j in jobs and jobs[j].error_message),
            None,
        )
        reason = first_line(message or "no error message in the log")
        failed_jobs = sorted(j for j in ex.job_ids if j in jobs and jobs[j].status == "FAILED")
        lost_ms = ex.duration_ms or 0
        findings.append(
            Finding(
                rule=RULE,
                severity="critical",
                title=f"Query {ex.execution_id} failed: {reason}",
                suggestion=(
                    "Fix the error the message names (see the failed tasks' reasons); if it is "
                    "an out-of-memory or lost executor, see the other findings for the stage."
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=ex.execution_id,
                evidence=(
                    ev("error", "error", reason, "text"),
                    ev(
                        "failed_jobs",
                        "failed jobs",
                        ", ".join(map(str, failed_jobs)) or "–",
                        "text",
                    ),
                    ev("duration_ms", "duration", ex.duration_ms, "ms"),
                    ev("n_failed_jobs", "", len(failed_jobs), "count"),
                ),
            )
        )
    return findings
