"""Frozen domain types for Structured Streaming: query runs and their micro-batches.

A streaming query run (one `start()` of a query: an id kept across restarts, a run id per start)
logs one progress event per finished micro-batch, and runs each batch as one or more SQL
executions. The replay ties the two together (`replay.streaming`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.dataclasses import dataclass

from analyzer.model.failure_cause import root_cause
from analyzer.units import one_line

LABEL_CHARS = 60
"""A query's name is cut to this many characters where reports call the query by it."""

StreamingStatus = Literal["running", "stopped", "failed"]
"""How a query run ended: `stopped` (terminated without an exception: `query.stop()` or the
end of the application), `failed` (terminated with one), `running` (no terminated event)."""


@dataclass(frozen=True, slots=True)
class StreamingBatch:
    """One micro-batch of a query run, as its progress event reports it.

    A slotted dataclass, not a `BaseModel`: a day of a stream is tens of thousands of batches,
    and a model instance holds a dict of its fields (0.5 KB against 0.14 KB).
    """

    batch_id: int
    timestamp_ms: int | None
    """When the batch's trigger fired (epoch ms); None when the timestamp does not parse."""
    batch_duration_ms: int | None
    """Wall time of the whole batch with its progress reporting (Spark 3.1+), else None."""
    trigger_execution_ms: int | None
    """`durationMs.triggerExecution`: the batch's wall time as Spark measures it."""
    durations_ms: tuple[tuple[str, int], ...]
    """Every phase of `durationMs` as logged (`addBatch`, `getBatch`, `queryPlanning`…), in
    log order; `triggerExecution` is the whole, the others are its parts."""
    n_input_rows: int
    """Rows read from every source (the sum of the sources' `numInputRows`)."""
    input_rows_per_s: float | None
    """Rows arriving per second, summed over the sources; None when not a finite number."""
    processed_rows_per_s: float | None
    """Rows processed per second, summed over the sources; None when not a finite number."""
    n_output_rows: int | None
    """Rows the sink wrote; None when the sink does not count them (-1 in the log)."""
    state_rows_total: int | None
    """Rows held in the state stores after the batch, over every stateful operator; None for
    a stateless query."""
    state_rows_updated: int | None
    state_rows_dropped_by_watermark: int | None
    """Late rows dropped by the watermark (Spark 3.1+)."""
    state_memory_bytes: int | None
    watermark_ms: int | None
    """The event-time watermark after the batch (epoch ms); None without one."""
    execution_ids: tuple[int, ...] = ()
    """The SQL executions that ran the batch, in id order."""

    def duration_of(self, phase: str) -> int | None:
        """Return the duration of one phase (`addBatch`…) in ms, None if it was not logged."""
        for name, value in self.durations_ms:
            if name == phase:
                return value
        return None


class StreamingQuery(BaseModel):
    """One run of a streaming query: its identity, end, sources and sink, and its batches."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    """The query's id, kept across restarts from the same checkpoint."""
    run_id: str
    """This run's id (a new one per `start()`)."""
    name: str | None
    """`queryName`, if the query was given one."""
    start_ms: int | None
    """When the run started (QueryStartedEvent, Spark 3.1+), else its first batch's trigger."""
    end_ms: int | None
    """When the run ended: the time of the last event before its QueryTerminatedEvent (the
    event has no time of its own); None while it runs."""
    status: StreamingStatus
    exception: str | None = None
    """The exception a failed run ended with, as logged."""
    error_class: str | None = None
    """Spark's error class of that exception (Spark 3.5+), if any."""
    sources: tuple[str, ...] = ()
    """Source descriptions, from the last batch (`RateStreamV2[rowsPerSecond=200, …]`)."""
    sink: str = ""
    """Sink description from the last batch (`NoopTable`, `ForeachBatchSink`…)."""
    state_operators: tuple[str, ...] = ()
    """Names of the stateful operators (Spark 3.3+; `stateStoreSave`…), from the last batch."""
    batches: tuple[StreamingBatch, ...] = ()
    """Finished batches, in log order, one per progress event."""
    unfinished_batches: tuple[tuple[int, tuple[int, ...]], ...] = ()
    """(batch id, its execution ids) for batches that started SQL executions but have no
    progress event: the batch the run was stopped or failed in."""
    idle_reports: int = 0
    """How many times Spark reported a trigger that found no new data (a `QueryIdleEvent`, or
    before Spark 3.5 a progress event of no batch): not batches. Spark reports at most one per
    `spark.sql.streaming.noDataProgressEventInterval` (10 s by default)."""
    last_idle_ms: int | None = None
    """When the last of those reports was made (epoch ms)."""

    @property
    def exception_cause(self) -> str:
        """The line of a failed run's exception naming what started it (`ValueError: …` out of
        a foreachBatch function's Python traceback, the last `Caused by:` of a Java one), or
        empty (see `model.failure_cause.root_cause`)."""
        return root_cause(self.exception)

    @property
    def label(self) -> str:
        """The query's name (on one line, at most `LABEL_CHARS`), or the start of its id when it
        has none."""
        return one_line(self.name, LABEL_CHARS) or self.query_id[:8]

    @property
    def interrupted_execution_ids(self) -> tuple[int, ...]:
        """Executions of a batch cut short by a normal stop: not failures of the application."""
        if self.status != "stopped":
            return ()
        return tuple(e for _, ids in self.unfinished_batches for e in ids)
