"""Per plan node and metric: Spark's string, and the full distribution Spark's UI throws away."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import repeat

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.shared import SharedValues, by_node_id
from analyzer.aggregate.spark_format import CUSTOM_PREFIX, spark_string_from_stats
from analyzer.aggregate.tables import SlotTable, TaskTable, slot_batches
from analyzer.model.application import Execution
from analyzer.model.trusted import slot_setters
from analyzer.replay.application import BuiltApplication

QUANTILES = (("p25", 0.25), ("median", 0.5), ("p75", 0.75), ("p95", 0.95))


@dataclass(frozen=True, slots=True)
class MaxLocation:
    """Where a metric's maximum came from: a task attempt, or the driver."""

    stage_id: int | None
    stage_attempt_id: int | None
    task_id: int | None
    partition_id: int | None
    executor_id: str | None
    host: str | None


STAT_NAMES = ("count", "total", "min_value", "median", "max_value", "p25", "p75", "p95")
"""The order of the figures in `MetricStats.numbers`."""

_SHOWN_FIELDS = (
    "name",
    "metric_type",
    "accumulator_id",
    "spark_ui",
    "total",
    "min_value",
    "p25",
    "median",
    "p75",
    "p95",
    "max_value",
    "count",
    "skew_ratio",
    "skew_pct",
    "max_at",
    "stage_ids",
    "driver_values",
)
"""What `MetricStats`'s repr shows, in order: every figure by name, the derived ones too."""


@dataclass(frozen=True, slots=True, repr=False)
class MetricStats:
    """One metric of one node, over the values Spark's SQL tab aggregates.

    The values are one per task slot of every stage that updated the metric (slots no task
    filled count as 0, as in Spark) plus any driver-side values. For size and timing metrics
    (and types Spark does not define) negative values are left out, for averages values <= 0,
    exactly as Spark does; `total`,
    `min_value`, `median` and `max_value` therefore equal the numbers in `spark_ui`.

    The figures are one shared tuple (`numbers`), read through properties: a log of thousands of
    executions holds hundreds of thousands of these, and the same figures recur in every run of
    a repeated query, so eight fields of their own would be most of their size.
    """

    name: str
    metric_type: str
    accumulator_id: int
    spark_ui: str
    """Byte-identical to the History Server's REST API value for this metric."""
    numbers: tuple[int, int, int, int, int, int, int, int]
    """(count, total, min, median, max, p25, p75, p95) in the order of `STAT_NAMES`."""
    max_at: MaxLocation | None
    stage_ids: tuple[int, ...] = ()
    """The stages whose tasks updated this metric: for an exchange, the write-side metrics
    name the map stage and the read-side metrics the stage that reads the shuffle."""
    driver_values: tuple[int, ...] = ()
    """Values the driver posted, in logged order. For an AQE shuffle read's "partition data
    size" there is one per partition it reads, in partition order (so per task index of the
    reading stage); Spark's UI folds them into its min/med/max."""

    @property
    def count(self) -> int:
        """How many values the statistics are over."""
        return self.numbers[0]

    @property
    def total(self) -> int:
        """The sum of the values."""
        return self.numbers[1]

    @property
    def min_value(self) -> int:
        """The smallest value."""
        return self.numbers[2]

    @property
    def median(self) -> int:
        """Spark's upper median (the value at index n // 2 of the sorted values)."""
        return self.numbers[3]

    @property
    def max_value(self) -> int:
        """The largest value."""
        return self.numbers[4]

    @property
    def p25(self) -> int:
        """The 25th percentile (the higher value where it falls between two)."""
        return self.numbers[5]

    @property
    def p75(self) -> int:
        """The 75th percentile (the higher value where it falls between two)."""
        return self.numbers[6]

    @property
    def p95(self) -> int:
        """The 95th percentile (the higher value where it falls between two)."""
        return self.numbers[7]

    @property
    def skew_ratio(self) -> float | None:
        """max / median; None when the median is 0."""
        med = self.numbers[3]
        return self.numbers[4] / med if med > 0 else None

    @property
    def skew_pct(self) -> float:
        """100 × (max − median) / max: 0 when the max is typical, near 100 when one value
        dominates."""
        mx = self.numbers[4]
        return 100.0 * (mx - self.numbers[3]) / mx if mx > 0 else 0.0

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _SHOWN_FIELDS)
        return f"{type(self).__qualname__}({shown})"


@dataclass(frozen=True, slots=True, repr=False)
class FoldedMetricStats(MetricStats):
    """A metric summed over operators a drawn plan folds into one: the figures are over the
    operators' totals, so no skew is told."""

    @property
    def skew_ratio(self) -> float | None:
        """Never told for a fold."""
        return None

    @property
    def skew_pct(self) -> float:
        """Never told for a fold."""
        return 0.0


