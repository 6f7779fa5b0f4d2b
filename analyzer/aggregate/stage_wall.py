"""A stage's wall time taken apart: what the clock was doing from submission to completion.

The parts add up to the stage attempt's wall time exactly, so that a finding can charge only
the part its cause can shorten (more partitions shorten the running part, not the wait for an
executor) and "where the time went" can say how much of a stage was tasks at all:

- `wait_executor_ms`: before its first task, while no task slot of its resource profile was
  alive (dynamic allocation still asking for executors, or none of its profile);
- `queued_ms`: before its first task, or in a gap with none of its tasks running, while every
  slot alive was busy with other stages' tasks (it queued behind them: a capacity question, not
  a scheduling one);

waiting and queueing count the slots the scheduler would offer (`Capacity.offered_profile`): an
executor dynamic allocation had released (idle past `executorIdleTimeout`, removed later without
running a task) is alive until its ExecutorRemoved event but takes no task;
- `not_launched_ms`: for an attempt that launched no task at all (cancelled or failed before
  its first task), the rest of its wall: slots were alive and not all busy, yet none of its
  tasks started; calling it scheduler delay would blame the driver for a stage that only
  waited its turn and ended;
- `scheduler_delay_ms`: before its first task with slots free, other gaps with no task of it
  running, after its last task (the driver handling results), and the in-task scheduler delay
  Spark's UI shows (launch to finish minus run, deserialization and result time): time the
  tasks were launched but the driver or the RPC layer kept them from starting or ending, in
  the tail too (a straggler whose time is scheduler delay is not held by its data);
- `deserialize_ms`, `run_ms` (of which `gc_ms` and `fetch_wait_ms`), `result_ms` (serializing
  and fetching results): the stretch while most of the stage's tasks ran, split by their shares
  of the tasks' summed time;
- `tail_ms`: the straggler tail, from when half or fewer of the stage's peak number of
  running tasks were still running to its last task's end, less the share of it the tasks
  still running spent in scheduler delay or deserializing (a cold executor), which goes to
  those parts.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.capacity import Capacity, ProfileSlots
from analyzer.aggregate.tables import TaskTable, int_array, stage_pieces
from analyzer.model.application import Application

_KEY = ["stage_id", "stage_attempt_id"]


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True, slots=True)
class StageWall:
    """One stage attempt's wall time, cut into parts that add up to it (all in ms)."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    stage_attempt_id: int = field(metadata=_help("The attempt."))
    start_ms: int = field(metadata=_help("Submission, epoch ms."))
    end_ms: int = field(metadata=_help("Completion, epoch ms."))
    first_launch_ms: int | None = field(metadata=_help("Its first task's launch, epoch ms."))
    slots: int = field(
        metadata=_help("Most task slots of its resource profile alive while it ran.")
    )
    n_tasks: int = field(metadata=_help("Task attempts that ended."))
    peak_running: int = field(metadata=_help("Most of its tasks running at once."))
    wait_executor_ms: int = field(metadata=_help("Waiting with no slot of its profile alive."))
    queued_ms: int = field(
        metadata=_help("Waiting with every slot alive busy with other stages' tasks.")
    )
    scheduler_delay_ms: int = field(
        metadata=_help("Waiting with slots alive, gaps, after the last task, in-task delay.")
    )
    deserialize_ms: int = field(metadata=_help("Tasks deserializing (wall share)."))
    run_ms: int = field(metadata=_help("Tasks running (wall share)."))
    gc_ms: int = field(metadata=_help("Part of `run_ms` that was JVM GC."))
    fetch_wait_ms: int = field(metadata=_help("Part of `run_ms` waiting for shuffle blocks."))
    result_ms: int = field(metadata=_help("Serializing and fetching task results (wall share)."))
    tail_ms: int = field(metadata=_help("The straggler tail."))
    not_launched_ms: int = field(
        default=0,
        metadata=_help(
            "An attempt that launched no task: its wall with slots alive and not all busy."
        ),
    )

    @property
    def wall_ms(self) -> int:
        """Submission to completion."""
        return self.end_ms - self.start_ms

    @property
    def busy_ms(self) -> int:
        """The part more or fewer partitions could change: tasks working before the tail."""
        return self.deserialize_ms + self.run_ms + self.result_ms


