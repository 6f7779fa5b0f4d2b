"""The application header every format shows: who ran what, how it ended, reading notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Literal

from analyzer.aggregate.analysis import Analysis
from analyzer.units import (
    MISSING,
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_timestamp_ms,
    plural,
    shown_path,
)

AppStatus = Literal["completed", "in-progress", "incomplete"]


def _help(text: str) -> dict[str, str]:
    return {"help": text}


STATUS_WORDS: dict[AppStatus, str] = {
    "completed": "completed",
    "in-progress": "in progress",
    "incomplete": "incomplete (no end event)",
}
"""How each application status is worded."""


def app_status(analysis: Analysis) -> AppStatus:
    """Return whether the log is complete, still being written, or ended without an end event."""
    if analysis.application.completed:
        return "completed"
    return "in-progress" if analysis.source.in_progress else "incomplete"


def log_notes(analysis: Analysis) -> tuple[str, ...]:
    """Return what a reader must know about how the log was read (cut tail, skipped lines)."""
    rs = analysis.read_stats
    notes = []
    if rs.truncated_tail:
        notes.append("the log ends in a cut line or frame; what came before it was read")
    if rs.truncated_parts:
        cut = rs.truncated_parts
        names = ", ".join(cut[:3]) + (" …" if len(cut) > 3 else "")
        notes.append(
            f"{plural(len(cut), 'part')} of the log cut before the end ({names}): events after "
            "each cut are missing (--lenient)"
        )
    if rs.n_malformed_skipped:
        n_bad = rs.n_malformed_skipped
        notes.append(
            f"{fmt_count(n_bad)} malformed line{'' if n_bad == 1 else 's'} skipped (--lenient)"
        )
    notes.extend(part.codec_note for part in analysis.source.parts if part.codec_note)
    app = analysis.application
    if app.start_ms is None and not app.name and app.app_id is None:
        notes.append(
            "the log has no application start event: the application's name, id, user and "
            "start are unknown"
        )
    if not app.spark_properties:
        notes.append(
            "the log has no Spark settings (no environment event): a setting shown as "
            "(default) is Spark's default, assumed"
        )
    short = [(st.stage_id, st.attempt_id) for st in app.stages if st.lost_task_ends]
    if short:
        names = ", ".join(f"{sid}.{att}" for sid, att in short[:3])
        more = " …" if len(short) > 3 else ""
        notes.append(
            f"{plural(len(short), 'completed stage attempt')} with most task ends missing from "
            f"the log ({names}{more}): their figures cover only the tasks that arrived"
        )
    inverted = app.inverted_intervals
    if inverted:
        counted = ", ".join(plural(n, kind) for kind, n in inverted)
        notes.append(f"end before start in the log ({counted}): counted as lasting 0 ms")
    outside = analysis.outside_run
    if outside:
        counted = ", ".join(plural(n, kind) for kind, n, _ in outside)
        farthest_ms = max(ms for _, _, ms in outside)
        notes.append(
            f"timed outside the application's run in the log ({counted}, up to "
            f"{fmt_duration_ms(farthest_ms)} from it): the log may join two runs, or its clocks "
            "disagree; those times, and their shares of the application, are unreliable"
        )
    return tuple(notes)


@dataclass(frozen=True)
class ApplicationHeaderView:
    """Who ran the application, when, on what, and how it ended."""

    name: str = field(metadata=_help("Application name, or `–`."))
    app_id: str = field(metadata=_help("Application id (and attempt), or `–`."))
    spark_version: str = field(metadata=_help("Spark version that wrote the log, or `–`."))
    user: str = field(metadata=_help("User that ran the application, or `–`."))
    log_name: str = field(metadata=_help("File or directory name of the log (no directories)."))
    log_str: str = field(metadata=_help("The log's path, codec and size."))
    start_str: str = field(metadata=_help("Application start (UTC)."))
    duration_str: str = field(metadata=_help("Start to end, formatted; `–` without an end."))
    executors_str: str = field(
        metadata=_help(
            "`12 executors`, or `driver only (local mode)` when tasks ran in the driver."
        )
    )
    cores_str: str = field(
        metadata=_help("Cores of those executors (of the driver in local mode): `48 cores`.")
    )
    status: AppStatus = field(
        metadata=_help("`completed`, `in-progress` or `incomplete` (also a CSS class).")
    )
    status_str: str = field(
        metadata=_help("`completed`, `in progress` or `incomplete (no end event)`.")
    )
    n_tasks_str: str = field(metadata=_help("Task attempts that ended, formatted."))
    n_failed_tasks: int = field(metadata=_help("Task attempts that failed (not killed)."))
    n_killed_tasks: int = field(metadata=_help("Task attempts that were killed."))
    n_failed_stages: int = field(
        metadata=_help("Stage attempts that failed (not cancelled: see `n_cancelled_stages`).")
    )
    n_cancelled_stages: int = field(
        metadata=_help(
            "Stage attempts cancelled (the application shutting down, a job cancelled or "
            "killed): Spark marks them failed, but they are a consequence, not a failure."
        ),
    )
    has_failures: bool = field(metadata=_help("True when any task or stage attempt failed."))
    n_executions: int = field(metadata=_help("SQL executions in the log."))
    notes: tuple[str, ...] = field(
        metadata=_help(
            "Reading notes: truncated tail, skipped malformed lines, parts whose content is in "
            "another codec than their name says, intervals that end before they start, no "
            "application start or no settings in the log."
        )
    )
    generated_str: str = field(
        metadata=_help("When the report was made (UTC), or empty when no clock was given.")
    )
    redaction_str: str = field(
        default="",
        metadata=_help(
            "Says that values from the log were replaced by tokens (`--redact`), else empty."
        ),
    )


def build_header_view(analysis: Analysis, now_ms: int | None) -> ApplicationHeaderView:
    """Describe the application of `analysis`; `now_ms` is printed as the generation time."""
    app = analysis.application
    workers = [e for e in app.executors if e.executor_id != "driver"]
    n_cores = sum(e.n_cores for e in (workers or app.executors))
    app_id = app.app_id or MISSING
    if app.attempt_id:
        app_id += f" (attempt {app.attempt_id})"
    status = app_status(analysis)
    counts = analysis.task_counts
    failed_stages = [s for s in app.stages if s.status == "FAILED"]
    n_cancelled_stages = sum(1 for s in failed_stages if s.cancelled)
    n_failed_stages = len(failed_stages) - n_cancelled_stages
    source = analysis.source
    return ApplicationHeaderView(
        name=app.name or MISSING,
        app_id=app_id,
        spark_version=app.spark_version or MISSING,
        user=app.user or MISSING,
        log_name=shown_path(PurePath(source.path).name),
        log_str=f"{shown_path(source.path)} ({source.codec or 'plain'}, "
        f"{fmt_bytes(source.size_bytes)})",
        start_str=fmt_timestamp_ms(app.start_ms),
        duration_str=fmt_duration_ms(app.duration_ms),
        executors_str=plural(len(workers), "executor") if workers else "driver only (local mode)",
        cores_str=plural(n_cores, "core"),
        status=status,
        status_str=STATUS_WORDS[status],
        n_tasks_str=fmt_count(counts.n_attempts),
        n_failed_tasks=counts.n_failed,
        n_killed_tasks=counts.n_killed,
        n_failed_stages=n_failed_stages,
        n_cancelled_stages=n_cancelled_stages,
        has_failures=bool(counts.n_failed or n_failed_stages),
        n_executions=len(app.executions),
        notes=log_notes(analysis),
        generated_str=fmt_timestamp_ms(now_ms) if now_ms is not None else "",
    )
