"""Stage attempts as every format shows them: counts, wall time, task quantiles, task lines."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.task_detail import iter_task_rows, successful_task_values, task_quantiles
from analyzer.model.application import StageAttempt
from analyzer.units import Unit, fmt_bytes, fmt_count, fmt_duration_ms, fmt_value


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
        metadata=_help("Min, 25th percentile, median, 75th percentile, max.")
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
    quantiles: tuple[QuantileRowView, ...] = field(
        metadata=_help("Task metric quantiles over successful tasks, when asked for.")
    )
    tasks: tuple[TaskRowView, ...] = field(
        metadata=_help("A line per task attempt, by id, when asked for.")
    )


TaskRow = dict[str, Any]
"""One task attempt as a row of `Analysis.tasks` (only the columns the stage lines use)."""

_TASK_COLUMNS = (
    "stage_id",
    "stage_attempt_id",
    "task_id",
    "attempt",
    "partition_id",
    "duration_ms",
    "input_records",
    "shuffle_read_records",
    "input_bytes",
    "shuffle_read_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "executor_id",
    "host",
    "end_reason",
    "failed",
    "speculative",
    "failure_reason",
)

QUANTILE_METRICS: tuple[tuple[str, str, Unit], ...] = (
    ("Duration", "duration_ms", "ms"),
    ("GC time", "gc_ms", "ms"),
    ("Input", "input_bytes", "bytes"),
    ("Shuffle read", "shuffle_read_bytes", "bytes"),
    ("Shuffle write", "shuffle_write_bytes", "bytes"),
    ("Spill (memory)", "memory_bytes_spilled", "bytes"),
    ("Spill (disk)", "disk_bytes_spilled", "bytes"),
)
"""(label, task-table column, unit) of the quantile rows; rows of zeros are left out, but for
the duration."""


def task_rows_by_stage(
    analysis: Analysis, stage_keys: Collection[tuple[int, int]]
) -> dict[tuple[int, int], list[TaskRow]]:
    """Group the task attempts of the given stage attempts, ordered by task id."""
    by_stage: dict[tuple[int, int], list[TaskRow]] = {}
    if not stage_keys:
        return by_stage
    for row in iter_task_rows(analysis, _TASK_COLUMNS):
        key = (row["stage_id"], row["stage_attempt_id"])
        if key in stage_keys:
            by_stage.setdefault(key, []).append(row)
    for rows_of in by_stage.values():
        rows_of.sort(key=lambda r: int(r["task_id"]))
    return by_stage


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
        partition_str=f"partition {row['partition_id']}" if row["partition_id"] >= 0 else "",
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


def _quantile_rows(values: tuple[tuple[int, ...], ...] | None) -> tuple[QuantileRowView, ...]:
    rows = []
    for i, (label, _column, unit) in enumerate(QUANTILE_METRICS):
        column = values[i] if values is not None else ()
        if not column or (i > 0 and not any(column)):
            continue
        rows.append(
            QuantileRowView(
                label=label,
                values=tuple(fmt_value(unit, v) for v in task_quantiles(column)),
            )
        )
    return tuple(rows)


def build_stage_views(
    analysis: Analysis,
    stages: Sequence[StageAttempt],
    *,
    with_tasks: bool = False,
    with_quantiles: bool = False,
    task_rows: dict[tuple[int, int], list[TaskRow]] | None = None,
) -> tuple[StageView, ...]:
    """Describe stage attempts by id, with a line per task attempt and task quantiles if asked.

    `task_rows` (from `task_rows_by_stage`) may be given when the caller already grouped them;
    they are needed for the retry counts and, with `with_tasks`, the task lines.
    """
    ordered = sorted(stages, key=lambda s: (s.stage_id, s.attempt_id))
    if task_rows is None:
        task_rows = task_rows_by_stage(analysis, {(s.stage_id, s.attempt_id) for s in ordered})
    per_attempt: dict[tuple[int, int], tuple[tuple[int, ...], ...]] = {}
    if with_quantiles and ordered:
        per_attempt = successful_task_values(
            analysis, {s.stage_id for s in ordered}, [c for _, c, _ in QUANTILE_METRICS]
        )
    out = []
    for stage in ordered:
        key = (stage.stage_id, stage.attempt_id)
        rows = task_rows.get(key, [])
        n_retried = sum(1 for r in rows if r["attempt"] > 0)
        wall = fmt_duration_ms(stage.duration_ms)
        tasks: tuple[TaskRowView, ...] = ()
        if with_tasks:
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
                name=stage.name,
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
                quantiles=_quantile_rows(per_attempt.get(key)) if with_quantiles else (),
                tasks=tasks,
            )
        )
    return tuple(out)
