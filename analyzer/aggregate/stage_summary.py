"""Per stage attempt: the task-metric quantiles of Spark's History Server, value for value.

Spark's `/api/v1/applications/<id>/stages/<stage>/<attempt>/taskSummary?quantiles=…` (and the
"Summary Metrics" table of its stage page) is computed by `AppStatusStore.taskSummary` over the
tasks its `AppStatusListener` recorded. `stage_task_summaries` reproduces it, quirks included
(docs/metrics.md, "Stage task quantiles"):

* Only tasks Spark recorded count: a task from its TaskStart to its first TaskEnd
  (`in_task_store`).
* Spark stores the metrics of a task that did not succeed as `-value - 1`, so that they sort
  below 0, and reads each metric from an index starting at 0: a failed or killed task drops out
  of every metric it stores that way. Three derived values are computed from the true values
  and so keep such tasks in: the duration, the scheduler delay and the getting-result time (a
  task's shuffle totals, sums of two stored values, stay out).
* The number of tasks `n` is the count of tasks with an executor run time ≥ 0 (in practice the
  successful ones), and the quantile `q` is the value at rank `min(floor(q·n), n − 1)` of each
  metric's sorted values ≥ 0, without interpolation. A metric with fewer values than the rank
  has no value there (Spark returns NaN; here None).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.shared import SharedValues
from analyzer.aggregate.tables import stage_pieces
from analyzer.replay.task_columns import PUSH_COLUMNS

if TYPE_CHECKING:  # analysis.py reaches these figures through its accessors
    from analyzer.aggregate.analysis import Analysis

SPARK_DEFAULT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
"""The quantiles Spark's REST API uses when none are given."""

_OK = pl.col("successful")


def _stored(column: str) -> pl.Expr:
    """A metric as Spark stores it: as is for a successful task, `-value - 1` otherwise."""
    value = pl.col(column)
    return pl.when(_OK).then(value).otherwise(-value - 1)


def _getting_result_ms() -> pl.Expr:
    return pl.col("getting_result_ms")


def _scheduler_delay_ms() -> pl.Expr:
    # AppStatusUtils.schedulerDelay, on the true (not stored) values.
    return pl.max_horizontal(
        pl.lit(0, dtype=pl.Int64),
        pl.col("duration_ms")
        - pl.col("run_ms")
        - pl.col("deserialize_ms")
        - pl.col("result_serialization_ms")
        - _getting_result_ms(),
    )


@dataclass(frozen=True)
class SummaryMetric:
    """One metric of Spark's task summary: where it is in the REST answer and how it is keyed."""

    field: str
    """Its field in `StageTaskSummary`."""
    rest_path: tuple[str, ...]
    """Its place in Spark's `TaskMetricDistributions` JSON, e.g. `("shuffleReadMetrics",
    "readBytes")`."""
    unit: str
    """`ms`, `ns`, `bytes` or `count`."""
    key: pl.Expr
    """The value Spark sorts and picks the quantiles from, per task row."""


def _metric(field: str, rest_path: str, unit: str, key: pl.Expr) -> SummaryMetric:
    return SummaryMetric(field, tuple(rest_path.split(".")), unit, key)


