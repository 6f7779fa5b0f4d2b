"""How much execution memory each stage's tasks had and needed: the base of memory advice.

A task's `peakExecutionMemory` is the most execution memory it held; `memoryBytesSpilled` is
the in-memory size of what it spilled for want of more. Their sum is about what the task needed
to run without spilling (an upper bound when it spilled the same records more than once).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.tables import TaskTable


@dataclass(frozen=True, slots=True)
class MemoryNeed:
    """A stage attempt's largest task memory figures, bytes."""

    max_peak_bytes: int
    """The most execution memory one task held."""
    max_need_bytes: int
    """The most one task held plus spilled (in-memory size): what it needed not to spill."""
    need_task_id: int | None
    """The task with `max_need_bytes`."""
    max_records: int = 0
    """The most records one task handled: what it read (input and shuffle) or what it wrote to
    the shuffle, the larger; a spill forced after a record count needs a task to reach it."""


def stage_memory_needs(tasks: TaskTable) -> dict[tuple[int, int], MemoryNeed]:
    """Return per (stage, attempt) its tasks' largest peak and largest need (successful tasks)."""
    if tasks.is_empty():
        return {}
    need = (pl.col("peak_execution_memory_bytes") + pl.col("memory_bytes_spilled")).alias("need")
    records = pl.max_horizontal(
        pl.col("input_records") + pl.col("shuffle_read_records"), "shuffle_write_records"
    ).alias("records")
    frame = (
        tasks.lazy()
        .filter(pl.col("successful"))
        .select(
            "stage_id",
            "stage_attempt_id",
            "task_id",
            "peak_execution_memory_bytes",
            need,
            records,
        )
        .sort("need", "task_id", descending=[True, False])
        .group_by("stage_id", "stage_attempt_id", maintain_order=True)
        .agg(
            pl.col("peak_execution_memory_bytes").max().alias("peak"),
            pl.col("need").first(),
            pl.col("task_id").first(),
            pl.col("records").max(),
        )
        .collect(engine=ENGINE)
    )
    return {
        (int(r[0]), int(r[1])): MemoryNeed(int(r[2] or 0), int(r[3] or 0), r[4], int(r[5] or 0))
        for r in frame.iter_rows()
    }
