"""Where the time went: the application's wall time → its query families and slowest
executions → the stages on their critical paths → the operators with the most self time there.
Shown first in every format.

An application that runs the same query many times (`Analysis.query_families`) is read by query:
a family of N executions is one row with its share of the application, its members' wall-time
distribution and trend, and the critical path of its slowest member; the executions the section
then follows one by one are the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import ExecutionTime, NodeTime
from analyzer.aggregate.families import QueryFamily
from analyzer.aggregate.stage_wall import PARTS
from analyzer.aggregate.streaming import StreamingFigures
from analyzer.aggregate.time_spent import AppTimeSpent, StageSpan
from analyzer.model.application import Execution, Job, connect_tag
from analyzer.model.connect import CONNECT_DESCRIPTION_PREFIX
from analyzer.report.anchors import execution_anchor, node_dom_id, plan_dom_id, stage_anchor
from analyzer.report.execution import execution_description, known_duration_ms, nested_str
from analyzer.report.findings import FindingView
from analyzer.report.selection import Selection
from analyzer.units import first_line, fmt_count, fmt_duration_ms, fmt_pct, one_line, plural

MAX_EXECUTIONS = 3
"""How many of the slowest executions the section follows …"""
MIN_EXECUTION_SHARE = 0.05
"""… of those taking at least this share of the slowest one's wall time (or of the largest query
family's)."""
MAX_FAMILIES = 3
"""How many query families the section leads with (those with the most wall time, each at least
`MIN_EXECUTION_SHARE` of the largest family's or slowest execution's)."""
MAX_FAMILY_IDS = 6
"""Member ids a family's row names (the first ones, then the last)."""
MAX_STAGES = 3
"""How many of an execution's critical-path stages it names (the longest ones)."""
MAX_OPERATORS = 3
"""How many operators it names per stage."""
MAX_OTHER_JOBS = 3
"""How many jobs outside SQL it names (the longest ones)."""
DESCRIPTION_CHARS = 70
BETWEEN_ATTEMPTS = "between_attempts_ms"
"""A retried stage's wall time in which none of its attempts ran (its first attempt's
submission to its last's completion, less the union of the attempts' walls): the time a
stage whose shuffle input was lost waited for its parent stage to run again."""
PART_LABELS = {
    "wait_executor_ms": "waiting for an executor",
    "queued_ms": "queued for a free slot",
    "not_launched_ms": "no task launched",
    "scheduler_delay_ms": "scheduler delay",
    "deserialize_ms": "deserialization",
    "run_ms": "run",
    "result_ms": "result fetch",
    "tail_ms": "straggler tail",
    BETWEEN_ATTEMPTS: "between attempts",
}
"""How the parts of a stage's wall time (`aggregate.stage_wall.PARTS`) are named."""
ESTIMATED_MARK = "~"
"""Marks an operator's self time that is mostly estimated: the stage's task time shared among
its operators by their work, not measured by their own timing metrics."""


def mostly_estimated(time: NodeTime | None) -> bool:
    """Whether an operator's self time is mostly estimated (its own timing metrics measured
    under half of it): the reports mark it `ESTIMATED_MARK`."""
    return (
        time is not None
        and bool(time.self_time_ms)
        and time.measured_ms < 0.5 * (time.self_time_ms or 0.0)
    )


