"""Rule `idle-executors`: executor cores sat idle for much of the time they were held."""

from __future__ import annotations

import math
from bisect import bisect_right

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.capacity import IDLE_TIMEOUT_DEFAULT_S, most_at_once
from analyzer.aggregate.stage_stats import executor_busy_ms, longest_task_gaps_ms
from analyzer.aggregate.time_spent import merged
from analyzer.insights._common import context
from analyzer.insights.advice import advice_text, current
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count, fmt_duration_ms, fmt_pct

RULE = "idle-executors"
METHOD = (
    "not a time cost: idle core time is paid-for capacity; evidence gives it as core time "
    "(cores × time held − task time × spark.task.cpus)"
)


def idle_core_ms(held_core_ms: int, busy_ms: int) -> int:
    """Return core time held but not spent running tasks (never negative).

    >>> idle_core_ms(10_000, 4_000)
    6000
    """
    return max(0, held_core_ms - busy_ms)


def _advice(
    props: dict[str, str], dynamic: bool, peak_tasks: int, per_executor: int, n_executors: int
) -> tuple[Advice, ...]:
    """Fewer executors: as many as the most tasks that ran at once needed."""
    need = max(1, math.ceil(peak_tasks / max(per_executor, 1)))
    if need >= n_executors:
        return ()
    key = "spark.dynamicAllocation.maxExecutors" if dynamic else "spark.executor.instances"
    return (
        Advice(
            key,
            str(need),
            current(props, key, "infinity" if dynamic else "2"),
            f"at most {fmt_count(peak_tasks)} tasks ran at once, {per_executor} per executor "
            f"→ ⌈{peak_tasks} / {per_executor}⌉ = {need} of the {n_executors} executors held "
            "at once",
            "count",
        ),
    )


def job_intervals(analysis: Analysis) -> list[tuple[int, int]]:
    """The stretches some job ran (submission to completion, merged; a job without an end runs
    to the application's end)."""
    app = analysis.application
    end = app.end_ms
    return merged(
        (j.submission_ms, stop)
        for j in app.jobs
        if j.submission_ms is not None
        and (stop := j.completion_ms if j.completion_ms is not None else end) is not None
    )


def outside_jobs_ms(start_ms: int, stop_ms: int, jobs: list[tuple[int, int]]) -> int:
    """How much of [start, stop) no job ran in; `jobs` merged and ascending (`job_intervals`).

    >>> outside_jobs_ms(0, 100, [(10, 20), (50, 200)])
    40
    """
    # Only the intervals that end after `start_ms` can overlap: they follow the first such.
    i = bisect_right(jobs, (start_ms, start_ms)) - 1
    inside = 0
    for a, b in jobs[max(i, 0) :]:
        if a >= stop_ms:
            break
        inside += max(0, min(stop_ms, b) - max(start_ms, a))
    return max(0, stop_ms - start_ms - inside)


def _suggestion(
    settings: dict[str, str],
    dynamic: bool,
    advice: tuple[Advice, ...],
    longest_idle_ms: int,
    outside_share: float,
) -> str:
    """Advice that applies to this deployment: dynamic allocation only where it is off, and
    only where an executor sat idle at a stretch as long as its default idle timeout."""
    fewer = f" ({advice_text(advice)})" if advice else ""
    if not dynamic and longest_idle_ms < IDLE_TIMEOUT_DEFAULT_S * 1000:
        return (
            "No executor sat idle as long as dynamic allocation's default idle timeout "
            f"({IDLE_TIMEOUT_DEFAULT_S} s; the longest stretch was "
            f"{fmt_duration_ms(longest_idle_ms)}), so turning it on would have released none: "
            "the idle time is in short gaps (stragglers' tails, the driver between jobs). "
            f"Request fewer executors{fewer}, or look for driver-side work (collects, "
            "planning, Python) between jobs."
        )
    if dynamic:
        timeout = settings.get("spark.dynamicAllocation.executorIdleTimeout", "60s")
        floor = settings.get("spark.dynamicAllocation.minExecutors", "0")
        # minExecutors keeps executors only when it is above 0.
        kept_by = "minExecutors or cached data" if floor.strip() not in ("", "0") else "cached data"
        where = (
            f"{fmt_pct(outside_share)} of the idle core time was with no job running: executors "
            "asked for at start (initialExecutors) before the first job, each one kept for the "
            f"idle timeout after its last task, or kept by {kept_by}"
            if outside_share >= 0.5
            else "executors were mostly idle while jobs ran: held between tasks of running jobs "
            f"(stages of fewer tasks than slots, stragglers' tails) or kept by {kept_by}"
        )
        return (
            f"Dynamic allocation is on (executorIdleTimeout={timeout}, minExecutors={floor}): "
            f"{where}. Ask for fewer executors"
            f"{fewer}, or look for driver-side work (collects, planning, Python) between jobs."
        )
    return (
        "Release what is not used: set spark.dynamicAllocation.enabled=true, request fewer "
        f"executors{fewer}, or look for driver-side work (collects, planning, Python) between "
        "jobs."
    )


