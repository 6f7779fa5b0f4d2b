"""What a responder needs around the plans: the Spark configuration, executors, jobs, stages
outside SQL executions; shared by the text report and the HTML page.

Everything here comes from the log and is bounded: long values are cut (`…`), long lists end in
a line saying how many more the JSON report holds. Secrets were redacted in the model
(`model.config_secrets`); a value Spark had already redacted stays so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.capacity import Capacity
from analyzer.aggregate.executor_summary import FALLBACK_EXECUTOR_ID
from analyzer.aggregate.task_detail import TaskRow
from analyzer.model.application import DRIVER_ID, Job, StageAttempt
from analyzer.model.config_secrets import REDACTED
from analyzer.report.stages import QuantileRows, StageView, build_stage_views
from analyzer.units import (
    MISSING,
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_pct,
    one_line,
    plural,
)

MAX_ROWS = 500
"""Rows a context table lists at most (properties, executors, jobs, stages); the JSON report
holds them all."""
MAX_VALUE_CHARS = 1000
"""Characters of a configuration value kept (then `…`)."""
MAX_TEXT_CHARS = 300
"""Characters of a job description, call site, host or reason kept (then `…`)."""
KEY_COLUMN = 44
"""Width of the key column of the configuration in the text report (longer keys push the value)."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def bound(text: str | None, limit: int = MAX_TEXT_CHARS) -> str:
    """Return `text` on one line (Spark's `<br/>` breaks as spaces) and cut to `limit` characters
    (`…` when cut); `''` for None.

    >>> bound("a\\nb"), bound("x" * 5, 3), bound(None)
    ('a b', 'xx…', '')
    """
    return one_line(text, limit)


def _more(n_total: int, n_shown: int, noun: str) -> str:
    """`… and 12 more jobs (all in the JSON report)`, or empty when every row is shown."""
    if n_total <= n_shown:
        return ""
    return f"… and {fmt_count(n_total - n_shown)} more {noun} (all in the JSON report)"


@dataclass(frozen=True)
class PropertyView:
    """One configuration property."""

    key: str = field(metadata=_help("Property name, e.g. `spark.sql.shuffle.partitions`."))
    value: str = field(
        metadata=_help(
            "Its value on one line, cut to 1,000 characters; `*********(redacted)` for a secret."
        )
    )
    is_redacted: bool = field(metadata=_help("The value is a secret and not shown."))
    key_head_str: str = field(
        metadata=_help(
            "The text report's key column: the key padded to the column, or blanks when the key "
            "is longer and printed on a line of its own (`key_line`)."
        )
    )
    key_line: bool = field(metadata=_help("The key is too long for the column: its own line."))


@dataclass(frozen=True)
class ConfigView:
    """The driver's JVM and Spark configuration, from `SparkListenerEnvironmentUpdate`."""

    runtime_str: str = field(
        metadata=_help("`Spark 3.5.3 · Java 11.0.20.1 (Eclipse Adoptium) · Scala version 2.12.18`.")
    )
    summary_str: str = field(
        metadata=_help("`73 Spark properties, 2 redacted`, or why there are none.")
    )
    spark_properties: tuple[PropertyView, ...] = field(
        metadata=_help("Spark properties, sorted by key (at most 500).")
    )
    system_properties: tuple[PropertyView, ...] = field(
        metadata=_help("The JVM's system properties the report keeps (version, OS, time zone).")
    )
    system_str: str = field(
        metadata=_help("Those system properties on one line: `java.version 17.0.15 · os.name …`.")
    )
    more_str: str = field(metadata=_help("How many properties were left out, or empty."))


