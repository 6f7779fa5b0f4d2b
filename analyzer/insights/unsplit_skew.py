"""Rule `aqe-skew-not-split`: a skewed sort-merge join ran under AQE, but AQE did not split it."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import adaptive_enabled, context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_duration_ms

RULE = "aqe-skew-not-split"
METHOD = (
    "slowest task duration minus the median task duration of the join's stage (what a split "
    "would have saved, at best)"
)
SKEW_KEYS = ("spark.sql.adaptive.skewJoin.enabled", "spark.sql.adaptive.enabled")


def detect_unsplit_skew(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report SortMergeJoins of AQE plans whose stage read a skewed shuffle partition, unsplit.

    Skewed means the largest task's shuffle read is `skew_ratio` × the median and at
    least `unsplit_skew_min_bytes` (Spark's own skew test uses the same two numbers). A join
    AQE did split is named `SortMergeJoin(skew=true)` and is not reported.
    """
    ctx = context(analysis)
    findings = []
    by_stage = {key[0]: s for key, s in sorted(ctx.stage_stats.items())}
    props = dict(analysis.application.spark_properties)
    for ex in analysis.application.executions:
        if not adaptive_enabled(analysis, ex):
            continue
        conf = props | dict(ex.modified_configs)
        stats = analysis.node_stats.get(ex.execution_id, {})
        for join in ex.final_plan.graph.find_all("SortMergeJoin"):
            if "skew=true" in join.name or join.node_id not in stats:
                continue
            for stage_id in stats[join.node_id].stage_ids:
                s = by_stage.get(stage_id)
                if s is None or s.n_successful < thresholds.skew_min_tasks:
                    continue
                largest, median = s.shuffle_read_max_bytes, s.shuffle_read_median_bytes
                if largest < thresholds.unsplit_skew_min_bytes:
                    continue
                if median > 0 and largest < thresholds.skew_ratio * median:
                    continue
                lost_ms = max(0, s.max_duration_ms - s.median_duration_ms)
                skew_conf = conf.get("spark.sql.adaptive.skewJoin.enabled", "true (default)")
                ratio = largest / median if median else None
                finding = ctx.finding(
                    RULE,
                    METHOD,
                    thresholds,
                    lost_ms,
                    title=(
                        f"Node {join.node_id} {join.name}: a {fmt_bytes(largest)} partition "
                        f"(median {fmt_bytes(median)}) was not split by AQE"
                    ),
                    suggestion=(
                        "Let AQE split it: set spark.sql.adaptive.skewJoin.enabled=true and, "
                        "if the partition is under its limits, lower "
                        "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes or "
                        "skewedPartitionFactor (AQE cannot split the join's outer side of "
                        "some outer joins)."
                    ),
                    execution_id=ex.execution_id,
                    node_id=join.node_id,
                    stage_id=stage_id,
                    stage_attempt_id=s.stage_attempt_id,
                    task_ids=(s.shuffle_read_max_task_id,)
                    if s.shuffle_read_max_task_id is not None
                    else (),
                    evidence=(
                        ev("max_shuffle_read_bytes", "largest shuffle read", largest, "bytes"),
                        ev("median_shuffle_read_bytes", "median shuffle read", median, "bytes"),
                        ev(
                            "ratio",
                            "ratio",
                            ratio or None,
                            "ratio",
                            "" if ratio else "∞ (median 0)",
                        ),
                        ev(
                            "skew_join_enabled",
                            "spark.sql.adaptive.skewJoin.enabled",
                            skew_conf,
                            "text",
                        ),
                        ev(
                            "max_duration_ms",
                            "slowest / median task",
                            s.max_duration_ms,
                            "ms",
                            f" / {fmt_duration_ms(s.median_duration_ms)}",
                        ),
                        ev("median_duration_ms", "", s.median_duration_ms, "ms"),
                    ),
                )
                if finding is not None:
                    findings.append(finding)
    return findings
