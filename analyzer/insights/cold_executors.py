"""Rule `cold-executors`: stages whose wall time went to tasks deserializing, not running.

A task deserializes its closure and the classes it needs before it runs; on a freshly started
executor that means loading classes and fetching the application's jars and files, which can
take seconds. A stage whose wall time is mostly that was held by cold executors (often ones
dynamic allocation just started) or by a very large task closure.
"""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_stats import (
    TaskDeserialization,
    stage_deserialization,
    started_beside,
)
from analyzer.aggregate.stage_wall import StageWall
from analyzer.insights._common import RuleContext, context
from analyzer.insights.advice import (
    advice_text,
    flag,
    idle_timeout_above_idle,
    min_executors_for_waits,
)
from analyzer.insights.executor_wait import (
    idle_before_release_ms,
    profile_id,
    released_before,
    started_fresh,
    warm_free_slots,
)
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_duration_ms

RULE = "cold-executors"
METHOD = "the stage's wall time spent with its tasks deserializing (see its wall parts)"
MIN_STAGE_SHARE = 0.5
"""A stage counts when deserialization is at least this share of its wall time."""
FIRST_USE_MS = 5_000
"""An executor's first task deserializing up to this long is its JVM's ordinary first-use
cost (loading classes, fetching the application's jars and files: measured at 0.5 to 2.3 s on
the public YARN logs); above it, something made that start-up slow."""
STRAGGLER_FACTOR = 4
"""One task carries a stage's deserialization when every other task deserialized at most this
many times less."""


