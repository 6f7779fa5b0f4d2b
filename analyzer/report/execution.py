"""One SQL execution as every format shows it: status, error, timing, AQE changes, stages."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import NodeStats
from analyzer.model.application import Application, Execution, StageAttempt
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.report.findings import FindingView
from analyzer.report.stages import StageView
from analyzer.units import fmt_count, fmt_duration_ms, fmt_timestamp_ms, plural, readable_error

JOIN_SUFFIX = "Join"
INCOMPLETE_STR = "incomplete: the log has no end event for this execution; shown with what arrived"
UNDESCRIBED_STR = (
    "the log has no SQL events for this execution, only jobs that name it (Spark 1.x writes "
    "none): no plan, and its times are its jobs'"
)


def incomplete_note(execution: Execution) -> str:
    """What the report says of an execution the log did not see end: nothing when it did,
    and that the log never described it when its jobs alone name it (no plan, no start)."""
    if execution.ended:
        return ""
    if not execution.final_plan.graph.nodes and not execution.description:
        return UNDESCRIBED_STR
    return INCOMPLETE_STR


def interrupted_note(app: Application, execution: Execution) -> str:
    """What the report says of an execution Spark marks failed though nothing failed: a
    Spark Connect operation its client cancelled, or the batch a streaming query's stop cut."""
    if execution.status != "FAILED" or execution.execution_id not in app.interrupted_execution_ids:
        return ""
    if execution.execution_id in app.cancelled_connect_execution_ids:
        return "cancelled by the Spark Connect client: not counted as a failure"
    if execution.execution_id in app.cancelled_execution_ids:
        return "cancelled (every failed job of it was cancelled): not counted as a failure"
    return "interrupted by its streaming query's normal stop: not counted as a failure"


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class AqeView:
    """What adaptive query execution changed in an execution's plan."""

    n_replans: int = field(metadata=_help("AQE plan updates logged (0: the plan never changed)."))
    changed: bool = field(metadata=_help("True when the final plan's operators differ."))
    changes: tuple[str, ...] = field(
        metadata=_help("`SortMergeJoin → BroadcastHashJoin`, `+2 AQEShuffleRead`, `−1 Sort`, …")
    )
    shuffle_reads: tuple[str, ...] = field(
        metadata=_help("One line per AQEShuffleRead: coalesced / skewed and partition counts.")
    )


@dataclass(frozen=True)
class ExecutionView:
    """One SQL execution: what every format says about it before its plan."""

    execution_id: int = field(metadata=_help("Spark's SQL execution id."))
    anchor: str = field(metadata=_help("Element id of its section in the HTML page: `exec-3`."))
    description: str = field(
        metadata=_help(
            "The execution's description (often SQL), uncut; for a Spark Connect operation, what "
            "it ran (`Execution.shown_description`)."
        )
    )
    status: str = field(metadata=_help("COMPLETED, FAILED or RUNNING, as the History Server."))
    is_failed: bool = field(metadata=_help("status is FAILED."))
    incomplete_str: str = field(
        metadata=_help(
            "Said when the log has no end event for the execution (a crashed or running "
            "application): its values are what arrived before the log ends; else empty."
        ),
    )
    interrupted_str: str = field(
        metadata=_help(
            "For a FAILED execution cut short on purpose (`Application.interrupted_execution_ids`)"
            ": what cut it short, and that it is not counted as a failure; else empty."
        ),
    )
    error_message: str = field(
        metadata=_help(
            "Spark's error message, else the first failed job's (`(job N) …`), or empty."
        )
    )
    nesting_str: str = field(
        metadata=_help(
            "`sub-execution of SQL execution 5` for a query a command ran inside its root "
            "execution, `sub-executions 6, 7, 8` for a root with nested ones, else empty."
        )
    )
    start_str: str = field(metadata=_help("Start time (UTC)."))
    duration_ms: int | None = field(metadata=_help("Start to end in ms; None while running."))
    duration_str: str = field(
        metadata=_help(
            "The duration, formatted; without an end event, `at least 1.0 s`: up to its last "
            "activity, as in `Where the time went`."
        )
    )
    job_ids_str: str = field(metadata=_help("`0, 1, 2` or `–`."))
    n_jobs: int = field(metadata=_help("Jobs run for the execution."))
    stage_ids_str: str = field(metadata=_help("`0, 1, 2` or `–`."))
    n_tasks: int = field(metadata=_help("Task attempts that ended in the execution's stages."))
    aqe: AqeView = field(metadata=_help("What AQE changed."))
    stages: tuple[StageView, ...] = field(metadata=_help("Stage attempts, by id."))
    findings: tuple[FindingView, ...] = field(
        metadata=_help("Findings pointing at this execution, by rank.")
    )
    driver_only_str: str = field(
        metadata=_help(
            "For a completed execution that ran no job (and held no other execution that did): "
            "that its time was the driver's, which the log does not break down; else empty."
        )
    )
    unplaced_str: str = field(
        default="",
        metadata=_help(
            "Said when some of its metrics hold task values but belong to no operator of its "
            "plans (declared only by adaptive metric updates), so its operators lack them; "
            "else empty."
        ),
    )


