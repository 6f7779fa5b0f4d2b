"""The verdict at the top of a report: how the application ended, why it failed, what to look at.

The first lines of the text report and the first screen of the page both show it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.insights import Finding
from analyzer.model.application import Execution, Job
from analyzer.model.streaming import StreamingQuery
from analyzer.report.anchors import execution_anchor
from analyzer.report.findings import FindingView
from analyzer.report.header import ApplicationHeaderView
from analyzer.units import plural

ROOT_CAUSE_RULE = "failed-query"
"""The rule whose finding names why a query failed; its `root_cause` evidence is the cause."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class VerdictView:
    """How the application ended, in one line, and the root cause of a failure."""

    status: str = field(
        metadata=_help(
            "`failed`, `completed`, `incomplete` or `in-progress` (also a CSS class): failed when "
            "a SQL execution or a job outside SQL failed."
        )
    )
    status_str: str = field(metadata=_help("The status in capitals, for the badge."))
    summary_str: str = field(
        metadata=_help("`1 of 3 SQL executions failed · 3 failed task attempts`, or the like.")
    )
    root_cause_str: str = field(
        metadata=_help("The first failure's root cause on one line, or empty.")
    )
    root_cause_where_str: str = field(
        metadata=_help(
            "Where it failed: `SQL execution 1 · #6 BatchEvalPython · task 9`, or empty."
        )
    )
    root_cause_finding: str = field(
        metadata=_help("Element id of the finding that explains it, or empty.")
    )
    root_cause_execution: str = field(
        metadata=_help("Element id of the failed execution's section, or empty.")
    )
    top_finding_str: str = field(
        metadata=_help(
            "The costliest warning or critical finding other than the root cause, where it "
            "points and its estimate: `row-explosion at SQL execution 24 (query72) · node #30 "
            "SortMergeJoin · stage 50 · est. 27.3 s lost`; empty when there is none."
        )
    )
    top_finding_rank: int = field(
        metadata=_help("That finding's number in the Findings section, or 0.")
    )
    top_finding_id: str = field(
        metadata=_help("Element id of that finding in the HTML page, or empty.")
    )


