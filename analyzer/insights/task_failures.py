"""Rule `task-failures`: task attempts failed and were retried, wasting their run time."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import (
    execution_of_stage,
    severity_for,
    stage_attempts,
    stage_stats,
    wall_share_ms,
)
from analyzer.insights.failed_queries import first_line
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds

RULE = "task-failures"
METHOD = (
    "summed duration of the failed attempts, charged to the stage's wall time by its share of "
    "the stage's task time"
)


def detect_task_failures(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts with failed task attempts (fetch failures and lost executors included).

    Killed attempts (speculative duplicates, cancelled jobs) are not failures; see `speculation`.
    """
    findings = []
    exec_of = execution_of_stage(analysis)
    attempts = stage_attempts(analysis)
    for key, s in sorted(stage_stats(analysis).items()):
        if s.n_failed == 0:
            continue
        stage = attempts.get(key)
        lost_ms = wall_share_ms(
            stage.duration_ms if stage else None, s.failed_duration_sum_ms, s.duration_sum_ms
        )
        reason = first_line(s.first_failure_reason or "unknown")
        kinds = []
        if s.n_fetch_failed:
            kinds.append(f"{s.n_fetch_failed} fetch failures")
        if s.n_executor_lost:
            kinds.append(f"{s.n_executor_lost} lost executors")
        evidence = [
            ev("n_failed", "failed attempts", s.n_failed, "count"),
            ev("n_successful", "successful attempts", s.n_successful, "count"),
            ev("first_failure", "first failure", reason, "text"),
            ev("failed_duration_ms", "time in failed attempts", s.failed_duration_sum_ms, "ms"),
        ]
        if kinds:
            evidence.append(ev("failure_kinds", "of which", ", ".join(kinds), "text"))
        if stage is not None:
            evidence.append(ev("stage_status", "stage status", stage.status, "text"))
        evidence.append(ev("n_fetch_failed", "", s.n_fetch_failed, "count"))
        evidence.append(ev("n_executor_lost", "", s.n_executor_lost, "count"))
        findings.append(
            Finding(
                rule=RULE,
                severity=severity_for(lost_ms, thresholds),
                title=f"Stage {s.stage_id}: {s.n_failed} task attempt(s) failed ({reason})",
                suggestion=(
                    "Read the first failure: fix data or code errors at their source; for "
                    "out-of-memory errors raise spark.executor.memoryOverhead or use more "
                    "partitions; for fetch failures check lost executors and consider "
                    "spark.shuffle.service.enabled or spark.decommission.enabled."
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=exec_of.get(s.stage_id),
                stage_id=s.stage_id,
                stage_attempt_id=s.stage_attempt_id,
                task_ids=s.failed_task_ids,
                evidence=tuple(evidence),
            )
        )
    return findings