@dataclass(frozen=True)
class ExecutorView:
    """One executor (or the driver) as Spark's History Server lists it (`/allexecutors`)."""

    executor_id: str = field(metadata=_help("`driver` or the executor's id."))
    is_driver: bool = field(metadata=_help("The driver."))
    host: str = field(metadata=_help("Host (and port) of its block manager."))
    n_cores: int = field(metadata=_help("Cores it offered (0 for the driver outside local mode)."))
    storage_memory_str: str = field(metadata=_help("Storage memory of its block manager."))
    added_str: str = field(
        metadata=_help("When it was added, from the application's start: `+2.1 s`, or `–`.")
    )
    removed_str: str = field(
        metadata=_help("When it was removed, from the application's start, or empty if it was not.")
    )
    removed_reason: str = field(metadata=_help("Why it was removed, as logged (cut), or empty."))
    is_active: bool = field(metadata=_help("It was still registered at the end of the log."))
    n_tasks: int = field(metadata=_help("Task attempts launched on it."))
    n_failed_tasks: int = field(metadata=_help("Task attempts that failed on it."))
    tasks_str: str = field(metadata=_help("`180 tasks, 2 failed` (no failures left out)."))
    task_time_str: str = field(
        metadata=_help("Summed task durations (for the driver: the application's wall time).")
    )
    gc_str: str = field(
        metadata=_help("Summed JVM GC time of its tasks, and its share: `4.5 s (1.2 %)`.")
    )
    gc_share_str: str = field(
        metadata=_help("GC time as a share of task time: `1.2 %`; empty for the driver.")
    )
    input_str: str = field(metadata=_help("Bytes its tasks read as input."))
    shuffle_read_str: str = field(metadata=_help("Shuffle bytes its tasks read."))
    shuffle_write_str: str = field(metadata=_help("Shuffle bytes its tasks wrote."))
    lifetime_str: str = field(
        metadata=_help(
            "`added +2.1 s · removed +1m 52s: Container released`, times from the application's "
            "start."
        )
    )


@dataclass(frozen=True)
class ExecutorsView:
    """The executors table."""

    summary_str: str = field(
        metadata=_help("`8 executors and the driver, 1 removed; 128 cores` or the like.")
    )
    capacity_str: str = field(
        metadata=_help(
            "Task slots as the scheduler saw them: `at most 28 task slots at once (cores / "
            "spark.task.cpus 1); dynamic allocation on`, per resource profile when there are "
            "several; or empty."
        )
    )
    items: tuple[ExecutorView, ...] = field(
        metadata=_help("The driver, then executors by id (at most 500).")
    )
    more_str: str = field(metadata=_help("How many executors were left out, or empty."))
    driver_note_str: str = field(
        default="",
        metadata=_help(
            "When the table lists the driver: that its task time and GC are what Spark's UI "
            "puts there (the application's wall time, the driver JVM's own GC), not its tasks'."
        ),
    )
    failed_note_str: str = field(
        default="",
        metadata=_help(
            "When the rows' failed tasks add up to more than the application's failed task "
            "attempts: that they count resubmitted tasks too, as Spark's executors page does; "
            "or empty."
        ),
    )


DRIVER_NOTE = (
    "driver: its task time and GC are what Spark's UI shows there, the application's wall time "
    "and the driver JVM's own GC time, not the sum of tasks it ran"
)
"""Why the driver's row does not add up its tasks (`aggregate.executor_summary`)."""


@dataclass(frozen=True)
class JobView:
    """One Spark job, with the SQL execution it belongs to."""

    job_id: int = field(metadata=_help("Spark's job id."))
    execution_id: int | None = field(metadata=_help("Its SQL execution, or None outside SQL."))
    execution_str: str = field(metadata=_help("`SQL 24`, or `–` outside SQL executions."))
    status: str = field(metadata=_help("SUCCEEDED, FAILED or RUNNING (also a CSS class)."))
    failed: bool = field(metadata=_help("The job failed."))
    duration_str: str = field(metadata=_help("Submission to completion, or `–`."))
    stages_str: str = field(
        metadata=_help("Its stages: `stage 3`, `stages 3, 4`, `stages 5–9` (cut to 16 columns).")
    )
    description: str = field(
        metadata=_help(
            "Its description (`spark.job.description`, e.g. a query name), cut; or empty."
        )
    )
    call_site: str = field(metadata=_help("Where the job was started (its call site), cut."))
    label_str: str = field(
        metadata=_help("The description and call site as one text: `query72 · collect at …`.")
    )
    job_group: str = field(metadata=_help("Its job group, or empty."))
    error_str: str = field(metadata=_help("Why it failed, on one line (cut), or empty."))


@dataclass(frozen=True)
class JobsView:
    """The jobs table."""

    summary_str: str = field(
        metadata=_help("`49 jobs: 18 in SQL executions, 31 outside; 0 failed`.")
    )
    items: tuple[JobView, ...] = field(metadata=_help("Jobs by id (at most 500)."))
    more_str: str = field(metadata=_help("How many jobs were left out, or empty."))