ESTIMATES_NOTE = (
    f"{ESTIMATED_MARK} before a time: mostly estimated, the stage's task time shared among its "
    "operators by their work rather than measured (docs/metrics.md#time-attribution)"
)
MIN_PART_SHARE = 0.01
"""Parts under this share of the stage's wall time are left out of its line."""
MIN_MOSTLY_MS = 1_000
"""A stage is called `mostly …` only for a part at least this long (a 40 ms stage is noise)."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def _share(part: float | None, whole: float | None) -> str:
    if part is None or not whole:
        return "–"
    return fmt_pct(part / whole)


def _open_note(n_open: int, what: str) -> str:
    """`1 execution with no end event counted up to its last activity`, or empty."""
    if not n_open:
        return ""
    their = "its" if n_open == 1 else "their"
    return f"{plural(n_open, what)} with no end event counted up to {their} last activity"


def _one_line(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    return one_line(text, limit)


@dataclass(frozen=True)
class HotOperatorView:
    """An operator with much self time in one stage."""

    node_id: int = field(metadata=_help("Plan node id (final plan)."))
    name: str = field(metadata=_help("Operator name."))
    node_anchor: str = field(
        metadata=_help("Element id of the operator in the HTML page's final plan graph.")
    )
    time_str: str = field(
        metadata=_help(
            "Its self time in the stage, formatted; `~` before it when most of it is estimated "
            "(`ESTIMATED_MARK`)."
        )
    )
    share_str: str = field(metadata=_help("Its share of the stage's task run time."))
    findings: tuple[FindingView, ...] = field(
        metadata=_help("Findings pointing at this operator, by rank.")
    )
    estimated: bool = field(
        default=False,
        metadata=_help("True when less than half of its self time was measured by its metrics."),
    )


@dataclass(frozen=True)
class StageTimeView:
    """A stage on an execution's critical path."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    stage_anchor: str = field(metadata=_help("Element id of its rows in the HTML stage table."))
    wall_str: str = field(metadata=_help("Its wall time (first submission to last completion)."))
    wall_share_str: str = field(metadata=_help("Its share of the execution's wall time."))
    task_time_str: str = field(
        metadata=_help(
            "`676 ms of task run time` (executor run time of its successful tasks), or `no "
            "task succeeded`."
        )
    )
    parts_str: str = field(
        metadata=_help(
            "Its wall time taken apart, largest part first: `waiting for an executor 10.2 s "
            "(68 %) · straggler tail 1.9 s (13 %) · run 1.7 s (12 %)`, or empty."
        )
    )
    mostly_str: str = field(
        metadata=_help(
            "`mostly scheduler delay` when a part other than running tasks is most of its "
            "wall time and at least 1 s (its operators then explain only the run part); "
            "`mostly no task launched (cancelled: …)` with how an attempt that launched no "
            "task ended; else empty."
        )
    )
    operators: tuple[HotOperatorView, ...] = field(
        metadata=_help(
            "Its operators with the most self time, largest first; their shares are of the "
            "stage's task run time, the run part of its wall."
        )
    )


@dataclass(frozen=True)
class PathStageView:
    """A stage of an execution's critical path, as a segment of the HTML time bar."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    stage_anchor: str = field(metadata=_help("Element id of its rows in the HTML stage table."))
    wall_str: str = field(metadata=_help("Its wall time, formatted."))
    width_pct: float = field(
        metadata=_help("Segment width: its share of the path's wall time, in percent (0..100).")
    )


@dataclass(frozen=True)
class TimeSegmentView:
    """A part of the application's wall time, as a segment of the HTML time bar."""

    label_str: str = field(metadata=_help("`query 24 1m 11s`, `outside SQL 20.0 s`, …"))
    kind: str = field(metadata=_help("`sql`, `sql-other`, `jobs` or `driver` (a CSS class)."))
    anchor: str = field(metadata=_help("Element id it links to, or empty."))
    width_pct: float = field(metadata=_help("Segment width in percent of the bar (0..100)."))


@dataclass(frozen=True)
class ExecutionTimeView:
    """One of the slowest executions and where its time went."""

    execution_id: int = field(metadata=_help("Spark's SQL execution id."))
    anchor: str = field(metadata=_help("Element id of its section in the HTML page."))
    description_str: str = field(metadata=_help("Its description on one line, shortened."))
    status: str = field(metadata=_help("COMPLETED, FAILED or RUNNING."))
    wall_str: str = field(
        metadata=_help(
            "Its wall time, formatted; `at least 3.6 s` for one with no end event (start to "
            "last activity)."
        )
    )
    share_str: str = field(metadata=_help("Its share of the application's wall time."))
    sub_executions_str: str = field(
        metadata=_help(
            "`sub-executions 6, 7, 8 ran inside it` when queries of its command ran as nested "
            "executions (their time is part of its own, so they are not listed apart), else empty."
        )
    )
    path_str: str = field(
        metadata=_help("Its critical path: `stage 46 19.2 s → 50 35.1 s → 55 11.6 s`, or empty.")
    )
    path: tuple[PathStageView, ...] = field(
        metadata=_help("The same path as bar segments, in order.")
    )
    stages: tuple[StageTimeView, ...] = field(
        metadata=_help("The longest stages of its critical path, longest first.")
    )


