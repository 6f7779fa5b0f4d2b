"""Rule `smj-small-side`: a sort-merge join shuffled and sorted both sides though one was small."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import adaptive_enabled, context, exchange_below, metric
from analyzer.insights.advice import broadcast_threshold_above
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_count

RULE = "smj-small-side"
METHOD = (
    "sort time of the join's inputs plus the large side's shuffle write time (task time a "
    "broadcast hash join avoids), divided by the application's executor cores"
)


def detect_small_side_sort_merge_join(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report sort-merge joins whose smaller input shuffled at most `smj_small_side_bytes`, when
    shuffling and sorting the larger side cost a meaningful share of the query's wall time.

    Input sizes are the `data size` of the Exchange feeding each side.
    """
    ctx = context(analysis)
    findings = []
    cores = ctx.cores
    for ex in analysis.application.executions:
        graph = ex.final_plan.graph
        stats = analysis.node_stats.get(ex.execution_id, {})
        for join in graph.find_all("SortMergeJoin"):
            sides = []
            for child in graph.children_of(join.node_id)[:2]:
                xid = exchange_below(ex, child.node_id)
                size = metric(stats.get(xid), "data size") if xid is not None else None
                rows = (
                    metric(stats.get(xid), "shuffle records written") if xid is not None else None
                )
                if xid is None or size is None:
                    break
                sides.append((size.total, rows.total if rows else None, xid, child.node_id))
            if len(sides) != 2:
                continue
            small, large = sorted(sides, key=lambda s: s[0])
            if small[0] > thresholds.smj_small_side_bytes or large[0] <= small[0]:
                continue
            sort_ms = 0
            for _, _, _, side_id in sides:
                m = metric(stats.get(side_id), "sort time")
                sort_ms += m.total if m is not None else 0
            write = metric(stats.get(large[2]), "shuffle write time")
            write_ms = (write.total // 1_000_000) if write is not None else 0
            lost_ms = (sort_ms + write_ms) // cores
            advice = broadcast_threshold_above(
                ctx.properties, small[0], adaptive_enabled(analysis, ex)
            )
            finding = ctx.finding(
                RULE,
                METHOD,
                thresholds,
                lost_ms,
                title=(
                    f"Node {join.node_id} {join.name}: one side is only "
                    f"{fmt_bytes(small[0])}; a broadcast hash join would avoid shuffling and "
                    f"sorting {fmt_bytes(large[0])}"
                ),
                suggestion=(
                    "Broadcast the small side: add a broadcast() hint, or set "
                    f"{advice.setting}={advice.value} (above its size, with headroom)."
                ),
                advice=(advice,),
                execution_id=ex.execution_id,
                node_id=join.node_id,
                stage_id=(stats[join.node_id].stage_ids or (None,))[0]
                if join.node_id in stats
                else None,
                evidence=(
                    ev(
                        "small_side_bytes",
                        "small side",
                        small[0],
                        "bytes",
                        f", {fmt_count(small[1])} rows (Exchange {small[2]})",
                    ),
                    ev(
                        "large_side_bytes",
                        "large side",
                        large[0],
                        "bytes",
                        f", {fmt_count(large[1])} rows (Exchange {large[2]})",
                    ),
                    ev("sort_ms", "sort time of both sides", sort_ms, "ms"),
                    ev("large_side_write_ms", "large side shuffle write time", write_ms, "ms"),
                ),
            )
            if finding is not None:
                findings.append(finding)
    return findings
