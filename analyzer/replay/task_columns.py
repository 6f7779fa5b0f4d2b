"""Columnar storage of every task attempt, as typed arrays.

A large log has a million task events; one Python object per task would cost more memory than
the log. Each attribute is an `array('q')` column (strings as codes into a small dictionary),
turned into polars frames by the aggregation layer.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from operator import attrgetter

from analyzer.eventlog.events import (
    InputMetrics,
    OutputMetrics,
    PushShuffleReadMetrics,
    ShuffleReadMetrics,
    ShuffleWriteMetrics,
    TaskEnd,
    TaskInfo,
    TaskMetrics,
)

INT_COLUMNS = (
    "stage_id",
    "stage_attempt_id",
    "task_id",
    "index",
    "partition_id",
    "attempt",
    "launch_ms",
    "finish_ms",
    "duration_ms",
    "getting_result_ms",
    "successful",
    "failed",
    "killed",
    "speculative",
    "run_ms",
    "cpu_ns",
    "deserialize_ms",
    "deserialize_cpu_ns",
    "gc_ms",
    "result_size_bytes",
    "result_serialization_ms",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "peak_execution_memory_bytes",
    "shuffle_read_bytes",
    "shuffle_remote_bytes_read",
    "shuffle_local_bytes_read",
    "shuffle_remote_bytes_read_to_disk",
    "shuffle_read_records",
    "shuffle_fetch_wait_ms",
    "shuffle_remote_blocks_fetched",
    "shuffle_local_blocks_fetched",
    "shuffle_remote_reqs_duration_ms",
    "shuffle_write_bytes",
    "shuffle_write_records",
    "shuffle_write_time_ns",
    "input_bytes",
    "input_records",
    "output_bytes",
    "output_records",
)
STR_COLUMNS = ("executor_id", "host", "locality", "end_reason", "task_type")
PUSH_COLUMNS = (
    ("shuffle_corrupt_merged_block_chunks", "corrupt_merged_block_chunks"),
    ("shuffle_merged_fetch_fallback_count", "merged_fetch_fallback_count"),
    ("shuffle_remote_merged_blocks_fetched", "remote_merged_blocks_fetched"),
    ("shuffle_local_merged_blocks_fetched", "local_merged_blocks_fetched"),
    ("shuffle_remote_merged_chunks_fetched", "remote_merged_chunks_fetched"),
    ("shuffle_local_merged_chunks_fetched", "local_merged_chunks_fetched"),
    ("shuffle_remote_merged_bytes_read", "remote_merged_bytes_read"),
    ("shuffle_local_merged_bytes_read", "local_merged_bytes_read"),
    ("shuffle_remote_merged_reqs_duration_ms", "remote_merged_reqs_duration_ms"),
)
"""Push-based shuffle read metrics: (column name, `PushShuffleReadMetrics` attribute). They are
non-zero only with push-based shuffle (YARN with the external shuffle service), so they are kept
for the tasks that have one non-zero, not as full columns."""


@dataclass
class StringCodes:
    """A column of strings stored as int codes into a list of distinct values."""

    codes: array[int] = field(default_factory=lambda: array("i"))
    values: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def append(self, value: str) -> None:
        """Append one value."""
        code = self.index.get(value)
        if code is None:
            code = len(self.values)
            self.index[value] = code
            self.values.append(value)
        self.codes.append(code)

    def extend(self, values: list[str]) -> None:
        """Append several values."""
        index = self.index
        for value in dict.fromkeys(values):
            if value not in index:
                index[value] = len(self.values)
                self.values.append(value)
        self.codes.extend(map(index.__getitem__, values))


@dataclass
class TaskData:
    """The columns of every task attempt, handed over by `TaskColumns.take`."""

    n_rows: int
    ints: dict[str, array[int]]
    """Integer columns by name (booleans as 0/1)."""
    strs: dict[str, StringCodes]
    """String columns by name, as codes into distinct values."""
    failure_reasons: dict[int, str]
    """Row number → one-line reason, for attempts that did not succeed."""
    not_in_task_store: set[int] = field(default_factory=set)
    """Rows Spark's History Server does not record as a task (see `TaskColumns.exclude_row`)."""
    push_metrics: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Row number → its `PUSH_COLUMNS` values, for rows with one of them non-zero."""


_BATCH = 128
"""Task-end events buffered before they are turned into columns, a batch at a time."""

_INFO_COLUMNS = (
    ("task_id", "task_id"),
    ("index", "index"),
    ("partition_id", "partition_id"),
    ("attempt", "attempt"),
    ("launch_ms", "launch_ms"),
    ("finish_ms", "finish_ms"),
)
_METRIC_COLUMNS = (
    ("run_ms", "run_ms"),
    ("cpu_ns", "cpu_ns"),
    ("deserialize_ms", "deserialize_ms"),
    ("deserialize_cpu_ns", "deserialize_cpu_ns"),
    ("gc_ms", "gc_ms"),
    ("result_size_bytes", "result_size_bytes"),
    ("result_serialization_ms", "result_serialization_ms"),
    ("memory_bytes_spilled", "memory_bytes_spilled"),
    ("disk_bytes_spilled", "disk_bytes_spilled"),
    ("peak_execution_memory_bytes", "peak_execution_memory_bytes"),
)
_SHUFFLE_READ_COLUMNS = (
    ("shuffle_remote_bytes_read", "remote_bytes_read"),
    ("shuffle_local_bytes_read", "local_bytes_read"),
    ("shuffle_remote_bytes_read_to_disk", "remote_bytes_read_to_disk"),
    ("shuffle_read_records", "records_read"),
    ("shuffle_fetch_wait_ms", "fetch_wait_ms"),
    ("shuffle_remote_blocks_fetched", "remote_blocks_fetched"),
    ("shuffle_local_blocks_fetched", "local_blocks_fetched"),
    ("shuffle_remote_reqs_duration_ms", "remote_reqs_duration_ms"),
)
_SHUFFLE_WRITE_COLUMNS = (
    ("shuffle_write_bytes", "bytes_written"),
    ("shuffle_write_records", "records_written"),
    ("shuffle_write_time_ns", "write_time_ns"),
)
_INPUT_COLUMNS = (("input_bytes", "bytes_read"), ("input_records", "records_read"))
_OUTPUT_COLUMNS = (("output_bytes", "bytes_written"), ("output_records", "records_written"))
_NO_METRICS = TaskMetrics()
_NO_SHUFFLE_READ = ShuffleReadMetrics()
_NO_SHUFFLE_WRITE = ShuffleWriteMetrics()
_NO_INPUT = InputMetrics()
_NO_OUTPUT = OutputMetrics()
_NO_PUSH = PushShuffleReadMetrics()
_PUSH_ATTRS = tuple(attr for _, attr in PUSH_COLUMNS)


def _longs(values: list[int]) -> array[int]:
    """Values computed from Java longs, as an int64 array, wrapped on overflow as Java's `long`
    arithmetic wraps (Spark computes these sums and differences the same way)."""
    try:
        return array("q", values)
    except OverflowError:
        return array("q", [(v + (1 << 63)) % (1 << 64) - (1 << 63) for v in values])


class TaskColumns:
    """Every task attempt of the application, one row per TaskEnd, in log order.

    `append` only buffers the event; every `_BATCH` events (and before any column is read) the
    buffer is turned into columns with one C-level pass per column (`map(attrgetter(...))`),
    which costs a fraction of appending forty values one by one per task.
    """

    def __init__(self) -> None:
        self._ints: dict[str, array[int]] = {name: array("q") for name in INT_COLUMNS}
        self._strs: dict[str, StringCodes] = {name: StringCodes() for name in STR_COLUMNS}
        self._failure_reasons: dict[int, str] = {}
        self._not_in_task_store: set[int] = set()
        self._push_metrics: dict[int, tuple[int, ...]] = {}
        self._stage_sql_ids: dict[tuple[int, int], set[int]] = {}
        self._pending: list[TaskEnd] = []
        self._n_flushed = 0
        self._taken = False

    def take(self) -> TaskData:
        """Hand over the columns, leaving this object empty: the aggregation layer frees each
        column once polars holds a copy, so the task data is never held twice in full.

        Raises `RuntimeError` if called twice, or on `append` after it.
        """
        if self._taken:
            raise RuntimeError("the task columns were already taken")
        self.flush()
        self._taken = True
        data = TaskData(
            self._n_flushed,
            self._ints,
            self._strs,
            self._failure_reasons,
            self._not_in_task_store,
            self._push_metrics,
        )
        self._ints, self._strs, self._failure_reasons = {}, {}, {}
        self._not_in_task_store, self._push_metrics = set(), {}
        return data

    @property
    def stage_sql_accumulators(self) -> dict[tuple[int, int], set[int]]:
        """(stage id, attempt) → ids of the SQL accumulators its tasks updated (string updates)."""
        self.flush()
        return self._stage_sql_ids

    @property
    def n_rows(self) -> int:
        """Number of task attempts recorded."""
        return self._n_flushed + len(self._pending)

    def append(self, event: TaskEnd) -> int:
        """Record one task-end event (with Task Info); return its row number."""
        assert event.info is not None
        pending = self._pending
        pending.append(event)
        if len(pending) >= _BATCH:
            self.flush()
            return self._n_flushed - 1
        return self._n_flushed + len(pending) - 1

    def exclude_row(self, row: int) -> None:
        """Mark a row as one Spark's History Server does not record as a task.

        Its task list holds a task from its TaskStart until its first TaskEnd; a TaskEnd without
        a TaskStart before it, or a second TaskEnd of the same task (a `Resubmitted` one), only
        updates counters. Kept as a set: such rows are rare.
        """
        if self._taken:
            raise RuntimeError("the task columns were already taken")
        self._not_in_task_store.add(row)

    def flush(self) -> None:
        """Turn the buffered events into columns."""
        events = self._pending
        if not events:
            return
        if self._taken:
            raise RuntimeError("the task columns were already taken")
        self._pending = []
        base = self._n_flushed
        self._n_flushed += len(events)
        c = self._ints
        infos: list[TaskInfo] = [e.info for e in events]  # type: ignore[misc]
        c["stage_id"].extend(map(attrgetter("stage_id"), events))
        c["stage_attempt_id"].extend(map(attrgetter("stage_attempt_id"), events))
        for name, attr in _INFO_COLUMNS:
            c[name].extend(map(attrgetter(attr), infos))
        c["duration_ms"].extend(
            _longs([i.finish_ms - i.launch_ms if i.finish_ms else 0 for i in infos])
        )
        # Spark's getting-result time: from the start of the result fetch to the task's end.
        c["getting_result_ms"].extend(
            _longs(
                [
                    i.finish_ms - i.getting_result_start_ms
                    if i.getting_result_start_ms > 0 and i.finish_ms
                    else 0
                    for i in infos
                ]
            )
        )
        successful = [i.finish_ms != 0 and not i.failed and not i.killed for i in infos]
        c["successful"].extend(successful)
        c["failed"].extend(map(attrgetter("failed"), infos))
        c["killed"].extend(map(attrgetter("killed"), infos))
        c["speculative"].extend(map(attrgetter("speculative"), infos))
        metrics = [e.metrics or _NO_METRICS for e in events]
        for name, attr in _METRIC_COLUMNS:
            c[name].extend(map(attrgetter(attr), metrics))
        reads = [m.shuffle_read or _NO_SHUFFLE_READ for m in metrics]
        c["shuffle_read_bytes"].extend(
            _longs([r.remote_bytes_read + r.local_bytes_read for r in reads])
        )
        for columns, parts in (
            (_SHUFFLE_READ_COLUMNS, reads),
            (_SHUFFLE_WRITE_COLUMNS, [m.shuffle_write or _NO_SHUFFLE_WRITE for m in metrics]),
            (_INPUT_COLUMNS, [m.input or _NO_INPUT for m in metrics]),
            (_OUTPUT_COLUMNS, [m.output or _NO_OUTPUT for m in metrics]),
        ):
            for name, attr in columns:
                c[name].extend(map(attrgetter(attr), parts))
        for row, read in enumerate(reads, base):
            push = read.push
            if push is not None and push != _NO_PUSH:
                self._push_metrics[row] = tuple(map(push.__getattribute__, _PUSH_ATTRS))
        s = self._strs
        s["executor_id"].extend([i.executor_id for i in infos])
        s["host"].extend([i.host for i in infos])
        s["locality"].extend([i.locality for i in infos])
        s["end_reason"].extend([e.reason.reason for e in events])
        s["task_type"].extend([e.task_type for e in events])
        stage_ids = self._stage_sql_ids
        for row, (event, info, ok) in enumerate(zip(events, infos, successful, strict=True), base):
            if not ok:
                summary = event.reason.summary()
                if summary:
                    self._failure_reasons[row] = summary[:500]
            accumulables = info.accumulables
            if not accumulables:
                continue
            key = (event.stage_id, event.stage_attempt_id)
            ids = stage_ids.get(key)
            if ids is None:
                ids = stage_ids[key] = set()
            # Spark writes SQL metric updates as strings, internal metrics as numbers.
            ids.update([acc.id for acc in accumulables if type(acc.update) is str])
