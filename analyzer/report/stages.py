"""Stage attempts as every format shows them: counts, wall time, task quantiles, task lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_summary import StageTaskSummary
from analyzer.aggregate.task_detail import TaskRow
from analyzer.model.application import StageAttempt
from analyzer.model.connect import CONNECT_DESCRIPTION_PREFIX
from analyzer.units import Unit, fmt_bytes, fmt_count, fmt_duration_ms, fmt_partition, fmt_value


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class TaskRowView:
    """One task attempt of a stage."""

    prefix_str: str = field(metadata=_help("Tree guide before the row: `├─ ` or `└─ `."))
    task_id: int = field(metadata=_help("Spark's task id (unique in the application)."))
    attempt: int = field(metadata=_help("Attempt number of this task index (0 for the first)."))
    partition_str: str = field(
        metadata=_help("`partition 4` (the RDD partition it computed); empty before Spark 3.3.")
    )
    executor_str: str = field(metadata=_help("`exec 1 @ host-a`."))
    duration_ms: int = field(metadata=_help("Launch to finish, in ms."))
    duration_str: str = field(metadata=_help("The duration, formatted."))
    rows_str: str = field(metadata=_help("Records read: input plus shuffle, e.g. `1,250 rows`."))
    bytes_str: str = field(metadata=_help("Bytes read: input plus shuffle, e.g. `3.2 KiB read`."))
    spill_str: str = field(metadata=_help("`spill 1.0 MiB` (memory) / disk, or empty when none."))
    status_str: str = field(
        metadata=_help("Empty for a success; else `FAILED`, `KILLED`, … and `speculative`.")
    )
    failure_str: str = field(metadata=_help("One-line failure reason, or empty."))


@dataclass(frozen=True)
class QuantileRowView:
    """One task metric of a stage, at Spark's stage-page quantiles."""

    label: str = field(metadata=_help("Metric name, e.g. `Duration`."))
    values: tuple[str, ...] = field(
        metadata=_help(
            "Min, 25th percentile, median, 75th percentile, max, as the History Server's stage "
            "page and `taskSummary` give them; `–` where Spark has no value (NaN)."
        )
    )


@dataclass(frozen=True)
class StageView:
    """One attempt of a stage, with its task quantiles or its task lines when asked for."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    attempt_id: int = field(metadata=_help("Stage attempt number (0 for the first)."))
    stage_str: str = field(metadata=_help("`3`, or `3.1` for a retried attempt."))
    name: str = field(metadata=_help("Stage name (the call site), uncut."))
    status: str = field(metadata=_help("COMPLETE, FAILED, SKIPPED or ACTIVE."))
    failed: bool = field(metadata=_help("True for a failed attempt."))
    n_tasks: int = field(metadata=_help("Tasks the attempt was planned with."))
    n_task_attempts: int = field(metadata=_help("Task attempts that ended (retries included)."))
    n_retried: int = field(metadata=_help("Task attempts that re-ran an index (attempt > 0)."))
    n_failed: int = field(metadata=_help("Task attempts that failed."))
    n_tasks_str: str = field(
        metadata=_help("Task attempts ended of those planned, and failures: `3 of 4, 1 failed`.")
    )
    wall_str: str = field(metadata=_help("Submission to completion, formatted; `–` if unknown."))
    summary_str: str = field(
        metadata=_help("`4 tasks, 105 ms wall, 2 retried, 1 failed` (zero counts left out).")
    )
    failure_reason: str = field(metadata=_help("Why the stage attempt failed, or empty."))
    n_summary_tasks: int = field(
        metadata=_help(
            "Tasks the quantiles rank over (Spark's: those with an executor run time, in practice "
            "the successful ones); 0 without quantiles."
        )
    )
    quantiles: tuple[QuantileRowView, ...] = field(
        metadata=_help("Task metric quantiles, exactly the History Server's, when asked for.")
    )
    tasks: tuple[TaskRowView, ...] = field(
        metadata=_help("A line per task attempt, by id, when asked for.")
    )


STAGE_PAGE_QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The quantiles of Spark's stage page (its Summary Metrics table): min, 25th, median, 75th, max;
picked from `Analysis.stage_summaries`, kept at `SUMMARY_QUANTILES`, which holds them all."""