@dataclass(frozen=True)
class FamilyTimeView:
    """A query the application ran many times (executions with one plan fingerprint), as one
    row: its share of the application, its members' wall times and the slowest member."""

    fingerprint: str = field(metadata=_help("The members' plan fingerprint (16 hex digits)."))
    n_executions: int = field(metadata=_help("How many executions ran the query."))
    runs_str: str = field(
        metadata=_help(
            "What the row counts: `query run 100 times`; for a streaming query's micro-batches "
            "`10 micro-batches`, and their executions when a batch ran several that the log "
            "does not nest (before Spark 3.4): `8 micro-batches, 24 SQL executions`."
        ),
    )
    each_str: str = field(
        metadata=_help(
            "What the distribution is over: `each` run, or `each SQL execution` when the "
            "executions are not the batches."
        ),
    )
    description_str: str = field(
        metadata=_help(
            "What the members are: their common description on one line, or `streaming query "
            "orders` (the row counts its micro-batches)."
        )
    )
    wall_str: str = field(
        metadata=_help("Wall time covered by at least one member (overlaps counted once).")
    )
    share_str: str = field(metadata=_help("That wall time's share of the application."))
    total_str: str = field(
        metadata=_help(
            "`members' wall times sum to 1m 2s` when members ran at once (the sum exceeds the "
            "covered wall time), else empty."
        )
    )
    distribution_str: str = field(
        metadata=_help("`min 120 ms · median 180 ms · p90 250 ms · max 1.2 s` (nearest rank).")
    )
    trend_str: str = field(
        metadata=_help(
            "`slower over time: second half's median 1.6× the first's (7.7 s vs 4.7 s)`, "
            "`faster over time: …`, `steady: …`, or empty with fewer than 4 members."
        )
    )
    failed_str: str = field(metadata=_help("`3 failed` when members failed, else empty."))
    executions_str: str = field(
        metadata=_help("The members' ids: `SQL executions 3, 5, 7, 9, 11, 13, … 301`.")
    )
    slowest: ExecutionTimeView = field(
        metadata=_help("The slowest member, with its critical path and hot operators.")
    )


@dataclass(frozen=True)
class OtherJobView:
    """A job outside any SQL execution (RDD work, file listing)."""

    job_id: int = field(metadata=_help("Spark's job id."))
    duration_str: str = field(metadata=_help("Submission to completion."))
    description_str: str = field(
        metadata=_help("Its description, else its name (call site), on one line.")
    )


@dataclass(frozen=True)
class TimeSpentView:
    """The section `Where the time went`."""

    summary_str: str = field(
        metadata=_help(
            "`1m 57s: SQL executions 1m 11s (61.0 %) · jobs outside SQL 20.0 s (17.1 %) · "
            "driver alone 25.6 s (21.9 %): before the first query or job 3.9 s, between jobs "
            "18.7 s, after the last job 3.0 s`."
        )
    )
    families: tuple[FamilyTimeView, ...] = field(
        metadata=_help(
            "The queries the application ran many times, the most wall time first: they lead "
            "the section (empty when no query ran twice, or with --execution or --top)."
        )
    )
    executions: tuple[ExecutionTimeView, ...] = field(
        metadata=_help("The slowest shown executions outside those families, slowest first.")
    )
    other_jobs_str: str = field(
        metadata=_help("`31 jobs outside SQL executions, 20.0 s in all`, or empty.")
    )
    other_jobs: tuple[OtherJobView, ...] = field(
        metadata=_help("The longest of those jobs, longest first.")
    )
    segments: tuple[TimeSegmentView, ...] = field(
        metadata=_help(
            "The application's wall time as bar segments: the query families and followed "
            "executions, other SQL, jobs outside SQL, the driver alone."
        )
    )
    estimates_note: str = field(
        default="",
        metadata=_help("`ESTIMATES_NOTE` when an operator's time shown is mostly estimated."),
    )


