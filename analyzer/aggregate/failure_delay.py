"""How much later a stage attempt ended because some of its tasks failed and ran again.

A failed attempt that ran beside its stage's other tasks, in a slot no other task waited for,
did not move the stage's end; the retry did when it ran after the others. So the cost of the
failures is not their summed time but the difference between two replays of the stage's tasks
on its task slots, each attempt in launch order on the first free slot: as it ran, and with each
failed task run once, in the place of its first attempt, for the longer of its failed and
successful attempts (a task often fails at the end of its work: its failed time is what a success
would have taken too; an attempt that failed early is charged its retry's time).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.tables import TaskTable


def list_schedule_ms(durations_ms: Sequence[int], slots: int) -> int:
    """Return when the last of `durations_ms` ends, each started in order on the first free of
    `slots` slots at 0.

    >>> list_schedule_ms([6508, 6701, 1001, 1201, 777], 2)
    8286
    >>> list_schedule_ms([6508, 6701, 1001, 777], 2)
    7509
    """
    free = [0] * max(slots, 1)
    end = 0
    for duration in durations_ms:
        start = heapq.heappop(free)
        heapq.heappush(free, start + duration)
        end = max(end, start + duration)
    return end


def without_retries(rows: Sequence[tuple[int, int, bool, bool]]) -> list[int]:
    """Return the durations of a stage attempt's task attempts had no task failed: each task
    index that failed runs once, where its first attempt ran, for the longer of that attempt
    and its successful one. `rows` are (index, duration ms, failed, successful) in launch order.

    >>> without_retries([(0, 6508, True, False), (1, 6701, False, True),
    ...                  (2, 1001, False, True), (0, 1201, False, True), (3, 777, False, True)])
    [6508, 6701, 1001, 777]
    >>> without_retries([(0, 94, True, False), (1, 500, False, True), (0, 400, False, True)])
    [400, 500]
    """
    failed = {index for index, _, is_failed, _ in rows if is_failed}
    success_ms = {index: ms for index, ms, _, ok in rows if ok and index in failed}
    out: list[int] = []
    seen: set[int] = set()
    for index, ms, _, _ in rows:
        if index not in failed:
            out.append(ms)
        elif index not in seen:
            seen.add(index)
            out.append(max(ms, success_ms.get(index, 0)))
    return out


def failure_delays(
    tasks: TaskTable, slots: Mapping[tuple[int, int], int]
) -> dict[tuple[int, int], int]:
    """Return per (stage, attempt) with failed task attempts how much later (ms) its tasks ended
    than they would have without the failures, replayed on the stage attempt's `slots` (1 when
    not given). Killed attempts are not failures: they stay in both replays."""
    if tasks.is_empty():
        return {}
    failed_keys = (
        tasks.lazy()
        .filter(pl.col("failed"))
        .select("stage_id", "stage_attempt_id")
        .unique()
        .collect(engine=ENGINE)
        .rows()
    )
    if not failed_keys:
        return {}
    frame = (
        tasks.lazy()
        .join(
            pl.LazyFrame(
                failed_keys,
                schema={"stage_id": pl.Int64, "stage_attempt_id": pl.Int64},
                orient="row",
            ),
            on=["stage_id", "stage_attempt_id"],
        )
        .sort("stage_id", "stage_attempt_id", "launch_ms", "task_id")
        .group_by("stage_id", "stage_attempt_id", maintain_order=True)
        .agg("index", "duration_ms", "failed", "successful")
        .collect(engine=ENGINE)
    )
    out = {}
    for sid, att, indices, durations, failed, successful in frame.iter_rows():
        key = (int(sid), int(att))
        n = max(slots.get(key, 1), 1)
        ms = [max(int(d or 0), 0) for d in durations]
        rows = list(zip(indices, ms, failed, successful, strict=True))
        out[key] = max(0, list_schedule_ms(ms, n) - list_schedule_ms(without_retries(rows), n))
    return out
