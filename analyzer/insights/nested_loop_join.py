"""Rule `nested-loop-join`: a join compared every row of one side with every row of the other."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import NodePicks, context, rows_out, stage_wall_ms
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count

RULE = "nested-loop-join"
METHOD = "wall time of the stages the join ran in (an upper bound: they did other work too)"
NAMES = ("BroadcastNestedLoopJoin", "CartesianProduct")


def detect_nested_loop_join(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report nested-loop and cartesian joins comparing `nested_loop_min_pairs` or more row pairs,
    when their stages took a meaningful share of the query's wall time.

    Pairs are the left input's rows times the right input's rows.
    """
    ctx = context(analysis)
    findings = []
    joins = NodePicks(lambda node: node.name.startswith(NAMES))
    for ex in analysis.application.executions:
        graph = ex.final_plan.graph
        stats = analysis.node_stats.get(ex.execution_id, {})
        for node in joins(graph):
            children = graph.children_of(node.node_id)
            if len(children) < 2:
                continue
            left = rows_out(analysis, ex, children[0].node_id)
            right = rows_out(analysis, ex, children[1].node_id)
            if left is None or right is None:
                continue
            pairs = left * right
            if pairs < thresholds.nested_loop_min_pairs:
                continue
            stage_ids = stats[node.node_id].stage_ids if node.node_id in stats else ()
            lost_ms = stage_wall_ms(analysis, stage_ids)
            finding = ctx.finding(
                RULE,
                METHOD,
                thresholds,
                lost_ms,
                title=(
                    f"Node {node.node_id} {node.name}: {fmt_count(left)} × {fmt_count(right)} "
                    f"= {fmt_count(pairs)} row pairs compared"
                ),
                suggestion=(
                    "Give the join an equality condition (an equi-join key) so Spark can hash "
                    "or sort-merge; for range conditions, bucket both sides on a coarse key "
                    "first; check for a missing join condition."
                ),
                execution_id=ex.execution_id,
                node_id=node.node_id,
                stage_id=stage_ids[0] if stage_ids else None,
                evidence=(
                    ev("left_rows", "left rows", left, "count"),
                    ev("right_rows", "right rows", right, "count"),
                    ev("pairs", "pairs", pairs, "count"),
                    ev("stages", "stages", ", ".join(map(str, stage_ids)) or "–", "text"),
                    ev("stages_wall_ms", "their wall time", lost_ms, "ms"),
                ),
            )
            if finding is not None:
                findings.append(finding)
    return findings