def _hot_operators(
    execution: Execution,
    times: ExecutionTime | None,
    stage_id: int,
    stage_run_ms: int,
    findings: Sequence[FindingView],
) -> tuple[HotOperatorView, ...]:
    if times is None:
        return ()
    in_stage = [
        (ms, nt.node_id)
        for nt in times.nodes.values()
        for sid, ms in nt.by_stage
        if sid == stage_id and ms >= 0.5
    ]
    flagged = {f.node_id for f in findings if f.execution_id == execution.execution_id}
    ranked = sorted(in_stage, key=lambda r: (-r[0], r[1]))
    chosen = ranked[:MAX_OPERATORS]
    # An operator a finding points at is always named, even when others took more time.
    chosen += [r for r in ranked[MAX_OPERATORS:] if r[1] in flagged]
    graph = execution.final_plan.graph
    plan_id = plan_dom_id(execution.execution_id, execution.final_plan.index)
    estimated = {node_id: mostly_estimated(times.nodes.get(node_id)) for _, node_id in chosen}
    return tuple(
        HotOperatorView(
            node_id=node_id,
            name=graph.node(node_id).name,
            node_anchor=node_dom_id(plan_id, node_id),
            time_str=(ESTIMATED_MARK if estimated[node_id] else "") + fmt_duration_ms(ms),
            estimated=estimated[node_id],
            share_str=_share(ms, stage_run_ms),
            findings=tuple(
                f
                for f in findings
                if f.execution_id == execution.execution_id and f.node_id == node_id
            ),
        )
        for ms, node_id in chosen
    )


def _parts(parts: dict[str, int], wall_ms: int) -> tuple[str, str]:
    """The stage's wall parts as one line, and what it mostly was if not running tasks."""
    if not parts or wall_ms <= 0:
        return "", ""
    names = (*PARTS, BETWEEN_ATTEMPTS)
    shown = sorted(
        ((parts[name], name) for name in names if parts.get(name, 0) >= MIN_PART_SHARE * wall_ms),
        key=lambda item: (-item[0], names.index(item[1])),
    )
    line = " · ".join(
        f"{PART_LABELS[name]} {fmt_duration_ms(ms)} ({_share(ms, wall_ms)})" for ms, name in shown
    )
    top_ms, top = shown[0] if shown else (0, "run_ms")
    mostly = (
        f"mostly {PART_LABELS[top]}"
        if top not in ("run_ms", "deserialize_ms")
        and top_ms * 2 >= wall_ms
        and top_ms >= MIN_MOSTLY_MS
        else ""
    )
    return line, mostly


NOT_LAUNCHED = f"mostly {PART_LABELS['not_launched_ms']}"


def _wall_parts(analysis: Analysis, span: StageSpan) -> dict[str, int]:
    """The parts of a stage's wall time, summed over its attempts, and for a stage that ran
    more than once the time between its attempts (`BETWEEN_ATTEMPTS`), so that the parts
    account for the span shown."""
    parts = analysis.stage_parts(span.stage_id)
    if not span.between_attempts_ms:
        return parts
    return {**parts, BETWEEN_ATTEMPTS: span.between_attempts_ms}


def _how_it_ended(analysis: Analysis, stage_id: int) -> str:
    """` (cancelled: <reason>)` or ` (failed: <reason>)` for a stage whose last attempt
    ended with a failure reason, else empty: what became of a stage that launched no task."""
    reasons = [s.failure_reason for s in analysis.application.stages if s.stage_id == stage_id]
    reason = reasons[-1] if reasons else None
    if not reason:
        return ""
    how = "cancelled" if "cancelled" in reason.lower() else "failed"
    return f" ({how}: {first_line(reason)})"


