"""View models of the text report: the plan as a tree of lines, top operators, the whole report.

Tree prefixes and every string a line prints are computed here; `templates/report.txt.j2` only
places them, and `render.text` fits the lines to the width.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import ExecutionTime
from analyzer.aggregate.node_metrics import NodeStats
from analyzer.insights import Finding
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.report.execution import (
    ExecutionView,
    build_execution_view,
    execution_stages,
    node_detail,
)
from analyzer.report.findings import FindingsView, FindingView, build_findings_view
from analyzer.report.header import ApplicationHeaderView, build_header_view
from analyzer.report.metrics import MetricView, shown_metrics, stage_ids_str
from analyzer.report.options import ReportOptions
from analyzer.report.selection import select_executions
from analyzer.report.stages import StageView, build_stage_views, task_rows_by_stage
from analyzer.report.time_spent import TimeSpentView, build_time_spent_view
from analyzer.units import fmt_duration_ms, fmt_pct

TREE_MAX_LEVELS = 12
"""A node this deep starts again at the left margin (`⤷ `, naming its parent): short lines."""

TOP_LABEL = (
    "task time that belongs to each operator alone (measured by its own timers where it has "
    "them, the rest of its stage shared out by the rows each operator handled; "
    "docs/metrics.md#time-attribution), with its share of the execution's task time"
)


def _help(text: str) -> dict[str, str]:
    return {"help": text}


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
        metadata=_help("Findings pointing at this node (or its codegen cluster), by rank."),
    )


@dataclass(frozen=True)
class TopOperatorView:
    """An operator among those with the most self time in an execution."""

    rank: int = field(metadata=_help("1 for the most self time."))
    node_id: int = field(metadata=_help("Plan node id."))
    name: str = field(metadata=_help("Operator name."))
    time_ms: int = field(metadata=_help("Its self time, in ms."))
    time_str: str = field(metadata=_help("Its self time, formatted."))
    share_str: str = field(metadata=_help("Its share of the execution's task run time: `42.0 %`."))
    source_str: str = field(
        metadata=_help(
            "Where it ran and how its time is known: `stage 50; 96.6 % measured`, `measured` "
            "(its own timers), `estimated` (its share of its stage's untimed work)."
        )
    )
    bar_fraction: float = field(metadata=_help("time / the largest time in the list (bar widths)."))


@dataclass(frozen=True)
class TextExecutionView:
    """One SQL execution in the text report: its shared facts, the plan tree, top operators."""

    execution: ExecutionView = field(metadata=_help("What every format says about it."))
    nodes: tuple[PlanNodeView, ...] = field(metadata=_help("The final plan, depth first."))
    top_operators: tuple[TopOperatorView, ...] = field(
        metadata=_help("The most time-consuming operators (empty at `--metrics none`).")
    )
    top_label: str = field(metadata=_help("What the top operators' time is, honestly."))


@dataclass(frozen=True)
class TextReportView:
    """The whole text report: header, findings, the chosen executions, work outside SQL."""

    header: ApplicationHeaderView = field(metadata=_help("The application header."))
    metrics_level: str = field(metadata=_help("none, summary or full."))
    selection_str: str = field(metadata=_help("Which executions are shown and why."))
    time_spent: TimeSpentView = field(metadata=_help("The section `Where the time went`."))
    findings: FindingsView = field(metadata=_help("The Findings section."))
    executions: tuple[TextExecutionView, ...] = field(metadata=_help("Shown executions, by start."))
    other_work_str: str = field(
        metadata=_help(
            "Jobs that belong to no SQL execution (RDD or streaming work), e.g. `3 jobs "
            "outside SQL executions: 0, 1, 2`; empty when none, or when executions are filtered."
        ),
    )
    other_stages: tuple[StageView, ...] = field(
        metadata=_help("The stage attempts of those jobs, with their tasks at `full`."),
    )


def _guides(levels: list[bool]) -> str:
    """Guides for descendants: `│  ` under a node with later siblings, blanks otherwise."""
    return "".join("│  " if more else "   " for more in levels)


def build_plan_node_views(
    graph: PlanGraph,
    stats: dict[int, NodeStats],
    options: ReportOptions,
    findings: Sequence[FindingView] = (),
) -> tuple[PlanNodeView, ...]:
    """Lay out a plan graph as a tree (depth first, children in Spark's order) with metrics.

    Each of `findings` that points at a node is attached to that node's first occurrence; one
    that points at a codegen cluster goes to the operator that carries the cluster's metrics.
    The walk keeps its own stack, so a plan of any depth lays out.
    """
    level = options.metrics
    by_node: dict[int, list[FindingView]] = {}
    for finding in findings:
        if finding.node_id is not None:
            by_node.setdefault(finding.node_id, []).append(finding)
    out: list[PlanNodeView] = []
    seen: set[int] = set()
    clusters_shown: set[int] = set()
    # (node, guide levels above it, is the last child, depth, parent id)
    stack: list[tuple[PlanNode, list[bool], bool, int, int | None]] = [
        (root, [], True, 0, None) for root in reversed(graph.roots)
    ]
    while stack:
        node, levels, is_last, depth, parent_id = stack.pop()
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
        node_stats = stats.get(node.node_id)
        cluster_name = ""
        cluster_metrics: tuple[MetricView, ...] = ()
        cid = node.cluster_id
        if not again and cid is not None and cid not in clusters_shown:
            clusters_shown.add(cid)
            cluster_name = graph.node(cid).name
            cluster_metrics = shown_metrics(stats.get(cid), level)
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
                detail_prefix_str=_guides(below) + ("│ " if children else "  "),
                name=node.name,
                detail_str=node_detail(node),
                codegen_id=node.codegen_id,
                codegen_str=f"codegen {node.codegen_id}" if node.codegen_id is not None else "",
                is_stage_boundary="Exchange" in node.name,
                stage_ids=stage_ids,
                stage_ids_str=stage_ids_str(stage_ids),
                is_reference=again,
                reference_str=f"(see node {node.node_id})" if again else "",
                cluster_name=cluster_name,
                cluster_metrics=cluster_metrics,
                metrics=() if again else shown_metrics(node_stats, level),
                findings=tuple(sorted(node_findings, key=lambda f: f.rank)),
            )
        )
        last = len(children) - 1
        for i in range(last, -1, -1):
            stack.append((children[i], below, i == last, depth + 1, node.node_id))
    return tuple(out)


def build_top_operators(
    graph: PlanGraph, times: ExecutionTime | None, top: int = 5
) -> tuple[TopOperatorView, ...]:
    """Rank an execution's operators by self time (see `aggregate.attribution`), largest first."""
    if times is None:
        return ()
    ranked = sorted(
        (
            (round(nt.self_time_ms), nt)
            for nt in times.nodes.values()
            if nt.self_time_ms is not None and round(nt.self_time_ms) > 0
        ),
        key=lambda r: (-r[0], r[1].node_id),
    )[:top]
    biggest = ranked[0][0] if ranked else 1
    run_ms = times.task_run_ms - times.failed_run_ms
    out = []
    for i, (ms, nt) in enumerate(ranked):
        measured = nt.measured_ms / nt.self_time_ms if nt.self_time_ms else 0.0
        basis = (
            "measured"
            if measured >= 0.995
            else "estimated"
            if measured < 0.005
            else f"{fmt_pct(measured)} measured"
        )
        out.append(
            TopOperatorView(
                rank=i + 1,
                node_id=nt.node_id,
                name=graph.node(nt.node_id).name,
                time_ms=ms,
                time_str=fmt_duration_ms(ms),
                share_str=fmt_pct(ms / run_ms) if run_ms > 0 else "–",
                source_str=f"{stage_ids_str(nt.stage_ids)}; {basis}",
                bar_fraction=ms / biggest,
            )
        )
    return tuple(out)


def build_text_view(
    analysis: Analysis, findings: Sequence[Finding], options: ReportOptions
) -> TextReportView:
    """Build the text report's view model: header, findings, then the chosen executions.

    `findings` are the analysis' findings, ranked (computed once by the caller). Raises
    `UsageError` for an execution id the log does not hold.
    """
    app = analysis.application
    selection = select_executions(app, options)
    findings_view = build_findings_view(app, findings, selection.ids, options.thresholds)
    level = options.metrics
    # Work outside SQL (RDD jobs, or a log with no SQL at all) is listed when nothing is filtered.
    other_jobs = [] if selection.is_filtered else [j for j in app.jobs if j.execution_id is None]
    other_stage_ids = {s for j in other_jobs for s in j.stage_ids}
    other_stages = [s for s in app.stages if s.stage_id in other_stage_ids and s.n_task_attempts]
    stages_of = {e.execution_id: execution_stages(app, e) for e in selection.executions}
    task_rows = {}
    if level != "none":
        keys = {(s.stage_id, s.attempt_id) for ss in stages_of.values() for s in ss}
        keys |= {(s.stage_id, s.attempt_id) for s in other_stages}
        task_rows = task_rows_by_stage(analysis, keys)
    executions = []
    for e in selection.executions:
        stats = analysis.node_stats.get(e.execution_id, {})
        stages = (
            ()
            if level == "none"
            else build_stage_views(
                analysis, stages_of[e.execution_id], with_tasks=level == "full", task_rows=task_rows
            )
        )
        shared = build_execution_view(analysis, e, findings_view.items, stages)
        graph = e.final_plan.graph
        executions.append(
            TextExecutionView(
                execution=shared,
                nodes=build_plan_node_views(graph, stats, options, shared.findings),
                top_operators=()
                if level == "none"
                else build_top_operators(graph, analysis.times.get(e.execution_id)),
                top_label=TOP_LABEL,
            )
        )
    return TextReportView(
        header=build_header_view(analysis, options.now_ms),
        metrics_level=level,
        selection_str=selection.description_str,
        time_spent=build_time_spent_view(analysis, selection, findings_view.items),
        findings=findings_view,
        executions=tuple(executions),
        other_work_str=(
            f"{len(other_jobs)} job{'' if len(other_jobs) == 1 else 's'} outside SQL executions: "
            + ", ".join(str(j.job_id) for j in other_jobs)
            if other_jobs
            else ""
        ),
        other_stages=build_stage_views(
            analysis, other_stages, with_tasks=level == "full", task_rows=task_rows
        )
        if level != "none"
        else (),
    )
