"""The Markdown report's view: a summary for a ticket or a pull-request comment.

Status, where the time went, the top findings, and the hot part of the slowest executions'
plans: the operators with the most self time and the path from the plan's root down to them.
Every list is bounded, so the summary stays small whatever the log's size; the renderer drops
more detail if it still does not fit (`render.markdown_report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import ExecutionTime
from analyzer.insights import Finding
from analyzer.model.application import Execution
from analyzer.model.plan import PlanGraph
from analyzer.report.cost import CostView, cost_view
from analyzer.report.execution import execution_description, nested_str, unplaced_str
from analyzer.report.findings import FindingView, build_findings_view, worst_of
from analyzer.report.header import ApplicationHeaderView, build_header_view
from analyzer.report.options import ReportOptions
from analyzer.report.selection import by_duration, select_executions
from analyzer.report.streaming import StreamingSectionView, build_streaming_view
from analyzer.report.text import TopOperatorView, build_top_operators
from analyzer.report.time_spent import (
    MIN_EXECUTION_SHARE,
    TimeSpentView,
    build_time_spent_view,
)
from analyzer.report.verdict import build_verdict
from analyzer.report.what_if import WhatIfView, build_what_if_view
from analyzer.units import fmt_duration_ms, fmt_pct, one_line, plural

MAX_FINDINGS = 10
"""Findings listed (the rest are counted)."""
MAX_HOT_EXECUTIONS = 3
"""Slowest executions whose plans are shown (those taking at least `MIN_EXECUTION_SHARE` of the
slowest one's wall time)."""
HOT_OPERATORS = 3
"""Operators with the most self time whose paths from the root are drawn."""
MAX_TREE_LINES = 40
"""Lines of one hot-path tree (deeper paths keep their lower end)."""
MAX_TOP_OPERATORS = 5


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class HotPlanView:
    """The hot part of one slow execution's plan."""

    execution_id: int = field(metadata=_help("Spark's SQL execution id."))
    title_str: str = field(metadata=_help("`SQL execution 24 · 1m 11s · COMPLETED`."))
    description_str: str = field(metadata=_help("Its description, one line, cut."))
    top_operators: tuple[TopOperatorView, ...] = field(
        metadata=_help("Its operators with the most self time.")
    )
    tree_lines: tuple[str, ...] = field(
        metadata=_help(
            "The paths from the root to its hottest operators, as a tree: "
            "`│  └─ SortMergeJoin #30  5m 33s (8.9 %)  ◀ 4 ⚠ row-explosion`."
        )
    )
    n_elided: int = field(metadata=_help("Tree lines left out above the ones shown."))
    unplaced_str: str = field(
        default="",
        metadata=_help("Its metrics on no operator of its plans (`ExecutionView.unplaced_str`)."),
    )
    sub_executions_str: str = field(
        default="",
        metadata=_help(
            "When none of its operators has self time, the queries that ran inside it, where "
            "its work was: `sub-execution 4` (a micro-batch's write, a command's query)."
        ),
    )


@dataclass(frozen=True)
class MarkdownReportView:
    """The Markdown summary of one application."""

    header: ApplicationHeaderView = field(metadata=_help("The application header."))
    status_str: str = field(
        metadata=_help(
            "`FAILED · 1 of 3 SQL executions failed · 2 findings, the worst critical · 3 failed "
            "task attempts`: the verdict, then the counts."
        )
    )
    root_cause_str: str = field(
        metadata=_help("The first failure's root cause and where it failed, or empty.")
    )
    time_spent: TimeSpentView = field(metadata=_help("The section `Where the time went`."))
    what_if: WhatIfView = field(
        metadata=_help("The section `What if it had other task slots` (`report.what_if`).")
    )
    streaming: StreamingSectionView = field(
        metadata=_help("Structured Streaming queries (empty for other applications).")
    )
    cost: CostView = field(metadata=_help("What the run held and used, priced when asked."))
    findings: tuple[FindingView, ...] = field(metadata=_help("The first findings, by time lost."))
    n_findings_hidden: int = field(metadata=_help("Findings not listed."))
    hot_plans: tuple[HotPlanView, ...] = field(
        metadata=_help("The slowest executions' hot plan parts, slowest first.")
    )
    selection_str: str = field(metadata=_help("Which executions the report covers."))


def _one_line(text: str, limit: int = 160) -> str:
    return one_line(text, limit)


def _hot_lines(
    graph: PlanGraph,
    times: ExecutionTime | None,
    top: Sequence[TopOperatorView],
    findings: Sequence[FindingView],
) -> tuple[tuple[str, ...], int]:
    """The tree of the paths from the roots to the `top` operators (first consumer each step)."""
    wanted = [op.node_id for op in top[:HOT_OPERATORS]]
    if not wanted:
        return (), 0
    keep: set[int] = set()
    for node_id in wanted:
        current: int | None = node_id
        seen: set[int] = set()
        while current is not None and current not in seen:
            seen.add(current)
            keep.add(current)
            parent = graph.parent_of(current)
            current = parent.node_id if parent is not None else None
    rank = {op.node_id: op.rank for op in top[:HOT_OPERATORS]}
    marks: dict[int, list[str]] = {}
    for f in findings:
        if f.node_id is not None:
            marks.setdefault(f.node_id, []).append(f"{f.mark} {f.rule}")
    run_ms = (times.task_run_ms - times.failed_run_ms) if times else 0
    lines: list[str] = []
    stack: list[tuple[int, str, bool, bool]] = [
        (r.node_id, "", True, True) for r in reversed(graph.roots) if r.node_id in keep
    ]
    shown: set[int] = set()
    while stack:
        node_id, guides, is_last, is_root = stack.pop()
        if node_id in shown:
            continue
        shown.add(node_id)
        node = graph.node(node_id)
        nt = times.nodes.get(node_id) if times else None
        # Whole ms, as the table above and the text report's plan share them.
        ms = round(nt.self_time_ms) if nt is not None and nt.self_time_ms is not None else 0
        time_str = ""
        if ms > 0:
            time_str = fmt_duration_ms(ms) + (f" ({fmt_pct(ms / run_ms)})" if run_ms > 0 else "")
        mark = " ".join(
            ([f"◀ {rank[node_id]}"] if node_id in rank else []) + marks.get(node_id, [])
        )
        prefix = "" if is_root else guides + ("└─ " if is_last else "├─ ")
        parts = [f"{prefix}{node.name} #{node_id}", time_str, mark]
        lines.append("  ".join(p for p in parts if p))
        children = [c for c in graph.children_of(node_id) if c.node_id in keep]
        below = "" if is_root else guides + ("   " if is_last else "│  ")
        for i in range(len(children) - 1, -1, -1):
            stack.append((children[i].node_id, below, i == len(children) - 1, False))
    if len(lines) <= MAX_TREE_LINES:
        return tuple(lines), 0
    # Keep the deepest part, where the hot operators are.
    return tuple(lines[-MAX_TREE_LINES:]), len(lines) - MAX_TREE_LINES


def _hot_plan(
    analysis: Analysis, execution: Execution, findings: Sequence[FindingView]
) -> HotPlanView:
    graph = execution.final_plan.graph
    times = analysis.times.get(execution.execution_id)
    top = build_top_operators(graph, times, MAX_TOP_OPERATORS)
    at_execution = [f for f in findings if f.execution_id == execution.execution_id]
    lines, elided = _hot_lines(graph, times, top, at_execution)
    return HotPlanView(
        execution_id=execution.execution_id,
        title_str=(
            f"SQL execution {execution.execution_id} · "
            f"{fmt_duration_ms(execution.duration_ms)} · {execution.status}"
        ),
        description_str=_one_line(execution_description(analysis, execution)) or "(no description)",
        top_operators=top,
        tree_lines=lines,
        n_elided=elided,
        unplaced_str=unplaced_str(analysis.metrics_on_no_operator(execution)) if not top else "",
        sub_executions_str=nested_str(analysis.application, execution) if not top else "",
    )


def build_markdown_view(
    analysis: Analysis, findings: Sequence[Finding], options: ReportOptions
) -> MarkdownReportView:
    """Build the Markdown summary; `options` chooses executions and thresholds as for text."""
    app = analysis.application
    selection = select_executions(app, options)
    findings_view = build_findings_view(app, findings, selection.ids, options.thresholds)
    header = build_header_view(analysis, options.now_ms)
    items = findings_view.items
    worst = worst_of(
        [f for f in findings if f.execution_id is None or f.execution_id in selection.ids]
    )
    # The verdict leads, as in the text report and the HTML page: how the application ended
    # (a failed query or stream makes it FAILED) and its counts, then the findings.
    verdict = build_verdict(analysis, header, findings, items, set())
    status = [f"{verdict.status_str} · {verdict.summary_str}"]
    status.append(
        plural(len(items), "finding")
        + (f", the worst {worst.severity}" if worst is not None else "")
    )
    # The verdict's summary already counts failed and cancelled attempts, when there are any.
    if not header.n_failed_tasks:
        status.append("0 failed task attempts")
    root_cause = verdict.root_cause_str + (
        f" ({verdict.root_cause_where_str})" if verdict.root_cause_where_str else ""
    )
    slowest = by_duration(selection.executions)[:MAX_HOT_EXECUTIONS]
    longest = (slowest[0].duration_ms or 0) if slowest else 0
    hot = [
        e
        for i, e in enumerate(slowest)
        if i == 0 or (e.duration_ms or 0) >= MIN_EXECUTION_SHARE * longest
    ]
    return MarkdownReportView(
        header=header,
        status_str=" · ".join(status),
        root_cause_str=root_cause if verdict.root_cause_str else "",
        time_spent=build_time_spent_view(analysis, selection, items),
        what_if=build_what_if_view(analysis, selection, options.what_if_slots),
        streaming=build_streaming_view(analysis, set()),
        cost=cost_view(analysis, options.prices),
        findings=items[:MAX_FINDINGS],
        n_findings_hidden=max(0, len(items) - MAX_FINDINGS),
        hot_plans=tuple(_hot_plan(analysis, e, items) for e in hot),
        selection_str=selection.description_str,
    )