def _one_line(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _with_description(analysis: Analysis, finding: Finding, where: str) -> str:
    """`SQL execution 24 · …` with the execution's description after its id, cut short."""
    eid = finding.execution_id
    execution = next((e for e in analysis.application.executions if e.execution_id == eid), None)
    if execution is None or not execution.shown_description.strip():
        return where
    label = f"SQL execution {eid}"
    batch = analysis.streaming_batches.get(eid) if eid is not None else None
    described = (
        f"micro-batch {batch[1]} of streaming query {batch[0]}"
        if batch is not None
        else _one_line(execution.shown_description, 60)
    )
    return where.replace(label, f"{label} ({described})", 1)


@dataclass(frozen=True)
class Failures:
    """What failed in an application, as its verdict counts failures."""

    executions: tuple[Execution, ...]
    """SQL executions that failed, not those cut short on purpose (a streaming query's normal
    stop interrupts the batch it was running, a client or a job group cancels: Spark marks them
    failed, but nothing failed)."""
    jobs: tuple[Job, ...]
    """Jobs outside SQL executions that failed, not those cancelled."""
    cancelled_jobs: tuple[Job, ...]
    """Jobs outside SQL executions cancelled (the application shutting down, a user): a
    consequence, not a failure."""
    streams: tuple[StreamingQuery, ...]
    """Streaming query runs that failed."""

    @property
    def any_failed(self) -> bool:
        """Whether the application failed: something above but a cancelled job."""
        return bool(self.executions or self.jobs or self.streams)


def failures(analysis: Analysis) -> Failures:
    """What failed in the application, as its verdict counts failures."""
    app = analysis.application
    interrupted = app.interrupted_execution_ids
    outside = [j for j in app.jobs if j.status == "FAILED" and j.execution_id is None]
    return Failures(
        executions=tuple(
            e for e in app.executions if e.status == "FAILED" and e.execution_id not in interrupted
        ),
        jobs=tuple(j for j in outside if not j.cancelled),
        cancelled_jobs=tuple(j for j in outside if j.cancelled),
        streams=tuple(q for q in app.streaming if q.status == "failed"),
    )


def build_verdict(
    analysis: Analysis,
    header: ApplicationHeaderView,
    findings: Sequence[Finding],
    views: Sequence[FindingView],
    detailed_ids: set[int],
) -> VerdictView:
    """Say how the application ended; `findings` and their `views` are the shown findings, in
    the same order, and `detailed_ids` the executions with a section in the page."""
    app = analysis.application
    interrupted = app.interrupted_execution_ids
    failed_now = failures(analysis)
    failed, failed_jobs = failed_now.executions, failed_now.jobs
    cancelled_jobs, failed_streams = failed_now.cancelled_jobs, failed_now.streams
    parts = []
    if failed_streams:
        parts.append(
            f"{len(failed_streams)} of "
            f"{plural(len(app.streaming), 'streaming query', 'streaming queries')} failed"
            if len(app.streaming) > 1
            else f"streaming query {failed_streams[0].label} failed"
        )
    # An execution with no end event is RUNNING (as the History Server says), whether the log
    # is cut short or only its end event is missing: never counted as completed.
    running = sum(1 for e in app.executions if e.status == "RUNNING")
    # In a log that ended, such an execution did not run on: its end event is what is missing.
    running_str = (
        ""
        if not running
        else f"{running} with no end event, though the application ended"
        if header.status == "completed"
        else f"{running} running (no end event)"
    )
    status = "failed" if failed_now.any_failed else header.status
    if failed:
        parts.append(
            f"{len(failed)} of {plural(len(app.executions), 'SQL execution')} failed"
            + (f", {running_str}" if running else "")
        )
    if failed_jobs:
        parts.append(f"{plural(len(failed_jobs), 'job')} outside SQL failed")
    if cancelled_jobs:
        parts.append(f"{plural(len(cancelled_jobs), 'job')} outside SQL cancelled")
    stopped = [q for q in app.streaming if q.status == "stopped"]
    # A Spark Connect client that cancels its operation (interruptAll, a closed session) ends it
    # the same way.
    cancelled = app.cancelled_connect_execution_ids
    # The last batch's executions that the stop cut short (those that completed were not).
    stream_interrupted = [
        e
        for e in app.executions
        if e.execution_id in app.stopped_stream_execution_ids and e.status != "COMPLETED"
    ]
    if stopped:
        parts.append(
            f"{plural(len(stopped), 'streaming query', 'streaming queries')} stopped"
            + (
                f" ({plural(len(stream_interrupted), 'SQL execution')} of the last batch "
                "interrupted)"
                if stream_interrupted
                else ""
            )
        )
    if cancelled:
        parts.append(
            f"{plural(len(cancelled), 'SQL execution')} cancelled by the Spark Connect client"
        )
    # Cancelled by the driver program or a user (a job group's cancel, a kill in the UI).
    by_hand_cancelled = app.cancelled_execution_ids
    if not failed:
        if app.executions and running:
            n_completed = sum(1 for e in app.executions if e.status == "COMPLETED")
            parts.append(
                f"{plural(len(app.executions), 'SQL execution')}: "
                + (f"{n_completed} completed, " if n_completed else "")
                + running_str
            )
        elif app.executions:
            parts.append(
                f"{plural(len(app.executions), 'SQL execution')}"
                + (", all completed" if status == "completed" and not interrupted else "")
            )
        else:
            parts.append(f"no SQL executions, {plural(len(app.jobs), 'job')}")
    if by_hand_cancelled:
        parts.append(f"{plural(len(by_hand_cancelled), 'SQL execution')} cancelled")
    if header.n_failed_tasks:
        parts.append(plural(header.n_failed_tasks, "failed task attempt"))
    if header.n_failed_stages:
        parts.append(f"{plural(header.n_failed_stages, 'failed stage attempt')}")
    if header.n_cancelled_stages:
        parts.append(f"{plural(header.n_cancelled_stages, 'cancelled stage attempt')}")
    if status == "incomplete":
        parts.append("the log has no end event")
    elif status == "in-progress":
        parts.append("the log is still being written")
    cause = where = finding_id = execution_id = top = ""
    top_rank = 0
    top_id = ""
    for finding, view in zip(findings, views, strict=True):
        # A query something cancelled has a finding that says so, not a root cause.
        is_cause = finding.rule == ROOT_CAUSE_RULE and finding.execution_id not in by_hand_cancelled
        if not is_cause and not top and view.severity != "info":
            top = f"{view.rule} at {_with_description(analysis, finding, view.where_str)}"
            top = f"{top} · {view.lost_str}"
            top_rank = view.rank
            top_id = view.dom_id
        if not is_cause or cause:
            continue
        text = next((e.value for e in finding.evidence if e.key == "root_cause"), None)
        cause = _one_line(str(text) if text is not None else finding.title)
        bits = []
        if finding.execution_id is not None:
            bits.append(f"SQL execution {finding.execution_id}")
            if finding.execution_id in detailed_ids:
                execution_id = execution_anchor(finding.execution_id)
        if view.node_name:
            bits.append(f"#{finding.node_id} {view.node_name}")
        if finding.task_ids:
            bits.append("task " + ", ".join(map(str, finding.task_ids)))
        where = " · ".join(bits)
        finding_id = view.dom_id
    if failed_streams and not cause:
        # The query failed outside any SQL execution (in the driver, e.g. in foreachBatch).
        query = failed_streams[0]
        cause = _one_line(query.exception_cause or "no exception in the log")
        where = f"streaming query {query.label}"
    return VerdictView(
        status=status,
        status_str=status.replace("-", " ").upper(),
        summary_str=" · ".join(parts),
        root_cause_str=cause,
        root_cause_where_str=where,
        root_cause_finding=finding_id,
        root_cause_execution=execution_id,
        top_finding_str=top,
        top_finding_rank=top_rank,
        top_finding_id=top_id,
    )