def _execution_view(
    analysis: Analysis,
    execution: Execution,
    app_wall_ms: int | None,
    findings: Sequence[FindingView],
) -> ExecutionTimeView:
    app = analysis.application
    nested = app.sub_executions.get(execution.execution_id, ())
    # A root's stages and those of the sub-executions that ran inside it, each with its owner.
    owner: dict[int, Execution] = {}
    for member in (execution, *(e for e in app.executions if e.execution_id in nested)):
        for stage_id in member.stage_ids:
            owner.setdefault(stage_id, member)
    path = analysis.critical_path(tuple(owner))
    wall = known_duration_ms(analysis, execution)
    is_open = execution.duration_ms is None and wall is not None
    stages = []
    for span in sorted(path, key=lambda sp: (-sp.wall_ms, sp.stage_id))[:MAX_STAGES]:
        member = owner[span.stage_id]
        times = analysis.times.get(member.execution_id)
        stage_time = times.stages.get(span.stage_id) if times else None
        run_ms = stage_time.run_ms if stage_time else 0
        parts_str, mostly_str = _parts(_wall_parts(analysis, span), span.wall_ms)
        if mostly_str == NOT_LAUNCHED:
            mostly_str += _how_it_ended(analysis, span.stage_id)
        stages.append(
            StageTimeView(
                stage_id=span.stage_id,
                stage_anchor=stage_anchor(member.execution_id, str(span.stage_id)),
                wall_str=fmt_duration_ms(span.wall_ms),
                wall_share_str=_share(span.wall_ms, wall),
                task_time_str=_task_run_str(analysis, span.stage_id, run_ms),
                parts_str=parts_str,
                mostly_str=mostly_str,
                operators=_hot_operators(member, times, span.stage_id, run_ms, findings),
            )
        )
    path_ms = sum(sp.wall_ms for sp in path)
    return ExecutionTimeView(
        execution_id=execution.execution_id,
        anchor=execution_anchor(execution.execution_id),
        description_str=_execution_description(analysis, execution),
        status=execution.status,
        wall_str=f"at least {fmt_duration_ms(wall)}" if is_open else fmt_duration_ms(wall),
        share_str=_share(wall, app_wall_ms),
        sub_executions_str=f"{nested_str(app, execution)} ran inside it" if nested else "",
        path_str=(
            "stage " + " → ".join(f"{sp.stage_id} {fmt_duration_ms(sp.wall_ms)}" for sp in path)
            if path
            else ""
        ),
        stages=tuple(stages),
        path=tuple(
            PathStageView(
                stage_id=sp.stage_id,
                stage_anchor=stage_anchor(owner[sp.stage_id].execution_id, str(sp.stage_id)),
                wall_str=fmt_duration_ms(sp.wall_ms),
                width_pct=round(100 * sp.wall_ms / path_ms, 2) if path_ms else 0.0,
            )
            for sp in path
        ),
    )


def _segments(
    analysis: Analysis,
    spent: AppTimeSpent,
    families: Sequence[QueryFamily],
    followed: Sequence[Execution],
) -> tuple[TimeSegmentView, ...]:
    """Split the application's wall time into bar segments (executions may overlap: the
    followed ones are shown in full and the rest of SQL time is what they leave)."""
    wall = spent.wall_ms
    if not wall:
        return ()
    parts: list[tuple[str, str, str, int]] = []
    shown_ms = 0
    for family in families:
        ms = family.covered_ms
        batch = analysis.streaming_batches.get(family.slowest_execution_id)
        parts.append(
            (
                f"streaming query {batch[0]} {fmt_duration_ms(ms)}"
                if batch is not None
                else f"{fmt_count(family.n_executions)} × query {family.slowest_execution_id} "
                f"{fmt_duration_ms(ms)}",
                "sql",
                execution_anchor(family.slowest_execution_id),
                ms,
            )
        )
        shown_ms += ms
    for e in followed:
        ms = known_duration_ms(analysis, e) or 0
        parts.append(
            (
                f"query {e.execution_id} {fmt_duration_ms(ms)}",
                "sql",
                execution_anchor(e.execution_id),
                ms,
            )
        )
        shown_ms += ms
    if spent.sql_ms > shown_ms:
        rest = spent.sql_ms - shown_ms
        parts.append((f"other SQL {fmt_duration_ms(rest)}", "sql-other", "", rest))
    if spent.other_jobs_ms:
        ms = spent.other_jobs_ms
        parts.append((f"outside SQL {fmt_duration_ms(ms)}", "jobs", "", ms))
    if spent.driver_ms:
        ms = spent.driver_ms
        parts.append((f"driver alone {fmt_duration_ms(ms)}", "driver", "", ms))
    total = max(sum(p[3] for p in parts), wall)
    if total <= 0:
        return ()
    return tuple(
        TimeSegmentView(
            label_str=label, kind=kind, anchor=anchor, width_pct=round(100 * ms / total, 2)
        )
        for label, kind, anchor, ms in parts
        if ms > 0
    )


