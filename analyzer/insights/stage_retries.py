"""Rule `stage-retry`: a stage attempt failed (often a fetch failure) and the stage ran again."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.failure_cause import root_cause

RULE = "stage-retry"
METHOD = (
    "wall time of the failed stage attempt: the stage ran again for the output it lost (all "
    "of it, or the partitions a lost executor held)"
)


def _cancelled(reason: str | None, n_failed_tasks: int) -> bool:
    """Return True for a stage stopped by a cancelled job or a shut-down context, not a failure.

    >>> _cancelled("Stage cancelled because SparkContext was shut down", 0)
    True
    """
    return n_failed_tasks == 0 and reason is not None and "cancelled" in reason.lower()


def detect_stage_retries(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts that failed and were run again, when the lost attempt cost a
    meaningful share of the query's wall time.

    A stage that failed without another attempt is part of a failed query (`failed-query`), and
    a stage cancelled with its job (no failed task) is no failure of its own.
    """
    ctx = context(analysis)
    findings = []
    stages = analysis.application.stages
    n_attempts: dict[int, int] = {}
    for st in stages:
        n_attempts[st.stage_id] = n_attempts.get(st.stage_id, 0) + 1
    for st in stages:
        if st.status != "FAILED" or _cancelled(st.failure_reason, st.n_failed_attempts):
            continue
        if n_attempts[st.stage_id] < 2 or ctx.in_failed_execution(st.stage_id):
            continue
        execution_id = ctx.stage_execution(st.stage_id)
        lost_ms = st.duration_ms or 0
        reason = root_cause(st.failure_reason) or "no reason in the log"
        what = "failed and was retried"
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=f"Stage {st.stage_id} attempt {st.attempt_id} {what}: {reason}",
            suggestion=(
                "For FetchFailed: shuffle files were lost with an executor; keep them with "
                "spark.shuffle.service.enabled=true or spark.decommission.enabled=true and "
                "find why executors died (memory, preemption). Otherwise see the task "
                "failures of this stage."
            ),
            execution_id=execution_id,
            stage_id=st.stage_id,
            stage_attempt_id=st.attempt_id,
            evidence=(
                ev("failure_reason", "failure reason", reason, "text"),
                ev("attempt_duration_ms", "attempt duration", st.duration_ms, "ms"),
                ev("n_stage_attempts", "attempts of this stage", n_attempts[st.stage_id], "id"),
                ev(
                    "n_task_attempts",
                    "tasks (failed)",
                    st.n_task_attempts,
                    "id",
                    f" ({st.n_failed_attempts})",
                ),
                ev("n_failed_task_attempts", "", st.n_failed_attempts, "count"),
            ),
        )
        if finding is not None:
            findings.append(finding)
    return findings
