"""Typed Spark listener events, decoded from JSON lines with msgspec.

Only the events and fields the analysis uses are declared; msgspec skips the rest of each line
without building it, which keeps the task-end hot path cheap. Spark's JSON keys appear only here,
as field renames. Every field has a default so logs from Spark 2.x to 4.x all decode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from analyzer.errors import MalformedLineError, NotAnEventLogError, Strictness
from analyzer.eventlog.lines import Line, ReadStats, iter_lines
from analyzer.eventlog.source import LogSource

# ---------------------------------------------------------------------------------------------
# Shared pieces

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1

Long = Annotated[int, msgspec.Meta(ge=LONG_MIN, le=LONG_MAX)]
"""A Java `long`, as Spark writes every id, count, size and time: a value outside its range cannot
come from Spark, and the line holding it is malformed (the columns downstream are int64)."""

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


class AccumulableUpdate(msgspec.Struct, frozen=True, gc=False):
    """A task's update of one accumulator: only the id and the update are decoded.

    Tasks carry one of these per accumulator they touched (internal metrics included); leaving
    out the name and the running value saves building two objects each on the hot path.
    """

    id: Long = msgspec.field(name="ID")
    update: Any = msgspec.field(name="Update", default=None)
    """A JSON number for internal.metrics.*, a string for SQL metrics (see `Accumulable`)."""


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


class TaskInfo(msgspec.Struct, frozen=True, gc=False):
    """A task attempt's identity, placement and outcome (`TaskInfo`)."""

    task_id: Long = msgspec.field(name="Task ID")
    index: Long = msgspec.field(name="Index", default=-1)
    attempt: Long = msgspec.field(name="Attempt", default=0)
    partition_id: Long = msgspec.field(name="Partition ID", default=-1)
    """The RDD partition (Spark 3.3+); -1 when the log predates it."""
    launch_ms: Long = msgspec.field(name="Launch Time", default=0)
    executor_id: str = msgspec.field(name="Executor ID", default="")
    host: str = msgspec.field(name="Host", default="")
    locality: str = msgspec.field(name="Locality", default="")
    speculative: bool = msgspec.field(name="Speculative", default=False)
    getting_result_start_ms: Long = msgspec.field(name="Getting Result Time", default=0)
    """When the driver began fetching the task's result (epoch ms), 0 if it never did: despite
    its JSON name a timestamp, not a duration."""
    finish_ms: Long = msgspec.field(name="Finish Time", default=0)
    failed: bool = msgspec.field(name="Failed", default=False)
    killed: bool = msgspec.field(name="Killed", default=False)
    accumulables: list[AccumulableUpdate] = msgspec.field(name="Accumulables", default_factory=list)

    @property
    def successful(self) -> bool:
        """Finished and neither failed nor killed, as Spark's `TaskInfo.successful`."""
        return self.finish_ms != 0 and not self.failed and not self.killed


class PushShuffleReadMetrics(msgspec.Struct, frozen=True, gc=False):
    """Push-based shuffle read metrics (Spark 3.2+, non-zero only with push-based shuffle)."""

    corrupt_merged_block_chunks: Long = msgspec.field(name="Corrupt Merged Block Chunks", default=0)
    merged_fetch_fallback_count: Long = msgspec.field(name="Merged Fetch Fallback Count", default=0)
    remote_merged_blocks_fetched: Long = msgspec.field(
        name="Merged Remote Blocks Fetched", default=0
    )
    local_merged_blocks_fetched: Long = msgspec.field(name="Merged Local Blocks Fetched", default=0)
    remote_merged_chunks_fetched: Long = msgspec.field(
        name="Merged Remote Chunks Fetched", default=0
    )
    local_merged_chunks_fetched: Long = msgspec.field(name="Merged Local Chunks Fetched", default=0)
    remote_merged_bytes_read: Long = msgspec.field(name="Merged Remote Bytes Read", default=0)
    local_merged_bytes_read: Long = msgspec.field(name="Merged Local Bytes Read", default=0)
    remote_merged_reqs_duration_ms: Long = msgspec.field(
        name="Merged Remote Requests Duration", default=0
    )