@dataclass(frozen=True, slots=True)
class NodeStats:
    """The metrics of one plan node (in the node's declared order) and the stages it ran in."""

    node_id: int
    metrics: tuple[MetricStats, ...]
    stage_ids: tuple[int, ...]


_new = object.__new__
_METRIC_STATS_SLOTS = slot_setters(MetricStats)
_NODE_STATS_SLOTS = slot_setters(NodeStats)


def _metric_stats(
    name: str,
    metric_type: str,
    accumulator_id: int,
    spark_ui: str,
    numbers: tuple[int, ...],
    max_at: MaxLocation | None,
    stage_ids: tuple[int, ...],
    driver_values: tuple[int, ...],
) -> MetricStats:
    """A `MetricStats` of values already of its fields' types, put in its slots: a frozen
    dataclass's `__init__` costs twice as much, and a log of thousands of executions makes one
    per metric of every execution."""
    out = _new(MetricStats)
    set_name, set_type, set_acc, set_ui, set_numbers, set_max, set_stages, set_driver = (
        _METRIC_STATS_SLOTS
    )
    set_name(out, name)
    set_type(out, metric_type)
    set_acc(out, accumulator_id)
    set_ui(out, spark_ui)
    set_numbers(out, numbers)
    set_max(out, max_at)
    set_stages(out, stage_ids)
    set_driver(out, driver_values)
    return out


def _node_stats(
    node_id: int, metrics: tuple[MetricStats, ...], stage_ids: tuple[int, ...]
) -> NodeStats:
    """A `NodeStats` put in its slots (see `_metric_stats`)."""
    out = _new(NodeStats)
    set_node, set_metrics, set_stages = _NODE_STATS_SLOTS
    set_node(out, node_id)
    set_metrics(out, metrics)
    set_stages(out, stage_ids)
    return out


def counted_by_spark() -> pl.Expr:
    """Whether Spark's string counts a row's `value`, by its `metric_type` (`valid_for_spark`).

    Averages count values > 0; sums and custom metrics every value; sizes, times and types
    Spark does not define values >= 0.
    """
    return (
        pl.when(pl.col("metric_type") == "average")
        .then(pl.col("value") > 0)
        .when(
            (pl.col("metric_type") == "sum") | pl.col("metric_type").str.starts_with(CUSTOM_PREFIX)
        )
        .then(pl.lit(True))
        .otherwise(pl.col("value") >= 0)
    )


_BELOW_2_63 = float((1 << 63) - 1024)
"""The largest double below 2^63: a quantile of values near a Java long's maximum (a hostile
log's) rounds up to 2^63 as a double, which no 8-byte integer holds."""


def _metric_frame(slots: pl.LazyFrame, types: pl.DataFrame) -> pl.DataFrame:
    """Aggregate slot values per (execution, accumulator) over the values Spark counts."""
    valid = counted_by_spark()
    keyed = slots.join(types.lazy(), on=["execution_id", "accumulator_id"], how="inner").collect(
        engine=ENGINE
    )
    present = keyed.select("execution_id", "accumulator_id").unique()
    stats = (
        keyed.filter(valid)
        .group_by("execution_id", "accumulator_id")
        .agg(
            pl.len().alias("count"),
            pl.col("value").sum().alias("total"),
            pl.col("value").min().alias("min_value"),
            pl.col("value").max().alias("max_value"),
            *(
                pl.col("value")
                .quantile(q, interpolation="higher")
                .clip(upper_bound=_BELOW_2_63)
                .cast(pl.Int64)
                .alias(name)
                for name, q in QUANTILES
            ),
        )
    )
    return present.join(stats, on=["execution_id", "accumulator_id"], how="left")


_FirstMax = tuple[int | None, int | None, int, int | None, str | None, str | None]
"""(stage id, stage attempt, task id, partition, executor id, host) of the first slot holding a
metric's maximum; task id -1 and no stage for a driver value."""


def _first_max_rows(slots: pl.LazyFrame, tasks: TaskTable) -> dict[tuple[int, int], _FirstMax]:
    """For each (execution, accumulator): the first slot holding the maximum, with its task.

    The winning slot is found on the slots alone; only those few rows are joined with the tasks,
    so no task column is ever gathered for every slot. A tuple per row, not a dict: a log of
    thousands of executions has hundreds of thousands of them.
    """
    keys = ["execution_id", "accumulator_id"]
    winners = (
        slots.with_row_index("order")
        .filter(pl.col("value") == pl.col("value").max().over(keys))
        .group_by(keys, maintain_order=True)
        .agg(pl.all().first())
        .collect(engine=ENGINE)
    )
    best = winners.join(
        tasks.lazy()
        .select(
            pl.col("task_id"),
            pl.col("partition_id"),
            pl.col("executor_id"),
            pl.col("host"),
            pl.col("index").alias("task_index"),
        )
        .filter(pl.col("task_id").is_in(winners.get_column("task_id").unique().to_list()))
        .unique("task_id", keep="first")
        .collect(engine=ENGINE),
        on="task_id",
        how="left",
        maintain_order="left",
    )
    columns = ("stage_id", "stage_attempt_id", "task_id", "partition_id", "executor_id", "host")
    return {
        (r[0], r[1]): r[2:]
        for r in best.select("execution_id", "accumulator_id", *columns).iter_rows()
    }


