"""Polars frames with explicit schemas, built from the columnar task data and frozen SQL values."""

from __future__ import annotations

from array import array

import polars as pl

from analyzer.build.sql_listener import FrozenMetric
from analyzer.build.task_columns import INT_COLUMNS, STR_COLUMNS, TaskColumns

SLOT_SCHEMA = {
    "execution_id": pl.Int64,
    "accumulator_id": pl.Int64,
    "stage_id": pl.Int64,
    "stage_attempt_id": pl.Int64,
    "slot": pl.Int64,
    "task_id": pl.Int64,
    "value": pl.Int64,
}


def task_frame(tasks: TaskColumns) -> pl.DataFrame:
    """One row per task attempt: identity, placement, outcome and built-in metrics."""
    data: dict[str, pl.Series] = {}
    for name in INT_COLUMNS:
        data[name] = pl.Series(name, tasks.ints[name], dtype=pl.Int64)
    for name in STR_COLUMNS:
        col = tasks.strs[name]
        codes = pl.Series(name, col.codes, dtype=pl.UInt32)
        data[name] = (
            pl.Series(name, col.values, dtype=pl.String).gather(codes)
            if len(codes)
            else pl.Series(name, [], dtype=pl.String)
        )
    frame = pl.DataFrame(data)
    frame = frame.with_columns(
        pl.col(c).cast(pl.Boolean) for c in ("successful", "failed", "killed", "speculative")
    )
    reasons = tasks.failure_reasons
    frame = frame.with_row_index("row").with_columns(
        pl.col("row")
        .cast(pl.Int64)
        .replace_strict(
            list(reasons.keys()), list(reasons.values()), default=None, return_dtype=pl.String
        )
        .alias("failure_reason")
    )
    return frame


def slot_frame(frozen: dict[int, dict[int, FrozenMetric]]) -> pl.DataFrame:
    """The values Spark aggregates: a row per task slot of each counted stage and per driver value.

    Slots no task filled have task_id -1 and value 0 (Spark counts them); driver values have
    stage_id, stage_attempt_id and slot null and task_id -1.
    """
    cols: dict[str, array[int]] = {name: array("q") for name in SLOT_SCHEMA}
    driver_rows: dict[str, list[int | None]] = {name: [] for name in SLOT_SCHEMA}
    for execution_id, metrics in frozen.items():
        for acc_id, metric in metrics.items():
            for block in metric.blocks:
                n = len(block.values)
                cols["execution_id"].extend(array("q", [execution_id]) * n)
                cols["accumulator_id"].extend(array("q", [acc_id]) * n)
                cols["stage_id"].extend(array("q", [block.stage_id]) * n)
                cols["stage_attempt_id"].extend(array("q", [block.stage_attempt_id]) * n)
                cols["slot"].extend(array("q", range(n)))
                cols["task_id"].extend(block.task_ids)
                cols["value"].extend(block.values)
            for value in metric.driver_values:
                driver_rows["execution_id"].append(execution_id)
                driver_rows["accumulator_id"].append(acc_id)
                driver_rows["stage_id"].append(None)
                driver_rows["stage_attempt_id"].append(None)
                driver_rows["slot"].append(None)
                driver_rows["task_id"].append(-1)
                driver_rows["value"].append(value)
    tasks = pl.DataFrame({k: pl.Series(k, v, dtype=SLOT_SCHEMA[k]) for k, v in cols.items()})
    driver = pl.DataFrame(driver_rows, schema=SLOT_SCHEMA)
    return pl.concat([tasks, driver]) if driver.height else tasks
