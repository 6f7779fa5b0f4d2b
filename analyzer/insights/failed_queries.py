"""Rule `failed-query`: a SQL execution failed; its root cause and what failed with it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import is_python_operator
from analyzer.aggregate.task_detail import first_failed_task
from analyzer.insights._common import context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import SHUTDOWN, Execution, Job, is_cancellation
from analyzer.model.failure_cause import root_cause
from analyzer.units import fmt_pct

RULE = "failed-query"
GPU_OOM_SIGNS = ("GpuSplitAndRetryOOM", "GpuRetryOOM", "GPU OutOfMemory", "GpuOOM")
"""Exceptions of the RAPIDS Accelerator running out of GPU memory."""
METHOD = "the failed execution's whole wall time: its result was never produced"
CANCELLED_ADVICE = (
    "Nothing in the query failed: something cancelled its jobs (the driver program's "
    "cancelJobGroup, cancelJobsWithTag or cancelAllJobs, a kill in Spark's UI, a notebook's "
    "Cancel, a scheduler's timeout). If it was not meant to be cancelled, the driver's log says "
    "who cancelled it; if it was cancelled for running too long, this query's other findings "
    "say why it was slow."
)
"""The suggestion for a query something cancelled (`Application.cancelled_execution_ids`)."""


def _first_failed(jobs: list[Job]) -> Job | None:
    """The job that failed first (by completion, then id), preferring a real failure to a
    cancellation: cancelled jobs are what a failure takes down with it."""
    failed = [j for j in jobs if j.status == "FAILED"]
    real = [j for j in failed if not j.cancelled]
    pool = real or failed
    return min(pool, key=lambda j: (j.completion_ms or 0, j.job_id), default=None)


def python_failure_node(
    analysis: Analysis, execution: Execution, failed_stage_ids: set[int], reasons: list[str]
) -> int | None:
    """Return the Python evaluation operator a Python exception came from, when the plan
    says which: the one in a failed stage, else the plan's only one; None otherwise."""
    if not any("PythonException" in r or "Traceback (most recent call last)" in r for r in reasons):
        return None
    graph = execution.final_plan.graph
    python = [n.node_id for n in graph.nodes if not n.is_cluster and is_python_operator(n.name)]
    times = analysis.times.get(execution.execution_id)
    if times is not None:
        in_failed = [
            nid
            for nid in python
            if (nt := times.nodes.get(nid)) is not None and set(nt.stage_ids) & failed_stage_ids
        ]
        if in_failed:
            return in_failed[0]
    return python[0] if len(python) == 1 else None


