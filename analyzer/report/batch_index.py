"""View models of the batch index page: one row per recurring job (its history, a sparkline, a
regression flag), one row per application with links to its reports, failures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.insights import Finding
from analyzer.report.findings import worst_of
from analyzer.report.header import STATUS_WORDS, app_status
from analyzer.report.verdict import failures
from analyzer.units import (
    fmt_amount,
    fmt_count,
    fmt_duration_ms,
    fmt_factor,
    fmt_money,
    fmt_pct,
    fmt_timestamp_ms,
    plural,
    shown_path,
)

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
    outcome: str | None = None
    """How the application ended, as its report's verdict says: `failed`, else `status`; None
    in a manifest written before it was kept."""


def summarize(analysis: Analysis, findings: Sequence[Finding] | None) -> AppSummary:
    """Return the index facts of one analysis; `findings` None when they could not be computed."""
    app = analysis.application
    worst = worst_of(findings) if findings else None
    status = app_status(analysis)
    failed = failures(analysis)
    return AppSummary(
        app_id=app.app_id,
        attempt_id=app.attempt_id,
        name=app.name,
        start_ms=app.start_ms,
        end_ms=app.end_ms,
        duration_ms=app.duration_ms,
        status=status,
        n_executions=len(app.executions),
        n_failed_executions=len(failed.executions),
        n_failed_tasks=sum(s.n_failed_attempts for s in app.stages),
        worst_finding=worst.title.splitlines()[0] if worst is not None else None,
        worst_severity=worst.severity if worst is not None else None,
        outcome="failed" if failed.any_failed else status,
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
class JobRunPoint:
    """One run of a job, for the index (input of the view)."""

    app_key: str
    start_ms: int
    duration_ms: int


@dataclass(frozen=True)
class JobFindingEntry:
    """One finding of a job's latest run (input of the view)."""

    title: str
    severity: str
    is_new: bool
    """No earlier run of the job had this finding."""


@dataclass(frozen=True)
class JobEntry:
    """A recurring job as the batch runner hands it to the index (input of the view)."""

    job_key: str
    name: str | None
    """The latest run's application name."""
    runs: tuple[JobRunPoint, ...]
    """The latest runs, oldest first (at most the sparkline's length); the last is the latest."""
    n_runs: int
    """Runs recorded in all."""
    previous_duration_ms: int | None
    median_ms: int | None
    """Median duration of the runs before the latest (up to the window)."""
    n_median_runs: int
    regressed: bool
    findings: tuple[JobFindingEntry, ...]
    report_href: str | None
    """The latest run's HTML report, relative to the index."""
    diff_href: str | None
    """Its diff report against the previous run, if written."""
    diff_note: str | None = None
    """Why a regressed run has no diff report."""
    cost: JobCostEntry | None = None
    """What the latest run held and cost; None when not recorded."""
    advice_applied: tuple[JobAdviceEntry, ...] = ()
    """Advice of the run before that the latest run applied."""


@dataclass(frozen=True)
class JobAdviceEntry:
    """An earlier run's advice the latest run applied (input of the view)."""

    setting: str
    before: str
    after: str
    status: str
    rule: str
    before_ms: int | None
    """The advised finding's query in the earlier run."""
    predicted_ms: int | None
    after_ms: int | None


@dataclass(frozen=True)
class JobCostEntry:
    """What a job's latest run held, used and cost (input of the view; docs/cost.md)."""

    core_hours_allocated: float | None
    idle_core_hours: float | None
    idle_share: float | None
    cost: float | None
    """In `currency`; None when the run was not priced."""
    cost_idle: float | None
    currency: str | None


@dataclass(frozen=True)
class JobCostView:
    """A job in the index's lists of the most expensive and the most wasteful."""

    job_key: str = field(metadata={"help": "The job key."})
    amount_str: str = field(
        metadata={"help": "What ranks it: `$1.23` when priced, else `12.3 core-hours`."}
    )
    detail_str: str = field(
        metadata={"help": "`12.3 core-hours allocated, 41.0 % idle` (the latest run)."}
    )
    report_href: str = field(metadata={"help": "The latest run's HTML report, or empty."})


