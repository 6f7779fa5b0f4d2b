"""View models of a comparison of two runs, shared by the text, HTML and Markdown diffs.

`build_diff_view(result, options)` words a `compare.DiffResult` once: every figure formatted with
its change and ratio, the verdict, the plan changes, the findings new and resolved, settings
and capacity. The templates only place these fields.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.streaming import StreamingFigures
from analyzer.compare.figures import ExecutionFigures, ExecutorFigures, NodeFigures
from analyzer.compare.result import (
    CauseShare,
    ConfigChange,
    DiffResult,
    ExecutionDiff,
    NodeDelta,
)
from analyzer.compare.verdict import aqe_differences
from analyzer.insights import Finding
from analyzer.model.application import Application
from analyzer.redact import REDACTION_NOTE, Redactor, redact_view
from analyzer.report.advice_check import AdviceCheckView, build_advice_check_view
from analyzer.report.findings import FindingView, build_finding_view, node_name_of
from analyzer.report.header import ApplicationHeaderView, build_header_view
from analyzer.report.options import ReportOptions
from analyzer.units import (
    MISSING,
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_ratio,
    one_line,
    plural,
)

DIFF_DOC = "docs/diff.md"
DESCRIPTION_CHARS = 100
"""An execution's description is cut to this many characters in the diff."""
MAX_NODES = 8
"""Operators listed per execution (largest self-time change first) in text and Markdown …"""
MAX_NODES_HTML = 40
"""… and in HTML and JSON."""
NOT_SET = "(not set)"

CAUSE_WORDS: dict[str, str] = {
    "no-change": "no significant change",
    "unrelated": "unrelated applications",
    "incomplete": "not comparable: a query's end is not logged",
    "faster": "faster",
    "failures": "failures and retries",
    "more-input": "more input",
    "fewer-cores": "fewer cores",
    "partitions": "more partitions and tasks",
    "plan-change": "a plan change",
    "skew": "skew",
    "spill": "spill",
    "slower-tasks": "slower tasks, same plan and input",
    "outside-sql": "time outside SQL executions",
}
"""How each verdict cause is worded in a headline."""