def detect_failed_queries(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report every SQL execution whose status is FAILED, with the error that started it.

    The root cause is the first failing job's exception, read out of Spark's wrapping (the last
    line of a Python traceback, the last `Caused by:`), else the first failed task's reason;
    the jobs cancelled and the stages and tasks that failed with it are its evidence.
    """
    ctx = context(analysis)
    findings = []
    app = analysis.application
    jobs = {j.job_id: j for j in app.jobs}
    # Cut short on purpose (a streaming stop, a Connect client's cancel): no finding. Cancelled
    # by the driver program or a user: a finding that says so, not a failure.
    cancelled_ids = app.cancelled_execution_ids
    interrupted = app.interrupted_execution_ids - cancelled_ids
    failed = {e.execution_id: e for e in app.executions if e.status == "FAILED"}
    # A root that failed only because a sub-execution inside it did (its own jobs did not
    # fail) is told by that sub-execution's finding, where the tasks failed: one failure, one
    # finding (the root's wall holds the sub-execution's, so its time is not claimed twice).
    told_by: dict[int, Execution] = {}
    for root_id, nested in app.sub_executions.items():
        root = failed.get(root_id)
        if root is None or any(jobs[j].status == "FAILED" for j in root.job_ids if j in jobs):
            continue
        inside = next((i for i in nested if i in failed and i not in interrupted), None)
        if inside is not None:
            told_by[inside] = root
    told_roots = {root.execution_id for root in told_by.values()}
    for ex in app.executions:
        if ex.status != "FAILED" or ex.execution_id in interrupted or ex.execution_id in told_roots:
            continue
        root = told_by.get(ex.execution_id)
        ex_jobs = [jobs[j] for j in ex.job_ids if j in jobs]
        first_job = _first_failed(ex_jobs)
        stage_ids = set(ex.stage_ids)
        task_failure = first_failed_task(analysis, stage_ids)
        message = ex.error_message or (first_job.error_message if first_job else None)
        cause = root_cause(message)
        # The task the message quotes (`… most recent failure: Lost task 3.3 in stage 34.0
        # (TID 12417) …`): the one whose error the root cause is, which may have failed after
        # the first failed task of the query (a retry that ran out of attempts).
        quoted = _quoted_task(message) if cause and not is_cancellation(cause) else None
        if quoted is not None and task_failure is not None and root_cause(task_failure[1]) == cause:
            quoted = None  # the first failed task failed the same way: it is named
        if (not cause or is_cancellation(cause)) and task_failure is not None:
            cause = root_cause(task_failure[1])
        cause = cause or "no error message in the log"
        failed_jobs = sorted(j.job_id for j in ex_jobs if j.status == "FAILED")
        # Every failed job cancelled by the context's shutdown, and no error of its own: the
        # application stopped while the query ran; its task failures came before.
        shutdown = (
            not ex.error_message
            and bool(failed_jobs)
            and all(SHUTDOWN in (j.error_message or "") for j in ex_jobs if j.status == "FAILED")
        )
        cancelled = ex.execution_id in cancelled_ids
        before = cause if (shutdown or cancelled) and task_failure is not None else ""
        if cancelled:
            cause = root_cause(message) or "its jobs were cancelled"
        if shutdown:
            cause = "the application shut down while it ran" + (
                f" (before it: {before})" if before else ""
            )
        cancelled_jobs = sorted(j.job_id for j in ex_jobs if j.cancelled)
        failed_stages = sorted(
            {st.stage_id for st in analysis.application.stages if st.stage_id in stage_ids}
            & {st.stage_id for st in analysis.application.stages if st.status == "FAILED"}
        )
        n_failed_tasks = sum(
            s.n_failed for (sid, _), s in ctx.stage_stats.items() if sid in stage_ids
        )
        lost_ms = ex.duration_ms or 0
        reasons = [r for r in (message, task_failure[1] if task_failure else None) if r]
        node_id = python_failure_node(analysis, ex, set(failed_stages), reasons)
        evidence = [
            ev("root_cause", "root cause", cause, "text"),
            ev(
                "first_failed_job",
                "failed first",
                f"job {first_job.job_id}" if first_job else "–",
                "text",
            ),
        ]
        if task_failure is not None:
            evidence.append(ev("first_failed_task", "first failed task", task_failure[0], "id"))
        if quoted is not None and (task_failure is None or quoted != task_failure[0]):
            evidence.append(ev("error_task", "task the error is from", quoted, "id"))
        evidence += [
            ev("failed_jobs", "failed jobs", ", ".join(map(str, failed_jobs)) or "–", "text"),
            ev("n_failed_jobs", "", len(failed_jobs), "count"),
            ev("n_cancelled_jobs", "of which cancelled with it", len(cancelled_jobs), "count"),
            ev("failed_stages", "failed stages", ", ".join(map(str, failed_stages)) or "–", "text"),
            ev("n_failed_tasks", "failed task attempts", n_failed_tasks, "count"),
        ]
        spilled = sum(
            max(s.memory_bytes_spilled, s.disk_bytes_spilled)
            for (sid, _), s in ctx.stage_stats.items()
            if sid in stage_ids
        )
        if spilled:
            evidence.append(ev("bytes_spilled", "spilled before it failed", spilled, "bytes"))
        evidence.append(ev("duration_ms", "duration", ex.duration_ms, "ms"))
        if root is not None:
            evidence.append(ev("failed_root", "inside query", root.execution_id, "id"))
            evidence.append(ev("root_duration_ms", "its duration", root.duration_ms, "ms"))
        findings.append(
            Finding(
                rule=RULE,
                severity="warning" if cancelled else "critical",
                title=(
                    f"Query {ex.execution_id} was cancelled: {cause}"
                    + (f"; before it: {before}" if before else "")
                    if cancelled
                    else f"Query {ex.execution_id} was cancelled when the application shut down"
                    + (f"; before it: {before}" if before else "")
                    if shutdown
                    else f"Query {ex.execution_id} failed: {cause}"
                    if root is None
                    else f"Query {ex.execution_id} (inside query {root.execution_id}, which "
                    f"failed with it) failed: {cause}"
                ),
                suggestion=(
                    CANCELLED_ADVICE
                    + (
                        f" Its tasks had failed before it ({before}), which Spark retries, so "
                        "they did not end it."
                        if before
                        else ""
                    )
                    if cancelled
                    else "Nothing in the query failed by itself: the application stopped while it "
                    "ran (its driver program ended, was killed, or stopped the context), and "
                    "Spark cancelled its jobs. Look at the driver's log for why it stopped"
                    + (
                        f"; the query's tasks had failed before it ({before}), which Spark "
                        "retries, so they did not end it."
                        if before
                        else "."
                    )
                    if shutdown
                    else "Fix the error the root cause names (for a UDF, the line of its "
                    "traceback); " + gpu_or_memory_advice(cause, reasons, analysis.properties)
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=ex.execution_id,
                node_id=node_id,
                task_ids=(quoted,)
                if quoted is not None
                else (task_failure[0],)
                if task_failure
                else (),
                evidence=tuple(evidence),
            )
        )
    return findings


def gpu_or_memory_advice(
    cause: str, reasons: list[str] | None = None, properties: Mapping[str, str] | None = None
) -> str:
    """The advice after a failure's root cause: GPU memory for the RAPIDS Accelerator's
    out-of-memory errors, else task memory.

    For the GPU, the failing task's stack (in `reasons`, Spark's failure messages) says whether
    it ran out reading its input, and `properties` (the run's settings) whether the GPU's memory
    pool was capped: the advice names the settings that bound what failed.
    """
    if not any(sign in cause for sign in GPU_OOM_SIGNS):
        return (
            "if it is an out-of-memory error or a lost executor, give tasks more memory or "
            "smaller partitions (see the other findings of this query)."
        )
    props = properties or {}
    frame = failing_frame(reasons or [])
    if frame is not None and READER_FRAME.search(frame):
        split = _rapids_setting(props, "spark.sql.files.maxPartitionBytes")
        advice = (
            f"the GPU ran out of memory reading the query's input ({frame}): make each task "
            "read less, with a smaller spark.sql.files.maxPartitionBytes ("
            + (f"{split} in this run; " if split else "")
            + "Spark's default is 128 MiB) or spark.rapids.sql.reader.batchSizeBytes."
        )
    else:
        tasks = _rapids_setting(props, "spark.rapids.sql.concurrentGpuTasks")
        advice = (
            "the GPU ran out of memory: run fewer tasks on the GPU at once "
            "(spark.rapids.sql.concurrentGpuTasks"
            + (f", {tasks} in this run" if tasks else "")
            + "), make its batches smaller (spark.rapids.sql.batchSizeBytes), or use more, "
            "smaller partitions."
        )
    cap = _rapids_setting(props, MAX_ALLOC_FRACTION)
    fraction = _fraction(cap)
    if fraction is not None and fraction < 1:
        advice += (
            f" The GPU's memory pool was capped at {fmt_pct(fraction)} of its memory "
            f"({MAX_ALLOC_FRACTION}={cap}; the default is 1): unless something else shares the "
            "GPU, a larger cap leaves tasks more room."
        )
    return advice


MAX_ALLOC_FRACTION = "spark.rapids.memory.gpu.maxAllocFraction"
"""The RAPIDS Accelerator's cap on its GPU memory pool, a fraction of the GPU's memory."""
_PLUGIN_PREFIX = "spark.plugins.internal.conf.com.nvidia.spark.SQLPlugin."
"""Where Spark logs the settings it hands to the RAPIDS plugin, besides their own keys."""
_FRAME = re.compile(r"^\s*at ([\w$.<>]{1,300})\(", re.MULTILINE)
_RETRY_FRAMES = (
    "RmmRapidsRetryIterator",
    "com.nvidia.spark.rapids.Arm$",
    "RetryIterator",
    "ai.rapids.cudf.",
    "com.nvidia.spark.rapids.jni.",
)
"""The RAPIDS Accelerator's retry framework and its native libraries (cudf, the JNI layer):
frames that say where memory was asked for, not what the task was doing."""
READER_FRAME = re.compile(
    r"PartitionReader|MultiFile\w*Reader|FileSourceScan|Gpu(?:Parquet|Orc|Avro|Csv|Json)\w*Scan"
)
"""Classes of the RAPIDS Accelerator's and Spark's file scans: a task failing in one was
reading its input."""


def failing_frame(reasons: list[str]) -> str | None:
    """The first frame of the failing task's stack outside the RAPIDS retry framework, as
    `Class.method`, from the first failure message that has a stack; None without one.

    >>> failing_frame(["java.lang.Error: x\\n\\tat a.RmmRapidsRetryIterator$.withRetry(R.scala:1)"
    ...                "\\n\\tat a.GpuMultiFileReader.readBatch(G.scala:2)"])
    'GpuMultiFileReader.readBatch'
    """
    for reason in reasons:
        frames = [m.group(1) for m in _FRAME.finditer(reason)]
        if frames:
            found = next((f for f in frames if not any(r in f for r in _RETRY_FRAMES)), None)
            return _short_frame(found) if found is not None else None
    return None


def _short_frame(frame: str) -> str:
    """`Class.method` of a JVM frame, without its package and Scala's closure names.

    >>> _short_frame("com.nvidia.spark.rapids.MultiFileReaderBase.$anonfun$readBatch$1")
    'MultiFileReaderBase.readBatch'
    """
    owner, _, method = frame.rpartition(".")
    bare = re.sub(r"^(?:\$anonfun\$)+|(?:\$\d+|\$adapted)+$", "", method)
    method = bare or method
    return f"{owner.rpartition('.')[2]}.{method}" if owner else method


def _rapids_setting(properties: Mapping[str, str], key: str) -> str | None:
    """A setting as the run logged it (its own key, else the one Spark hands the plugin), cut
    to 40 characters; None when it is not set."""
    value = properties.get(key) or properties.get(_PLUGIN_PREFIX + key)
    if value is None:
        return None
    value = " ".join(value.split())
    return value if len(value) <= 40 else value[:39] + "…"


def _fraction(text: str | None) -> float | None:
    """A fraction setting's value, or None when unset or not a number in [0, 1]."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and 0 <= value <= 1 else None


QUOTED_TASK = re.compile(r"\(TID (\d{1,18})\)")
"""How Spark names the task of a stage failure's most recent error."""


def _quoted_task(message: str | None) -> int | None:
    """The task id Spark's job failure message quotes, or None.

    >>> _quoted_task("Task 3 in stage 34.0 failed 4 times, most recent failure: Lost task 3.3 "
    ...              "in stage 34.0 (TID 12417) (10.0.0.5 executor 5): java.lang.Error")
    12417
    """
    match = QUOTED_TASK.search(message or "")
    return int(match.group(1)) if match else None
