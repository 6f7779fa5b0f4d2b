"""Columnar storage of every task attempt, as typed arrays, and the task events in bulk.

A large log has a million task events; one Python object per task would cost more memory than
the log, and handling them one at a time costs more time than decoding them. `TaskRecorder`
turns the task events between two other events (a `TaskSegment`) into columns (a `TaskChunk`:
each attribute an `array('q')`, strings as codes into a small dictionary) and into the totals the
replay needs per executor, stage attempt and SQL stage, so that the replay applies them a segment
at a time. A recorder runs in the replay itself or in a worker process over a part of the log
(`replay.parallel`); `TaskColumns` gathers the chunks, turned into polars frames by the
aggregation layer.

The columns' names, `StringCodes` and `TaskChunk` are in `task_arrays.py`, a segment's totals in
`task_segment.py`, the recorder in `task_recorder.py`; this module joins the chunks and
re-exports their public names.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

from analyzer.replay.task_arrays import (
    INT_COLUMNS,
    PUSH_COLUMNS,
    STR_COLUMNS,
    StringCodes,
    TaskChunk,
)
from analyzer.replay.task_recorder import TaskRecorder
from analyzer.replay.task_segment import (
    END_COUNTS,
    EXECUTOR_END_FIELDS,
    OTHER_END,
    STAGE_COUNT_FIELDS,
    SqlUpdates,
    TaskSegment,
)

ColumnSealer = Callable[[str, "array[int]"], object]
"""Turns a block of rows of one integer column (its name, its values) into what the caller keeps
of it: the aggregation layer's compact column (see `TaskColumns`)."""

SEAL_ROWS = 131_072
"""How many rows `TaskColumns` gathers as arrays before it hands them to its sealer."""


@dataclass
class TaskData:
    """The columns of every task attempt, handed over by `TaskColumns.take`."""

    n_rows: int
    ints: dict[str, array[int]]
    """Integer columns by name (booleans as 0/1): the rows after the `sealed` blocks."""
    strs: dict[str, StringCodes]
    """String columns by name, as codes into distinct values."""
    failure_reasons: dict[int, str]
    """Row number → one-line reason, for attempts that did not succeed."""
    not_in_task_store: set[int] = field(default_factory=set)
    """Rows Spark's History Server does not record as a task (see `TaskColumns.exclude_row`)."""
    push_metrics: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Row number → its `PUSH_COLUMNS` values, for rows with one of them non-zero."""
    sealed: dict[str, list[object]] = field(default_factory=dict)
    """Integer columns by name: their first rows, as the sealer's blocks (see `TaskColumns`);
    the rest of each column is in `ints`."""


class TaskColumns:
    """Every task attempt of the application, one row per TaskEnd, in log order: the chunks of
    the recorders, joined.

    Integer columns are gathered as arrays of 8-byte integers. With a `seal` function, every
    `SEAL_ROWS` rows are handed to it, column by column, and the arrays start again: a log of a
    million tasks is then never held as 8-byte arrays in full (the aggregation layer's sealer
    keeps each block in the fewest bytes that hold its values).
    """

    def __init__(self, seal: ColumnSealer | None = None) -> None:
        self._seal = seal
        self._sealed: dict[str, list[object]] = {name: [] for name in INT_COLUMNS}
        self._ints: dict[str, array[int]] = {name: array("q") for name in INT_COLUMNS}
        self._strs: dict[str, StringCodes] = {name: StringCodes() for name in STR_COLUMNS}
        self._failure_reasons: dict[int, str] = {}
        self._not_in_task_store: set[int] = set()
        self._push_metrics: dict[int, tuple[int, ...]] = {}
        self._n_rows = 0
        self._taken = False

    def take(self) -> TaskData:
        """Hand over the columns, leaving this object empty: the aggregation layer frees each
        column once polars holds a copy, so the task data is never held twice in full.

        Raises `RuntimeError` if called twice, or on `extend` after it.
        """
        if self._taken:
            raise RuntimeError("the task columns were already taken")
        self._taken = True
        data = TaskData(
            self._n_rows,
            self._ints,
            self._strs,
            self._failure_reasons,
            self._not_in_task_store,
            self._push_metrics,
            self._sealed,
        )
        self._ints, self._strs, self._failure_reasons, self._sealed = {}, {}, {}, {}
        self._not_in_task_store, self._push_metrics = set(), {}
        return data

    @property
    def n_rows(self) -> int:
        """Number of task attempts recorded."""
        return self._n_rows

    def extend(self, chunk: TaskChunk) -> None:
        """Append a chunk's rows (its arrays may be reused: they are emptied)."""
        if self._taken:
            raise RuntimeError("the task columns were already taken")
        base = self._n_rows
        self._n_rows += chunk.n_rows
        if chunk.n_rows:
            for name, column in self._ints.items():
                part = chunk.ints[name]
                column.extend(part)
                del part[:]
            for name, codes in self._strs.items():
                codes.extend_codes(chunk.strs[name])
            # The rows gathered as arrays since the last block: any column's length.
            if self._seal is not None and len(self._ints[INT_COLUMNS[0]]) >= SEAL_ROWS:
                self._seal_pending(self._seal)
        reasons = self._failure_reasons
        for row, reason in chunk.failure_reasons.items():
            reasons[base + row] = reason
        push = self._push_metrics
        for row, values in chunk.push_metrics.items():
            push[base + row] = values

    def _seal_pending(self, seal: ColumnSealer) -> None:
        """Hand the rows gathered as arrays to `seal`, a column at a time, and start again."""
        for name in INT_COLUMNS:
            self._sealed[name].append(seal(name, self._ints[name]))
            self._ints[name] = array("q")

    def exclude_row(self, row: int) -> None:
        """Mark a row as one Spark's History Server does not record as a task.

        Its task list holds a task from its TaskStart until its first TaskEnd; a TaskEnd without
        a TaskStart before it, or a second TaskEnd of the same task (a `Resubmitted` one), only
        updates counters. Kept as a set: such rows are rare.
        """
        if self._taken:
            raise RuntimeError("the task columns were already taken")
        self._not_in_task_store.add(row)


__all__ = [
    "END_COUNTS",
    "EXECUTOR_END_FIELDS",
    "INT_COLUMNS",
    "OTHER_END",
    "PUSH_COLUMNS",
    "SEAL_ROWS",
    "STAGE_COUNT_FIELDS",
    "STR_COLUMNS",
    "ColumnSealer",
    "SqlUpdates",
    "StringCodes",
    "TaskChunk",
    "TaskColumns",
    "TaskData",
    "TaskRecorder",
    "TaskSegment",
]