@dataclass(frozen=True)
class _Figures:
    """A stage attempt's task sums and timeline figures, and its gaps with no task running."""

    sums: dict[str, int]
    gaps: list[tuple[int, int]]

    def __getitem__(self, name: str) -> int:
        return self.sums[name]


def _task_figures(
    tasks: TaskTable, cpus: int, slots: Mapping[str, int] | None = None
) -> dict[tuple[int, int], _Figures]:
    """Per stage attempt: task time sums and the running-count figures of its timeline, worked
    out a piece of whole stages at a time (`tables.stage_pieces`): the timeline's steps are
    seven columns of two rows per task, 110 MB at a million tasks if made at once."""
    if tasks.is_empty():
        return {}
    out: dict[tuple[int, int], _Figures] = {}
    for piece in stage_pieces(tasks, small=True):
        out.update(_piece_figures(piece, cpus, slots))
    return out


def _piece_figures(
    lazy: pl.LazyFrame, cpus: int, slots: Mapping[str, int] | None = None
) -> dict[tuple[int, int], _Figures]:
    """`_task_figures` of a piece of the task table holding every attempt of its stages, each
    executor's running count capped at its task slots (`capped_steps`)."""
    sums = lazy.group_by(_KEY).agg(
        pl.len().alias("n"),
        pl.col("launch_ms").min().alias("first_launch"),
        pl.col("finish_ms").max().alias("last_finish"),
        pl.col("duration_ms").clip(lower_bound=0).sum().alias("dur"),
        (pl.col("run_ms") // cpus).clip(lower_bound=0).sum().alias("run"),
        pl.col("deserialize_ms").clip(lower_bound=0).sum().alias("deser"),
        (pl.col("result_serialization_ms") + pl.col("getting_result_ms"))
        .clip(lower_bound=0)
        .sum()
        .alias("res"),
        pl.col("gc_ms").clip(lower_bound=0).sum().alias("gc"),
        pl.col("shuffle_fetch_wait_ms").clip(lower_bound=0).sum().alias("fetch"),
    )
    ends = lazy.select(
        *_KEY, "launch_ms", pl.max_horizontal("launch_ms", "finish_ms").alias("finish_ms")
    )
    # Each task adds 1 at its launch and takes 1 at its end, so a stage attempt's steps sum to 0
    # and, sorted by attempt, the running count is the plain cumulative sum: no window per
    # attempt. A row's `i` only orders the rows of its own attempt.
    same_attempt_next = (pl.col("stage_id") == pl.col("stage_id").shift(-1)) & (
        pl.col("stage_attempt_id") == pl.col("stage_attempt_id").shift(-1)
    )
    steps = (
        capped_steps(lazy, _KEY, slots)
        if slots
        else pl.concat(
            [
                ends.select(*_KEY, pl.col("launch_ms").alias("t"), pl.lit(1).alias("d")),
                ends.select(*_KEY, pl.col("finish_ms").alias("t"), pl.lit(-1).alias("d")),
            ]
        )
    )
    events = steps.sort([*_KEY, "t", "d"]).with_columns(
        pl.col("d").cum_sum().alias("running"),
        pl.when(same_attempt_next).then(pl.col("t").shift(-1)).alias("next_t"),
        pl.int_range(pl.len()).alias("i"),
    )
    high = pl.col("running") * 2 > pl.col("running").max()
    last_high = pl.col("i").filter(high).max()
    in_gap = (pl.col("running") == 0) & (pl.col("i") < last_high)
    timeline = (
        events.group_by(_KEY)
        .agg(
            pl.col("running").max().alias("peak"),
            pl.col("next_t").filter(pl.col("i") == last_high).first().alias("tail_start"),
            (pl.col("next_t") - pl.col("t")).filter(in_gap).sum().alias("gaps"),
            pl.col("t").filter(in_gap).alias("gap_starts"),
            pl.col("next_t").filter(in_gap).alias("gap_ends"),
        )
        .collect(engine=ENGINE)
    )
    # What the tasks still running in the tail spent their time on: a straggler whose time is
    # in-task scheduler delay is held by the driver or its executor, not by its data.
    in_task_delay = (
        pl.col("duration_ms")
        - pl.col("run_ms") // cpus
        - pl.col("deserialize_ms")
        - pl.col("result_serialization_ms")
        - pl.col("getting_result_ms")
    ).clip(lower_bound=0)
    stragglers = (
        lazy.select(
            *_KEY,
            "finish_ms",
            "duration_ms",
            "run_ms",
            "deserialize_ms",
            "result_serialization_ms",
            "getting_result_ms",
        )
        .join(timeline.lazy().select(*_KEY, "tail_start"), on=_KEY)
        .filter(pl.col("finish_ms") > pl.col("tail_start"))
        .group_by(_KEY)
        .agg(
            pl.col("duration_ms").clip(lower_bound=0).sum().alias("tail_dur"),
            in_task_delay.clip(upper_bound=pl.col("duration_ms")).sum().alias("tail_delay"),
            pl.col("deserialize_ms").clip(lower_bound=0).sum().alias("tail_deser"),
        )
    )
    joined = (
        sums.join(timeline.lazy(), on=_KEY, how="left")
        .join(stragglers, on=_KEY, how="left")
        .collect(engine=ENGINE)
    )
    out: dict[tuple[int, int], _Figures] = {}
    for row in joined.iter_rows(named=True):
        key = (int(row["stage_id"]), int(row["stage_attempt_id"]))
        spans = list(zip(row.pop("gap_starts") or (), row.pop("gap_ends") or (), strict=True))
        out[key] = _Figures(
            {k: int(v or 0) for k, v in row.items() if k not in _KEY},
            [(int(a), int(b)) for a, b in spans if a is not None and b is not None],
        )
    return out


@dataclass(frozen=True)
class RunningTasks:
    """Task attempts running at once in the whole application, as a step function of time."""

    times_ms: Sequence[int]
    running: Sequence[int]
    """Tasks running from `times_ms[i]` on. Both are arrays, 8 bytes a step: a log of a million
    tasks makes two million steps."""

    def busy_ms(self, start_ms: int, end_ms: int, profile: ProfileSlots) -> int:
        """Return how many ms of [start_ms, end_ms) had every alive slot (at least one) busy."""
        if end_ms <= start_ms:
            return 0
        i = bisect.bisect_right(self.times_ms, start_ms)
        current = self.running[i - 1] if i else 0
        cursor, total = start_ms, 0
        while True:
            nxt = self.times_ms[i] if i < len(self.times_ms) else end_ms
            nxt = min(nxt, end_ms)
            slots = profile.at(cursor)
            if slots > 0 and current >= slots:
                total += nxt - cursor
            if nxt >= end_ms:
                return total
            cursor, current = nxt, self.running[i]
            i += 1


def running_tasks(tasks: TaskTable, slots: Mapping[str, int] | None = None) -> RunningTasks:
    """Build the application's running-task step function from the task table, each
    executor's count capped at its task slots (`slots`, by executor id; see `capped_steps`)."""
    if tasks.is_empty():
        return RunningTasks(array("q"), array("q"))
    if slots:
        steps = capped_steps(tasks.lazy(), [], slots)
    else:
        # Launches and ends counted per moment first (a moment holds many of either), so no
        # column of two rows per task is made.
        frame = tasks.lazy()
        steps = pl.concat(
            [
                frame.group_by(pl.col("launch_ms").alias("t")).agg(
                    pl.len().cast(pl.Int64).alias("d")
                ),
                frame.group_by(pl.max_horizontal("launch_ms", "finish_ms").alias("t")).agg(
                    -pl.len().cast(pl.Int64).alias("d")
                ),
            ]
        )
    events = (
        steps.group_by("t")
        .agg(pl.col("d").sum())
        .sort("t")
        .with_columns(pl.col("d").cum_sum().alias("running"))
        .collect(engine=ENGINE)
    )
    # The task columns are 8-byte integers without nulls, so are the steps.
    return RunningTasks(int_array(events["t"]), int_array(events["running"]))


def capped_steps(frame: pl.LazyFrame, keys: list[str], slots: Mapping[str, int]) -> pl.LazyFrame:
    """The launch (+1) and end (-1) steps `d` at time `t` of `frame`'s tasks, grouped by `keys`,
    with each executor's running count capped at its task slots (`slots`, by executor id; an
    executor not there is not capped).

    A task's finish time is set when the driver has handled its result, after the executor's
    slot was offered to the next task: the logged intervals of one executor overlap, by more
    when the driver is busy (2 slots seemed to run 8 tiny tasks at once). A step the cap
    absorbs becomes 0; without overlaps every step is kept as it was."""
    group = [*keys, "executor_id"]
    ends_at = pl.max_horizontal("launch_ms", "finish_ms")
    # The executor ids are categorical: their caps are looked up by category code.
    ids = (
        frame.select(pl.col("executor_id").unique())
        .with_columns(pl.col("executor_id").to_physical().alias("code"))
        .collect(engine=ENGINE)
    )
    caps = {int(code): slots.get(str(name), UNCAPPED) for name, code in ids.iter_rows() if name}
    cap = (
        pl.col("executor_id")
        .to_physical()
        .replace_strict(caps, default=UNCAPPED, return_dtype=pl.Int64)
    )
    same_group = pl.all_horizontal([pl.col(k) == pl.col(k).shift(1) for k in group])
    return (
        pl.concat(
            [
                frame.select(*group, pl.col("launch_ms").alias("t"), pl.lit(1).alias("d")),
                frame.select(*group, ends_at.alias("t"), pl.lit(-1).alias("d")),
            ]
        )
        # Each group's steps sum to 0: sorted by group, the plain cumulative sum is the
        # group's running count.
        .sort([*group, "t", "d"])
        .with_columns(pl.min_horizontal(pl.col("d").cum_sum(), cap).alias("capped"))
        .select(
            *keys,
            "t",
            (
                pl.col("capped") - pl.when(same_group).then(pl.col("capped").shift(1)).otherwise(0)
            ).alias("d"),
        )
    )


UNCAPPED = 1 << 40
"""The cap of an executor whose task slots are not known."""


def _split(total: float, weights: list[float]) -> list[int]:
    """Split `total` ms by `weights` into ints that add up to round(total)."""
    whole = sum(weights)
    target = max(0, round(total))
    if whole <= 0:
        return [target] + [0] * (len(weights) - 1)
    parts = [int(total * w / whole) for w in weights]
    parts[weights.index(max(weights))] += target - sum(parts)
    return parts


def take_stage_walls(
    app: Application,
    tasks: TaskTable,
    capacity: Capacity,
    run_divisor: int = 1,
    running: RunningTasks | None = None,
    slots: Mapping[str, int] | None = None,
) -> dict[tuple[int, int], StageWall]:
    """Take apart the wall time of every stage attempt with a submission and a completion.

    `run_divisor` is what Spark multiplied executor run times by (`spark.task.cpus` from Spark
    4.0, see `attribution.task_cpus`); `running` is `running_tasks(tasks)`, made here if not
    given; `slots` caps each executor's running count (`capped_steps`).
    """
    figures = _task_figures(tasks, max(1, run_divisor), slots)
    if running is None:
        running = running_tasks(tasks, slots)
    out: dict[tuple[int, int], StageWall] = {}
    for s in app.stages:
        if s.submission_ms is None or s.completion_ms is None:
            continue
        start, end = s.submission_ms, max(s.completion_ms, s.submission_ms)
        key = (s.stage_id, s.attempt_id)
        profile = capacity.profile(s.resource_profile_id)
        # Waiting and queueing are judged on the slots the scheduler would offer: an executor
        # dynamic allocation had released is still alive but takes no task.
        offered = capacity.offered_profile(s.resource_profile_id)
        f = figures.get(key)
        if f is None or not f["n"]:
            # No task launched: it waited for executors, queued behind other stages' tasks, or
            # neither and ended (cancelled, failed): not the driver holding tasks it never had.
            waiting = offered.without_slots_ms(start, end)
            queued = min(end - start - waiting, running.busy_ms(start, end, offered))
            out[key] = StageWall(
                stage_id=s.stage_id,
                stage_attempt_id=s.attempt_id,
                start_ms=start,
                end_ms=end,
                first_launch_ms=None,
                slots=profile.most(start, end),
                n_tasks=0,
                peak_running=0,
                wait_executor_ms=waiting,
                queued_ms=queued,
                scheduler_delay_ms=0,
                deserialize_ms=0,
                run_ms=0,
                gc_ms=0,
                fetch_wait_ms=0,
                result_ms=0,
                tail_ms=0,
                not_launched_ms=end - start - waiting - queued,
            )
            continue
        first = min(max(f["first_launch"], start), end)
        last = min(max(f["last_finish"], first), end)
        tail_start = min(max(f["tail_start"] or last, first), last)
        waiting = offered.without_slots_ms(start, first)
        queued = min(first - start - waiting, running.busy_ms(start, first, offered))
        gaps = min(f["gaps"], tail_start - first)
        # A gap while every slot ran other stages' tasks is queueing, not scheduling.
        queued += min(gaps, sum(running.busy_ms(a, b, offered) for a, b in f.gaps))
        active = tail_start - first - gaps
        run = min(f["run"], f["dur"])
        deser = min(f["deser"], f["dur"] - run)
        res = min(f["res"], f["dur"] - run - deser)
        in_task_delay = max(0, f["dur"] - run - deser - res)
        if f["dur"] <= 0:
            run, deser, res, in_task_delay = 1, 0, 0, 0
        deser_w, run_w, res_w, delay_w = _split(active, [deser, run, res, in_task_delay])
        run_parts = max(run, 1)
        gc_w = min(run_w, int(run_w * min(f["gc"], run) / run_parts))
        fetch_w = min(run_w - gc_w, int(run_w * min(f["fetch"], run) / run_parts))
        tail = last - tail_start
        tail_delay = tail_deser = 0
        if f["tail_dur"] > 0:
            tail_delay = int(tail * min(f["tail_delay"], f["tail_dur"]) / f["tail_dur"])
            tail_deser = min(
                tail - tail_delay, int(tail * min(f["tail_deser"], f["tail_dur"]) / f["tail_dur"])
            )
        out[key] = StageWall(
            stage_id=s.stage_id,
            stage_attempt_id=s.attempt_id,
            start_ms=start,
            end_ms=end,
            first_launch_ms=first,
            slots=profile.most(first, last),
            n_tasks=f["n"],
            peak_running=f["peak"],
            wait_executor_ms=waiting,
            queued_ms=queued,
            scheduler_delay_ms=(first - start - waiting)
            + gaps
            - queued
            + delay_w
            + tail_delay
            + (end - last),
            deserialize_ms=deser_w + tail_deser,
            run_ms=run_w,
            gc_ms=gc_w,
            fetch_wait_ms=fetch_w,
            result_ms=res_w,
            tail_ms=tail - tail_delay - tail_deser,
        )
    return out


PARTS = (
    "wait_executor_ms",
    "queued_ms",
    "not_launched_ms",
    "scheduler_delay_ms",
    "deserialize_ms",
    "run_ms",
    "result_ms",
    "tail_ms",
)
"""The fields of `StageWall` that add up to its wall time, in timeline order."""


def stage_parts(walls: dict[tuple[int, int], StageWall], stage_id: int) -> dict[str, int]:
    """Return a stage's wall parts (`PARTS`, plus `gc_ms` and `fetch_wait_ms`) summed over its
    attempts; empty for a stage with no attempt taken apart."""
    out: dict[str, int] = {}
    for (sid, _), wall in walls.items():
        if sid != stage_id:
            continue
        for name in (*PARTS, "gc_ms", "fetch_wait_ms"):
            out[name] = out.get(name, 0) + int(getattr(wall, name))
    return out
