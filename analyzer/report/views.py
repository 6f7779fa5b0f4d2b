"""View models of the EXPLAIN ANALYZE report, shared by the text and HTML renderers.

Everything a template shows is computed here, once, by pure functions of an `Analysis`: tree
prefixes, pre-formatted strings (fields ending in `_str`), skew marks and rankings. Templates only
place these fields; every field is documented where it is declared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import MaxLocation, MetricStats, NodeStats
from analyzer.aggregate.task_detail import iter_task_rows
from analyzer.errors import UsageError
from analyzer.insights import Finding, Thresholds, detect_all
from analyzer.model.application import Application, Execution, StageAttempt
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.report.formatters import (
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_metric_value,
    fmt_pct,
    fmt_ratio,
    fmt_timestamp_ms,
)

MetricsLevel = Literal["none", "summary", "full"]
METRICS_LEVELS: tuple[str, ...] = ("none", "summary", "full")

SUMMARY_METRIC_NAMES = frozenset(
    {
        "number of output rows",
        "output rows",
        "duration",
        "spill size",
        "peak memory",
        "data size",
        "shuffle bytes written",
        "shuffle records written",
        "records read",
        "number of files read",
        "size of files read",
        "number of partitions",
        "number of coalesced partitions",
        "number of skewed partitions",
        "number of skewed partition splits",
        "partition data size",
    }
)
"""Metrics shown at `--metrics summary`, besides every timing metric (full shows all of them)."""

SKEW_RATIO_MARK = 4.0
"""A metric is marked skewed when its max is at least this many times its median …"""

SKEW_MIN_MAX = {"timing": 100, "nsTiming": 100_000_000, "size": 1 << 20, "sum": 10_000}
"""… and its max is at least this large (100 ms, 1 MiB, 10,000 rows): small values are noise."""

JOIN_SUFFIX = "Join"
TREE_MAX_LEVELS = 12
"""A node this deep starts again at the left margin (`⤷ `, naming its parent): short lines."""


SEVERITY_MARKS = {"critical": "✖", "warning": "⚠", "info": "ℹ"}
"""The mark printed before a finding of each severity."""

SEVERITY_STYLES = {"critical": "red", "warning": "yellow", "info": ""}
"""The colour of a finding's mark and severity when the report is coloured (info stays plain)."""