@dataclass(frozen=True)
class ContextView:
    """Configuration, executors, jobs and the stages of jobs outside SQL executions."""

    config: ConfigView = field(metadata=_help("The Spark configuration."))
    executors: ExecutorsView = field(metadata=_help("The executors table."))
    jobs: JobsView = field(metadata=_help("The jobs table."))
    other_work_str: str = field(
        metadata=_help(
            "Jobs that belong to no SQL execution (RDD or streaming work), e.g. `3 jobs "
            "outside SQL executions: 0, 1, 2`; empty when none, or when executions are filtered."
        ),
    )
    other_stages: tuple[StageView, ...] = field(
        metadata=_help("The stage attempts of those jobs (at most 500), by id."),
    )
    other_stages_more_str: str = field(metadata=_help("How many were left out, or empty."))


def _properties(pairs: Sequence[tuple[str, str]]) -> tuple[PropertyView, ...]:
    keys = [bound(key, MAX_TEXT_CHARS) for key, _ in pairs]
    column = min(max((len(k) for k in keys), default=0), KEY_COLUMN) + 2
    return tuple(
        PropertyView(
            key=key,
            value=bound(value, MAX_VALUE_CHARS) if value != REDACTED else REDACTED,
            is_redacted=value == REDACTED,
            key_head_str=key.ljust(column) if len(key) <= KEY_COLUMN else " " * column,
            key_line=len(key) > KEY_COLUMN,
        )
        for key, (_, value) in zip(keys, pairs, strict=True)
    )


def build_config_view(analysis: Analysis) -> ConfigView:
    """Describe the driver's JVM and the Spark properties (secrets stay redacted)."""
    app = analysis.application
    env = app.environment
    pairs = env.spark_properties or app.spark_properties
    shown = _properties(pairs[:MAX_ROWS])
    n_redacted = sum(1 for _, v in pairs if v == REDACTED)
    runtime = [f"Spark {app.spark_version or MISSING}"]
    if env.java_version:
        runtime.append(f"Java {bound(env.java_version)}")
    if env.scala_version:
        runtime.append(f"Scala {bound(env.scala_version).removeprefix('version ')}")
    summary = (
        plural(len(pairs), "Spark property", "Spark properties")
        + (f", {fmt_count(n_redacted)} redacted" if n_redacted else "")
        if pairs
        else "the log holds no environment update (no Spark properties)"
    )
    system = _properties(env.system_properties)
    return ConfigView(
        runtime_str=" · ".join(runtime),
        summary_str=summary,
        spark_properties=shown,
        system_properties=system,
        system_str=" · ".join(f"{p.key} {p.value}" for p in system),
        more_str=_more(len(pairs), len(shown), "properties"),
    )


def _since(start_ms: int | None, at_ms: int | None) -> str:
    if at_ms is None:
        return ""
    if start_ms is None:
        return MISSING
    return ("+" if at_ms >= start_ms else "−") + fmt_duration_ms(abs(at_ms - start_ms))


def _capacity_str(cap: Capacity) -> str:
    """Say how many tasks could run at once, per resource profile, and how executors came."""
    if not cap.profiles:
        return ""
    if len(cap.profiles) == 1:
        slots = f"at most {plural(cap.peak_slots, 'task slot')} at once"
    else:
        slots = (
            "at most "
            + ", ".join(
                f"{plural(p.peak, 'task slot')} of resource profile {p.profile_id}"
                for p in cap.profiles
            )
            + " at once"
        )
    how = f" (cores / spark.task.cpus {cap.task_cpus})"
    if cap.local_mode:
        mode = "local mode: the driver runs the tasks"
    elif cap.dynamic_allocation:
        mode = "dynamic allocation on"
    else:
        mode = "dynamic allocation off"
    return f"{slots}{how}; {mode}"