class ShuffleReadMetrics(msgspec.Struct, frozen=True, gc=False):
    """Shuffle-read task metrics."""

    remote_blocks_fetched: Long = msgspec.field(name="Remote Blocks Fetched", default=0)
    local_blocks_fetched: Long = msgspec.field(name="Local Blocks Fetched", default=0)
    fetch_wait_ms: Long = msgspec.field(name="Fetch Wait Time", default=0)
    remote_bytes_read: Long = msgspec.field(name="Remote Bytes Read", default=0)
    remote_bytes_read_to_disk: Long = msgspec.field(name="Remote Bytes Read To Disk", default=0)
    local_bytes_read: Long = msgspec.field(name="Local Bytes Read", default=0)
    records_read: Long = msgspec.field(name="Total Records Read", default=0)
    remote_reqs_duration_ms: Long = msgspec.field(name="Remote Requests Duration", default=0)
    """Time spent in remote fetch requests (Spark 3.4+)."""
    push: PushShuffleReadMetrics | None = msgspec.field(name="Push Based Shuffle", default=None)


class ShuffleWriteMetrics(msgspec.Struct, frozen=True, gc=False):
    """Shuffle-write task metrics; the write time is in nanoseconds."""

    bytes_written: Long = msgspec.field(name="Shuffle Bytes Written", default=0)
    write_time_ns: Long = msgspec.field(name="Shuffle Write Time", default=0)
    records_written: Long = msgspec.field(name="Shuffle Records Written", default=0)


class InputMetrics(msgspec.Struct, frozen=True, gc=False):
    """Input (scan) task metrics."""

    bytes_read: Long = msgspec.field(name="Bytes Read", default=0)
    records_read: Long = msgspec.field(name="Records Read", default=0)


class OutputMetrics(msgspec.Struct, frozen=True, gc=False):
    """Output (write) task metrics."""

    bytes_written: Long = msgspec.field(name="Bytes Written", default=0)
    records_written: Long = msgspec.field(name="Records Written", default=0)


class TaskMetrics(msgspec.Struct, frozen=True, gc=False):
    """A task's built-in metrics. Spark logs CPU times in ns and the other times in ms."""

    deserialize_ms: Long = msgspec.field(name="Executor Deserialize Time", default=0)
    deserialize_cpu_ns: Long = msgspec.field(name="Executor Deserialize CPU Time", default=0)
    run_ms: Long = msgspec.field(name="Executor Run Time", default=0)
    cpu_ns: Long = msgspec.field(name="Executor CPU Time", default=0)
    peak_execution_memory_bytes: Long = msgspec.field(name="Peak Execution Memory", default=0)
    result_size_bytes: Long = msgspec.field(name="Result Size", default=0)
    gc_ms: Long = msgspec.field(name="JVM GC Time", default=0)
    result_serialization_ms: Long = msgspec.field(name="Result Serialization Time", default=0)
    memory_bytes_spilled: Long = msgspec.field(name="Memory Bytes Spilled", default=0)
    disk_bytes_spilled: Long = msgspec.field(name="Disk Bytes Spilled", default=0)
    shuffle_read: ShuffleReadMetrics | None = msgspec.field(
        name="Shuffle Read Metrics", default=None
    )
    shuffle_write: ShuffleWriteMetrics | None = msgspec.field(
        name="Shuffle Write Metrics", default=None
    )
    input: InputMetrics | None = msgspec.field(name="Input Metrics", default=None)
    output: OutputMetrics | None = msgspec.field(name="Output Metrics", default=None)


class ExecutorMetricsPeaks(msgspec.Struct, frozen=True, gc=False):
    """The executor-level metrics the analysis uses from an `ExecutorMetrics` object.

    Spark fills a metric missing from the JSON with 0 (`JsonProtocol.executorMetricsFromJson`),
    so a present object always counts as "set" for Spark's peak tracking.
    """

    total_gc_ms: Long = msgspec.field(name="TotalGCTime", default=0)
    """JVM garbage-collection time since the executor started (cumulative, Spark 3.0+)."""


class TaskEndReason(msgspec.Struct, frozen=True, gc=False):
    """Why a task attempt ended (`TaskEndReason`)."""

    reason: str = msgspec.field(name="Reason", default="Success")
    class_name: str | None = msgspec.field(name="Class Name", default=None)
    description: str | None = msgspec.field(name="Description", default=None)
    message: str | None = msgspec.field(name="Message", default=None)
    kill_reason: str | None = msgspec.field(name="Kill Reason", default=None)
    loss_reason: str | None = msgspec.field(name="Loss Reason", default=None)
    executor_id: str | None = msgspec.field(name="Executor ID", default=None)

    def summary(self) -> str:
        """One line saying why the attempt ended, for reports."""
        if self.reason == "Success":
            return ""
        detail = self.description or self.message or self.kill_reason or self.loss_reason or ""
        head = self.class_name or self.reason
        lines = [line.strip() for line in detail.splitlines() if line.strip()]
        if not lines:
            return head
        # A Python worker's failure carries a traceback; its last line names the error.
        if any("Traceback (most recent call last)" in line for line in lines):
            named = [line for line in lines if not line.startswith("SQLSTATE")]
            return f"{head}: {named[-1] if named else lines[-1]}"
        return f"{head}: {lines[0]}"


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