FINDINGS_DOC = "docs/findings.md"
"""Where each rule is explained, under a heading named by its id."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class FindingView:
    """One finding, formatted: listed in the Findings section and referred to where it points."""

    rank: int = field(
        metadata=_help("Its number in the Findings section (1: the largest estimated time lost).")
    )
    rule: str = field(metadata=_help("Rule id, e.g. `data-skew`."))
    severity: str = field(metadata=_help("`info`, `warning` or `critical`."))
    mark: str = field(metadata=_help("Severity mark: `✖` critical, `⚠` warning, `ℹ` info."))
    style: str = field(
        metadata=_help("Colour of the mark and severity when coloured: red, yellow or empty.")
    )
    title: str = field(metadata=_help("One line naming the problem, as the rule wrote it."))
    execution_id: int | None = field(
        metadata=_help("SQL execution it points at; None for an application-level finding.")
    )
    node_id: int | None = field(metadata=_help("Plan node (final plan) it points at, if any."))
    where_str: str = field(
        metadata=_help(
            "`SQL execution 3 · node #12 SortMergeJoin · stage 5.0 · tasks 9, 10`, parts it has "
            "left out; `the application` when it points at nothing narrower."
        )
    )
    lost_str: str = field(
        metadata=_help("`est. 4.2 s lost`, or `no time cost estimated` when the estimate is 0.")
    )
    estimate_str: str = field(metadata=_help("How the estimate was made, in one sentence."))
    evidence_strs: tuple[str, ...] = field(
        metadata=_help("The evidence, one `label: value` string per item, in reading order.")
    )
    suggestion: str = field(metadata=_help("What to change: a Spark setting or a query change."))
    docs_anchor: str = field(
        metadata=_help("Where the rule is explained: `docs/findings.md#rule`.")
    )
    ref_str: str = field(
        metadata=_help(
            "The line under its execution: `data-skew at #12 SortMergeJoin — see Findings 2`."
        )
    )
    node_ref_str: str = field(
        metadata=_help("The mark line under its plan node: `data-skew — see Findings 2`.")
    )


@dataclass(frozen=True)
class MetricView:
    """One SQL metric of one plan node, formatted for reading."""

    name: str = field(metadata=_help("Spark's metric name, e.g. `number of output rows`."))
    metric_type: str = field(metadata=_help("Spark's type: sum, size, timing, nsTiming, average."))
    total_str: str = field(
        metadata=_help("The sum over all values; empty for averages, whose sum means nothing.")
    )
    min_str: str = field(metadata=_help("Smallest value (task slots that reported nothing are 0)."))
    median_str: str = field(metadata=_help("Spark's upper median."))
    p95_str: str = field(metadata=_help("95th percentile (the higher value, no interpolation)."))
    max_str: str = field(metadata=_help("Largest value."))
    count: int = field(metadata=_help("How many values (task slots plus driver values) there are."))
    has_spread: bool = field(
        metadata=_help("True when there are several values and they differ: show min/med/p95/max.")
    )
    is_skewed: bool = field(
        metadata=_help("max ≥ 4 × median and max above the noise floor (see docs/metrics.md).")
    )
    skew_str: str = field(metadata=_help("max / median, e.g. `×12.0`; `–` when the median is 0."))
    skew_pct_str: str = field(
        metadata=_help("Skew score 100 × (max − median) / max, e.g. `91.7 %`.")
    )
    max_at_str: str = field(
        metadata=_help("Where the max came from: `stage 3.0 task 12 partition 4 exec 1 @ host`.")
    )
    spark_ui: str = field(metadata=_help("The string Spark's SQL tab shows for this metric."))


@dataclass(frozen=True)
class PlanNodeView:
    """One line of the plan tree: an operator, or a second reference to an operator shown above."""

    node_id: int = field(metadata=_help("Spark's plan-graph node id (as in the SQL tab)."))
    depth: int = field(metadata=_help("Distance from the root (0 for a root)."))
    prefix_str: str = field(metadata=_help("Tree guides before the name, e.g. `│  ├─ `."))
    parent_note_str: str = field(
        metadata=_help("For a deep node restarted at the margin: `(input of #N, depth D)`.")
    )
    detail_prefix_str: str = field(
        metadata=_help("Tree guides for the lines under the node (its metrics), e.g. `│  │  │ `.")
    )
    name: str = field(metadata=_help("Operator name, e.g. `SortMergeJoin`."))
    detail_str: str = field(
        metadata=_help("The operator's one-line description without its leading name (uncut).")
    )
    codegen_id: int | None = field(metadata=_help("N of the WholeStageCodegen (N) it runs in."))
    codegen_str: str = field(metadata=_help("`codegen 3`, or empty outside codegen."))
    is_stage_boundary: bool = field(
        metadata=_help("An exchange: the stages below it write a shuffle or broadcast it reads.")
    )
    stage_ids: tuple[int, ...] = field(metadata=_help("Stages whose tasks updated its metrics."))
    stage_ids_str: str = field(metadata=_help("`stage 3` / `stages 3, 4`, or empty."))
    is_reference: bool = field(
        metadata=_help("A reused exchange or subquery met again: its subtree is shown above.")
    )
    reference_str: str = field(metadata=_help("`(see node N)` for a reference, else empty."))
    cluster_name: str = field(
        metadata=_help("On the topmost operator of a codegen cluster: `WholeStageCodegen (3)`.")
    )
    cluster_metrics: tuple[MetricView, ...] = field(
        metadata=_help("The cluster's own metrics (its `duration`), on its topmost operator.")
    )
    metrics: tuple[MetricView, ...] = field(
        metadata=_help("The node's metrics shown at the chosen level, in Spark's order.")
    )
    findings: tuple[FindingView, ...] = field(
        default=(),
        metadata=_help("Findings pointing at this node (or its codegen cluster), by rank."),
    )


@dataclass(frozen=True)
class TaskRowView:
    """One task attempt of a stage."""

    prefix_str: str = field(metadata=_help("Tree guide before the row: `├─ ` or `└─ `."))
    task_id: int = field(metadata=_help("Spark's task id (unique in the application)."))
    attempt: int = field(metadata=_help("Attempt number of this task index (0 for the first)."))
    partition_str: str = field(metadata=_help("`partition 4` (the RDD partition it computed)."))
    executor_str: str = field(metadata=_help("`exec 1 @ host-a`."))
    duration_ms: int = field(metadata=_help("Launch to finish, in ms."))
    duration_str: str = field(metadata=_help("The duration, formatted."))
    rows_str: str = field(metadata=_help("Records read: input plus shuffle, e.g. `1,250 rows`."))
    bytes_str: str = field(metadata=_help("Bytes read: input plus shuffle, e.g. `3.2 KiB read`."))
    spill_str: str = field(metadata=_help("`spill 1.0 MiB` (memory) / disk, or empty when none."))
    status_str: str = field(
        metadata=_help("Empty for a success; else `FAILED`, `KILLED`, … and `speculative`.")
    )
    failure_str: str = field(metadata=_help("One-line failure reason, or empty."))


@dataclass(frozen=True)
class StageView:
    """One attempt of a stage of an execution, with its tasks at `--metrics full`."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    attempt_id: int = field(metadata=_help("Stage attempt number (0 for the first)."))
    name: str = field(metadata=_help("Stage name (the call site), uncut."))
    status: str = field(metadata=_help("COMPLETE, FAILED, SKIPPED or ACTIVE."))
    n_tasks: int = field(metadata=_help("Tasks the attempt was planned with."))
    n_task_attempts: int = field(metadata=_help("Task attempts that ended (retries included)."))
    n_retried: int = field(metadata=_help("Task attempts that re-ran an index (attempt > 0)."))
    n_failed: int = field(metadata=_help("Task attempts that failed."))
    wall_str: str = field(metadata=_help("Submission to completion, formatted; `–` if unknown."))
    summary_str: str = field(
        metadata=_help("`4 tasks, 105 ms wall, 2 retried, 1 failed` (zero counts left out).")
    )
    failure_reason: str = field(metadata=_help("Why the stage attempt failed, or empty."))
    tasks: tuple[TaskRowView, ...] = field(metadata=_help("Task attempts at full level, by id."))


