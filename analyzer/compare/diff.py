"""Compare two runs: pair their executions and operators, set figures side by side, decide.

`diff_analyses(baseline, candidate, baseline_findings, candidate_findings)` is the one entry
point (`api.diff` calls it); see docs/diff.md.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.fingerprint import canonical_tree, is_join
from analyzer.aggregate.streaming import StreamingFigures
from analyzer.compare.advice_check import check_advice
from analyzer.compare.figures import (
    execution_figures,
    executor_figures,
    node_figures,
)
from analyzer.compare.matching import pair_executions
from analyzer.compare.node_match import match_nodes
from analyzer.compare.result import (
    ConfigChange,
    DiffResult,
    ExecutionDiff,
    FindingChanges,
    NodeDelta,
    OperatorSwitch,
    PlanChanges,
    StreamingQueryDiff,
)
from analyzer.compare.verdict import build_verdict
from analyzer.insights import Finding, Thresholds, detect_all
from analyzer.model.application import Application, Execution

PER_RUN_KEYS = frozenset(
    {
        "spark.app.id",
        "spark.app.attempt.id",
        "spark.app.startTime",
        "spark.app.submitTime",
        "spark.driver.port",
        "spark.blockManager.port",
        "spark.driver.blockManager.port",
        "spark.ui.port",
        "spark.yarn.app.id",
        "spark.yarn.app.attemptId",
    }
)
"""Spark properties that name the run rather than configure it. A property whose value holds its
run's application id (a proxy base path, a log directory per application) is left out too."""


def _node_deltas(
    analysis_b: Analysis, ex_b: Execution, analysis_c: Analysis, ex_c: Execution
) -> tuple[tuple[NodeDelta, ...], PlanChanges]:
    graph_b, graph_c = ex_b.final_plan.graph, ex_c.final_plan.graph
    match = match_nodes(canonical_tree(graph_b), canonical_tree(graph_c))
    deltas: list[NodeDelta] = []
    switches: list[OperatorSwitch] = []
    for b, c in match.pairs:
        nb, nc = graph_b.node(b), graph_c.node(c)
        deltas.append(
            NodeDelta(
                baseline=node_figures(analysis_b, ex_b, b),
                candidate=node_figures(analysis_c, ex_c, c),
            )
        )
        if nb.name != nc.name:
            switches.append(
                OperatorSwitch(
                    baseline_node_id=b,
                    candidate_node_id=c,
                    baseline_name=nb.name,
                    candidate_name=nc.name,
                    is_join=is_join(nb.name) and is_join(nc.name),
                )
            )
    deltas += [
        NodeDelta(baseline=None, candidate=node_figures(analysis_c, ex_c, c)) for c in match.added
    ]
    deltas += [
        NodeDelta(baseline=node_figures(analysis_b, ex_b, b), candidate=None) for b in match.removed
    ]
    order = {id(d): i for i, d in enumerate(deltas)}
    deltas.sort(key=lambda d: (-abs(d.change_ms), order[id(d)]))
    added = Counter(graph_c.node(c).name for c in match.added)
    removed = Counter(graph_b.node(b).name for b in match.removed)
    plan = PlanChanges(
        switches=tuple(sorted(switches, key=lambda s: (not s.is_join, s.candidate_node_id))),
        added=tuple(sorted(added.items())),
        removed=tuple(sorted(removed.items())),
    )
    return tuple(deltas), plan


def _config_changes(
    before: Sequence[tuple[str, str]],
    after: Sequence[tuple[str, str]],
    skip: frozenset[str] = frozenset(),
) -> list[ConfigChange]:
    b, c = dict(before), dict(after)
    return [
        ConfigChange(key=key, baseline=b.get(key), candidate=c.get(key))
        for key in sorted(set(b) | set(c))
        if b.get(key) != c.get(key) and key not in skip
    ]


def _per_run_keys(app_b: Application, app_c: Application) -> frozenset[str]:
    out = set(PER_RUN_KEYS)
    for app in (app_b, app_c):
        if app.app_id:
            out |= {k for k, v in app.environment.spark_properties if app.app_id in v}
    return frozenset(out)


def compare_findings(
    baseline: Sequence[Finding],
    candidate: Sequence[Finding],
    execution_map: dict[int, int],
    node_maps: dict[int, dict[int, int]],
) -> FindingChanges:
    """Pair findings by rule and place: the same rule at the paired execution (and, when both
    point at a node, at the paired node). `execution_map` maps candidate execution ids to the
    baseline's; `node_maps` candidate node ids to the baseline's, per candidate execution."""
    left = list(baseline)
    kept: list[tuple[Finding, Finding]] = []
    new: list[Finding] = []

    def place(f: Finding) -> int | None:
        return None if f.execution_id is None else execution_map.get(f.execution_id, -1)

    for f in candidate:
        where = place(f)
        options = [g for g in left if g.rule == f.rule and g.execution_id == where]
        if f.node_id is not None and f.execution_id is not None:
            node = node_maps.get(f.execution_id, {}).get(f.node_id)
            exact = [g for g in options if g.node_id == node]
            options = exact or [g for g in options if g.node_id is None] or options
        if options:
            left.remove(options[0])
            kept.append((options[0], f))
        else:
            new.append(f)
    return FindingChanges(new=tuple(new), resolved=tuple(left), kept=tuple(kept))