def _job_description(analysis: Analysis, job: Job) -> str:
    """The job's description on one line; for a Spark Connect operation's job outside its SQL
    executions (a file listing, a schema inference), the name of the operation's execution."""
    tag = connect_tag(job.job_tags)
    if tag is not None and (job.description or "").startswith(CONNECT_DESCRIPTION_PREFIX):
        for other in analysis.application.jobs:
            if other.execution_id is not None and tag in other.job_tags:
                execution = analysis.executions_by_id.get(other.execution_id)
                if execution is not None:
                    return _one_line(f"{execution.shown_description}, outside its SQL execution")
    return _one_line(job.description or job.name or f"job {job.job_id}")


def _execution_description(analysis: Analysis, execution: Execution) -> str:
    """The execution's description on one line; for a micro-batch, which batch of which query
    (its description is Spark's `name / id / runId / batch` block)."""
    return _one_line(execution_description(analysis, execution)) or "(no description)"


def _ids_str(ids: Sequence[int]) -> str:
    """`SQL executions 3, 5, 7, 9, 11, 13, … 301`: the first members and the last."""
    if len(ids) <= MAX_FAMILY_IDS + 1:
        shown = ", ".join(map(str, ids))
    else:
        shown = ", ".join(map(str, ids[:MAX_FAMILY_IDS])) + f", … {ids[-1]}"
    return f"SQL executions {shown}"


def _family_view(
    analysis: Analysis,
    family: QueryFamily,
    app_wall_ms: int | None,
    findings: Sequence[FindingView],
) -> FamilyTimeView:
    slowest = analysis.executions_by_id[family.slowest_execution_id]
    batch = analysis.streaming_batches.get(family.slowest_execution_id)
    description = (
        f"streaming query {batch[0]}"
        if batch is not None
        else _one_line(family.description) or "(no description)"
    )
    runs_str = f"query run {fmt_count(family.n_executions)} times"
    each_str = "each"
    if batch is not None:
        batches = analysis.streaming_batches
        ids = {batches[e][1] for e in family.execution_ids if e in batches}
        members = set(family.execution_ids)
        unfinished = {
            b
            for fig in analysis.streaming
            if members & set(fig.execution_ids)
            for b, _ in fig.query.unfinished_batches
        } & ids
        n_batches = len(ids)
        runs_str = _batch_count_str(n_batches - len(unfinished), len(unfinished), "micro-batch")
        if n_batches != family.n_executions:
            runs_str += f", {plural(family.n_executions, 'SQL execution')}"
            each_str = "each SQL execution"
    trend = family.trend
    trend_str = ""
    if trend is not None and family.trend_ratio is not None:
        words = {"slower": "slower over time", "faster": "faster over time", "steady": "steady"}
        trend_str = (
            f"{words[trend]}: second half's median {family.trend_ratio:.1f}× the first's "
            f"({fmt_duration_ms(family.second_half_median_ms)} vs "
            f"{fmt_duration_ms(family.first_half_median_ms)})"
        )
    return FamilyTimeView(
        fingerprint=family.fingerprint,
        n_executions=family.n_executions,
        runs_str=runs_str,
        each_str=each_str,
        description_str=description,
        wall_str=fmt_duration_ms(family.covered_ms),
        share_str=_share(family.covered_ms, app_wall_ms),
        total_str=(
            f"members' wall times sum to {fmt_duration_ms(family.total_ms)}"
            if family.total_ms > family.covered_ms
            else ""
        ),
        distribution_str=(
            f"min {fmt_duration_ms(family.min_ms)} · median {fmt_duration_ms(family.median_ms)}"
            f" · p90 {fmt_duration_ms(family.p90_ms)} · max {fmt_duration_ms(family.max_ms)}"
        ),
        trend_str=trend_str,
        failed_str=f"{family.n_failed} failed" if family.n_failed else "",
        executions_str=_ids_str(family.execution_ids),
        slowest=_execution_view(analysis, slowest, app_wall_ms, findings),
    )