@dataclass(frozen=True)
class TopOperatorView:
    """An operator (or codegen cluster) among the most time-consuming of an execution."""

    rank: int = field(metadata=_help("1 for the most time-consuming."))
    node_id: int = field(metadata=_help("Plan node id (a WholeStageCodegen cluster's own id)."))
    name: str = field(metadata=_help("Operator name, or `WholeStageCodegen (N)`."))
    time_ms: int = field(metadata=_help("The summed time, in ms."))
    time_str: str = field(metadata=_help("The summed time, formatted."))
    source_str: str = field(metadata=_help("Which metrics were summed, e.g. `duration`."))
    bar_fraction: float = field(metadata=_help("time / the largest time in the list (bar widths)."))


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
    """One SQL execution: header, AQE changes, plan tree with metrics, stages, top operators."""

    execution_id: int = field(metadata=_help("Spark's SQL execution id."))
    description: str = field(metadata=_help("The execution's description (often SQL), uncut."))
    status: str = field(metadata=_help("COMPLETED, FAILED or RUNNING, as the History Server."))
    is_failed: bool = field(metadata=_help("status is FAILED."))
    incomplete_str: str = field(
        metadata=_help(
            "Said when the log has no end event for the execution (a crashed or running "
            "application): its values are what arrived before the log ends; else empty."
        ),
    )
    error_message: str = field(
        metadata=_help(
            "Spark's error message, else the first failed job's (`(job N) …`), or empty."
        )
    )
    start_str: str = field(metadata=_help("Start time (UTC)."))
    duration_ms: int | None = field(metadata=_help("Start to end in ms; None while running."))
    duration_str: str = field(metadata=_help("The duration, formatted; `–` without an end."))
    job_ids_str: str = field(metadata=_help("`0, 1, 2` or `–`."))
    stage_ids_str: str = field(metadata=_help("`0, 1, 2` or `–`."))
    n_tasks: int = field(metadata=_help("Task attempts that ended in the execution's stages."))
    aqe: AqeView = field(metadata=_help("What AQE changed."))
    nodes: tuple[PlanNodeView, ...] = field(metadata=_help("The final plan, depth first."))
    stages: tuple[StageView, ...] = field(
        metadata=_help("Stage attempts, by id (empty at `--metrics none`).")
    )
    top_operators: tuple[TopOperatorView, ...] = field(
        metadata=_help("The most time-consuming operators (empty at `--metrics none`).")
    )
    top_label: str = field(metadata=_help("What the top operators' time is, honestly."))
    findings: tuple[FindingView, ...] = field(
        default=(), metadata=_help("Findings pointing at this execution, by rank.")
    )


@dataclass(frozen=True)
class ApplicationView:
    """The whole report: application header and the selected SQL executions."""

    name: str = field(metadata=_help("Application name."))
    app_id: str = field(metadata=_help("Application id (and attempt), or `–`."))
    spark_version: str = field(metadata=_help("Spark version that wrote the log."))
    user: str = field(metadata=_help("User that ran the application."))
    log_name: str = field(metadata=_help("File or directory name of the log (no directories)."))
    start_str: str = field(metadata=_help("Application start (UTC)."))
    duration_str: str = field(metadata=_help("Start to end, formatted; `–` without an end."))
    n_executors: int = field(metadata=_help("Executors that were added (the driver excluded)."))
    executors_str: str = field(
        metadata=_help(
            "`12 executors`, or `driver only (local mode)` when tasks ran in the driver."
        )
    )
    status: str = field(
        metadata=_help("`completed`, `in progress` or `incomplete (no end event)`.")
    )
    n_failed_tasks: int = field(metadata=_help("Task attempts that failed (not killed)."))
    n_failed_stages: int = field(metadata=_help("Stage attempts that failed."))
    n_executions: int = field(metadata=_help("SQL executions in the log."))
    selection_str: str = field(metadata=_help("Which executions are shown and why."))
    metrics_level: str = field(metadata=_help("none, summary or full."))
    log_notes: tuple[str, ...] = field(
        metadata=_help("Reading notes: truncated tail, skipped malformed lines.")
    )
    generated_str: str = field(
        metadata=_help("When the report was made (injected clock), or empty.")
    )
    executions: tuple[ExecutionView, ...] = field(metadata=_help("Shown executions, by start."))
    findings: tuple[FindingView, ...] = field(
        default=(),
        metadata=_help(
            "Findings of the shown executions and of the application, largest estimated time "
            "lost first."
        ),
    )
    findings_str: str = field(
        default="",
        metadata=_help(
            "What the Findings section lists: how many, of how many, in what order, and the "
            "thresholds changed from their defaults; empty when there is nothing to say."
        ),
    )
    other_work_str: str = field(
        default="",
        metadata=_help(
            "Jobs that belong to no SQL execution (RDD or streaming work), e.g. `3 jobs "
            "outside SQL executions: 0, 1, 2`; empty when none, or when executions are filtered."
        ),
    )
    other_stages: tuple[StageView, ...] = field(
        default=(),
        metadata=_help("The stage attempts of those jobs, with their tasks at `full`."),
    )


