"""Turn task-start and task-end events, in log order, into typed columns and segments' totals.

A `TaskRecorder` runs in the replay itself or in a worker process over a part of the log
(`replay.parallel`): it buffers task ends and turns them into columns a batch at a time, and
adds them to the totals of the segment they belong to.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from operator import attrgetter
from typing import Any

import msgspec
from msgspec.structs import astuple

from analyzer.eventlog.task_events import (
    LONG_MAX,
    LONG_MIN,
    InputMetrics,
    OutputMetrics,
    PushShuffleReadMetrics,
    ShuffleReadMetrics,
    ShuffleWriteMetrics,
    TaskEnd,
    TaskInfo,
    TaskMetrics,
    TaskStart,
)
from analyzer.replay.task_arrays import (
    INT_COLUMNS,
    PUSH_COLUMNS,
    STR_COLUMNS,
    StringCodes,
    TaskChunk,
)
from analyzer.replay.task_segment import END_COUNTS, OTHER_END, SqlUpdates, TaskSegment

_BATCH = 128
"""Task-end events buffered before they are turned into columns, a batch at a time."""

_INFO_COLUMNS = (
    ("task_id", "task_id"),
    ("index", "index"),
    ("partition_id", "partition_id"),
    ("attempt", "attempt"),
    ("launch_ms", "launch_ms"),
    ("finish_ms", "finish_ms"),
    ("failed", "failed"),
    ("killed", "killed"),
    ("speculative", "speculative"),
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
_NO_SHUFFLE_READ = ShuffleReadMetrics()
_NO_PUSH = PushShuffleReadMetrics()
_PUSH_ATTRS = tuple(attr for _, attr in PUSH_COLUMNS)


def _positions(cls: type[msgspec.Struct]) -> dict[str, int]:
    """Field name → its position in the struct's `astuple`."""
    return {f.name: i for i, f in enumerate(msgspec.structs.fields(cls))}


def _at(columns: tuple[tuple[str, str], ...], cls: type[msgspec.Struct]) -> list[tuple[str, int]]:
    """(column name, position of its field in `cls`'s `astuple`)."""
    positions = _positions(cls)
    return [(name, positions[attr]) for name, attr in columns]


