"""Polars frames with explicit schemas, built from the columnar task data and frozen SQL values."""

from __future__ import annotations

from array import array

import polars as pl

from analyzer.build.sql_listener import FrozenMetric
from analyzer.build.task_columns import INT_COLUMNS, STR_COLUMNS, TaskColumns

_FLAG_COLUMNS = frozenset(("successful", "failed", "killed", "speculative"))

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
    """One row per task attempt: identity, placement, outcome and built-in metrics.

    Takes the columns out of `tasks` (see `TaskColumns.take`) and drops each array as soon as
    its series exists, so the task data is held about once, not twice.
    """
    data = tasks.take()
    n = data.n_rows
    columns = [pl.int_range(0, n, dtype=pl.get_index_type(), eager=True).alias("row")]
    for name in INT_COLUMNS:
        column = pl.Series(name, data.ints.pop(name), dtype=pl.Int64)
        columns.append(column.cast(pl.Boolean) if name in _FLAG_COLUMNS else column)
    for name in STR_COLUMNS:
        strings = data.strs.pop(name)
        codes = pl.Series(name, strings.codes, dtype=pl.UInt32)
        columns.append(
            pl.Series(name, strings.values, dtype=pl.String).gather(codes)
            if n
            else pl.Series(name, [], dtype=pl.String)
        )
    # Few attempts fail: scatter their reasons into an all-null column.
    reasons = pl.repeat(None, n, dtype=pl.String, eager=True).alias("failure_reason")
    if data.failure_reasons:
        reasons.scatter(list(data.failure_reasons), list(data.failure_reasons.values()))
    columns.append(reasons)
    return pl.DataFrame(columns)


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