# --------------------------------------------------------------------------------------------
# Building


def select_executions(
    app: Application, execution_ids: Sequence[int] | None = None, top: int | None = None
) -> list[Execution]:
    """Return the executions to show, sorted by start: only `execution_ids`, then the `top` slowest.

    Raises `UsageError` for an id the log does not hold or a `top` below 1.
    """
    chosen = list(app.executions)
    if execution_ids:
        known = {e.execution_id for e in chosen}
        missing = sorted(set(execution_ids) - known)
        if missing:
            raise UsageError(
                f"no SQL execution {', '.join(map(str, missing))} in this log "
                f"({len(known)} executions)"
            )
        wanted = set(execution_ids)
        chosen = [e for e in chosen if e.execution_id in wanted]
    if top is not None:
        if top < 1:
            raise UsageError(f"--top must be at least 1, not {top}")
        chosen = sorted(chosen, key=lambda e: (-(e.duration_ms or 0), e.execution_id))[:top]
    big = 1 << 62
    return sorted(
        chosen, key=lambda e: (e.start_ms if e.start_ms is not None else big, e.execution_id)
    )


def _max_at_str(at: MaxLocation | None) -> str:
    if at is None:
        return ""
    if at.task_id is None:
        return at.executor_id or ""
    parts = [f"stage {at.stage_id}.{at.stage_attempt_id}", f"task {at.task_id}"]
    if at.partition_id is not None:
        parts.append(f"partition {at.partition_id}")
    if at.executor_id is not None:
        parts.append(f"exec {at.executor_id} @ {at.host}" if at.host else f"exec {at.executor_id}")
    return " ".join(parts)


def finding_where(finding: Finding, node_name: str) -> tuple[str, str]:
    """Return where a finding points: the full place and the short place inside its execution."""
    node = ""
    if finding.node_id is not None:
        node = f"#{finding.node_id} {node_name}" if node_name else f"#{finding.node_id}"
    stage = ""
    if finding.stage_id is not None:
        stage = f"stage {finding.stage_id}"
        if finding.stage_attempt_id is not None:
            stage += f".{finding.stage_attempt_id}"
    parts = []
    if finding.execution_id is not None:
        parts.append(f"SQL execution {finding.execution_id}")
    if node:
        parts.append(f"node {node}")
    if stage:
        parts.append(stage)
    if finding.task_ids:
        noun = "task" if len(finding.task_ids) == 1 else "tasks"
        parts.append(f"{noun} {', '.join(map(str, finding.task_ids))}")
    return (" · ".join(parts) or "the application"), (node or stage)


def finding_lost_str(finding: Finding) -> str:
    """Say the time a finding probably cost: `est. 4.2 s lost`, or that none was estimated."""
    if finding.estimated_lost_ms > 0:
        return f"est. {fmt_duration_ms(finding.estimated_lost_ms)} lost"
    return "no time cost estimated"


def build_finding_view(finding: Finding, rank: int, node_name: str = "") -> FindingView:
    """Format `finding`, numbered `rank` in the Findings section; `node_name` names its node.

    >>> from analyzer.insights import Finding
    >>> view = build_finding_view(
    ...     Finding(rule="data-skew", severity="warning", title="t", suggestion="s",
    ...             estimated_lost_ms=4200, estimate_method="m", execution_id=3, node_id=12),
    ...     2, "SortMergeJoin")
    >>> view.where_str, view.lost_str
    ('SQL execution 3 · node #12 SortMergeJoin', 'est. 4.2 s lost')
    >>> view.ref_str
    'data-skew at #12 SortMergeJoin — see Findings 2'
    """
    where, at = finding_where(finding, node_name)
    lost = finding_lost_str(finding)
    see = f"see Findings {rank}"
    return FindingView(
        rank=rank,
        rule=finding.rule,
        severity=finding.severity,
        mark=SEVERITY_MARKS[finding.severity],
        style=SEVERITY_STYLES[finding.severity],
        title=finding.title,
        execution_id=finding.execution_id,
        node_id=finding.node_id,
        where_str=where,
        lost_str=lost,
        estimate_str=finding.estimate_method,
        evidence_strs=tuple(f"{label}: {value}" for label, value in finding.evidence),
        suggestion=finding.suggestion,
        docs_anchor=f"{FINDINGS_DOC}#{finding.rule}",
        ref_str=f"{finding.rule}{f' at {at}' if at else ''} — {see}",
        node_ref_str=f"{finding.rule} — {see}",
    )


