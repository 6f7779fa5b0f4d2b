"""Rule `task-failures`: task attempts failed and were retried, delaying their stage's end."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.failure_cause import root_cause
from analyzer.units import plural

RULE = "task-failures"
METHOD = (
    "how much later the stage's tasks ended for the failures: its task attempts replayed in "
    "launch order on its task slots, as they ran and with each failed task run once where its "
    "first attempt ran (for the longer of its failed and successful attempts), the difference"
)


def detect_task_failures(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts whose failed task attempts were retried (fetch failures and lost
    executors included) and cost a meaningful share of their query's wall time.

    Killed attempts (speculative duplicates, cancelled jobs) are not failures; see `speculation`.
    The failures of a failed query are its `failed-query` finding's evidence, not findings of
    their own.
    """
    ctx = context(analysis)
    findings = []
    for key, s in ctx.stage_stats.items():
        if s.n_failed == 0 or ctx.in_failed_execution(s.stage_id):
            continue
        stage = ctx.attempts.get(key)
        execution_id = ctx.stage_execution(s.stage_id)
        # A failed attempt beside others, in a slot no task waited for, did not move the
        # stage's end; the retries that ran after them did (aggregate.failure_delay).
        lost_ms = analysis.failure_delays.get(key, 0)
        if stage is not None and stage.duration_ms is not None:
            lost_ms = min(lost_ms, max(stage.duration_ms, 0))
        reason = root_cause(s.first_failure_reason) or "unknown"
        kinds = []
        if s.n_fetch_failed:
            kinds.append(plural(s.n_fetch_failed, "fetch failure"))
        if s.n_executor_lost:
            kinds.append(f"{plural(s.n_executor_lost, 'attempt')} lost with an executor")
        n_other = s.n_failed - s.n_fetch_failed - s.n_executor_lost
        if kinds and n_other > 0:
            kinds.append(f"{n_other} other")
        # The first failure names them all only when every failure is of its kind.
        told = reason if len(kinds) < 2 else f"{', '.join(kinds)}; first: {reason}"
        evidence = [
            ev("n_failed", "failed attempts", s.n_failed, "count"),
            ev("n_successful", "successful attempts", s.n_successful, "count"),
            ev("first_failure", "first failure", reason, "text"),
            ev("failed_duration_ms", "time in failed attempts", s.failed_duration_sum_ms, "ms"),
            ev("stage_end_delay_ms", "stage's end delayed by", lost_ms, "ms"),
        ]
        if kinds:
            evidence.append(ev("failure_kinds", "of which", ", ".join(kinds), "text"))
        if stage is not None:
            evidence.append(ev("stage_status", "stage status", stage.status, "text"))
        evidence.append(ev("n_fetch_failed", "", s.n_fetch_failed, "count"))
        evidence.append(ev("n_executor_lost", "", s.n_executor_lost, "count"))
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=f"Stage {s.stage_id}: {s.n_failed} task attempt(s) failed ({told})",
            suggestion=(
                "Read the first failure: fix data or code errors at their source; for "
                "out-of-memory errors raise spark.executor.memoryOverhead or use more "
                "partitions; for fetch failures check lost executors and consider "
                "spark.shuffle.service.enabled=true or spark.decommission.enabled=true."
            ),
            execution_id=execution_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            task_ids=s.failed_task_ids,
            evidence=tuple(evidence),
        )
        if finding is not None:
            findings.append(finding)
    return findings
