"""Rule `streaming-state-growth`: a stateful query's state grows batch after batch, without a
watermark or with one that does not advance."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._streaming import first_execution, query_evidence
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count

RULE = "streaming-state-growth"
MIN_STATE_BATCHES = 6
STATE_GROWTH_FACTOR = 2.0
"""The state ends with at least this many times the rows it held after the first data batch…"""
STATE_GROWING_SHARE = 0.6
"""… and grew in at least this share of the batches."""


def detect_state_growth(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report a stateful query whose state keeps growing without a watermark that advances."""
    findings = []
    for fig in analysis.streaming:
        first, last = fig.state_rows_first, fig.state_rows_last
        if first is None or last is None or fig.n_batches < MIN_STATE_BATCHES:
            continue
        if last < STATE_GROWTH_FACTOR * max(first, 1):
            continue
        if fig.n_state_growing_batches < STATE_GROWING_SHARE * (fig.n_batches - 1):
            continue
        if fig.has_watermark and fig.watermark_advanced:
            continue
        why = "no watermark" if not fig.has_watermark else "a watermark that does not advance"
        findings.append(
            Finding(
                rule=RULE,
                severity="warning",
                title=(
                    f"Streaming query {fig.query.label}: state grows without bound ({why}): "
                    f"{fmt_count(first)} → {fmt_count(last)} rows, larger after "
                    f"{fig.n_state_growing_batches} of {fig.n_batches - 1} batches"
                ),
                suggestion=(
                    "Add withWatermark() on the event-time column so old windows and keys "
                    "leave the state (or a TTL for arbitrary state); a state that only grows "
                    "ends in memory pressure and slower batches."
                ),
                estimated_lost_ms=0,
                estimate_method="not a time cost yet: memory that only grows",
                execution_id=first_execution(fig),
                evidence=(
                    *query_evidence(fig),
                    ev("state_rows_first", "state rows (first data batch)", first, "count"),
                    ev("state_rows_last", "state rows (last batch)", last, "count"),
                    ev(
                        "state_memory_last_bytes",
                        "state memory (last batch)",
                        fig.state_memory_last_bytes,
                        "bytes",
                    ),
                    ev(
                        "has_watermark", "watermark", "yes" if fig.has_watermark else "none", "text"
                    ),
                ),
            )
        )
    return findings
