"""Frozen domain types for an application: executors, jobs, stages, SQL executions.

Executors, jobs, stage attempts, plan versions and executions are slotted pydantic dataclasses,
not `BaseModel`s: a day of a streaming query holds tens of thousands of each, and a model
instance carries a dict of its fields (0.46 KB for a job of 11 fields, against 0.1 KB of slots).
"""

from __future__ import annotations

from functools import cached_property

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic.dataclasses import dataclass

from analyzer.model.config_secrets import redact_pairs
from analyzer.model.connect import connect_label
from analyzer.model.plan import MetricCatalog, PlanGraph
from analyzer.model.streaming import StreamingQuery
from analyzer.model.trusted import Trusted
from analyzer.units import decimal_int

DRIVER_ID = "driver"
"""The executor id Spark gives the driver."""


@dataclass(frozen=True, slots=True)
class Executor:
    """An executor (or the driver): its lifetime, capacity and task totals.

    The totals follow Spark's `AppStatusListener`: a task counts for the executor it ran on only
    while that executor is registered (tasks ending after its removal are not added). When an
    executor id registers again after its removal, this is the new registration, as in Spark's
    History Server. `aggregate.executor_summary` turns it into what `/allexecutors` shows.

    A slotted dataclass, not a `BaseModel`: a log can register a million executors, and a
    model instance with its `__dict__` is ten times the size (2.6 KB measured, against 0.2 KB).
    """

    executor_id: str
    host: str
    """The executor's host (its block manager's host when no ExecutorAdded was logged)."""
    n_cores: int
    """Cores the executor offered (`Total Cores`; 0 when only its block manager was logged)."""
    added_ms: int | None = None
    """When it registered: its first ExecutorAdded or BlockManagerAdded (epoch ms)."""
    removed_ms: int | None = None
    removed_reason: str | None = None
    host_port: str | None = None
    """`host:port` of its block manager; None when no BlockManagerAdded was logged."""
    max_memory_bytes: int = 0
    """Storage memory of its block manager (`Maximum Memory`, on-heap plus off-heap)."""
    max_tasks: int = 0
    """Tasks it can run at once: cores divided by the cores per task, rounded down."""
    is_active: bool = True
    """False once an ExecutorRemoved was logged for it."""
    n_tasks_started: int = 0
    """Task attempts launched on it while registered (Spark's `totalTasks`)."""
    n_tasks_active: int = 0
    """Task attempts still running at the end of the log."""
    n_tasks_completed: int = 0
    """Successful task attempts (`completedTasks`)."""
    n_tasks_failed: int = 0
    """Failed attempts, resubmissions included (`failedTasks`); killed ones are not counted."""
    task_time_ms: int = 0
    """Summed launch-to-finish time of its ended task attempts (`totalDuration`); resubmission
    events are not added."""
    gc_time_ms: int = 0
    """Summed JVM GC time of its tasks (`totalGCTime` for executors)."""
    input_bytes: int = 0
    shuffle_read_bytes: int = 0
    """Local plus remote shuffle bytes read by its tasks."""
    shuffle_write_bytes: int = 0
    peak_total_gc_ms: int | None = None
    """Largest cumulative JVM GC time it reported in executor metrics (task ends, stage
    executor metrics, heartbeats); None if it never reported any."""
    resource_profile_id: int = 0


SHUTDOWN = "cancelled because SparkContext was shut down"
"""How Spark ends the jobs and stages still running when the application stops."""
CANCELLATIONS = (
    SHUTDOWN,
    "cancelled as part of cancellation of all jobs",
    "cancelled because killed via the Web UI",
    "Stage cancelled",
    "cancelled job group",
    # Spark 4's error class for a cancelled job, whatever cancelled it (a stopped stream, a
    # job group, the context's shutdown).
    "[SPARK_JOB_CANCELLED]",
)
"""What Spark says of a job or stage it cancelled (a consequence of something else: the
application stopping, a stream stopped, a user), not of one that failed."""


CONNECT_TAG_PREFIX = "SparkConnect_OperationTag_"
"""How a Spark Connect server tags the jobs and SQL executions of one client operation
(`SparkConnect_OperationTag_User_<user>_Session_<session>_Operation_<operation>`)."""