def aggregate_node_metrics(
    built: BuiltApplication, slots: SlotTable, tasks: TaskTable
) -> dict[int, Mapping[int, NodeStats]]:
    """Return, per execution id and node id, the statistics of every metric that has values.

    The executions are aggregated in batches of about `tables.BATCH_SLOT_ROWS` slot rows: the
    records made per (execution, metric) on the way live for one batch, not for the log.
    """
    app = built.application
    executions = {e.execution_id: e for e in app.executions}
    # Indexed once: scanning every stage attempt for each execution is quadratic (50 s for
    # 3,600 executions).
    stage_accumulators: dict[int, list[array[int]]] = {}
    for (stage_id, _attempt), ids in built.stage_accumulators.items():
        stage_accumulators.setdefault(stage_id, []).append(ids)
    shared = SharedValues()
    out: dict[int, Mapping[int, NodeStats]] = {}
    for batch_ids, batch_slots in slot_batches(slots, list(executions)):
        batch = [executions[i] for i in batch_ids]
        stats = _batch_stats(batch, batch_slots, shared)
        max_rows = _first_max_rows(batch_slots, tasks)
        places = _spark_max_places(batch, built, tasks)
        for execution in batch:
            out[execution.execution_id] = _execution_nodes(
                execution, built, stats, max_rows, places, stage_accumulators, shared
            )
    return out


def _batch_stats(
    executions: list[Execution], slots: pl.LazyFrame, shared: SharedValues
) -> dict[tuple[int, int], tuple[int, ...]]:
    """(count, total, min, median, max, p25, p75, p95) per (execution, accumulator) of some
    executions, from their slot rows; a metric whose values Spark leaves all out has zeros."""
    # Columns, not a tuple per row: every metric of every execution.
    execution_ids: array[int] = array("q")
    accumulator_ids: array[int] = array("q")
    metric_types: list[str] = []
    for e in executions:
        catalog = e.metric_catalog
        execution_ids.extend(repeat(e.execution_id, len(catalog)))
        accumulator_ids.extend(catalog.accumulator_ids)
        metric_types.extend([m.metric_type for m in catalog.specs])
    types = pl.DataFrame(
        [
            pl.Series("execution_id", execution_ids, dtype=pl.Int64),
            pl.Series("accumulator_id", accumulator_ids, dtype=pl.Int64),
            pl.Series("metric_type", metric_types, dtype=pl.String),
        ]
    )
    del execution_ids, accumulator_ids, metric_types
    return {
        (r[0], r[1]): shared.one(shared.numbers(r[2:]))
        for r in _metric_frame(slots, types)
        .select("execution_id", "accumulator_id", *(pl.col(c).fill_null(0) for c in STAT_NAMES))
        .iter_rows()
    }


def _spark_max_places(
    executions: list[Execution], built: BuiltApplication, tasks: TaskTable
) -> dict[int, tuple[object, object, object]]:
    """(partition, executor id, host) by task id of the tasks Spark's UI names as holding some
    executions' metric maxima."""
    wanted: set[int] = set()
    for e in executions:
        frozen = built.frozen.get(e.execution_id)
        if frozen is not None:
            wanted.update(frozen.maxes[i] for i in range(4, len(frozen.maxes), 5))
    return {
        int(r[0]): (r[1], r[2], r[3])
        for r in tasks.lazy()
        .filter(pl.col("task_id").is_in(list(wanted)))
        .select("task_id", "partition_id", "executor_id", "host")
        .collect(engine=ENGINE)
        .iter_rows()
    }


