"""Per executor and the driver: the summary Spark's History Server gives at `/allexecutors`.

The counts and totals are the replay's (`model.application.Executor`, which follows Spark's
`AppStatusListener`); this module adds what `AppStatusStore.executorList` changes on the way out:
the `fallback` block manager of decommissioning is not an executor, and the driver's task time and
GC time are replaced by the application's wall time and the driver JVM's own GC time
(docs/metrics.md, "Executor summaries").
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.model.application import DRIVER_ID, Application, Executor
from analyzer.units import decimal_int

FALLBACK_EXECUTOR_ID = "fallback"
"""The block manager id Spark uses for fallback storage (`FallbackStorage`), never listed."""


@dataclass(frozen=True)
class ExecutorSummary:
    """One entry of Spark's `/api/v1/applications/<id>/allexecutors`, in its units."""

    executor_id: str
    """`id`: `driver`, or the executor's number."""
    host_port: str
    """`hostPort`: the block manager's `host:port`, or the host alone if it had none."""
    is_active: bool
    """`isActive`: False once the executor was removed."""
    total_cores: int
    """`totalCores`."""
    max_tasks: int
    """`maxTasks`: tasks it can run at once (cores / cores per task, rounded down)."""
    max_memory_bytes: int
    """`maxMemory`: storage memory of its block manager."""
    add_time_ms: int | None
    """`addTime` (epoch ms)."""
    remove_time_ms: int | None
    """`removeTime` (epoch ms); None while active."""
    remove_reason: str | None
    """`removeReason`, as logged."""
    n_active_tasks: int
    """`activeTasks`: launched and not ended at the end of the log."""
    n_completed_tasks: int
    """`completedTasks`: successful attempts."""
    n_failed_tasks: int
    """`failedTasks`: failed attempts and resubmissions (killed attempts are in neither count)."""
    n_total_tasks: int
    """`totalTasks`: attempts launched on it."""
    total_duration_ms: int
    """`totalDuration`: summed task durations; for the driver, the application's wall time."""
    total_gc_time_ms: int
    """`totalGCTime`: summed task GC time; for the driver, its JVM's peak cumulative GC time
    when it reported executor metrics."""
    total_input_bytes: int
    """`totalInputBytes`."""
    total_shuffle_read_bytes: int
    """`totalShuffleRead`: local plus remote bytes."""
    total_shuffle_write_bytes: int
    """`totalShuffleWrite`."""


def summarize_executor(executor: Executor, application: Application) -> ExecutorSummary:
    """Return Spark's summary of one executor of `application`."""
    duration_ms = executor.task_time_ms
    gc_ms = executor.gc_time_ms
    if executor.executor_id == DRIVER_ID:
        # AppStatusStore.replaceDriverGcTime: the app's duration once it has a start time (for an
        # app still running, Spark takes "now"; the log's last event time is used here).
        if application.start_ms is not None and application.duration_ms is not None:
            duration_ms = application.duration_ms
        if executor.peak_total_gc_ms is not None:
            gc_ms = executor.peak_total_gc_ms
    return ExecutorSummary(
        executor_id=executor.executor_id,
        host_port=executor.host_port if executor.host_port is not None else executor.host,
        is_active=executor.is_active,
        total_cores=executor.n_cores,
        max_tasks=executor.max_tasks,
        max_memory_bytes=executor.max_memory_bytes,
        add_time_ms=executor.added_ms,
        remove_time_ms=executor.removed_ms,
        remove_reason=executor.removed_reason,
        n_active_tasks=executor.n_tasks_active,
        n_completed_tasks=executor.n_tasks_completed,
        n_failed_tasks=executor.n_tasks_failed,
        n_total_tasks=executor.n_tasks_started,
        total_duration_ms=duration_ms,
        total_gc_time_ms=gc_ms,
        total_input_bytes=executor.input_bytes,
        total_shuffle_read_bytes=executor.shuffle_read_bytes,
        total_shuffle_write_bytes=executor.shuffle_write_bytes,
    )


def executor_summaries(application: Application) -> tuple[ExecutorSummary, ...]:
    """Return Spark's summary of every executor and the driver, in registration order."""
    return tuple(
        summarize_executor(e, application)
        for e in application.executors
        if e.executor_id != FALLBACK_EXECUTOR_ID
    )


def executor_order(executor: Executor) -> tuple[int, int, str]:
    """The order tables list executors in: the driver first, then executors by numeric id, then
    any other id."""
    eid = executor.executor_id
    if eid == DRIVER_ID:
        return (0, 0, "")
    number = decimal_int(eid)
    return (1, number, "") if number is not None else (2, 0, eid)
