"""Polars frames with explicit schemas, built from the columnar task data and frozen SQL values."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Self, cast

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.replay.sql_listener import FrozenExecution
from analyzer.replay.task_columns import INT_COLUMNS, PUSH_COLUMNS, STR_COLUMNS, TaskColumns

_FLAG_COLUMNS = frozenset(("successful", "failed", "killed", "speculative"))

_BLOCK_KEYS = ("execution_id", "accumulator_id", "stage_id", "stage_attempt_id")
SLOT_SCHEMA = {
    "execution_id": pl.Int64,
    "accumulator_id": pl.Int64,
    "stage_id": pl.Int64,
    "stage_attempt_id": pl.Int64,
    "task_id": pl.Int64,
    "value": pl.Int64,
}


PUSH_SHUFFLE_SCHEMA = {"row": pl.get_index_type()} | {name: pl.Int64 for name, _ in PUSH_COLUMNS}
"""The push-based shuffle read metrics of the task rows that have one non-zero."""


_NARROW_TYPES = ((pl.Int8, 1 << 7), (pl.Int16, 1 << 15), (pl.Int32, 1 << 31))
_NARROW = tuple(dtype for dtype, _ in _NARROW_TYPES)


def narrowest(column: pl.Series) -> pl.Series:
    """An Int64 column as the narrowest signed integer type that holds every value (itself when
    only Int64 does): 1, 2 or 4 bytes a row instead of 8, and the same values.

    >>> narrowest(pl.Series([0, 0])).dtype, narrowest(pl.Series([-1, 40_000])).dtype
    (Int8, Int32)
    >>> narrowest(pl.Series([2**40])).dtype, narrowest(pl.Series([], dtype=pl.Int64)).dtype
    (Int64, Int8)
    """
    low, high = column.min(), column.max()
    for dtype, bound in _NARROW_TYPES:
        if low is None or (-bound <= cast(int, low) and cast(int, high) < bound):
            return column.cast(dtype)
    return column


@dataclass(frozen=True)
class NarrowTable:
    """A table of integer columns stored narrow and read as Int64.

    Each integer column is kept in the narrowest type that holds its values (most are small:
    ids, indexes, durations, counts, and columns that are 0 on every row), about half the bytes
    of a table of 8-byte integers. Every read goes through `lazy()`, which gives those columns
    back their type, Int64, so every figure computes exactly as on a table of 8-byte integers;
    polars applies the widening after its filters and only to the columns a query reads.
    """

    stored: pl.DataFrame
    """The columns as kept: every Int8, Int16 and Int32 column is an Int64 column narrowed
    (the tables hold no other signed integers)."""

    @property
    def narrowed(self) -> tuple[str, ...]:
        """The Int64 columns `stored` holds in a narrower type."""
        return tuple(name for name, dtype in self.stored.schema.items() if dtype in _NARROW)

    @property
    def height(self) -> int:
        """How many rows."""
        return self.stored.height

    def is_empty(self) -> bool:
        """True when the table has no row."""
        return self.stored.is_empty()

    def lazy(self) -> pl.LazyFrame:
        """The table as a lazy frame, every integer column Int64."""
        narrowed = self.narrowed
        frame = self.stored.lazy()
        return frame.with_columns(pl.col(narrowed).cast(pl.Int64)) if narrowed else frame

    def part(self, names: Sequence[str], *extra: pl.Series) -> Self:
        """Some of the columns, still stored narrow, and `extra` Int64 columns (one value a
        row)."""
        return type(self)(self.stored.select(names).with_columns(extra))

    def frame(self) -> pl.DataFrame:
        """The whole table, every integer column Int64: for tests and small logs; a figure reads
        only its columns, through `lazy()`."""
        return self.lazy().collect(engine=ENGINE)


class TaskTable(NarrowTable):
    """One row per task attempt (see `task_frames`), stored narrow and read as Int64."""


class SlotTable(NarrowTable):
    """The values Spark's SQL tab aggregates (see `slot_frame`), stored narrow and read as
    Int64."""


@dataclass(frozen=True)
class TaskFrames:
    """The task table and its sparse companion."""

    tasks: TaskTable
    """One row per task attempt (see `task_frames`)."""
    push_shuffle: pl.DataFrame
    """`PUSH_SHUFFLE_SCHEMA`: push-based shuffle metrics by task row; rows not here are 0."""


def narrow_column(name: str, values: Sequence[int | None]) -> pl.Series:
    """Integer values (None for null) as a column in the narrowest type that holds them
    (`narrowest`)."""
    return narrowest(pl.Series(name, values, dtype=pl.Int64))


def seal_task_column(name: str, values: array[int]) -> pl.Series:
    """A block of rows of one of the task columns' `INT_COLUMNS` as the task table keeps it:
    a flag as booleans, any other column in the narrowest type that holds it (`narrowest`).
    The replay hands its blocks here as it goes (`TaskColumns`'s sealer)."""
    if name in _FLAG_COLUMNS:
        return pl.Series(name, values, dtype=pl.Int64).cast(pl.Boolean)
    return narrow_column(name, values)


_WIDTHS = (pl.Boolean, pl.Int8, pl.Int16, pl.Int32, pl.Int64)


def _joined(blocks: list[pl.Series], *, rechunk: bool = True) -> pl.Series:
    """The blocks of one column, one after the other, in the widest of their types: one piece
    of memory, or with `rechunk=False` the blocks kept as the column's chunks (no copy of the
    whole column beside its blocks). Empties `blocks`."""
    if len(blocks) == 1:
        return blocks.pop()
    widest = max((block.dtype for block in blocks), key=_WIDTHS.index)
    blocks.reverse()
    cast_blocks = []
    while blocks:  # each block cast as it is taken, not every block twice at once
        cast_blocks.append(blocks.pop().cast(widest))
    return pl.concat(cast_blocks, rechunk=rechunk)


def task_frame(tasks: TaskColumns) -> TaskTable:
    """One row per task attempt: identity, placement, outcome and built-in metrics."""
    return task_frames(tasks).tasks


def task_frames(tasks: TaskColumns) -> TaskFrames:
    """Build the task table (one row per task attempt: identity, placement, outcome, built-in
    metrics) and the push-based shuffle metrics of the few rows that have them.

    Takes the columns out of `tasks` (see `TaskColumns.take`): the blocks the replay already
    sealed (`seal_task_column`) and the rows after them, each array dropped as soon as its
    series exists, so the task data is held about once, not twice; each integer column is
    stored in the narrowest type that holds it (see `TaskTable`). Besides the
    `INT_COLUMNS` and `STR_COLUMNS` (categorical: a host name is 4 bytes a row instead of a
    16-byte string view; they compare, group and sort as strings): `row` (the task-end event's
    rank), `failure_reason`, and `in_task_store` (False for the task ends Spark's History Server
    does not record as a task, see `TaskColumns.exclude_row`).
    """
    data = tasks.take()
    n = data.n_rows
    columns = [pl.int_range(0, n, dtype=pl.get_index_type(), eager=True).alias("row")]
    for name in INT_COLUMNS:
        blocks = cast(list[pl.Series], data.sealed.pop(name, []))
        blocks.append(seal_task_column(name, data.ints.pop(name)))
        columns.append(_joined(blocks))
    for name in STR_COLUMNS:
        strings = data.strs.pop(name)
        codes = pl.Series(name, strings.codes, dtype=pl.UInt32)
        columns.append(
            pl.Series(name, strings.values, dtype=pl.Categorical).gather(codes)
            if n
            else pl.Series(name, [], dtype=pl.Categorical)
        )
    # Few attempts fail: scatter their reasons into an all-null column.
    reasons = pl.repeat(None, n, dtype=pl.String, eager=True).alias("failure_reason")
    if data.failure_reasons:
        reasons.scatter(list(data.failure_reasons), list(data.failure_reasons.values()))
    columns.append(reasons)
    # Rare too: a bit per row, False where the History Server keeps no task.
    in_store = pl.repeat(True, n, dtype=pl.Boolean, eager=True).alias("in_task_store")
    if data.not_in_task_store:
        in_store.scatter(sorted(data.not_in_task_store), False)
    columns.append(in_store)
    push_rows = sorted(data.push_metrics)
    push = pl.DataFrame(
        [pl.Series("row", push_rows, dtype=PUSH_SHUFFLE_SCHEMA["row"])]
        + [
            pl.Series(name, [data.push_metrics[r][i] for r in push_rows], dtype=pl.Int64)
            for i, (name, _) in enumerate(PUSH_COLUMNS)
        ]
    )
    return TaskFrames(TaskTable(pl.DataFrame(columns)), push)


def slot_frame(frozen: dict[int, FrozenExecution]) -> SlotTable:
    """The values Spark aggregates: a row per task slot of each counted stage and per driver value,
    stored narrow (see `NarrowTable`).

    Slots no task filled have task_id -1 and value 0 (Spark counts them); driver values have
    stage_id and stage_attempt_id null and task_id -1. A slot's row is in its stage block's
    order; its index in the block is not kept (no figure reads it, and it was a seventh of
    the frame). The columns are made narrow as they are built (the block keys before polars
    repeats them over the blocks' slots), so the table is never held as 8-byte columns.

    Takes the slot values and task ids out of `frozen`: each execution's entry is replaced by
    one without them (the aggregation reads only its other fields) as soon as they are copied,
    and the copies are narrowed `SLOT_BLOCK_ROWS` rows at a time, so the slots are held about
    once, not three times.
    """
    # One row per stage block with its keys and length; polars repeats the keys over the
    # block's slots, so the slots' values and task ids are copied as whole arrays.
    keys: dict[str, array[int]] = {name: array("q") for name in _BLOCK_KEYS}
    lengths: array[int] = array("q")
    task_ids, values = _NarrowBlocks("task_id"), _NarrowBlocks("value")
    driver_keys: array[int] = array("q")
    driver_flat: array[int] = array("q")
    for execution_id in list(frozen):
        execution = frozen[execution_id]
        frozen[execution_id] = replace(execution, slot_values=_NO_SLOTS, slot_task_ids=_NO_SLOTS)
        flat = execution.blocks
        block_lengths = flat[3::4]
        if 0 in block_lengths:  # a stage of no tasks: no rows
            kept = [i for i in range(0, len(flat), 4) if flat[i + 3]]
            flat = array("q", [v for i in kept for v in flat[i : i + 4]])
            block_lengths = flat[3::4]
        keys["execution_id"].extend([execution_id] * len(block_lengths))
        keys["accumulator_id"].extend(flat[0::4])
        keys["stage_id"].extend(flat[1::4])
        keys["stage_attempt_id"].extend(flat[2::4])
        lengths.extend(block_lengths)
        values.add(execution.slot_values)
        task_ids.add(execution.slot_task_ids)
        if execution.driver_values:
            driver_keys.extend([execution_id] * (len(execution.driver_values) // 2))
            driver_flat.extend(execution.driver_values)
        del execution  # its slot arrays go with it
    blocks = pl.DataFrame(
        {name: narrow_column(name, keys[name]) for name in _BLOCK_KEYS}
        | {"n": pl.Series("n", lengths, dtype=pl.Int64)}
    )
    del keys, lengths
    parts: dict[str, list[pl.Series]] = {"task_id": task_ids.blocks(), "value": values.blocks()}
    del task_ids, values
    # The keys cut where the values' blocks end (slices share the column's memory), so every
    # column has the same chunks.
    offsets = [0]
    for block in parts["value"]:
        offsets.append(offsets[-1] + block.len())
    for name in _BLOCK_KEYS:
        repeated = blocks.get_column(name).repeat_by(blocks.get_column("n")).explode()
        parts[name] = [repeated.slice(at, end - at) for at, end in itertools.pairwise(offsets)]
    del blocks
    if driver_keys:
        n_driver = len(driver_keys)
        driver: dict[str, Sequence[int | None]] = {
            "execution_id": driver_keys,
            "accumulator_id": driver_flat[0::2],
            "stage_id": [None] * n_driver,
            "stage_attempt_id": [None] * n_driver,
            "task_id": [-1] * n_driver,
            "value": driver_flat[1::2],
        }
        for name, column in driver.items():
            parts[name].append(narrow_column(name, column))
    return SlotTable(
        pl.DataFrame([_joined(parts.pop(name), rechunk=False) for name in SLOT_SCHEMA])
    )


_NO_SLOTS: array[int] = array("q")
"""The slot arrays of a frozen execution `slot_frame` has taken them from."""

SLOT_BLOCK_ROWS = 131_072
"""How many slot rows `slot_frame` gathers before it narrows them into a block."""


class _NarrowBlocks:
    """One integer column gathered from many arrays and kept as narrow blocks of about
    `SLOT_BLOCK_ROWS` rows: only the block being gathered is held as 8-byte integers."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pending: array[int] = array("q")
        self.sealed: list[pl.Series] = []

    def add(self, values: array[int]) -> None:
        """Append `values`, narrowing the gathered rows once there are enough of them."""
        self.pending.extend(values)
        if len(self.pending) >= SLOT_BLOCK_ROWS:
            self._seal()

    def blocks(self) -> list[pl.Series]:
        """Every row added, as narrow blocks in order (at least one, maybe empty)."""
        if self.pending or not self.sealed:
            self._seal()
        return self.sealed

    def _seal(self) -> None:
        self.sealed.append(narrow_column(self.name, self.pending))
        self.pending = array("q")


INT_ARRAY_SLICE = 65_536
"""How many values `int_array` turns into Python integers at once."""


def int_array(series: pl.Series, typecode: str = "q") -> array[int]:
    """The values of an integer column without nulls as an array of 8-byte integers (or of
    another `array` typecode that holds them, such as "I" for row positions).

    Made a slice at a time: `array("q", series.to_list())` holds an integer object (28 bytes)
    and a list slot (8 bytes) for every value at once, 35 MB for a million task rows, where
    this holds them for one slice. The array is made at its full size first and the slices
    written into it: grown slice by slice, its earlier sizes were left behind in the C heap
    (26 MB resident for the 7.8 MB of a million values).

    >>> int_array(pl.Series([3, -1, 2**40]))
    array('q', [3, -1, 1099511627776])
    >>> int_array(pl.Series([], dtype=pl.Int64))
    array('q')
    """
    n = series.len()
    out: array[int] = array(typecode, [0]) * n
    for offset in range(0, n, INT_ARRAY_SLICE):
        values = array(typecode, series.slice(offset, INT_ARRAY_SLICE).to_list())
        out[offset : offset + len(values)] = values
    return out


BATCH_SLOT_ROWS = 30_000
"""About how many slot rows the aggregations take at once: the Python records they make per
(execution, metric) then stay bounded whatever the number of executions, and a batch still
costs polars a few calls of about a millisecond each. Measured on a log of 20,000 executions
(172,000 slot rows): the aggregation's own peak 298 MB with 100,000 rows, 258 MB with 30,000
and 267 MB with 10,000, its CPU time the same."""


def slot_batches(
    slots: SlotTable, execution_ids: Sequence[int], max_rows: int | None = None
) -> Iterator[tuple[list[int], pl.LazyFrame]]:
    """Split `execution_ids` into runs holding about `max_rows` slot rows in all (default
    `BATCH_SLOT_ROWS`; an execution is never split), and yield each run with its rows of
    `slots` (a lazy frame, read as Int64), in the table's order."""
    if max_rows is None:
        max_rows = BATCH_SLOT_ROWS
    if slots.height <= max_rows:
        yield list(execution_ids), slots.lazy()
        return
    counts = dict(slots.stored.group_by("execution_id").len().iter_rows())
    batch: list[int] = []
    rows = 0
    for execution_id in execution_ids:
        batch.append(execution_id)
        rows += counts.get(execution_id, 0)
        if rows >= max_rows:
            yield batch, _rows_of(slots, batch, rows)
            batch, rows = [], 0
    if batch:
        yield batch, _rows_of(slots, batch, rows)


BATCH_TASK_ROWS = 131_072
"""About how many task rows a per-stage-attempt aggregation takes at once (`stage_pieces`)."""


def stage_ranges(tasks: TaskTable, max_rows: int | None = None) -> list[tuple[int, int]]:
    """Ranges of stage ids (first, last) whose tasks are about `max_rows` rows each (default
    `BATCH_TASK_ROWS`; a stage is never split), in ascending order; one range of every stage
    when the table fits one piece."""
    if max_rows is None:
        max_rows = BATCH_TASK_ROWS
    if tasks.is_empty():
        return []
    stored = tasks.stored
    if stored.height <= max_rows:
        stage_ids = stored.get_column("stage_id")
        return [(cast(int, stage_ids.min()), cast(int, stage_ids.max()))]
    counts = stored.group_by("stage_id").len().sort("stage_id").rows()
    out: list[tuple[int, int]] = []
    first: int | None = None
    rows = 0
    for stage_id, n in counts:
        if first is None:
            first = stage_id
        rows += n
        if rows >= max_rows:
            out.append((first, stage_id))
            first, rows = None, 0
    if first is not None:
        out.append((first, counts[-1][0]))
    return out


SMALL_PIECE_SHARE = 4
"""`stage_pieces(small=True)` makes pieces of `BATCH_TASK_ROWS // SMALL_PIECE_SHARE` rows."""


def stage_pieces(
    tasks: TaskTable, max_rows: int | None = None, small: bool = False
) -> Iterator[pl.LazyFrame]:
    """The task table in pieces of whole stages (every attempt of a stage in one piece, see
    `stage_ranges`), as lazy frames: each query reads only its own columns of a piece.

    A figure worked out per stage attempt then holds its scratch columns for one piece, not
    for every task of the log at once; a table that fits one piece is the one piece. `small`
    pieces are a quarter the size, for figures of much scratch memory per row and few polars
    calls per piece (the stage walls and statistics: on a million tasks their scratch memory
    +45 and +30 MB with whole pieces, +12 and +8 MB with small ones, for 0.3 and 0.1 s more).
    """
    if small and max_rows is None:
        max_rows = BATCH_TASK_ROWS // SMALL_PIECE_SHARE
    ranges = stage_ranges(tasks, max_rows)
    if len(ranges) <= 1:
        yield tasks.lazy()
        return
    for first, last in ranges:
        yield tasks.lazy().filter(pl.col("stage_id").is_between(first, last))


def _rows_of(slots: SlotTable, execution_ids: list[int], n_rows: int) -> pl.LazyFrame:
    """The rows of `slots` of some executions (`n_rows` of them): all of it, unfiltered, when
    that is all of it (one execution of a giant stage)."""
    if n_rows == slots.height:
        return slots.lazy()
    return slots.lazy().filter(pl.col("execution_id").is_in(execution_ids))


def last_task_ends_ms(tasks: TaskTable, by: str) -> list[tuple[Any, int]]:
    """Per value of the task column `by` (an executor, a stage): when its last task attempt
    ended, epoch ms (its launch for an attempt with no end), as (value, ms) pairs."""
    if tasks.is_empty():
        return []
    frame = (
        tasks.lazy()
        .filter(pl.col(by).is_not_null())
        .group_by(by)
        .agg(pl.max_horizontal("launch_ms", "finish_ms").max().alias("end"))
        .collect(engine=ENGINE)
    )
    return [(key, int(ms)) for key, ms in frame.iter_rows() if ms is not None]