def _node_name(app: Application, finding: Finding) -> str:
    """Name the plan node a finding points at, from its execution's final plan (or empty)."""
    if finding.execution_id is None or finding.node_id is None:
        return ""
    for execution in app.executions:
        if execution.execution_id == finding.execution_id:
            graph = execution.final_plan.graph
            try:
                return graph.node(finding.node_id).name
            except KeyError:
                return ""
    return ""


def _changed_thresholds(thresholds: Thresholds | None) -> str:
    """List the thresholds that differ from their defaults: `gc_share=0.2, tiny_task_ms=50`."""
    if thresholds is None:
        return ""
    default = Thresholds()
    return ", ".join(
        f"{name}={getattr(thresholds, name)}"
        for name in Thresholds.names()
        if getattr(thresholds, name) != getattr(default, name)
    )


def build_finding_views(
    analysis: Analysis, execution_ids: Iterable[int], thresholds: Thresholds | None = None
) -> tuple[tuple[FindingView, ...], str]:
    """Return the findings of the given executions and of the application, and the section note.

    Findings are ranked by estimated time lost (as `detect_all` returns them) and numbered in
    that order; findings of executions not listed are left out, and the note says so.
    """
    found = detect_all(analysis, thresholds)
    shown = set(execution_ids)
    kept = [f for f in found if f.execution_id is None or f.execution_id in shown]
    views = tuple(
        build_finding_view(f, i, _node_name(analysis.application, f))
        for i, f in enumerate(kept, start=1)
    )
    parts = []
    if len(kept) < len(found):
        parts.append(f"{len(kept)} of {len(found)} (others belong to executions not shown)")
    elif kept:
        parts.append(f"{len(kept)}")
    if kept:
        parts[-1] += ", largest estimated time lost first"
    changed = _changed_thresholds(thresholds)
    if changed:
        parts.append(f"thresholds changed: {changed}")
    return views, "; ".join(parts)


def is_skewed(m: MetricStats) -> bool:
    """Return True when a metric's max is far above its median and large enough to matter."""
    floor = SKEW_MIN_MAX.get(m.metric_type)
    return (
        floor is not None
        and m.skew_ratio is not None
        and m.skew_ratio >= SKEW_RATIO_MARK
        and m.max_value >= floor
    )


def build_metric_view(m: MetricStats) -> MetricView:
    """Format one metric's statistics."""
    t = m.metric_type
    return MetricView(
        name=m.name,
        metric_type=t,
        total_str="" if t == "average" else fmt_metric_value(t, m.total),
        min_str=fmt_metric_value(t, m.min_value),
        median_str=fmt_metric_value(t, m.median),
        p95_str=fmt_metric_value(t, m.p95),
        max_str=fmt_metric_value(t, m.max_value),
        count=m.count,
        has_spread=m.count > 1 and m.min_value != m.max_value,
        is_skewed=is_skewed(m),
        skew_str=fmt_ratio(m.skew_ratio),
        skew_pct_str=fmt_pct(m.skew_pct / 100),
        max_at_str=_max_at_str(m.max_at),
        spark_ui=m.spark_ui,
    )


def _shown_metrics(stats: NodeStats | None, level: MetricsLevel) -> tuple[MetricView, ...]:
    if stats is None or level == "none":
        return ()
    if level == "full":
        return tuple(build_metric_view(m) for m in stats.metrics)
    return tuple(
        build_metric_view(m)
        for m in stats.metrics
        if (m.metric_type in ("timing", "nsTiming") or m.name in SUMMARY_METRIC_NAMES)
        and (m.total != 0 or m.max_value != 0)
    )


def _detail(node: PlanNode) -> str:
    desc = node.desc
    if desc.startswith(node.name):
        desc = desc[len(node.name) :]
    return desc.strip()


def _stage_ids_str(ids: Iterable[int]) -> str:
    ids = list(ids)
    if not ids:
        return ""
    return ("stage " if len(ids) == 1 else "stages ") + ", ".join(map(str, ids))


def _guides(levels: list[bool]) -> str:
    """Guides for descendants: `│  ` under a node with later siblings, blanks otherwise."""
    return "".join("│  " if more else "   " for more in levels)


