"""Structured Streaming's listener events as msgspec structs (query started, progress of a
micro-batch, query terminated)."""

from __future__ import annotations

import msgspec

from analyzer.eventlog.task_events import Long

# Structured Streaming (`StreamingQueryListener` events, logged since Spark 3.1 with the live UI
# on or off). Spark serializes them with Jackson: rates that are not finite are written as the
# strings "NaN" or "Infinity", and a progress has no top-level row counts in the log (they are
# the sums over its sources, as `StreamingQueryProgress` computes them).

Rate = float | str | None
"""Rows per second as logged: a number, or a string for NaN and the infinities."""


class StreamingSourceProgress(msgspec.Struct, frozen=True, gc=False):
    """One source of a micro-batch (`SourceProgress`); offsets are not decoded."""

    description: str = ""
    n_input_rows: Long = msgspec.field(name="numInputRows", default=0)
    input_rows_per_s: Rate = msgspec.field(name="inputRowsPerSecond", default=None)
    processed_rows_per_s: Rate = msgspec.field(name="processedRowsPerSecond", default=None)


class StreamingSinkProgress(msgspec.Struct, frozen=True, gc=False):
    """The sink of a micro-batch (`SinkProgress`); -1 rows when the sink does not count them."""

    description: str = ""
    n_output_rows: Long | None = msgspec.field(name="numOutputRows", default=None)


class StateOperatorProgress(msgspec.Struct, frozen=True, gc=False):
    """One stateful operator's state store after a micro-batch (`StateOperatorProgress`)."""

    operator_name: str = msgspec.field(name="operatorName", default="")
    """E.g. `stateStoreSave` (Spark 3.3+; empty before)."""
    n_rows_total: Long = msgspec.field(name="numRowsTotal", default=0)
    n_rows_updated: Long = msgspec.field(name="numRowsUpdated", default=0)
    n_rows_removed: Long = msgspec.field(name="numRowsRemoved", default=0)
    n_rows_dropped_by_watermark: Long = msgspec.field(name="numRowsDroppedByWatermark", default=0)
    memory_used_bytes: Long = msgspec.field(name="memoryUsedBytes", default=0)


class StreamingQueryProgress(msgspec.Struct, frozen=True, gc=False):
    """What one micro-batch of a streaming query did (`StreamingQueryProgress`)."""

    query_id: str = msgspec.field(name="id", default="")
    run_id: str = msgspec.field(name="runId", default="")
    name: str | None = None
    timestamp: str = ""
    """When the batch's trigger fired, ISO 8601 in UTC (`2026-11-25T14:58:44.000Z`)."""
    batch_id: Long = msgspec.field(name="batchId", default=-1)
    batch_duration_ms: Long | None = msgspec.field(name="batchDuration", default=None)
    """Wall time of the whole batch, progress reporting included (Spark 3.1+)."""
    durations_ms: dict[str, Long] = msgspec.field(name="durationMs", default_factory=dict)
    """Phase → ms: `triggerExecution` (the whole batch), `addBatch`, `getBatch`,
    `latestOffset`, `queryPlanning`, `walCommit`, `commitOffsets`…"""
    event_time: dict[str, str] = msgspec.field(name="eventTime", default_factory=dict)
    """`watermark`, `min`, `max`, `avg` event times, ISO 8601 (empty without event time)."""
    state_operators: list[StateOperatorProgress] = msgspec.field(
        name="stateOperators", default_factory=list
    )
    sources: list[StreamingSourceProgress] = msgspec.field(default_factory=list)
    sink: StreamingSinkProgress | None = None


class StreamingQueryStarted(msgspec.Struct, frozen=True, gc=False):
    """A streaming query run started (`QueryStartedEvent`)."""

    query_id: str = msgspec.field(name="id", default="")
    run_id: str = msgspec.field(name="runId", default="")
    name: str | None = None
    timestamp: str | None = None
    """ISO 8601 in UTC (Spark 3.1+)."""


class StreamingQueryProgressEvent(msgspec.Struct, frozen=True, gc=False):
    """A streaming query finished a micro-batch (`QueryProgressEvent`)."""

    progress: StreamingQueryProgress = msgspec.field(default_factory=StreamingQueryProgress)


class StreamingQueryIdle(msgspec.Struct, frozen=True, gc=False):
    """A streaming query run found no new data (`QueryIdleEvent`, Spark 3.5+): posted instead
    of a progress event, at most every `spark.sql.streaming.noDataProgressEventInterval`."""

    query_id: str = msgspec.field(name="id", default="")
    run_id: str = msgspec.field(name="runId", default="")
    timestamp: str | None = None
    """ISO 8601 in UTC."""


class StreamingQueryTerminated(msgspec.Struct, frozen=True, gc=False):
    """A streaming query run ended: stopped (no exception) or failed (`QueryTerminatedEvent`)."""

    query_id: str = msgspec.field(name="id", default="")
    run_id: str = msgspec.field(name="runId", default="")
    exception: str | None = None
    error_class: str | None = msgspec.field(name="errorClassOnException", default=None)
