"""Per stage attempt: the task-time, failure, spill, GC and size figures the finding rules read.

The rules in `analyzer.insights` are plain Python over these frozen records; all polars work on
the task table happens here.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.shared import SharedValues
from analyzer.aggregate.tables import TaskTable, stage_pieces

FAILED_TASK_IDS_KEPT = 10
"""How many failed attempt ids a record keeps (the counts are complete)."""


@dataclass(frozen=True, slots=True)
class StageTaskStats:
    """Task figures of one stage attempt; durations are launch-to-finish times in ms.

    Slotted: a log of thousands of executions has tens of thousands of stage attempts, and an
    instance's dict of 39 fields would be 1.6 KB more than its slots.
    """

    stage_id: int
    stage_attempt_id: int
    n_attempts: int
    """Task attempts that ended (failed, killed and speculative included)."""
    n_successful: int
    n_failed: int
    n_killed: int
    n_speculative: int
    n_result_tasks: int
    """Attempts of type ResultTask (their results go to the driver)."""
    duration_sum_ms: int
    """Summed duration of every attempt: the task time the stage used."""
    median_duration_ms: int
    """Upper median duration of successful attempts (0 if none succeeded)."""
    max_duration_ms: int
    """Longest successful attempt."""
    slowest_task_id: int | None
    slowest_partition_id: int | None
    slowest_executor_id: str | None
    slowest_host: str | None
    run_sum_ms: int
    """Summed executor run time (excludes deserialization and result shipping)."""
    gc_sum_ms: int
    overhead_sum_ms: int
    """Summed duration minus run time of successful attempts: scheduling, (de)serialization."""
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    max_task_memory_bytes_spilled: int
    max_task_disk_bytes_spilled: int
    result_size_bytes: int
    """Summed serialized task results (what the driver receives for a ResultTask)."""
    getting_result_sum_ms: int
    result_serialization_sum_ms: int
    read_sum_bytes: int
    """Summed input plus shuffle-read bytes of successful attempts."""
    read_sum_records: int
    """Summed input plus shuffle-read records of successful attempts: how finely the stage's
    input could be divided at most (0 where the stage read nothing Spark counts, e.g. `range`)."""
    read_median_bytes: int
    read_max_bytes: int
    read_max_task_id: int | None
    shuffle_read_median_bytes: int
    shuffle_read_max_bytes: int
    shuffle_read_max_task_id: int | None
    failed_duration_sum_ms: int
    """Summed duration of failed and killed attempts: task time spent for nothing."""
    failed_task_ids: tuple[int, ...]
    """The first failed or killed attempts (at most `FAILED_TASK_IDS_KEPT`)."""
    n_fetch_failed: int
    n_executor_lost: int
    executor_lost_duration_sum_ms: int
    """Summed duration of the attempts that failed with ExecutorLostFailure."""
    first_failure_reason: str | None


def _int(value: object) -> int:
    return int(value) if value is not None else 0  # type: ignore[call-overload]


def _by_largest(column: str, key: pl.Expr) -> pl.Expr:
    """Return `column` of the first successful attempt (in log order) with the largest `key`."""
    ok = pl.col("successful")
    return (
        pl.col(column)
        .filter(ok)
        .sort_by(key.filter(ok), descending=True, maintain_order=True)
        .first()
    )


def aggregate_stage_tasks(tasks: TaskTable) -> dict[tuple[int, int], StageTaskStats]:
    """Return the task figures of every stage attempt, keyed by (stage id, attempt id)."""
    # A piece of whole stages at a time (`tables.stage_pieces`): the aggregation's scratch
    # columns are then a piece's, not every task's.
    shared = SharedValues()
    out: dict[tuple[int, int], StageTaskStats] = {}
    for piece in stage_pieces(tasks, small=True):
        out.update(_piece_stats(piece, shared))
    return out


def _piece_stats(
    piece: pl.LazyFrame, shared: SharedValues
) -> dict[tuple[int, int], StageTaskStats]:
    """`aggregate_stage_tasks` of a piece of the task table holding whole stages."""
    ok = pl.col("successful")
    not_ok = ~pl.col("successful")
    read = pl.col("input_bytes") + pl.col("shuffle_read_bytes")
    read_records = pl.col("input_records") + pl.col("shuffle_read_records")
    frame = (
        piece.sort("row")
        .group_by("stage_id", "stage_attempt_id")
        .agg(
            pl.len().alias("n_attempts"),
            ok.sum().alias("n_successful"),
            pl.col("failed").sum().alias("n_failed"),
            pl.col("killed").sum().alias("n_killed"),
            pl.col("speculative").sum().alias("n_speculative"),
            (pl.col("task_type") == "ResultTask").sum().alias("n_result_tasks"),
            pl.col("duration_ms").sum().alias("duration_sum_ms"),
            pl.col("duration_ms")
            .filter(ok)
            .quantile(0.5, interpolation="higher")
            .alias("median_duration_ms"),
            pl.col("duration_ms").filter(ok).max().alias("max_duration_ms"),
            _by_largest("task_id", pl.col("duration_ms")).alias("slowest_task_id"),
            _by_largest("partition_id", pl.col("duration_ms")).alias("slowest_partition_id"),
            _by_largest("executor_id", pl.col("duration_ms")).alias("slowest_executor_id"),
            _by_largest("host", pl.col("duration_ms")).alias("slowest_host"),
            pl.col("run_ms").sum().alias("run_sum_ms"),
            pl.col("gc_ms").sum().alias("gc_sum_ms"),
            (pl.col("duration_ms") - pl.col("run_ms"))
            .clip(lower_bound=0)
            .filter(ok)
            .sum()
            .alias("overhead_sum_ms"),
            pl.col("memory_bytes_spilled").sum().alias("memory_bytes_spilled"),
            pl.col("disk_bytes_spilled").sum().alias("disk_bytes_spilled"),
            pl.col("memory_bytes_spilled").max().alias("max_task_memory_bytes_spilled"),
            pl.col("disk_bytes_spilled").max().alias("max_task_disk_bytes_spilled"),
            pl.col("result_size_bytes")
            .filter(pl.col("task_type") == "ResultTask")
            .sum()
            .alias("result_size_bytes"),
            pl.col("getting_result_ms").sum().alias("getting_result_sum_ms"),
            pl.col("result_serialization_ms").sum().alias("result_serialization_sum_ms"),
            read.filter(ok).sum().alias("read_sum_bytes"),
            read_records.filter(ok).sum().alias("read_sum_records"),
            read.filter(ok).quantile(0.5, interpolation="higher").alias("read_median_bytes"),
            read.filter(ok).max().alias("read_max_bytes"),
            _by_largest("task_id", read).alias("read_max_task_id"),
            pl.col("shuffle_read_bytes")
            .filter(ok)
            .quantile(0.5, interpolation="higher")
            .alias("shuffle_read_median_bytes"),
            pl.col("shuffle_read_bytes").filter(ok).max().alias("shuffle_read_max_bytes"),
            _by_largest("task_id", pl.col("shuffle_read_bytes")).alias("shuffle_read_max_task_id"),
            pl.col("duration_ms").filter(not_ok).sum().alias("failed_duration_sum_ms"),
            pl.col("task_id").filter(not_ok).head(FAILED_TASK_IDS_KEPT).alias("failed_task_ids"),
            (pl.col("end_reason") == "FetchFailed").sum().alias("n_fetch_failed"),
            (pl.col("end_reason") == "ExecutorLostFailure").sum().alias("n_executor_lost"),
            pl.col("duration_ms")
            .filter(pl.col("end_reason") == "ExecutorLostFailure")
            .sum()
            .alias("executor_lost_duration_sum_ms"),
            pl.col("failure_reason").drop_nulls().first().alias("first_failure_reason"),
        )
        .collect(engine=ENGINE)
    )
    # Each value the one object of its value: the runs of a repeated query have stages of
    # equal sizes and counts, and a log of thousands of them holds a record per stage attempt.
    # The columns in the record's field order, counts and sums with nulls as 0, so that a row
    # goes through `SharedValues.numbers` at once.
    columns = []
    for name in _FIELDS:
        if name in _OPTIONAL_INTS:
            columns.append(pl.col(name).cast(pl.Int64))
        elif name in _NOT_INTS:
            columns.append(pl.col(name))
        else:
            columns.append(pl.col(name).fill_null(0).cast(pl.Int64))
    one = shared.one
    out: dict[tuple[int, int], StageTaskStats] = {}
    for row in frame.select(columns).iter_rows():
        values = list(shared.numbers(row))
        values[_FAILED_IDS] = one(tuple(int(t) for t in row[_FAILED_IDS] or ()))
        for i in _STRINGS:
            values[i] = one(row[i])
        record = StageTaskStats(*values)
        out[(record.stage_id, record.stage_attempt_id)] = record
    return out


_FIELDS = tuple(StageTaskStats.__dataclass_fields__)
_OPTIONAL_INTS = frozenset(
    ("slowest_task_id", "slowest_partition_id", "read_max_task_id", "shuffle_read_max_task_id")
)
_NOT_INTS = frozenset(
    ("slowest_executor_id", "slowest_host", "failed_task_ids", "first_failure_reason")
)
_FAILED_IDS = _FIELDS.index("failed_task_ids")
_STRINGS = tuple(
    _FIELDS.index(n) for n in ("slowest_executor_id", "slowest_host", "first_failure_reason")
)


def executor_busy_ms(tasks: TaskTable) -> dict[str, int]:
    """Return, per executor id, the summed duration of every task attempt it ran (ms)."""
    frame = (
        tasks.lazy()
        .group_by("executor_id")
        .agg(pl.col("duration_ms").sum().alias("busy_ms"))
        .collect(engine=ENGINE)
    )
    return {str(r["executor_id"]): _int(r["busy_ms"]) for r in frame.iter_rows(named=True)}


@dataclass(frozen=True, slots=True)
class TaskDeserialization:
    """One task attempt of a stage attempt with the time it spent deserializing (ms)."""

    task_id: int
    executor_id: str
    launch_ms: int
    """Launch time, epoch ms."""
    finish_ms: int
    """Finish time, epoch ms."""
    duration_ms: int
    deserialize_ms: int
    """Executor Deserialize Time: on an executor's first task it takes in fetching the
    application's jars and files and loading classes (Spark's `Executor.TaskRunner`)."""


def stage_deserialization(
    tasks: TaskTable, stage_id: int, stage_attempt_id: int
) -> tuple[TaskDeserialization, ...]:
    """Return a stage attempt's task attempts, the longest deserialization first."""
    columns = ("task_id", "executor_id", "launch_ms", "finish_ms", "duration_ms", "deserialize_ms")
    frame = (
        tasks.lazy()
        .filter((pl.col("stage_id") == stage_id) & (pl.col("stage_attempt_id") == stage_attempt_id))
        .select(columns)
        .sort(["deserialize_ms", "task_id"], descending=[True, False])
        .collect(engine=ENGINE)
    )
    return tuple(
        TaskDeserialization(int(r[0]), str(r[1]), _int(r[2]), _int(r[3]), _int(r[4]), _int(r[5]))
        for r in frame.iter_rows()
    )


