"""Per-task detail for the reports: histograms, top tasks per node, stage quantiles, task lines.

The reports build their view models from what these functions return (plain ints, strings and
frozen records), so that every polars operation on the task and slot tables stays in this layer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.node_metrics import counted_by_spark

if TYPE_CHECKING:  # analysis.py reaches these figures through its accessors
    from analyzer.aggregate.analysis import Analysis

TaskCell = int | str | None
"""One cell of a per-task row: an id, a placement string or a metric value (None when absent)."""


@dataclass(frozen=True)
class TaskCounts:
    """How many task attempts an application ran, and how many of them failed or were killed."""

    n_attempts: int
    n_failed: int
    n_killed: int


@dataclass(frozen=True)
class MetricHistogram:
    """The values a metric's statistics are over, counted in equal-width bins."""

    lo: int
    """Smallest value."""
    hi: int
    """Largest value."""
    counts: tuple[int, ...]
    """Values per bin, lowest bin first; a single bin when every value is the same."""


@dataclass(frozen=True)
class NodeTaskQuery:
    """Which metrics of one plan node to list per task, and the one ranking the tasks."""

    accumulator_ids: tuple[int, ...]
    """Every metric of the node, in declared order."""
    main_accumulator_id: int
    """The metric whose largest values pick the listed tasks."""


@dataclass(frozen=True)
class NodeTaskRows:
    """The tasks of one plan node with the largest main metric, with all its metric values."""

    accumulator_ids: tuple[int, ...]
    """The node's metrics that have per-task values, in declared order (the trailing columns)."""
    rows: tuple[tuple[TaskCell, ...], ...]
    """Per task, largest main metric first: task id, stage id, partition id, executor id, host,
    duration in ms, then one value per metric in `accumulator_ids` (None when it has none)."""
    n_tasks: int
    """How many tasks have a value of the main metric (the rows may be fewer)."""


def task_counts(analysis: Analysis) -> TaskCounts:
    """Count the application's task attempts and its failed and killed ones."""
    tasks = analysis.tasks
    if not tasks.height:
        return TaskCounts(n_attempts=0, n_failed=0, n_killed=0)
    n_failed, n_killed = (
        tasks.lazy()
        .select(pl.col("failed").sum(), pl.col("killed").sum())
        .collect(engine=ENGINE)
        .row(0)
    )
    return TaskCounts(n_attempts=tasks.height, n_failed=int(n_failed), n_killed=int(n_killed))


TaskRow = dict[str, Any]
"""One task attempt as a row of `Analysis.tasks` (only the `STAGE_TASK_COLUMNS`)."""

STAGE_TASK_COLUMNS = (
    "stage_id",
    "stage_attempt_id",
    "task_id",
    "attempt",
    "partition_id",
    "duration_ms",
    "input_records",
    "shuffle_read_records",
    "input_bytes",
    "shuffle_read_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "executor_id",
    "host",
    "end_reason",
    "failed",
    "speculative",
    "failure_reason",
)
"""The task-table columns of a stage's task lines."""


def stage_task_rows(
    analysis: Analysis, stage_keys: Collection[tuple[int, int]]
) -> dict[tuple[int, int], list[TaskRow]]:
    """Group the task attempts of the given (stage, attempt) keys, ordered by task id, as dicts
    of the `STAGE_TASK_COLUMNS`.

    The stages are picked out by polars before any row becomes a dict: a report of a few
    stages of a large application does not turn every task of the application into one.
    """
    by_stage: dict[tuple[int, int], list[TaskRow]] = {}
    if not stage_keys:
        return by_stage
    wanted = set(stage_keys)
    picked = _execution_tasks(analysis, {stage_id for stage_id, _ in wanted})
    rows = picked.select(STAGE_TASK_COLUMNS).sort("task_id", maintain_order=True)
    for row in rows.iter_rows(named=True):
        key = (row["stage_id"], row["stage_attempt_id"])
        if key in wanted:
            by_stage.setdefault(key, []).append(row)
    return by_stage


def retried_task_counts(analysis: Analysis) -> dict[tuple[int, int], int]:
    """Count, per (stage, attempt), its task attempts that are retries (attempt number above
    0); stage attempts without any are left out."""
    counted = (
        analysis.tasks.lazy()
        .filter(pl.col("attempt") > 0)
        .group_by("stage_id", "stage_attempt_id")
        .len()
        .collect(engine=ENGINE)
        .iter_rows()
    )
    return {(stage_id, attempt): n for stage_id, attempt, n in counted}


def _execution_tasks(analysis: Analysis, stage_ids: Iterable[int]) -> pl.DataFrame:
    return (
        analysis.tasks.lazy()
        .filter(pl.col("stage_id").is_in(list(stage_ids)))
        .collect(engine=ENGINE)
    )


