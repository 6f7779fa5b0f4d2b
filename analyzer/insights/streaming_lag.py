"""Rule `streaming-falling-behind`: a streaming query's batches take longer than its trigger."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._streaming import first_execution, query_evidence
from analyzer.insights.finding import Finding, Severity, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_duration_ms

RULE = "streaming-falling-behind"
MIN_LATE_BATCHES = 3
"""A query falls behind when at least this many batches (after the first) overran the trigger…"""
MIN_LATE_SHARE = 0.25
"""… and at least this share of them did."""


def detect_falling_behind(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report a query whose batches overran its trigger interval in enough of its batches.

    The cost is the time the late batches ran past the interval: the delay the query piled up,
    and all that a faster batch can win back (a batch within its trigger waits for the next).
    """
    findings = []
    for fig in analysis.streaming:
        interval = fig.trigger_interval_ms
        later = fig.n_batches - 1
        if interval is None or later <= 0:
            continue
        if fig.n_late_batches < MIN_LATE_BATCHES or fig.n_late_batches < MIN_LATE_SHARE * later:
            continue
        last = fig.trigger_ms[-3:]
        sustained = len(last) == 3 and all(d > interval for d in last)
        severity: Severity = "critical" if sustained else "warning"
        trend = fig.trend_ratio
        trend_note = (
            f", {trend:.1f}x longer at the end than at the start" if trend and trend >= 1.2 else ""
        )
        findings.append(
            Finding(
                rule=RULE,
                severity=severity,
                title=(
                    f"Streaming query {fig.query.label} falls behind its "
                    f"{fmt_duration_ms(interval)} trigger: {fig.n_late_batches} of the {later} "
                    f"batches after the first took longer, from batch "
                    f"{fig.first_late_batch_id}, up to {fmt_duration_ms(fig.max_trigger_ms)}"
                    f"{trend_note}"
                ),
                suggestion=(
                    "Make each batch cheaper (see the findings on its executions), give the "
                    "query more cores, or lengthen the trigger interval; cap the rows per batch "
                    "(maxOffsetsPerTrigger, maxFilesPerTrigger) so a late batch does not grow "
                    "the next one."
                ),
                estimated_lost_ms=fig.late_ms,
                estimate_method=(
                    "the time the late batches ran past the trigger interval, summed: the "
                    "delay the query piled up"
                ),
                execution_id=first_execution(fig, fig.first_late_batch_id),
                evidence=(
                    *query_evidence(fig),
                    ev("trigger_interval_ms", "trigger interval (inferred)", interval, "ms"),
                    ev("n_late_batches", "batches over the trigger", fig.n_late_batches, "count"),
                    ev("first_late_batch_id", "first late batch", fig.first_late_batch_id, "id"),
                    ev("median_trigger_execution_ms", "median batch", fig.median_trigger_ms, "ms"),
                    ev("max_trigger_execution_ms", "longest batch", fig.max_trigger_ms, "ms"),
                    ev(
                        "trend_ratio",
                        "last third / first third",
                        round(trend, 2) if trend is not None else None,
                        "ratio",
                    ),
                ),
            )
        )
    return findings