def longest_task_gaps_ms(tasks: TaskTable) -> dict[str, tuple[int, int, int]]:
    """Per executor id: its first task's launch, its last task's end and the longest stretch
    between them with none of its tasks running (epoch ms, ms): with the stretches before its
    first task and after its last one, what dynamic allocation's idle timeout measures."""
    frame = (
        tasks.lazy()
        .select(
            pl.col("executor_id").cast(pl.String),
            "launch_ms",
            pl.max_horizontal("launch_ms", "finish_ms").alias("end_ms"),
        )
        .sort(["executor_id", "launch_ms"])
        .with_columns(
            pl.col("end_ms")
            .cum_max()
            .over("executor_id")
            .shift(1)
            .over("executor_id")
            .alias("busy_to")
        )
        .group_by("executor_id")
        .agg(
            pl.col("launch_ms").min().alias("first"),
            pl.col("end_ms").max().alias("last"),
            (pl.col("launch_ms") - pl.col("busy_to")).clip(lower_bound=0).max().alias("gap"),
        )
        .collect(engine=ENGINE)
    )
    return {
        str(e): (_int(first), _int(last), _int(gap or 0))
        for e, first, last, gap in frame.iter_rows()
        if e is not None
    }


def started_beside(
    tasks: TaskTable, executor_id: str, task_id: int, launch_ms: int, deserialized_by_ms: int
) -> tuple[TaskDeserialization, ...]:
    """The other task attempts (of any stage) an executor launched while `task_id` was
    deserializing (from its launch, `launch_ms`, to `deserialized_by_ms`), the shortest
    deserialization first: what the executor's own start-up would have held too."""
    columns = ("task_id", "executor_id", "launch_ms", "finish_ms", "duration_ms", "deserialize_ms")
    frame = (
        tasks.lazy()
        .filter(
            (pl.col("executor_id").cast(pl.String) == executor_id)
            & (pl.col("task_id") != task_id)
            & pl.col("launch_ms").is_between(launch_ms, deserialized_by_ms)
        )
        .select(columns)
        .sort(["deserialize_ms", "task_id"])
        .collect(engine=ENGINE)
    )
    return tuple(
        TaskDeserialization(int(r[0]), str(r[1]), _int(r[2]), _int(r[3]), _int(r[4]), _int(r[5]))
        for r in frame.iter_rows()
    )


