"""The HTML page of one application: header, findings with links, executions with their detail.

Every number is laid out, formatted and bounded here: plan graphs come with coordinates, panels
with worded metrics, stages with task quantiles, and per-task detail as JSON data for the page's
script, capped for huge stages and applications.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.plan_bounds import MAX_SHOWN_INPUTS, MAX_SHOWN_NODES
from analyzer.insights import Finding
from analyzer.model.application import Execution
from analyzer.model.plan import PlanNode
from analyzer.report.anchors import node_dom_id, plan_dom_id, stage_anchor
from analyzer.report.bounds import long_text
from analyzer.report.context import ContextView, build_context_view
from analyzer.report.cost import CostView, cost_view
from analyzer.report.execution import (
    UNDESCRIBED_STR,
    ExecutionView,
    build_execution_view,
    duration_str,
    execution_description,
    execution_stages,
    incomplete_note,
    known_duration_ms,
)
from analyzer.report.findings import (
    FindingGroupView,
    FindingsView,
    FindingView,
    build_findings_view,
    group_findings,
    kept_findings,
)
from analyzer.report.header import ApplicationHeaderView, build_header_view
from analyzer.report.html.panel import (
    MAX_TASK_ROWS_PER_NODE,
    MAX_TASK_ROWS_TOTAL,
    FindingRefView,
    NodePanelView,
    finding_ref,
    metric_histograms_data,
    task_rows_data,
)
from analyzer.report.html.plan_graph import (
    PlanGraphParts,
    PlanGraphView,
    build_plan_graph_view,
    shorten,
)
from analyzer.report.html.timeline import (
    MAX_TIMELINE_TASKS,
    MAX_TIMELINE_TASKS_TOTAL,
    TimelineView,
    build_timeline,
)
from analyzer.report.options import ReportOptions
from analyzer.report.selection import by_start, select_executions
from analyzer.report.stages import build_stage_views
from analyzer.report.streaming import StreamingSectionView, build_streaming_view
from analyzer.report.time_spent import TimeSpentView, build_time_spent_view, mostly_estimated
from analyzer.report.verdict import VerdictView, build_verdict
from analyzer.report.what_if import WhatIfView, build_what_if_view
from analyzer.units import fmt_pct

MAX_DETAILED_EXECUTIONS = 25
"""Unless executions are chosen explicitly, only the slowest this many get a detailed section."""
MAX_LISTED_EXECUTIONS = 2000
"""The list of SQL executions holds at most the slowest this many (about 0.5 KB of page each):
a day of a streaming query is tens of thousands of executions, which the JSON report lists."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class HtmlFindingView:
    """A finding of the Findings section with its links into the page."""

    finding: FindingView = field(metadata=_help("The finding, as every format words it."))
    execution_anchor: str = field(
        metadata=_help(
            "Element id of the section of its execution; empty when it has no execution or its "
            "execution has no section in the page."
        )
    )
    execution_str: str = field(metadata=_help("Link text to that section: `execution 3`."))
    node_dom_id: str = field(
        metadata=_help(
            "Element id of its operator in the final plan graph (a click opens the node's "
            "panel); empty without a node, or when the node is not drawn."
        )
    )
    node_str: str = field(metadata=_help("Link text to that node: `#12 SortMergeJoin`."))


@dataclass(frozen=True)
class HtmlFindingGroupView:
    """The findings of one rule: one line on the first screen, opening on each finding."""

    group: FindingGroupView = field(metadata=_help("The group, as every format words it."))
    items: tuple[HtmlFindingView, ...] = field(
        metadata=_help("Its findings with their links, costliest first.")
    )


@dataclass(frozen=True)
class ExecutionRowView:
    """One line of the summary's execution list."""

    anchor: str = field(
        metadata=_help("Element id of the execution's section, empty when it has none.")
    )
    execution_id: int = field(metadata=_help("Spark's SQL execution id."))
    description: str = field(metadata=_help("The description (often the query text), shortened."))
    status: str = field(metadata=_help("COMPLETED, FAILED or RUNNING."))
    duration_str: str = field(metadata=_help("Wall time."))
    duration_share: float = field(
        metadata=_help("0..1 relative to the slowest listed execution (bar width).")
    )
    app_share_str: str = field(
        metadata=_help("Its share of the application's wall time: `60.9 %`, or `–`.")
    )
    n_jobs: int = field(metadata=_help("Jobs run for the execution."))


