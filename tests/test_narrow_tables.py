"""The task table and the slot table are stored narrow and read as Int64: every integer column in
the narrowest type that holds its values, the same values and types through `lazy()`; the task
columns sealed in blocks while the log is read make the same table."""

from __future__ import annotations

from array import array
from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import SAMPLES, public

from analyzer import api
from analyzer.aggregate import tables
from analyzer.aggregate.tables import SLOT_SCHEMA, TaskTable, narrowest, seal_task_column
from analyzer.replay import task_columns
from analyzer.replay.task_columns import INT_COLUMNS
from analyzer.report.options import ReportOptions

_FLAGS = {"successful", "failed", "killed", "speculative"}

_REAL_LOGS = [public("nds_q72_dataproc_2_2.zstd"), SAMPLES / "app-20261122042434-0000.zstd"]
_REAL_IDS = ["nds_q72_dataproc", "standalone_retried"]
_IN_BLOCKS = pytest.mark.parametrize(
    ("log", "rows"), list(zip(_REAL_LOGS, (1_000, 3), strict=True)), ids=_REAL_IDS
)
"""The real logs, each cut into blocks of a number of rows: many blocks of the larger, blocks of
3 rows of the smaller."""


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([0, 0, 0], pl.Int8),
        ([-128, 127], pl.Int8),
        ([-129, 0], pl.Int16),
        ([0, 128], pl.Int16),
        ([-(2**15), 2**15 - 1], pl.Int16),
        ([0, 2**15], pl.Int32),
        ([-(2**31), 2**31 - 1], pl.Int32),
        ([0, 2**31], pl.Int64),
        ([-(2**31) - 1, 0], pl.Int64),
        ([None, 5], pl.Int8),
        ([None, None], pl.Int8),
    ],
)
def test_narrowest_holds_every_value(values: list[int | None], dtype: pl.DataType) -> None:
    column = pl.Series("c", values, dtype=pl.Int64)
    narrow = narrowest(column)
    assert narrow.dtype == dtype
    assert narrow.cast(pl.Int64).to_list() == values


@pytest.mark.parametrize("log", _REAL_LOGS, ids=_REAL_IDS)
def test_stored_narrow_and_read_as_int64(log: Path) -> None:
    analysis = api.analyze(str(log))
    task_ints = [name for name in INT_COLUMNS if name not in _FLAGS]
    for table, ints in ((analysis.tasks, task_ints), (analysis.slots, list(SLOT_SCHEMA))):
        stored, read = table.stored, table.frame()
        assert set(table.narrowed) <= set(ints)
        assert table.narrowed, "a real log has small columns"
        assert all(read.schema[name] == pl.Int64 for name in ints)
        for name in ints:
            assert (stored.schema[name] == pl.Int64) == (name not in table.narrowed)
            assert read[name].to_list() == stored[name].to_list()
        assert stored.estimated_size() < read.estimated_size()


def test_part_keeps_the_narrow_columns_and_adds_rows_values() -> None:
    frame = pl.DataFrame({"a": pl.Series([1, 2], dtype=pl.Int8), "b": [10**12, 5]})
    table = TaskTable(frame)
    part = table.part(("a",), pl.Series("c", [7, 8]))
    assert part.narrowed == ("a",)
    assert part.frame().to_dict(as_series=False) == {"a": [1, 2], "c": [7, 8]}
    assert part.frame().schema["a"] == pl.Int64


@_IN_BLOCKS
def test_blocks_sealed_while_reading_make_the_same_table(
    log: Path, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay hands its task columns to the table's sealer every `SEAL_ROWS` rows; the
    table, and the report, are those of the columns gathered whole."""
    whole = api.analyze(str(log))
    sealed_blocks: list[str] = []

    def seal(name: str, values: array[int]) -> object:
        sealed_blocks.append(name)
        return seal_task_column(name, values)

    monkeypatch.setattr(task_columns, "SEAL_ROWS", rows)
    monkeypatch.setattr(api, "_seal_task_column", seal)
    sealed = api.analyze(str(log))
    assert len(sealed_blocks) >= len(INT_COLUMNS)  # a block or more before the last rows
    assert sealed.tasks.stored.schema == whole.tasks.stored.schema
    assert sealed.tasks.narrowed == whole.tasks.narrowed
    assert sealed.tasks.frame().equals(whole.tasks.frame())
    options = ReportOptions(fmt="json")
    assert api.render_report(sealed, options) == api.render_report(whole, options)


@_IN_BLOCKS
def test_slot_table_made_in_blocks_is_the_same(
    log: Path, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`slot_frame` narrows the slots `SLOT_BLOCK_ROWS` at a time and keeps the blocks as the
    columns' chunks: the same rows, types and report as one block."""
    monkeypatch.setattr(tables, "SLOT_BLOCK_ROWS", 1 << 40)
    whole = api.analyze(str(log))
    monkeypatch.setattr(tables, "SLOT_BLOCK_ROWS", rows)
    blocked = api.analyze(str(log))
    assert blocked.slots.stored.n_chunks() > 1
    assert blocked.slots.stored.schema == whole.slots.stored.schema
    assert blocked.slots.frame().equals(whole.slots.frame())
    options = ReportOptions(fmt="json")
    assert api.render_report(blocked, options) == api.render_report(whole, options)


def test_slot_table_takes_the_slot_arrays_out_of_the_frozen_executions() -> None:
    """The slots are held once: each frozen execution loses its slot arrays, nothing else."""
    from analyzer.errors import Strictness
    from analyzer.eventlog.source import resolve_log
    from analyzer.replay.parallel import replay_log

    log = SAMPLES / "app-20261122042434-0000.zstd"
    frozen = replay_log(resolve_log(str(log)), Strictness.STRICT, None).built.frozen
    before = {key: execution for key, execution in frozen.items()}
    n_slots = sum(len(e.slot_values) for e in before.values())
    table = tables.slot_frame(frozen)
    assert n_slots and table.stored.filter(pl.col("task_id") >= 0).height <= n_slots
    for key, execution in frozen.items():
        assert len(execution.slot_values) == len(execution.slot_task_ids) == 0
        assert execution.blocks == before[key].blocks
        assert execution.accumulator_ids == before[key].accumulator_ids
        assert execution.maxes == before[key].maxes
        assert execution.driver_values == before[key].driver_values