TIER_WORDS: dict[str, str] = {
    "plan and description": "same plan and description",
    "plan": "same plan",
    "shape and description": "same plan shape and description",
    "description": "same description",
    "shape": "same plan shape",
}


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def _one_line(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    return one_line(text, limit)


def _signed(change: float, fmt: Callable[[float], str]) -> str:
    if change == 0:
        return "±0"
    return ("+" if change > 0 else "−") + fmt(abs(change))


def _ratio(before: float | None, after: float | None) -> str:
    if before is None or after is None or before <= 0 or before == after:
        return ""
    return fmt_ratio(after / before)


@dataclass(frozen=True)
class DeltaView:
    """One figure in both runs: the two values, the change and the ratio."""

    label: str = field(metadata=_help("What the figure is, e.g. `wall time`."))
    baseline_str: str = field(metadata=_help("The baseline's value, formatted (`–`: none)."))
    candidate_str: str = field(metadata=_help("The candidate's value, formatted."))
    change_str: str = field(metadata=_help("`+2.5 s`, `−16`, `±0`, or empty when unknown."))
    ratio_str: str = field(metadata=_help("`×2.2` (candidate / baseline), or empty."))
    changed: bool = field(metadata=_help("The values differ."))
    present: bool = field(metadata=_help("At least one run has a value."))
    grew: bool = field(metadata=_help("The candidate's value is larger (a CSS class)."))


def _delta(
    label: str,
    before: float | None,
    after: float | None,
    fmt: Callable[[float], str],
    missing_is_zero: bool = False,
) -> DeltaView:
    """Word one figure of both runs; with `missing_is_zero` a side without it changes from 0."""
    known = (before is not None and after is not None) or (
        missing_is_zero and (before is not None or after is not None)
    )
    return DeltaView(
        label=label,
        baseline_str=fmt(before) if before is not None else MISSING,
        candidate_str=fmt(after) if after is not None else MISSING,
        change_str=_signed((after or 0) - (before or 0), fmt) if known else "",
        ratio_str=_ratio(before, after),
        changed=(before or 0) != (after or 0),
        present=before is not None or after is not None,
        grew=known and (after or 0) > (before or 0),
    )


@dataclass(frozen=True)
class NodeDeltaView:
    """One operator in both runs (or in one), by its self-time change."""

    status: str = field(metadata=_help("`same`, `switched`, `added` or `removed`."))
    name_str: str = field(
        metadata=_help(
            "`Window #9`, `Filter #24 → #34` (its ids differ), `BroadcastHashJoin #11 → "
            "SortMergeJoin #15`, `Sort #12`."
        )
    )
    status_str: str = field(
        metadata=_help("`switched`, `candidate only`, `baseline only`, or empty.")
    )
    self_time: DeltaView = field(metadata=_help("Self time (docs/metrics.md#time-attribution)."))
    rows: DeltaView = field(metadata=_help("Output rows."))
    bytes: DeltaView = field(metadata=_help("Bytes read, written or shuffled."))
    spill: DeltaView = field(metadata=_help("Spill size."))


def _node_str(n: NodeFigures | None) -> str:
    return "" if n is None else f"{n.name} #{n.node_id}"


def _node_view(d: NodeDelta) -> NodeDeltaView:
    b, c = d.baseline, d.candidate
    if b is not None and c is not None and d.status == "same":
        name = _node_str(c) if b.node_id == c.node_id else f"{_node_str(b)} → #{c.node_id}"
    elif d.status == "switched":
        name = f"{_node_str(b)} → {_node_str(c)}"
    else:
        name = _node_str(c or b)

    def fig(get: Callable[[NodeFigures], float | int | None]) -> tuple[float | None, ...]:
        return (get(b) if b else None, get(c) if c else None)

    time_b, time_c = fig(lambda n: n.self_time_ms)
    rows_b, rows_c = fig(lambda n: n.rows)
    bytes_b, bytes_c = fig(lambda n: n.bytes)
    spill_b, spill_c = fig(lambda n: n.spill_bytes)
    return NodeDeltaView(
        status=d.status,
        name_str=name,
        status_str={"same": "", "switched": "switched", "added": "candidate only"}.get(
            d.status, "baseline only"
        ),
        self_time=_delta("self time", time_b, time_c, fmt_duration_ms, missing_is_zero=True),
        rows=_delta("rows", rows_b, rows_c, fmt_count),
        bytes=_delta("bytes", bytes_b, bytes_c, fmt_bytes),
        spill=_delta("spill", spill_b, spill_c, fmt_bytes),
    )


@dataclass(frozen=True)
class ConfigChangeView:
    """A setting that differs between the runs."""

    key: str = field(metadata=_help("The property name."))
    baseline_str: str = field(metadata=_help("Its baseline value, or `(not set)`."))
    candidate_str: str = field(metadata=_help("Its candidate value, or `(not set)`."))


def _config_views(changes: Sequence[ConfigChange]) -> tuple[ConfigChangeView, ...]:
    return tuple(
        ConfigChangeView(
            key=c.key,
            baseline_str=c.baseline if c.baseline is not None else NOT_SET,
            candidate_str=c.candidate if c.candidate is not None else NOT_SET,
        )
        for c in changes
    )


@dataclass(frozen=True)
class ExecutionDiffView:
    """One query in both runs."""

    rank: int = field(metadata=_help("1 for the largest wall-time change."))
    anchor: str = field(metadata=_help("Element id of its section in the HTML page."))
    title_str: str = field(
        metadata=_help("`SQL execution 4`, or `SQL execution 4 → 7` when the ids differ.")
    )
    description_str: str = field(metadata=_help("The candidate's description, one line, cut."))
    tier_str: str = field(metadata=_help("How it was paired: `same plan shape and description`."))
    wall: DeltaView = field(metadata=_help("Its wall time in both runs."))
    cause: str = field(metadata=_help("The verdict rule that fired for it, or empty."))
    cause_str: str = field(metadata=_help("That cause, worded (`more input`), or empty."))
    reason: str = field(metadata=_help("The rule's reason, or empty (no significant change)."))
    figures: tuple[DeltaView, ...] = field(
        metadata=_help("Task time, tasks, input, partitions, shuffle, spill, failures.")
    )
    plan_changes: tuple[str, ...] = field(
        metadata=_help("Operators switched, added, removed; AQE decisions that differ.")
    )
    nodes: tuple[NodeDeltaView, ...] = field(
        metadata=_help("Operators with the largest self-time change first (those that changed).")
    )
    n_nodes_hidden: int = field(metadata=_help("Changed operators not listed."))
    config: tuple[ConfigChangeView, ...] = field(
        metadata=_help("SQL settings the session changed for it that differ.")
    )


def _figures(b: ExecutionFigures, c: ExecutionFigures) -> tuple[DeltaView, ...]:
    rows = [
        _delta("task time", b.task_run_ms, c.task_run_ms, fmt_duration_ms),
        _delta("tasks", b.n_tasks, c.n_tasks, fmt_count),
        _delta("input rows", b.input_rows, c.input_rows, fmt_count),
        _delta("input bytes", b.input_bytes, c.input_bytes, fmt_bytes),
        _delta("files read", b.files_read, c.files_read, fmt_count),
        _delta("partitions read", b.partitions_read, c.partitions_read, fmt_count),
        _delta("shuffle partitions", b.shuffle_partitions, c.shuffle_partitions, fmt_count),
        _delta("shuffle written", b.shuffle_bytes, c.shuffle_bytes, fmt_bytes),
        _delta("spill", b.spill_bytes, c.spill_bytes, fmt_bytes),
        _delta("stragglers", b.straggler_ms, c.straggler_ms, fmt_duration_ms),
        _delta("failed tasks", b.n_failed_tasks, c.n_failed_tasks, fmt_count),
        _delta("stage retries", b.n_stage_retries, c.n_stage_retries, fmt_count),
    ]
    always = {"task time", "tasks"}
    return tuple(r for r in rows if r.label in always or r.changed)


def _plan_changes(e: ExecutionDiff) -> tuple[str, ...]:
    out = [
        f"{'join strategy' if s.is_join else 'operator'} switched: #{s.baseline_node_id} "
        f"{s.baseline_name} → #{s.candidate_node_id} {s.candidate_name}"
        for s in e.plan.switches
    ]
    if e.plan.moved:
        out.append(
            "moved to another place in the plan: " + ", ".join(f"{n}× {k}" for k, n in e.plan.moved)
        )
    if only := e.plan.only_in("candidate"):
        out.append("only in the candidate: " + ", ".join(f"{n}× {k}" for k, n in only))
    if only := e.plan.only_in("baseline"):
        out.append("only in the baseline: " + ", ".join(f"{n}× {k}" for k, n in only))
    out += [f"AQE decision: {d}" for d in aqe_differences(e.baseline, e.candidate)]
    return tuple(out)


def _wall_delta(baseline: ExecutionFigures, candidate: ExecutionFigures) -> DeltaView:
    """The wall times of a pair; one with no end event is `–`, its 0 ms no duration to compare,
    and the change says why there is none."""
    open_b, open_c = not baseline.ended, not candidate.ended
    delta = _delta(
        "wall time",
        None if open_b else baseline.wall_ms,
        None if open_c else candidate.wall_ms,
        fmt_duration_ms,
    )
    return dataclasses.replace(delta, change_str="no end event") if open_b or open_c else delta


def _execution_view(
    rank: int, e: ExecutionDiff, causes: Mapping[tuple[int, int], tuple[str, str]], max_nodes: int
) -> ExecutionDiffView:
    b_id, c_id = e.baseline.execution_id, e.candidate.execution_id
    cause, reason = causes.get((b_id, c_id), ("", ""))
    changed = [d for d in e.nodes if d.status != "same" or round(d.change_ms) != 0]
    return ExecutionDiffView(
        rank=rank,
        anchor=f"diff-{b_id}-{c_id}",
        title_str=f"SQL execution {c_id}" if b_id == c_id else f"SQL execution {b_id} → {c_id}",
        description_str=_one_line(e.description) or "(no description)",
        tier_str=TIER_WORDS[e.tier],
        wall=_wall_delta(e.baseline, e.candidate),
        cause=cause,
        cause_str=CAUSE_WORDS.get(cause, ""),
        reason=reason,
        figures=_figures(e.baseline, e.candidate),
        plan_changes=_plan_changes(e),
        nodes=tuple(_node_view(d) for d in changed[:max_nodes]),
        n_nodes_hidden=max(0, len(changed) - max_nodes),
        config=_config_views(e.config),
    )


@dataclass(frozen=True)
class UnmatchedView:
    """An execution of one run with no partner in the other."""

    side: str = field(metadata=_help("`baseline` or `candidate`."))
    execution_id: int = field(metadata=_help("Its id in that run."))
    description_str: str = field(metadata=_help("Its description, one line, cut."))
    wall_str: str = field(metadata=_help("Its wall time."))
    status: str = field(metadata=_help("COMPLETED, FAILED or RUNNING."))


def _unmatched(side: str, app: Application, figures: ExecutionFigures) -> UnmatchedView:
    desc = next(
        (e.shown_description for e in app.executions if e.execution_id == figures.execution_id),
        "",
    )
    return UnmatchedView(
        side=side,
        execution_id=figures.execution_id,
        description_str=_one_line(desc) or "(no description)",
        wall_str=fmt_duration_ms(figures.wall_ms),
        status=figures.status,
    )


@dataclass(frozen=True)
class CauseShareView:
    """A cause that fired, with the part of the change it explains."""

    cause: str = field(metadata=_help("The cause id, e.g. `plan-change`."))
    cause_str: str = field(metadata=_help("The cause, worded."))
    change_str: str = field(metadata=_help("The wall-time change it explains: `+2.6 s`."))
    reasons: tuple[str, ...] = field(metadata=_help("Its reasons, largest change first."))
    docs_anchor: str = field(metadata=_help("`docs/diff.md#plan-change`."))


@dataclass(frozen=True)
class DiffVerdictView:
    """The answer first: what changed, and what explains most of it."""

    cause: str = field(metadata=_help("The cause id (docs/diff.md#the-verdict); a CSS class."))
    headline_str: str = field(
        metadata=_help("`slower by 29.6 s (×2.6): more input`, `no significant change`, …")
    )
    time_str: str = field(
        metadata=_help("`SQL executions 18.2 s → 47.7 s · application 20.6 s → 50.6 s`.")
    )
    reason: str = field(metadata=_help("Why, with the figures."))
    notes: tuple[str, ...] = field(
        metadata=_help(
            "What weakens the comparison: `the baseline's main work failed: SQL execution 24 "
            "failed, …`; empty when nothing does."
        )
    )
    others: tuple[CauseShareView, ...] = field(
        metadata=_help("The other causes that fired, by the change they explain.")
    )
    docs_anchor: str = field(metadata=_help("Where the cause is explained."))


def _verdict_view(result: DiffResult) -> DiffVerdictView:
    v = result.verdict
    change = v.candidate_sql_ms - v.baseline_sql_ms
    app_change = (
        (v.candidate_app_ms - v.baseline_app_ms)
        if v.candidate_app_ms is not None and v.baseline_app_ms is not None
        else None
    )
    measure = change if v.cause != "outside-sql" or app_change is None else app_change
    base = v.baseline_sql_ms if measure == change else (v.baseline_app_ms or 0)
    ratio = _ratio(base, base + measure)
    if v.cause in ("no-change", "unrelated", "incomplete"):
        headline = CAUSE_WORDS[v.cause]
    else:
        word = "slower" if measure >= 0 else "faster"
        headline = f"{word} by {fmt_duration_ms(abs(measure))}" + (f" ({ratio})" if ratio else "")
        if v.cause != "faster":
            headline += f": {CAUSE_WORDS[v.cause]}"
    time_parts = [
        f"SQL executions {fmt_duration_ms(v.baseline_sql_ms)} → "
        f"{fmt_duration_ms(v.candidate_sql_ms)}"
    ]
    if v.baseline_app_ms is not None or v.candidate_app_ms is not None:
        time_parts.append(
            f"application {fmt_duration_ms(v.baseline_app_ms)} → "
            f"{fmt_duration_ms(v.candidate_app_ms)}"
        )
    return DiffVerdictView(
        cause=v.cause,
        headline_str=headline,
        time_str=" · ".join(time_parts),
        reason=v.reason,
        notes=v.notes,
        others=tuple(_share_view(s) for s in v.shares[1:]),
        docs_anchor=f"{DIFF_DOC}#{v.cause}",
    )


def _share_view(s: CauseShare) -> CauseShareView:
    return CauseShareView(
        cause=s.cause,
        cause_str=CAUSE_WORDS[s.cause],
        change_str=_signed(s.change_ms, fmt_duration_ms),
        reasons=s.reasons,
        docs_anchor=f"{DIFF_DOC}#{s.cause}",
    )


def _capacity(b: ExecutorFigures, c: ExecutorFigures) -> tuple[DeltaView, ...]:
    rows = (
        _delta("executors", b.n_executors, c.n_executors, fmt_count),
        _delta("peak cores", b.peak_cores, c.peak_cores, fmt_count),
        _delta("cores of all executors", b.total_cores, c.total_cores, fmt_count),
        _delta("executors removed", b.n_removed, c.n_removed, fmt_count),
    )
    return tuple(r for r in rows if r.changed or r.label == "peak cores")


@dataclass(frozen=True)
class StreamingDiffView:
    """One streaming query in both runs: its batches and rates side by side."""

    label: str = field(metadata=_help("The query's name, or the start of its id."))
    status_str: str = field(
        metadata=_help("`stopped → stopped`, or `only in the baseline` / `only in the candidate`.")
    )
    figures: tuple[DeltaView, ...] = field(
        metadata=_help(
            "Batches, trigger interval, median and longest batch, late batches and the time "
            "they ran past the trigger, input and processing rates, rows read."
        )
    )


def _rate_str(value: float) -> str:
    return f"{value:,.0f} rows/s"


STREAMING_FIGURES: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("batches", "n_batches", fmt_count),
    ("trigger interval", "trigger_interval_ms", fmt_duration_ms),
    ("median batch", "median_trigger_ms", fmt_duration_ms),
    ("longest batch", "max_trigger_ms", fmt_duration_ms),
    ("late batches", "n_late_batches", fmt_count),
    ("past the trigger", "late_ms", fmt_duration_ms),
    ("input rate", "mean_input_rows_per_s", _rate_str),
    ("processing rate", "mean_processed_rows_per_s", _rate_str),
    ("rows read", "n_input_rows", fmt_count),
)
"""The figures of a streaming query the diff sets side by side: (label, `StreamingFigures`
field, format)."""


