"""Rule `partition-size`: a partition too large for one task (a spill and out-of-memory risk)."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context, user_repartition
from analyzer.insights.advice import (
    no_value,
    not_sized_by_setting,
    shuffle_partitions_for_size,
    target_partition_bytes,
)
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_count

RULE = "partition-size"
METHOD_HUGE = "not estimated: a huge partition risks spill and out-of-memory more than time"


def detect_partition_sizes(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report huge partitions: one task reading more than `huge_partition_bytes`.

    Not a time cost but a risk (spill, out-of-memory); stages with too few tasks for their
    cores are `idle-cores`'.
    """
    ctx = context(analysis)
    findings = []
    for _key, s in ctx.stage_stats.items():
        if s.n_successful == 0:
            continue
        execution_id = ctx.stage_execution(s.stage_id)
        if s.read_max_bytes > thresholds.huge_partition_bytes and s.read_max_task_id is not None:
            wall = ctx.walls.get(_key)
            slots = wall.slots if wall is not None and wall.slots > 0 else ctx.cores
            asked = (
                user_repartition(analysis, execution_id, s.stage_id)
                if s.shuffle_read_max_bytes > 0 and execution_id is not None
                else None
            )
            if asked is not None:
                # The query's repartition(n) sized the shuffle: no setting changes it.
                advice = not_sized_by_setting(ctx.properties, asked)
                wanted = shuffle_partitions_for_size(ctx.properties, s.read_sum_bytes, slots)
                target_bytes, _ = target_partition_bytes(ctx.properties)
                how = f"raise the query's repartition({fmt_count(asked)})" + (
                    f" to {wanted.value} (one partition per {fmt_bytes(target_bytes)} of the "
                    f"{fmt_bytes(s.read_sum_bytes)} shuffled, at least one per task slot)"
                    if wanted.value is not None and int(wanted.value) > asked
                    else ""
                )
            elif s.shuffle_read_max_bytes > 0:
                advice = shuffle_partitions_for_size(ctx.properties, s.read_sum_bytes, slots)
                if int(advice.value or 0) <= s.n_successful:
                    advice = no_value(
                        ctx.properties,
                        advice.setting,
                        "200",
                        f"no value: {advice.arithmetic}, no more than the stage's "
                        f"{fmt_count(s.n_successful)} partitions; the large one holds a hot "
                        "key, which more partitions would not split (see data-skew)",
                        "count",
                    )
                how = (
                    f"set {advice.setting}={advice.value}"
                    if advice.value is not None
                    else "spread its hot key (salt it, or let AQE split skewed joins)"
                )
            else:
                advice = no_value(
                    ctx.properties,
                    "spark.sql.files.maxPartitionBytes",
                    "128m",
                    "no value: a task read more than a split holds, so its input is one "
                    "unsplittable file or row group; rewrite it as smaller files or row groups",
                    "bytes",
                )
                how = "rewrite the input as smaller files or row groups"
            findings.append(
                Finding(
                    rule=RULE,
                    severity="warning",
                    title=(
                        f"Stage {s.stage_id}: task {s.read_max_task_id} read a "
                        f"{fmt_bytes(s.read_max_bytes)} partition"
                    ),
                    suggestion=f"Split large partitions: {how}.",
                    advice=(advice,),
                    estimated_lost_ms=0,
                    estimate_method=METHOD_HUGE,
                    task_ids=(s.read_max_task_id,),
                    evidence=(
                        ev("max_read_bytes", "largest partition read", s.read_max_bytes, "bytes"),
                        ev(
                            "median_read_bytes",
                            "median partition read",
                            s.read_median_bytes,
                            "bytes",
                        ),
                        ev("n_tasks", "tasks", s.n_successful, "count"),
                    ),
                    execution_id=execution_id,
                    stage_id=s.stage_id,
                    stage_attempt_id=s.stage_attempt_id,
                )
            )
    return findings