def build_executors_view(analysis: Analysis) -> ExecutorsView:
    """Describe every executor and the driver, with their totals as the History Server has them."""
    app = analysis.application
    # Only the listed executors are summarized: a log can register a million.
    executors = [e for e in app.executors if e.executor_id != FALLBACK_EXECUTOR_ID]
    items = []
    for s in analysis.listed_executor_summaries(MAX_ROWS):
        added = _since(app.start_ms, s.add_time_ms) or MISSING
        removed = _since(app.start_ms, s.remove_time_ms)
        reason = bound(s.remove_reason)
        lifetime = f"added {added}"
        if removed:
            lifetime += f" · removed {removed}" + (f": {reason}" if reason else "")
        tasks = plural(s.n_total_tasks, "task")
        if s.n_failed_tasks:
            tasks += f", {fmt_count(s.n_failed_tasks)} failed"
        gc = fmt_duration_ms(s.total_gc_time_ms)
        gc_share = ""
        if s.total_duration_ms > 0 and s.executor_id != DRIVER_ID:
            gc_share = fmt_pct(s.total_gc_time_ms / s.total_duration_ms)
            gc += f" ({gc_share})"
        items.append(
            ExecutorView(
                executor_id=bound(s.executor_id, 40),
                is_driver=s.executor_id == DRIVER_ID,
                host=bound(s.host_port, 120),
                n_cores=s.total_cores,
                storage_memory_str=fmt_bytes(s.max_memory_bytes),
                added_str=added,
                removed_str=removed,
                removed_reason=reason,
                is_active=s.is_active,
                n_tasks=s.n_total_tasks,
                n_failed_tasks=s.n_failed_tasks,
                tasks_str=tasks,
                task_time_str=fmt_duration_ms(s.total_duration_ms),
                gc_str=gc,
                gc_share_str=gc_share,
                input_str=fmt_bytes(s.total_input_bytes),
                shuffle_read_str=fmt_bytes(s.total_shuffle_read_bytes),
                shuffle_write_str=fmt_bytes(s.total_shuffle_write_bytes),
                lifetime_str=lifetime,
            )
        )
    workers = [e for e in executors if e.executor_id != DRIVER_ID]
    n_removed = sum(1 for e in workers if not e.is_active)
    has_driver = len(workers) < len(executors)
    if workers:
        parts = [plural(len(workers), "executor") + (" and the driver" if has_driver else "")]
    else:
        parts = ["the driver only (local mode)" if has_driver else "no executors"]
    if n_removed:
        parts.append(f"{fmt_count(n_removed)} removed")
    cores = sum(e.n_cores for e in workers)
    if cores:
        parts.append(plural(cores, "core"))
    more_str = _more(len(executors), len(items), "executors")
    if more_str:
        # What the rows left out hold, so the table still accounts for every executor.
        listed = analysis.listed_executor_summaries(MAX_ROWS)
        rest_cores = sum(e.n_cores for e in executors) - sum(s.total_cores for s in listed)
        rest_tasks = sum(e.n_tasks_started for e in executors) - sum(
            s.n_total_tasks for s in listed
        )
        more_str = (
            f"… and {fmt_count(len(executors) - len(items))} more executors: "
            f"{plural(rest_cores, 'core')}, {plural(rest_tasks, 'task')} (all in the JSON report)"
        )
    return ExecutorsView(
        summary_str=", ".join(parts[:2]) + ("; " + parts[2] if len(parts) > 2 else ""),
        capacity_str=_capacity_str(analysis.capacity),
        items=tuple(items),
        more_str=more_str,
        driver_note_str=DRIVER_NOTE if any(e.executor_id == DRIVER_ID for e in items) else "",
        failed_note_str=_failed_note(analysis, sum(e.n_failed_tasks for e in items)),
    )


def _failed_note(analysis: Analysis, n_listed_failed: int) -> str:
    """Why the executors' failed column can add up to more than the failed task attempts the
    header counts, when it does."""
    n_failed = analysis.task_counts.n_failed  # as the header counts them
    if n_listed_failed <= n_failed:
        return ""
    return (
        "failed: as Spark's executors page counts them, with the tasks resubmitted because a "
        "lost executor took their finished shuffle output along: "
        f"{fmt_count(n_listed_failed)} here against the {plural(n_failed, 'failed task attempt')} "
        "of the header"
    )