def _batches_str(fig: StreamingFigures) -> str:
    """The batches a query run's SQL time was spent in: its finished ones, and the one a stop
    or a failure cut short (its executions' time is in the run's too)."""
    n_cut = len(fig.query.unfinished_batches)
    if not fig.n_batches and not n_cut:
        return "no batch"
    return _batch_count_str(fig.n_batches, n_cut, "batch")


def _batch_count_str(n_done: int, n_cut: int, noun: str) -> str:
    """`10 batches`, `2 micro-batches and 1 unfinished one`.

    >>> _batch_count_str(2, 1, "micro-batch"), _batch_count_str(1, 0, "batch")
    ('2 micro-batches and 1 unfinished one', '1 batch')
    """
    text = plural(n_done, noun, noun + "es")
    return text + (f" and {plural(n_cut, 'unfinished one')}" if n_cut else "")


def _task_run_str(analysis: Analysis, stage_id: int, run_ms: int) -> str:
    """`676 ms of task run time` (its successful tasks'), or, for a stage whose tasks all
    failed, that none succeeded: its wall's run part is the failed attempts' own."""
    if run_ms == 0 and any(
        s.n_failed for (sid, _), s in analysis.stage_stats.items() if sid == stage_id
    ):
        return "no task succeeded"
    return f"{fmt_duration_ms(run_ms)} of task run time"


