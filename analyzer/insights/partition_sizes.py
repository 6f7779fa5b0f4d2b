"""Rule `partition-size`: too few partitions for the input, or partitions too large for one task."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import (
    execution_of_stage,
    severity_for,
    stage_attempts,
    stage_stats,
    total_cores,
)
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes

RULE = "partition-size"
METHOD_FEW = (
    "stage wall time × (1 − tasks / cores): the stage could have run that much faster spread "
    "over every core"
)
METHOD_HUGE = "not estimated: a huge partition risks spill and out-of-memory more than time"


def idle_core_share(n_tasks: int, n_cores: int) -> float:
    """Return the share of cores a stage of `n_tasks` tasks leaves idle.

    >>> idle_core_share(4, 16)
    0.75
    """
    return max(0.0, 1 - n_tasks / n_cores) if n_cores > 0 else 0.0


def detect_partition_sizes(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages with fewer tasks than cores for a large input, and huge partitions.

    Too few: the median task reads at least `few_partitions_min_bytes` (input plus shuffle read)
    while the stage has fewer tasks than the application has cores. Huge: one task reads more
    than `huge_partition_bytes`.
    """
    findings = []
    exec_of = execution_of_stage(analysis)
    attempts = stage_attempts(analysis)
    cores = total_cores(analysis)
    for key, s in sorted(stage_stats(analysis).items()):
        if s.n_successful == 0:
            continue
        stage = attempts.get(key)
        wall_ms = stage.duration_ms if stage else None
        execution_id = exec_of.get(s.stage_id)
        if s.n_successful < cores and s.read_median_bytes >= thresholds.few_partitions_min_bytes:
            idle = idle_core_share(s.n_successful, cores)
            lost_ms = int((wall_ms or 0) * idle)
            findings.append(
                Finding(
                    rule=RULE,
                    severity=severity_for(lost_ms, thresholds),
                    title=(
                        f"Stage {s.stage_id}: only {s.n_successful} tasks for {cores} cores, "
                        f"{fmt_bytes(s.read_median_bytes)} per task"
                    ),
                    suggestion=(
                        "Use more partitions: raise spark.sql.shuffle.partitions (or "
                        "spark.sql.files.maxPartitionBytes lower for file scans), or "
                        "repartition() before the expensive step."
                    ),
                    estimated_lost_ms=lost_ms,
                    estimate_method=METHOD_FEW,
                    evidence=(
                        ev("n_tasks", "tasks", s.n_successful, "count"),
                        ev("n_cores", "executor cores", cores, "count"),
                        ev(
                            "median_read_bytes",
                            "median bytes read per task",
                            s.read_median_bytes,
                            "bytes",
                        ),
                        ev("stage_wall_ms", "stage duration", wall_ms, "ms"),
                        ev("idle_core_share", "", idle, "share"),
                    ),
                    execution_id=execution_id,
                    stage_id=s.stage_id,
                    stage_attempt_id=s.stage_attempt_id,
                )
            )
        if s.read_max_bytes > thresholds.huge_partition_bytes and s.read_max_task_id is not None:
            findings.append(
                Finding(
                    rule=RULE,
                    severity="warning",
                    title=(
                        f"Stage {s.stage_id}: task {s.read_max_task_id} read a "
                        f"{fmt_bytes(s.read_max_bytes)} partition"
                    ),
                    suggestion=(
                        "Split large partitions: raise spark.sql.shuffle.partitions, lower "
                        "spark.sql.files.maxPartitionBytes, or let AQE size them "
                        "(spark.sql.adaptive.advisoryPartitionSizeInBytes)."
                    ),
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
