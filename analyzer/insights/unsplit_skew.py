"""Rule `aqe-skew-not-split`: a skewed sort-merge join ran under AQE, but AQE did not split it."""

from __future__ import annotations

import math

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import adaptive_enabled, context, parse_bytes
from analyzer.insights.advice import current, flag
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_duration_ms

RULE = "aqe-skew-not-split"
METHOD = (
    "slowest task duration minus the median task duration of the join's stage (what a split "
    "would have saved, at best)"
)
SKEW_KEYS = ("spark.sql.adaptive.skewJoin.enabled", "spark.sql.adaptive.enabled")


def unsplit_advice(conf: dict[str, str], largest: int, median: int) -> tuple[Advice, ...]:
    """The AQE skew-join settings under which a partition of `largest` bytes (median `median`)
    counts as skewed: AQE splits one larger than both the factor × the median and the
    threshold.

    >>> [a.value for a in unsplit_advice({}, 200 << 20, 10 << 20)]
    ['true', '199m']
    """
    out = [
        flag(
            conf,
            "spark.sql.adaptive.skewJoin.enabled",
            "true",
            "true",
            "AQE splits a skewed partition of a sort-merge join into several tasks",
        )
    ]
    threshold_key = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes"
    threshold = parse_bytes(conf.get(threshold_key), 256 << 20)
    if largest <= threshold:
        value_mib = max(1, (largest - 1) >> 20)
        out.append(
            Advice(
                threshold_key,
                f"{value_mib}m",
                current(conf, threshold_key, "256m"),
                f"the partition ({fmt_bytes(largest)}) is under the threshold "
                f"({fmt_bytes(threshold)}): just under it → {value_mib} MiB",
                "bytes",
            )
        )
    factor_key = "spark.sql.adaptive.skewJoin.skewedPartitionFactor"
    try:
        factor = float(conf.get(factor_key, "5"))
    except ValueError:
        factor = 5.0
    if median > 0 and largest <= factor * median:
        value = max(1, math.floor(largest / median) - 1)
        out.append(
            Advice(
                factor_key,
                str(value),
                current(conf, factor_key, "5.0"),
                f"the partition is {largest / median:.1f}× the median, under the factor "
                f"{factor:g}: ⌊{largest / median:.1f}⌋ − 1 → {value}",
                "count",
            )
        )
    return tuple(out)


def detect_unsplit_skew(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report SortMergeJoins of AQE plans whose stage read a skewed shuffle partition, unsplit.

    Skewed means the largest task's shuffle read is `skew_ratio` × the median and at
    least `unsplit_skew_min_bytes` (Spark's own skew test uses the same two numbers). A join
    AQE did split is named `SortMergeJoin(skew=true)` and is not reported.
    """
    ctx = context(analysis)
    findings = []
    by_stage = {key[0]: s for key, s in ctx.stage_stats.items()}
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
                advice = unsplit_advice(conf, largest, median)
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
                        "Let AQE split it: "
                        + "; ".join(f"set {a.setting}={a.value}" for a in advice)
                        + " (AQE cannot split the outer side of some outer joins)."
                    ),
                    advice=advice,
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