def detect_cold_executors(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts whose wall time was mostly task deserialization, when significant.

    The title names the task and executor when one task carries it. An executor's first task
    at its ordinary first-use cost (`FIRST_USE_MS`) is `info`. Keeping executors
    (dynamic allocation) is advised only when the log shows executors of the stage's profile
    released before it and too few warm slots free at its submission for its tasks.
    """
    ctx = context(analysis)
    findings = []
    for key, wall in sorted(ctx.walls.items()):
        lost_ms = wall.deserialize_ms
        if lost_ms < MIN_STAGE_SHARE * wall.wall_ms:
            continue
        execution_id = ctx.stage_execution(wall.stage_id)
        if started_fresh(analysis, wall) or ctx.in_failed_execution(wall.stage_id):
            continue  # executors dynamic allocation had just started: part of executor-wait
        if not ctx.significant(lost_ms, execution_id, thresholds):
            continue
        tasks = stage_deserialization(analysis.tasks, *key)
        if not tasks or _uniform(tasks):
            continue
        finding = _finding(ctx, thresholds, wall, tasks, execution_id)
        if finding is not None:
            findings.append(finding)
    return findings


def _uniform(tasks: tuple[TaskDeserialization, ...]) -> bool:
    """True when the tasks an executor launched after it had finished one of the stage's
    tasks (warm by then) deserialized about as long as the stage's median task: a fixed cost
    of each task (many tiny tasks, `tiny-tasks`), not executors starting cold, whose later
    tasks deserialize far less than their first ones."""
    first_end: dict[str, int] = {}
    for t in tasks:
        first_end[t.executor_id] = min(first_end.get(t.executor_id, t.finish_ms), t.finish_ms)
    warm = sorted(t.deserialize_ms for t in tasks if t.launch_ms >= first_end[t.executor_id])
    if len(warm) < max(3, len(tasks) // 2):
        return False
    median_ms = sorted(t.deserialize_ms for t in tasks)[len(tasks) // 2]
    return STRAGGLER_FACTOR * warm[len(warm) // 2] >= median_ms and median_ms > 0


def _finding(
    ctx: RuleContext,
    thresholds: Thresholds,
    wall: StageWall,
    tasks: tuple[TaskDeserialization, ...],
    execution_id: int | None,
) -> Finding | None:
    """The finding of one stage attempt; `tasks` are its tasks, longest deserialization first."""
    analysis = ctx.analysis
    lost_ms = wall.deserialize_ms
    spans = analysis.executor_task_spans
    profile = profile_id(analysis, wall)
    top = tasks[0]
    # An executor is new to the stage when it had launched no task before the stage.
    new = {t.executor_id for t in tasks if spans.get(t.executor_id, (0, 0))[0] >= wall.start_ms}
    heavy = [t for t in tasks if 2 * t.deserialize_ms >= top.deserialize_ms]
    first_use = all(t.executor_id in new for t in heavy) and top.deserialize_ms <= FIRST_USE_MS
    straggler = len(tasks) > 1 and all(
        STRAGGLER_FACTOR * t.deserialize_ms <= top.deserialize_ms for t in tasks[1:]
    )
    warm_free = warm_free_slots(analysis, profile, wall.start_ms)
    # Keeping executors warms the next stage only where dynamic allocation had released
    # some before it and the warm executors left had too few free slots for its tasks;
    # executors that stayed up but never ran a task are cold all the same.
    released = (
        ctx.capacity.dynamic_allocation
        and warm_free < len(tasks)
        and released_before(analysis, profile, wall.start_ms)
    )
    advice: tuple[Advice, ...] = ()
    if released:
        floor = min_executors_for_waits(ctx.properties, wall.peak_running, ctx.slots_per_executor)
        idle = idle_timeout_above_idle(
            ctx.properties, idle_before_release_ms(analysis, profile, wall.start_ms)
        )
        advice = (floor,) + ((idle,) if idle is not None else ())
    evidence = [
        ev("deserialize_ms", "deserializing (wall)", lost_ms, "ms"),
        ev("stage_wall_ms", "stage wall time", wall.wall_ms, "ms"),
        ev("run_ms", "running (wall)", wall.run_ms, "ms"),
        ev("warm_free_slots", "free slots on warm executors at submission", warm_free, "count"),
    ]
    task_ids: tuple[int, ...] = ()
    if straggler and top.executor_id in new:
        others = tasks[1:]
        others_end_ms = max(t.finish_ms for t in others) - wall.start_ms
        executor = next(
            (e for e in analysis.application.executors if e.executor_id == top.executor_id),
            None,
        )
        age = (
            f", registered {fmt_duration_ms(wall.start_ms - executor.added_ms)} before the stage"
            if executor is not None
            and executor.added_ms is not None
            and executor.added_ms <= wall.start_ms
            else ""
        )
        # Tasks the executor started beside it that deserialized quickly were not held by
        # its start-up (jars, files and classes are fetched once per executor, under a lock):
        # the straggler's own deserialization stalled.
        beside = started_beside(
            analysis.tasks,
            top.executor_id,
            top.task_id,
            top.launch_ms,
            top.launch_ms + top.deserialize_ms,
        )
        quick = [t for t in beside if STRAGGLER_FACTOR * t.deserialize_ms <= top.deserialize_ms]
        title = (
            f"Stage {wall.stage_id}: task {top.task_id}, one of its {len(tasks)}, "
            + ("stalled " if quick else "spent ")
            + f"{fmt_duration_ms(top.deserialize_ms)} deserializing on executor "
            f"{top.executor_id} (new{age}); the other {len(others)} ended "
            f"{fmt_duration_ms(others_end_ms)} into the stage"
        )
        # Speculation is advised (with the stage's predicted wall) only where a copy started
        # on a warm executor would have ended within the wall left without the
        # deserialization: it fits this log, not only in principle.
        speculative_ms = _speculative_wall_ms(ctx, wall, tasks)
        can_speculate = (
            ctx.speculation_can_run
            and not ctx.speculation_on
            and warm_free > 0
            and speculative_ms is not None
            and speculative_ms <= wall.wall_ms - lost_ms
        )
        if can_speculate and not advice:
            advice = (
                flag(
                    ctx.properties,
                    "spark.speculation",
                    "true",
                    "false",
                    "Spark re-runs a task still running well past the median of the finished "
                    "ones on another executor: a warm one here",
                ),
            )
        cause = (
            f"Not executor {top.executor_id}'s start-up: "
            + (
                f"task {quick[0].task_id}, started there meanwhile, deserialized in "
                if len(quick) == 1
                else f"{len(quick)} tasks started there meanwhile "
                f"({', '.join(str(t.task_id) for t in quick[:5])}) deserialized in at most "
            )
            + f"{fmt_duration_ms(quick[-1].deserialize_ms)}. This task's own "
            "deserialization stalled (fetching its stage's task binary, a broadcast, or "
            "classes from the driver, as a shell's do) for "
            f"{fmt_duration_ms(top.deserialize_ms)}"
            if quick
            else f"Executor {top.executor_id}'s start-up, not the stage's work: its first task "
            "fetches the application's jars and files and loads classes, and this took "
            f"{fmt_duration_ms(top.deserialize_ms)}"
        )
        suggestion = (
            cause
            + (
                f" while warm executors had {warm_free} free slots"
                if warm_free >= len(tasks)
                else ""
            )
            + ". Look at that executor's log and host"
            + (
                " (the driver's and its block manager's at that time)"
                if quick
                else " (a slow download of --jars/--files, a slow disk or remote store)"
            )
            + (
                "; spark.speculation=true would re-run such a straggler on a warm executor."
                if can_speculate
                else "."
            )
            + (f" Keep warm executors: {advice_text(advice)}." if released else "")
        )
        task_ids = (top.task_id,)
        evidence.append(ev("task_deserialize_ms", "its deserialization", top.deserialize_ms, "ms"))
        if quick:
            evidence.append(
                ev(
                    "beside_deserialize_ms",
                    "deserialization of a task started beside it on the executor",
                    quick[0].deserialize_ms,
                    "ms",
                    f" (task {quick[0].task_id})",
                )
            )
    else:
        title = (
            f"Stage {wall.stage_id}: tasks spent {fmt_duration_ms(lost_ms)} of its "
            f"{fmt_duration_ms(wall.wall_ms)} deserializing"
            + (
                f" (the first tasks of {len(new)} new executors)"
                if first_use
                else " (cold executors)"
            )
        )
        suggestion = (
            (
                "The first tasks on executors new to the application, deserializing up to "
                f"{fmt_duration_ms(top.deserialize_ms)}: the JVM's ordinary first-use cost "
                "(loading classes, fetching jars and files), paid once per executor. "
                if first_use
                else "Tasks waited on start-up, not work: new executors loading classes and "
                "fetching jars and files, or a very large task closure. "
            )
            + (
                "Nothing to fix unless it grows: it is not the stage's work"
                if first_use
                else "Ship fewer or smaller dependencies (--jars, --py-files, --files), keep "
                "closures and broadcast variables small"
            )
            + (f"; keep warm executors: {advice_text(advice)}." if advice else ".")
        )
    severity = (
        "info" if first_use and not straggler else ctx.severity(lost_ms, execution_id, thresholds)
    )
    return Finding(
        rule=RULE,
        severity=severity,
        title=title,
        suggestion=suggestion,
        estimated_lost_ms=lost_ms,
        estimate_method=METHOD,
        execution_id=execution_id,
        stage_id=wall.stage_id,
        stage_attempt_id=wall.stage_attempt_id,
        task_ids=task_ids,
        evidence=tuple(evidence),
        advice=advice,
    )


def _speculative_wall_ms(
    ctx: RuleContext, wall: StageWall, tasks: tuple[TaskDeserialization, ...]
) -> int | None:
    """The stage's wall time had speculation re-run its straggler (`tasks[0]`) at the median
    duration of the others: Spark's `TaskSetManager.checkSpeculatableTasks` copies a task once
    `spark.speculation.quantile` of the tasks finished and it has run
    `spark.speculation.multiplier` × their median (at least 100 ms), checked every
    `spark.speculation.interval` (100 ms). None when the settings are unreadable."""
    try:
        quantile = float(ctx.properties.get("spark.speculation.quantile", "0.75"))
        multiplier = float(ctx.properties.get("spark.speculation.multiplier", "1.5"))
    except ValueError:
        return None
    others = sorted(tasks[1:], key=lambda t: t.finish_ms)
    if not others:
        return None
    durations = sorted(t.duration_ms for t in others)
    median_ms = durations[len(durations) // 2]
    needed = max(int(quantile * len(tasks)), 1)
    if needed > len(others):
        return None
    ready_ms = others[needed - 1].finish_ms
    straggler = tasks[0]
    copy_ms = max(ready_ms, straggler.launch_ms + max(int(multiplier * median_ms), 100)) + 100
    return copy_ms + median_ms - wall.start_ms
