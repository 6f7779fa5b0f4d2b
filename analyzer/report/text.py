"""View models of the text report: the plan as a tree of lines, top operators, the whole report.

Tree prefixes and every string a line prints are computed here; `templates/report.txt.j2` only
places them, and `render.text` fits the lines to the width.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import ExecutionTime, NodeTime
from analyzer.aggregate.node_metrics import NodeStats
from analyzer.insights import Finding
from analyzer.model.application import Execution
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.report.context import MAX_ROWS, ContextView, build_context_view, other_stages
from analyzer.report.cost import CostView, cost_view
from analyzer.report.execution import (
    ExecutionView,
    build_execution_view,
    execution_stages,
    node_detail,
)
from analyzer.report.findings import (
    FindingsView,
    FindingView,
    build_findings_view,
    kept_findings,
)
from analyzer.report.header import ApplicationHeaderView, build_header_view
from analyzer.report.metrics import MetricView, shown_metrics, stage_ids_str
from analyzer.report.options import ReportOptions
from analyzer.report.selection import select_executions
from analyzer.report.stages import build_stage_views
from analyzer.report.streaming import StreamingSectionView, build_streaming_view
from analyzer.report.time_spent import TimeSpentView, build_time_spent_view
from analyzer.report.verdict import VerdictView, build_verdict
from analyzer.report.what_if import WhatIfView, build_what_if_view
from analyzer.units import fmt_count, fmt_duration_ms, fmt_pct

TREE_GUIDE = 3
"""Columns one level of branching indents by: `├─ `, `│  `."""

MIN_LABEL_ROOM = 24
"""Columns a tree line keeps for an operator's name and id: deeper guides are elided first."""
MIN_GUIDE_LEVELS = 4
"""Levels of guides drawn however narrow the report (names are cut first)."""

SHARE_WIDTH = 7
"""Columns of the share figure (`100.0 %`)."""

DESC_LINES = {"none": 4, "summary": 4, "full": 24}
"""Lines of an operator's description in the details list, by metrics level (longer ones end
in `…`)."""

PLAN_LEGEND_NO_FIGURES = (
    "A single input is drawn under its consumer; ◆ stage boundary; ⚠N: finding N."
)
PLAN_LEGEND = (
    PLAN_LEGEND_NO_FIGURES[:-1]
    + "; self time: the operator's own task time, share: of the execution's task time"
    " (docs/metrics.md#time-attribution)."
)
"""What the tree's marks and figures mean, printed under it."""

ROWS_METRICS = ("number of output rows", "output rows")
"""The metrics whose total is an operator's rows out."""