def _execution_slots(analysis: Analysis, execution_id: int) -> pl.DataFrame:
    return (
        analysis.slots.lazy().filter(pl.col("execution_id") == execution_id).collect(engine=ENGINE)
    )


# The values a metric's statistics are over: Spark leaves out -1 (and, for averages, 0) entries.
_VALID = counted_by_spark()


def metric_histograms(
    analysis: Analysis, execution_id: int, n_bins: int
) -> dict[int, MetricHistogram]:
    """Bin each metric of the execution's plan nodes into `n_bins` equal bins, over the values
    its statistics are over; keyed by accumulator id, metrics without values left out."""
    stats_by_acc = {
        m.accumulator_id: m
        for ns in analysis.node_stats.get(execution_id, {}).values()
        for m in ns.metrics
    }
    metric_types = {acc_id: m.metric_type for acc_id, m in stats_by_acc.items()}
    slots = _execution_slots(analysis, execution_id)
    if slots.is_empty() or not metric_types:
        return {}
    typed = slots.join(
        pl.DataFrame(
            {"accumulator_id": list(metric_types), "metric_type": list(metric_types.values())},
            schema={"accumulator_id": pl.Int64, "metric_type": pl.String},
        ),
        on="accumulator_id",
    ).filter(_VALID)
    bounds = typed.group_by("accumulator_id").agg(
        pl.col("value").min().alias("lo"), pl.col("value").max().alias("hi")
    )
    binned = (
        typed.join(bounds, on="accumulator_id")
        .with_columns(
            pl.when(pl.col("hi") == pl.col("lo"))
            .then(0)
            .otherwise(
                (pl.col("value") - pl.col("lo")) * n_bins // (pl.col("hi") - pl.col("lo") + 1)
            )
            .alias("bin")
        )
        .group_by("accumulator_id", "bin")
        .agg(pl.len().alias("n"))
    )
    counts: dict[int, list[int]] = defaultdict(lambda: [0] * n_bins)
    for acc_id, bin_index, n in binned.iter_rows():
        counts[acc_id][min(int(bin_index), n_bins - 1)] += n
    out: dict[int, MetricHistogram] = {}
    for acc_id, lo, hi in bounds.iter_rows():
        out[int(acc_id)] = MetricHistogram(
            lo=lo,
            hi=hi,
            counts=tuple(counts[acc_id] if hi != lo else [counts[acc_id][0]]),
        )
    return out


def top_task_rows(
    analysis: Analysis,
    execution_id: int,
    stage_ids: Iterable[int],
    queries: Mapping[str, NodeTaskQuery],
    max_rows: int,
) -> dict[str, NodeTaskRows]:
    """Per node: the tasks with the largest main metric (at most `max_rows`) and all of the
    node's metric values for them, joined with the task's placement and duration.

    `queries` is keyed by the caller's node key, which keys the result too; nodes whose main
    metric has no per-task value are left out.
    """
    out: dict[str, NodeTaskRows] = {}
    by_task = _execution_slots(analysis, execution_id).filter(pl.col("task_id") >= 0)
    if by_task.is_empty() or not queries:
        return out
    # One pass over the execution's slots for every node at once: a node's own filters, sorts
    # and pivots cost a dozen polars calls over all of the execution's slots each.
    keys = list(queries)
    wanted = pl.DataFrame(
        [
            (index, acc_id, acc_id == query.main_accumulator_id)
            for index, query in enumerate(queries.values())
            for acc_id in dict.fromkeys(query.accumulator_ids)
        ],
        schema={"node": pl.Int64, "accumulator_id": pl.Int64, "is_main": pl.Boolean},
        orient="row",
    )
    mine = by_task.with_row_index("slot_order").join(wanted, on="accumulator_id", how="inner")
    ranked = mine.filter(pl.col("is_main"))
    n_tasks = dict(ranked.group_by("node").len().iter_rows())
    keep = (
        ranked.sort(["node", "value", "task_id"], descending=[False, True, False])
        .group_by("node", maintain_order=True)
        .head(max_rows)
        .select("node", "task_id", "stage_id", "stage_attempt_id")
    )
    values: dict[tuple[int, int, int, int], dict[int, int]] = {}
    for node, task_id, stage_id, attempt, acc_id, value in (
        mine.join(keep, on=["node", "task_id", "stage_id", "stage_attempt_id"], how="inner")
        .sort("slot_order")
        .select("node", "task_id", "stage_id", "stage_attempt_id", "accumulator_id", "value")
        .iter_rows()
    ):
        values.setdefault((node, task_id, stage_id, attempt), {}).setdefault(acc_id, value)
    kept_ids = sorted({key[1] for key in values})
    place = {
        row[0]: row[1:]
        for row in _execution_tasks(analysis, stage_ids)
        .filter(pl.col("task_id").is_in(kept_ids))
        .select("task_id", "partition_id", "executor_id", "host", "duration_ms")
        .unique("task_id", keep="first")
        .iter_rows()
    }
    per_node: dict[int, list[tuple[tuple[int, int, int, int], dict[int, int]]]] = {}
    for key, by_acc in values.items():
        per_node.setdefault(key[0], []).append((key, by_acc))
    for index, entries in per_node.items():
        query = queries[keys[index]]
        ids = list(dict.fromkeys(query.accumulator_ids))
        main_id = query.main_accumulator_id
        entries.sort(key=lambda e: (-(e[1].get(main_id) or 0), e[0][1]))
        seen = {acc_id for _, by_acc in entries for acc_id in by_acc}
        present = tuple(a for a in ids if a in seen)
        rows = []
        for (_, task_id, stage_id, _attempt), by_acc in entries:
            partition_id, executor_id, host, duration_ms = place.get(
                task_id, (None, None, None, None)
            )
            rows.append(
                (
                    task_id,
                    stage_id,
                    partition_id,
                    executor_id,
                    host,
                    duration_ms,
                    *(by_acc.get(a) for a in present),
                )
            )
        out[keys[index]] = NodeTaskRows(
            accumulator_ids=present, rows=tuple(rows), n_tasks=n_tasks[index]
        )
    return {key: out[key] for key in keys if key in out}


