"""Figures of each Structured Streaming query run, computed once for every report and rule.

The progress events do not say which trigger a query runs with. A processing-time trigger of
interval I starts each batch at the next multiple of I in epoch time
(`ProcessingTimeExecutor.nextBatchTime`), so the batches that keep up start within a few ms of a
multiple of I; the interval is inferred as the longest common interval to which enough batch
starts align. A query on the default trigger (batches back to back) aligns with none: its
interval is unknown, and only rates can show it falling behind.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from analyzer.aggregate.attribution import ExecutionTime
from analyzer.aggregate.time_spent import covered_ms
from analyzer.model.application import Application, Execution
from analyzer.model.streaming import StreamingBatch, StreamingQuery

TRIGGER_CANDIDATES_MS = (
    3_600_000,
    1_800_000,
    900_000,
    600_000,
    300_000,
    120_000,
    60_000,
    30_000,
    20_000,
    15_000,
    10_000,
    5_000,
    4_000,
    3_000,
    2_000,
    1_000,
    500,
    250,
    200,
    100,
)
"""Trigger intervals tried, longest first: the intervals people set."""

ALIGN_TOLERANCE_MS = 15
"""How far after a multiple of an interval a batch may start to count as aligned with it, at
least (the timer thread wakes late on a busy driver: `align_tolerance_ms`)."""


def align_tolerance_ms(interval_ms: int) -> int:
    """How late after a multiple of `interval_ms` a batch may start and still align with it:
    a twentieth of the interval, between 15 and 100 ms.

    >>> align_tolerance_ms(100), align_tolerance_ms(1_000), align_tolerance_ms(60_000)
    (15, 50, 100)
    """
    return max(ALIGN_TOLERANCE_MS, min(100, interval_ms // 20))


MIN_ALIGNED = 3
"""Batch starts that must align with an interval for it to be inferred."""

MIN_ALIGNED_SHARE = 0.8
"""And the share of the batches that should have waited for the timer that must (a longer
interval that every third batch start happens to align with is not the trigger)."""

OVERHEAD_PHASES = ("queryPlanning", "getBatch", "latestOffset", "walCommit", "commitOffsets")
"""Phases of a batch outside its tasks (`addBatch` runs the batch's SQL executions)."""

SPARKLINE_POINTS = 60
"""At most this many points in a query's duration sparkline (longer runs are bucketed)."""

HOT_OPERATORS_KEPT = 5


def infer_trigger_interval_ms(batches: tuple[StreamingBatch, ...]) -> int | None:
    """Return the processing-time trigger interval the batches' start times align with, or None.

    Under an interval I, the batch after one that ended before the first multiple of I after its
    start starts on that multiple (Spark's timer waits for it); a batch after one that ended
    later starts at once, on no multiple, and says nothing. The interval is the longest
    candidate that at least `MIN_ALIGNED` batches align with (within `align_tolerance_ms`) and
    at least `MIN_ALIGNED_SHARE` of the batches that should have.

    >>> from analyzer.model.streaming import StreamingBatch as B
    >>> def b(i, t, d=400):
    ...     return B(batch_id=i, timestamp_ms=t, batch_duration_ms=None, trigger_execution_ms=d,
    ...       durations_ms=(), n_input_rows=0, input_rows_per_s=None, processed_rows_per_s=None,
    ...       n_output_rows=None, state_rows_total=None, state_rows_updated=None,
    ...       state_rows_dropped_by_watermark=None, state_memory_bytes=None, watermark_ms=None)
    >>> infer_trigger_interval_ms(tuple(b(i, 1_000_003 + 2_000 * i) for i in range(9)))
    2000
    >>> infer_trigger_interval_ms(tuple(b(i, 1_000_017 + 402 * i) for i in range(9))) is None
    True
    """
    pairs = [
        (prev.timestamp_ms, prev.timestamp_ms + (prev.trigger_execution_ms or 0), cur.timestamp_ms)
        for prev, cur in itertools.pairwise(batches)
        if prev.timestamp_ms is not None and cur.timestamp_ms is not None
    ]
    for interval in TRIGGER_CANDIDATES_MS:
        tolerance = align_tolerance_ms(interval)
        # Spark's timer: the next batch is due at the first multiple of the interval after the
        # last one started; only a batch whose predecessor ended before then waited for it.
        expected = [
            start
            for prev_start, prev_end, start in pairs
            if prev_end <= (prev_start // interval + 1) * interval
        ]
        aligned = sum(1 for start in expected if start % interval <= tolerance)
        if aligned >= MIN_ALIGNED and aligned >= MIN_ALIGNED_SHARE * len(expected):
            return interval
    return None


def _mean(values: list[float]) -> float | None:
    """The mean of some rates, None without any; each divided first, so that rates near a
    double's largest value give a finite mean, not the infinity of their sum.

    >>> _mean([1.7e308, 1.7e308]), _mean([])
    (1.7e+308, None)
    """
    return sum(v / len(values) for v in values) if values else None


def _median(values: list[int]) -> int:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0


def _sparkline_values(durations: list[int]) -> tuple[int, ...]:
    """At most `SPARKLINE_POINTS` values: the durations, or the largest of each bucket."""
    if len(durations) <= SPARKLINE_POINTS:
        return tuple(durations)
    size = -(-len(durations) // SPARKLINE_POINTS)
    return tuple(max(durations[i : i + size]) for i in range(0, len(durations), size))


@dataclass(frozen=True)
class HotOperator:
    """An operator's self time summed over every batch of a query."""

    name: str = field(metadata={"help": "Operator name as in the plans (`BatchEvalPython`)."})
    self_time_ms: float = field(metadata={"help": "Self time over all batches, in ms."})
    n_batches: int = field(metadata={"help": "Batches whose executions ran it."})


@dataclass(frozen=True)
class StreamingFigures:
    """Everything the reports and rules say about one query run, computed once."""

    query: StreamingQuery = field(metadata={"help": "The run, as replayed."})
    trigger_interval_ms: int | None = field(
        metadata={"help": "Inferred processing-time trigger interval; None: unknown."}
    )
    n_batches: int = field(metadata={"help": "Finished batches (progress events)."})
    trigger_ms: tuple[int, ...] = field(
        metadata={"help": "Each finished batch's triggerExecution duration, in batch order."}
    )
    n_late_batches: int = field(
        metadata={"help": "Batches after the first that took longer than the trigger."}
    )
    first_late_batch_id: int | None = field(
        metadata={"help": "The first of them, None if none (or the interval is unknown)."}
    )
    late_ms: int = field(
        metadata={"help": "Summed time the late batches ran past their trigger interval."}
    )
    median_trigger_ms: int = field(metadata={"help": "Median batch duration, first excluded."})
    max_trigger_ms: int = field(metadata={"help": "Longest batch duration."})
    total_trigger_ms: int = field(metadata={"help": "Summed batch durations."})
    trend_ratio: float | None = field(
        metadata={
            "help": "Median duration of the last third of the batches over that of the first "
            "third (first batch excluded); None with fewer than 6 batches."
        }
    )
    n_input_rows: int = field(metadata={"help": "Rows read over every batch."})
    mean_input_rows_per_s: float | None = field(
        metadata={"help": "Mean input rate over the batches after the first."}
    )
    mean_processed_rows_per_s: float | None = field(
        metadata={"help": "Mean processing rate over the batches after the first."}
    )
    n_outpaced_batches: int = field(
        metadata={
            "help": "Batches after the first whose input rate exceeded their processing rate."
        }
    )
    phase_totals_ms: tuple[tuple[str, int], ...] = field(
        metadata={
            "help": "Each phase other than triggerExecution summed over the batches, largest first."
        }
    )
    state_rows_first: int | None = field(
        metadata={"help": "State rows after the second batch (the first with data), if stateful."}
    )
    state_rows_last: int | None = field(metadata={"help": "State rows after the last batch."})
    state_memory_last_bytes: int | None = field(
        metadata={"help": "State store memory after the last batch."}
    )
    n_state_growing_batches: int = field(
        metadata={"help": "Batches whose state held more rows than the batch before."}
    )
    has_watermark: bool = field(metadata={"help": "Some batch reported a watermark after 1970."})
    watermark_advanced: bool = field(
        metadata={"help": "The watermark moved forward over the last half of the batches."}
    )
    n_executions: int = field(metadata={"help": "SQL executions tied to the run's batches."})
    sparkline_ms: tuple[int, ...] = field(
        metadata={"help": "Batch durations for a sparkline (at most 60 points, bucket maxima)."}
    )
    hot_operators: tuple[HotOperator, ...] = field(
        metadata={"help": "Operators with the most self time over all batches, at most 5."}
    )
    sql_wall_ms: int = field(
        default=0,
        metadata={"help": "Wall time covered by at least one of the run's SQL executions."},
    )

    @property
    def execution_ids(self) -> tuple[int, ...]:
        """Every execution of the run: its finished and unfinished batches'."""
        done = [e for b in self.query.batches for e in b.execution_ids]
        cut = [e for _, ids in self.query.unfinished_batches for e in ids]
        return tuple(done + cut)


def _hot_operators(
    query: StreamingQuery,
    executions: dict[int, Execution],
    times: dict[int, ExecutionTime],
) -> tuple[HotOperator, ...]:
    total: dict[str, float] = {}
    batches: Counter[str] = Counter()
    for batch in query.batches:
        seen: set[str] = set()
        for execution_id in batch.execution_ids:
            execution = executions.get(execution_id)
            timing = times.get(execution_id)
            if execution is None or timing is None:
                continue
            graph = execution.final_plan.graph
            for node_id, node_time in timing.nodes.items():
                if not node_time.self_time_ms:
                    continue
                name = graph.node(node_id).name
                total[name] = total.get(name, 0.0) + node_time.self_time_ms
                seen.add(name)
        batches.update(seen)
    return tuple(
        HotOperator(name=name, self_time_ms=ms, n_batches=batches[name])
        for name, ms in sorted(total.items(), key=lambda kv: -kv[1])[:HOT_OPERATORS_KEPT]
    )


def query_figures(
    query: StreamingQuery,
    executions: dict[int, Execution],
    times: dict[int, ExecutionTime],
) -> StreamingFigures:
    """Compute the figures of one query run; `times` are the executions' attributed times."""
    batches = query.batches
    durations = [b.trigger_execution_ms or 0 for b in batches]
    later = batches[1:]
    interval = infer_trigger_interval_ms(batches)
    late = (
        [b for b in later if (b.trigger_execution_ms or 0) > interval]
        if interval is not None
        else []
    )
    later_durations = [b.trigger_execution_ms or 0 for b in later]
    trend = None
    if len(later_durations) >= 6:
        third = len(later_durations) // 3
        head = _median(later_durations[:third])
        tail = _median(later_durations[-third:])
        trend = tail / head if head > 0 else None
    input_rates = [b.input_rows_per_s for b in later if b.input_rows_per_s is not None]
    processed_rates = [b.processed_rows_per_s for b in later if b.processed_rows_per_s is not None]
    outpaced = sum(
        1
        for b in later
        if b.input_rows_per_s is not None
        and b.processed_rows_per_s is not None
        and b.n_input_rows > 0
        and b.input_rows_per_s > b.processed_rows_per_s
    )
    phases: Counter[str] = Counter()
    for b in batches:
        for name, value in b.durations_ms:
            if name != "triggerExecution":
                phases[name] += value
    stateful = [b for b in batches if b.state_rows_total is not None]
    growing = sum(
        1
        for prev, cur in itertools.pairwise(stateful)
        if (cur.state_rows_total or 0) > (prev.state_rows_total or 0)
    )
    watermarks = [b.watermark_ms for b in batches if b.watermark_ms]
    half = [b.watermark_ms or 0 for b in batches[len(batches) // 2 :]]
    return StreamingFigures(
        query=query,
        trigger_interval_ms=interval,
        n_batches=len(batches),
        trigger_ms=tuple(durations),
        n_late_batches=len(late),
        first_late_batch_id=late[0].batch_id if late else None,
        late_ms=sum((b.trigger_execution_ms or 0) - (interval or 0) for b in late),
        median_trigger_ms=_median(later_durations or durations),
        max_trigger_ms=max(durations, default=0),
        total_trigger_ms=sum(durations),
        trend_ratio=trend,
        n_input_rows=sum(b.n_input_rows for b in batches),
        mean_input_rows_per_s=_mean(input_rates),
        mean_processed_rows_per_s=_mean(processed_rates),
        n_outpaced_batches=outpaced,
        phase_totals_ms=tuple(phases.most_common()),
        state_rows_first=(
            stateful[1].state_rows_total
            if len(stateful) > 1
            else (stateful[0].state_rows_total if stateful else None)
        ),
        state_rows_last=stateful[-1].state_rows_total if stateful else None,
        state_memory_last_bytes=stateful[-1].state_memory_bytes if stateful else None,
        n_state_growing_batches=growing,
        has_watermark=bool(watermarks),
        watermark_advanced=len(half) >= 2 and half[-1] > half[0],
        n_executions=sum(len(b.execution_ids) for b in batches)
        + sum(len(ids) for _, ids in query.unfinished_batches),
        sparkline_ms=_sparkline_values(durations),
        hot_operators=_hot_operators(query, executions, times),
        sql_wall_ms=covered_ms(
            (e.start_ms, e.end_ms)
            for execution_id in _all_ids(query)
            if (e := executions.get(execution_id)) is not None
            and e.start_ms is not None
            and e.end_ms is not None
        ),
    )


def _all_ids(query: StreamingQuery) -> list[int]:
    return [e for b in query.batches for e in b.execution_ids] + [
        e for _, ids in query.unfinished_batches for e in ids
    ]


def batch_of_execution(figures: tuple[StreamingFigures, ...]) -> dict[int, tuple[str, int]]:
    """Map each execution of a streaming query run to (the query's label, its batch id)."""
    out: dict[int, tuple[str, int]] = {}
    for fig in figures:
        for batch in fig.query.batches:
            for execution_id in batch.execution_ids:
                out[execution_id] = (fig.query.label, batch.batch_id)
        for batch_id, ids in fig.query.unfinished_batches:
            for execution_id in ids:
                out[execution_id] = (fig.query.label, batch_id)
    return out


def streaming_figures(
    application: Application, times: dict[int, ExecutionTime]
) -> tuple[StreamingFigures, ...]:
    """Compute the figures of every streaming query run of an application, in log order."""
    if not application.streaming:
        return ()
    executions = {e.execution_id: e for e in application.executions}
    return tuple(query_figures(q, executions, times) for q in application.streaming)