def execution_error(app: Application, execution: Execution) -> str:
    """Return Spark's error message of an execution, else its first failed job's, or empty.

    Logs before Spark 3.4 carry no execution error; the first failed job's reason stands in,
    marked `(job N)`. Spark 3.4's JSON form of the error is read as its text.
    """
    error = readable_error(execution.error_message or "")
    if error or execution.status != "FAILED":
        return error
    jobs = {j.job_id: j for j in app.jobs}
    for job_id in sorted(execution.job_ids):
        job = jobs.get(job_id)
        if job is not None and job.error_message:
            return f"(job {job_id}) {job.error_message}"
    return ""


def nesting_str(app: Application, execution: Execution) -> str:
    """Say where an execution sits among nested ones (`Application.sub_executions`), or ''."""
    parent = app.parent_of(execution)
    if parent is not None:
        return f"sub-execution of SQL execution {parent}"
    return nested_str(app, execution)


def nested_str(app: Application, execution: Execution) -> str:
    """`sub-execution 4`, `sub-executions 6, 7, 8`: the queries that ran inside a root
    execution (`Application.sub_executions`), or ''."""
    nested = app.sub_executions.get(execution.execution_id, ())
    if not nested:
        return ""
    return f"sub-execution{'s' if len(nested) > 1 else ''} {', '.join(map(str, nested))}"


def execution_stages(analysis: Analysis, execution: Execution) -> list[StageAttempt]:
    """Return the stage attempts of an execution's stages, in the application's order."""
    return analysis.stage_attempts_of(execution)


def _operator_counts(graph: PlanGraph) -> Counter[str]:
    return Counter(n.name for n in graph.nodes if not n.is_cluster)


def _metric_total(stats: NodeStats | None, name: str) -> int | None:
    if stats is None:
        return None
    for m in stats.metrics:
        if m.name == name:
            return m.total
    return None


def node_detail(node: PlanNode) -> str:
    """Return a node's one-line description without its leading name."""
    desc = node.desc
    if desc.startswith(node.name):
        desc = desc[len(node.name) :]
    return desc.strip()


def build_aqe_view(execution: Execution, stats: Mapping[int, NodeStats]) -> AqeView:
    """Compare the initial and final plans by operator names and describe each AQEShuffleRead."""
    initial = _operator_counts(execution.plans[0].graph)
    final = _operator_counts(execution.final_plan.graph)
    removed = initial - final
    added = final - initial
    changes: list[str] = []
    gone_joins = sorted(n for n in removed if JOIN_SUFFIX in n)
    new_joins = sorted(n for n in added if JOIN_SUFFIX in n)
    for old, new in zip(gone_joins, new_joins, strict=False):
        n = min(removed[old], added[new])
        changes.append(f"{old} → {new}" + (f" (×{n})" if n > 1 else ""))
        removed[old] -= n
        added[new] -= n
    for name in sorted(added):
        if added[name] > 0:
            changes.append(f"+{added[name]} {name}")
    for name in sorted(removed):
        if removed[name] > 0:
            changes.append(f"−{removed[name]} {name}")
    graph = execution.final_plan.graph
    reads: list[str] = []
    for node in graph.nodes:
        if node.name not in ("AQEShuffleRead", "CustomShuffleReader"):
            continue
        kind = node_detail(node) or "local"
        parts = [f"node {node.node_id} {node.name} {kind}"]
        after = _metric_total(stats.get(node.node_id), "number of partitions")
        before = None
        for child in graph.children_of(node.node_id):
            before = _metric_total(stats.get(child.node_id), "number of partitions")
        if before is not None and after is not None:
            parts.append(f"{fmt_count(before)} → {fmt_count(after)} partitions")
        elif after is not None:
            parts.append(f"{fmt_count(after)} partitions")
        skewed = _metric_total(stats.get(node.node_id), "number of skewed partitions")
        if skewed:
            splits = _metric_total(stats.get(node.node_id), "number of skewed partition splits")
            text = f"{fmt_count(skewed)} skewed partitions"
            parts.append(text + (f" split into {fmt_count(splits)}" if splits else ""))
        elif "coalesced" in kind and before is not None and after is not None and after > before:
            # Spark calls it coalesced, yet it reads more partitions than the shuffle has: the
            # other side of a skew join split its skewed partitions, and this side's are read
            # once per split.
            parts.append("some read more than once, for the other side's skew splits")
        reads.append(": ".join(parts[:2]) + "".join(f", {p}" for p in parts[2:]))
    return AqeView(
        n_replans=len(execution.plans) - 1,
        changed=bool(changes),
        changes=tuple(changes),
        shuffle_reads=tuple(reads),
    )