@dataclass(frozen=True)
class HtmlExecutionView:
    """Everything the page shows about one SQL execution."""

    execution: ExecutionView = field(metadata=_help("What every format says about it."))
    plans: tuple[PlanGraphView, ...] = field(
        metadata=_help("Final plan first, then the initial one (AQE).")
    )
    panels: tuple[NodePanelView, ...] = field(
        metadata=_help("One panel per node of every plan version.")
    )
    timeline: TimelineView | None = field(metadata=_help("Task timeline, None without tasks."))
    plan_text: str = field(
        metadata=_help("Spark's physical plan description of the final plan.") | long_text()
    )
    data_id: str = field(
        metadata=_help("Element id of the execution's JSON data (histograms, task rows).")
    )
    data: dict[str, Any] = field(metadata=_help("Histograms and task rows for the page's script."))
    notes: tuple[str, ...] = field(
        metadata=_help("Whether the execution is incomplete, and what was capped or left out.")
    )
    finding_refs: tuple[FindingRefView, ...] = field(
        metadata=_help("Links to the findings pointing at this execution, by rank.")
    )
    stage_prefix: str = field(
        metadata=_help(
            "Prefix of the element ids of its stage rows: `exec-3-stage-` (then `5` or `5.1`)."
        )
    )


@dataclass(frozen=True)
class HtmlReportView:
    """The whole HTML page of one application."""

    title: str = field(metadata=_help("Page title."))
    header: ApplicationHeaderView = field(metadata=_help("The application header."))
    verdict: VerdictView = field(
        metadata=_help("How the application ended and, if it failed, the root cause.")
    )
    notes: tuple[str, ...] = field(
        metadata=_help("Report-wide caveats: the header's reading notes, what was left out.")
    )
    time_spent: TimeSpentView = field(metadata=_help("The section `Where the time went`."))
    what_if: WhatIfView = field(
        metadata=_help("The section `What if it had other task slots` (`report.what_if`).")
    )
    streaming: StreamingSectionView = field(
        metadata=_help("Structured Streaming queries with their batch charts (`_streaming`).")
    )
    cost: CostView = field(metadata=_help("What the run held and used, priced when asked."))
    findings: FindingsView = field(metadata=_help("The Findings section."))
    finding_links: tuple[HtmlFindingView, ...] = field(
        metadata=_help("The same findings with their links into the page, in order.")
    )
    finding_groups: tuple[HtmlFindingGroupView, ...] = field(
        metadata=_help("The same findings grouped by rule, in the order of each rule's first.")
    )
    executions_total: int = field(metadata=_help("SQL executions in the application."))
    executions_selected: int = field(
        metadata=_help("SQL executions the options chose (all, `--top N` or `--execution`).")
    )
    execution_rows: tuple[ExecutionRowView, ...] = field(
        metadata=_help("Listed executions, slowest first.")
    )
    executions: tuple[HtmlExecutionView, ...] = field(
        metadata=_help("Executions with a detailed section, by start time.")
    )
    text_report: str = field(
        metadata=_help("The text report for copying, or empty when unavailable.")
    )
    context: ContextView | None = field(
        default=None,
        metadata=_help("Jobs, stages outside SQL, executors and configuration (`_context`)."),
    )


def detail_note(n_detailed: int, n_selected: int, *, to_fit: bool = False) -> str:
    """The note that says the page details only some of the chosen executions; `to_fit` when
    the page's size cut them, not the task and timeline budgets.

    >>> detail_note(1, 27, to_fit=True)[:68]
    'To keep the page small, detailed sections cover the 1 slowest of 27 '
    """
    lead = "To keep the page small, detailed" if to_fit else "Detailed"
    return (
        f"{lead} sections cover the {n_detailed} slowest of {n_selected} executions; "
        "choose others with --execution or --top."
    )


@dataclass
class _Budget:
    """What is left of the page-wide caps on per-task rows and timeline bars."""

    task_rows: int = MAX_TASK_ROWS_TOTAL
    """Per-task rows the remaining executions may still list."""
    timeline_bars: int = MAX_TIMELINE_TASKS_TOTAL
    """Timeline bars the remaining executions may still draw."""


def _finding_link(
    finding: FindingView, execution: Execution | None, detailed: bool
) -> HtmlFindingView:
    """Link a finding to its execution's section and to its operator in the final plan."""
    node: PlanNode | None = None
    if execution is not None and finding.node_id is not None:
        try:
            node = execution.final_plan.graph.node(finding.node_id)
        except KeyError:  # a node id the final plan does not have: no node link
            node = None
    dom_id = ""
    if execution is not None and node is not None and detailed and not node.is_cluster:
        dom_id = node_dom_id(
            plan_dom_id(execution.execution_id, execution.final_plan.index), node.node_id
        )
    eid = finding.execution_id
    return HtmlFindingView(
        finding=finding,
        execution_anchor=f"exec-{eid}" if detailed else "",
        execution_str=f"execution {eid}" if detailed else "",
        node_dom_id=dom_id,
        node_str=f"#{node.node_id} {node.name}" if dom_id and node is not None else "",
    )