def pair_streaming_queries(
    baseline: Sequence[StreamingFigures], candidate: Sequence[StreamingFigures]
) -> tuple[StreamingQueryDiff, ...]:
    """Pair two runs' streaming query runs by name (an unnamed query by its id), several runs
    with one key in log order; the baseline's order, then the candidate's unpaired runs."""

    def key(fig: StreamingFigures) -> str:
        return f"name {fig.query.name}" if fig.query.name else f"id {fig.query.query_id}"

    left: dict[str, list[StreamingFigures]] = {}
    for fig in candidate:
        left.setdefault(key(fig), []).append(fig)
    out: list[StreamingQueryDiff] = []
    for fig in baseline:
        partners = left.get(key(fig), [])
        partner = partners.pop(0) if partners else None
        out.append(StreamingQueryDiff(label=fig.query.label, baseline=fig, candidate=partner))
    taken = {id(d.candidate) for d in out if d.candidate is not None}
    out += [
        StreamingQueryDiff(label=fig.query.label, baseline=None, candidate=fig)
        for fig in candidate
        if id(fig) not in taken
    ]
    return tuple(out)


def _with_crossed(
    changes: FindingChanges,
    baseline: Analysis,
    candidate: Analysis,
    execution_map: dict[int, int],
    node_maps: dict[int, dict[int, int]],
) -> FindingChanges:
    """Mark the new and resolved findings whose rule fires at the same place in the other run
    under its significance threshold, at a like cost (`FindingChanges.crossed`): a stage's 16
    partitions for 31 KiB are the same in both runs when the query grew and their cost fell
    under its share."""
    if not changes.new and not changes.resolved:
        return changes
    loose = dataclasses.replace(Thresholds(), min_query_share=0.0, min_lost_ms=0)
    crossed: list[Finding] = []
    if changes.resolved:
        still = compare_findings(
            changes.resolved, detect_all(candidate, loose), execution_map, node_maps
        )
        crossed += [b for b, c in still.kept if _alike(b, c)]
    if changes.new:
        before = compare_findings(
            detect_all(baseline, loose), changes.new, execution_map, node_maps
        )
        crossed += [c for b, c in before.kept if _alike(c, b)]
    return dataclasses.replace(changes, crossed=tuple(crossed))


def _alike(shown: Finding, other: Finding) -> bool:
    """Whether the other run's finding under its threshold costs at least half of the shown
    one's: the same condition whose share of its query changed, not one that grew (24 shuffle
    partitions made 1,200 is new, though the rule fires on both)."""
    return 2 * other.estimated_lost_ms >= shown.estimated_lost_ms


def diff_analyses(
    baseline: Analysis,
    candidate: Analysis,
    baseline_findings: Sequence[Finding],
    candidate_findings: Sequence[Finding],
) -> DiffResult:
    """Compare two runs (see docs/diff.md); the findings are each run's `api.find_issues`."""
    app_b, app_c = baseline.application, candidate.application
    by_id_b = {e.execution_id: e for e in app_b.executions}
    by_id_c = {e.execution_id: e for e in app_c.executions}
    pairing = pair_executions(app_b.executions, app_c.executions)
    executions: list[ExecutionDiff] = []
    node_maps: dict[int, dict[int, int]] = {}
    for b_id, c_id, tier in pairing.pairs:
        ex_b, ex_c = by_id_b[b_id], by_id_c[c_id]
        nodes, plan = _node_deltas(baseline, ex_b, candidate, ex_c)
        node_maps[c_id] = {
            d.candidate.node_id: d.baseline.node_id
            for d in nodes
            if d.candidate is not None and d.baseline is not None
        }
        executions.append(
            ExecutionDiff(
                tier=tier,
                description=ex_c.shown_description,
                baseline=execution_figures(baseline, ex_b),
                candidate=execution_figures(candidate, ex_c),
                nodes=nodes,
                plan=plan,
                config=tuple(_config_changes(ex_b.modified_configs, ex_c.modified_configs)),
            )
        )
    order = {id(e): i for i, e in enumerate(executions)}
    executions.sort(key=lambda e: (-abs(e.change_ms), order[id(e)]))
    baseline_only = tuple(execution_figures(baseline, by_id_b[i]) for i in pairing.baseline_only)
    candidate_only = tuple(execution_figures(candidate, by_id_c[i]) for i in pairing.candidate_only)
    execution_map = {c: b for b, c, _ in pairing.pairs}
    findings = compare_findings(baseline_findings, candidate_findings, execution_map, node_maps)
    findings = _with_crossed(findings, baseline, candidate, execution_map, node_maps)
    skip = _per_run_keys(app_b, app_c)
    all_config = _config_changes(
        app_b.environment.spark_properties, app_c.environment.spark_properties
    )
    config = [c for c in all_config if c.key not in skip]
    executors = (executor_figures(app_b), executor_figures(app_c))

    verdict = build_verdict(
        executions,
        baseline_only,
        candidate_only,
        findings,
        app_ms=(app_b.duration_ms, app_c.duration_ms),
        # As each run's report counts it: the wall time some SQL execution covered, a nested
        # one or two at once counted once.
        sql_ms=(baseline.time_spent.sql_ms, candidate.time_spent.sql_ms),
        executors=executors,
    )
    return DiffResult(
        baseline=baseline,
        candidate=candidate,
        baseline_findings=tuple(baseline_findings),
        candidate_findings=tuple(candidate_findings),
        executions=tuple(executions),
        baseline_only=baseline_only,
        candidate_only=candidate_only,
        findings=findings,
        config=tuple(config),
        n_config_per_run=len(all_config) - len(config),
        baseline_executors=executors[0],
        candidate_executors=executors[1],
        verdict=verdict,
        advice=check_advice(
            baseline, candidate, baseline_findings, {b: c for b, c, _ in pairing.pairs}
        ),
        streaming=pair_streaming_queries(baseline.streaming, candidate.streaming),
    )
