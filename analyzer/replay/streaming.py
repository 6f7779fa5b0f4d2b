"""Fold Structured Streaming events into query runs, and tie each micro-batch to its executions.

A micro-batch's SQL executions carry no streaming field of their own, but Spark sets the job
description of the stream's thread to `<name>\\nid = <query id>\\nrunId = <run id>\\nbatch = <n>`
(`StreamExecution.getBatchDescriptionString`), and an execution's description is the job
description in force when it starts (Spark 3.1 to 4.3 alike). Its jobs also carry
`sql.streaming.queryId`, `streaming.sql.batchId` and the run id as `spark.jobGroup.id`; those
tie an execution whose description was changed (by user code in `foreachBatch`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime

from analyzer.eventlog import events as ev
from analyzer.model.streaming import StreamingBatch, StreamingQuery, StreamingStatus
from analyzer.model.trusted import Trusted
from analyzer.units import decimal_int

QUERY_ID_KEY = "sql.streaming.queryId"
BATCH_ID_KEY = "streaming.sql.batchId"
JOB_GROUP_KEY = "spark.jobGroup.id"

_BATCH_DESCRIPTION = re.compile(
    r"(?:^|\n)id = ([0-9a-fA-F-]{36})\nrunId = ([0-9a-fA-F-]{36})\nbatch = (\d{1,18})\s*$"
)
"""The end of a micro-batch's job description (the query name, if any, comes before it)."""

MAX_TIMESTAMP_CHARS = 64
"""Longer timestamp strings are not parsed (Spark writes 24 characters)."""


def parse_timestamp_ms(text: str | None) -> int | None:
    """Return an ISO 8601 timestamp as epoch ms, or None if it does not parse.

    >>> parse_timestamp_ms("2020-07-29T10:56:56.015Z")
    1596020216015
    >>> parse_timestamp_ms("yesterday") is None
    True
    """
    if not text or len(text) > MAX_TIMESTAMP_CHARS:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return round(parsed.timestamp() * 1000)