def executor_task_spans(tasks: TaskTable) -> dict[str, tuple[int, int]]:
    """Return, per executor id, its first task's launch and its last task's finish (epoch ms):
    an executor whose first launch is after a moment had run no task by then (cold)."""
    frame = (
        tasks.lazy()
        .group_by("executor_id")
        .agg(pl.col("launch_ms").min().alias("first"), pl.col("finish_ms").max().alias("last"))
        .collect(engine=ENGINE)
    )
    return {str(r[0]): (_int(r[1]), _int(r[2])) for r in frame.iter_rows()}


def tasks_running_at(tasks: TaskTable, moment_ms: int) -> dict[str, int]:
    """Return, per executor id, how many task attempts were running at `moment_ms` (launched
    at or before it, finished after it); executors running none are left out."""
    frame = (
        tasks.lazy()
        .filter((pl.col("launch_ms") <= moment_ms) & (pl.col("finish_ms") > moment_ms))
        .group_by("executor_id")
        .len()
        .collect(engine=ENGINE)
    )
    return {str(r[0]): int(r[1]) for r in frame.iter_rows()}


def end_saved_ms(
    tasks: TaskTable,
    stage_id: int,
    stage_attempt_id: int,
    task_id: int | Collection[int],
    duration_ms: int,
    slots: int,
) -> int:
    """How much sooner a stage attempt would have ended had task `task_id` (or each of several
    task ids) run `duration_ms` (ms, at least 0): its task attempts laid out in launch order on
    `slots` task slots, each on the first slot free, once as they ran and once with those tasks
    shortened. The stage ends with its last task, so a slow task that finished before another
    one saves little, and a slot it frees early takes the tasks queued behind it."""
    wanted = [task_id] if isinstance(task_id, int) else list(task_id)
    ran = pl.col("duration_ms").clip(lower_bound=0)
    shortened = (
        pl.when(pl.col("task_id").is_in(wanted))
        .then(pl.min_horizontal(ran, pl.lit(max(duration_ms, 0))))
        .otherwise(ran)
    )
    return _laid_out_saving_ms(tasks, stage_id, stage_attempt_id, shortened, slots)


