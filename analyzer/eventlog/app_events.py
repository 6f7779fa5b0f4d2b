"""The application's other listener events as msgspec structs: the log's start, the
application, its environment, executors, jobs, stages and SQL executions.

Spark's JSON keys appear only in the event modules, as field renames; every field has a default
so that logs from Spark 2.x to 4.x all decode.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from analyzer.eventlog.task_events import ExecutorMetricsPeaks, Long

MAX_STAGE_TASKS = 10_000_000
"""The most tasks a stage may declare. Spark allows a Java `int`, and sizes arrays with it, as
the replay does (one value per task slot and SQL metric, as Spark's SQL tab counts them): a
hostile log declaring 2³¹ tasks would need gigabytes. Real stages stay far below this; a stage
declaring more makes its line malformed (skipped and counted with `--lenient`)."""

TaskCount = Annotated[int, msgspec.Meta(ge=0, le=MAX_STAGE_TASKS)]
"""A stage's number of tasks: at most `MAX_STAGE_TASKS`."""


class Accumulable(msgspec.Struct, frozen=True, gc=False):
    """One accumulator update carried by a task or stage (`AccumulableInfo`)."""

    id: Long = msgspec.field(name="ID")
    name: str | None = msgspec.field(name="Name", default=None)
    # Spark writes internal.metrics.* updates as JSON numbers and all others (SQL metrics
    # included) as strings; a few internal ones are lists. Kept as decoded.
    update: Any = msgspec.field(name="Update", default=None)
    value: Any = msgspec.field(name="Value", default=None)
    metadata: str | None = msgspec.field(name="Metadata", default=None)


class RddInfo(msgspec.Struct, frozen=True, gc=False):
    """The part of an RDD's info used to map stages to plan operators."""

    rdd_id: Long = msgspec.field(name="RDD ID", default=-1)
    name: str = msgspec.field(name="Name", default="")
    scope: str | None = msgspec.field(name="Scope", default=None)
    """A JSON string `{"id": ..., "name": ...}`; `name` is a plan operator's nodeName."""
    n_partitions: Long = msgspec.field(name="Number of Partitions", default=0)
    n_cached_partitions: Long = msgspec.field(name="Number of Cached Partitions", default=0)


class StageInfo(msgspec.Struct, frozen=True, gc=False):
    """A stage attempt as carried by job-start and stage events (`StageInfo`)."""

    stage_id: Long = msgspec.field(name="Stage ID")
    attempt_id: Long = msgspec.field(name="Stage Attempt ID", default=0)
    name: str = msgspec.field(name="Stage Name", default="")
    n_tasks: TaskCount = msgspec.field(name="Number of Tasks", default=0)
    rdd_info: list[RddInfo] = msgspec.field(name="RDD Info", default_factory=list)
    parent_ids: list[Long] = msgspec.field(name="Parent IDs", default_factory=list)
    details: str = msgspec.field(name="Details", default="")
    submission_ms: Long | None = msgspec.field(name="Submission Time", default=None)
    completion_ms: Long | None = msgspec.field(name="Completion Time", default=None)
    failure_reason: str | None = msgspec.field(name="Failure Reason", default=None)
    accumulables: list[Accumulable] = msgspec.field(name="Accumulables", default_factory=list)
    resource_profile_id: Long = msgspec.field(name="Resource Profile Id", default=0)


class SqlPlanMetric(msgspec.Struct, frozen=True, gc=False):
    """A metric declared by a plan operator (`SQLPlanMetric`)."""

    name: str
    accumulator_id: Long = msgspec.field(name="accumulatorId")
    metric_type: str = msgspec.field(name="metricType", default="sum")


class SparkPlanInfo(msgspec.Struct, frozen=True, gc=False):
    """A physical plan operator and its children, as logged (`SparkPlanInfo`)."""

    node_name: str = msgspec.field(name="nodeName")
    simple_string: str = msgspec.field(name="simpleString", default="")
    children: list[SparkPlanInfo] = msgspec.field(default_factory=list)
    metadata: dict[str, str] = msgspec.field(default_factory=dict)
    metrics: list[SqlPlanMetric] = msgspec.field(default_factory=list)


class JobResult(msgspec.Struct, frozen=True, gc=False):
    """`JobSucceeded` or `JobFailed` with the exception message."""

    result: str = msgspec.field(name="Result", default="JobSucceeded")
    exception: dict[str, Any] | None = msgspec.field(name="Exception", default=None)


class ExecutorInfo(msgspec.Struct, frozen=True, gc=False):
    """Where an executor runs and how many cores it has."""

    host: str = msgspec.field(name="Host", default="")
    total_cores: Long = msgspec.field(name="Total Cores", default=0)
    resource_profile_id: Long = msgspec.field(name="Resource Profile Id", default=0)


class BlockManagerId(msgspec.Struct, frozen=True, gc=False):
    """Which executor a block manager belongs to, and where it listens."""

    executor_id: str = msgspec.field(name="Executor ID", default="")
    host: str = msgspec.field(name="Host", default="")
    port: Long = msgspec.field(name="Port", default=0)


class TaskResourceRequest(msgspec.Struct, frozen=True, gc=False):
    """One resource a task of a resource profile asks for (`cpus`: how many cores)."""

    amount: float = msgspec.field(name="Amount", default=1.0)


class StageExecutorMetricsUpdate(msgspec.Struct, frozen=True, gc=False):
    """An executor's metric peaks within one stage attempt, in an executor heartbeat."""

    stage_id: Long = msgspec.field(name="Stage ID", default=0)
    stage_attempt_id: Long = msgspec.field(name="Stage Attempt ID", default=0)
    metrics: ExecutorMetricsPeaks = msgspec.field(
        name="Executor Metrics", default_factory=ExecutorMetricsPeaks
    )


# ---------------------------------------------------------------------------------------------
# Events (the `Event` value's last dotted component names the class)


class LogStart(msgspec.Struct, frozen=True, gc=False):
    """First line of a Spark log: the version that wrote it."""

    spark_version: str = msgspec.field(name="Spark Version", default="")


class DatabricksMetadata(msgspec.Struct, frozen=True, gc=False):
    """First line of a Databricks log, in place of LogStart."""

    spark_version: str = msgspec.field(name="Spark Version", default="")


class ApplicationStart(msgspec.Struct, frozen=True, gc=False):
    """The application's name, id and start time."""

    app_name: str = msgspec.field(name="App Name", default="")
    app_id: str | None = msgspec.field(name="App ID", default=None)
    timestamp_ms: Long = msgspec.field(name="Timestamp", default=0)
    user: str = msgspec.field(name="User", default="")
    attempt_id: str | None = msgspec.field(name="App Attempt ID", default=None)


class ApplicationEnd(msgspec.Struct, frozen=True, gc=False):
    """The application stopped."""

    timestamp_ms: Long = msgspec.field(name="Timestamp", default=0)
    exit_code: Long | None = msgspec.field(name="ExitCode", default=None)


PropertyMap = dict[str, str] | list[list[str]]
"""Spark writes each environment section as a JSON object; very old logs write pairs."""


def _as_dict(section: PropertyMap) -> dict[str, str]:
    if isinstance(section, dict):
        return section
    return {p[0]: p[1] for p in section if len(p) == 2}


class JvmInfo(msgspec.Struct, frozen=True, gc=False):
    """The driver JVM's versions, from the environment's `JVM Information`."""

    java_version: str | None = None
    """E.g. `17.0.15 (Debian)`."""
    java_home: str | None = None
    scala_version: str | None = None
    """E.g. `version 2.13.18`."""


class EnvironmentUpdate(msgspec.Struct, frozen=True, gc=False):
    """The JVM, Spark and system properties of the driver (redacted by Spark where secret).

    Raw values: the replay redacts them again before they reach the model (`model.config_secrets`).
    """

    jvm_information: PropertyMap = msgspec.field(name="JVM Information", default_factory=dict)
    spark_properties: PropertyMap = msgspec.field(name="Spark Properties", default_factory=dict)
    system_properties: PropertyMap = msgspec.field(name="System Properties", default_factory=dict)

    def properties(self) -> dict[str, str]:
        """The Spark properties as a dict."""
        return _as_dict(self.spark_properties)

    def jvm(self) -> JvmInfo:
        """The JVM information: Java version and home, Scala version."""
        info = _as_dict(self.jvm_information)
        return JvmInfo(
            java_version=info.get("Java Version"),
            java_home=info.get("Java Home"),
            scala_version=info.get("Scala Version"),
        )

    def system(self) -> dict[str, str]:
        """The Java system properties as a dict."""
        return _as_dict(self.system_properties)


class ResourceProfileAdded(msgspec.Struct, frozen=True, gc=False):
    """A resource profile: how many cores (`cpus`) each of its tasks needs (Spark 3.1+)."""

    profile_id: Long = msgspec.field(name="Resource Profile Id", default=0)
    task_requests: dict[str, TaskResourceRequest] = msgspec.field(
        name="Task Resource Requests", default_factory=dict
    )

    @property
    def cpus_per_task(self) -> float | None:
        """Cores each task of the profile asks for (its `cpus` request), None if not given."""
        request = self.task_requests.get("cpus")
        return request.amount if request is not None else None


class BlockManagerAdded(msgspec.Struct, frozen=True, gc=False):
    """A block manager registered: the executor's storage memory and its host:port."""

    block_manager: BlockManagerId = msgspec.field(
        name="Block Manager ID", default_factory=BlockManagerId
    )
    max_memory_bytes: Long = msgspec.field(name="Maximum Memory", default=0)
    """Storage memory (on-heap plus off-heap) the block manager may use."""
    timestamp_ms: Long = msgspec.field(name="Timestamp", default=0)


class ExecutorAdded(msgspec.Struct, frozen=True, gc=False):
    """An executor registered."""

    timestamp_ms: Long = msgspec.field(name="Timestamp", default=0)
    executor_id: str = msgspec.field(name="Executor ID", default="")
    info: ExecutorInfo = msgspec.field(name="Executor Info", default_factory=ExecutorInfo)


class ExecutorRemoved(msgspec.Struct, frozen=True, gc=False):
    """An executor went away, and why."""

    timestamp_ms: Long = msgspec.field(name="Timestamp", default=0)
    executor_id: str = msgspec.field(name="Executor ID", default="")
    reason: str = msgspec.field(name="Removed Reason", default="")


class StageExecutorMetrics(msgspec.Struct, frozen=True, gc=False):
    """An executor's metric peaks over a stage attempt (logged with
    `spark.eventLog.logStageExecutorMetrics`)."""

    executor_id: str = msgspec.field(name="Executor ID", default="")
    stage_id: Long = msgspec.field(name="Stage ID", default=0)
    stage_attempt_id: Long = msgspec.field(name="Stage Attempt ID", default=0)
    metrics: ExecutorMetricsPeaks = msgspec.field(
        name="Executor Metrics", default_factory=ExecutorMetricsPeaks
    )


class ExecutorMetricsUpdate(msgspec.Struct, frozen=True, gc=False):
    """A heartbeat's executor metric peaks (logged for the driver only, with
    `spark.eventLog.logStageExecutorMetrics`)."""

    executor_id: str = msgspec.field(name="Executor ID", default="")
    stage_updates: list[StageExecutorMetricsUpdate] = msgspec.field(
        name="Executor Metrics Updated", default_factory=list
    )


class JobStart(msgspec.Struct, frozen=True, gc=False):
    """A job started; its properties link it to a SQL execution."""

    job_id: Long = msgspec.field(name="Job ID")
    submission_ms: Long = msgspec.field(name="Submission Time", default=0)
    stage_infos: list[StageInfo] = msgspec.field(name="Stage Infos", default_factory=list)
    stage_ids: list[Long] = msgspec.field(name="Stage IDs", default_factory=list)
    properties: dict[str, str] | None = msgspec.field(name="Properties", default=None)


class JobEnd(msgspec.Struct, frozen=True, gc=False):
    """A job ended."""

    job_id: Long = msgspec.field(name="Job ID")
    completion_ms: Long = msgspec.field(name="Completion Time", default=0)
    result: JobResult = msgspec.field(name="Job Result", default_factory=JobResult)


class StageSubmitted(msgspec.Struct, frozen=True, gc=False):
    """A stage attempt was submitted."""

    info: StageInfo = msgspec.field(name="Stage Info")


class StageCompleted(msgspec.Struct, frozen=True, gc=False):
    """A stage attempt completed or failed."""

    info: StageInfo = msgspec.field(name="Stage Info")


class SQLAdaptiveSQLMetricUpdates(msgspec.Struct, frozen=True, gc=False):
    """Metrics of plans AQE added (subqueries), to be tracked with the execution."""

    execution_id: Long = msgspec.field(name="executionId")
    metrics: list[SqlPlanMetric] = msgspec.field(name="sqlPlanMetrics", default_factory=list)


class DriverAccumUpdates(msgspec.Struct, frozen=True, gc=False):
    """Metric values set on the driver: `[accumulatorId, value]` pairs."""

    execution_id: Long = msgspec.field(name="executionId")
    updates: list[tuple[Long, Long]] = msgspec.field(name="accumUpdates", default_factory=list)


class SQLExecutionEnd(msgspec.Struct, frozen=True, gc=False):
    """A SQL execution ended; a non-empty error message means it failed."""

    execution_id: Long = msgspec.field(name="executionId")
    time_ms: Long = msgspec.field(name="time", default=0)
    error_message: str | None = msgspec.field(name="errorMessage", default=None)


class ConnectOperationCanceled(msgspec.Struct, frozen=True, gc=False):
    """A Spark Connect operation was cancelled (`SparkListenerConnectOperationCanceled`, Spark
    3.5+): its client interrupted it (`interruptAll`, `interruptTag`, `interruptOperation`),
    closed its session, or went away and the server dropped it. `jobTag` is the tag of every job
    and SQL execution the operation ran; any JSON, so that an odd value loses only the tag."""

    job_tag: Any = msgspec.field(name="jobTag", default=None)
