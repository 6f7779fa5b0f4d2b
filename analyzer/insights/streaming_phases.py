"""Rule `streaming-hot-phase`: most of a query's batch time goes to planning, offsets or the logs,
not to tasks."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.streaming import OVERHEAD_PHASES
from analyzer.insights._streaming import first_execution, query_evidence
from analyzer.insights.finding import Finding, Severity, ev
from analyzer.insights.streaming_lag import MIN_LATE_BATCHES
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_duration_ms

RULE = "streaming-hot-phase"
HOT_PHASE_SHARE = 0.3
"""A phase outside the tasks taking this share of the batches' time is hot…"""
HOT_PHASE_MIN_MS = 5_000
"""… when the batches took at least this long in all."""


def detect_hot_phase(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report a query whose batches spend a large share in one phase outside their tasks
    (planning, `getBatch`, `latestOffset`, the offset or commit log).

    Only a query that falls behind loses time by it (then the phase's share of its late time);
    for the others it is information. The first batch is left out: it plans the query and opens
    the source and its logs once.
    """
    findings = []
    for fig in analysis.streaming:
        # The batches after the first: the first plans the query, opens the source and its
        # logs, and on a Kafka source fetches the topic's metadata, once.
        later = fig.query.batches[1:]
        total = sum(b.trigger_execution_ms or 0 for b in later)
        if total < HOT_PHASE_MIN_MS:
            continue
        totals: dict[str, int] = {}
        for b in later:
            for name, value in b.durations_ms:
                if name in OVERHEAD_PHASES:
                    totals[name] = totals.get(name, 0) + value
        if not totals:
            continue
        # The largest phase; of equal ones, the first by name.
        name, ms = min(totals.items(), key=lambda p: (-p[1], p[0]))
        share = ms / total
        if share < HOT_PHASE_SHARE:
            continue
        late = fig.n_late_batches >= MIN_LATE_BATCHES
        lost = round(fig.late_ms * share) if late else 0
        severity: Severity = "warning" if late else "info"
        findings.append(
            Finding(
                rule=RULE,
                severity=severity,
                title=(
                    f"Streaming query {fig.query.label}: {share:.0%} of its batch time is "
                    f"{name} ({fmt_duration_ms(ms)} of {fmt_duration_ms(total)}), not tasks"
                ),
                suggestion=_PHASE_SUGGESTIONS.get(
                    name, "Look at what the source or sink does in this phase."
                ),
                estimated_lost_ms=lost,
                estimate_method=(
                    "the phase's share of the time the late batches ran past the trigger"
                    if late
                    else "not a time cost: the batches keep up with the trigger"
                    if fig.trigger_interval_ms is not None
                    else "not a time cost: the trigger interval is not known, so no batch is "
                    "known to be late"
                ),
                execution_id=first_execution(fig),
                evidence=(
                    *query_evidence(fig),
                    ev("phase", "phase", name, "text"),
                    ev("phase_ms", "phase time (the batches after the first)", ms, "ms"),
                    ev(
                        "total_trigger_execution_ms",
                        "batch time (the batches after the first)",
                        total,
                        "ms",
                    ),
                ),
            )
        )
    return findings


_PHASE_SUGGESTIONS = {
    "queryPlanning": (
        "Planning is repeated for every batch: simplify the plan (fewer unions and columns), "
        "cache or pre-aggregate the static side of joins, or trigger less often."
    ),
    "getBatch": "The source is slow to produce its batch: check its listing or fetch settings.",
    "latestOffset": (
        "Finding the latest offsets is slow: for file sources, fewer files per directory or "
        "maxFilesPerTrigger; for Kafka, check the brokers' latency."
    ),
    "walCommit": (
        "Writing the offset log is slow: put the checkpoint on faster storage (not an "
        "object store without atomic rename)."
    ),
    "commitOffsets": (
        "Writing the commit log is slow: put the checkpoint on faster storage (not an object "
        "store without atomic rename)."
    ),
}
