"""Fold a stream of typed events into an `Application` plus its columnar task data."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from analyzer.eventlog import events as ev
from analyzer.model.application import (
    Application,
    Execution,
    Executor,
    Job,
    PlanVersion,
    StageAttempt,
)
from analyzer.model.plan import MetricDef, PlanGraph
from analyzer.replay.plan_graph import build_plan_graph
from analyzer.replay.sql_listener import FrozenMetric, SqlListener
from analyzer.replay.task_columns import TaskColumns

EXECUTION_ID_KEY = "spark.sql.execution.id"

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
class BuiltApplication:
    """The domain model of one log, and the per-task data the aggregation layer needs."""

    application: Application
    tasks: TaskColumns
    frozen: dict[int, dict[int, FrozenMetric]]
    """Per execution, per accumulator id: the values Spark's SQL tab aggregates."""
    stage_accumulators: dict[tuple[int, int], set[int]]
    """(stage id, attempt) → SQL accumulator ids its tasks or completion event updated."""


@dataclass
class _Exec:
    execution_id: int
    root_execution_id: int
    description: str = ""
    details: str = ""
    start_ms: int | None = None
    end_ms: int | None = None
    error_message: str | None = None
    ended: bool = False
    plans: list[PlanVersion] = field(default_factory=list)
    metrics: dict[int, MetricDef] = field(default_factory=dict)
    job_ids: list[int] = field(default_factory=list)
    modified_configs: dict[str, str] = field(default_factory=dict)


@dataclass
class _Job:
    """A job as the replay knows it so far."""

    job_id: int
    execution_id: int | None
    submission_ms: int | None
    stage_ids: tuple[int, ...]
    completion_ms: int | None = None
    status: str = "RUNNING"
    """`RUNNING` until its end event, then `SUCCEEDED` or `FAILED`."""
    error: str | None = None


@dataclass
class _Executor:
    """An executor (or the driver) as the replay knows it so far."""

    executor_id: str
    host: str
    n_cores: int
    added_ms: int | None
    removed_ms: int | None = None
    removed_reason: str | None = None


@dataclass
class _Stage:
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


def _scope_names(info: ev.StageInfo) -> tuple[str, ...]:
    import json

    names: list[str] = []
    for rdd in info.rdd_info:
        if rdd.scope:
            try:
                scope = json.loads(rdd.scope)
            except ValueError:
                continue
            name = scope.get("name") if isinstance(scope, dict) else None
            if isinstance(name, str) and name not in names:
                names.append(name.strip())
    return tuple(names)


def _job_error(result: ev.JobResult) -> str | None:
    if result.result == "JobSucceeded":
        return None
    exc: dict[str, Any] = result.exception or {}
    message = exc.get("Message")
    return str(message) if message else result.result