TOP_LABEL = (
    "task time that belongs to each operator alone (measured by its own timers where it has "
    "them, the rest of its stage shared out by the rows each operator handled; "
    "docs/metrics.md#time-attribution), with its share of the execution's task time"
)


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class PlanNodeView:
    """An operator of the plan: its line in the compact tree and its entry in the details list.

    A node met again (a reused exchange or subquery with several consumers) has a tree line
    naming it and no details entry.
    """

    node_id: int = field(metadata=_help("Spark's plan-graph node id (as in the SQL tab)."))
    depth: int = field(metadata=_help("Distance from the root (0 for a root)."))
    is_root: bool = field(metadata=_help("A root of the plan graph (printed at the margin)."))
    prefix_str: str = field(
        metadata=_help(
            "Tree guides before the name, e.g. `│  ├─ `. A node's only input is drawn under it "
            "at the same column with no connector; guides deeper than the line can hold are "
            "replaced by `[+N]` (N levels not drawn)."
        )
    )
    name: str = field(metadata=_help("Operator name, e.g. `SortMergeJoin` (uncut)."))
    name_str: str = field(metadata=_help("The name as the tree line prints it: cut to fit."))
    pad_str: str = field(
        metadata=_help("Spaces after the tree label, so that the figures line up in columns.")
    )
    self_time_str: str = field(
        metadata=_help("Its self time (docs/metrics.md#time-attribution), or empty when none.")
    )
    share_str: str = field(
        metadata=_help("That self time's share of the execution's task run time, or empty.")
    )
    rows_str: str = field(metadata=_help("Total `number of output rows`, or empty without it."))
    detail_str: str = field(
        metadata=_help("The operator's description without its leading name (uncut).")
    )
    facts_str: str = field(
        metadata=_help(
            "What its details entry says after the name: ` · codegen 3 · stage 5 · self time "
            "4.2 s, 80.0 % measured · driver 1.1 s`; parts it lacks are left out."
        )
    )
    codegen_id: int | None = field(metadata=_help("N of the WholeStageCodegen (N) it runs in."))
    is_stage_boundary: bool = field(
        metadata=_help("An exchange: the stages below it write a shuffle or broadcast it reads.")
    )
    stage_ids: tuple[int, ...] = field(metadata=_help("Stages whose tasks updated its metrics."))
    is_reference: bool = field(
        metadata=_help("A reused exchange or subquery met again: its subtree is shown above.")
    )
    reference_str: str = field(metadata=_help("`(shown above)` for a reference, else empty."))
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
class PlanView:
    """An execution's final plan: a compact tree with key figures, then a details list."""

    nodes: tuple[PlanNodeView, ...] = field(metadata=_help("The operators, depth first."))
    has_figures: bool = field(
        metadata=_help("Tree lines carry self time, share and rows (not at `--metrics none`).")
    )
    header_pad_str: str = field(
        metadata=_help("Spaces after the header's `Plan`: its column titles sit over the figures.")
    )
    time_width: int = field(metadata=_help("Columns of the self-time figures (right-aligned)."))
    share_width: int = field(metadata=_help("Columns of the share figures (right-aligned)."))
    rows_width: int = field(metadata=_help("Columns of the rows-out figures (right-aligned)."))
    desc_lines: int = field(
        metadata=_help("Lines of a description the details list prints at most (then `…`).")
    )
    legend_str: str = field(metadata=_help("What the tree's marks and figures mean."))


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
    plan: PlanView | None = field(
        metadata=_help("The final plan: its tree and details; None without the plans section.")
    )
    top_operators: tuple[TopOperatorView, ...] = field(
        metadata=_help("The most time-consuming operators (empty at `--metrics none`).")
    )
    top_label: str = field(metadata=_help("What the top operators' time is, honestly."))


@dataclass(frozen=True)
class TextReportView:
    """The whole text report: header, findings, the chosen executions, work outside SQL."""

    header: ApplicationHeaderView = field(metadata=_help("The application header."))
    verdict: VerdictView = field(
        metadata=_help("How it ended, the root cause of a failure, the top finding.")
    )
    metrics_level: str = field(metadata=_help("none, summary or full."))
    selection_str: str = field(metadata=_help("Which executions are shown and why."))
    time_spent: TimeSpentView = field(metadata=_help("The section `Where the time went`."))
    what_if: WhatIfView = field(
        metadata=_help("The section `What if it had other task slots` (`report.what_if`).")
    )
    streaming: StreamingSectionView = field(
        metadata=_help("Structured Streaming queries, printed before where the time went.")
    )
    cost: CostView = field(metadata=_help("What the run held and used, priced when asked."))
    findings: FindingsView = field(metadata=_help("The Findings section."))
    executions: tuple[TextExecutionView, ...] = field(metadata=_help("Shown executions, by start."))
    context: ContextView = field(
        metadata=_help("Stages outside SQL, jobs, executors and configuration.")
    )
    sections: tuple[str, ...] = field(
        metadata=_help("The sections printed (`--sections`), in the report's order.")
    )


def _guides(levels: Sequence[bool]) -> str:
    """Guides for descendants: `│  ` under a node with later siblings, blanks otherwise."""
    return "".join("│  " if more else "   " for more in levels)