def detect_idle_executors(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report an application whose executors were idle at least `idle_share` of their core time.

    An executor holds `n_cores` × (removal or application end − addition) of core time; task
    durations summed per executor, times the `spark.task.cpus` each task holds, are the busy
    part. The idle core time must also reach
    `idle_min_core_ms`.
    """
    app = analysis.application
    cap = context(analysis).capacity
    if cap.local_mode:
        return []  # the driver's own cores: nothing to release (see idle-session)
    end_ms = app.end_ms
    busy = executor_busy_ms(analysis.tasks)
    gaps = longest_task_gaps_ms(analysis.tasks)
    held_ms = 0
    busy_ms = 0
    n_executors = 0
    longest_idle_ms = 0
    spans: list[tuple[int, int]] = []
    jobs = job_intervals(analysis)
    outside_core_ms = 0
    n_taskless = 0
    for e in app.executors:
        if e.executor_id == "driver" and len(app.executors) > 1:
            continue  # the driver runs no tasks when there are executors
        stop = e.removed_ms if e.removed_ms is not None else end_ms
        if e.added_ms is None or stop is None or stop <= e.added_ms:
            continue
        spans.append((e.added_ms, stop))
        first, last, gap = gaps.get(str(e.executor_id), (stop, stop, 0))
        longest_idle_ms = max(
            longest_idle_ms, gap, first - e.added_ms, stop - max(last, e.added_ms)
        )
        held_ms += e.n_cores * (stop - e.added_ms)
        outside_core_ms += e.n_cores * outside_jobs_ms(e.added_ms, stop, jobs)
        n_taskless += not busy.get(e.executor_id, 0)
        # A task holds spark.task.cpus of its executor's cores while it runs.
        busy_ms += busy.get(e.executor_id, 0) * max(cap.task_cpus, 1)
        n_executors += 1
    idle = idle_core_ms(held_ms, busy_ms)
    if held_ms == 0:
        return []
    share = idle / held_ms
    ctx = context(analysis)
    advice = _advice(
        ctx.properties,
        cap.dynamic_allocation,
        analysis.peak_running_tasks,
        ctx.slots_per_executor,
        most_at_once(spans),
    )
    if share < thresholds.idle_share or idle < thresholds.idle_min_core_ms:
        return []
    return [
        Finding(
            rule=RULE,
            severity="info",
            title=f"Executors were idle {fmt_pct(share)} of their core time",
            suggestion=_suggestion(
                dict(cap.settings),
                cap.dynamic_allocation,
                advice,
                longest_idle_ms,
                min(outside_core_ms, idle) / idle if idle else 0.0,
            ),
            advice=advice,
            estimated_lost_ms=0,
            estimate_method=METHOD,
            evidence=(
                ev("n_executors", "executors", n_executors, "count"),
                ev("held_core_ms", "core time held", held_ms, "ms"),
                ev("busy_ms", "core time running tasks", busy_ms, "ms"),
                ev("idle_core_ms", "idle core time", idle, "ms"),
                ev("idle_share", "idle share", share, "share"),
                ev(
                    "idle_outside_jobs_core_ms",
                    "of it with no job running",
                    min(outside_core_ms, idle),
                    "ms",
                ),
                ev("n_taskless_executors", "executors that ran no task", n_taskless, "count"),
                ev(
                    "longest_idle_ms",
                    "longest stretch an executor ran no task",
                    longest_idle_ms,
                    "ms",
                ),
            ),
        )
    ]