@dataclass(frozen=True)
class HostGc:
    """The host whose tasks spent the largest share of their time in GC in one stage attempt,
    against its other hosts."""

    host: str
    n_tasks: int
    n_executors: int
    gc_share: float
    """GC time over task time, of this host's successful tasks."""
    gc_share_elsewhere: float
    """The same of the other hosts' tasks."""
    n_other_hosts: int


HOST_GC_FACTOR = 3.0
"""A host's GC share this many times the other hosts' makes it an outlier."""
HOST_GC_PART = 0.4
"""...when it also holds at least this share of the stage's GC time."""


def gc_host_outlier(tasks: TaskTable, stage_id: int, stage_attempt_id: int) -> HostGc | None:
    """The host whose tasks collected garbage far longer than the other hosts' in a stage
    attempt (`HOST_GC_FACTOR` times their share, holding `HOST_GC_PART` of the GC), or None:
    the same work collected more garbage there, a host's problem (memory, swap, a noisy
    neighbour) before the job's."""
    frame = (
        tasks.lazy()
        .filter(
            (pl.col("stage_id") == stage_id)
            & (pl.col("stage_attempt_id") == stage_attempt_id)
            & pl.col("successful")
        )
        .group_by("host")
        .agg(
            pl.len().alias("n"),
            pl.col("executor_id").n_unique().alias("executors"),
            pl.col("gc_ms").clip(lower_bound=0).sum().alias("gc"),
            pl.col("duration_ms").clip(lower_bound=0).sum().alias("dur"),
        )
        .collect(engine=ENGINE)
    )
    if frame.height < 2:
        return None
    rows = [
        (str(h), int(n), int(e), int(g or 0), int(d or 0))
        for h, n, e, g, d in frame.iter_rows()
        if h is not None
    ]
    total_gc = sum(r[3] for r in rows)
    if total_gc <= 0:
        return None
    host, n, executors, gc, dur = max(rows, key=lambda r: (r[3] / r[4] if r[4] else 0.0, r[0]))
    other_gc = total_gc - gc
    other_dur = sum(r[4] for r in rows) - dur
    if dur <= 0 or other_dur <= 0 or gc < HOST_GC_PART * total_gc:
        return None
    share, elsewhere = gc / dur, other_gc / other_dur
    if share < HOST_GC_FACTOR * elsewhere:
        return None
    return HostGc(host, n, executors, share, elsewhere, len(rows) - 1)


