"""The replay's records of what it knows so far of each SQL execution, job, executor and stage
attempt (Spark's `LiveEntity`), and the parsing rules of the values they take from a log; each
record turns into its frozen model once, at the end of the replay."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import msgspec

from analyzer.eventlog import events as ev
from analyzer.model.application import (
    Execution,
    Executor,
    Job,
    PlanVersion,
    StageAttempt,
)
from analyzer.model.plan import MetricCatalog, MetricSpec, PlanGraph
from analyzer.model.trusted import Trusted

# Spark's CpuAmount: a cores-per-task amount has 9 decimal places and lies in [1e-9, 2^31 - 1].
_CPU_SCALE = Decimal("1e-9")
_CPU_MAX = Decimal(2**31 - 1)
_INT_MAX = 2**31 - 1

# Jobs, stage attempts and executions are slotted dataclasses built from values already of
# their fields' types, without validating them again: a log of thousands of executions holds
# tens of thousands of them.
_JOB = Trusted(Job)
_STAGE = Trusted(StageAttempt)
_EXECUTION = Trusted(Execution)
EMPTY_GRAPH = PlanGraph.typed(nodes=(), edges=())
"""The plan of an execution that logged none."""


def cpu_amount(text: str) -> Decimal | None:
    """Parse a cores-per-task amount as Spark's `CpuAmount.parseUntrusted` does, or None."""
    if len(text) > 64 or text != text.strip():
        return None
    try:
        amount = Decimal(text)
        if not (_CPU_SCALE <= amount <= _CPU_MAX):
            return None
    except (InvalidOperation, ValueError):
        return None
    return amount.quantize(_CPU_SCALE, rounding=ROUND_HALF_UP)