def build_plan_node_views(
    graph: PlanGraph,
    stats: dict[int, NodeStats],
    level: MetricsLevel,
    findings: Sequence[FindingView] = (),
) -> tuple[PlanNodeView, ...]:
    """Lay out a plan graph as a tree (depth first, children in Spark's order) with metrics.

    Each of `findings` that points at a node is attached to that node's first occurrence; one
    that points at a codegen cluster goes to the operator that carries the cluster's metrics.
    """
    by_node: dict[int, list[FindingView]] = {}
    for finding in findings:
        if finding.node_id is not None:
            by_node.setdefault(finding.node_id, []).append(finding)
    out: list[PlanNodeView] = []
    seen: set[int] = set()
    clusters_shown: set[int] = set()

    def visit(
        node: PlanNode, levels: list[bool], is_last: bool, depth: int, parent_id: int | None
    ) -> None:
        again = node.node_id in seen
        seen.add(node.node_id)
        children = [] if again else graph.children_of(node.node_id)
        parent_note = ""
        below: list[bool]
        if depth == 0:
            prefix, below = "", []
        elif len(levels) >= TREE_MAX_LEVELS:
            prefix, below = "⤷ ", []
            parent_note = f"(input of #{parent_id}, depth {depth})"
        else:
            prefix = _guides(levels) + ("└─ " if is_last else "├─ ")
            below = [*levels, not is_last]
        detail_prefix = _guides(below) + ("│ " if children else "  ")
        node_stats = stats.get(node.node_id)
        cluster_name = ""
        cluster_metrics: tuple[MetricView, ...] = ()
        cid = node.cluster_id
        if not again and cid is not None and cid not in clusters_shown:
            clusters_shown.add(cid)
            cluster_name = graph.node(cid).name
            cluster_metrics = _shown_metrics(stats.get(cid), level)
        stage_ids = node_stats.stage_ids if node_stats else ()
        node_findings: list[FindingView] = []
        if not again:
            node_findings += by_node.get(node.node_id, [])
            if cluster_name and cid is not None:
                node_findings += by_node.get(cid, [])
        out.append(
            PlanNodeView(
                node_id=node.node_id,
                depth=depth,
                prefix_str=prefix,
                parent_note_str=parent_note,
                detail_prefix_str=detail_prefix,
                name=node.name,
                detail_str=_detail(node),
                codegen_id=node.codegen_id,
                codegen_str=f"codegen {node.codegen_id}" if node.codegen_id is not None else "",
                is_stage_boundary="Exchange" in node.name,
                stage_ids=stage_ids,
                stage_ids_str=_stage_ids_str(stage_ids),
                is_reference=again,
                reference_str=f"(see node {node.node_id})" if again else "",
                cluster_name=cluster_name,
                cluster_metrics=cluster_metrics,
                metrics=() if again else _shown_metrics(node_stats, level),
                findings=tuple(sorted(node_findings, key=lambda f: f.rank)),
            )
        )
        for i, child in enumerate(children):
            visit(child, below, i == len(children) - 1, depth + 1, node.node_id)

    for root in graph.roots:
        visit(root, [], True, 0, None)
    return tuple(out)


def _operator_counts(graph: PlanGraph) -> Counter[str]:
    return Counter(n.name for n in graph.nodes if not n.is_cluster)


def _metric_total(stats: NodeStats | None, name: str) -> int | None:
    if stats is None:
        return None
    for m in stats.metrics:
        if m.name == name:
            return m.total
    return None


def build_aqe_view(execution: Execution, stats: dict[int, NodeStats]) -> AqeView:
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
        kind = _detail(node) or "local"
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
        reads.append(": ".join(parts[:2]) + "".join(f", {p}" for p in parts[2:]))
    return AqeView(
        n_replans=len(execution.plans) - 1,
        changed=bool(changes),
        changes=tuple(changes),
        shuffle_reads=tuple(reads),
    )


TOP_LABEL = (
    "each node's timing metrics summed over its tasks; a WholeStageCodegen `duration` includes "
    "the operators fused in it, broadcast and subquery times are driver time; figures overlap"
)


def build_top_operators(
    graph: PlanGraph, stats: dict[int, NodeStats], top: int = 5
) -> tuple[TopOperatorView, ...]:
    """Rank nodes and codegen clusters by the sum of their timing metrics (ms), largest first."""
    ranked: list[tuple[int, int, str, str]] = []
    total_ms: float
    for node in graph.nodes:
        node_stats = stats.get(node.node_id)
        if node_stats is None:
            continue
        total_ms = 0.0
        names = []
        for m in node_stats.metrics:
            if m.metric_type == "timing":
                total_ms += m.total
            elif m.metric_type == "nsTiming":
                total_ms += m.total / 1_000_000
            else:
                continue
            if m.total > 0:
                names.append(m.name)
        if total_ms > 0:
            ranked.append((round(total_ms), node.node_id, node.name, " + ".join(names)))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    chosen = ranked[:top]
    biggest = chosen[0][0] if chosen else 1
    return tuple(
        TopOperatorView(
            rank=i + 1,
            node_id=node_id,
            name=name,
            time_ms=ms,
            time_str=fmt_duration_ms(ms),
            source_str=source,
            bar_fraction=ms / biggest,
        )
        for i, (ms, node_id, name, source) in enumerate(chosen)
    )


TaskRow = dict[str, Any]
"""One task attempt as a row of `Analysis.tasks` (only the columns the report uses)."""
_TASK_COLUMNS = (
    "stage_id",
    "stage_attempt_id",
    "task_id",
    "attempt",
    "partition_id",
    "duration_ms",
    "input_records",
    "shuffle_read_records",
    "input_bytes",
    "shuffle_read_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "executor_id",
    "host",
    "end_reason",
    "failed",
    "speculative",
    "failure_reason",
)