QuantileRows = Literal["main", "all"]


@dataclass(frozen=True)
class QuantileMetric:
    """A row of the stage quantiles: its label, the `StageTaskSummary` field and its unit."""

    label: str
    field: str
    unit: Unit
    is_main: bool
    """Shown at `--metrics summary` (the others at `full` and in HTML)."""


QUANTILE_METRICS: tuple[QuantileMetric, ...] = (
    QuantileMetric("Duration (Spark's REST API)", "duration_ms", "ms", True),
    QuantileMetric("Scheduler delay", "scheduler_delay_ms", "ms", False),
    QuantileMetric("Deserialization", "executor_deserialize_time_ms", "ms", False),
    QuantileMetric("Run time (stage page's Duration)", "executor_run_time_ms", "ms", False),
    QuantileMetric("CPU time", "executor_cpu_time_ns", "ns", False),
    QuantileMetric("GC time", "jvm_gc_time_ms", "ms", True),
    QuantileMetric("Result serialization", "result_serialization_time_ms", "ms", False),
    QuantileMetric("Getting result", "getting_result_time_ms", "ms", False),
    QuantileMetric("Peak execution memory", "peak_execution_memory_bytes", "bytes", False),
    QuantileMetric("Input", "input_bytes", "bytes", True),
    QuantileMetric("Input records", "input_records", "count", False),
    QuantileMetric("Output", "output_bytes", "bytes", False),
    QuantileMetric("Output records", "output_records", "count", False),
    QuantileMetric("Shuffle fetch wait", "shuffle_fetch_wait_time_ms", "ms", False),
    QuantileMetric("Shuffle read", "shuffle_read_bytes", "bytes", True),
    QuantileMetric("Shuffle read records", "shuffle_read_records", "count", False),
    QuantileMetric("Shuffle remote read", "shuffle_remote_bytes_read", "bytes", False),
    QuantileMetric("Shuffle write", "shuffle_write_bytes", "bytes", True),
    QuantileMetric("Shuffle write records", "shuffle_write_records", "count", False),
    QuantileMetric("Shuffle write time", "shuffle_write_time_ns", "ns", False),
    QuantileMetric("Spill (memory)", "memory_bytes_spilled", "bytes", True),
    QuantileMetric("Spill (disk)", "disk_bytes_spilled", "bytes", True),
)
"""The quantile rows, in the order of Spark's stage page; rows of zeros are left out, but for
the first. Spark's stage page calls the run time `Duration`; the first row is its REST API's
`duration` quantiles (launch to finish; with retried tasks, Spark takes them over every attempt
at the indices of the successful ones, so they are not the tasks' own)."""


def _task_view(row: TaskRow, prefix: str) -> TaskRowView:
    end_reason = str(row["end_reason"])
    status = [] if end_reason == "Success" else [end_reason]
    if row["speculative"]:
        status.append("speculative")
    mem_spill, disk_spill = int(row["memory_bytes_spilled"]), int(row["disk_bytes_spilled"])
    spill = ""
    if mem_spill or disk_spill:
        spill = f"spill {fmt_bytes(mem_spill)} mem / {fmt_bytes(disk_spill)} disk"
    duration = int(row["duration_ms"])
    return TaskRowView(
        prefix_str=prefix,
        task_id=int(row["task_id"]),
        attempt=int(row["attempt"]),
        partition_str=fmt_partition(row["partition_id"]),
        executor_str=f"exec {row['executor_id']} @ {row['host']}",
        duration_ms=duration,
        duration_str=fmt_duration_ms(duration),
        rows_str=f"{fmt_count(row['input_records'] + row['shuffle_read_records'])} rows",
        bytes_str=f"{fmt_bytes(row['input_bytes'] + row['shuffle_read_bytes'])} read",
        spill_str=spill,
        status_str=" ".join(status),
        failure_str=row["failure_reason"] or "",
    )


def _stage_summary(stage: StageAttempt, n_retried: int, wall: str) -> str:
    noun = "task" if stage.n_tasks == 1 else "tasks"
    parts = [f"{fmt_count(stage.n_tasks)} {noun}", f"{wall} wall"]
    if n_retried:
        parts.append(f"{fmt_count(n_retried)} retried")
    if stage.n_failed_attempts:
        parts.append(f"{fmt_count(stage.n_failed_attempts)} failed")
    if stage.n_killed_attempts:
        parts.append(f"{fmt_count(stage.n_killed_attempts)} killed")
    if stage.n_speculative_attempts:
        parts.append(f"{fmt_count(stage.n_speculative_attempts)} speculative")
    return ", ".join(parts)