@dataclass(frozen=True)
class SparklineView:
    """An inline SVG line of a job's last run durations (drawn from zero up, oldest left)."""

    width: int = field(metadata={"help": "SVG width, px."})
    height: int = field(metadata={"help": "SVG height, px."})
    points_str: str = field(metadata={"help": "The polyline's points: `x,y x,y …`."})
    last_x_str: str = field(metadata={"help": "x of the latest run's dot."})
    last_y_str: str = field(metadata={"help": "y of the latest run's dot."})
    title_str: str = field(metadata={"help": "What the line shows, in words (its tooltip)."})


@dataclass(frozen=True)
class JobFindingView:
    """A finding of a job's latest run, marked new when no earlier run had it."""

    title: str = field(metadata={"help": "The finding's one-line title."})
    severity: str = field(metadata={"help": "`info`, `warning` or `critical` (CSS class)."})
    is_new: bool = field(metadata={"help": "First time this job shows this finding."})


@dataclass(frozen=True)
class JobRowView:
    """One recurring job in the index's jobs table."""

    job_key: str = field(metadata={"help": "The job key its runs share."})
    name: str = field(
        metadata={"help": "The latest run's application name, empty when it is the job key."}
    )
    n_runs_str: str = field(metadata={"help": "Runs recorded, formatted."})
    last_start_str: str = field(metadata={"help": "When the latest run started, UTC."})
    last_duration_str: str = field(metadata={"help": "The latest run's duration."})
    vs_previous_str: str = field(
        metadata={"help": "Change against the previous run: `+31.0 s (4.4×)`, or `first run`."}
    )
    vs_median_str: str = field(
        metadata={"help": "The latest duration as a factor of the median of the runs before it."}
    )
    vs_median_title: str = field(metadata={"help": "That median and how many runs it is over."})
    regressed: bool = field(metadata={"help": "The latest run regressed (index thresholds)."})
    sparkline: SparklineView = field(metadata={"help": "The last runs' durations."})
    findings: tuple[JobFindingView, ...] = field(
        metadata={"help": "The latest run's findings, new ones first, at most `MAX_JOB_FINDINGS`."}
    )
    more_findings_str: str = field(
        metadata={"help": "`and 4 more` when the run had more findings than shown, or empty."}
    )
    n_new_findings: int = field(metadata={"help": "Findings of the latest run that are new."})
    report_href: str = field(metadata={"help": "The latest run's HTML report, or empty."})
    diff_href: str = field(metadata={"help": "Its diff report against the previous run, or empty."})
    diff_note: str = field(metadata={"help": "Why a regressed run has no diff report, or empty."})
    advice_lines: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "Advice of the run before that the latest run applied: `spark.sql.shuffle."
            "partitions 400 → 2 as advised (too-many-partitions): its query went from 31.0 s "
            "to 6.1 s; predicted 5.5 s`."
        },
    )


def advice_line(a: JobAdviceEntry) -> str:
    """Word an applied advice of the job history.

    >>> advice_line(JobAdviceEntry("k", "400", "2", "applied", "r", 31_000, 5_500, 6_100))
    'k 400 → 2 as advised (r): its query went from 31.0 s to 6.1 s; predicted 5.5 s'
    """
    how = "as advised" if a.status == "applied" else "toward the advice"
    line = f"{a.setting} {a.before} → {a.after} {how} ({a.rule})"
    if a.before_ms is not None and a.after_ms is not None:
        line += (
            f": its query went from {fmt_duration_ms(a.before_ms)} to {fmt_duration_ms(a.after_ms)}"
        )
    if a.predicted_ms is not None:
        line += f"; predicted {fmt_duration_ms(a.predicted_ms)}"
    return line


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
    status: str = field(
        metadata={"help": "`completed`, `failed`, `in-progress` or `incomplete` (CSS)."}
    )
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
    jobs: tuple[JobRowView, ...] = field(
        metadata={"help": "Recurring jobs: regressed first, then by latest run, newest first."}
    )
    n_jobs_str: str = field(metadata={"help": "Jobs with recorded runs: `3 jobs`."})
    n_regressed_str: str = field(metadata={"help": "Jobs whose latest run regressed, formatted."})
    regression_rule_str: str = field(metadata={"help": "When a run counts as regressed, in words."})
    history_notes: tuple[str, ...] = field(
        metadata={"help": "Problems with the history (unreadable files), one line each."}
    )
    most_expensive: tuple[JobCostView, ...] = field(
        default=(),
        metadata={
            "help": "Jobs whose latest run cost most (money when priced, else core-hours), at "
            "most `MAX_COST_JOBS`."
        },
    )
    most_wasteful: tuple[JobCostView, ...] = field(
        default=(),
        metadata={
            "help": "Jobs whose latest run held most idle cores (money when priced, else "
            "core-hours), at most `MAX_COST_JOBS`."
        },
    )
    left_out_str: str = field(
        default="",
        metadata={
            "help": "Incomplete logs this run left out and how to include them; empty if none."
        },
    )


