"""Task events as msgspec structs: a task attempt's start, and its end with its metrics.

Task ends are most of a log, so these structs declare only what the analysis uses: msgspec skips
the rest of each line without building it. Every id, count, size and time is a Java `long`.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1

Long = Annotated[int, msgspec.Meta(ge=LONG_MIN, le=LONG_MAX)]
"""A Java `long`, as Spark writes every id, count, size and time: a value outside its range cannot
come from Spark, and the line holding it is malformed (the columns downstream are int64)."""


class AccumulableUpdate(msgspec.Struct, frozen=True, gc=False):
    """A task's update of one accumulator: only the id and the update are decoded.

    Tasks carry one of these per accumulator they touched (internal metrics included); leaving
    out the name and the running value saves building two objects each on the hot path.
    """

    id: Long = msgspec.field(name="ID")
    update: Any = msgspec.field(name="Update", default=None)
    """A JSON number for internal.metrics.*, a string for SQL metrics (see `Accumulable`)."""


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
