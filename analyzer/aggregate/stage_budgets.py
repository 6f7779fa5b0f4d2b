"""Each stage's budget of task time and an execution's metric values per stage, from the frames.

A stage's budget is the executor run time of its successful task attempts (from Spark 4.0
divided by `spark.task.cpus`, see `task_cpus`); the time outside every operator is each task's
run time beyond its longest codegen pipeline; and each SQL metric's task values are summed per
(accumulator, stage) so that a metric claims time only from the stage it was updated in.
"""

from __future__ import annotations

import math
from collections import defaultdict

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.tables import SlotTable, TaskTable, stage_ranges
from analyzer.model.application import Application
from analyzer.units import INT_MAX


def acc_stage_sums(slots: pl.LazyFrame) -> dict[int, dict[tuple[int, int], int]]:
    """Per execution: (accumulator, stage) → sum of the task values (negatives count as 0)."""
    frame = (
        slots.filter(pl.col("stage_id").is_not_null())
        .group_by("execution_id", "accumulator_id", "stage_id")
        .agg(pl.col("value").clip(lower_bound=0).sum().alias("total"))
        .collect(engine=ENGINE)
    )
    out: dict[int, dict[tuple[int, int], int]] = defaultdict(dict)
    for eid, acc, stage, total in frame.iter_rows():
        out[eid][(acc, stage)] = int(total)
    return out


def task_cpus(app: Application) -> int:
    """Return what Spark multiplied executor run times by: `spark.task.cpus` from Spark 4.0.

    >>> from analyzer.model.application import Application
    >>> app = Application(app_id=None, attempt_id=None, name="a", spark_version="4.1.0",
    ...     user="u", start_ms=None, end_ms=None, completed=True, executors=(), jobs=(),
    ...     stages=(), executions=(), spark_properties=(("spark.task.cpus", "2"),))
    >>> task_cpus(app)
    2
    """
    major = app.spark_major
    if major is None or major < 4:
        return 1
    raw = dict(app.spark_properties).get("spark.task.cpus", "1").strip()
    try:
        cpus = float(raw)
    except ValueError:
        return 1
    # An int setting of Spark's: a value no Java int holds never ran (1e308, infinity).
    return max(1, int(cpus)) if math.isfinite(cpus) and cpus <= INT_MAX else 1


def stage_run_ms(tasks: TaskTable, cpus: int) -> tuple[dict[int, int], dict[int, int]]:
    """Per stage id: run time of the successful task attempts, and of every attempt."""
    if not tasks.height:
        return {}, {}
    run = (pl.col("run_ms").clip(lower_bound=0) // cpus).alias("run")
    frame = (
        tasks.lazy()
        .with_columns(run)
        .group_by("stage_id")
        .agg(
            pl.col("run").filter(pl.col("successful")).sum().alias("ok"),
            pl.col("run").sum().alias("all"),
        )
        .collect(engine=ENGINE)
    )
    ok: dict[int, int] = {}
    every: dict[int, int] = {}
    for stage, ok_ms, all_ms in frame.iter_rows():
        ok[int(stage)] = int(ok_ms or 0)
        every[int(stage)] = int(all_ms or 0)
    return ok, every


def stage_outside_ms(
    slots: SlotTable, tasks: TaskTable, codegen_accs: set[int], cpus: int
) -> dict[int, float]:
    """Per stage id: Σ over successful tasks of run time beyond the task's longest pipeline.

    Worked out a piece of whole stages at a time (`tables.stage_ranges`): a task's pipeline
    times are in its own stage's slots, and the query's hash tables, one entry per task, then
    hold a piece's tasks, not every task of the log (+135 MB on a million tasks at once).
    """
    if not codegen_accs or not slots.height or not tasks.height:
        return {}
    out: dict[int, float] = {}
    for first, last in stage_ranges(tasks):
        in_piece = pl.col("stage_id").is_between(first, last)
        longest = (
            slots.lazy()
            .filter(
                in_piece
                & pl.col("accumulator_id").is_in(list(codegen_accs))
                & (pl.col("task_id") >= 0)
            )
            .group_by("task_id")
            .agg(pl.col("value").max().alias("pipeline_ms"))
        )
        run = (pl.col("run_ms").clip(lower_bound=0) // cpus).alias("run")
        frame = (
            tasks.lazy()
            .filter(in_piece & pl.col("successful"))
            .select("task_id", "stage_id", run)
            .join(longest, on="task_id", how="inner")
            .group_by("stage_id")
            .agg((pl.col("run") - pl.col("pipeline_ms")).clip(lower_bound=0).sum().alias("outside"))
            .collect(engine=ENGINE)
        )
        out.update((int(stage), float(outside or 0)) for stage, outside in frame.iter_rows())
    return out