class TaskStartInfo(msgspec.Struct, frozen=True, gc=False):
    """The part of a starting task's `TaskInfo` the replay uses."""

    task_id: Long = msgspec.field(name="Task ID")
    executor_id: str = msgspec.field(name="Executor ID", default="")


class TaskStart(msgspec.Struct, frozen=True, gc=False):
    """A task attempt was launched (Spark's History Server records a task only from here)."""

    stage_id: Long = msgspec.field(name="Stage ID")
    stage_attempt_id: Long = msgspec.field(name="Stage Attempt ID", default=0)
    info: TaskStartInfo | None = msgspec.field(name="Task Info", default=None)


class TaskEnd(msgspec.Struct, frozen=True, gc=False):
    """A task attempt ended, with its metrics and accumulator updates."""

    stage_id: Long = msgspec.field(name="Stage ID")
    stage_attempt_id: Long = msgspec.field(name="Stage Attempt ID", default=0)
    task_type: str = msgspec.field(name="Task Type", default="")
    reason: TaskEndReason = msgspec.field(name="Task End Reason", default_factory=TaskEndReason)
    info: TaskInfo | None = msgspec.field(name="Task Info", default=None)
    metrics: TaskMetrics | None = msgspec.field(name="Task Metrics", default=None)
    executor_metrics: ExecutorMetricsPeaks | None = msgspec.field(
        name="Task Executor Metrics", default=None
    )
    """The executor's metric peaks when the task ended (Spark 3.0+)."""


class SQLExecutionStart(msgspec.Struct, frozen=True, gc=False):
    """A SQL execution started, with its initial physical plan."""

    execution_id: Long = msgspec.field(name="executionId")
    root_execution_id: Long | None = msgspec.field(name="rootExecutionId", default=None)
    description: str = ""
    details: str = ""
    physical_plan_description: str = msgspec.field(name="physicalPlanDescription", default="")
    plan: SparkPlanInfo | None = msgspec.field(name="sparkPlanInfo", default=None)
    time_ms: Long = msgspec.field(name="time", default=0)
    modified_configs: dict[str, str] | None = msgspec.field(name="modifiedConfigs", default=None)


class SQLAdaptiveExecutionUpdate(msgspec.Struct, frozen=True, gc=False):
    """Adaptive query execution re-planned a running execution."""

    execution_id: Long = msgspec.field(name="executionId")
    physical_plan_description: str = msgspec.field(name="physicalPlanDescription", default="")
    plan: SparkPlanInfo | None = msgspec.field(name="sparkPlanInfo", default=None)


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


# ---------------------------------------------------------------------------------------------
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


class StreamingQueryTerminated(msgspec.Struct, frozen=True, gc=False):
    """A streaming query run ended: stopped (no exception) or failed (`QueryTerminatedEvent`)."""

    query_id: str = msgspec.field(name="id", default="")
    run_id: str = msgspec.field(name="runId", default="")
    exception: str | None = None
    error_class: str | None = msgspec.field(name="errorClassOnException", default=None)


Event = (
    LogStart
    | DatabricksMetadata
    | ApplicationStart
    | ApplicationEnd
    | EnvironmentUpdate
    | ExecutorAdded
    | ExecutorRemoved
    | BlockManagerAdded
    | ResourceProfileAdded
    | StageExecutorMetrics
    | ExecutorMetricsUpdate
    | JobStart
    | JobEnd
    | StageSubmitted
    | StageCompleted
    | TaskStart
    | TaskEnd
    | SQLExecutionStart
    | SQLAdaptiveExecutionUpdate
    | SQLAdaptiveSQLMetricUpdates
    | DriverAccumUpdates
    | SQLExecutionEnd
    | StreamingQueryStarted
    | StreamingQueryProgressEvent
    | StreamingQueryTerminated
)

