"""Frozen domain types for an application: executors, jobs, stages, SQL executions."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from analyzer.model.plan import MetricDef, PlanGraph


class Executor(BaseModel):
    """An executor (or the driver) and its lifetime."""

    model_config = ConfigDict(frozen=True)

    executor_id: str
    host: str
    n_cores: int
    added_ms: int | None = None
    removed_ms: int | None = None
    removed_reason: str | None = None


class Job(BaseModel):
    """A Spark job and the SQL execution it belongs to, if any."""

    model_config = ConfigDict(frozen=True)

    job_id: int
    execution_id: int | None
    submission_ms: int | None
    completion_ms: int | None
    status: str
    """`SUCCEEDED`, `FAILED` or `RUNNING` (no end event)."""
    stage_ids: tuple[int, ...]
    error_message: str | None = None


class StageAttempt(BaseModel):
    """One attempt of a stage, with task counts derived from its task-end events."""

    model_config = ConfigDict(frozen=True)

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

    @property
    def duration_ms(self) -> int | None:
        """Wall time from submission to completion."""
        if self.submission_ms is None or self.completion_ms is None:
            return None
        return self.completion_ms - self.submission_ms


class PlanVersion(BaseModel):
    """One plan of an execution: the initial one, or an adaptive (AQE) re-plan."""

    model_config = ConfigDict(frozen=True)

    index: int
    """0 for the initial plan, then 1, 2, … per AQE update."""
    physical_plan_description: str
    graph: PlanGraph


class Execution(BaseModel):
    """A SQL execution with its plans, jobs and stages."""

    model_config = ConfigDict(frozen=True)

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
    metric_catalog: tuple[MetricDef, ...]
    """Every metric tracked for the execution, over all plan versions, by accumulator id."""
    modified_configs: tuple[tuple[str, str], ...] = ()
    ended: bool = False
    """True when the log holds the execution's end event."""

    @property
    def final_plan(self) -> PlanVersion:
        """The last plan (what the REST API and UI show)."""
        return self.plans[-1]

    @property
    def duration_ms(self) -> int | None:
        """Wall time from start to end, if both were logged."""
        if self.start_ms is None or self.end_ms is None:
            return None
        return self.end_ms - self.start_ms


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
    spark_properties: tuple[tuple[str, str], ...] = ()

    @property
    def duration_ms(self) -> int | None:
        """Wall time from start to end."""
        if self.start_ms is None or self.end_ms is None:
            return None
        return self.end_ms - self.start_ms