def _streaming_views(result: DiffResult) -> tuple[StreamingDiffView, ...]:
    views = []
    for d in result.streaming:
        b, c = d.baseline, d.candidate
        if b is not None and c is not None:
            status = f"{b.query.status} → {c.query.status}"
        else:
            status = "only in the baseline" if c is None else "only in the candidate"

        def side(fig: StreamingFigures | None, name: str) -> float | None:
            value = None if fig is None else getattr(fig, name)
            # A rate is shown in whole rows a second: its change is that of the shown values
            # (201 → 199 is −2, not the −1 of 200.53 and 199.37).
            return round(value) if isinstance(value, float) and math.isfinite(value) else value

        rows = tuple(
            _delta(label, side(b, name), side(c, name), fmt)
            for label, name, fmt in STREAMING_FIGURES
        )
        views.append(StreamingDiffView(label=d.label, status_str=status, figures=rows))
    return tuple(views)


@dataclass(frozen=True)
class DiffView:
    """The whole comparison, as every format shows it."""

    baseline: ApplicationHeaderView = field(metadata=_help("The baseline's header."))
    candidate: ApplicationHeaderView = field(metadata=_help("The candidate's header."))
    title_str: str = field(metadata=_help("`sea-nightly-orders`, or `a vs b` when names differ."))
    verdict: DiffVerdictView = field(metadata=_help("The verdict."))
    capacity: tuple[DeltaView, ...] = field(
        metadata=_help("Peak cores, and the executor counts that differ, side by side.")
    )
    streaming: tuple[StreamingDiffView, ...] = field(
        metadata=_help("Each streaming query of either run, its batches and rates side by side.")
    )
    executions_str: str = field(
        metadata=_help("`2 paired, 1 only in the baseline, 0 only in the candidate`.")
    )
    executions: tuple[ExecutionDiffView, ...] = field(
        metadata=_help("Paired executions, largest change first (`--top` keeps the first N).")
    )
    n_executions_hidden: int = field(metadata=_help("Paired executions not shown (`--top`)."))
    unmatched: tuple[UnmatchedView, ...] = field(
        metadata=_help("Executions with no partner: the baseline's, then the candidate's.")
    )
    new_findings: tuple[FindingView, ...] = field(
        metadata=_help("Findings only in the candidate, numbered, by time lost.")
    )
    resolved_findings: tuple[FindingView, ...] = field(
        metadata=_help("Findings only in the baseline, numbered, by time lost.")
    )
    crossed_findings: tuple[FindingView, ...] = field(
        metadata=_help(
            "Findings in one run only over their significance threshold, but in both under it "
            "(the condition in both; its time crossed the threshold): the candidate's, then the "
            "baseline's, each title saying which."
        )
    )
    findings_str: str = field(metadata=_help("`1 new, 0 resolved, 3 in both`."))
    advice: tuple[AdviceCheckView, ...] = field(
        metadata=_help("The baseline's advice the candidate applied, predicted against measured.")
    )
    config: tuple[ConfigChangeView, ...] = field(metadata=_help("Spark properties that differ."))
    config_note_str: str = field(
        metadata=_help("`4 per-run properties left out (ids, ports, start times)`, or empty.")
    )
    generated_str: str = field(metadata=_help("When it was made (UTC), or empty."))


