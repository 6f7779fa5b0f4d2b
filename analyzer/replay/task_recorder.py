"""Turn task-start and task-end events, in log order, into typed columns and segments' totals.

A `TaskRecorder` runs in the replay itself or in a worker process over a part of the log
(`replay.parallel`): it buffers task ends and turns them into columns a batch at a time, and
adds them to the totals of the segment they belong to.
"""

from __future__ import annotations

from array import array
from operator import attrgetter

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


class TaskRecorder:
    """Turn task-start and task-end events, in log order, into a chunk and segments.

    `end` only buffers the event. When a segment closes, its events are added to the segment's
    totals (one pass over them); every `_BATCH` events (and when a chunk is taken) the buffer is
    turned into columns with one C-level pass per column (`map(attrgetter(...))`), which costs a
    fraction of appending forty values one by one per task, but has a fixed cost per pass that
    a log of many short segments must not pay per segment.

    With `keep_number_updates=False` (worker processes) the updates written as JSON numbers
    (internal metrics, never SQL metrics in a log Spark wrote) are left out of the segments and
    their accumulator ids are noted in the chunk instead: the replay then checks that no SQL
    metric has such an id.
    """

    def __init__(self, keep_number_updates: bool = True) -> None:
        self._keep_numbers = keep_number_updates
        self._ints: dict[str, array[int]] = {name: array("q") for name in INT_COLUMNS}
        self._strs: dict[str, StringCodes] = {name: StringCodes() for name in STR_COLUMNS}
        self._failure_reasons: dict[int, str] = {}
        self._push_metrics: dict[int, tuple[int, ...]] = {}
        self._stage_sql_ids: dict[tuple[int, int], set[int]] = {}
        self._number_ids: set[int] = set()
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
        """End the current segment (another event follows) and return it."""
        self._settle()
        segment = self._segment
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
            self._number_ids,
            self._max_finish_ms,
        )
        self._ints = {name: array("q") for name in INT_COLUMNS}
        self._strs = {name: StringCodes() for name in STR_COLUMNS}
        self._failure_reasons, self._push_metrics, self._stage_sql_ids = {}, {}, {}
        self._number_ids = set()
        self._max_finish_ms = None
        self._n_flushed = 0
        return chunk

    def _settle(self) -> None:
        """Add the buffered events not counted yet to the segment's totals."""
        events = self._pending[self._n_settled :]
        if not events:
            return
        base = self._n_flushed + self._n_settled
        self._n_settled = len(self._pending)
        infos: list[TaskInfo] = [e.info for e in events]  # type: ignore[misc]
        successful = [i.finish_ms != 0 and not i.failed and not i.killed for i in infos]
        finishes = [i.finish_ms for i in infos if i.finish_ms]
        if finishes:
            latest = max(finishes)
            if self._max_finish_ms is None or latest > self._max_finish_ms:
                self._max_finish_ms = latest
        self._count(events, infos)
        self._record_updates(events, infos, successful, base)

    def _flush(self) -> None:
        """Turn the buffered events (already settled) into columns."""
        events = self._pending
        if not events:
            return
        self._pending = []
        self._n_settled = 0
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
        writes = [m.shuffle_write or _NO_SHUFFLE_WRITE for m in metrics]
        inputs = [m.input or _NO_INPUT for m in metrics]
        for columns, parts in (
            (_SHUFFLE_READ_COLUMNS, reads),
            (_SHUFFLE_WRITE_COLUMNS, writes),
            (_INPUT_COLUMNS, inputs),
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

    def _count(self, events: list[TaskEnd], infos: list[TaskInfo]) -> None:
        """Add the events to the segment's executor and stage-attempt totals."""
        segment = self._segment
        executors = segment.executor_ends
        stages = segment.stage_counts
        for event, info in zip(events, infos, strict=True):
            key = (event.stage_id, event.stage_attempt_id)
            counts = stages.get(key)
            if counts is None:
                counts = stages[key] = [0, 0, 0, 0]
            counts[0] += 1
            counts[1] += info.failed
            counts[2] += info.killed
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
            completed, failed, ended = END_COUNTS.get(reason, OTHER_END)
            totals[0] += completed
            totals[1] += failed
            totals[2] += ended
            if reason == "Resubmitted":
                continue
            if info.finish_ms:
                totals[4] += info.finish_ms - info.launch_ms
            metrics = event.metrics
            if metrics is None:
                continue
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

    def _record_updates(
        self, events: list[TaskEnd], infos: list[TaskInfo], successful: list[bool], base: int
    ) -> None:
        """Note failure reasons, SQL accumulator ids per stage, and the segment's SQL updates."""
        stage_ids = self._stage_sql_ids
        sql = self._segment.sql
        number_ids = self._number_ids
        keep_numbers = self._keep_numbers
        for row, (event, info, ok) in enumerate(zip(events, infos, successful, strict=True), base):
            if not ok:
                summary = event.reason.summary()
                if summary:
                    self._failure_reasons[row] = summary[:500]
            key = (event.stage_id, event.stage_attempt_id)
            updates = sql.get(key)
            if updates is None:
                updates = sql[key] = SqlUpdates()
            position = len(updates.indices)
            updates.indices.append(info.index)
            updates.task_ids.append(info.task_id)
            updates.successful.append(ok)
            accumulables = info.accumulables
            if not accumulables:
                continue
            ids = stage_ids.get(key)
            if ids is None:
                ids = stage_ids[key] = set()
            by_id = updates.accumulators
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