SUMMARY_METRICS: tuple[SummaryMetric, ...] = (
    _metric("duration_ms", "duration", "ms", pl.col("duration_ms")),
    _metric(
        "executor_deserialize_time_ms", "executorDeserializeTime", "ms", _stored("deserialize_ms")
    ),
    _metric(
        "executor_deserialize_cpu_time_ns",
        "executorDeserializeCpuTime",
        "ns",
        _stored("deserialize_cpu_ns"),
    ),
    _metric("executor_run_time_ms", "executorRunTime", "ms", _stored("run_ms")),
    _metric("executor_cpu_time_ns", "executorCpuTime", "ns", _stored("cpu_ns")),
    _metric("result_size_bytes", "resultSize", "bytes", _stored("result_size_bytes")),
    _metric("jvm_gc_time_ms", "jvmGcTime", "ms", _stored("gc_ms")),
    _metric(
        "result_serialization_time_ms",
        "resultSerializationTime",
        "ms",
        _stored("result_serialization_ms"),
    ),
    _metric("getting_result_time_ms", "gettingResultTime", "ms", _getting_result_ms()),
    _metric("scheduler_delay_ms", "schedulerDelay", "ms", _scheduler_delay_ms()),
    _metric(
        "peak_execution_memory_bytes",
        "peakExecutionMemory",
        "bytes",
        _stored("peak_execution_memory_bytes"),
    ),
    _metric("memory_bytes_spilled", "memoryBytesSpilled", "bytes", _stored("memory_bytes_spilled")),
    _metric("disk_bytes_spilled", "diskBytesSpilled", "bytes", _stored("disk_bytes_spilled")),
    _metric("input_bytes", "inputMetrics.bytesRead", "bytes", _stored("input_bytes")),
    _metric("input_records", "inputMetrics.recordsRead", "count", _stored("input_records")),
    _metric("output_bytes", "outputMetrics.bytesWritten", "bytes", _stored("output_bytes")),
    _metric("output_records", "outputMetrics.recordsWritten", "count", _stored("output_records")),
    _metric(
        "shuffle_read_bytes",
        "shuffleReadMetrics.readBytes",
        "bytes",
        _stored("shuffle_local_bytes_read") + _stored("shuffle_remote_bytes_read"),
    ),
    _metric(
        "shuffle_read_records",
        "shuffleReadMetrics.readRecords",
        "count",
        _stored("shuffle_read_records"),
    ),
    _metric(
        "shuffle_remote_blocks_fetched",
        "shuffleReadMetrics.remoteBlocksFetched",
        "count",
        _stored("shuffle_remote_blocks_fetched"),
    ),
    _metric(
        "shuffle_local_blocks_fetched",
        "shuffleReadMetrics.localBlocksFetched",
        "count",
        _stored("shuffle_local_blocks_fetched"),
    ),
    _metric(
        "shuffle_fetch_wait_time_ms",
        "shuffleReadMetrics.fetchWaitTime",
        "ms",
        _stored("shuffle_fetch_wait_ms"),
    ),
    _metric(
        "shuffle_remote_bytes_read",
        "shuffleReadMetrics.remoteBytesRead",
        "bytes",
        _stored("shuffle_remote_bytes_read"),
    ),
    _metric(
        "shuffle_remote_bytes_read_to_disk",
        "shuffleReadMetrics.remoteBytesReadToDisk",
        "bytes",
        _stored("shuffle_remote_bytes_read_to_disk"),
    ),
    _metric(
        "shuffle_total_blocks_fetched",
        "shuffleReadMetrics.totalBlocksFetched",
        "count",
        _stored("shuffle_local_blocks_fetched") + _stored("shuffle_remote_blocks_fetched"),
    ),
    _metric(
        "shuffle_remote_reqs_duration_ms",
        "shuffleReadMetrics.remoteReqsDuration",
        "ms",
        _stored("shuffle_remote_reqs_duration_ms"),
    ),
    *(
        _metric(
            name,
            f"shuffleReadMetrics.shufflePushReadMetricsDist.{rest}",
            unit,
            _stored(name),
        )
        for (name, _), (rest, unit) in zip(
            PUSH_COLUMNS,
            (
                ("corruptMergedBlockChunks", "count"),
                ("mergedFetchFallbackCount", "count"),
                ("remoteMergedBlocksFetched", "count"),
                ("localMergedBlocksFetched", "count"),
                ("remoteMergedChunksFetched", "count"),
                ("localMergedChunksFetched", "count"),
                ("remoteMergedBytesRead", "bytes"),
                ("localMergedBytesRead", "bytes"),
                ("remoteMergedReqsDuration", "ms"),
            ),
            strict=True,
        )
    ),
    _metric(
        "shuffle_write_bytes",
        "shuffleWriteMetrics.writeBytes",
        "bytes",
        _stored("shuffle_write_bytes"),
    ),
    _metric(
        "shuffle_write_records",
        "shuffleWriteMetrics.writeRecords",
        "count",
        _stored("shuffle_write_records"),
    ),
    _metric(
        "shuffle_write_time_ns",
        "shuffleWriteMetrics.writeTime",
        "ns",
        _stored("shuffle_write_time_ns"),
    ),
)
"""Every metric of Spark's task summary, in the order of its REST answer."""

Quantiles = tuple[int | None, ...]
"""One value per requested quantile, lowest quantile first; None where Spark has NaN."""


