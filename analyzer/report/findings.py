"""The findings as every format shows them: numbered, placed, their evidence worded once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.insights import SEVERITIES, Finding, Thresholds
from analyzer.insights.finding import Advice, Evidence
from analyzer.model.application import Application
from analyzer.units import fmt_duration_ms, fmt_money, fmt_value

SEVERITY_MARKS = {"critical": "✖", "warning": "⚠", "info": "ℹ"}
"""The mark printed before a finding of each severity."""

SEVERITY_STYLES = {"critical": "red", "warning": "yellow", "info": ""}
"""The colour of a finding's mark and severity when the text report is coloured."""

FINDINGS_DOC = "docs/findings.md"
"""Where each rule is explained, under a heading named by its id."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class EvidenceView:
    """One item of a finding's evidence, worded."""

    label: str = field(metadata=_help("What the value is, e.g. `median task duration`."))
    value_str: str = field(metadata=_help("The value in its unit, e.g. `85 ms`."))


@dataclass(frozen=True)
class AdviceView:
    """One setting a finding advises, worded: its value, the arithmetic, the prediction."""

    setting: str = field(metadata=_help("The Spark property, e.g. `spark.sql.shuffle.partitions`."))
    value_str: str = field(
        metadata=_help("`400 → 2` (now → advised), or `no value (now 128m (default))`.")
    )
    line_str: str = field(
        metadata=_help(
            "The whole advice on one line: `spark.sql.shuffle.partitions 400 → 2: ⌈7.1 MiB "
            "shuffled / 64.0 MiB target …⌉ = 1 … → 2; predicted wall 1.5 s`."
        )
    )


def build_advice_view(advice: Advice) -> AdviceView:
    """Word one advised setting.

    >>> v = build_advice_view(Advice("k", "2", "400", "why", "count", 1500, 9000, "stage 4"))
    >>> v.line_str
    'k 400 → 2: why; predicted: stage 4 from 9.0 s to 1.5 s'
    >>> build_advice_view(Advice("k", None, "200 (default)", "no value: why", "count")).line_str
    'k no value (now 200 (default)): why'
    """
    why = advice.arithmetic
    if advice.value is None:
        value = f"no value (now {advice.current})"
        why = why.removeprefix("no value: ")  # said once, before the reason
    else:
        value = f"{advice.current} → {advice.value}"
    line = f"{advice.setting} {value}: {why}"
    if advice.predicted_ms is not None:
        line += (
            f"; predicted: {advice.predicted_of} from {fmt_duration_ms(advice.measured_ms)} "
            f"to {fmt_duration_ms(advice.predicted_ms)}"
        )
    return AdviceView(setting=advice.setting, value_str=value, line_str=line)


@dataclass(frozen=True)
class FindingView:
    """One finding, formatted: listed in the Findings section and referred to where it points."""

    rank: int = field(
        metadata=_help("Its number in the Findings section (1: the largest estimated time lost).")
    )
    dom_id: str = field(metadata=_help("Element id of the finding in the HTML page: `finding-2`."))
    rule: str = field(metadata=_help("Rule id, e.g. `data-skew`."))
    severity: str = field(metadata=_help("`info`, `warning` or `critical` (also a CSS class)."))
    mark: str = field(metadata=_help("Severity mark: `✖` critical, `⚠` warning, `ℹ` info."))
    style: str = field(
        metadata=_help("Colour of the mark and severity when coloured: red, yellow or empty.")
    )
    title: str = field(metadata=_help("One line naming the problem, as the rule wrote it."))
    execution_id: int | None = field(
        metadata=_help("SQL execution it points at; None for an application-level finding.")
    )
    node_id: int | None = field(metadata=_help("Plan node (final plan) it points at, if any."))
    node_name: str = field(metadata=_help("Name of that node in the final plan, or empty."))
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
    evidence: tuple[EvidenceView, ...] = field(
        metadata=_help("The evidence that has a label, in reading order.")
    )
    suggestion: str = field(metadata=_help("What to change: a Spark setting or a query change."))
    advice: tuple[AdviceView, ...] = field(
        metadata=_help("The settings advised, each with its value worked out from the run.")
    )
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
class FindingsView:
    """The Findings section: the findings shown, and a line saying what it lists."""

    items: tuple[FindingView, ...] = field(
        metadata=_help(
            "Findings of the shown executions and of the application, largest estimated time "
            "lost first."
        )
    )
    summary_str: str = field(
        metadata=_help(
            "How many are listed, of how many, in what order, and the thresholds changed from "
            "their defaults; empty when there is nothing to say."
        )
    )


@dataclass(frozen=True)
class FindingGroupView:
    """The findings of one rule, shown as one line that opens on each of them."""

    rule: str = field(metadata=_help("Rule id, e.g. `tiny-tasks`."))
    severity: str = field(metadata=_help("The most severe of its findings (also a CSS class)."))
    mark: str = field(metadata=_help("That severity's mark."))
    count: int = field(metadata=_help("How many findings the group holds."))
    lost_str: str = field(metadata=_help("The first (costliest) finding's estimate, worded."))
    title: str = field(metadata=_help("The first finding's title."))
    more_str: str = field(metadata=_help("`and 5 more like it`, or empty for a group of one."))
    ranks: tuple[int, ...] = field(metadata=_help("Its findings' numbers, in order."))


