"""Rule `tiny-tasks`: a stage split its work into many tasks too short to pay for their overhead."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import (
    adaptive_enabled,
    context,
    user_repartition,
    wall_share_ms,
)
from analyzer.insights.advice import no_value, not_sized_by_setting, shuffle_partitions_for_size
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count, fmt_duration_ms

RULE = "tiny-tasks"
METHOD = (
    "summed per-task overhead (duration minus executor run time: scheduling, deserialization, "
    "result shipping), charged to the stage's wall time by its share of the stage's task time"
)


def detect_tiny_tasks(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages of SQL executions with `tiny_tasks_min_tasks`+ tasks whose median task is
    under `tiny_task_ms`, when their per-task overhead cost a meaningful share of the query.

    Stages outside SQL (file listing, RDD jobs) are left out: no SQL setting sizes their tasks.
    """
    ctx = context(analysis)
    findings = []
    for key, s in ctx.stage_stats.items():
        if s.n_successful < thresholds.tiny_tasks_min_tasks:
            continue
        if s.median_duration_ms >= thresholds.tiny_task_ms:
            continue
        execution_id = ctx.stage_execution(s.stage_id)
        if execution_id is None:
            continue  # file listing and RDD jobs: no SQL setting sizes their tasks
        stage = ctx.attempts.get(key)
        wall = ctx.walls.get(key)
        slots = wall.slots if wall is not None and wall.slots > 0 else ctx.cores
        lost_ms = wall_share_ms(
            stage.duration_ms if stage else None, s.overhead_sum_ms, s.duration_sum_ms, slots
        )
        reads_shuffle = s.shuffle_read_max_bytes > 0 or s.read_sum_bytes == 0
        per_task = s.read_sum_bytes // max(1, s.n_successful)
        asked = user_repartition(analysis, execution_id, s.stage_id) if reads_shuffle else None
        if asked is not None:
            advice = not_sized_by_setting(ctx.properties, asked)
        elif reads_shuffle:
            advice = shuffle_partitions_for_size(ctx.properties, s.read_sum_bytes, slots)
            if int(advice.value or 0) >= s.n_successful:
                advice = no_value(
                    ctx.properties,
                    advice.setting,
                    "200",
                    f"no value: {advice.arithmetic}, not fewer than the stage's "
                    f"{fmt_count(s.n_successful)} tasks; their fixed cost, not their number, "
                    "is the problem",
                    "count",
                )
        else:
            advice = no_value(
                ctx.properties,
                "spark.sql.files.maxPartitionBytes",
                "128m",
                "no value: Spark packs files into splits of min(maxPartitionBytes, "
                "max(openCostInBytes, bytes read / default parallelism)), so with many small "
                "files the file count, not this setting, makes the tasks; compact the files",
                "bytes",
            )
        # AQE's coalescing is kept where it ran, turned on where it was off.
        coalescing = (
            "keep spark.sql.adaptive.coalescePartitions.enabled=true (AQE)"
            if adaptive_enabled(analysis, ctx.executions[execution_id])
            else "turn AQE on (spark.sql.adaptive.enabled=true) to coalesce small partitions"
        )
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=(
                f"Stage {s.stage_id}: {fmt_count(s.n_successful)} tasks with a median of "
                f"{fmt_duration_ms(s.median_duration_ms)}"
            ),
            suggestion=(
                f"Use fewer, larger partitions: ask repartition() for fewer than "
                f"{fmt_count(asked)} (it sets this stage's task count, which neither "
                "spark.sql.shuffle.partitions nor AQE changes), or coalesce() for small data."
                if asked is not None
                else f"Use fewer, larger partitions: set spark.sql.shuffle.partitions="
                f"{advice.value}, {coalescing}, or coalesce() instead of repartition() for "
                "small data."
                if reads_shuffle and advice.value is not None
                else f"Use fewer, larger partitions: {coalescing}, or coalesce() instead of "
                "repartition() for small data."
                if reads_shuffle
                else "Read fewer, larger splits: compact the input's small files, or write "
                "fewer of them."
            ),
            advice=(advice,),
            execution_id=execution_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            evidence=(
                ev("n_tasks", "tasks", s.n_successful, "count"),
                ev("median_duration_ms", "median task duration", s.median_duration_ms, "ms"),
                ev("overhead_ms", "task overhead (all tasks)", s.overhead_sum_ms, "ms"),
                ev("mean_read_bytes", "bytes read per task (mean)", per_task, "bytes"),
            ),
        )
        if finding is not None:
            findings.append(finding)
    return findings