MAX_COST_JOBS = 5
"""Jobs listed as the most expensive and as the most wasteful."""


def _cost_views(jobs: Sequence[JobEntry], wasted: bool) -> tuple[JobCostView, ...]:
    """The jobs that cost (or wasted) most in their latest run, costliest first: by money when
    every ranked run was priced in one currency, else by core-hours."""
    costed = [j for j in jobs if j.cost is not None and j.cost.core_hours_allocated is not None]
    currencies = {j.cost.currency for j in costed if j.cost is not None}
    by_money = bool(costed) and len(currencies) == 1 and None not in currencies

    def amount(j: JobEntry) -> float:
        c = j.cost
        assert c is not None
        value = (
            (c.cost_idle if wasted else c.cost)
            if by_money
            else (c.idle_core_hours if wasted else c.core_hours_allocated)
        )
        return value or 0.0

    ranked = sorted(costed, key=lambda j: (-amount(j), j.job_key))[:MAX_COST_JOBS]
    views = []
    for j in ranked:
        c = j.cost
        assert c is not None
        value = amount(j)
        if value <= 0:
            continue
        unit = fmt_money(value, c.currency or "") if by_money else f"{fmt_amount(value)} core-hours"
        views.append(
            JobCostView(
                job_key=j.job_key,
                amount_str=unit + (" idle" if wasted else ""),
                detail_str=(
                    f"{fmt_amount(c.core_hours_allocated)} core-hours allocated, "
                    f"{fmt_pct(c.idle_share)} idle"
                ),
                report_href=j.report_href or "",
            )
        )
    return tuple(views)


def _row(entry: IndexEntry, summary: AppSummary) -> IndexRowView:
    shown = summary.outcome or summary.status  # as the report's verdict words it
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
        status=shown.replace(" ", "-"),
        status_str=STATUS_WORDS.get(shown, shown),  # type: ignore[call-overload]
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


MAX_JOB_FINDINGS = 5
"""Findings of a job's latest run shown in the jobs table (new ones first, then by severity)."""
SPARK_WIDTH = 120
SPARK_HEIGHT = 24
SPARK_PAD = 3


def sparkline(durations_ms: Sequence[int], regressed: bool = False) -> SparklineView:
    """Lay out durations (oldest first) as polyline points, scaled from 0 to the largest.

    >>> sparkline([10, 20]).points_str
    '3.0,12.0 117.0,3.0'
    >>> sparkline([5]).last_x_str
    '60.0'
    """
    top = max((d for d in durations_ms), default=0)
    span_x = SPARK_WIDTH - 2 * SPARK_PAD
    span_y = SPARK_HEIGHT - 2 * SPARK_PAD
    n = len(durations_ms)
    points: list[tuple[float, float]] = []
    for i, d in enumerate(durations_ms):
        x = SPARK_WIDTH / 2 if n == 1 else SPARK_PAD + span_x * i / (n - 1)
        y = SPARK_HEIGHT - SPARK_PAD - (span_y * max(d, 0) / top if top > 0 else 0)
        points.append((x, y))
    last_x, last_y = points[-1] if points else (SPARK_WIDTH / 2, SPARK_HEIGHT - SPARK_PAD)
    title = f"last {plural(n, 'run')}"
    if durations_ms:
        title += (
            f": {fmt_duration_ms(min(durations_ms))} to {fmt_duration_ms(top)}, "
            f"latest {fmt_duration_ms(durations_ms[-1])}" + (" (regressed)" if regressed else "")
        )
    return SparklineView(
        width=SPARK_WIDTH,
        height=SPARK_HEIGHT,
        points_str=" ".join(f"{x:.1f},{y:.1f}" for x, y in points),
        last_x_str=f"{last_x:.1f}",
        last_y_str=f"{last_y:.1f}",
        title_str=title,
    )


