"""Columnar storage of every task attempt and every SQL accumulator update, as typed arrays.

A large log has a million task events; one Python object per task would cost more memory than
the log. Each attribute is an `array('q')` column (strings as codes into a small dictionary),
turned into polars frames by the aggregation layer.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from analyzer.eventlog.events import TaskEnd

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
    "shuffle_write_bytes",
    "shuffle_write_records",
    "shuffle_write_time_ns",
    "input_bytes",
    "input_records",
    "output_bytes",
    "output_records",
)
STR_COLUMNS = ("executor_id", "host", "locality", "end_reason", "task_type")


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


class TaskColumns:
    """Every task attempt of the application, one row per TaskEnd, in log order."""

    def __init__(self) -> None:
        self.ints: dict[str, array[int]] = {name: array("q") for name in INT_COLUMNS}
        self.strs: dict[str, StringCodes] = {name: StringCodes() for name in STR_COLUMNS}
        self.failure_reasons: dict[int, str] = {}
        """Row number → one-line reason, for attempts that did not succeed."""
        self.upd_row: array[int] = array("q")
        self.upd_acc_id: array[int] = array("q")
        self.upd_value: array[int] = array("q")

    @property
    def n_rows(self) -> int:
        """Number of task attempts recorded."""
        return len(self.ints["task_id"])

    def append(self, event: TaskEnd) -> int:
        """Record one task-end event and its SQL accumulator updates; return its row number."""
        info = event.info
        assert info is not None
        row = self.n_rows
        c = self.ints
        c["stage_id"].append(event.stage_id)
        c["stage_attempt_id"].append(event.stage_attempt_id)
        c["task_id"].append(info.task_id)
        c["index"].append(info.index)
        c["partition_id"].append(info.partition_id)
        c["attempt"].append(info.attempt)
        c["launch_ms"].append(info.launch_ms)
        c["finish_ms"].append(info.finish_ms)
        c["duration_ms"].append(info.finish_ms - info.launch_ms if info.finish_ms else 0)
        c["getting_result_ms"].append(info.getting_result_ms)
        successful = info.successful
        c["successful"].append(1 if successful else 0)
        c["failed"].append(1 if info.failed else 0)
        c["killed"].append(1 if info.killed else 0)
        c["speculative"].append(1 if info.speculative else 0)
        m = event.metrics
        if m is None:
            for name in INT_COLUMNS[14:]:
                c[name].append(0)
        else:
            c["run_ms"].append(m.run_ms)
            c["cpu_ns"].append(m.cpu_ns)
            c["deserialize_ms"].append(m.deserialize_ms)
            c["deserialize_cpu_ns"].append(m.deserialize_cpu_ns)
            c["gc_ms"].append(m.gc_ms)
            c["result_size_bytes"].append(m.result_size_bytes)
            c["result_serialization_ms"].append(m.result_serialization_ms)
            c["memory_bytes_spilled"].append(m.memory_bytes_spilled)
            c["disk_bytes_spilled"].append(m.disk_bytes_spilled)
            c["peak_execution_memory_bytes"].append(m.peak_execution_memory_bytes)
            sr = m.shuffle_read
            if sr is None:
                for name in INT_COLUMNS[24:32]:
                    c[name].append(0)
            else:
                c["shuffle_read_bytes"].append(sr.remote_bytes_read + sr.local_bytes_read)
                c["shuffle_remote_bytes_read"].append(sr.remote_bytes_read)
                c["shuffle_local_bytes_read"].append(sr.local_bytes_read)
                c["shuffle_remote_bytes_read_to_disk"].append(sr.remote_bytes_read_to_disk)
                c["shuffle_read_records"].append(sr.records_read)
                c["shuffle_fetch_wait_ms"].append(sr.fetch_wait_ms)
                c["shuffle_remote_blocks_fetched"].append(sr.remote_blocks_fetched)
                c["shuffle_local_blocks_fetched"].append(sr.local_blocks_fetched)
            sw = m.shuffle_write
            c["shuffle_write_bytes"].append(sw.bytes_written if sw else 0)
            c["shuffle_write_records"].append(sw.records_written if sw else 0)
            c["shuffle_write_time_ns"].append(sw.write_time_ns if sw else 0)
            inp = m.input
            c["input_bytes"].append(inp.bytes_read if inp else 0)
            c["input_records"].append(inp.records_read if inp else 0)
            out = m.output
            c["output_bytes"].append(out.bytes_written if out else 0)
            c["output_records"].append(out.records_written if out else 0)
        s = self.strs
        s["executor_id"].append(info.executor_id)
        s["host"].append(info.host)
        s["locality"].append(info.locality)
        s["end_reason"].append(event.reason.reason)
        s["task_type"].append(event.task_type)
        if not successful:
            summary = event.reason.summary()
            if summary:
                self.failure_reasons[row] = summary[:500]
        for acc in info.accumulables:
            update = acc.update
            if type(update) is str:
                try:
                    value = int(update)
                except ValueError:
                    continue
                self.upd_row.append(row)
                self.upd_acc_id.append(acc.id)
                self.upd_value.append(value)
        return row