EVENT_TYPES: dict[str, type[Any]] = {
    "SparkListenerLogStart": LogStart,
    "DBCEventLoggingListenerMetadata": DatabricksMetadata,
    "SparkListenerApplicationStart": ApplicationStart,
    "SparkListenerApplicationEnd": ApplicationEnd,
    "SparkListenerEnvironmentUpdate": EnvironmentUpdate,
    "SparkListenerExecutorAdded": ExecutorAdded,
    "SparkListenerExecutorRemoved": ExecutorRemoved,
    "SparkListenerBlockManagerAdded": BlockManagerAdded,
    "SparkListenerResourceProfileAdded": ResourceProfileAdded,
    "SparkListenerStageExecutorMetrics": StageExecutorMetrics,
    "SparkListenerExecutorMetricsUpdate": ExecutorMetricsUpdate,
    "SparkListenerJobStart": JobStart,
    "SparkListenerJobEnd": JobEnd,
    "SparkListenerStageSubmitted": StageSubmitted,
    "SparkListenerStageCompleted": StageCompleted,
    "SparkListenerTaskStart": TaskStart,
    "SparkListenerTaskEnd": TaskEnd,
    "SparkListenerSQLExecutionStart": SQLExecutionStart,
    "SparkListenerSQLAdaptiveExecutionUpdate": SQLAdaptiveExecutionUpdate,
    "SparkListenerSQLAdaptiveSQLMetricUpdates": SQLAdaptiveSQLMetricUpdates,
    "SparkListenerDriverAccumUpdates": DriverAccumUpdates,
    "SparkListenerSQLExecutionEnd": SQLExecutionEnd,
    "StreamingQueryListener$QueryStartedEvent": StreamingQueryStarted,
    "StreamingQueryListener$QueryProgressEvent": StreamingQueryProgressEvent,
    "StreamingQueryListener$QueryTerminatedEvent": StreamingQueryTerminated,
}

_DECODERS: dict[bytes, msgspec.json.Decoder[Any]] = {
    name.encode(): msgspec.json.Decoder(cls) for name, cls in EVENT_TYPES.items()
}
_ENVELOPE = msgspec.json.Decoder(dict[str, Any])
_PREFIX = b'{"Event":"'
_KEY = b'"Event'


class _Skipped(msgspec.Struct, gc=False):
    """No fields: decoding into it checks a whole line is valid JSON without building anything."""


_SKIP = msgspec.json.Decoder(_Skipped)

_DECODE_ERRORS = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)
"""What decoding a hostile line can raise (msgspec.ValidationError is a DecodeError)."""


@dataclass
class DecodeStats:
    """Counts of what the decoder kept and skipped."""

    n_events: int = 0
    unknown_event_types: Counter[str] = field(default_factory=Counter)
    """Event classes the analysis does not use (skipped, as Spark's replay does)."""
    unknown_fields: dict[str, set[str]] = field(default_factory=dict)
    """Top-level fields not declared here, per event type, from the first event of each type."""


def event_name(data: bytes) -> bytes | None:
    """Return the short event class name of a JSON line, or None if the line has no `Event`.

    When `Event` is the first key and the only one, the name is sliced from the raw bytes,
    escapes included (see `parsed_event_name`); other lines are parsed to find it. A line with
    several `Event` keys names the event of the last one, as for every other key: Spark's
    reader (Jackson) and the decoder here both keep a repeated key's last value.
    """
    if data.startswith(_PREFIX):
        end = data.find(b'"', 10)
        # A second `"Event"` key (its opening quote unescaped) needs the parser to say which
        # one is last; `"Event` is looked for rather than `"Event"`, which `bytes.find` finds
        # 3 times slower, and a string merely starting with `Event` is parsed too: rare, and
        # the parser's answer is the same.
        if end > 0 and data.find(_KEY, end) < 0:
            name = data[10:end]
            dot = name.rfind(b".")
            return name[dot + 1 :] if dot >= 0 else name
    return parsed_event_name(data)


def parsed_event_name(data: bytes) -> bytes | None:
    """Return the short event class name of a JSON line by parsing it (escapes resolved:
    `"SparkListener\\u0054askEnd"` names TaskEnd), or None if it has no string `Event`."""
    try:
        obj = _ENVELOPE.decode(data)
    except _DECODE_ERRORS:
        return None
    value = obj.get("Event")
    if not isinstance(value, str):
        return None
    return value.rsplit(".", 1)[-1].encode("utf-8", errors="replace")


def event_decoder(name: bytes) -> msgspec.json.Decoder[Any] | None:
    """The decoder of an event class the analysis uses, by short name (`event_name`); None for
    the others."""
    return _DECODERS.get(name)


def is_json_object(data: bytes) -> bool:
    """Whether `data` is one valid JSON object (checked without building it)."""
    try:
        _SKIP.decode(data)
    except _DECODE_ERRORS:
        return False
    return True