def _findings(
    app: Application, findings: Sequence[Finding], prefix: str
) -> tuple[FindingView, ...]:
    return tuple(
        dataclasses.replace(
            build_finding_view(f, i, node_name_of(app, f)),
            dom_id=f"{prefix}-{i}",
            ref_str="",
            node_ref_str="",
        )
        for i, f in enumerate(findings, start=1)
    )


def _crossed(
    app: Application, findings: Sequence[Finding], other: str, prefix: str
) -> tuple[FindingView, ...]:
    """Views of findings over their threshold in one run whose rule fires under it in the
    `other` run, their titles saying so."""
    return tuple(
        dataclasses.replace(
            view,
            title=f"{view.title} (in the {other} too, under its significance threshold there)",
        )
        for view in _findings(app, findings, prefix)
    )


def build_diff_view(result: DiffResult, options: ReportOptions) -> DiffView:
    """Word a comparison for every format; `options.top` keeps the N largest changes and
    `options.fmt` chooses how many operators each execution lists."""
    app_b, app_c = result.baseline.application, result.candidate.application
    causes = {
        (ec.baseline_id, ec.candidate_id): (ec.cause, ec.reason) for ec in result.verdict.executions
    }
    max_nodes = MAX_NODES_HTML if options.fmt in ("html", "json") else MAX_NODES
    shown = result.executions[: options.top] if options.top else result.executions
    n_paired = len(result.executions)
    findings = result.findings
    # Unrelated runs' findings are each run's own: none is new or resolved by the other.
    unrelated = result.verdict.cause == "unrelated"
    title = app_c.name if app_b.name == app_c.name else f"{app_b.name} vs {app_c.name}"
    candidate = build_header_view(result.candidate, options.now_ms)
    return DiffView(
        baseline=build_header_view(result.baseline, None),
        candidate=candidate,
        title_str=title,
        verdict=_verdict_view(result),
        capacity=_capacity(result.baseline_executors, result.candidate_executors),
        streaming=_streaming_views(result),
        executions_str=(
            f"{n_paired} paired, {len(result.baseline_only)} only in the baseline, "
            f"{len(result.candidate_only)} only in the candidate"
        ),
        executions=tuple(
            _execution_view(i, e, causes, max_nodes) for i, e in enumerate(shown, start=1)
        ),
        n_executions_hidden=n_paired - len(shown),
        unmatched=tuple(
            [_unmatched("baseline", app_b, f) for f in result.baseline_only]
            + [_unmatched("candidate", app_c, f) for f in result.candidate_only]
        ),
        new_findings=() if unrelated else _findings(app_c, findings.only(findings.new), "new"),
        resolved_findings=()
        if unrelated
        else _findings(app_b, findings.only(findings.resolved), "resolved"),
        crossed_findings=()
        if unrelated
        else (
            *_crossed(app_c, findings.crossed_of(findings.new), "baseline", "crossed-new"),
            *_crossed(app_b, findings.crossed_of(findings.resolved), "candidate", "crossed-old"),
        ),
        findings_str=(
            "not compared: the runs are unrelated (each run's report has its own)"
            if unrelated
            else f"{len(findings.only(findings.new))} new, "
            f"{len(findings.only(findings.resolved))} resolved, "
            f"{plural(len(findings.kept), 'finding')} in both"
            + (
                f", {len(findings.crossed)} over its threshold in one run only"
                if findings.crossed
                else ""
            )
        ),
        advice=tuple(build_advice_check_view(o) for o in result.advice),
        config=_config_views(result.config),
        config_note_str=(
            f"{plural(result.n_config_per_run, 'per-run property', 'per-run properties')} left "
            "out (ids, ports, start times)"
            if result.n_config_per_run
            else ""
        ),
        generated_str=candidate.generated_str,
    )


def redact_diff_view(view: DiffView, redactor: Redactor) -> DiffView:
    """Return the diff's view with every string redacted, both headers saying so."""
    redacted = redact_view(view, redactor)
    return dataclasses.replace(
        redacted,
        baseline=dataclasses.replace(redacted.baseline, redaction_str=REDACTION_NOTE),
        candidate=dataclasses.replace(redacted.candidate, redaction_str=REDACTION_NOTE),
    )