def part_saved_ms(
    tasks: TaskTable, stage_id: int, stage_attempt_id: int, column: str, slots: int
) -> int:
    """How much sooner a stage attempt would have ended had each of its task attempts spent
    none of `column` (ms, such as `gc_ms`): laid out in launch order on `slots` slots as in
    `end_saved_ms`, once as they ran and once shortened. Time spent by tasks that other,
    longer ones outlast saves nothing."""
    ran = pl.col("duration_ms").clip(lower_bound=0)
    shortened = (ran - pl.col(column).clip(lower_bound=0, upper_bound=ran)).clip(lower_bound=0)
    return _laid_out_saving_ms(tasks, stage_id, stage_attempt_id, shortened, slots)


def _laid_out_saving_ms(
    tasks: TaskTable, stage_id: int, stage_attempt_id: int, shortened: pl.Expr, slots: int
) -> int:
    """How much sooner a stage attempt's task attempts, laid out in launch order on `slots`
    slots (`_laid_out_ms`), end with each one's duration replaced by `shortened`."""
    frame = (
        tasks.lazy()
        .filter((pl.col("stage_id") == stage_id) & (pl.col("stage_attempt_id") == stage_attempt_id))
        .sort(["launch_ms", "task_id"])
        .select(pl.col("duration_ms").clip(lower_bound=0).alias("ran"), shortened.alias("short"))
        .collect(engine=ENGINE)
    )
    ran, short = frame["ran"].to_list(), frame["short"].to_list()
    return max(0, _laid_out_ms(ran, slots) - _laid_out_ms(short, slots))


def _laid_out_ms(durations_ms: list[int], slots: int) -> int:
    """When the last of `durations_ms` ends, each started in order on the first of `slots`
    slots free (all free at 0).

    A slow first task on two slots, then the same with it at the median: 1.4 s sooner.

    >>> _laid_out_ms([4000, 1300, 1300, 1300], 2), _laid_out_ms([1300] * 4, 2)
    (4000, 2600)

    A slow task that a later, long one outlasts saves nothing:

    >>> _laid_out_ms([3000, 1000, 5000], 3) - _laid_out_ms([1000, 1000, 5000], 3)
    0
    """
    free = [0] * max(1, min(slots, len(durations_ms)))
    end = 0
    for d in durations_ms:
        t = heapq.heappop(free) + d
        heapq.heappush(free, t)
        end = max(end, t)
    return end


def cold_starts(tasks: TaskTable, stage_ids: Iterable[int]) -> tuple[set[int], dict[int, int]]:
    """Of `stage_ids` (stages that share a per-executor start-up cost, such as Python workers),
    with a task cold when it launched before any task of those stages had finished on its
    executor:

    - the stages whose every task attempt was cold: each paid that start-up, and none ran
      without it to compare;
    - per stage with warm successful tasks, the run time by which its cold successful tasks
      outlasted their median: the start-up's cost as the stage's own tasks show it.
    """
    wanted = sorted(set(stage_ids))
    if not wanted:
        return set(), {}
    cold = pl.col("cold")
    ran = pl.col("run_ms")
    warm_ms = ran.filter(pl.col("successful") & ~cold).median()
    frame = (
        tasks.lazy()
        .filter(pl.col("stage_id").is_in(wanted))
        .select("stage_id", "executor_id", "launch_ms", "finish_ms", "run_ms", "successful")
        .with_columns(
            (pl.col("launch_ms") < pl.col("finish_ms").min().over("executor_id")).alias("cold")
        )
        .group_by("stage_id")
        .agg(
            cold.all().alias("all_cold"),
            warm_ms.alias("warm_ms"),
            (ran.filter(pl.col("successful") & cold) - warm_ms)
            .clip(lower_bound=0)
            .sum()
            .alias("excess"),
        )
        .collect(engine=ENGINE)
    )
    first_use = {int(sid) for sid, all_cold, *_ in frame.iter_rows() if all_cold}
    excess = {
        int(sid): int(ms)
        for sid, _, warm, ms in frame.iter_rows()
        if warm is not None and ms is not None
    }
    return first_use, excess


