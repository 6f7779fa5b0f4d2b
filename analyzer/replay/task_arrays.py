"""The typed arrays of task attempts: their columns' names, strings as codes, a chunk of rows.

Every attribute of a task attempt is an `array('q')` column (`INT_COLUMNS`) or a column of string
codes into a small dictionary (`STR_COLUMNS`, `StringCodes`); a `TaskChunk` holds the columns of a
run of task ends, as a `TaskRecorder` hands them over to `TaskColumns`.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

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

    def extend(self, values: Sequence[str]) -> None:
        """Append several values."""
        index = self.index
        for value in dict.fromkeys(values):
            if value not in index:
                index[value] = len(self.values)
                self.values.append(value)
        self.codes.extend(array("i", [index[value] for value in values]))

    def extend_codes(self, other: StringCodes) -> None:
        """Append the values of another column (its codes translated into this dictionary)."""
        index = self.index
        translate: list[int] = []
        for value in other.values:
            code = index.get(value)
            if code is None:
                code = index[value] = len(self.values)
                self.values.append(value)
            translate.append(code)
        if translate == list(range(len(translate))):
            self.codes.extend(other.codes)
        else:
            self.codes.extend(map(translate.__getitem__, other.codes))


@dataclass
class TaskChunk:
    """The columns of a run of task ends (one row each, in log order), from a `TaskRecorder`."""

    n_rows: int
    ints: dict[str, array[int]]
    strs: dict[str, StringCodes]
    failure_reasons: dict[int, str]
    push_metrics: dict[int, tuple[int, ...]]
    stage_sql_ids: dict[tuple[int, int], set[int]]
    """(stage id, attempt) → ids of the accumulators its tasks updated with a string (SQL
    metrics), in the order the stage attempts first had a task end with any update."""
    max_finish_ms: int | None
    """The latest non-zero finish time of a task end, None if there is none."""
