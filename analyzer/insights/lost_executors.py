"""Rule `lost-executors`: executors died while the application ran, taking their work along."""

from __future__ import annotations

import re

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import SHUTDOWN
from analyzer.units import first_line

RULE = "lost-executors"
METHOD = (
    "summed duration of task attempts that failed with ExecutorLostFailure (task time, not "
    "wall time: their stages also reran lost shuffle output, see stage-retry)"
)
ROUTINE_REMOVALS = (
    "dynamic allocation",
    "idle",
    "decommission",
    "shutdown",
    "finished",
    "killed by driver",
    "explicit termination request",
    "requested by driver",
    "scaling down",
    "executor shutdown",
)
"""Removal reasons (lowercase substrings) of executors released on purpose, not lost."""
MEMORY_WORDS = re.compile(r"memory|\boom\b|oomkilled", re.IGNORECASE)
"""Reasons that say the executor was killed for memory (YARN's 'running beyond physical memory
limits', Kubernetes' 'OOMKilled', an OutOfMemoryError)."""
SIGKILL_EXIT = re.compile(
    r"\bexit(?:ed)?(?: with)? (?:code|status)(?: is)?[ :=]*137\b", re.IGNORECASE
)
"""A reason that gives exit code 137 (SIGKILL) and nothing more: most often an out-of-memory
killer, but any SIGKILL gives it. Exit code 143 (SIGTERM) is a routine stop, not a memory sign."""


def is_loss(reason: str | None) -> bool:
    """Return True if an ExecutorRemoved reason means the executor was lost, not released.

    >>> is_loss("Container killed by YARN for exceeding memory limits")
    True
    >>> is_loss("Executor killed by driver.")
    False
    >>> is_loss("Container container_e87_1 exited from explicit termination request.")
    False
    """
    if not reason:
        return False
    low = reason.lower()
    return not any(word in low for word in ROUTINE_REMOVALS)


def at_teardown(analysis: Analysis, removed_ms: int) -> bool:
    """True when an executor removal came after the application's work was done: every job
    had ended by then and no task ran after it (a cluster shutting down, whatever reason its
    workers give), so nothing was lost with it."""
    jobs = analysis.application.jobs
    if not jobs or any(j.completion_ms is None or j.completion_ms > removed_ms for j in jobs):
        return False
    spans = analysis.executor_task_spans.values()
    return all(last_ms <= removed_ms and first_ms <= removed_ms for first_ms, last_ms in spans)


SHUTDOWN_WINDOW_MS = 2_000
"""An executor lost this close before the application's end, while a job was cancelled by that
end, went down with the stop."""


def at_shutdown(analysis: Analysis, removed_ms: int) -> bool:
    """True when an executor was lost in the last `SHUTDOWN_WINDOW_MS` before the application's
    logged end, and a job still running then was cancelled because the context shut down: the
    application was being stopped or killed (a kill takes the executors' containers first), so
    the loss came with the stop rather than causing it."""
    app = analysis.application
    if app.end_ms is None or not 0 <= app.end_ms - removed_ms <= SHUTDOWN_WINDOW_MS:
        return False
    return any(SHUTDOWN in (j.error_message or "") for j in app.jobs)


def about_memory(reasons: list[str]) -> str | None:
    """Return "memory" if a removal reason says the executor ran out of memory, "sigkill" if one
    only gives exit code 137, else None.

    >>> about_memory(["Container killed by YARN for exceeding physical memory limits"])
    'memory'
    >>> about_memory(["Command exited with code 137"]), about_memory(["Exit code is 143"])
    ('sigkill', None)
    >>> about_memory(["worker lost: 10.1.143.7:7337 disassociated"]), about_memory(["zoom"])
    (None, None)
    """
    if any(MEMORY_WORDS.search(r) for r in reasons):
        return "memory"
    if any(SIGKILL_EXIT.search(r) for r in reasons):
        return "sigkill"
    return None


def detect_lost_executors(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report executors removed for a reason other than a routine release, with the task attempts
    that failed with them (ExecutorLostFailure)."""
    ctx = context(analysis)
    app = analysis.application
    lost = [
        e
        for e in app.executors
        if e.removed_ms is not None
        and is_loss(e.removed_reason)
        and not at_teardown(analysis, e.removed_ms)
    ]
    n_task_losses = sum(s.n_executor_lost for s in ctx.stage_stats.values())
    if not lost and n_task_losses == 0:
        return []
    # Attempts lost in a failed query are that query's failure (`failed-query` names it): they
    # are evidence here, not a second claim on the same time.
    outside = [
        s
        for s in ctx.stage_stats.values()
        if s.n_executor_lost and not ctx.in_failed_execution(s.stage_id)
    ]
    lost_task_ms = sum(s.executor_lost_duration_sum_ms for s in outside)
    n_outside = sum(s.n_executor_lost for s in outside)
    reasons = [first_line(e.removed_reason or "") for e in lost]
    evidence = [ev("n_executors_lost", "executors lost", len(lost), "count")]
    for e, reason in list(zip(lost, reasons, strict=True))[:5]:
        evidence.append(
            ev(
                f"executor_{e.executor_id}_removed_reason",
                f"executor {e.executor_id} ({e.host})",
                reason,
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
    evidence.append(
        ev(
            "lost_task_ms",
            "time in the attempts lost"
            + (" outside failed queries" if n_outside < n_task_losses else ""),
            lost_task_ms,
            "ms",
        )
    )
    stopping = bool(lost) and all(
        e.removed_ms is not None and at_shutdown(analysis, e.removed_ms) for e in lost
    )
    if stopping and app.end_ms is not None:
        first_ms = min(e.removed_ms for e in lost if e.removed_ms is not None)
        evidence.append(
            ev(
                "lost_before_end_ms",
                "lost before the application's end",
                app.end_ms - first_ms,
                "ms",
            )
        )
    memory = about_memory(reasons)
    if memory is not None:
        cause = (
            "The executors were killed for memory"
            if memory == "memory"
            else "The executors were killed with SIGKILL (exit code 137), most often by the "
            "cluster's or the kernel's out-of-memory killer (check the node's or the "
            "container's events to be sure)"
        )
        suggestion = (
            f"{cause}: give their containers more memory "
            "outside the heap (spark.executor.memoryOverhead: off-heap and Python memory live "
            "there), run fewer tasks per executor, or use smaller partitions."
        )
    elif stopping:
        suggestion = (
            "The executors were lost in the last moments before the application ended, while "
            "its running jobs were cancelled because the context shut down: they most likely "
            "went down with the stop (the application killed, or its driver program ending), "
            "not the other way round. The driver's log and the cluster manager's events say "
            "what stopped it; nothing in the event log points at the nodes."
        )
    else:
        suggestion = (
            "Find why executors died (the executor logs, the cluster manager's events); for "
            "preempted or spot nodes set spark.decommission.enabled=true and "
            "spark.storage.decommission.shuffleBlocks.enabled=true so their work is not lost."
        )
    return [
        Finding(
            rule=RULE,
            # A lost executor costs what its lost attempts ran; a small share of the run is
            # told, not warned about (the stage retry it caused is `stage-retry`'s).
            severity=(
                "warning"
                if n_outside and ctx.significant(lost_task_ms, None, thresholds)
                else "info"
            ),
            title=f"{len(lost)} executor(s) lost; {n_task_losses} task attempt(s) lost with them",
            suggestion=suggestion,
            estimated_lost_ms=lost_task_ms,
            estimate_method=METHOD,
            evidence=tuple(evidence),
        )
    ]
