"""Fold a stream of typed events into an `Application` plus its columnar task data."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from analyzer.eventlog import events as ev
from analyzer.model.application import (
    CONNECT_TAG_PREFIX,
    SYSTEM_PROPERTY_KEYS,
    Application,
    PlanVersion,
    SparkEnvironment,
    connect_tag,
)
from analyzer.model.plan import MetricSpec, PlanGraph
from analyzer.replay.live import (
    EMPTY_GRAPH,
    LiveExecution,
    LiveExecutor,
    LiveJob,
    LiveStage,
    cpu_amount,
    job_error,
    max_tasks,
    parse_java_long,
    scope_names,
)
from analyzer.replay.plan_graph import PlanParts, build_plan_graph
from analyzer.replay.sql_listener import FrozenExecution, SqlListener
from analyzer.replay.streaming import StreamingTracker
from analyzer.replay.task_columns import (
    ColumnSealer,
    TaskChunk,
    TaskColumns,
    TaskRecorder,
    TaskSegment,
)

_CHUNK_ROWS = 4096
"""Task rows recorded before they join the application's columns."""

EXECUTION_ID_KEY = "spark.sql.execution.id"
JOB_DESCRIPTION_KEY = "spark.job.description"
JOB_GROUP_KEY = "spark.jobGroup.id"
JOB_TAGS_KEY = "spark.job.tags"
CPUS_PER_TASK_KEY = "spark.task.cpus"


@dataclass
class BuiltApplication:
    """The domain model of one log, and the per-task data the aggregation layer needs."""

    application: Application
    tasks: TaskColumns
    frozen: dict[int, FrozenExecution]
    """Per execution: the values Spark's SQL tab aggregates."""
    stage_accumulators: dict[tuple[int, int], array[int]]
    """(stage id, attempt) → SQL accumulator ids its tasks or completion event updated, in
    ascending order (an array: a set of a dozen ids is four times its size)."""