def group_findings(items: Sequence[FindingView]) -> tuple[FindingGroupView, ...]:
    """Group findings by rule, in the order of each rule's first (costliest) finding.

    >>> from analyzer.insights import Finding
    >>> views = [build_finding_view(Finding(rule=r, severity=s, title=r, suggestion="",
    ...          estimated_lost_ms=0, estimate_method=""), i)
    ...          for i, (r, s) in enumerate([("spill", "info"), ("gc", "info"),
    ...                                      ("spill", "warning")], start=1)]
    >>> [(g.rule, g.ranks, g.severity, g.more_str) for g in group_findings(views)]
    [('spill', (1, 3), 'warning', 'and 1 more like it'), ('gc', (2,), 'info', '')]
    """
    by_rule: dict[str, list[FindingView]] = {}
    for f in items:
        by_rule.setdefault(f.rule, []).append(f)
    groups = []
    for rule, found in by_rule.items():
        worst = max(found, key=lambda f: SEVERITIES.index(f.severity))
        first = found[0]
        groups.append(
            FindingGroupView(
                rule=rule,
                severity=worst.severity,
                mark=worst.mark,
                count=len(found),
                lost_str=first.lost_str,
                title=first.title,
                more_str=f"and {len(found) - 1} more like it" if len(found) > 1 else "",
                ranks=tuple(f.rank for f in found),
            )
        )
    return tuple(groups)


def evidence_str(item: Evidence) -> str:
    """Word one evidence value with its unit and note.

    >>> from analyzer.insights.finding import ev
    >>> evidence_str(ev("max_value", "largest task", 1234, "count", " in task 7 (partition 2)"))
    '1,234 in task 7 (partition 2)'
    >>> evidence_str(ev("ratio", "ratio", None, "ratio", "∞ (median 0)"))
    '∞ (median 0)'
    """
    if item.value is None and item.note:
        return item.note
    return fmt_value(item.unit, item.value) + item.note


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
    """Say the time a finding probably cost: `est. 4.2 s lost`, `est. 4.2 s lost (≈ $0.31)`
    when priced, or that none was estimated."""
    if finding.estimated_lost_ms > 0:
        lost = f"est. {fmt_duration_ms(finding.estimated_lost_ms)} lost"
        if finding.estimated_lost_cost is not None:
            lost += f" (≈ {fmt_money(finding.estimated_lost_cost, finding.cost_currency)})"
        return lost
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
    see = f"see Findings {rank}"
    return FindingView(
        rank=rank,
        dom_id=f"finding-{rank}",
        rule=finding.rule,
        severity=finding.severity,
        mark=SEVERITY_MARKS[finding.severity],
        style=SEVERITY_STYLES[finding.severity],
        title=finding.title,
        execution_id=finding.execution_id,
        node_id=finding.node_id,
        node_name=node_name,
        where_str=where,
        lost_str=finding_lost_str(finding),
        estimate_str=finding.estimate_method,
        evidence=tuple(
            EvidenceView(label=item.label, value_str=evidence_str(item))
            for item in finding.evidence
            if item.label
        ),
        suggestion=finding.suggestion,
        advice=tuple(build_advice_view(a) for a in finding.advice),
        docs_anchor=f"{FINDINGS_DOC}#{finding.rule}",
        ref_str=f"{finding.rule}{f' at {at}' if at else ''} — {see}",
        node_ref_str=f"{finding.rule} — {see}",
    )


def node_name_of(app: Application, finding: Finding) -> str:
    """Name the plan node a finding points at, from its execution's final plan (or empty)."""
    if finding.execution_id is None or finding.node_id is None:
        return ""
    for execution in app.executions:
        if execution.execution_id == finding.execution_id:
            try:
                return execution.final_plan.graph.node(finding.node_id).name
            except KeyError:
                return ""
    return ""


def changed_thresholds(thresholds: Thresholds) -> str:
    """List the thresholds that differ from their defaults: `gc_share=0.2, tiny_task_ms=50`."""
    default = Thresholds()
    return ", ".join(
        f"{name}={getattr(thresholds, name)}"
        for name in Thresholds.names()
        if getattr(thresholds, name) != getattr(default, name)
    )


def kept_findings(findings: Sequence[Finding], shown_ids: frozenset[int]) -> list[Finding]:
    """Keep the findings of the shown executions and those of the application as a whole."""
    return [f for f in findings if f.execution_id is None or f.execution_id in shown_ids]


def build_findings_view(
    app: Application,
    findings: Sequence[Finding],
    shown_ids: frozenset[int],
    thresholds: Thresholds,
) -> FindingsView:
    """Number the findings of the shown executions and of the application, in their order.

    `findings` come ranked (largest estimated time lost first); those of executions not shown
    are left out, and the summary line says so.
    """
    kept = kept_findings(findings, shown_ids)
    views = tuple(
        build_finding_view(f, i, node_name_of(app, f)) for i, f in enumerate(kept, start=1)
    )
    parts = []
    if len(kept) < len(findings):
        parts.append(f"{len(kept)} of {len(findings)} (others belong to executions not shown)")
    elif kept:
        parts.append(f"{len(kept)}")
    if kept:
        parts[-1] += ", largest estimated time lost first"
    changed = changed_thresholds(thresholds)
    if changed:
        parts.append(f"thresholds changed: {changed}")
    return FindingsView(items=views, summary_str="; ".join(parts))


def worst_of(findings: Sequence[Finding]) -> Finding | None:
    """Return the most severe finding (ties: the costliest, then the first), or None."""
    if not findings:
        return None
    return max(findings, key=lambda f: (SEVERITIES.index(f.severity), f.estimated_lost_ms))