def task_quantiles(values: Sequence[int]) -> tuple[int, int, int, int, int]:
    """Return min, 25th, median, 75th and max as Spark's stage page picks them (index q × n).

    >>> task_quantiles([5, 1, 4, 2, 3])
    (1, 2, 3, 4, 5)
    """
    ordered = sorted(values)
    n = len(ordered)
    picks = [ordered[min(int(q * n), n - 1)] for q in (0.0, 0.25, 0.5, 0.75)]
    return picks[0], picks[1], picks[2], picks[3], ordered[-1]


def first_failed_task(analysis: Analysis, stage_ids: Iterable[int]) -> tuple[int, str] | None:
    """Return the failed task attempt of the given stages that ended first, and its reason."""
    tasks = analysis.tasks
    wanted = list(stage_ids)
    if not tasks.height or not wanted:
        return None
    failed = (
        tasks.lazy()
        .filter(
            pl.col("stage_id").is_in(wanted)
            & pl.col("failed")
            & pl.col("failure_reason").is_not_null()
        )
        .select("task_id", "finish_ms", "failure_reason")
        .sort("finish_ms", "task_id")
        .collect(engine=ENGINE)
    )
    if not failed.height:
        return None
    row = failed.row(0, named=True)
    return int(row["task_id"]), str(row["failure_reason"])


def task_metric_shares(
    analysis: Analysis,
    execution_id: int,
    stage_id: int,
    task_id: int,
    accumulator_ids: Iterable[int],
) -> dict[int, tuple[int, int]]:
    """Per accumulator: one task's value in a stage and the stage's total (negatives as 0).

    The values are the ones Spark's SQL tab counts (one per task slot), so a task's share of a
    node's rows in a stage is `value / total`.
    """
    wanted = list(accumulator_ids)
    if not wanted or not analysis.slots.height:
        return {}
    frame = (
        analysis.slots.lazy()
        .filter(
            (pl.col("execution_id") == execution_id)
            & (pl.col("stage_id") == stage_id)
            & pl.col("accumulator_id").is_in(wanted)
        )
        .with_columns(pl.col("value").clip(lower_bound=0))
        .group_by("accumulator_id")
        .agg(
            pl.col("value").filter(pl.col("task_id") == task_id).sum().alias("task"),
            pl.col("value").sum().alias("total"),
        )
        .collect(engine=ENGINE)
    )
    return {int(acc): (int(task or 0), int(total or 0)) for acc, task, total in frame.iter_rows()}


def task_metric_values(
    analysis: Analysis, execution_id: int, stage_id: int, accumulator_id: int
) -> tuple[tuple[int, int], ...]:
    """One accumulator's value in each task slot of a stage, largest first (negatives as 0).

    Each item is `(task id, value)`, the values Spark's SQL tab counts (one per task slot); a
    slot no task updated has task id -1 and value 0. A scan's row counts per task show how its
    rows were spread over the splits: how many tasks carried them and how many read none.
    """
    if not analysis.slots.height:
        return ()
    frame = (
        analysis.slots.lazy()
        .filter(
            (pl.col("execution_id") == execution_id)
            & (pl.col("stage_id") == stage_id)
            & (pl.col("accumulator_id") == accumulator_id)
        )
        .select("task_id", pl.col("value").clip(lower_bound=0))
        .sort(["value", "task_id"], descending=[True, False])
        .collect(engine=ENGINE)
    )
    return tuple((int(task), int(value)) for task, value in frame.iter_rows())