def _elided(levels: Sequence[bool], connector: str, max_prefix: int) -> str:
    """Draw a line's guides, eliding the outermost levels when they take over `max_prefix`.

    Levels are hidden four at a time, so neighbouring lines shift together, and shown as
    `[+N]` padded to the guides' grid: a line never restarts at the margin.

    >>> _elided([True, False], "└─ ", 30)
    '│     └─ '
    >>> _elided([True] * 9, "├─ ", 24)
    '[+4]  │  │  │  │  │  ├─ '
    """
    full = _guides(levels) + connector
    if len(full) <= max_prefix:
        return full
    excess_levels = -(-(len(full) - max_prefix) // TREE_GUIDE) + 2
    hidden = min(len(levels), -(-excess_levels // 4) * 4)
    marker = f"[+{hidden}] "
    marker += " " * (-len(marker) % TREE_GUIDE)
    return marker + _guides(levels[hidden:]) + connector


def _walk_tree(graph: PlanGraph, max_prefix: int) -> list[tuple[PlanNode, str, int, bool, bool]]:
    """Lay a plan graph out as tree lines: (node, prefix, depth, is root, met before).

    Depth first, children in Spark's order. Only a node with several inputs indents them (with
    `├─ ` and `└─ `); a single input is drawn under its consumer at the same column, so long
    chains of one-input operators stay at the margin. The walk keeps its own stack, so a plan of
    any depth lays out.
    """
    out: list[tuple[PlanNode, str, int, bool, bool]] = []
    seen: set[int] = set()
    # (node, guide levels above it, its connector, depth)
    stack: list[tuple[PlanNode, tuple[bool, ...], str, int]] = [
        (root, (), "", 0) for root in reversed(graph.roots)
    ]
    while stack:
        node, levels, connector, depth = stack.pop()
        again = node.node_id in seen
        seen.add(node.node_id)
        out.append((node, _elided(levels, connector, max_prefix), depth, depth == 0, again))
        children = [] if again else graph.children_of(node.node_id)
        below = levels if not connector else (*levels, connector == "├─ ")
        if len(children) == 1:
            stack.append((children[0], below, "", depth + 1))
            continue
        last = len(children) - 1
        for i in range(last, -1, -1):
            stack.append((children[i], below, "└─ " if i == last else "├─ ", depth + 1))
    return out


def _clip(text: str, width: int) -> str:
    """Cut `text` to `width` characters, ending in `…` when cut.

    >>> _clip("BroadcastHashJoin", 9), _clip("Sort", 9)
    ('Broadcas…', 'Sort')
    """
    return text if len(text) <= width else text[: width - 1] + "…"


def _rows_out(stats: NodeStats | None) -> int | None:
    """An operator's rows out: the total of its `number of output rows`, if it has one."""
    if stats is None:
        return None
    for m in stats.metrics:
        if m.name in ROWS_METRICS:
            return m.total
    return None


def _basis(time: NodeTime) -> str:
    """How a self time is known: `measured`, `estimated` or `80.0 % measured`."""
    measured = time.measured_ms / time.self_time_ms if time.self_time_ms else 0.0
    if measured >= 0.995:
        return "measured"
    if measured < 0.005:
        return "estimated"
    return f"{fmt_pct(measured)} measured"


def build_plan_view(
    graph: PlanGraph,
    stats: Mapping[int, NodeStats],
    options: ReportOptions,
    findings: Sequence[FindingView] = (),
    times: ExecutionTime | None = None,
) -> PlanView:
    """Lay out a plan graph as a compact tree with key figures, and a details entry per node.

    Each of `findings` that points at a node is attached to that node's first occurrence; one
    that points at a codegen cluster goes to the operator that carries the cluster's metrics.
    `times` gives the self times (none at `--metrics none`). Tree lines fit `options.width`:
    names are cut and the deepest guides elided before a line would wrap.
    """
    level = options.metrics
    has_figures = level != "none"
    by_node: dict[int, list[FindingView]] = {}
    for finding in findings:
        if finding.node_id is not None:
            by_node.setdefault(finding.node_id, []).append(finding)
    node_times = times.nodes if times is not None and has_figures else {}
    run_ms = times.task_run_ms - times.failed_run_ms if times is not None else 0
    self_ms: dict[int, int] = {}
    rows_str: dict[int, str] = {}
    for node in graph.nodes if has_figures else ():
        time = node_times.get(node.node_id)
        if time is not None and time.self_time_ms is not None and round(time.self_time_ms) > 0:
            self_ms[node.node_id] = round(time.self_time_ms)
        rows = _rows_out(stats.get(node.node_id))
        if rows is not None:
            rows_str[node.node_id] = fmt_count(rows)
    time_width = max([len("self time")] + [len(fmt_duration_ms(ms)) for ms in self_ms.values()])
    rows_width = max([len("rows out")] + [len(r) for r in rows_str.values()])
    figures_width = 2 + time_width + 1 + SHARE_WIDTH + 2 + rows_width if has_figures else 0
    label_cap = options.width - figures_width
    max_prefix = max(label_cap - MIN_LABEL_ROOM, MIN_GUIDE_LEVELS * TREE_GUIDE)
    clusters_shown: set[int] = set()
    # Each node's fields and label length: its padding is known once every label is.
    drafts: list[tuple[dict[str, Any], int]] = []
    for node, prefix, depth, is_root, again in _walk_tree(graph, max_prefix):
        node_stats = stats.get(node.node_id)
        cluster_name = ""
        cluster_metrics: tuple[MetricView, ...] = ()
        cid = node.cluster_id
        if not again and cid is not None and cid not in clusters_shown:
            clusters_shown.add(cid)
            cluster_name = graph.node(cid).name
            cluster_metrics = shown_metrics(stats.get(cid), level)
        node_findings: list[FindingView] = []
        if not again:
            node_findings += by_node.get(node.node_id, [])
            if cluster_name and cid is not None:
                node_findings += by_node.get(cid, [])
        node_findings.sort(key=lambda f: f.rank)
        stage_ids = node_stats.stage_ids if node_stats else ()
        is_boundary = "Exchange" in node.name
        reference = " (shown above)" if again else ""
        tail = (
            f" #{node.node_id}"
            + (" ◆" if is_boundary else "")
            + "".join(f" {f.mark}{f.rank}" for f in node_findings)
            + reference
        )
        name_str = _clip(node.name, max(label_cap - len(prefix) - len(tail), 8))
        label_len = len(prefix) + len(name_str) + len(tail)
        time = node_times.get(node.node_id) if not again else None
        ms = 0 if again else self_ms.get(node.node_id, 0)
        facts = []
        if node.codegen_id is not None:
            facts.append(f"codegen {node.codegen_id}")
        if stage_ids:
            facts.append(stage_ids_str(stage_ids))
        if is_boundary:
            facts.append("◆ stage boundary")
        if time is not None and ms > 0:
            facts.append(f"self time {fmt_duration_ms(ms)}, {_basis(time)}")
        if time is not None and round(time.driver_time_ms) > 0:
            facts.append(f"driver {fmt_duration_ms(round(time.driver_time_ms))}")
        fields = dict(
            node_id=node.node_id,
            depth=depth,
            is_root=is_root,
            prefix_str=prefix,
            name=node.name,
            name_str=name_str,
            self_time_str=fmt_duration_ms(ms) if ms > 0 else "",
            share_str=fmt_pct(ms / run_ms) if ms > 0 and run_ms > 0 else "",
            rows_str="" if again else rows_str.get(node.node_id, ""),
            detail_str=node_detail(node),
            facts_str="".join(f" · {fact}" for fact in facts),
            codegen_id=node.codegen_id,
            is_stage_boundary=is_boundary,
            stage_ids=stage_ids,
            is_reference=again,
            reference_str=reference.strip(),
            cluster_name=cluster_name,
            cluster_metrics=cluster_metrics,
            metrics=() if again else shown_metrics(node_stats, level),
            findings=tuple(node_findings),
        )
        drafts.append((fields, label_len))
    label_width = max((n for _, n in drafts), default=0)
    nodes = tuple(
        PlanNodeView(**fields, pad_str=" " * (label_width - n) if has_figures else "")
        for fields, n in drafts
    )
    return PlanView(
        nodes=nodes,
        has_figures=has_figures,
        header_pad_str=" " * max(label_width - len("Plan"), 0),
        time_width=time_width,
        share_width=SHARE_WIDTH,
        rows_width=rows_width,
        desc_lines=DESC_LINES[level],
        legend_str=PLAN_LEGEND if has_figures else PLAN_LEGEND_NO_FIGURES,
    )


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
        out.append(
            TopOperatorView(
                rank=i + 1,
                node_id=nt.node_id,
                name=graph.node(nt.node_id).name,
                time_ms=ms,
                time_str=fmt_duration_ms(ms),
                share_str=fmt_pct(ms / run_ms) if run_ms > 0 else "–",
                source_str=f"{stage_ids_str(nt.stage_ids)}; {_basis(nt)}",
                bar_fraction=ms / biggest,
            )
        )
    return tuple(out)


def build_text_view(
    analysis: Analysis,
    findings: Sequence[Finding],
    options: ReportOptions,
    bounded_plans: bool = False,
) -> TextReportView:
    """Build the text report's view model: header, findings, then the chosen executions.

    `findings` are the analysis' findings, ranked (computed once by the caller). With
    `bounded_plans`, a plan is drawn as the HTML page draws it: at most its operators nearest
    the output, the others in `… N more` nodes (`aggregate.plan_bounds`). Raises `UsageError`
    for an execution id the log does not hold.
    """
    view, executions = build_text_parts(analysis, findings, options, bounded_plans)
    return dataclasses.replace(view, executions=tuple(executions))


def build_text_parts(
    analysis: Analysis,
    findings: Sequence[Finding],
    options: ReportOptions,
    bounded_plans: bool = False,
) -> tuple[TextReportView, Iterator[TextExecutionView]]:
    """Build the text report's view model without its executions, and the executions' views,
    made one at a time as they are read (see `build_text_view`).

    A log of tens of thousands of executions (a day of a streaming query) makes a text report
    of tens of MB: its executions' views are never all in memory when the report is streamed.
    """
    app = analysis.application
    selection = select_executions(app, options)
    findings_view = build_findings_view(app, findings, selection.ids, options.thresholds)
    level = options.metrics
    sections = options.sections
    stage_level = options.stage_level
    with_executions = "plans" in sections or "stages" in sections
    # Work outside SQL (RDD jobs, or a log with no SQL at all) is listed when nothing is filtered.
    others = other_stages(analysis, selection.is_filtered) if stage_level != "none" else []
    stages_of = {e.execution_id: execution_stages(analysis, e) for e in selection.executions}
    task_rows = {}
    if stage_level == "full":  # one pass over the tasks for every stage's task lines
        keys = {(s.stage_id, s.attempt_id) for ss in stages_of.values() for s in ss}
        keys |= {(s.stage_id, s.attempt_id) for s in others[:MAX_ROWS]}
        task_rows = analysis.stage_task_rows(keys)

    def execution_view(e: Execution) -> TextExecutionView:
        stats = analysis.node_stats.get(e.execution_id, {})
        stages = (
            ()
            if stage_level == "none"
            else build_stage_views(
                analysis,
                stages_of[e.execution_id],
                with_tasks=level == "full",
                with_quantiles=True,
                quantile_rows="main" if level == "summary" else "all",
                task_rows=task_rows,
            )
        )
        shared = build_execution_view(analysis, e, findings_view.items, stages)
        graph = e.final_plan.graph
        with_figures = level != "none" and "plans" in sections
        drawn, drawn_stats = graph, stats
        times = analysis.times.get(e.execution_id) if with_figures else None
        shown = analysis.shown_plan(e, e.final_plan) if bounded_plans else None
        if shown is not None:
            drawn, drawn_stats = shown.graph, {**stats, **shown.fold_stats}
            if times is not None:
                times = dataclasses.replace(
                    times,
                    nodes={
                        **times.nodes,
                        **{
                            fold_id: NodeTime(
                                node_id=fold_id,
                                self_time_ms=ms,
                                measured_ms=0.0,
                                driver_time_ms=0.0,
                                stage_ids=shown.fold_stats[fold_id].stage_ids,
                            )
                            for fold_id, ms in shown.fold_self_time_ms.items()
                        },
                    },
                )
        return TextExecutionView(
            execution=shared,
            plan=build_plan_view(drawn, drawn_stats, options, shared.findings, times)
            if "plans" in sections
            else None,
            top_operators=build_top_operators(graph, analysis.times.get(e.execution_id))
            if with_figures
            else (),
            top_label=TOP_LABEL,
        )

    chosen = selection.executions if with_executions else ()
    context = build_context_view(
        analysis,
        is_filtered=selection.is_filtered,
        with_tasks=level == "full",
        with_quantiles=stage_level != "none",
        quantile_rows="main" if level == "summary" else "all",
        task_rows=task_rows,
        with_stages=stage_level != "none",
    )
    header = build_header_view(analysis, options.now_ms)
    verdict = build_verdict(
        analysis,
        header,
        kept_findings(findings, selection.ids),
        findings_view.items,
        set(selection.ids),
    )
    view = TextReportView(
        header=header,
        verdict=verdict,
        metrics_level=level,
        selection_str=selection.description_str,
        time_spent=build_time_spent_view(analysis, selection, findings_view.items),
        what_if=build_what_if_view(analysis, selection, options.what_if_slots),
        streaming=build_streaming_view(analysis, set(selection.ids)),
        cost=cost_view(analysis, options.prices),
        findings=findings_view,
        executions=(),
        context=context,
        sections=sections,
    )
    return view, (execution_view(e) for e in chosen)