@dataclass(frozen=True, slots=True)
class StageTaskSummary:
    """The task-metric quantiles of one stage attempt, as Spark's History Server gives them.

    Every metric field holds one value per entry of `quantiles`. Units are those of Spark's
    REST API (and of the field names): times in ms, CPU and shuffle-write times in ns, sizes in
    bytes, the rest counts.
    """

    stage_id: int
    stage_attempt_id: int
    quantiles: tuple[float, ...]
    """The quantiles, sorted (each in [0, 1])."""
    n_tasks: int
    """Tasks the quantiles rank over: recorded tasks with an executor run time ≥ 0."""
    duration_ms: Quantiles
    """Launch to finish; failed and killed tasks count too."""
    executor_deserialize_time_ms: Quantiles
    executor_deserialize_cpu_time_ns: Quantiles
    executor_run_time_ms: Quantiles
    executor_cpu_time_ns: Quantiles
    result_size_bytes: Quantiles
    jvm_gc_time_ms: Quantiles
    result_serialization_time_ms: Quantiles
    getting_result_time_ms: Quantiles
    """From the start of the result fetch to the task's end; failed and killed tasks count."""
    scheduler_delay_ms: Quantiles
    """Duration minus run, deserialize, result-serialization and getting-result times (≥ 0);
    failed and killed tasks count."""
    peak_execution_memory_bytes: Quantiles
    memory_bytes_spilled: Quantiles
    disk_bytes_spilled: Quantiles
    input_bytes: Quantiles
    input_records: Quantiles
    output_bytes: Quantiles
    output_records: Quantiles
    shuffle_read_bytes: Quantiles
    """Local plus remote shuffle bytes read."""
    shuffle_read_records: Quantiles
    shuffle_remote_blocks_fetched: Quantiles
    shuffle_local_blocks_fetched: Quantiles
    shuffle_fetch_wait_time_ms: Quantiles
    shuffle_remote_bytes_read: Quantiles
    shuffle_remote_bytes_read_to_disk: Quantiles
    shuffle_total_blocks_fetched: Quantiles
    """Local plus remote blocks fetched."""
    shuffle_remote_reqs_duration_ms: Quantiles
    shuffle_corrupt_merged_block_chunks: Quantiles
    """Push-based shuffle (this and the next eight): zero unless it was enabled."""
    shuffle_merged_fetch_fallback_count: Quantiles
    shuffle_remote_merged_blocks_fetched: Quantiles
    shuffle_local_merged_blocks_fetched: Quantiles
    shuffle_remote_merged_chunks_fetched: Quantiles
    shuffle_local_merged_chunks_fetched: Quantiles
    shuffle_remote_merged_bytes_read: Quantiles
    shuffle_local_merged_bytes_read: Quantiles
    shuffle_remote_merged_reqs_duration_ms: Quantiles
    shuffle_write_bytes: Quantiles
    shuffle_write_records: Quantiles
    shuffle_write_time_ns: Quantiles

    def at(self, field: str, quantile: float) -> int | None:
        """Return one metric's value at one of the summary's quantiles.

        Raises `ValueError` if the quantile was not computed, `AttributeError` for an unknown
        field.
        """
        values: Quantiles = getattr(self, field)
        return values[self.quantiles.index(quantile)]

    def metrics(self) -> Iterator[tuple[SummaryMetric, Quantiles]]:
        """Yield every metric with its values, in the order of Spark's REST answer."""
        return zip(SUMMARY_METRICS, _rest_values(self), strict=True)

    def by_field(self) -> dict[str, Quantiles]:
        """Every metric's values by its field name, in the order of Spark's REST answer (one
        call for all of them: a report writes this for every stage attempt)."""
        return dict(zip(_REST_FIELDS, _rest_values(self), strict=True))


_REST_FIELDS = tuple(m.field for m in SUMMARY_METRICS)
_rest_values = attrgetter(*_REST_FIELDS)
"""Every metric's values of a `StageTaskSummary`, in the order of Spark's REST answer."""


_METRIC_FIELDS = [f.name for f in fields(StageTaskSummary)][4:]
"""The metric fields of `StageTaskSummary`, in its fields' order (after the stage, attempt,
quantiles and task count)."""
assert sorted(_METRIC_FIELDS) == sorted(m.field for m in SUMMARY_METRICS)


_METRICS_PER_PASS = 4


def _rank(quantile: float, n: pl.Expr) -> pl.Expr:
    # AppStatusStore: math.min((q * count).toLong, count - 1), in doubles then truncated.
    return pl.min_horizontal((pl.lit(quantile) * n).floor().cast(pl.Int64), n - 1)


