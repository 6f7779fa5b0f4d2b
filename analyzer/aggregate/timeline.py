"""The executor timeline of an execution: its task attempts per executor, packed into sub-lanes.

The HTML page draws it (`report.html.timeline` turns it into pixels); which tasks and executors
are drawn, and on which sub-lane each task sits, is decided here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.units import decimal_int

if TYPE_CHECKING:  # analysis.py reaches the timeline through `Analysis.timeline`
    from analyzer.aggregate.analysis import Analysis


@dataclass(frozen=True)
class TimelineTask:
    """One finished task attempt, placed on its executor over time."""

    executor_id: str
    host: str
    launch_ms: int
    """Launch time, epoch ms."""
    finish_ms: int
    """Finish time, epoch ms."""
    task_id: int
    stage_id: int
    stage_attempt_id: int
    partition_id: int
    failed: bool
    killed: bool


@dataclass(frozen=True)
class TimelineLane:
    """One executor's task attempts, each on the first sub-lane free when it launched."""

    executor_id: str
    host: str
    n_sublanes: int
    """Sub-lanes the executor needs: at most this many of its drawn tasks overlapped."""
    tasks: tuple[tuple[int, TimelineTask], ...]
    """Per task attempt, by launch time then task id: its sub-lane (0 first) and the task."""


@dataclass(frozen=True)
class Timeline:
    """The task attempts of an execution laid out per executor (the longest ones when many)."""

    lanes: tuple[TimelineLane, ...]
    """One lane per drawn executor: numeric ids in order, then the others (the driver) first."""
    n_tasks: int
    """Finished task attempts of the execution's stages, drawn or not."""
    n_drawn: int
    """Task attempts chosen for drawing (the longest `max_tasks`), lanes left out included."""
    n_executors: int
    """Executors that ran a chosen task; more than `len(lanes)` when the busiest were kept."""
    start_ms: int
    """Earliest launch of a chosen task, epoch ms (0 without tasks)."""
    end_ms: int
    """Latest finish of a chosen task, epoch ms (0 without tasks)."""
    tasks_per_stage: tuple[tuple[int, int], ...]
    """Chosen task attempts per stage id, by stage id."""
    all_per_stage: tuple[tuple[int, int], ...] = ()
    """Finished task attempts per stage id, chosen or not, by stage id."""


def timeline_tasks(
    analysis: Analysis, stage_ids: Iterable[int], max_tasks: int
) -> tuple[tuple[TimelineTask, ...], int, tuple[tuple[int, int], ...]]:
    """Return the finished task attempts of the given stages for a timeline, how many there are,
    and how many per stage id (by stage id).

    At most `max_tasks` are returned, the longest ones (ties: lower task id), ordered by launch
    time then task id; none when `max_tasks` is 0 or less.
    """
    frame = (
        analysis.tasks.lazy()
        .filter(pl.col("stage_id").is_in(list(stage_ids)) & (pl.col("finish_ms") > 0))
        .collect(engine=ENGINE)
    )
    n_all = frame.height
    per_stage = tuple(
        (int(sid), int(n))
        for sid, n in frame.group_by("stage_id").len().sort("stage_id").iter_rows()
    )
    if frame.is_empty() or max_tasks <= 0:
        return (), n_all, per_stage
    if n_all > max_tasks:
        frame = frame.sort(["duration_ms", "task_id"], descending=[True, False]).head(max_tasks)
    rows = (
        frame.sort("launch_ms", "task_id")
        .select(
            "executor_id",
            "host",
            "launch_ms",
            "finish_ms",
            "task_id",
            "stage_id",
            "stage_attempt_id",
            "partition_id",
            "failed",
            "killed",
        )
        .iter_rows()
    )
    return tuple(TimelineTask(*r) for r in rows), n_all, per_stage


def _executor_order(executor_id: str) -> tuple[int, str]:
    number = decimal_int(executor_id)
    return (number, "") if number is not None else (-1, executor_id)


def _pack(tasks: Iterable[TimelineTask]) -> tuple[int, tuple[tuple[int, TimelineTask], ...]]:
    """Put each task on the first sub-lane whose last task finished by its launch."""
    ends: list[int] = []  # sub-lane → finish time of its last task
    placed = []
    for task in tasks:
        for i, end in enumerate(ends):
            if end <= task.launch_ms:
                ends[i] = task.finish_ms
                break
        else:
            i = len(ends)
            ends.append(task.finish_ms)
        placed.append((i, task))
    return len(ends), tuple(placed)


def timeline_lanes(
    analysis: Analysis, stage_ids: Iterable[int], max_tasks: int, max_lanes: int
) -> Timeline:
    """Lay out the longest `max_tasks` finished task attempts of the given stages per executor,
    keeping the `max_lanes` executors that ran most of them."""
    tasks, n_all, per_stage = timeline_tasks(analysis, stage_ids, max_tasks)
    by_executor: dict[str, list[TimelineTask]] = {}
    hosts: dict[str, str] = {}
    for task in tasks:
        by_executor.setdefault(task.executor_id, []).append(task)
        hosts[task.executor_id] = task.host
    executors = sorted(by_executor, key=_executor_order)
    if len(executors) > max_lanes:
        busiest = sorted(executors, key=lambda e: -len(by_executor[e]))[:max_lanes]
        executors = sorted(busiest, key=_executor_order)
    lanes = []
    for executor_id in executors:
        n_sublanes, placed = _pack(by_executor[executor_id])
        lanes.append(TimelineLane(executor_id, hosts[executor_id], n_sublanes, placed))
    # What is drawn: the tasks on the lanes kept, not those of executors left out.
    drawn = [task for lane in lanes for _, task in lane.tasks]
    return Timeline(
        lanes=tuple(lanes),
        n_tasks=n_all,
        n_drawn=len(drawn),
        n_executors=len(by_executor),
        start_ms=min((t.launch_ms for t in tasks), default=0),
        end_ms=max((t.finish_ms for t in tasks), default=0),
        tasks_per_stage=tuple(sorted(Counter(t.stage_id for t in drawn).items())),
        all_per_stage=per_stage,
    )
