"""View models of the batch index page: one row per application, links to its reports, failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.insights import Finding
from analyzer.report.findings import worst_of
from analyzer.report.header import STATUS_WORDS, app_status
from analyzer.units import fmt_count, fmt_duration_ms, fmt_timestamp_ms

_SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


@dataclass(frozen=True)
class AppSummary:
    """What the index keeps about one analyzed application (raw values, base units)."""

    app_id: str | None
    attempt_id: str | None
    name: str
    start_ms: int | None
    end_ms: int | None
    duration_ms: int | None
    status: str
    """`completed`, `in-progress` or `incomplete` (ended without an ApplicationEnd event)."""
    n_executions: int
    n_failed_executions: int
    n_failed_tasks: int
    """Failed task attempts over all stage attempts."""
    worst_finding: str | None
    """Title of the most severe finding (ties: the costliest), None without findings."""
    worst_severity: str | None
    """`info`, `warning` or `critical`."""


def summarize(analysis: Analysis, findings: Sequence[Finding] | None) -> AppSummary:
    """Return the index facts of one analysis; `findings` None when they could not be computed."""
    app = analysis.application
    worst = worst_of(findings) if findings else None
    return AppSummary(
        app_id=app.app_id,
        attempt_id=app.attempt_id,
        name=app.name,
        start_ms=app.start_ms,
        end_ms=app.end_ms,
        duration_ms=app.duration_ms,
        status=app_status(analysis),
        n_executions=len(app.executions),
        n_failed_executions=sum(1 for e in app.executions if e.status == "FAILED"),
        n_failed_tasks=sum(s.n_failed_attempts for s in app.stages),
        worst_finding=worst.title.splitlines()[0] if worst is not None else None,
        worst_severity=worst.severity if worst is not None else None,
    )


@dataclass(frozen=True)
class IndexEntry:
    """One log's outcome as the batch runner hands it to the index (input of the view)."""

    log_name: str
    report_dir: str | None
    """Directory of the reports relative to the index page (`apps/<key>`), None if it failed."""
    summary: AppSummary | None
    error: str | None
    report_files: tuple[tuple[str, str], ...] = ()
    """(format label, file name) of each report written."""
    format_errors: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ReportLinkView:
    """A link from the index to one report of an application."""

    label: str = field(metadata={"help": "Format name shown as the link text: html, text, json."})
    href: str = field(metadata={"help": "Relative URL of the report file."})


@dataclass(frozen=True)
class IndexRowView:
    """One analyzed application in the index table."""

    name: str = field(metadata={"help": "Application name."})
    app_id_str: str = field(metadata={"help": "Application id, with `/attempt` if any."})
    start_str: str = field(metadata={"help": "Start time, UTC."})
    start_sort: int = field(metadata={"help": "Start time in epoch ms for sorting (-1 unknown)."})
    duration_str: str = field(metadata={"help": "Wall-clock duration."})
    duration_sort: int = field(metadata={"help": "Duration in ms for sorting (-1 unknown)."})
    status: str = field(metadata={"help": "`completed`, `in-progress` or `incomplete` (CSS)."})
    status_str: str = field(metadata={"help": "The status in words: `in progress`, …"})
    n_executions: int = field(metadata={"help": "SQL executions."})
    n_executions_str: str = field(metadata={"help": "SQL executions, formatted."})
    n_failed_tasks: int = field(metadata={"help": "Failed task attempts."})
    n_failed_tasks_str: str = field(metadata={"help": "Failed task attempts, formatted."})
    worst_finding_str: str = field(metadata={"help": "Title of the worst finding, or empty."})
    worst_severity: str = field(metadata={"help": "Its severity (CSS class), or `none`."})
    severity_sort: int = field(metadata={"help": "Severity rank for sorting: -1 none .. 2."})
    links: tuple[ReportLinkView, ...] = field(metadata={"help": "The application's reports."})
    format_errors_str: str = field(
        metadata={"help": "Reports that could not be written, or empty."}
    )


@dataclass(frozen=True)
class FailedLogView:
    """A log that could not be analyzed, with its one-line error."""

    log_name: str = field(metadata={"help": "The log's name in the log directory."})
    error: str = field(metadata={"help": "One-line reason."})


@dataclass(frozen=True)
class BatchIndexView:
    """The whole index page."""

    title: str = field(metadata={"help": "Page title."})
    generated_at_str: str = field(metadata={"help": "When the index was written, UTC."})
    n_applications_str: str = field(metadata={"help": "Applications analyzed, formatted."})
    n_failed_str: str = field(metadata={"help": "Logs that could not be analyzed, formatted."})
    rows: tuple[IndexRowView, ...] = field(
        metadata={"help": "Analyzed applications, newest first."}
    )
    failures: tuple[FailedLogView, ...] = field(metadata={"help": "Logs that failed, by name."})


def _row(entry: IndexEntry, summary: AppSummary) -> IndexRowView:
    app_id = summary.app_id or "–"
    if summary.attempt_id:
        app_id = f"{app_id}/{summary.attempt_id}"
    prefix = f"{entry.report_dir}/" if entry.report_dir else ""
    return IndexRowView(
        name=summary.name,
        app_id_str=app_id,
        start_str=fmt_timestamp_ms(summary.start_ms),
        start_sort=-1 if summary.start_ms is None else summary.start_ms,
        duration_str=fmt_duration_ms(summary.duration_ms),
        duration_sort=-1 if summary.duration_ms is None else summary.duration_ms,
        status=summary.status.replace(" ", "-"),
        status_str=STATUS_WORDS.get(summary.status, summary.status),  # type: ignore[call-overload]
        n_executions=summary.n_executions,
        n_executions_str=fmt_count(summary.n_executions),
        n_failed_tasks=summary.n_failed_tasks,
        n_failed_tasks_str=fmt_count(summary.n_failed_tasks),
        worst_finding_str=summary.worst_finding or "",
        worst_severity=summary.worst_severity or "none",
        severity_sort=_SEVERITY_RANK.get(summary.worst_severity or "", -1),
        links=tuple(ReportLinkView(label, prefix + name) for label, name in entry.report_files),
        format_errors_str="; ".join(f"{fmt}: {err}" for fmt, err in entry.format_errors),
    )


def build_index_view(entries: Sequence[IndexEntry], generated_at_ms: int) -> BatchIndexView:
    """Build the index page from every log's outcome."""
    rows = [_row(e, e.summary) for e in entries if e.summary is not None and e.error is None]
    rows.sort(key=lambda r: (-r.start_sort, r.app_id_str))
    failures = sorted(
        (FailedLogView(e.log_name, e.error) for e in entries if e.error is not None),
        key=lambda f: f.log_name,
    )
    return BatchIndexView(
        title="Spark applications",
        generated_at_str=fmt_timestamp_ms(generated_at_ms),
        n_applications_str=fmt_count(len(rows)),
        n_failed_str=fmt_count(len(failures)),
        rows=tuple(rows),
        failures=tuple(failures),
    )