def _stream_str(fig: StreamingFigures, wall_ms: int | None, timed_outside: bool) -> str:
    """A query run's SQL time and batches, and, when its batches took much longer than their SQL
    executions (fetching offsets, planning and committing run on the driver first), their time;
    not when the run ran no SQL execution of its own or is timed outside the application's run
    (`timed_outside`), where its batches' times are not this run's."""
    if fig.n_executions == 0:
        # Nothing of the application's time is the run's: no "0 ms (0.0 %)" beside its batches.
        return f"streaming query {fig.query.label}: {_batches_str(fig)}, no SQL execution"
    text = (
        f"streaming query {fig.query.label} {fmt_duration_ms(fig.sql_wall_ms)} "
        f"({_share(fig.sql_wall_ms, wall_ms)}) in {_batches_str(fig)}"
    )
    batch_ms = fig.total_trigger_ms
    if (
        fig.sql_wall_ms > 0
        and not timed_outside
        and (wall_ms is None or batch_ms <= wall_ms)
        and batch_ms - fig.sql_wall_ms >= max(MIN_DRIVER_EXTRA_MS, fig.sql_wall_ms // 10)
    ):
        text += (
            f", which took {fmt_duration_ms(batch_ms)} ({_share(batch_ms, wall_ms)}) from "
            "trigger to end: the rest on the driver (offsets, planning, commits)"
        )
    return text


MIN_DRIVER_EXTRA_MS = 1_000
"""A query run's batches are said to take longer than their SQL executions from this much (and
a tenth of the SQL time)."""


def build_time_spent_view(
    analysis: Analysis, selection: Selection, findings: Sequence[FindingView]
) -> TimeSpentView:
    """Say where the application's time went, following the slowest of the shown executions."""
    app = analysis.application
    spent = analysis.time_spent
    wall = spent.wall_ms
    open_sql = _open_note(len(spent.open_walls_ms), "execution")
    parts = [
        f"SQL executions {fmt_duration_ms(spent.sql_ms)} ({_share(spent.sql_ms, wall)}"
        + (f"; {open_sql})" if open_sql else ")")
    ]
    if spent.other_jobs_ms:
        open_jobs = _open_note(spent.n_open_jobs, "job")
        parts.append(
            f"jobs outside SQL {fmt_duration_ms(spent.other_jobs_ms)} "
            f"({_share(spent.other_jobs_ms, wall)}" + (f"; {open_jobs})" if open_jobs else ")")
        )
    if spent.driver_ms is not None:
        driver = (
            f"driver alone {fmt_duration_ms(spent.driver_ms)} ({_share(spent.driver_ms, wall)})"
        )
        pieces = [
            (label, ms)
            for label, ms in (
                ("before the first query or job", spent.startup_ms),
                ("between jobs", spent.between_ms),
                ("after the last job", spent.after_ms),
            )
            if ms
        ]
        if spent.driver_ms and pieces:
            driver += ": " + ", ".join(f"{label} {fmt_duration_ms(ms)}" for label, ms in pieces)
        parts.append(driver)
    summary = f"{fmt_duration_ms(wall)}: " + " · ".join(parts)
    if analysis.streaming:
        timed_outside = any(kind == "streaming query run" for kind, _, _ in analysis.outside_run)
        summary += "; " + " · ".join(
            _stream_str(fig, wall, timed_outside) for fig in analysis.streaming
        )
    other = [
        j
        for j in app.jobs
        if j.execution_id is None and j.submission_ms is not None and j.completion_ms is not None
    ]
    other.sort(key=lambda j: (-((j.completion_ms or 0) - (j.submission_ms or 0)), j.job_id))
    # A sub-execution runs inside its root's time: the root stands for both. A query run many
    # times is one unit (its family), not one row per run: with the whole application shown.
    families = () if selection.is_filtered else analysis.query_families
    in_family = {i for f in families for i in f.execution_ids}
    roots = [
        e
        for e in selection.executions
        if app.parent_of(e) is None and e.execution_id not in in_family
    ]
    known = {e.execution_id: known_duration_ms(analysis, e) or 0 for e in roots}
    slowest = sorted(roots, key=lambda e: (-known[e.execution_id], e.execution_id))
    slowest = slowest[:MAX_EXECUTIONS]
    largest = max(
        [f.covered_ms for f in families[:1]] + [known[e.execution_id] for e in slowest[:1]],
        default=0,
    )
    led = [
        f
        for i, f in enumerate(families[:MAX_FAMILIES])
        if f.covered_ms >= MIN_EXECUTION_SHARE * largest or (i == 0 and not slowest)
    ]
    followed = [
        e
        for i, e in enumerate(slowest)
        if (i == 0 and not led) or known[e.execution_id] >= MIN_EXECUTION_SHARE * largest
    ]
    family_views = tuple(_family_view(analysis, f, wall, findings) for f in led)
    execution_views = tuple(_execution_view(analysis, e, wall, findings) for e in followed)
    shown = [*(f.slowest for f in family_views), *execution_views]
    any_estimated = any(op.estimated for ex in shown for st in ex.stages for op in st.operators)
    return TimeSpentView(
        summary_str=summary,
        families=family_views,
        executions=execution_views,
        segments=_segments(analysis, spent, led, followed),
        estimates_note=ESTIMATES_NOTE if any_estimated else "",
        other_jobs_str=(
            f"{len(other)} job{'' if len(other) == 1 else 's'} outside SQL executions, "
            f"{fmt_duration_ms(spent.other_jobs_ms)} of wall time"
            if other
            else ""
        ),
        other_jobs=tuple(
            OtherJobView(
                job_id=j.job_id,
                duration_str=fmt_duration_ms((j.completion_ms or 0) - (j.submission_ms or 0)),
                description_str=_job_description(analysis, j),
            )
            for j in other[:MAX_OTHER_JOBS]
        ),
    )