def _signed_duration(delta_ms: int) -> str:
    sign = "+" if delta_ms >= 0 else "−"
    return f"{sign}{fmt_duration_ms(abs(delta_ms))}"


def _job_row(job: JobEntry) -> JobRowView:
    latest = job.runs[-1]
    if job.previous_duration_ms is None:
        vs_previous = "first run"
    else:
        delta = latest.duration_ms - job.previous_duration_ms
        factor = latest.duration_ms / job.previous_duration_ms if job.previous_duration_ms else None
        vs_previous = _signed_duration(delta)
        if factor is not None:
            vs_previous += f" ({fmt_factor(factor)})"
    if job.median_ms is None:
        vs_median, vs_median_title = "–", "no earlier run"
    else:
        factor = latest.duration_ms / job.median_ms if job.median_ms else None
        vs_median = fmt_factor(factor) if factor is not None else "–"
        vs_median_title = (
            f"median {fmt_duration_ms(job.median_ms)} of the last "
            f"{plural(job.n_median_runs, 'earlier run')}"
        )
    findings = sorted(
        job.findings, key=lambda f: (not f.is_new, -_SEVERITY_RANK.get(f.severity, -1))
    )
    return JobRowView(
        job_key=job.job_key,
        name="" if job.name == job.job_key else (job.name or ""),
        n_runs_str=fmt_count(job.n_runs),
        last_start_str=fmt_timestamp_ms(latest.start_ms),
        last_duration_str=fmt_duration_ms(latest.duration_ms),
        vs_previous_str=vs_previous,
        vs_median_str=vs_median,
        vs_median_title=vs_median_title,
        regressed=job.regressed,
        sparkline=sparkline([r.duration_ms for r in job.runs], job.regressed),
        findings=tuple(
            JobFindingView(f.title, f.severity, f.is_new) for f in findings[:MAX_JOB_FINDINGS]
        ),
        more_findings_str=(
            f"and {fmt_count(len(findings) - MAX_JOB_FINDINGS)} more"
            if len(findings) > MAX_JOB_FINDINGS
            else ""
        ),
        n_new_findings=sum(1 for f in findings if f.is_new),
        report_href=job.report_href or "",
        diff_href=job.diff_href or "",
        diff_note=job.diff_note or "",
        advice_lines=tuple(advice_line(a) for a in job.advice_applied),
    )


def build_index_view(
    entries: Sequence[IndexEntry],
    generated_at_ms: int,
    jobs: Sequence[JobEntry] = (),
    regression_rule: str = "",
    history_notes: Sequence[str] = (),
    n_incomplete: int = 0,
) -> BatchIndexView:
    """Build the index page from every log's outcome and every job's history; `n_incomplete`
    logs were left out as incomplete."""
    rows = [_row(e, e.summary) for e in entries if e.summary is not None and e.error is None]
    rows.sort(key=lambda r: (-r.start_sort, r.app_id_str))
    failures = sorted(
        (FailedLogView(shown_path(e.log_name), e.error) for e in entries if e.error is not None),
        key=lambda f: f.log_name,
    )
    ordered = sorted(
        (j for j in jobs if j.runs),
        key=lambda j: (not j.regressed, -j.runs[-1].start_ms, j.job_key),
    )
    job_rows = [_job_row(j) for j in ordered]
    return BatchIndexView(
        title="Spark applications",
        generated_at_str=fmt_timestamp_ms(generated_at_ms),
        n_applications_str=fmt_count(len(rows)),
        n_failed_str=fmt_count(len(failures)),
        rows=tuple(rows),
        failures=tuple(failures),
        jobs=tuple(job_rows),
        n_jobs_str=plural(len(job_rows), "job"),
        n_regressed_str=fmt_count(sum(1 for j in job_rows if j.regressed)),
        regression_rule_str=regression_rule,
        history_notes=tuple(history_notes),
        most_expensive=_cost_views(ordered, wasted=False),
        most_wasteful=_cost_views(ordered, wasted=True),
        left_out_str=(
            f"{plural(n_incomplete, 'incomplete log')} left out (no end event: still running "
            "or cut off; run with --include-incomplete to analyze them)"
            if n_incomplete
            else ""
        ),
    )