def _fields(rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The structs' tuples turned into one tuple per field."""
    return list(zip(*rows, strict=True))


_END_FIELDS = attrgetter("stage_id", "stage_attempt_id", "task_type", "reason", "info", "metrics")
"""The fields of a task end the columns take (its class may be a subclass with more)."""
_INFO_POS = _positions(TaskInfo)
_METRIC_POS = _positions(TaskMetrics)
_READ_POS = _positions(ShuffleReadMetrics)
_INFO_INT_FIELDS = _at(_INFO_COLUMNS, TaskInfo)
_INFO_STR_FIELDS = _at(
    (("executor_id", "executor_id"), ("host", "host"), ("locality", "locality")), TaskInfo
)
_METRIC_INT_FIELDS = _at(_METRIC_COLUMNS, TaskMetrics)
_NO_METRICS_TUPLE = astuple(TaskMetrics())
_PART_COLUMNS = (
    (_at(_SHUFFLE_READ_COLUMNS, ShuffleReadMetrics), "shuffle_read", astuple(ShuffleReadMetrics())),
    (
        _at(_SHUFFLE_WRITE_COLUMNS, ShuffleWriteMetrics),
        "shuffle_write",
        astuple(ShuffleWriteMetrics()),
    ),
    (_at(_INPUT_COLUMNS, InputMetrics), "input", astuple(InputMetrics())),
    (_at(_OUTPUT_COLUMNS, OutputMetrics), "output", astuple(OutputMetrics())),
)
"""Per part of the task metrics: its columns' positions, its field, its tuple when absent."""


def _longs(values: list[int]) -> array[int]:
    """Values computed from Java longs, as an int64 array, wrapped on overflow as Java's `long`
    arithmetic wraps (Spark computes these sums and differences the same way)."""
    try:
        return array("q", values)
    except OverflowError:
        return array("q", [(v + (1 << 63)) % (1 << 64) - (1 << 63) for v in values])


class TaskRecorder:
    """Turn task-start and task-end events, in log order, into a chunk and segments.

    `end` only buffers the event. When a segment closes, its events are added to the segment's
    totals (one pass over them); every `_BATCH` events (and when a chunk is taken) the buffer is
    turned into columns with a few C-level passes per struct type (`_flush`), which costs a
    fraction of appending forty values one by one per task, but has a fixed cost per pass that
    a log of many short segments must not pay per segment.

    With `keep_number_updates=False` (worker processes) the updates written as JSON numbers
    (internal metrics, never SQL metrics in a log Spark wrote) are left out of the segments and
    their accumulator ids are noted instead (`SqlUpdates.number_ids`): the replay's SQL listener
    then says whether a stage attempt it tracks had such an id as a SQL metric
    (`SqlListener.number_update_tracked`), and the log is replayed sequentially if so.
    """

    def __init__(self, keep_number_updates: bool = True) -> None:
        self._keep_numbers = keep_number_updates
        self._ints: dict[str, array[int]] = {name: array("q") for name in INT_COLUMNS}
        self._strs: dict[str, StringCodes] = {name: StringCodes() for name in STR_COLUMNS}
        self._failure_reasons: dict[int, str] = {}
        self._push_metrics: dict[int, tuple[int, ...]] = {}
        self._stage_sql_ids: dict[tuple[int, int], set[int]] = {}
        self._max_finish_ms: int | None = None
        self._pending: list[TaskEnd] = []
        self._n_settled = 0
        """How many of `_pending` are already in the segment totals."""
        self._n_flushed = 0
        self._segment = TaskSegment()

    @property
    def n_rows(self) -> int:
        """Task ends recorded so far in the current chunk."""
        return self._n_flushed + len(self._pending)

    def start(self, event: TaskStart) -> None:
        """Record a task start (with Task Info)."""
        info = event.info
        assert info is not None
        segment = self._segment
        segment.started[info.task_id] = (event.stage_id, event.stage_attempt_id)
        starts = segment.executor_starts
        starts[info.executor_id] = starts.get(info.executor_id, 0) + 1

    def end(self, event: TaskEnd) -> None:
        """Record a task end (with Task Info)."""
        info = event.info
        assert info is not None
        row = self._n_flushed + len(self._pending)
        self._pending.append(event)
        # Spark's task store holds a task from its start until its first end; the starts before
        # this segment are the replay's to check.
        segment = self._segment
        task_id = info.task_id
        if segment.started.pop(task_id, None) is not None:
            segment.ended.add(task_id)
        elif task_id in segment.ended:
            segment.excluded_rows.append(row)
        else:
            segment.unresolved_ends.append((row, task_id))
            segment.ended.add(task_id)
        if len(self._pending) >= _BATCH:
            self._settle()
            self._flush()

    def close_segment(self) -> TaskSegment:
        """End the current segment (another event follows) and return it.

        A segment without any task event stays the current one (most events of a log of many
        short executions follow no task event): a caller keeps only a segment that is not
        empty."""
        self._settle()
        segment = self._segment
        if not segment.is_empty:
            self._segment = TaskSegment()
        return segment

    def take_chunk(self) -> TaskChunk:
        """Hand over the columns recorded so far and start a new chunk (rows count from 0)."""
        self._settle()
        self._flush()
        chunk = TaskChunk(
            self._n_flushed,
            self._ints,
            self._strs,
            self._failure_reasons,
            self._push_metrics,
            self._stage_sql_ids,
            self._max_finish_ms,
        )
        self._ints = {name: array("q") for name in INT_COLUMNS}
        self._strs = {name: StringCodes() for name in STR_COLUMNS}
        self._failure_reasons, self._push_metrics, self._stage_sql_ids = {}, {}, {}
        self._max_finish_ms = None
        self._n_flushed = 0
        return chunk

    def _settle(self) -> None:
        """Add the buffered events not counted yet to the segment's totals: its executor and
        stage-attempt totals, its SQL updates; note failure reasons and SQL accumulator ids.

        One pass over the events; consecutive task ends of one stage attempt (the usual case)
        share its lookups.
        """
        events = self._pending[self._n_settled :]
        if not events:
            return
        row = self._n_flushed + self._n_settled
        self._n_settled = len(self._pending)
        segment = self._segment
        executors = segment.executor_ends
        stages = segment.stage_counts
        sql = segment.sql
        stage_ids = self._stage_sql_ids
        keep_numbers = self._keep_numbers
        latest = self._max_finish_ms
        key: tuple[int, int] | None = None
        counts: list[int] = []
        updates = SqlUpdates()
        by_id = updates.accumulators
        number_ids = updates.number_ids
        ids: set[int] | None = None
        for event in events:
            info: TaskInfo = event.info  # type: ignore[assignment]
            if key is None or event.stage_id != key[0] or event.stage_attempt_id != key[1]:
                key = (event.stage_id, event.stage_attempt_id)
                found = stages.get(key)
                if found is None:
                    found = stages[key] = [0, 0, 0, 0]
                counts = found
                found_updates = sql.get(key)
                if found_updates is None:
                    found_updates = sql[key] = SqlUpdates()
                updates = found_updates
                by_id = updates.accumulators
                number_ids = updates.number_ids
                ids = stage_ids.get(key)
            failed = info.failed
            killed = info.killed
            finish_ms = info.finish_ms
            counts[0] += 1
            counts[1] += failed
            counts[2] += killed
            counts[3] += info.speculative
            # As AppStatusListener.onTaskEnd counts a task end for its executor.
            peaks = event.executor_metrics
            peak_gc = peaks.total_gc_ms if peaks is not None else 0
            totals = executors.get(info.executor_id)
            if totals is None:
                totals = executors[info.executor_id] = [0, 0, 0, peak_gc, 0, 0, 0, 0, 0]
            elif peak_gc > totals[3]:
                totals[3] = peak_gc
            reason = event.reason.reason
            completed, n_failed, ended = END_COUNTS.get(reason, OTHER_END)
            totals[0] += completed
            totals[1] += n_failed
            totals[2] += ended
            if reason != "Resubmitted":
                if finish_ms:
                    # An attempt that ends before its launch lasts 0 ms (counted by the
                    # aggregation with the log's other inverted intervals).
                    totals[4] += max(0, finish_ms - info.launch_ms)
                metrics = event.metrics
                if metrics is not None:
                    totals[5] += metrics.gc_ms
                    part = metrics.input
                    if part is not None:
                        totals[6] += part.bytes_read
                    read = metrics.shuffle_read
                    if read is not None:
                        totals[7] += read.local_bytes_read + read.remote_bytes_read
                    write = metrics.shuffle_write
                    if write is not None:
                        totals[8] += write.bytes_written
            if finish_ms:
                if latest is None or finish_ms > latest:
                    latest = finish_ms
                ok = not failed and not killed
            else:
                ok = False
            if not ok:
                summary = event.reason.summary()
                if summary:
                    self._failure_reasons[row] = summary[:500]
            row += 1
            position = len(updates.indices)
            updates.indices.append(info.index)
            updates.task_ids.append(info.task_id)
            updates.successful.append(ok)
            accumulables = info.accumulables
            if not accumulables:
                continue
            if ids is None:
                ids = stage_ids[key] = set()
            for acc in accumulables:
                value = acc.update
                # Spark writes SQL metric updates as strings, internal metrics as numbers.
                if type(value) is str:
                    ids.add(acc.id)
                elif value is None:
                    continue
                elif not keep_numbers:
                    number_ids.add(acc.id)
                    continue
                try:
                    value = int(value)
                except (TypeError, ValueError):
                    continue
                if not LONG_MIN <= value <= LONG_MAX:
                    # Spark's `toLong` throws on such a value, and the update is lost.
                    continue
                pair = by_id.get(acc.id)
                if pair is None:
                    pair = by_id[acc.id] = (array("q"), array("q"))
                pair[0].append(position)
                pair[1].append(value)
        self._max_finish_ms = latest

    def _flush(self) -> None:
        """Turn the buffered events (already settled) into columns.

        Each struct is turned into a tuple (`astuple`) and the tuples into one tuple per field
        (`zip`), and each field into an array at once: a third less than one `attrgetter` pass
        per column, whose values an array appends one by one.
        """
        events = self._pending
        if not events:
            return
        self._pending = []
        self._n_settled = 0
        base = self._n_flushed
        self._n_flushed += len(events)
        c = self._ints
        stage_ids, stage_attempt_ids, task_types, reasons, infos, task_metrics = _fields(
            map(_END_FIELDS, events)
        )
        c["stage_id"].extend(array("q", stage_ids))
        c["stage_attempt_id"].extend(array("q", stage_attempt_ids))
        info = _fields(map(astuple, infos))
        for name, position in _INFO_INT_FIELDS:
            c[name].extend(array("q", info[position]))
        finishes = info[_INFO_POS["finish_ms"]]
        c["duration_ms"].extend(
            _longs(
                [
                    max(0, f - launch) if f else 0
                    for f, launch in zip(finishes, info[_INFO_POS["launch_ms"]], strict=True)
                ]
            )
        )
        # Spark's getting-result time: from the start of the result fetch to the task's end.
        c["getting_result_ms"].extend(
            _longs(
                [
                    max(0, f - started) if started > 0 and f else 0
                    for f, started in zip(
                        finishes, info[_INFO_POS["getting_result_start_ms"]], strict=True
                    )
                ]
            )
        )
        c["successful"].extend(
            array(
                "q",
                [
                    f != 0 and not failed and not killed
                    for f, failed, killed in zip(
                        finishes, info[_INFO_POS["failed"]], info[_INFO_POS["killed"]], strict=True
                    )
                ],
            )
        )
        metrics = _fields([_NO_METRICS_TUPLE if m is None else astuple(m) for m in task_metrics])
        for name, position in _METRIC_INT_FIELDS:
            c[name].extend(array("q", metrics[position]))
        reads = [_NO_SHUFFLE_READ if r is None else r for r in metrics[_METRIC_POS["shuffle_read"]]]
        read = _fields(map(astuple, reads))
        c["shuffle_read_bytes"].extend(
            _longs(
                [
                    remote + local
                    for remote, local in zip(
                        read[_READ_POS["remote_bytes_read"]],
                        read[_READ_POS["local_bytes_read"]],
                        strict=True,
                    )
                ]
            )
        )
        for columns, parts, default in _PART_COLUMNS:
            values = _fields(
                [default if part is None else astuple(part) for part in metrics[_METRIC_POS[parts]]]
            )
            for name, position in columns:
                c[name].extend(array("q", values[position]))
        for row, push in enumerate(read[_READ_POS["push"]], base):
            if push is not None and push != _NO_PUSH:
                self._push_metrics[row] = tuple(map(push.__getattribute__, _PUSH_ATTRS))
        s = self._strs
        for name, position in _INFO_STR_FIELDS:
            s[name].extend(info[position])
        s["end_reason"].extend([reason.reason for reason in reasons])
        s["task_type"].extend(task_types)