class ApplicationBuilder:
    """Consume events one by one (in log order) and build the application at the end."""

    def __init__(self, seal: ColumnSealer | None = None) -> None:
        """`seal` keeps the task columns compact as they grow (see `TaskColumns`)."""
        self.app_name = ""
        self.app_id: str | None = None
        self.attempt_id: str | None = None
        self.spark_version = ""
        self.user = ""
        self.start_ms: int | None = None
        self.end_ms: int | None = None
        self.completed = False
        self.properties: dict[str, str] = {}
        self.executors: dict[str, LiveExecutor] = {}
        self.jobs: dict[int, LiveJob] = {}
        self.stages: dict[tuple[int, int], LiveStage] = {}
        self.executions: dict[int, LiveExecution] = {}
        self.tasks = TaskColumns(seal)
        self.recorder = TaskRecorder()
        """Task events since the last other event (see `apply_segment`)."""
        self.listener = SqlListener()
        self.plan_parts = PlanParts()
        self.stage_accumulators: dict[tuple[int, int], array[int]] = {}
        """(stage id, attempt) → SQL accumulator ids its tasks or completion event updated, so
        far, ascending (`BuiltApplication.stage_accumulators`)."""
        self.last_event_ms: int | None = None
        self.jvm = ev.JvmInfo()
        self.system_properties: dict[str, str] = {}
        self.live_tasks: dict[int, tuple[int, int]] = {}
        """Task id → (stage id, attempt) of the tasks started and not ended yet."""
        self.cpus_per_profile: dict[int, Decimal | None] = {}
        """Resource profile id → cores per task it asks for (None: not given or invalid)."""
        self.default_cpus_per_task = Decimal(1)
        self.streaming = StreamingTracker()
        self.cancelled_connect_tags: set[str] = set()
        """Job tags of the Spark Connect operations that were cancelled."""

    def _live_executor(self, executor_id: str, time_ms: int) -> LiveExecutor:
        """Return the registered executor with this id, registering it if needed (Spark's
        `getOrCreateExecutor`: a removed executor that comes back starts afresh)."""
        executor = self.executors.get(executor_id)
        if executor is None or not executor.live:
            executor = LiveExecutor(executor_id=executor_id, host="", n_cores=0, added_ms=time_ms)
            self.executors[executor_id] = executor
        return executor

    def _registered(self, executor_id: str) -> LiveExecutor | None:
        executor = self.executors.get(executor_id)
        return executor if executor is not None and executor.live else None

    def _stage(self, info: ev.StageInfo) -> LiveStage:
        key = (info.stage_id, info.attempt_id)
        stage = self.stages.get(key)
        if stage is None:
            stage = LiveStage(info.stage_id, info.attempt_id)
            self.stages[key] = stage
        # Names, call sites and tags repeat in every run of a query or micro-batch: each held
        # once (`PlanParts.text`).
        text = self.plan_parts.text
        stage.name = text(info.name or stage.name)
        stage.n_tasks = info.n_tasks
        stage.parent_ids = tuple(info.parent_ids)
        stage.resource_profile_id = info.resource_profile_id
        if info.submission_ms is not None:
            stage.submission_ms = info.submission_ms
        if info.completion_ms is not None:
            stage.completion_ms = info.completion_ms
        if info.failure_reason is not None:
            stage.failure_reason = info.failure_reason
        if not stage.scope_names:
            stage.scope_names = tuple(map(text, scope_names(info)))
        return stage

    def _add_plan(
        self, ex: LiveExecution, description: str, plan: ev.LoggedPlan | None
    ) -> PlanGraph:
        specs: tuple[MetricSpec, ...] = ()
        if plan is None:
            graph = EMPTY_GRAPH
        else:
            graph, specs = build_plan_graph(plan, self.plan_parts)
        ex.plans.append(
            PlanVersion.typed(
                index=len(ex.plans),
                physical_plan_description=self.plan_parts.text(description),
                graph=graph,
            )
        )
        if specs:
            ids = graph.all_accumulator_ids
            known = ex.metric_dict()
            for acc_id, spec in zip(ids, specs, strict=True):
                if acc_id not in known:
                    known[acc_id] = spec
            self.listener.add_metrics(
                ex.execution_id, zip(ids, [m.metric_type for m in specs], strict=True)
            )
        return graph

    def _span_from_jobs(self, ex: LiveExecution) -> None:
        """Time an execution the log names only in its jobs' properties (Spark 1.x writes no
        SQL execution events; a log may also lose them) by its jobs: from the first one's
        submission to the last one's completion, once every one of them has one."""
        jobs = [self.jobs[j] for j in ex.job_ids if j in self.jobs]
        starts = [j.submission_ms for j in jobs if j.submission_ms is not None]
        if not starts:
            return
        ex.start_ms = min(starts)
        ends = [j.completion_ms for j in jobs]
        if all(t is not None for t in ends):
            ex.end_ms = max(t for t in ends if t is not None)

    def _execution(self, execution_id: int) -> LiveExecution:
        ex = self.executions.get(execution_id)
        if ex is None:
            ex = LiveExecution(execution_id, execution_id)
            self.executions[execution_id] = ex
        return ex

    def feed(self, event: ev.Event) -> None:
        """Apply one event (events this replay does not use are ignored).

        Task events are recorded and applied in bulk before the next other event (or at the
        end): nothing they depend on changes in between (`task_columns.TaskSegment`).
        """
        kind = type(event)
        if kind is ev.TaskEnd:
            if event.info is not None:  # type: ignore[union-attr]
                self.recorder.end(event)  # type: ignore[arg-type]
            return
        if kind is ev.TaskStart:
            if event.info is not None:  # type: ignore[union-attr]
                self.recorder.start(event)  # type: ignore[arg-type]
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            self._apply_recorded()
            handler(self, event)

    def _apply_recorded(self, final: bool = False) -> None:
        """Apply the task events recorded since the last other event."""
        recorder = self.recorder
        segment = recorder.close_segment()
        if not segment.is_empty:
            self.apply_segment(segment, self.tasks.n_rows)
        if final or recorder.n_rows >= _CHUNK_ROWS:
            self.add_chunk(recorder.take_chunk())

    def flush_tasks(self) -> None:
        """Apply and append the task events fed so far, before segments and chunks recorded
        elsewhere (`apply_segment`, `add_chunk`) continue the log."""
        self._apply_recorded(final=True)

    def apply_segment(self, segment: TaskSegment, row_offset: int) -> None:
        """Apply the task events between two other events; its rows start at `row_offset`."""
        live = self.live_tasks
        tasks = self.tasks
        for row, task_id in segment.unresolved_ends:
            if live.pop(task_id, None) is None:
                tasks.exclude_row(row_offset + row)
        for row in segment.excluded_rows:
            tasks.exclude_row(row_offset + row)
        if live:
            for task_id in segment.ended & live.keys():
                del live[task_id]
        live.update(segment.started)
        executors = self.executors
        for executor_id, n_started in segment.executor_starts.items():
            executor = executors.get(executor_id)
            if executor is not None and executor.live:
                executor.n_started += n_started
                executor.n_active += n_started
        for executor_id, totals in segment.executor_ends.items():
            executor = executors.get(executor_id)
            if executor is not None and executor.live:
                executor.count_task_ends(totals)
        for key, (n_attempts, n_failed, n_killed, n_speculative) in segment.stage_counts.items():
            stage = self.stages.get(key)
            if stage is not None:
                stage.n_task_attempts += n_attempts
                stage.n_failed += n_failed
                stage.n_killed += n_killed
                stage.n_speculative += n_speculative
        self.listener.task_segment(segment.sql)

    def add_chunk(self, chunk: TaskChunk) -> None:
        """Append a chunk of task rows (after its segments were applied)."""
        self.tasks.extend(chunk)
        for key, ids in chunk.stage_sql_ids.items():
            self._add_stage_accumulators(key, ids)
        if chunk.max_finish_ms is not None:
            self.last_event_ms = max(self.last_event_ms or 0, chunk.max_finish_ms)

    def _on_stage_submitted(self, event: ev.StageSubmitted) -> None:
        stage = self._stage(event.info)
        stage.submitted = True
        self.listener.stage_submitted(event.info.stage_id, event.info.attempt_id)

    def _on_stage_completed(self, event: ev.StageCompleted) -> None:
        stage = self._stage(event.info)
        stage.completed = True
        key = (event.info.stage_id, event.info.attempt_id)
        self._add_stage_accumulators(
            key, {acc.id for acc in event.info.accumulables if acc.metadata == "sql"}
        )

    def _add_stage_accumulators(self, key: tuple[int, int], ids: set[int]) -> None:
        """Note SQL accumulators a stage attempt updated (the attempt is noted even if none)."""
        known = self.stage_accumulators.get(key)
        if known is not None:
            if ids.issubset(known):
                return
            ids = ids.union(known)
        self.stage_accumulators[key] = array("q", sorted(ids))

    def _on_job_start(self, event: ev.JobStart) -> None:
        props = event.properties or {}
        exec_raw = props.get(EXECUTION_ID_KEY)
        # Spark's SQL listener parses the property with `toLong`; when that throws, the job is
        # not tracked as part of any SQL execution.
        execution_id = parse_java_long(exec_raw) if exec_raw is not None else None
        last_stage = max(event.stage_infos, key=lambda s: s.stage_id, default=None)
        tags = props.get(JOB_TAGS_KEY)
        description = props.get(JOB_DESCRIPTION_KEY)
        job_group = props.get(JOB_GROUP_KEY)
        text = self.plan_parts.text
        self.jobs[event.job_id] = LiveJob(
            job_id=event.job_id,
            execution_id=execution_id,
            submission_ms=event.submission_ms,
            stage_ids=tuple(event.stage_ids),
            name=text(last_stage.name) if last_stage is not None else "",
            description=text(description) if description is not None else None,
            job_group=text(job_group) if job_group is not None else None,
            job_tags=tuple(sorted({text(t) for t in tags.split(",") if t})) if tags else (),
        )
        for stage_info in event.stage_infos:
            stage = self._stage(stage_info)
            stage.job_ids.append(event.job_id)
        self.streaming.note_time(event.submission_ms)
        self.streaming.job_started(execution_id, props)
        if execution_id is not None:
            self._execution(execution_id).job_ids.append(event.job_id)
            self.listener.job_start(
                execution_id,
                event.job_id,
                list(event.stage_ids),
                [(s.stage_id, s.n_tasks) for s in event.stage_infos],
            )

    def _on_job_end(self, event: ev.JobEnd) -> None:
        job = self.jobs.get(event.job_id)
        succeeded = event.result.result == "JobSucceeded"
        self.streaming.note_time(event.completion_ms)
        if job is not None:
            job.completion_ms = event.completion_ms
            job.status = "SUCCEEDED" if succeeded else "FAILED"
            job.error = job_error(event.result)
        self.listener.job_end(event.job_id, succeeded)

    def _on_execution_start(self, event: ev.SQLExecutionStart) -> None:
        ex = self._execution(event.execution_id)
        ex.root_execution_id = (
            event.root_execution_id if event.root_execution_id is not None else event.execution_id
        )
        ex.description = self.plan_parts.text(event.description)
        ex.details = self.plan_parts.text(event.details)
        ex.start_ms = event.time_ms
        self.streaming.note_time(event.time_ms)
        ex.modified_configs = self.plan_parts.configs(event.modified_configs)
        ex.connect_tag = connect_tag(event.job_tags)
        self._add_plan(ex, event.physical_plan_description, event.plan)

    def _on_adaptive_update(self, event: ev.SQLAdaptiveExecutionUpdate) -> None:
        ex = self._execution(event.execution_id)
        self._add_plan(ex, event.physical_plan_description, event.plan)

    def _on_adaptive_metrics(self, event: ev.SQLAdaptiveSQLMetricUpdates) -> None:
        ex = self._execution(event.execution_id)
        spec = self.plan_parts.spec
        known = ex.metric_dict()
        for m in event.metrics:
            if m.accumulator_id not in known:
                known[m.accumulator_id] = spec(m.name, m.metric_type)
        self.listener.add_metrics(
            event.execution_id, [(m.accumulator_id, m.metric_type) for m in event.metrics]
        )

    def _on_driver_updates(self, event: ev.DriverAccumUpdates) -> None:
        self.listener.driver_updates(event.execution_id, [(a, v) for a, v in event.updates])

    def _on_execution_end(self, event: ev.SQLExecutionEnd) -> None:
        ex = self.executions.get(event.execution_id)
        if ex is None:
            # No start and no job named it: Spark's SQL listener ignores such an end, and so
            # does the replay (a stray line makes no execution of its own).
            return
        ex.end_ms = event.time_ms
        self.streaming.note_time(event.time_ms)
        ex.ended = True
        ex.error_message = event.error_message or None
        self.listener.execution_end(event.execution_id)
        ex.compact_metrics(self.plan_parts.catalog)

    def _on_executor_added(self, event: ev.ExecutorAdded) -> None:
        executor = self._live_executor(event.executor_id, event.timestamp_ms)
        info = event.info
        executor.host = info.host
        executor.n_cores = info.total_cores
        executor.resource_profile_id = info.resource_profile_id
        cpus = self.cpus_per_profile.get(info.resource_profile_id)
        executor.max_tasks = max_tasks(
            info.total_cores, cpus if cpus is not None else self.default_cpus_per_task
        )

    def _on_block_manager_added(self, event: ev.BlockManagerAdded) -> None:
        bm = event.block_manager
        executor = self._live_executor(bm.executor_id, event.timestamp_ms)
        executor.host_port = f"{bm.host}:{bm.port}"
        executor.host = executor.host or bm.host
        executor.max_memory_bytes = event.max_memory_bytes

    def _on_executor_removed(self, event: ev.ExecutorRemoved) -> None:
        executor = self._registered(event.executor_id)
        if executor is not None:
            executor.live = False
            executor.removed_ms = event.timestamp_ms
            executor.removed_reason = event.reason

    def _on_resource_profile(self, event: ev.ResourceProfileAdded) -> None:
        cpus = event.cpus_per_task
        # Spark reads the amount through Double.toString; repr gives the same decimal value.
        self.cpus_per_profile[event.profile_id] = None if cpus is None else cpu_amount(repr(cpus))

    def _on_stage_executor_metrics(self, event: ev.StageExecutorMetrics) -> None:
        executor = self._registered(event.executor_id)
        if executor is not None:
            executor.note_peak(event.metrics)

    def _on_executor_metrics_update(self, event: ev.ExecutorMetricsUpdate) -> None:
        executor = self._registered(event.executor_id)
        if executor is not None:
            for update in event.stage_updates:
                executor.note_peak(update.metrics)

    def _on_application_start(self, event: ev.ApplicationStart) -> None:
        self.app_name = event.app_name
        self.app_id = event.app_id
        self.attempt_id = event.attempt_id
        self.start_ms = event.timestamp_ms
        self.user = event.user

    def _on_application_end(self, event: ev.ApplicationEnd) -> None:
        self.end_ms = event.timestamp_ms
        self.completed = True

    def _on_log_start(self, event: ev.LogStart | ev.DatabricksMetadata) -> None:
        self.spark_version = event.spark_version or self.spark_version

    def _on_environment(self, event: ev.EnvironmentUpdate) -> None:
        self.properties = event.properties()
        self.jvm = event.jvm()
        system = event.system()
        self.system_properties = {k: system[k] for k in SYSTEM_PROPERTY_KEYS if k in system}
        cpus = self.properties.get(CPUS_PER_TASK_KEY)
        if cpus is not None:
            amount = cpu_amount(cpus)
            if amount is not None:
                self.default_cpus_per_task = amount

    def _on_streaming_started(self, event: ev.StreamingQueryStarted) -> None:
        self.streaming.started(event)

    def _on_streaming_progress(self, event: ev.StreamingQueryProgressEvent) -> None:
        self.streaming.progress(event)

    def _on_streaming_idle(self, event: ev.StreamingQueryIdle) -> None:
        self.streaming.idle(event)

    def _on_streaming_terminated(self, event: ev.StreamingQueryTerminated) -> None:
        self.streaming.terminated(event)

    def _on_connect_cancelled(self, event: ev.ConnectOperationCanceled) -> None:
        tag = event.job_tag
        if isinstance(tag, str) and tag.startswith(CONNECT_TAG_PREFIX):
            self.cancelled_connect_tags.add(tag)

    def finish(self) -> BuiltApplication:
        """Close the replay (as Spark does at the end of a log) and build the frozen model.

        An interval whose end comes before its start (an application, SQL execution, job,
        stage attempt or executor: clocks that went back, or a hand-edited log) is clamped to
        zero length, its end moved to its start, and counted in
        `Application.inverted_intervals`, so no duration or share is negative.
        """
        self._apply_recorded(final=True)
        inverted: Counter[str] = Counter()

        def end_of(kind: str, start_ms: int | None, end_ms: int | None) -> int | None:
            if start_ms is not None and end_ms is not None and end_ms < start_ms:
                inverted[kind] += 1
                return start_ms
            return end_ms

        self.listener.finish()
        unfinished = Counter(self.live_tasks.values())
        for j in self.jobs.values():
            j.completion_ms = end_of("job", j.submission_ms, j.completion_ms)
        for s in self.stages.values():
            s.completion_ms = end_of("stage attempt", s.submission_ms, s.completion_ms)
        for ex in self.executions.values():
            ex.end_ms = end_of("SQL execution", ex.start_ms, ex.end_ms)
        for e in self.executors.values():
            e.removed_ms = end_of("executor", e.added_ms, e.removed_ms)
        for ex in self.executions.values():
            if ex.start_ms is None and not ex.plans:
                self._span_from_jobs(ex)
        jobs = tuple(j.to_model() for _, j in sorted(self.jobs.items()))
        stages = tuple(s.to_model(unfinished.get(key, 0)) for key, s in sorted(self.stages.items()))
        job_status = {j.job_id: j.status for j in jobs}
        executions = tuple(
            ex.to_model(
                job_status,
                self.listener.stage_order.get(execution_id, []),
                ex.catalog if ex.catalog is not None else self.plan_parts.catalog(ex.metrics),
            )
            for execution_id, ex in sorted(self.executions.items())
        )
        executors = tuple(e.to_model() for e in self.executors.values())
        spark_properties = tuple(sorted(self.properties.items()))
        application = Application(
            app_id=self.app_id,
            attempt_id=self.attempt_id,
            name=self.app_name,
            spark_version=self.spark_version,
            user=self.user,
            start_ms=self.start_ms,
            end_ms=end_of(
                "application",
                self.start_ms,
                self.end_ms if self.end_ms is not None else self.last_event_ms,
            ),
            completed=self.completed,
            executors=executors,
            jobs=jobs,
            stages=stages,
            executions=executions,
            streaming=self.streaming.build({e: x.description for e, x in self.executions.items()}),
            cancelled_connect_execution_ids=tuple(
                e
                for e, x in sorted(self.executions.items())
                if x.connect_tag is not None and x.connect_tag in self.cancelled_connect_tags
            ),
            spark_properties=spark_properties,
            environment=SparkEnvironment(
                java_version=self.jvm.java_version,
                java_home=self.jvm.java_home,
                scala_version=self.jvm.scala_version,
                spark_properties=spark_properties,
                system_properties=tuple(sorted(self.system_properties.items())),
            ),
            inverted_intervals=tuple(sorted(inverted.items())),
        )
        return BuiltApplication(
            application=application,
            tasks=self.tasks,
            frozen=self.listener.frozen,
            stage_accumulators=self.stage_accumulators,
        )


