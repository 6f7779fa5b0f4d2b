"""Rule `streaming-input-outpaces-processing`: rows arrive faster than the query processes them."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._streaming import first_execution, query_evidence
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count

RULE = "streaming-input-outpaces-processing"
MIN_OUTPACED_BATCHES = 3
MIN_OUTPACED_SHARE = 0.5
"""Input outpaces processing in at least this share of the batches after the first."""


def detect_input_outpaces_processing(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report a query whose rows arrived faster than it processed them in most batches, and on
    average over its batches."""
    findings = []
    for fig in analysis.streaming:
        later = fig.n_batches - 1
        if later <= 0 or fig.n_outpaced_batches < MIN_OUTPACED_BATCHES:
            continue
        if fig.n_outpaced_batches < MIN_OUTPACED_SHARE * later:
            continue
        arriving = fig.mean_input_rows_per_s or 0.0
        processed = fig.mean_processed_rows_per_s or 0.0
        if arriving <= processed:
            # Batches that took in more than they processed, but no more on the whole: the
            # backlog does not grow (a batch run late is back to back with the next one).
            continue
        findings.append(
            Finding(
                rule=RULE,
                severity="warning",
                title=(
                    f"Streaming query {fig.query.label}: input arrives faster than it is "
                    f"processed in {fig.n_outpaced_batches} of the {later} batches after the first "
                    f"({fmt_count(round(arriving))} rows/s in, {fmt_count(round(processed))} "
                    "rows/s processed on average)"
                ),
                suggestion=(
                    "The backlog grows: speed up the batches or add cores, or partition the "
                    "source more widely; a rate limit per trigger only bounds the batch size."
                ),
                estimated_lost_ms=0,
                estimate_method="not a time cost: a throughput deficit",
                execution_id=first_execution(fig),
                evidence=(
                    *query_evidence(fig),
                    ev(
                        "n_outpaced_batches",
                        "batches input > processed",
                        fig.n_outpaced_batches,
                        "count",
                    ),
                    ev("mean_input_rows_per_s", "input rows/s (mean)", round(arriving), "count"),
                    ev(
                        "mean_processed_rows_per_s",
                        "processed rows/s (mean)",
                        round(processed),
                        "count",
                    ),
                ),
            )
        )
    return findings