def task_durations(tasks: TaskTable, task_ids: Iterable[int]) -> dict[int, int]:
    """Return the duration (ms) of the given task attempts, by task id."""
    wanted = list(task_ids)
    frame = (
        tasks.lazy()
        .filter(pl.col("task_id").is_in(wanted))
        .select("task_id", "duration_ms")
        .collect(engine=ENGINE)
    )
    return {int(r[0]): int(r[1]) for r in frame.iter_rows()}


def task_input_bytes(tasks: TaskTable, task_id: int) -> int:
    """Return the input bytes (read from files) of a task attempt, 0 if it is not there."""
    frame = (
        tasks.lazy()
        .filter(pl.col("task_id") == task_id)
        .select("input_bytes")
        .collect(engine=ENGINE)
    )
    return int(frame["input_bytes"].max() or 0) if frame.height else 0  # type: ignore[arg-type]


def _successful_reads(
    tasks: TaskTable, stage_id: int, stage_attempt_id: int, *columns: str
) -> pl.DataFrame:
    """A stage attempt's successful tasks: their id, the records and bytes each read (input plus
    shuffle read) and `columns`."""
    return (
        tasks.lazy()
        .filter(
            (pl.col("stage_id") == stage_id)
            & (pl.col("stage_attempt_id") == stage_attempt_id)
            & pl.col("successful")
        )
        .select(
            "task_id",
            (pl.col("input_records") + pl.col("shuffle_read_records")).alias("records"),
            (pl.col("input_bytes") + pl.col("shuffle_read_bytes")).alias("bytes"),
            *columns,
        )
        .collect(engine=ENGINE)
    )


def is_first_wave_with_even_data(
    tasks: TaskTable, stage_id: int, stage_attempt_id: int, task_id: int, slack: float = 1.5
) -> bool:
    """True when a slow task ran in its stage's first wave and handled no more data than usual.

    A task launched before any other task of its stage attempt finished, reading at most
    `slack` × the median task's records and bytes, is slow for its executor's sake (a cold JVM:
    code generation and just-in-time compilation), not because of its data.
    """
    stage = _successful_reads(tasks, stage_id, stage_attempt_id, "launch_ms", "finish_ms")
    if not stage.height:
        return False
    task = stage.filter(pl.col("task_id") == task_id)
    if not task.height:
        return False
    first_finish = int(stage["finish_ms"].min() or 0)  # type: ignore[arg-type]
    row = task.row(0, named=True)
    median_records = float(stage["records"].quantile(0.5) or 0)
    median_bytes = float(stage["bytes"].quantile(0.5) or 0)
    even = row["records"] <= slack * median_records and row["bytes"] <= slack * median_bytes
    return bool(even and row["launch_ms"] < first_finish)


def task_with_as_much_data(
    tasks: TaskTable, stage_id: int, stage_attempt_id: int, task_id: int, max_duration_ms: int
) -> tuple[int, int, int, int] | None:
    """Return a task that read as much as `task_id` yet took at most `max_duration_ms`, or None.

    Its stage attempt's successful task that read at least as many records and bytes (input
    plus shuffle read) as `task_id` in no more than `max_duration_ms` (the most bytes first):
    `(task id, bytes, records, duration ms)`. Such a task shows that the data alone does not
    make a task of this stage slow. None also when `task_id` read nothing: its data (a broadcast,
    generated rows, a source that logs no input metrics) is then not in these figures.
    """
    stage = _successful_reads(tasks, stage_id, stage_attempt_id, "duration_ms")
    slow = stage.filter(pl.col("task_id") == task_id)
    if not slow.height:
        return None
    slow_row = slow.row(0, named=True)
    slow_bytes, slow_records = slow_row["bytes"], slow_row["records"]
    if slow_bytes <= 0 and slow_records <= 0:
        return None
    peers = stage.filter(
        (pl.col("task_id") != task_id)
        & (pl.col("bytes") >= slow_bytes)
        & (pl.col("records") >= slow_records)
        & (pl.col("duration_ms") <= max_duration_ms)
    ).sort(["bytes", "task_id"], descending=[True, False])
    if not peers.height:
        return None
    peer = peers.row(0, named=True)
    return int(peer["task_id"]), int(peer["bytes"]), int(peer["records"]), int(peer["duration_ms"])