_HANDLERS: dict[type[Any], Callable[[ApplicationBuilder, Any], None]] = {
    ev.StageSubmitted: ApplicationBuilder._on_stage_submitted,
    ev.StageCompleted: ApplicationBuilder._on_stage_completed,
    ev.JobStart: ApplicationBuilder._on_job_start,
    ev.JobEnd: ApplicationBuilder._on_job_end,
    ev.SQLExecutionStart: ApplicationBuilder._on_execution_start,
    ev.SQLAdaptiveExecutionUpdate: ApplicationBuilder._on_adaptive_update,
    ev.SQLAdaptiveSQLMetricUpdates: ApplicationBuilder._on_adaptive_metrics,
    ev.DriverAccumUpdates: ApplicationBuilder._on_driver_updates,
    ev.SQLExecutionEnd: ApplicationBuilder._on_execution_end,
    ev.ExecutorAdded: ApplicationBuilder._on_executor_added,
    ev.ExecutorRemoved: ApplicationBuilder._on_executor_removed,
    ev.BlockManagerAdded: ApplicationBuilder._on_block_manager_added,
    ev.ResourceProfileAdded: ApplicationBuilder._on_resource_profile,
    ev.StageExecutorMetrics: ApplicationBuilder._on_stage_executor_metrics,
    ev.ExecutorMetricsUpdate: ApplicationBuilder._on_executor_metrics_update,
    ev.ApplicationStart: ApplicationBuilder._on_application_start,
    ev.ApplicationEnd: ApplicationBuilder._on_application_end,
    ev.LogStart: ApplicationBuilder._on_log_start,
    ev.DatabricksMetadata: ApplicationBuilder._on_log_start,
    ev.EnvironmentUpdate: ApplicationBuilder._on_environment,
    ev.StreamingQueryStarted: ApplicationBuilder._on_streaming_started,
    ev.StreamingQueryProgressEvent: ApplicationBuilder._on_streaming_progress,
    ev.StreamingQueryIdle: ApplicationBuilder._on_streaming_idle,
    ev.StreamingQueryTerminated: ApplicationBuilder._on_streaming_terminated,
    ev.ConnectOperationCanceled: ApplicationBuilder._on_connect_cancelled,
}
"""Event class → the builder method that applies it (task events are recorded in bulk, see
`ApplicationBuilder.feed`)."""