def connect_tag(job_tags: object) -> str | None:
    """Return the Spark Connect operation tag among an execution's logged `jobTags` (or a
    job's `job_tags`), if any.

    >>> connect_tag(["spark-session-1", "SparkConnect_OperationTag_User__Session_s_Operation_o"])
    'SparkConnect_OperationTag_User__Session_s_Operation_o'
    >>> connect_tag(None) is None, connect_tag([7, "x"]) is None
    (True, True)
    """
    if not isinstance(job_tags, (list, tuple)):
        return None
    return next(
        (t for t in job_tags if isinstance(t, str) and t.startswith(CONNECT_TAG_PREFIX)), None
    )


def cancelled_from_outside(job: Job) -> bool:
    """True for a job cancelled by something outside its query (the driver program, a user),
    not by the application's shutdown nor by Spark itself: a broadcast that timed out has its
    job group (`broadcast exchange (runId …)`) cancelled, a failure of the query."""
    if not job.cancelled or SHUTDOWN in (job.error_message or ""):
        return False
    return not (job.description or "").startswith("broadcast exchange") and "broadcast" not in (
        job.error_message or ""
    )


def is_cancellation(message: str | None) -> bool:
    """Return True for a job or stage failure message that says it was cancelled.

    >>> is_cancellation("Job 33 cancelled because SparkContext was shut down")
    True
    """
    return message is not None and any(c in message for c in CANCELLATIONS)


@dataclass(frozen=True, slots=True)
class Job:
    """A Spark job and the SQL execution it belongs to, if any."""

    job_id: int
    execution_id: int | None
    submission_ms: int | None
    completion_ms: int | None
    status: str
    """`SUCCEEDED`, `FAILED` or `RUNNING` (no end event)."""
    stage_ids: tuple[int, ...]
    error_message: str | None = None
    name: str = ""
    """What Spark's Jobs page shows as the job's name: the name of its stage with the highest id,
    i.e. the call site of the action (`collect at MyJob.scala:42`); "" without stages."""
    description: str | None = None
    """`spark.job.description` (set with `SparkContext.setJobDescription`; SQL sets it to the
    query text for some commands)."""
    job_group: str | None = None
    """`spark.jobGroup.id` (`SparkContext.setJobGroup`)."""
    job_tags: tuple[str, ...] = ()
    """`spark.job.tags` split on commas, sorted (Spark 3.5+)."""

    @property
    def cancelled(self) -> bool:
        """True for a failed job that Spark cancelled (`is_cancellation`)."""
        return self.status == "FAILED" and is_cancellation(self.error_message)


@dataclass(frozen=True, slots=True)
class StageAttempt:
    """One attempt of a stage, with task counts derived from its task-end events."""

    stage_id: int
    attempt_id: int
    name: str
    n_tasks: int
    """Tasks the attempt was planned with (`Number of Tasks`)."""
    submission_ms: int | None
    completion_ms: int | None
    status: str
    """`COMPLETE`, `FAILED`, `SKIPPED` (never submitted) or `ACTIVE` (no completion event)."""
    failure_reason: str | None
    parent_ids: tuple[int, ...]
    job_ids: tuple[int, ...]
    rdd_scope_names: tuple[str, ...]
    """Operator names from the RDD scopes (e.g. `WholeStageCodegen (3)`, `Exchange`)."""
    n_task_attempts: int = 0
    n_failed_attempts: int = 0
    n_killed_attempts: int = 0
    n_speculative_attempts: int = 0
    n_unfinished_tasks: int = 0
    """Task attempts launched (TaskStart) without a TaskEnd in the log."""
    resource_profile_id: int = 0
    """The resource profile its tasks need (`Resource Profile Id`, Spark 3.1+; 0 before)."""

    @property
    def cancelled(self) -> bool:
        """True for a failed attempt that Spark cancelled (`is_cancellation`)."""
        return self.status == "FAILED" and is_cancellation(self.failure_reason)

    @property
    def lost_task_ends(self) -> bool:
        """True for a completed attempt whose log holds task ends for fewer than half of the
        tasks it was planned with: the log lost them (or was edited), so its figures are
        partial."""
        return self.status == "COMPLETE" and 2 * self.n_task_attempts < self.n_tasks

    @property
    def duration_ms(self) -> int | None:
        """Wall time from submission to completion."""
        if self.submission_ms is None or self.completion_ms is None:
            return None
        return self.completion_ms - self.submission_ms


