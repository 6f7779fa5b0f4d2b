"""Rule `large-broadcast`: a broadcast exchange shipped a large table to every executor."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import NodePicks, context, metric
from analyzer.insights.advice import broadcast_threshold_below
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes

RULE = "large-broadcast"
METHOD = (
    "the driver's time to build the broadcast relation and send it to the executors (the join's "
    "stage waits for both); collecting its input is the input's own work, shown as evidence"
)
TIME_METRICS = ("time to collect", "time to build", "time to broadcast")


MIN_BROADCAST_BYTES = 16 * 1024 * 1024
"""Broadcasts smaller than this are never reported: collecting them costs what their input does."""


def detect_large_broadcast(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report BroadcastExchange nodes whose `data size` exceeds `broadcast_large_bytes`, or
    `MIN_BROADCAST_BYTES` when building and sending it cost a meaningful share of
    the query's wall time (the join's stage waits for all of it)."""
    ctx = context(analysis)
    findings = []
    exchanges = NodePicks(lambda node: "BroadcastExchange" in node.name)
    for ex in analysis.application.executions:
        stats = analysis.node_stats.get(ex.execution_id, {})
        for node in exchanges(ex.final_plan.graph):
            ns = stats.get(node.node_id)
            size = metric(ns, "data size")
            if size is None or size.total < MIN_BROADCAST_BYTES:
                continue
            times = {name: (m.total if (m := metric(ns, name)) else 0) for name in TIME_METRICS}
            rows = metric(ns, "number of output rows")
            lost_ms = times["time to build"] + times["time to broadcast"]
            if size.total <= thresholds.broadcast_large_bytes and not ctx.significant(
                lost_ms, ex.execution_id, thresholds
            ):
                continue
            advice = broadcast_threshold_below(ctx.properties, size.total)
            shuffle = (
                f"set {advice.setting}={advice.value}"
                if advice.value is not None
                else "drop the broadcast() hint: the threshold is already below this size"
            )
            findings.append(
                Finding(
                    rule=RULE,
                    severity=ctx.severity(lost_ms, ex.execution_id, thresholds),
                    title=f"Node {node.node_id} {node.name}: broadcast {fmt_bytes(size.total)}",
                    suggestion=(
                        "Broadcast less: filter or project the small side first, or let the join "
                        f"shuffle ({shuffle}); large broadcasts load the driver and every "
                        "executor."
                    ),
                    advice=(advice,),
                    estimated_lost_ms=lost_ms,
                    estimate_method=METHOD,
                    execution_id=ex.execution_id,
                    node_id=node.node_id,
                    evidence=(
                        ev("data_size_bytes", "data size", size.total, "bytes"),
                        ev("rows", "rows", rows.total if rows else None, "count"),
                        *(
                            ev(name.replace(" ", "_") + "_ms", name, ms, "ms")
                            for name, ms in times.items()
                        ),
                    ),
                )
            )
    return findings