def _execution_nodes(
    execution: Execution,
    built: BuiltApplication,
    stats: dict[tuple[int, int], tuple[int, ...]],
    max_rows: dict[tuple[int, int], _FirstMax],
    places: dict[int, tuple[object, object, object]],
    stage_accumulators: dict[int, list[array[int]]],
    shared: SharedValues,
) -> Mapping[int, NodeStats]:
    """`stage_accumulators`: stage id → the SQL accumulator ids of each of its attempts;
    `shared` hands out the one object of each value the statistics repeat.

    Runs once per execution, over every metric its plan declares (most without values in a
    plan of many operators): a metric without values costs only its node's test of which
    stages updated any of the node's metrics.
    """
    execution_id = execution.execution_id
    frozen = built.frozen.get(execution_id)
    frozen_ids = set(frozen.accumulator_ids) if frozen is not None else set()
    spark_maxes = frozen.max_at() if frozen is not None else {}
    driver_values = frozen.driver_values_of() if frozen is not None else {}
    # Per stage of the execution (ascending), the accumulator ids any of its attempts updated:
    # a metric's stages are those whose set holds its id (a few stages, tens of metrics).
    stage_sets = [
        (stage_id, frozenset().union(*stage_accumulators[stage_id]))
        for stage_id in sorted(set(execution.stage_ids))
        if stage_id in stage_accumulators
    ]
    graph = execution.final_plan.graph
    one = shared.one
    no_stages = one(())
    own_stages: dict[int, tuple[int, ...]] = {}
    nodes: dict[int, NodeStats] = {}
    for node in graph.nodes:
        node_id = node.node_id
        declared = node.metrics
        if not declared:
            own_stages[node_id] = no_stages
            continue
        acc_ids = graph.accumulator_ids(node_id)
        # `stage_sets` is ascending and without repeats, so these are sorted and distinct.
        stage_ids = one(
            tuple([stage_id for stage_id, ids in stage_sets if not ids.isdisjoint(acc_ids)])
        )
        own_stages[node_id] = stage_ids
        metrics = []
        for m, acc_id in zip(declared, acc_ids, strict=True):
            key = (execution_id, acc_id)
            row = stats.get(key)
            if row is None or acc_id not in frozen_ids:
                continue
            count, total, mn, med, mx = row[:5]
            spark_max = spark_maxes.get(acc_id)
            spark_ui = one(
                spark_string_from_stats(
                    m.metric_type,
                    count,
                    total,
                    mn,
                    med,
                    mx,
                    spark_max[1:] if spark_max is not None else None,
                )
            )
            metrics.append(
                _metric_stats(
                    m.name,
                    m.metric_type,
                    acc_id,
                    spark_ui,
                    row,
                    _max_location(spark_max, max_rows.get(key), mx, places, shared),
                    one(tuple([stage_id for stage_id, ids in stage_sets if acc_id in ids])),
                    one(tuple(driver_values.get(acc_id, ()))),
                )
            )
        if metrics:
            nodes[node_id] = _node_stats(node_id, tuple(metrics), stage_ids)
    # Operators without metrics of their own run in their codegen cluster's stages. A node
    # without metric values is its id and stages: one object for every execution where those
    # are equal (most nodes of a stream's micro-batches or of a repeated query's runs).
    for node in graph.nodes:
        node_id = node.node_id
        stage_ids = own_stages[node_id]
        if not stage_ids and node.cluster_id is not None:
            # As the node's cluster stands now: a cluster before it in the plan has its own
            # cluster's stages already, as when each node was replaced in turn.
            stage_ids = own_stages[node_id] = own_stages[node.cluster_id]
        found = nodes.get(node_id)
        if found is None:
            nodes[node_id] = one(_node_stats(node_id, (), stage_ids))
        elif found.stage_ids is not stage_ids:
            nodes[node_id] = _node_stats(node_id, found.metrics, stage_ids)
    return by_node_id({node.node_id: nodes[node.node_id] for node in graph.nodes})


def _max_location(
    spark_max: tuple[int, int, int, int] | None,
    first_max: _FirstMax | None,
    max_value: int,
    places: dict[int, tuple[object, object, object]],
    shared: SharedValues,
) -> MaxLocation | None:
    if first_max is None:
        return None
    stage_id, attempt, task_id, partition_id, executor_id, host = first_max
    if task_id < 0:
        if stage_id is None:
            return shared.made(MaxLocation, _DRIVER_MAX, _max_location_of)
        return None
    place: tuple[object, object, object] = (partition_id, executor_id, host)
    if spark_max is not None and spark_max[0] == max_value and spark_max[3] in places:
        # Where several tasks share the maximum, point at the one Spark's UI names.
        _, stage_id, attempt, task_id = spark_max
        place = places[spark_max[3]]
    fields = (stage_id, attempt, task_id, place[0], shared.one(place[1]), shared.one(place[2]))
    return shared.made(MaxLocation, fields, _max_location_of)


_DRIVER_MAX = (None, None, None, None, "driver", None)
_MAX_LOCATION_SLOTS = slot_setters(MaxLocation)


def _max_location_of(fields: tuple[object, ...]) -> MaxLocation:
    """A `MaxLocation` of these field values, put in its slots (see `_metric_stats`)."""
    out = _new(MaxLocation)
    for set_field, value in zip(_MAX_LOCATION_SLOTS, fields, strict=True):
        set_field(out, value)
    return out