def _execution_view(
    analysis: Analysis,
    execution: Execution,
    budget: _Budget,
    findings: Sequence[FindingView],
    node_findings: dict[int, list[FindingView]],
) -> HtmlExecutionView:
    eid = execution.execution_id
    final_stats = analysis.node_stats.get(eid, {})
    stats_by_acc = {m.accumulator_id: m for ns in final_stats.values() for m in ns.metrics}
    # The initial plan and the final one: what AQE changed. Intermediate re-plans are left out.
    ordered = (
        [execution.final_plan, *execution.plans[:1]]
        if len(execution.plans) > 1
        else [execution.final_plan]
    )
    times = analysis.times.get(eid)
    self_times = {
        nt.node_id: nt.self_time_ms
        for nt in (times.nodes.values() if times else ())
        if nt.self_time_ms is not None
    }
    estimated_ids = frozenset(
        nt.node_id for nt in (times.nodes.values() if times else ()) if mostly_estimated(nt)
    )
    shown_plans = [analysis.shown_plan(execution, p) for p in ordered]
    parts: list[PlanGraphParts] = []
    for p, shown in zip(ordered, shown_plans, strict=True):
        # The final plan first: the initial plan's operators share its panels.
        parts.append(
            build_plan_graph_view(
                execution,
                p,
                stats_by_acc=stats_by_acc,
                final_stats=final_stats,
                node_findings=node_findings,
                self_times=self_times,
                final_panels=parts[0].panel_of_metrics if parts else {},
                estimated_ids=estimated_ids,
                shown=shown,
            )
        )
    plans = tuple(part.graph for part in parts)
    panels = [panel for part in parts for panel in part.panels]
    task_metrics = {k: v for part in parts for k, v in part.task_metrics.items()}
    types = {m.accumulator_id: m.metric_type for m in stats_by_acc.values()}
    if any(shown_plans):
        # Histograms of the metrics of the operators drawn only.
        types = {
            m.accumulator_id: m.metric_type
            for metrics in task_metrics.values()
            for m in metrics
            if m.accumulator_id in types
        }
    final_prefix = f"e{eid}-p{execution.final_plan.index}-"
    final_metrics = {k: v for k, v in task_metrics.items() if k.startswith(final_prefix)}
    per_node = min(MAX_TASK_ROWS_PER_NODE, budget.task_rows // max(len(final_metrics), 1))
    task_rows = task_rows_data(analysis, execution, final_metrics, per_node) if per_node else {}
    budget.task_rows -= sum(len(d["rows"]) for d in task_rows.values())
    notes = []
    for plan, shown in zip(ordered, shown_plans, strict=True):
        if shown is not None:
            which = "final plan" if plan is execution.final_plan else "initial plan"
            notes.append(
                f"The {which} has {shown.n_operators:,} operators: the graph draws the "
                f"{shown.n_operators - shown.n_hidden:,} nearest the output (at most "
                f"{MAX_SHOWN_NODES:,}, and {MAX_SHOWN_INPUTS} inputs of each), the others are "
                "in `… N more` nodes with their totals; the JSON report has every operator."
            )
    if incomplete_note(execution) == UNDESCRIBED_STR:
        notes.append(UNDESCRIBED_STR[0].upper() + UNDESCRIBED_STR[1:] + ".")
    elif not execution.ended:
        notes.append(
            "Incomplete: the log has no end event for this execution; it is shown with what "
            "arrived before the log ends."
        )
    if any(d["n_tasks"] > per_node for d in task_rows.values()) or (final_metrics and not per_node):
        notes.append(
            f"Per-task tables list at most {per_node} tasks per node (those with the largest main "
            "metric); statistics and histograms cover every task."
        )
    timeline = build_timeline(execution, analysis, min(MAX_TIMELINE_TASKS, budget.timeline_bars))
    if timeline is not None:
        budget.timeline_bars -= len(timeline.bars)
    if timeline is not None and timeline.note:
        notes.append(timeline.note)
    stages = build_stage_views(analysis, execution_stages(analysis, execution), with_quantiles=True)
    return HtmlExecutionView(
        execution=build_execution_view(analysis, execution, findings, stages),
        plans=plans,
        panels=tuple(panels),
        timeline=timeline,
        plan_text=execution.final_plan.physical_plan_description,
        data_id=f"data-e{eid}",
        data={"hist": metric_histograms_data(analysis, eid, types), "tasks": task_rows},
        notes=tuple(notes),
        finding_refs=tuple(
            finding_ref(f) for f in findings if f.execution_id == execution.execution_id
        ),
        stage_prefix=stage_anchor(eid, ""),
    )


def build_html_view(
    analysis: Analysis,
    findings: Sequence[Finding],
    options: ReportOptions,
    now_ms: int,
    text_report: str = "",
) -> HtmlReportView:
    """Build the page of one application; `now_ms` is the time printed as its generation time.

    `findings` are the analysis' findings, ranked (computed once by the caller); those of
    executions not shown are left out. Raises `UsageError` for an execution id the log does not
    hold.
    """
    app = analysis.application
    selection = select_executions(app, options)
    # Slowest first by the time each is known to have run: one with no end event by its start
    # to its last activity, as its bar and its `at least` say.
    known = {e.execution_id: known_duration_ms(analysis, e) or 0 for e in selection.executions}
    slowest = sorted(selection.executions, key=lambda e: (-known[e.execution_id], e.execution_id))
    detailed = slowest if options.executions else slowest[:MAX_DETAILED_EXECUTIONS]
    detailed_ids = {e.execution_id for e in detailed}
    longest = max(known.values(), default=0)
    listed = slowest[:MAX_LISTED_EXECUTIONS]
    rows = tuple(
        ExecutionRowView(
            anchor=f"exec-{e.execution_id}" if e.execution_id in detailed_ids else "",
            execution_id=e.execution_id,
            description=shorten(execution_description(analysis, e), 120),
            status=e.status,
            duration_str=duration_str(analysis, e),
            duration_share=known[e.execution_id] / longest if longest else 0.0,
            app_share_str=(
                fmt_pct(known[e.execution_id] / app.duration_ms) if app.duration_ms else "–"
            ),
            n_jobs=len(e.job_ids),
        )
        for e in listed
    )
    header = build_header_view(analysis, now_ms)
    notes = list(header.notes)
    if len(detailed) < len(slowest):
        notes.append(detail_note(len(detailed), len(slowest)))
    if len(listed) < len(slowest):
        notes.append(
            f"The list of SQL executions holds the {len(listed)} slowest of {len(slowest)}; "
            "the JSON report (--format json) lists every one."
        )
    findings_view = build_findings_view(app, findings, selection.ids, options.thresholds)
    by_id = {e.execution_id: e for e in selection.executions}
    links = tuple(
        _finding_link(
            f,
            by_id.get(f.execution_id) if f.execution_id is not None else None,
            f.execution_id in detailed_ids,
        )
        for f in findings_view.items
    )
    by_execution: dict[int, list[FindingView]] = defaultdict(list)
    by_node: dict[int, dict[int, list[FindingView]]] = defaultdict(lambda: defaultdict(list))
    for link in links:
        f = link.finding
        if f.execution_id is not None:
            by_execution[f.execution_id].append(f)
            if link.node_dom_id and f.node_id is not None:
                by_node[f.execution_id][f.node_id].append(f)
    budget = _Budget()
    by_rank = {link.finding.rank: link for link in links}
    groups = tuple(
        HtmlFindingGroupView(group=g, items=tuple(by_rank[r] for r in g.ranks))
        for g in group_findings(findings_view.items)
    )
    return HtmlReportView(
        title=f"EXPLAIN ANALYZE · {app.name}",
        header=header,
        verdict=build_verdict(
            analysis,
            header,
            kept_findings(findings, selection.ids),
            findings_view.items,
            detailed_ids,
        ),
        notes=tuple(notes),
        time_spent=build_time_spent_view(analysis, selection, findings_view.items),
        what_if=build_what_if_view(analysis, selection, options.what_if_slots),
        streaming=build_streaming_view(analysis, detailed_ids),
        cost=cost_view(analysis, options.prices),
        findings=findings_view,
        finding_links=links,
        finding_groups=groups,
        executions_total=len(app.executions),
        executions_selected=len(slowest),
        execution_rows=rows,
        executions=tuple(
            _execution_view(
                analysis,
                e,
                budget,
                by_execution.get(e.execution_id, []),
                by_node.get(e.execution_id, {}),
            )
            for e in by_start(detailed)
        ),
        text_report=text_report,
        context=build_context_view(
            analysis, is_filtered=selection.is_filtered, with_quantiles=True
        ),
    )