@dataclass(frozen=True, slots=True)
class PlanVersion:
    """One plan of an execution: the initial one, or an adaptive (AQE) re-plan."""

    index: int
    """0 for the initial plan, then 1, 2, … per AQE update."""
    physical_plan_description: str
    graph: PlanGraph

    @classmethod
    def typed(cls, index: int, physical_plan_description: str, graph: PlanGraph) -> PlanVersion:
        """Build from values already of the fields' types, without validating them again."""
        return _PLAN_VERSION(
            index=index,
            physical_plan_description=physical_plan_description,
            graph=graph,
        )


_PLAN_VERSION = Trusted(PlanVersion)


@dataclass(frozen=True, slots=True)
class Execution:
    """A SQL execution with its plans, jobs and stages."""

    execution_id: int
    root_execution_id: int
    description: str
    details: str
    start_ms: int | None
    end_ms: int | None
    error_message: str | None
    """Spark's error message for a failed execution (3.4+ logs), else None."""
    status: str
    """`COMPLETED`, `FAILED` or `RUNNING`, as the History Server's REST API derives it."""
    job_ids: tuple[int, ...]
    stage_ids: tuple[int, ...]
    """Stage ids in the order Spark's listener iterates them (this order breaks max ties)."""
    plans: tuple[PlanVersion, ...]
    metric_catalog: MetricCatalog
    """Every metric tracked for the execution, over all plan versions, by accumulator id."""
    modified_configs: tuple[tuple[str, str], ...] = ()
    """SQL configurations the session changed, secrets redacted (`model.config_secrets`)."""
    ended: bool = False
    """True when the log holds the execution's end event."""

    @field_validator("modified_configs")
    @classmethod
    def _redact_configs(cls, value: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return redact_pairs(value)

    @property
    def final_plan(self) -> PlanVersion:
        """The last plan (what the REST API and UI show)."""
        return self.plans[-1]

    @property
    def shown_description(self) -> str:
        """What the reports call the execution: its description, or for a Spark Connect
        operation what it ran (`model.connect.connect_label`), since Spark's description of
        one is its session id and the start of its request, new with every run."""
        return connect_label(self.description, self.details) or self.description

    @property
    def duration_ms(self) -> int | None:
        """Wall time from start to end, if both were logged."""
        if self.start_ms is None or self.end_ms is None:
            return None
        return self.end_ms - self.start_ms


SYSTEM_PROPERTY_KEYS = (
    "java.version",
    "java.vendor",
    "java.vm.name",
    "java.vm.version",
    "os.name",
    "os.arch",
    "os.version",
    "user.timezone",
    "file.encoding",
)
"""The Java system properties kept: what a responder needs to know about the driver's JVM and
platform. The rest (class path, command line, user and home directories) is left out."""


class SparkEnvironment(BaseModel):
    """The driver's JVM and configuration, from `SparkListenerEnvironmentUpdate`.

    Every property value matching Spark's redaction pattern is redacted here, whatever the log
    holds (`model.config_secrets`).
    """

    model_config = ConfigDict(frozen=True)

    java_version: str | None = None
    """`Java Version` of the JVM information, e.g. `17.0.15 (Debian)`."""
    java_home: str | None = None
    scala_version: str | None = None
    """`Scala Version`, e.g. `version 2.13.18`."""
    spark_properties: tuple[tuple[str, str], ...] = ()
    """Every Spark property, sorted by key."""
    system_properties: tuple[tuple[str, str], ...] = ()
    """The Java system properties named in `SYSTEM_PROPERTY_KEYS` that the log has, sorted."""

    @field_validator("spark_properties", "system_properties")
    @classmethod
    def _redact(cls, value: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return redact_pairs(value)


class Application(BaseModel):
    """An application as its event log describes it."""

    model_config = ConfigDict(frozen=True)

    app_id: str | None
    attempt_id: str | None
    name: str
    spark_version: str
    user: str
    start_ms: int | None
    end_ms: int | None
    completed: bool
    """The log holds an ApplicationEnd event."""
    executors: tuple[Executor, ...]
    jobs: tuple[Job, ...]
    stages: tuple[StageAttempt, ...]
    executions: tuple[Execution, ...]
    streaming: tuple[StreamingQuery, ...] = ()
    """Structured Streaming query runs, in the order they were first seen (`model.streaming`)."""
    cancelled_connect_execution_ids: tuple[int, ...] = ()
    """SQL executions of Spark Connect operations that were cancelled (their client interrupted
    them or went away: `SparkListenerConnectOperationCanceled`, Spark 3.5+), by id."""
    spark_properties: tuple[tuple[str, str], ...] = ()
    """Every Spark property, sorted by key, secrets redacted (the same as
    `environment.spark_properties`)."""
    environment: SparkEnvironment = SparkEnvironment()
    inverted_intervals: tuple[tuple[str, int], ...] = ()
    """Per kind (`application`, `SQL execution`, `job`, `stage attempt`, `executor`), how many
    intervals ended before they started in the log; each was clamped to zero length."""

    @field_validator("spark_properties")
    @classmethod
    def _redact_properties(cls, value: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return redact_pairs(value)

    @property
    def duration_ms(self) -> int | None:
        """Wall time from start to end."""
        if self.start_ms is None or self.end_ms is None:
            return None
        return self.end_ms - self.start_ms

    @property
    def spark_major(self) -> int | None:
        """The major version of the Spark that wrote the log; None when its version does not
        start with one (some tools' logs)."""
        return decimal_int(self.spark_version.split(".", 1)[0])

    @cached_property
    def sub_executions(self) -> dict[int, tuple[int, ...]]:
        """The ids of the executions nested under each root execution that has any, in order.

        Spark 3.4+ (and Databricks before it) logs `rootExecutionId`: the queries one command
        runs (a notebook cell's `%sql`, a `CACHE TABLE`) are sub-executions of its root, and run
        inside the root's time. A root the log does not hold nests nothing.
        """
        present = {e.execution_id for e in self.executions}
        nested: dict[int, list[int]] = {}
        for e in self.executions:
            root = e.root_execution_id
            if root != e.execution_id and root in present:
                nested.setdefault(root, []).append(e.execution_id)
        return {root: tuple(sorted(ids)) for root, ids in nested.items()}

    def parent_of(self, execution: Execution) -> int | None:
        """The id of the root execution `execution` is nested under, or None for a root."""
        root = execution.root_execution_id
        return root if execution.execution_id in self.sub_executions.get(root, ()) else None

    @cached_property
    def interrupted_execution_ids(self) -> frozenset[int]:
        """SQL executions cut short on purpose: by a normal stop of their streaming query
        (`stopped_stream_execution_ids`), by the Spark Connect client that ran them
        (`cancelled_connect_execution_ids`), or by whatever cancelled their jobs
        (`cancelled_execution_ids`). Spark marks them failed (an `InterruptedException`, a
        cancelled job), but nothing failed."""
        return self._stopped_or_client_cancelled.union(self.cancelled_execution_ids)

    @cached_property
    def stopped_stream_execution_ids(self) -> frozenset[int]:
        """SQL executions of the batch a normal stop of their streaming query interrupted."""
        return frozenset(e for q in self.streaming for e in q.interrupted_execution_ids)

    @cached_property
    def _stopped_or_client_cancelled(self) -> frozenset[int]:
        return self.stopped_stream_execution_ids.union(self.cancelled_connect_execution_ids)

    @cached_property
    def cancelled_execution_ids(self) -> frozenset[int]:
        """FAILED executions nothing failed in, which something cancelled: every failed job of
        theirs was cancelled (`Job.cancelled`: a job group's or all jobs' cancel by the driver
        program or a notebook's Cancel, a kill in the UI), none by the application's shutdown,
        and Spark's error for the execution, if it logged one, is that cancellation. Among
        `interrupted_execution_ids`, apart from a streaming stop's and a Connect client's."""
        known = self._stopped_or_client_cancelled
        jobs = {j.job_id: j for j in self.jobs}
        found = []
        for ex in self.executions:
            if ex.status != "FAILED" or ex.execution_id in known:
                continue
            failed = [jobs[j] for j in ex.job_ids if j in jobs and jobs[j].status == "FAILED"]
            if (
                failed
                and all(cancelled_from_outside(j) for j in failed)
                and (not ex.error_message or is_cancellation(ex.error_message))
            ):
                found.append(ex.execution_id)
        return frozenset(found)