def _why(error: BaseException) -> str:
    """Say in a few words why msgspec could not decode a line."""
    if isinstance(error, RecursionError):
        return "it is nested more deeply than the decoder follows (several hundred levels)"
    if isinstance(error, UnicodeDecodeError):
        return f"it is not valid UTF-8 (byte {error.start})"
    return str(error)


def _field_names(cls: type[Any]) -> set[str]:
    info = msgspec.structs.fields(cls)
    return {f.encode_name for f in info} | {"Event"}


class EventReader:
    """Decode the lines of a log into typed events, tracking what was skipped.

    Every line is checked, also those of events the analysis does not use: a line that is not
    valid UTF-8 or not one JSON object (two events glued by a lost newline, a control character
    in an event name) is malformed, as it is to Spark's replay.
    """

    def __init__(self, source: LogSource, strictness: Strictness = Strictness.STRICT) -> None:
        self.source = source
        self.strictness = strictness
        self.read_stats = ReadStats()
        self.decode_stats = DecodeStats()
        self._seen_types: set[bytes] = set()
        self._skipped_names: dict[bytes, str] = {}
        self._first = True

    def __iter__(self) -> Iterator[Event]:
        decode = self.decode_line
        for line in iter_lines(self.source, self.read_stats, strictness=self.strictness):
            event = decode(line)
            if event is not None:
                yield event

    def decode_line(self, line: Line) -> Event | None:
        """Decode one line, in log order; None for a line that is skipped (an event class the
        analysis does not use, or a malformed line with LENIENT).

        Raises `NotAnEventLogError` if the first line is not an event, `MalformedLineError`
        for a malformed line with STRICT.
        """
        data = line.data
        if not data.isascii():
            # msgspec checks the UTF-8 of the strings it builds, not of those it skips.
            try:
                data.decode()
            except UnicodeDecodeError as error:
                self._malformed(line, _why(error))
                return None
        name = event_name(data)
        if name is None:
            if self._first:
                raise NotAnEventLogError(
                    "not a Spark event log (the first line is not a JSON event)",
                    path=line.path,
                    line=line.line_no,
                    hint="point at a file written with spark.eventLog.enabled=true",
                )
            try:
                _SKIP.decode(data)
            except _DECODE_ERRORS as error:
                self._malformed(line, _why(error))  # say what is wrong with the JSON
                return None
            self._malformed(line, 'not a JSON object with an "Event" field')
            return None
        self._first = False
        decoder = _DECODERS.get(name)
        if decoder is None and name.find(b"\\") >= 0:
            # An escape in the raw name: only a parser knows which event it names.
            name = parsed_event_name(data) or name
            decoder = _DECODERS.get(name)
        if decoder is None:
            try:
                _SKIP.decode(data)
            except _DECODE_ERRORS as error:
                self._malformed(line, _why(error))
                return None
            # Counted by raw name and decoded once per name: a log has a skipped
            # TaskStart for every task.
            skipped = self._skipped_names.get(name)
            if skipped is None:
                skipped = self._skipped_names[name] = name.decode(errors="replace")
            self.decode_stats.unknown_event_types[skipped] += 1
            return None
        try:
            event: Event = decoder.decode(data)
        except _DECODE_ERRORS as error:
            self._malformed(line, f"cannot decode {name.decode()}: {_why(error)}")
            return None
        if name not in self._seen_types:
            self._note_fields(name, data)
        self.decode_stats.n_events += 1
        return event

    def note_fields_once(self, name: bytes, data: bytes) -> None:
        """Note the undeclared fields of `data`, an event of class `name` decoded elsewhere (in
        log order), if it is the first of its class."""
        if name not in self._seen_types:
            self._note_fields(name, data)

    def _note_fields(self, name: bytes, data: bytes) -> None:
        self._seen_types.add(name)
        try:
            keys = set(_ENVELOPE.decode(data))
        except _DECODE_ERRORS:
            return
        extra = keys - _field_names(EVENT_TYPES[name.decode()])
        if extra:
            self.decode_stats.unknown_fields[name.decode()] = extra

    def _malformed(self, line: Line, why: str) -> None:
        if self.strictness is Strictness.STRICT:
            raise MalformedLineError(
                f"malformed event: {why}",
                path=line.path,
                line=line.line_no,
                hint="fix or remove the line, or pass --lenient to skip malformed lines",
            )
        self.read_stats.note_skipped(line.path, line.line_no)


def read_events(source: LogSource, strictness: Strictness = Strictness.STRICT) -> EventReader:
    """Return an iterable of the typed events of `source`, with read and decode statistics."""
    return EventReader(source, strictness)