class ApplicationBuilder:
    """Consume events one by one (in log order) and build the application at the end."""

    def __init__(self) -> None:
        self.app_name = ""
        self.app_id: str | None = None
        self.attempt_id: str | None = None
        self.spark_version = ""
        self.user = ""
        self.start_ms: int | None = None
        self.end_ms: int | None = None
        self.completed = False
        self.properties: dict[str, str] = {}
        self.executors: dict[str, _Executor] = {}
        self.jobs: dict[int, _Job] = {}
        self.stages: dict[tuple[int, int], _Stage] = {}
        self.executions: dict[int, _Exec] = {}
        self.tasks = TaskColumns()
        self.listener = SqlListener()
        self.stage_accumulators: dict[tuple[int, int], set[int]] = {}
        self.last_event_ms: int | None = None

    def _stage(self, info: ev.StageInfo) -> _Stage:
        key = (info.stage_id, info.attempt_id)
        stage = self.stages.get(key)
        if stage is None:
            stage = _Stage(info.stage_id, info.attempt_id)
            self.stages[key] = stage
        stage.name = info.name or stage.name
        stage.n_tasks = info.n_tasks
        stage.parent_ids = tuple(info.parent_ids)
        if info.submission_ms is not None:
            stage.submission_ms = info.submission_ms
        if info.completion_ms is not None:
            stage.completion_ms = info.completion_ms
        if info.failure_reason is not None:
            stage.failure_reason = info.failure_reason
        if not stage.scope_names:
            stage.scope_names = _scope_names(info)
        return stage

    def _add_plan(self, ex: _Exec, description: str, plan: ev.SparkPlanInfo | None) -> PlanGraph:
        graph = build_plan_graph(plan) if plan is not None else PlanGraph(nodes=(), edges=())
        ex.plans.append(
            PlanVersion(index=len(ex.plans), physical_plan_description=description, graph=graph)
        )
        new_metrics: list[tuple[int, str]] = []
        for node in graph.nodes:
            for m in node.metrics:
                if m.accumulator_id not in ex.metrics:
                    ex.metrics[m.accumulator_id] = m
                new_metrics.append((m.accumulator_id, m.metric_type))
        self.listener.add_metrics(ex.execution_id, new_metrics)
        return graph

    def _execution(self, execution_id: int) -> _Exec:
        ex = self.executions.get(execution_id)
        if ex is None:
            ex = _Exec(execution_id, execution_id)
            self.executions[execution_id] = ex
        return ex

    def feed(self, event: ev.Event) -> None:
        """Apply one event (events this replay does not use are ignored)."""
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _on_task_end(self, event: ev.TaskEnd) -> None:
        info = event.info
        if info is None:
            return
        self.tasks.append(event)
        stage = self.stages.get((event.stage_id, event.stage_attempt_id))
        if stage is not None:
            stage.n_task_attempts += 1
            stage.n_failed += int(info.failed)
            stage.n_killed += int(info.killed)
            stage.n_speculative += int(info.speculative)
        self.listener.task_end(
            event.stage_id,
            event.stage_attempt_id,
            info.task_id,
            info.index,
            info.successful,
            info.accumulables,
        )
        if info.finish_ms:
            self.last_event_ms = max(self.last_event_ms or 0, info.finish_ms)

    def _on_stage_submitted(self, event: ev.StageSubmitted) -> None:
        stage = self._stage(event.info)
        stage.submitted = True
        self.listener.stage_submitted(event.info.stage_id, event.info.attempt_id)

    def _on_stage_completed(self, event: ev.StageCompleted) -> None:
        stage = self._stage(event.info)
        stage.completed = True
        key = (event.info.stage_id, event.info.attempt_id)
        ids = self.stage_accumulators.setdefault(key, set())
        for acc in event.info.accumulables:
            if acc.metadata == "sql":
                ids.add(acc.id)

    def _on_job_start(self, event: ev.JobStart) -> None:
        props = event.properties or {}
        exec_raw = props.get(EXECUTION_ID_KEY)
        # Spark's SQL listener parses the property with `toLong`; when that throws, the job is
        # not tracked as part of any SQL execution.
        execution_id = parse_java_long(exec_raw) if exec_raw is not None else None
        self.jobs[event.job_id] = _Job(
            job_id=event.job_id,
            execution_id=execution_id,
            submission_ms=event.submission_ms,
            stage_ids=tuple(event.stage_ids),
        )
        for stage_info in event.stage_infos:
            stage = self._stage(stage_info)
            stage.job_ids.append(event.job_id)
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
        if job is not None:
            job.completion_ms = event.completion_ms
            job.status = "SUCCEEDED" if succeeded else "FAILED"
            job.error = _job_error(event.result)
        self.listener.job_end(event.job_id, succeeded)

    def _on_execution_start(self, event: ev.SQLExecutionStart) -> None:
        ex = self._execution(event.execution_id)
        ex.root_execution_id = (
            event.root_execution_id if event.root_execution_id is not None else event.execution_id
        )
        ex.description = event.description
        ex.details = event.details
        ex.start_ms = event.time_ms
        ex.modified_configs = dict(event.modified_configs or {})
        self._add_plan(ex, event.physical_plan_description, event.plan)

    def _on_adaptive_update(self, event: ev.SQLAdaptiveExecutionUpdate) -> None:
        ex = self._execution(event.execution_id)
        self._add_plan(ex, event.physical_plan_description, event.plan)

    def _on_adaptive_metrics(self, event: ev.SQLAdaptiveSQLMetricUpdates) -> None:
        ex = self._execution(event.execution_id)
        pairs = []
        for m in event.metrics:
            if m.accumulator_id not in ex.metrics:
                ex.metrics[m.accumulator_id] = MetricDef(
                    name=m.name.strip(),
                    accumulator_id=m.accumulator_id,
                    metric_type=m.metric_type,
                )
            pairs.append((m.accumulator_id, m.metric_type))
        self.listener.add_metrics(event.execution_id, pairs)

    def _on_driver_updates(self, event: ev.DriverAccumUpdates) -> None:
        self.listener.driver_updates(event.execution_id, [(a, v) for a, v in event.updates])

    def _on_execution_end(self, event: ev.SQLExecutionEnd) -> None:
        ex = self._execution(event.execution_id)
        ex.end_ms = event.time_ms
        ex.ended = True
        ex.error_message = event.error_message or None
        self.listener.execution_end(event.execution_id)

    def _on_executor_added(self, event: ev.ExecutorAdded) -> None:
        self.executors[event.executor_id] = _Executor(
            executor_id=event.executor_id,
            host=event.info.host,
            n_cores=event.info.total_cores,
            added_ms=event.timestamp_ms,
        )

    def _on_executor_removed(self, event: ev.ExecutorRemoved) -> None:
        executor = self.executors.get(event.executor_id)
        if executor is not None:
            executor.removed_ms = event.timestamp_ms
            executor.removed_reason = event.reason

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

    def finish(self) -> BuiltApplication:
        """Close the replay (as Spark does at the end of a log) and build the frozen model."""
        self.listener.finish()
        for key, ids in self.tasks.stage_sql_accumulators.items():
            self.stage_accumulators.setdefault(key, set()).update(ids)
        jobs = tuple(
            Job(
                job_id=job_id,
                execution_id=j.execution_id,
                submission_ms=j.submission_ms,
                completion_ms=j.completion_ms,
                status=j.status,
                stage_ids=j.stage_ids,
                error_message=j.error,
            )
            for job_id, j in sorted(self.jobs.items())
        )
        job_by_id = {j.job_id: j for j in jobs}
        stages = tuple(
            StageAttempt(
                stage_id=s.stage_id,
                attempt_id=s.attempt_id,
                name=s.name,
                n_tasks=s.n_tasks,
                submission_ms=s.submission_ms,
                completion_ms=s.completion_ms,
                status=(
                    "FAILED"
                    if s.failure_reason
                    else "COMPLETE"
                    if s.completed
                    else "ACTIVE"
                    if s.submitted
                    else "SKIPPED"
                ),
                failure_reason=s.failure_reason,
                parent_ids=s.parent_ids,
                job_ids=tuple(s.job_ids),
                rdd_scope_names=s.scope_names,
                n_task_attempts=s.n_task_attempts,
                n_failed_attempts=s.n_failed,
                n_killed_attempts=s.n_killed,
                n_speculative_attempts=s.n_speculative,
            )
            for _, s in sorted(self.stages.items())
        )
        executions = []
        for execution_id, ex in sorted(self.executions.items()):
            statuses = [job_by_id[j].status for j in ex.job_ids if j in job_by_id]
            if all(s == "SUCCEEDED" for s in statuses) and not (ex.ended and ex.error_message):
                status = "COMPLETED"
            elif any(s == "FAILED" for s in statuses) or (ex.ended and ex.error_message):
                status = "FAILED"
            else:
                status = "RUNNING"
            stage_ids = self.listener.stage_order.get(execution_id, [])
            plans = tuple(ex.plans) or (
                PlanVersion(
                    index=0, physical_plan_description="", graph=PlanGraph(nodes=(), edges=())
                ),
            )
            executions.append(
                Execution(
                    execution_id=execution_id,
                    root_execution_id=ex.root_execution_id,
                    description=ex.description,
                    details=ex.details,
                    start_ms=ex.start_ms,
                    end_ms=ex.end_ms,
                    error_message=ex.error_message,
                    status=status,
                    job_ids=tuple(ex.job_ids),
                    stage_ids=tuple(stage_ids),
                    plans=plans,
                    metric_catalog=tuple(ex.metrics.values()),
                    modified_configs=tuple(sorted(ex.modified_configs.items())),
                    ended=ex.ended,
                )
            )
        executors = tuple(
            Executor(
                executor_id=e.executor_id,
                host=e.host,
                n_cores=e.n_cores,
                added_ms=e.added_ms,
                removed_ms=e.removed_ms,
                removed_reason=e.removed_reason,
            )
            for e in self.executors.values()
        )
        application = Application(
            app_id=self.app_id,
            attempt_id=self.attempt_id,
            name=self.app_name,
            spark_version=self.spark_version,
            user=self.user,
            start_ms=self.start_ms,
            end_ms=self.end_ms if self.end_ms is not None else self.last_event_ms,
            completed=self.completed,
            executors=executors,
            jobs=jobs,
            stages=stages,
            executions=tuple(executions),
            spark_properties=tuple(sorted(self.properties.items())),
        )
        return BuiltApplication(
            application=application,
            tasks=self.tasks,
            frozen=self.listener.frozen,
            stage_accumulators=self.stage_accumulators,
        )


def build_application(events: Iterable[ev.Event]) -> BuiltApplication:
    """Fold every event of a log, in order, into the domain model and task columns."""
    builder = ApplicationBuilder()
    for event in events:
        builder.feed(event)
    return builder.finish()


_HANDLERS: dict[type[Any], Callable[[ApplicationBuilder, Any], None]] = {
    ev.TaskEnd: ApplicationBuilder._on_task_end,
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
    ev.ApplicationStart: ApplicationBuilder._on_application_start,
    ev.ApplicationEnd: ApplicationBuilder._on_application_end,
    ev.LogStart: ApplicationBuilder._on_log_start,
    ev.DatabricksMetadata: ApplicationBuilder._on_log_start,
    ev.EnvironmentUpdate: ApplicationBuilder._on_environment,
}
"""Event class → the builder method that applies it (TaskEnd first: it is most of a log)."""