def _task_rows(
    analysis: Analysis, stage_keys: set[tuple[int, int]]
) -> dict[tuple[int, int], list[TaskRow]]:
    """Group the task attempts of the given stage attempts, ordered by task id."""
    by_stage: dict[tuple[int, int], list[TaskRow]] = {}
    for row in iter_task_rows(analysis, _TASK_COLUMNS):
        key = (row["stage_id"], row["stage_attempt_id"])
        if key in stage_keys:
            by_stage.setdefault(key, []).append(row)
    for rows_of in by_stage.values():
        rows_of.sort(key=lambda r: int(r["task_id"]))
    return by_stage


def _task_view(row: TaskRow, prefix: str) -> TaskRowView:
    end_reason = str(row["end_reason"])
    status = [] if end_reason == "Success" else [end_reason]
    if row["speculative"]:
        status.append("speculative")
    mem_spill, disk_spill = int(row["memory_bytes_spilled"]), int(row["disk_bytes_spilled"])
    spill = ""
    if mem_spill or disk_spill:
        spill = f"spill {fmt_bytes(mem_spill)} mem / {fmt_bytes(disk_spill)} disk"
    duration = int(row["duration_ms"])
    return TaskRowView(
        prefix_str=prefix,
        task_id=int(row["task_id"]),
        attempt=int(row["attempt"]),
        partition_str=f"partition {row['partition_id']}",
        executor_str=f"exec {row['executor_id']} @ {row['host']}",
        duration_ms=duration,
        duration_str=fmt_duration_ms(duration),
        rows_str=f"{fmt_count(row['input_records'] + row['shuffle_read_records'])} rows",
        bytes_str=f"{fmt_bytes(row['input_bytes'] + row['shuffle_read_bytes'])} read",
        spill_str=spill,
        status_str=" ".join(status),
        failure_str=row["failure_reason"] or "",
    )


def _stage_summary(stage: StageAttempt, n_retried: int, wall: str) -> str:
    noun = "task" if stage.n_tasks == 1 else "tasks"
    parts = [f"{fmt_count(stage.n_tasks)} {noun}", f"{wall} wall"]
    if n_retried:
        parts.append(f"{fmt_count(n_retried)} retried")
    if stage.n_failed_attempts:
        parts.append(f"{fmt_count(stage.n_failed_attempts)} failed")
    if stage.n_killed_attempts:
        parts.append(f"{fmt_count(stage.n_killed_attempts)} killed")
    if stage.n_speculative_attempts:
        parts.append(f"{fmt_count(stage.n_speculative_attempts)} speculative")
    return ", ".join(parts)


def build_stage_views(
    stages: Sequence[StageAttempt],
    rows: dict[tuple[int, int], list[TaskRow]],
    with_tasks: bool,
) -> tuple[StageView, ...]:
    """Describe stage attempts, with a row per task attempt when `with_tasks`."""
    out = []
    for stage in sorted(stages, key=lambda s: (s.stage_id, s.attempt_id)):
        task_rows = rows.get((stage.stage_id, stage.attempt_id), [])
        n_retried = sum(1 for r in task_rows if r["attempt"] > 0)
        wall = fmt_duration_ms(stage.duration_ms)
        tasks: tuple[TaskRowView, ...] = ()
        if with_tasks:
            last = len(task_rows) - 1
            tasks = tuple(
                _task_view(r, "└─ " if i == last else "├─ ") for i, r in enumerate(task_rows)
            )
        out.append(
            StageView(
                stage_id=stage.stage_id,
                attempt_id=stage.attempt_id,
                name=stage.name,
                status=stage.status,
                n_tasks=stage.n_tasks,
                n_task_attempts=stage.n_task_attempts,
                n_retried=n_retried,
                n_failed=stage.n_failed_attempts,
                wall_str=wall,
                summary_str=_stage_summary(stage, n_retried, wall),
                failure_reason=stage.failure_reason or "",
                tasks=tasks,
            )
        )
    return tuple(out)


def build_execution_view(
    analysis: Analysis,
    execution: Execution,
    level: MetricsLevel,
    task_rows: dict[tuple[int, int], list[TaskRow]],
    findings: Sequence[FindingView] = (),
) -> ExecutionView:
    """Describe one SQL execution at the given metrics level, with the findings pointing at it."""
    mine = tuple(f for f in findings if f.execution_id == execution.execution_id)
    stats = analysis.node_stats.get(execution.execution_id, {})
    graph = execution.final_plan.graph
    stage_set = set(execution.stage_ids)
    stages = [s for s in analysis.application.stages if s.stage_id in stage_set]
    n_tasks = sum(s.n_task_attempts for s in stages)
    error = execution.error_message or ""
    if not error and execution.status == "FAILED":
        # Logs before Spark 3.4 carry no execution error; the first failed job's reason stands in.
        jobs = {j.job_id: j for j in analysis.application.jobs}
        for job_id in sorted(execution.job_ids):
            job = jobs.get(job_id)
            if job is not None and job.error_message:
                error = f"(job {job_id}) {job.error_message}"
                break
    return ExecutionView(
        execution_id=execution.execution_id,
        description=execution.description,
        status=execution.status,
        is_failed=execution.status == "FAILED",
        incomplete_str=""
        if execution.ended
        else "incomplete: the log has no end event for this execution; shown with what arrived",
        error_message=error,
        start_str=fmt_timestamp_ms(execution.start_ms),
        duration_ms=execution.duration_ms,
        duration_str=fmt_duration_ms(execution.duration_ms),
        job_ids_str=", ".join(map(str, sorted(execution.job_ids))) or "–",
        stage_ids_str=", ".join(map(str, sorted(stage_set))) or "–",
        n_tasks=n_tasks,
        aqe=build_aqe_view(execution, stats),
        nodes=build_plan_node_views(graph, stats, level, mine),
        stages=() if level == "none" else build_stage_views(stages, task_rows, level == "full"),
        top_operators=() if level == "none" else build_top_operators(graph, stats),
        top_label=TOP_LABEL,
        findings=mine,
    )


