"""The task table and the slot table are stored narrow and read as Int64: every integer column in
the narrowest type that holds its values, the same values and types through `lazy()`."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import SAMPLES, public

from analyzer import api
from analyzer.aggregate.tables import SLOT_SCHEMA, TaskTable, narrowest
from analyzer.replay.task_columns import INT_COLUMNS

_FLAGS = {"successful", "failed", "killed", "speculative"}


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


@pytest.mark.parametrize(
    "log",
    [public("nds_q72_dataproc_2_2.zstd"), SAMPLES / "app-20261122042434-0000.zstd"],
    ids=["nds_q72_dataproc", "standalone_retried"],
)
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
    table = TaskTable(frame, ("a",))
    part = table.part(("a",), pl.Series("c", [7, 8]))
    assert part.narrowed == ("a",)
    assert part.frame().to_dict(as_series=False) == {"a": [1, 2], "c": [7, 8]}
    assert part.frame().schema["a"] == pl.Int64