def execution_description(analysis: Analysis, execution: Execution) -> str:
    """What the reports call an execution: for a micro-batch, which batch of which streaming
    query (Spark's description of one is the query's name, id, run id and batch on four lines,
    the batch last and cut off in any short view), else `Execution.shown_description`."""
    batch = analysis.streaming_batches.get(execution.execution_id)
    if batch is not None:
        return f"micro-batch {batch[1]} of streaming query {batch[0]}"
    return execution.shown_description


def known_duration_ms(analysis: Analysis, execution: Execution) -> int | None:
    """An execution's wall time, or for one with no end event the time it is known to have run
    (start to last activity, `AppTimeSpent.open_walls_ms`); None when it never started."""
    if execution.duration_ms is not None:
        return execution.duration_ms
    return analysis.time_spent.open_walls_ms.get(execution.execution_id)


def duration_str(analysis: Analysis, execution: Execution) -> str:
    """`1.3 s`, or `at least 1.0 s` for an execution with no end event (see `known_duration_ms`),
    or `–` when neither is known."""
    known = known_duration_ms(analysis, execution)
    if execution.duration_ms is None and known is not None:
        return f"at least {fmt_duration_ms(known)}"
    return fmt_duration_ms(known)


def build_execution_view(
    analysis: Analysis,
    execution: Execution,
    findings: Sequence[FindingView],
    stages: tuple[StageView, ...],
) -> ExecutionView:
    """Describe one SQL execution with its (already built) stage views and the findings at it."""
    app = analysis.application
    stage_attempts = execution_stages(analysis, execution)
    return ExecutionView(
        execution_id=execution.execution_id,
        anchor=f"exec-{execution.execution_id}",
        description=execution_description(analysis, execution),
        status=execution.status,
        is_failed=execution.status == "FAILED",
        incomplete_str=incomplete_note(execution),
        interrupted_str=interrupted_note(app, execution),
        error_message=execution_error(app, execution),
        nesting_str=nesting_str(app, execution),
        start_str=fmt_timestamp_ms(execution.start_ms),
        duration_ms=execution.duration_ms,
        duration_str=duration_str(analysis, execution),
        job_ids_str=", ".join(map(str, sorted(execution.job_ids))) or "–",
        n_jobs=len(execution.job_ids),
        stage_ids_str=", ".join(map(str, sorted(set(execution.stage_ids)))) or "–",
        n_tasks=sum(s.n_task_attempts for s in stage_attempts),
        aqe=build_aqe_view(execution, analysis.node_stats.get(execution.execution_id, {})),
        stages=stages,
        findings=tuple(f for f in findings if f.execution_id == execution.execution_id),
        driver_only_str=driver_only_note(analysis, execution),
        unplaced_str=unplaced_str(analysis.metrics_on_no_operator(execution)),
    )


def driver_only_note(analysis: Analysis, execution: Execution) -> str:
    """Why a completed execution that ran no job has no task figures: its time was the
    driver's (planning, a command such as CREATE VIEW, metadata), which the log does not time.
    Empty for one that ran jobs, held sub-executions, or had another execution with jobs start
    within its time (before Spark 3.4 the log does not say whether that was its work)."""
    if execution.job_ids or not execution.ended or not execution.duration_ms:
        return ""
    if analysis.application.sub_executions.get(execution.execution_id):
        return ""
    start, end = execution.start_ms, execution.end_ms
    if start is None or end is None:
        return ""
    # Before Spark 3.4 the log does not tie a command's executions to it (a micro-batch's write,
    # CREATE TABLE AS SELECT): one that ran jobs within this one's time may be its work.
    starts = analysis.job_execution_starts_ms
    i = bisect_left(starts, start)
    if i < len(starts) and starts[i] <= end:
        return ""
    return (
        f"No job ran in it: its {fmt_duration_ms(execution.duration_ms)} were spent in the "
        "driver (planning the query, a command such as CREATE VIEW, reading metadata), which "
        "the event log does not break down, so its operators have no figures."
    )


def unplaced_str(n_metrics: int) -> str:
    """What a reader must know when task values belong to no operator of the plan.

    >>> unplaced_str(0), unplaced_str(105)[:60]
    ('', "105 of its metrics hold its tasks' values but belong to no o")
    """
    if not n_metrics:
        return ""
    return (
        f"{plural(n_metrics, 'of its metrics', 'of its metrics')} hold its tasks' values but "
        "belong to no operator of its plans (they were declared only by adaptive metric "
        "updates, as a plug-in's subqueries declare theirs): Spark's UI shows them on no "
        "operator either, so the operators below lack those figures and self times"
    )
