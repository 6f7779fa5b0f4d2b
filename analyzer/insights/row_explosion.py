"""Rule `row-explosion`: a join produced many times more rows than it was given."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import (
    NodePicks,
    ancestors_in_stage,
    context,
    metric,
    node_self_wall_ms,
    rows_out,
)
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count, fmt_factor

RULE = "row-explosion"
METHOD = (
    "the wall-time share of the self time of the join and of the operators above it in its stage "
    "(they handle its output), times the share of that output beyond its input rows"
)
JOINS = ("SortMergeJoin", "ShuffledHashJoin", "BroadcastHashJoin", "HashJoin")


def explosion_share(rows_in: int, rows_out_: int) -> float:
    """Return the share of a join's output that its input did not already hold.

    >>> explosion_share(1_000, 5_000)
    0.8
    """
    return max(0.0, 1 - rows_in / rows_out_) if rows_out_ > 0 else 0.0


def detect_row_explosion(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report equi-joins whose output rows are at least `explosion_ratio` × their input rows (and
    at least `explosion_min_rows` more), when handling those rows cost a meaningful share of the
    query's wall time.

    The input of a join is every row of its inputs (both sides; a broadcast side counts once);
    a join of many duplicate keys multiplies rows, and every operator above it in the stage pays
    for each one. Nested-loop and cartesian joins are `nested-loop-join`'s.
    """
    ctx = context(analysis)
    findings = []
    joins = NodePicks(lambda node: not node.is_cluster and any(j in node.name for j in JOINS))
    for ex in analysis.application.executions:
        graph = ex.final_plan.graph
        stats = analysis.node_stats.get(ex.execution_id, {})
        times = analysis.times.get(ex.execution_id)
        for node in joins(graph):
            out = metric(stats.get(node.node_id), "number of output rows")
            if out is None:
                continue
            sides = [
                rows_out(analysis, ex, c.node_id) or 0 for c in graph.children_of(node.node_id)
            ]
            rows_in = sum(sides)
            if out.total < thresholds.explosion_ratio * max(rows_in, 1):
                continue
            if out.total - rows_in < thresholds.explosion_min_rows:
                continue
            node_time = times.nodes.get(node.node_id) if times else None
            stage_ids = node_time.stage_ids if node_time else ()
            in_stage = {
                nid
                for nid, nt in (times.nodes.items() if times else ())
                if set(nt.stage_ids) & set(stage_ids)
            }
            paying = {node.node_id, *ancestors_in_stage(graph, node.node_id, in_stage)}
            share = explosion_share(rows_in, out.total)
            lost_ms = int(node_self_wall_ms(analysis, ex, paying) * share)
            ratio = out.total / max(rows_in, 1)
            finding = ctx.finding(
                RULE,
                METHOD,
                thresholds,
                lost_ms,
                title=(
                    f"Node {node.node_id} {node.name}: {fmt_count(rows_in)} rows in, "
                    f"{fmt_count(out.total)} out ({fmt_factor(ratio)})"
                ),
                suggestion=(
                    "Check the join keys: a key that repeats on both sides multiplies rows "
                    "(duplicates, nulls or a default value, a missing join condition). "
                    "Deduplicate or aggregate a side before the join, add the missing key, "
                    "or filter the hot key out and handle it apart."
                ),
                execution_id=ex.execution_id,
                node_id=node.node_id,
                stage_id=stage_ids[0] if stage_ids else None,
                evidence=(
                    ev("rows_in", "rows in (all inputs)", rows_in, "count"),
                    ev("rows_out", "rows out", out.total, "count"),
                    ev("ratio", "rows out / rows in", ratio, "ratio"),
                    ev(
                        "side_rows",
                        "rows per input",
                        " + ".join(fmt_count(r) for r in sides),
                        "text",
                    ),
                    ev(
                        "n_operators_paying",
                        "operators above it in its stage",
                        len(paying) - 1,
                        "count",
                    ),
                    ev("explosion_share", "", share, "share"),
                ),
            )
            if finding is not None:
                findings.append(finding)
    return findings