def max_tasks(cores: int, cpus_per_task: Decimal) -> int:
    """Tasks `cores` cores run at once (`ResourceProfile.numTasksBasedOnCores`)."""
    return max(0, min(int(Decimal(cores) // cpus_per_task), _INT_MAX))


_JAVA_LONG = re.compile(r"[+-]?\d+")
"""What Java's `Long.parseLong` accepts: a sign, then decimal digits (any script's, as
`Character.digit`); no spaces, no underscores."""


def parse_java_long(text: str) -> int | None:
    """Parse `text` as Java's `Long.parseLong` (Scala's `toLong`) does; None where it throws.

    >>> parse_java_long("+42"), parse_java_long(" 42"), parse_java_long("9223372036854775808")
    (42, None, None)
    """
    if not _JAVA_LONG.fullmatch(text):
        return None
    try:
        value = int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return None
    return value if ev.LONG_MIN <= value <= ev.LONG_MAX else None


@dataclass
class LiveExecution:
    """A SQL execution as the replay knows it so far."""

    execution_id: int
    root_execution_id: int
    description: str = ""
    details: str = ""
    start_ms: int | None = None
    end_ms: int | None = None
    error_message: str | None = None
    ended: bool = False
    plans: list[PlanVersion] = field(default_factory=list)
    metrics: dict[int, MetricSpec] = field(default_factory=dict)
    """Accumulator id → the metric, over every plan version (and those AQE adds); read and
    changed through `metric_dict`, empty once `catalog` holds them."""
    catalog: MetricCatalog | None = None
    """The metrics made compact at the execution's end (`compact_metrics`): a dict of an int
    object per accumulator id, held for every execution until the replay ends, was a tenth of
    the replay's memory for a log of thousands of executions, and its freed integers left the
    allocator's pages of small objects scattered."""
    job_ids: list[int] = field(default_factory=list)
    modified_configs: tuple[tuple[str, str], ...] = ()
    """Sorted by key, secrets redacted, shared (`PlanParts.configs`)."""
    connect_tag: str | None = None
    """The job tag of the Spark Connect operation that ran it (`CONNECT_TAG_PREFIX`), if any."""

    def metric_dict(self) -> dict[int, MetricSpec]:
        """The metrics by accumulator id, to read or add to: a dict again if they were made
        compact (an event after the execution's end, which Spark also applies)."""
        if self.catalog is not None:
            catalog, self.catalog = self.catalog, None
            self.metrics = dict(zip(catalog.accumulator_ids, catalog.specs, strict=True))
        return self.metrics

    def compact_metrics(self, make: Callable[[dict[int, MetricSpec]], MetricCatalog]) -> None:
        """Hold the metrics as the catalog `make` makes of them (at the execution's end)."""
        if self.catalog is None:
            self.catalog = make(self.metrics)
            self.metrics = {}

    def to_model(
        self, job_status: dict[int, str], stage_ids: list[int], catalog: MetricCatalog
    ) -> Execution:
        """The frozen execution; `job_status` holds every job's status by id, `stage_ids` the
        execution's stages in the order the SQL listener met them, `catalog` its `metrics`."""
        statuses = [job_status[j] for j in self.job_ids if j in job_status]
        failed_alone = self.ended and self.error_message
        if all(s == "SUCCEEDED" for s in statuses) and not failed_alone:
            status = "COMPLETED"
        elif any(s == "FAILED" for s in statuses) or failed_alone:
            status = "FAILED"
        else:
            status = "RUNNING"
        plans = tuple(self.plans) or (
            PlanVersion.typed(index=0, physical_plan_description="", graph=EMPTY_GRAPH),
        )
        # Its one validator (secrets redacted) applied here.
        return _EXECUTION(
            execution_id=self.execution_id,
            root_execution_id=self.root_execution_id,
            description=self.description,
            details=self.details,
            start_ms=self.start_ms,
            end_ms=self.end_ms,
            error_message=self.error_message,
            status=status,
            job_ids=tuple(self.job_ids),
            stage_ids=tuple(stage_ids),
            plans=plans,
            metric_catalog=catalog,
            modified_configs=self.modified_configs,
            ended=self.ended,
        )


@dataclass
class LiveJob:
    """A job as the replay knows it so far."""

    job_id: int
    execution_id: int | None
    submission_ms: int | None
    stage_ids: tuple[int, ...]
    completion_ms: int | None = None
    status: str = "RUNNING"
    """`RUNNING` until its end event, then `SUCCEEDED` or `FAILED`."""
    error: str | None = None
    name: str = ""
    description: str | None = None
    job_group: str | None = None
    job_tags: tuple[str, ...] = ()

    def to_model(self) -> Job:
        """The frozen job."""
        return _JOB(
            job_id=self.job_id,
            execution_id=self.execution_id,
            submission_ms=self.submission_ms,
            completion_ms=self.completion_ms,
            status=self.status,
            stage_ids=self.stage_ids,
            error_message=self.error,
            name=self.name,
            description=self.description,
            job_group=self.job_group,
            job_tags=self.job_tags,
        )


@dataclass(slots=True)
class LiveExecutor:
    """An executor (or the driver) as the replay knows it so far (Spark's `LiveExecutor`)."""

    executor_id: str
    host: str
    n_cores: int
    added_ms: int | None
    removed_ms: int | None = None
    removed_reason: str | None = None
    live: bool = True
    """Registered and not removed: only then do its tasks count (Spark's `liveExecutors`)."""
    host_port: str | None = None
    max_memory_bytes: int = 0
    max_tasks: int = 0
    resource_profile_id: int = 0
    n_started: int = 0
    n_active: int = 0
    n_completed: int = 0
    n_failed: int = 0
    task_time_ms: int = 0
    gc_time_ms: int = 0
    input_bytes: int = 0
    shuffle_read_bytes: int = 0
    shuffle_write_bytes: int = 0
    peak_total_gc_ms: int | None = None

    def note_peak(self, metrics: ev.ExecutorMetricsPeaks | None) -> None:
        """Update the peak GC time (Spark's `compareAndUpdatePeakValues`; absent = zeros)."""
        value = metrics.total_gc_ms if metrics is not None else 0
        if self.peak_total_gc_ms is None or value > self.peak_total_gc_ms:
            self.peak_total_gc_ms = value

    def count_task_ends(self, totals: list[int]) -> None:
        """Add a segment's task ends of this executor (`task_columns.EXECUTOR_END_FIELDS`), as
        `AppStatusListener.onTaskEnd` counts each."""
        completed, failed, ended, peak_gc, task_time, gc_time, input_bytes, read, written = totals
        self.n_completed += completed
        self.n_failed += failed
        self.n_active -= ended
        if self.peak_total_gc_ms is None or peak_gc > self.peak_total_gc_ms:
            self.peak_total_gc_ms = peak_gc
        self.task_time_ms += task_time
        self.gc_time_ms += gc_time
        self.input_bytes += input_bytes
        self.shuffle_read_bytes += read
        self.shuffle_write_bytes += written

    def to_model(self) -> Executor:
        """The frozen executor."""
        return Executor(
            executor_id=self.executor_id,
            host=self.host,
            n_cores=self.n_cores,
            added_ms=self.added_ms,
            removed_ms=self.removed_ms,
            removed_reason=self.removed_reason,
            host_port=self.host_port,
            max_memory_bytes=self.max_memory_bytes,
            max_tasks=self.max_tasks,
            is_active=self.live,
            n_tasks_started=self.n_started,
            n_tasks_active=self.n_active,
            n_tasks_completed=self.n_completed,
            n_tasks_failed=self.n_failed,
            task_time_ms=self.task_time_ms,
            gc_time_ms=self.gc_time_ms,
            input_bytes=self.input_bytes,
            shuffle_read_bytes=self.shuffle_read_bytes,
            shuffle_write_bytes=self.shuffle_write_bytes,
            peak_total_gc_ms=self.peak_total_gc_ms,
            resource_profile_id=self.resource_profile_id,
        )


@dataclass
class LiveStage:
    """A stage attempt as the replay knows it so far."""

    stage_id: int
    attempt_id: int
    name: str = ""
    n_tasks: int = 0
    submission_ms: int | None = None
    completion_ms: int | None = None
    failure_reason: str | None = None
    submitted: bool = False
    completed: bool = False
    parent_ids: tuple[int, ...] = ()
    job_ids: list[int] = field(default_factory=list)
    scope_names: tuple[str, ...] = ()
    n_task_attempts: int = 0
    n_failed: int = 0
    n_killed: int = 0
    n_speculative: int = 0
    n_unfinished: int = 0
    resource_profile_id: int = 0

    @property
    def status(self) -> str:
        """FAILED, COMPLETE, ACTIVE (submitted, not completed) or SKIPPED (never submitted)."""
        if self.failure_reason:
            return "FAILED"
        if self.completed:
            return "COMPLETE"
        return "ACTIVE" if self.submitted else "SKIPPED"

    def to_model(self, n_unfinished_tasks: int) -> StageAttempt:
        """The frozen stage attempt; `n_unfinished_tasks` started and never ended."""
        return _STAGE(
            stage_id=self.stage_id,
            attempt_id=self.attempt_id,
            name=self.name,
            n_tasks=self.n_tasks,
            submission_ms=self.submission_ms,
            completion_ms=self.completion_ms,
            status=self.status,
            failure_reason=self.failure_reason,
            parent_ids=self.parent_ids,
            job_ids=tuple(self.job_ids),
            rdd_scope_names=self.scope_names,
            n_task_attempts=self.n_task_attempts,
            n_failed_attempts=self.n_failed,
            n_killed_attempts=self.n_killed,
            n_speculative_attempts=self.n_speculative,
            n_unfinished_tasks=n_unfinished_tasks,
            resource_profile_id=self.resource_profile_id,
        )


class _Scope(msgspec.Struct):
    """The one field read of an RDD operation scope, a JSON object Spark logs as a string (for
    example `{"id":"3","name":"Exchange"}`)."""

    name: Any = None


_SCOPE = msgspec.json.Decoder(_Scope)


def _scope_name(scope: str) -> Any:
    """The `name` of a scope's JSON object, None when it is not an object or not JSON.

    msgspec reads the one field ten times as fast as Python's `json` builds the object (the
    scopes of every stage of every job: 2 % of a report of thousands of short queries). What
    msgspec refuses but `json` reads (`NaN`, a lone surrogate, a number out of range) is read
    by `json`, so every scope gives the name it did. A scope nested too deep for either is no
    name, not a crash: the log is untrusted.
    """
    try:
        return _SCOPE.decode(scope).name
    except RecursionError:
        return None
    except msgspec.MsgspecError:
        pass
    import json

    try:
        value = json.loads(scope)
    except (ValueError, RecursionError):
        return None
    return value.get("name") if isinstance(value, dict) else None


def scope_names(info: ev.StageInfo) -> tuple[str, ...]:
    """The names of the RDD operation scopes of a stage, trimmed, each once, in the order
    logged."""
    names: list[str] = []
    for rdd in info.rdd_info:
        if rdd.scope:
            name = _scope_name(rdd.scope)
            if isinstance(name, str) and (name := name.strip()) not in names:
                names.append(name)
    return tuple(names)


def job_error(result: ev.JobResult) -> str | None:
    """A failed job's error message (its result's name without one), None for a success."""
    if result.result == "JobSucceeded":
        return None
    exc: dict[str, Any] = result.exception or {}
    message = exc.get("Message")
    return str(message) if message else result.result
