"""Rule `lost-executors`: executors died while the application ran, taking their work along."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import stage_stats
from analyzer.insights.failed_queries import first_line
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds

RULE = "lost-executors"
METHOD = (
    "summed duration of task attempts that failed with ExecutorLostFailure (task time, not "
    "wall time: their stages also reran lost shuffle output, see stage-retry)"
)
NORMAL_REMOVALS = ("dynamic allocation", "idle", "decommission", "shutdown", "finished")
"""Removal reasons (lowercase substrings) that are routine, not a loss."""


def is_loss(reason: str | None) -> bool:
    """Return True if an ExecutorRemoved reason means the executor was lost, not released.

    >>> is_loss("Container killed by YARN for exceeding memory limits")
    True
    >>> is_loss("Executor killed by driver due to dynamic allocation (idle)")
    False
    """
    if not reason:
        return False
    low = reason.lower()
    return not any(word in low for word in NORMAL_REMOVALS)


def detect_lost_executors(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report executors removed for a reason other than routine release, and ExecutorLost tasks."""
    app = analysis.application
    lost = [e for e in app.executors if e.removed_ms is not None and is_loss(e.removed_reason)]
    n_task_losses = sum(s.n_executor_lost for s in stage_stats(analysis).values())
    if not lost and n_task_losses == 0:
        return []
    lost_task_ms = sum(
        s.failed_duration_sum_ms for s in stage_stats(analysis).values() if s.n_executor_lost
    )
    evidence = [ev("n_executors_lost", "executors lost", len(lost), "count")]
    for e in lost[:5]:
        evidence.append(
            ev(
                f"executor_{e.executor_id}_removed_reason",
                f"executor {e.executor_id} ({e.host})",
                first_line(e.removed_reason or ""),
                "text",
            )
        )
    evidence.append(
        ev(
            "n_task_attempts_lost",
            "task attempts failed with ExecutorLostFailure",
            n_task_losses,
            "count",
        )
    )
    evidence.append(ev("lost_task_ms", "time in those stages' failed attempts", lost_task_ms, "ms"))
    return [
        Finding(
            rule=RULE,
            severity="warning",
            title=f"{len(lost)} executor(s) lost; {n_task_losses} task attempt(s) lost with them",
            suggestion=(
                "Find why executors died: for memory kills raise spark.executor.memoryOverhead "
                "(or lower spark.executor.cores); for preempted or spot nodes enable "
                "spark.decommission.enabled and spark.storage.decommission.shuffleBlocks.enabled."
            ),
            estimated_lost_ms=lost_task_ms,
            estimate_method=METHOD,
            evidence=tuple(evidence),
        )
    ]