def stage_runs_str(stage_ids: Sequence[int], limit: int = 16) -> str:
    """Name stages compactly, runs of consecutive ids as ranges, cut to `limit` characters.

    >>> stage_runs_str([3]), stage_runs_str([41, 42]), stage_runs_str([51, 52, 53, 55])
    ('stage 3', 'stages 41, 42', 'stages 51–53, 55')
    """
    ids = sorted(set(stage_ids))
    if not ids:
        return MISSING
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    parts = [
        str(r[0]) if len(r) == 1 else f"{r[0]}, {r[1]}" if len(r) == 2 else f"{r[0]}–{r[-1]}"
        for r in runs
    ]
    return bound(("stage " if len(ids) == 1 else "stages ") + ", ".join(parts), limit)


def _job_view(job: Job) -> JobView:
    description = bound(job.description)
    call_site = bound(job.name)
    label = " · ".join(p for p in (description, call_site) if p)
    return JobView(
        job_id=job.job_id,
        execution_id=job.execution_id,
        execution_str=f"SQL {job.execution_id}" if job.execution_id is not None else MISSING,
        status=job.status,
        failed=job.status == "FAILED",
        duration_str=fmt_duration_ms(
            job.completion_ms - job.submission_ms
            if job.completion_ms is not None and job.submission_ms is not None
            else None
        ),
        stages_str=stage_runs_str(job.stage_ids),
        description=description,
        call_site=call_site,
        label_str=label,
        job_group=bound(job.job_group),
        error_str=bound(job.error_message),
    )


def build_jobs_view(analysis: Analysis) -> JobsView:
    """Describe every job by id: its SQL execution, status, duration, stages, description."""
    jobs = sorted(analysis.application.jobs, key=lambda j: j.job_id)
    n_sql = sum(1 for j in jobs if j.execution_id is not None)
    n_failed = sum(1 for j in jobs if j.status == "FAILED")
    summary = (
        f"{plural(len(jobs), 'job')}: {fmt_count(n_sql)} in SQL executions, "
        f"{fmt_count(len(jobs) - n_sql)} outside; {fmt_count(n_failed)} failed"
        if jobs
        else "no jobs"
    )
    shown = jobs[:MAX_ROWS]
    return JobsView(
        summary_str=summary,
        items=tuple(_job_view(j) for j in shown),
        more_str=_more(len(jobs), len(shown), "jobs"),
    )


def other_stages(analysis: Analysis, is_filtered: bool) -> list[StageAttempt]:
    """Return the stage attempts of jobs outside SQL executions that ran tasks, by id (none when
    executions are filtered: the report is about those)."""
    app = analysis.application
    if is_filtered:
        return []
    other_stage_ids = {s for j in app.jobs if j.execution_id is None for s in j.stage_ids}
    other = [s for s in app.stages if s.stage_id in other_stage_ids and s.n_task_attempts]
    return sorted(other, key=lambda s: (s.stage_id, s.attempt_id))


def build_context_view(
    analysis: Analysis,
    *,
    is_filtered: bool,
    with_stages: bool = True,
    with_tasks: bool = False,
    with_quantiles: bool = False,
    quantile_rows: QuantileRows = "all",
    task_rows: Mapping[tuple[int, int], list[TaskRow]] | None = None,
) -> ContextView:
    """Build the context sections; jobs outside SQL are left out when executions are filtered.

    Without `with_stages` the stages outside SQL are left out (the jobs still say which they
    are). `task_rows` (from `Analysis.stage_task_rows`) may be given when the caller has them.
    """
    app = analysis.application
    other_jobs = [] if is_filtered else [j for j in app.jobs if j.execution_id is None]
    other = other_stages(analysis, is_filtered) if with_stages else []
    shown = other[:MAX_ROWS]
    return ContextView(
        config=build_config_view(analysis),
        executors=build_executors_view(analysis),
        jobs=build_jobs_view(analysis),
        other_work_str=(
            f"{plural(len(other_jobs), 'job')} outside SQL executions: "
            + bound(", ".join(str(j.job_id) for j in other_jobs), 400)
            if other_jobs
            else ""
        ),
        other_stages=build_stage_views(
            analysis,
            shown,
            with_tasks=with_tasks,
            with_quantiles=with_quantiles,
            quantile_rows=quantile_rows,
            task_rows=task_rows,
        ),
        other_stages_more_str=_more(len(other), len(shown), "stage attempts"),
    )