def _selection_str(n_shown: int, n_total: int, ids: Sequence[int] | None, top: int | None) -> str:
    what = f"{n_shown} of {n_total} SQL executions"
    reasons = []
    if ids:
        reasons.append("chosen by id")
    if top is not None:
        reasons.append(f"the {top} slowest")
    return what + (f" ({', '.join(reasons)})" if reasons else "") + ", by start time"


def build_application_view(
    analysis: Analysis,
    executions: Sequence[int] | None = None,
    top: int | None = None,
    metrics_level: MetricsLevel = "summary",
    now_ms: int | None = None,
    thresholds: Thresholds | None = None,
) -> ApplicationView:
    """Build the report's view model: header, findings, then the chosen executions.

    Executions are shown at `metrics_level`; `thresholds` (default `Thresholds()`) tunes the
    findings. Raises `UsageError` for an unknown metrics level or execution id.
    """
    if metrics_level not in METRICS_LEVELS:
        raise UsageError(f"unknown metrics level {metrics_level!r}; use none, summary or full")
    app = analysis.application
    chosen = select_executions(app, executions, top)
    findings, findings_str = build_finding_views(
        analysis, (e.execution_id for e in chosen), thresholds
    )
    # Work outside SQL (RDD jobs, or a log with no SQL at all) is listed when nothing is filtered.
    other_jobs = [] if executions or top else [j for j in app.jobs if j.execution_id is None]
    other_stage_ids = {s for j in other_jobs for s in j.stage_ids}
    other_stages = [s for s in app.stages if s.stage_id in other_stage_ids and s.n_task_attempts]
    task_rows: dict[tuple[int, int], list[TaskRow]] = {}
    if metrics_level != "none":
        keys = {
            (s.stage_id, s.attempt_id)
            for e in chosen
            for s in app.stages
            if s.stage_id in set(e.stage_ids)
        } | {(s.stage_id, s.attempt_id) for s in other_stages}
        task_rows = _task_rows(analysis, keys)
    rs = analysis.read_stats
    notes = []
    if rs.truncated_tail:
        notes.append("the log ends in a cut line or frame; what came before it was read")
    if rs.n_malformed_skipped:
        n_bad = rs.n_malformed_skipped
        notes.append(
            f"{fmt_count(n_bad)} malformed line{'' if n_bad == 1 else 's'} skipped (--lenient)"
        )
    if app.completed:
        status = "completed"
    elif analysis.source.in_progress:
        status = "in progress"
    else:
        status = "incomplete (no end event)"
    n_executors = sum(1 for e in app.executors if e.executor_id != "driver")
    app_id = app.app_id or "–"
    if app.attempt_id:
        app_id += f" (attempt {app.attempt_id})"
    return ApplicationView(
        name=app.name,
        app_id=app_id,
        spark_version=app.spark_version,
        user=app.user,
        log_name=PurePath(analysis.source.path).name,
        start_str=fmt_timestamp_ms(app.start_ms),
        duration_str=fmt_duration_ms(app.duration_ms),
        n_executors=n_executors,
        executors_str=(
            f"{n_executors} executor{'' if n_executors == 1 else 's'}"
            if n_executors
            else "driver only (local mode)"
        ),
        status=status,
        n_failed_tasks=sum(s.n_failed_attempts for s in app.stages),
        n_failed_stages=sum(1 for s in app.stages if s.status == "FAILED"),
        n_executions=len(app.executions),
        selection_str=_selection_str(len(chosen), len(app.executions), executions, top),
        metrics_level=metrics_level,
        log_notes=tuple(notes),
        generated_str=fmt_timestamp_ms(now_ms) if now_ms is not None else "",
        executions=tuple(
            build_execution_view(analysis, e, metrics_level, task_rows, findings) for e in chosen
        ),
        findings=findings,
        findings_str=findings_str,
        other_work_str=(
            f"{len(other_jobs)} job{'' if len(other_jobs) == 1 else 's'} outside SQL executions: "
            + ", ".join(str(j.job_id) for j in other_jobs)
            if other_jobs
            else ""
        ),
        other_stages=build_stage_views(other_stages, task_rows, metrics_level == "full")
        if metrics_level != "none"
        else (),
    )