def finite_rate(value: ev.Rate) -> float | None:
    """Return a logged rate as a float, None for NaN, the infinities and anything else.

    >>> finite_rate(50.5), finite_rate("NaN"), finite_rate(None)
    (50.5, None, None)
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def batch_key_of_description(description: str) -> tuple[str, int] | None:
    """Return (run id, batch id) of a micro-batch's execution description, else None.

    >>> batch_key_of_description("q\\nid = " + "1" * 36 + "\\nrunId = " + "2" * 36 + "\\nbatch = 7")
    ('222222222222222222222222222222222222', 7)
    """
    if "\nbatch = " not in description:
        return None
    match = _BATCH_DESCRIPTION.search(description)
    return (match.group(2), int(match.group(3))) if match else None


def _sum_rates(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def is_idle_report(progress: ev.StreamingQueryProgress) -> bool:
    """True for the progress Spark before 3.5 logs when a trigger found no new data: no batch
    ran (no `addBatch` phase) and no source read a row. It repeats the next batch's id; Spark
    3.5+ logs a `QueryIdleEvent` instead. A no-data batch (run to move a watermark) has
    `addBatch` and counts as a batch."""
    return "addBatch" not in progress.durations_ms and not any(
        s.n_input_rows for s in progress.sources
    )


_BATCH = Trusted(StreamingBatch)
"""Builds batches unvalidated (`model.trusted`)."""


def _batch(progress: ev.StreamingQueryProgress, names: dict[str, str]) -> StreamingBatch:
    """Turn one progress into a batch (its executions are tied at the end of the replay).

    The values are typed by the decoder, so the batch is built without validation; `names`
    holds each phase name once (every batch logs the same ones).
    """
    state = progress.state_operators
    sink = progress.sink
    durations = tuple((names.setdefault(k, k), v) for k, v in progress.durations_ms.items())
    return _BATCH(
        batch_id=progress.batch_id,
        timestamp_ms=parse_timestamp_ms(progress.timestamp),
        batch_duration_ms=progress.batch_duration_ms,
        trigger_execution_ms=progress.durations_ms.get("triggerExecution"),
        durations_ms=durations,
        n_input_rows=sum(s.n_input_rows for s in progress.sources),
        input_rows_per_s=_sum_rates([finite_rate(s.input_rows_per_s) for s in progress.sources]),
        processed_rows_per_s=_sum_rates(
            [finite_rate(s.processed_rows_per_s) for s in progress.sources]
        ),
        n_output_rows=(
            sink.n_output_rows
            if sink is not None and sink.n_output_rows is not None and sink.n_output_rows >= 0
            else None
        ),
        state_rows_total=sum(op.n_rows_total for op in state) if state else None,
        state_rows_updated=sum(op.n_rows_updated for op in state) if state else None,
        state_rows_dropped_by_watermark=(
            sum(op.n_rows_dropped_by_watermark for op in state) if state else None
        ),
        state_memory_bytes=sum(op.memory_used_bytes for op in state) if state else None,
        watermark_ms=parse_timestamp_ms(progress.event_time.get("watermark")),
        execution_ids=(),
    )


@dataclass
class _Run:
    """A query run as the replay knows it so far."""

    query_id: str
    run_id: str
    name: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    status: StreamingStatus = "running"
    exception: str | None = None
    error_class: str | None = None
    sources: tuple[str, ...] = ()
    sink: str = ""
    state_operators: tuple[str, ...] = ()
    batches: list[StreamingBatch] = field(default_factory=list)
    idle_reports: int = 0
    last_idle_ms: int | None = None


@dataclass
class StreamingTracker:
    """Collect the streaming events of a log, in order, and build the query runs at the end."""

    runs: dict[str, _Run] = field(default_factory=dict)
    """By run id, in the order the runs were first seen."""
    job_batches: dict[int, tuple[str, int]] = field(default_factory=dict)
    """Execution id → (run id, batch id) from the streaming properties of its first job."""
    clock_ms: int | None = None
    """The latest time an event carried so far: a terminated run ended about then."""
    phase_names: dict[str, str] = field(default_factory=dict)
    """Each `durationMs` phase name seen, held once."""

    def note_time(self, time_ms: int | None) -> None:
        """Advance the clock to an event's time (epoch ms)."""
        if time_ms and (self.clock_ms is None or time_ms > self.clock_ms):
            self.clock_ms = time_ms

    def _run(self, query_id: str, run_id: str) -> _Run:
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = _Run(query_id=query_id, run_id=run_id)
        return run

    def started(self, event: ev.StreamingQueryStarted) -> None:
        """A run started."""
        run = self._run(event.query_id, event.run_id)
        run.name = event.name or run.name
        run.start_ms = parse_timestamp_ms(event.timestamp)
        self.note_time(run.start_ms)

    def progress(self, event: ev.StreamingQueryProgressEvent) -> None:
        """A batch finished, or (before Spark 3.5) a trigger found no new data."""
        progress = event.progress
        run = self._run(progress.query_id, progress.run_id)
        run.name = progress.name or run.name
        if is_idle_report(progress):
            ms = parse_timestamp_ms(progress.timestamp)
            trigger_ms = progress.durations_ms.get("triggerExecution") or 0
            self._idle(run, ms + trigger_ms if ms is not None else None)
            return
        batch = _batch(progress, self.phase_names)
        run.batches.append(batch)
        if run.start_ms is None:
            run.start_ms = batch.timestamp_ms
        run.sources = tuple(s.description for s in progress.sources)
        run.sink = progress.sink.description if progress.sink is not None else run.sink
        run.state_operators = tuple(op.operator_name for op in progress.state_operators)
        if batch.timestamp_ms is not None:
            self.note_time(batch.timestamp_ms + (batch.trigger_execution_ms or 0))

    def idle(self, event: ev.StreamingQueryIdle) -> None:
        """A trigger found no new data (Spark 3.5+)."""
        self._idle(self._run(event.query_id, event.run_id), parse_timestamp_ms(event.timestamp))

    def _idle(self, run: _Run, time_ms: int | None) -> None:
        run.idle_reports += 1
        if run.start_ms is None:
            run.start_ms = time_ms
        if time_ms is not None:
            run.last_idle_ms = max(run.last_idle_ms or time_ms, time_ms)
        self.note_time(time_ms)

    def terminated(self, event: ev.StreamingQueryTerminated) -> None:
        """A run ended, stopped or failed."""
        run = self._run(event.query_id, event.run_id)
        run.status = "failed" if event.exception else "stopped"
        run.exception = event.exception or None
        run.error_class = event.error_class or None
        run.end_ms = self.clock_ms

    def job_started(self, execution_id: int | None, properties: dict[str, str]) -> None:
        """Note the micro-batch a job's properties name for its execution (the first job's)."""
        if execution_id is None or execution_id in self.job_batches:
            return
        batch_raw = properties.get(BATCH_ID_KEY)
        run_id = properties.get(JOB_GROUP_KEY)
        if batch_raw is None or run_id is None or QUERY_ID_KEY not in properties:
            return
        batch_id = decimal_int(batch_raw) if len(batch_raw) <= 18 else None
        if batch_id is not None:
            self.job_batches[execution_id] = (run_id, batch_id)

    def build(self, descriptions: dict[int, str]) -> tuple[StreamingQuery, ...]:
        """Return the query runs, each batch with its executions; `descriptions` are the
        executions' descriptions by id."""
        if not self.runs:
            return ()
        by_batch: dict[tuple[str, int], list[int]] = {}
        for execution_id in sorted(descriptions):
            key = batch_key_of_description(descriptions[execution_id])
            if key is None or key[0] not in self.runs:
                key = self.job_batches.get(execution_id)
            if key is not None and key[0] in self.runs:
                by_batch.setdefault(key, []).append(execution_id)
        queries = []
        for run in self.runs.values():
            finished = {b.batch_id for b in run.batches}
            # Each batch replaced in place as it gets its executions: never two of every one.
            kept = run.batches
            for i, b in enumerate(kept):
                kept[i] = _BATCH.replace(
                    b, execution_ids=tuple(by_batch.get((run.run_id, b.batch_id), ()))
                )
            batches = tuple(kept)
            unfinished = tuple(
                (batch_id, tuple(ids))
                for (run_id, batch_id), ids in sorted(by_batch.items())
                if run_id == run.run_id and batch_id not in finished
            )
            queries.append(
                StreamingQuery(
                    query_id=run.query_id,
                    run_id=run.run_id,
                    name=run.name,
                    start_ms=run.start_ms,
                    end_ms=run.end_ms,
                    status=run.status,
                    exception=run.exception,
                    error_class=run.error_class,
                    sources=run.sources,
                    sink=run.sink,
                    state_operators=run.state_operators,
                    batches=batches,
                    unfinished_batches=unfinished,
                    idle_reports=run.idle_reports,
                    last_idle_ms=run.last_idle_ms,
                )
            )
        return tuple(queries)