def _quantile_rows(
    summary: StageTaskSummary | None, rows: QuantileRows
) -> tuple[QuantileRowView, ...]:
    if summary is None:
        return ()
    out = []
    for metric in QUANTILE_METRICS:
        if rows == "main" and not metric.is_main:
            continue
        values = [summary.at(metric.field, q) for q in STAGE_PAGE_QUANTILES]
        if metric.field != "duration_ms" and not any(values):
            continue
        out.append(
            QuantileRowView(
                label=metric.label, values=tuple(fmt_value(metric.unit, v) for v in values)
            )
        )
    return tuple(out)


def _stage_name(analysis: Analysis, stage: StageAttempt) -> str:
    """The stage's name (its call site); for a Spark Connect request, whose name is the start of
    the request's text, what its execution ran (`Execution.shown_description`)."""
    if not stage.name.startswith(CONNECT_DESCRIPTION_PREFIX):
        return stage.name
    execution_id = analysis.execution_of_stage.get(stage.stage_id)
    execution = analysis.executions_by_id.get(execution_id) if execution_id is not None else None
    return execution.shown_description if execution is not None else stage.name


def build_stage_views(
    analysis: Analysis,
    stages: Sequence[StageAttempt],
    *,
    with_tasks: bool = False,
    with_quantiles: bool = False,
    quantile_rows: QuantileRows = "all",
    task_rows: Mapping[tuple[int, int], list[TaskRow]] | None = None,
) -> tuple[StageView, ...]:
    """Describe stage attempts by id, with a line per task attempt and task quantiles if asked.

    The quantiles are Spark's own (`Analysis.stage_summaries`), at its stage page's quantiles:
    every row, or with `quantile_rows="main"` the duration, GC, input, shuffle and spill rows.
    `task_rows` (from `Analysis.stage_task_rows`) may be given with `with_tasks` when the caller
    already has them.
    """
    ordered = sorted(stages, key=lambda s: (s.stage_id, s.attempt_id))
    if with_tasks and task_rows is None:
        task_rows = analysis.stage_task_rows({(s.stage_id, s.attempt_id) for s in ordered})
    retried = analysis.retried_task_counts
    summaries = analysis.stage_summaries if with_quantiles and ordered else {}
    out = []
    for stage in ordered:
        key = (stage.stage_id, stage.attempt_id)
        n_retried = retried.get(key, 0)
        wall = fmt_duration_ms(stage.duration_ms)
        tasks: tuple[TaskRowView, ...] = ()
        if with_tasks and task_rows is not None:
            rows = task_rows.get(key, [])
            last = len(rows) - 1
            tasks = tuple(_task_view(r, "└─ " if i == last else "├─ ") for i, r in enumerate(rows))
        n_tasks_str = f"{fmt_count(stage.n_task_attempts)} of {fmt_count(stage.n_tasks)}"
        if stage.n_failed_attempts:
            n_tasks_str += f", {fmt_count(stage.n_failed_attempts)} failed"
        out.append(
            StageView(
                stage_id=stage.stage_id,
                attempt_id=stage.attempt_id,
                stage_str=str(stage.stage_id)
                if stage.attempt_id == 0
                else f"{stage.stage_id}.{stage.attempt_id}",
                name=_stage_name(analysis, stage),
                status=stage.status,
                failed=stage.status == "FAILED",
                n_tasks=stage.n_tasks,
                n_task_attempts=stage.n_task_attempts,
                n_retried=n_retried,
                n_failed=stage.n_failed_attempts,
                n_tasks_str=n_tasks_str,
                wall_str=wall,
                summary_str=_stage_summary(stage, n_retried, wall),
                failure_reason=stage.failure_reason or "",
                n_summary_tasks=summaries[key].n_tasks if key in summaries else 0,
                quantiles=_quantile_rows(summaries.get(key), quantile_rows),
                tasks=tasks,
            )
        )
    return tuple(out)
