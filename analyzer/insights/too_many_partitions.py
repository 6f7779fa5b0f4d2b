"""Rule `too-many-partitions`: a shuffle cut a little data into many partitions, each task
paying a fixed cost (scheduling, deserializing, starting a Python worker's batch) for almost
nothing, in several waves over the slots where one would do."""

from __future__ import annotations

import math

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context, parse_bytes, user_repartition
from analyzer.insights.advice import not_sized_by_setting, shuffle_partitions_for_size
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_count, fmt_duration_ms

RULE = "too-many-partitions"
METHOD = (
    "the waves over the task slots beyond those the suggested partition count needs × the "
    "median task's fixed cost (its duration × (1 − median bytes read / small_partition_bytes): "
    "all of it for an empty partition), at most that share of the stage's task wall time (run, "
    "deserialization, results and tail): a slow first wave (a first query warming up) is not "
    "charged"
)
ADVISORY_DEFAULT_BYTES = 64 << 20
"""`spark.sql.adaptive.advisoryPartitionSizeInBytes` by default: the size a partition should be."""


def partitions_to_set(bytes_read: int, slots: int, advisory_bytes: int) -> int:
    """Return the shuffle partition count for `bytes_read`: one per advisory size, at least one
    per slot (fewer would leave cores idle).

    >>> partitions_to_set(52_000, 8, 64 << 20), partitions_to_set(10 << 30, 8, 64 << 20)
    (8, 160)
    """
    return max(max(slots, 1), math.ceil(bytes_read / max(advisory_bytes, 1)))


def detect_too_many_partitions(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report shuffle-reading stages of SQL executions with more tasks than two waves over
    their slots, whose median task read less than `small_partition_bytes`, when the waves
    the suggested partition count saves are significant."""
    ctx = context(analysis)
    advisory = parse_bytes(
        ctx.properties.get("spark.sql.adaptive.advisoryPartitionSizeInBytes"),
        ADVISORY_DEFAULT_BYTES,
    )
    findings = []
    for key, s in ctx.stage_stats.items():
        wall = ctx.walls.get(key)
        execution_id = ctx.stage_execution(s.stage_id)
        if wall is None or execution_id is None or wall.slots <= 0:
            continue
        if s.shuffle_read_max_bytes <= 0 or ctx.in_failed_execution(s.stage_id):
            continue  # reads no shuffle: spark.sql.shuffle.partitions does not size it
        if 2 * s.shuffle_read_median_bytes * s.n_successful < s.read_sum_bytes:
            continue  # mostly reads files: its splits, not the shuffle, size its tasks
        if s.n_successful <= 2 * wall.slots:
            continue
        if s.shuffle_read_median_bytes >= thresholds.small_partition_bytes:
            continue
        target = partitions_to_set(s.read_sum_bytes, wall.slots, advisory)
        if target * 2 > s.n_successful:
            continue
        waves = math.ceil(s.n_successful / wall.slots)
        new_waves = math.ceil(target / wall.slots)
        working = wall.run_ms + wall.deserialize_ms + wall.result_ms + wall.tail_ms
        fixed_share = 1 - s.shuffle_read_median_bytes / thresholds.small_partition_bytes
        # Each wave saved saves one task's fixed cost on every slot. The median task measures
        # it: the stage's wall would also charge a first wave stalled by a cold JVM, which
        # runs as long with any partition count.
        lost_ms = int(
            min(
                (waves - new_waves) * s.median_duration_ms * fixed_share,
                working * (1 - new_waves / waves) * fixed_share,
            )
        )
        asked = user_repartition(analysis, execution_id, s.stage_id)
        if asked is None:
            suggestion = (
                f"Set spark.sql.shuffle.partitions={target} for this query (one partition "
                f"per {fmt_bytes(advisory)} read, at least one per task slot), or let AQE "
                "coalesce them (spark.sql.adaptive.enabled=true with "
                "spark.sql.adaptive.coalescePartitions.enabled=true). Each task pays a "
                "fixed cost (a Python UDF's worker batch more than most) whatever its data."
            )
            advice = shuffle_partitions_for_size(ctx.properties, s.read_sum_bytes, wall.slots)
        else:
            # The query's repartition(n) made these partitions: the setting and AQE do not.
            suggestion = (
                f"Ask repartition() for {target} partitions instead of {fmt_count(asked)} (one "
                f"per {fmt_bytes(advisory)} read, at least one per task slot), or use "
                "coalesce() for small data: the query's repartition(n) sets this stage's task "
                "count, which neither spark.sql.shuffle.partitions nor AQE changes. Each task "
                "pays a fixed cost whatever its data."
            )
            advice = not_sized_by_setting(ctx.properties, asked)
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=(
                f"Stage {s.stage_id}: {fmt_count(s.n_successful)} shuffle partitions for "
                f"{fmt_bytes(s.read_sum_bytes)} ({fmt_bytes(s.shuffle_read_median_bytes)} "
                f"per task, {fmt_duration_ms(s.median_duration_ms)} each); "
                f"{fmt_count(target)} would do"
            ),
            suggestion=suggestion,
            execution_id=execution_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            evidence=(
                ev("n_tasks", "tasks", s.n_successful, "count"),
                ev("slots", "task slots", wall.slots, "count"),
                ev("bytes_read", "bytes read", s.read_sum_bytes, "bytes"),
                ev(
                    "median_read_bytes",
                    "median task read",
                    s.shuffle_read_median_bytes,
                    "bytes",
                ),
                ev("median_duration_ms", "median task", s.median_duration_ms, "ms"),
                ev(
                    "partitions_to_set",
                    "spark.sql.shuffle.partitions to set" if asked is None else "partitions to ask",
                    target,
                    "count",
                ),
                *(
                    ()
                    if asked is None
                    else (ev("repartition_n", "repartition() asked for", asked, "count"),)
                ),
            ),
            advice=(advice,),
        )
        if finding is not None:
            findings.append(finding)
    return findings