def stage_task_summaries(
    analysis: Analysis, quantiles: Iterable[float] = SPARK_DEFAULT_QUANTILES
) -> dict[tuple[int, int], StageTaskSummary]:
    """Return Spark's task summary of every stage attempt with tasks to rank, by (stage,
    attempt).

    Stage attempts for which Spark answers 404 ("no tasks reported metrics") are left out.
    Raises `ValueError` for a quantile outside [0, 1].
    """
    qs = tuple(sorted(float(q) for q in quantiles))
    if not qs or any(not 0.0 <= q <= 1.0 for q in qs):
        raise ValueError(f"quantiles must be in [0, 1], got {qs}")
    # Thousands of stages' quantiles are mostly zeros and repeated values: each held once, and
    # each metric's distinct quantiles found by polars, so Python makes one tuple per distinct
    # value, not one per stage and metric.
    shared = SharedValues()
    out: dict[tuple[int, int], StageTaskSummary] = {}
    # A piece of whole stages at a time (`tables.stage_pieces`): each pass's sorted values are
    # then those of a piece's tasks, not of every task of the log.
    for piece in stage_pieces(analysis.tasks):
        out.update(_piece_summaries(analysis, piece, qs, shared))
    return out


def _piece_summaries(
    analysis: Analysis, piece: pl.LazyFrame, qs: tuple[float, ...], shared: SharedValues
) -> dict[tuple[int, int], StageTaskSummary]:
    """`stage_task_summaries` of the stages of a piece of the task table."""
    tasks = piece.filter(pl.col("in_task_store"))
    push = analysis.push_shuffle_tasks
    if push.height:
        tasks = tasks.join(push.lazy(), on="row", how="left")
        tasks = tasks.with_columns(pl.col(name).fill_null(0) for name, _ in PUSH_COLUMNS)
    else:
        tasks = tasks.with_columns(pl.lit(0, dtype=pl.Int64).alias(n) for n, _ in PUSH_COLUMNS)
    keys = ["stage_id", "stage_attempt_id"]
    n = (_stored("run_ms") >= 0).sum().cast(pl.Int64)
    frame = (
        tasks.group_by(keys)
        .agg(n.alias("n_tasks"))
        .filter(pl.col("n_tasks") > 0)
        .sort(keys)
        .collect(engine=ENGINE)
    )
    ranks = pl.concat_list([_rank(q, pl.col("n_tasks")) for q in qs])
    frame = frame.with_columns(ranks.alias("ranks"))
    missing = (None,) * len(qs)
    columns: dict[str, list[Quantiles]] = {}
    # A few metrics per pass: each pass holds its metrics' sorted values as lists (8 bytes per
    # task and metric) and keeps only the values at the ranks, so no frame ever holds every
    # metric of every stage.
    for start in range(0, len(SUMMARY_METRICS), _METRICS_PER_PASS):
        chunk = SUMMARY_METRICS[start : start + _METRICS_PER_PASS]
        values = (
            tasks.group_by(keys)
            .agg(m.key.filter(m.key >= 0).sort().alias(m.field) for m in chunk)
            .collect(engine=ENGINE)
        )
        at_ranks = frame.join(values, on=keys, how="left", maintain_order="left").select(
            pl.col(m.field).list.gather(pl.col("ranks"), null_on_oob=True) for m in chunk
        )
        del values
        for m in chunk:
            columns[m.field] = _shared_column(at_ranks[m.field], shared, missing)
        del at_ranks
    out: dict[tuple[int, int], StageTaskSummary] = {}
    by_metric = [columns.pop(name) for name in _METRIC_FIELDS]
    for i, (stage_id, attempt_id, n_tasks) in enumerate(frame.select(*keys, "n_tasks").iter_rows()):
        key = (int(stage_id), int(attempt_id))
        out[key] = StageTaskSummary(
            key[0], key[1], qs, int(n_tasks), *[column[i] for column in by_metric]
        )
    return out


def _shared_column(column: pl.Series, shared: SharedValues, missing: Quantiles) -> list[Quantiles]:
    """One metric's quantiles of every stage (a list per row, None where a stage has no
    values), each distinct one made a tuple once; a rank past a metric's values gives None,
    where Spark's iterator gives NaN."""
    out: list[Quantiles] = [missing] * len(column)
    distinct = pl.DataFrame({"v": column}).with_row_index("i").group_by("v").agg("i")
    for value, rows in distinct.iter_rows():
        one = shared.one(shared.numbers(tuple(value or missing)))
        for i in rows:
            out[i] = one
    return out
