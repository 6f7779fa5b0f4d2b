"""What the task events between two other events change, in bulk: a segment's totals.

Spark's listeners see task events one by one, but nothing they depend on changes between two
other events, so a `TaskRecorder` sums them per executor and stage attempt, and keeps each stage
attempt's SQL metric updates, for the replay to apply a segment at once.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

# How a task end counts for its executor: (completed, failed, still-active decrement), from
# AppStatusListener.onTaskEnd. Killed and commit-denied attempts are neither; a resubmission
# event marks a finished map task lost with its executor: failed, but it was not active.
END_COUNTS: dict[str, tuple[int, int, int]] = {
    "Success": (1, 0, 1),
    "TaskKilled": (0, 0, 1),
    "TaskCommitDenied": (0, 0, 1),
    "Resubmitted": (0, 1, 0),
}
OTHER_END = (0, 1, 1)

EXECUTOR_END_FIELDS = (
    "n_completed",
    "n_failed",
    "n_ended",
    "peak_total_gc_ms",
    "task_time_ms",
    "gc_time_ms",
    "input_bytes",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
)
"""What `TaskSegment.executor_ends` sums per executor, in this order (`peak_total_gc_ms` is the
largest, not a sum)."""
STAGE_COUNT_FIELDS = ("n_task_attempts", "n_failed", "n_killed", "n_speculative")
"""What `TaskSegment.stage_counts` counts per stage attempt, in this order."""


@dataclass
class SqlUpdates:
    """The SQL metric updates of one stage attempt's task ends within one segment, in log order.

    Kept for every stage attempt: whether Spark's SQL listener counts them depends on what the
    replay knows when it reaches the segment (`sql_listener.SqlListener.task_segment`).
    """

    indices: array[int] = field(default_factory=lambda: array("q"))
    """Task index of each task end."""
    task_ids: array[int] = field(default_factory=lambda: array("q"))
    successful: bytearray = field(default_factory=bytearray)
    """1 where the task end is a success (Spark's `TaskInfo.successful`)."""
    accumulators: dict[int, tuple[array[int], array[int]]] = field(default_factory=dict)
    """Accumulator id → (position in `indices` of each update, the update as a `long`), in log
    order, for updates that parse as a `long` (string updates; number updates too when the
    recorder keeps them, see `TaskRecorder`)."""
    number_ids: set[int] = field(default_factory=set)
    """Ids of the accumulators updated with a JSON number whose updates are not in
    `accumulators` (`TaskRecorder(keep_number_updates=False)`)."""


@dataclass
class TaskSegment:
    """What the task events between two other events of the log change, in bulk.

    Spark's listeners see these events one by one, but nothing they depend on (which executors
    are registered, which stage attempts exist and which of them a SQL execution tracks) changes
    between two other events, so the replay applies a segment at once: `ApplicationBuilder`.
    Rows are those of the recorder's chunk.
    """

    executor_starts: dict[str, int] = field(default_factory=dict)
    """Executor id → task starts."""
    executor_ends: dict[str, list[int]] = field(default_factory=dict)
    """Executor id → `EXECUTOR_END_FIELDS` of its task ends."""
    stage_counts: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    """(stage id, attempt) → `STAGE_COUNT_FIELDS` of its task ends."""
    sql: dict[tuple[int, int], SqlUpdates] = field(default_factory=dict)
    """(stage id, attempt) → the SQL metric updates of its task ends."""
    unresolved_ends: list[tuple[int, int]] = field(default_factory=list)
    """(row, task id) of the task ends whose start, if any, came before the segment: the row is
    in Spark's task store only if that start is still live there."""
    excluded_rows: list[int] = field(default_factory=list)
    """Rows whose task end has no live start (a second end of the task, see
    `TaskColumns.exclude_row`), known within the segment."""
    ended: set[int] = field(default_factory=set)
    """Task ids ended in the segment: no start before the segment stays live for them."""
    started: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Task id → (stage id, attempt) of the tasks started in the segment and still live."""

    @property
    def is_empty(self) -> bool:
        """No task event at all."""
        return not (self.executor_starts or self.ended or self.started or self.stage_counts)
