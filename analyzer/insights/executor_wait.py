"""Rule `executor-wait`: stages submitted while no executor could run their tasks.

With dynamic allocation, executors idle longer than `executorIdleTimeout` are released, and the
next stage waits `schedulerBacklogTimeout` plus the executors' start-up before its first task;
a stage of another resource profile waits for executors of its own profile whatever else is
alive. That wait is wall time no partitioning or query change shortens. The suggestion follows
what the log shows: a release only where an ExecutorRemoved came before the wait, the
application's start-up where no executor had registered yet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_stats import tasks_running_at
from analyzer.aggregate.stage_wall import StageWall
from analyzer.aggregate.time_spent import covered_ms
from analyzer.insights._common import context
from analyzer.insights.advice import (
    MAX_IDLE_TIMEOUT_MS,
    advice_text,
    idle_timeout_above_idle,
    min_executors_for_waits,
)
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.lost_executors import is_loss
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import DRIVER_ID, Executor
from analyzer.units import fmt_duration_ms

RULE = "executor-wait"
METHOD = (
    "the union over the query's stages of the stretches from submission during which no task "
    "slot of the stage's resource profile was alive or only executors added in the 30 s before "
    "its first task, and under dynamic allocation of their tasks' deserialization on such "
    "executors"
)


FRESH_MS = 30_000
"""Executors added this long before a stage's first task are still starting (cold)."""
COLD_SHARE = 0.5
"""A stage whose wall time is at least this share of deserialization ran on cold executors."""
SLOW_STARTUP_MS = 30_000
"""The application's first executors arriving within this long of its first stage is an
ordinary start-up (YARN containers and JVMs: 2 to 10 s on the public logs), `info`; longer
says the cluster was short of capacity or the executors slow to start."""


def started_fresh(analysis: Analysis, wall: StageWall) -> bool:
    """True when a stage submitted with no slot of its resource profile alive spent its wall
    time mostly deserializing on the executors dynamic allocation then added: the rest of its
    wait for executors to be ready. Deserializing on executors already alive at submission is
    not waiting for executors (see `cold-executors`)."""
    cap = analysis.capacity
    if not cap.dynamic_allocation or wall.first_launch_ms is None:
        return False
    if wall.deserialize_ms < COLD_SHARE * wall.wall_ms:
        return False
    profile = cap.profile(profile_id(analysis, wall))
    if profile.at(wall.start_ms) > 0:
        return False
    first = wall.first_launch_ms
    return profile.at(first) > profile.at(first - FRESH_MS)


def profile_id(analysis: Analysis, wall: StageWall) -> int:
    """The resource profile a stage attempt ran with (0 when the log does not say)."""
    stage = context(analysis).attempts.get((wall.stage_id, wall.stage_attempt_id))
    return stage.resource_profile_id if stage else 0


def _released(analysis: Analysis, profile_id: int, moment_ms: int) -> list[Executor]:
    """The executors of the profile the log shows released (an ExecutorRemoved for a routine
    reason, as dynamic allocation gives) at or before `moment_ms`."""
    return [
        e
        for e in analysis.application.executors
        if e.removed_ms is not None
        and e.removed_ms <= moment_ms
        and e.resource_profile_id == profile_id
        and e.executor_id != DRIVER_ID
        and not is_loss(e.removed_reason)
    ]


def released_before(analysis: Analysis, profile_id: int, moment_ms: int) -> bool:
    """True when the log shows an executor of the profile released at or before `moment_ms`."""
    return bool(_released(analysis, profile_id, moment_ms))


def idle_before_release_ms(analysis: Analysis, profile_id: int, moment_ms: int) -> int | None:
    """How long the executors of the profile that dynamic allocation released before
    `moment_ms` had been idle by then: from each one's last task's finish (its registration
    when it ran none) to `moment_ms`, the shortest of them (ms): the idle timeout that would have
    kept one of them for the stage. None when the log shows none released."""
    spans = analysis.executor_task_spans
    idle = [
        moment_ms - max(spans[e.executor_id][1] if e.executor_id in spans else 0, e.added_ms or 0)
        for e in _released(analysis, profile_id, moment_ms)
    ]
    return min(idle) if idle else None


def warm_free_slots(analysis: Analysis, profile_id: int, moment_ms: int) -> int:
    """The free task slots at `moment_ms` on executors of the profile that were alive and had
    already run a task (warm: their jars fetched and classes loaded)."""
    spans = analysis.executor_task_spans
    alive = [
        e
        for e in analysis.application.executors
        if e.resource_profile_id == profile_id
        and (e.added_ms is None or e.added_ms <= moment_ms)
        and (e.removed_ms is None or e.removed_ms > moment_ms)
        and e.executor_id in spans
        and spans[e.executor_id][0] < moment_ms
    ]
    if not alive:
        return 0
    running = tasks_running_at(analysis.tasks, moment_ms)
    return sum(max(0, e.max_tasks - running.get(e.executor_id, 0)) for e in alive)


LAUNCHED_EXECUTOR_SINCE_MAJOR = 3
"""Spark 3.0 (SPARK-29287) first made the driver wait for an executor to report itself launched
before offering it tasks."""


def registered_before_wait(analysis: Analysis, wall: StageWall) -> tuple[int, int] | None:
    """For a stage whose wait for its first task came mostly after its executors registered:
    how many executors of its profile were registered at that task's launch and when the last
    of them registered (epoch ms). Spark offers an executor tasks only once it reports itself
    launched, after its `Executor` and plugins initialise (`LaunchedExecutor` in
    `CoarseGrainedSchedulerBackend`, from Spark 3.0): a wait after registration is their
    start-up, which no registration setting shortens. None otherwise, and before Spark 3.0,
    which offered an executor tasks as soon as it registered."""
    first = wall.first_launch_ms
    if first is None or first <= wall.start_ms:
        return None
    major = analysis.application.spark_major
    if major is not None and major < LAUNCHED_EXECUTOR_SINCE_MAJOR:
        return None
    added = [
        e.added_ms
        for e in analysis.application.executors
        if e.resource_profile_id == profile_id(analysis, wall)
        and e.executor_id != DRIVER_ID
        and e.added_ms is not None
        and e.added_ms <= first
        and (e.removed_ms is None or e.removed_ms > first)
    ]
    if not added:
        return None
    last_ms = max(added)
    if first - last_ms < COLD_SHARE * (first - wall.start_ms):
        return None
    return len(added), last_ms


def overlapping_peak(walls: Sequence[StageWall]) -> int:
    """The task slots the waiting stages needed at once between them: at each one's
    submission, the most tasks at once of every waiting stage still running then, summed.
    Stages submitted together (a join's two scans) each need their slots: one stage's own peak
    undercounts them.

    >>> from types import SimpleNamespace as W
    >>> overlapping_peak([W(start_ms=0, end_ms=900, peak_running=6),
    ...                   W(start_ms=150, end_ms=950, peak_running=6),
    ...                   W(start_ms=2000, end_ms=2500, peak_running=4)])
    12
    """
    return max(
        (sum(v.peak_running for v in walls if v.start_ms <= w.start_ms < v.end_ms) for w in walls),
        default=0,
    )


def first_added_ms(analysis: Analysis, profile_id: int) -> int | None:
    """When the first executor of the profile registered (epoch ms); None when the log shows
    none registering, or one of unknown age (it counts as alive from the start)."""
    added = [
        e.added_ms
        for e in analysis.application.executors
        if e.resource_profile_id == profile_id and e.executor_id != DRIVER_ID
    ]
    if not added or None in added:
        return None
    return min(t for t in added if t is not None)


def startup_delay_ms(analysis: Analysis, wall: StageWall) -> int:
    """The wait before a stage's first task while every executor of its profile had been added
    in the `FRESH_MS` before that task: executors still starting, not the driver stalling.
    Counted only when it is at least `COLD_SHARE` of the stage's wall time."""
    if wall.first_launch_ms is None:
        return 0
    profile = analysis.capacity.profile(profile_id(analysis, wall))
    first = wall.first_launch_ms
    if profile.at(first - FRESH_MS) > 0:
        return 0
    pending = max(
        0,
        min(
            first - wall.start_ms - wall.wait_executor_ms - wall.queued_ms, wall.scheduler_delay_ms
        ),
    )
    return pending if pending >= COLD_SHARE * wall.wall_ms else 0


def waiting_windows(analysis: Analysis, wall: StageWall) -> list[tuple[int, int]]:
    """The stretches a stage waited for executors: with none alive from its submission, with
    only just-started ones before its first task (`startup_delay_ms`), and deserializing on
    freshly added ones under dynamic allocation (see `started_fresh`)."""
    out = []
    waited = wall.wait_executor_ms + startup_delay_ms(analysis, wall)
    if waited:
        out.append((wall.start_ms, wall.start_ms + waited))
    if wall.first_launch_ms is not None and started_fresh(analysis, wall):
        out.append((wall.first_launch_ms, wall.first_launch_ms + wall.deserialize_ms))
    return out


def detect_executor_wait(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report, per SQL execution (and once for stages outside SQL), the wall time its stages
    waited with no task slot of their resource profile alive, when significant."""
    ctx = context(analysis)
    cap = ctx.capacity
    if cap.local_mode:
        return []
    by_execution: dict[int | None, list[StageWall]] = defaultdict(list)
    for wall in ctx.walls.values():
        if waiting_windows(analysis, wall):
            by_execution[ctx.stage_execution(wall.stage_id)].append(wall)
    profile_of = {(s.stage_id, s.attempt_id): s.resource_profile_id for s in ctx.attempts.values()}
    settings = dict(cap.settings)
    findings = []
    for execution_id, walls in sorted(by_execution.items(), key=lambda kv: (kv[0] is None, kv[0])):
        lost_ms = covered_ms(span for w in walls for span in waiting_windows(analysis, w))
        if not ctx.significant(lost_ms, execution_id, thresholds):
            continue
        walls.sort(key=lambda w: (-w.wait_executor_ms - w.deserialize_ms, w.stage_id))
        cold = [
            w.stage_id for w in walls if started_fresh(analysis, w) or startup_delay_ms(analysis, w)
        ]
        first = walls[0]
        stage_ids = sorted({w.stage_id for w in walls})
        profile = profile_of.get((first.stage_id, first.stage_attempt_id), 0)
        others = sum(p.at(first.start_ms) for p in cap.profiles if p.profile_id != profile)
        added_ms = first_added_ms(analysis, profile)
        registered = [registered_before_wait(analysis, w) for w in walls]
        starting = all(r is not None for r in registered)
        startup = not others and added_ms is not None and all(w.start_ms < added_ms for w in walls)
        evidence = [
            ev("stage_ids", "stages", ", ".join(map(str, stage_ids)), "text"),
            ev("wait_ms", "waited for executors (union)", lost_ms, "ms"),
            ev(
                "cold_stage_ids",
                "stages deserializing on just-started executors",
                ", ".join(map(str, cold)) or "–",
                "text",
            ),
            ev("resource_profile_id", "resource profile", profile, "id"),
            ev("other_profile_slots", "slots of other profiles alive", others, "count"),
        ]
        evidence += [ev(k, k, v, "text") for k, v in cap.settings if "dynamicAllocation" in k]
        peak = overlapping_peak(walls)
        floor = min_executors_for_waits(ctx.properties, peak, ctx.slots_per_executor)
        advice: list[Advice] = []
        first_of_profile = added_ms is None or all(w.start_ms < added_ms for w in walls)
        if others and first_of_profile:
            # No executor of the profile existed before: dynamic allocation starts a
            # profile's executors when its first stage is submitted, so no setting that
            # keeps executors could have had one waiting.
            suggestion = (
                f"The stage is the first to need resource profile {profile}; executors of "
                "other profiles were alive but Spark runs a stage only on executors of its own "
                "profile, and starts a profile's executors when its first stage is submitted. "
                "Reuse the default profile where the resources allow, or expect this start-up "
                "once per profile."
            )
        elif others:
            advice.append(floor)
            suggestion = (
                f"The stage needs resource profile {profile}; executors of other profiles were "
                "alive but Spark runs a stage only on executors of its own profile. Request "
                "its executors earlier, reuse the default profile where the resources allow, or "
                f"keep executors of that profile (set {floor.setting}={floor.value}; it "
                "applies per profile)."
            )
        elif starting:
            suggestion = _starting_wait(analysis, first, [r for r in registered if r is not None])
        elif cap.dynamic_allocation and (
            startup or not any(released_before(analysis, profile, w.start_ms) for w in walls)
        ):
            # No executor had been released before the waits: the application's start-up, or
            # executors lost. Keeping executors (minExecutors, a longer idle timeout) changes
            # neither.
            suggestion = _unreleased_wait(analysis, first, added_ms if startup else None)
        elif cap.dynamic_allocation:
            timeout = settings.get("spark.dynamicAllocation.executorIdleTimeout", "60s")
            submitted = min(walls, key=lambda w: w.start_ms)
            idle_ms = idle_before_release_ms(analysis, profile, submitted.start_ms)
            idle = idle_timeout_above_idle(ctx.properties, idle_ms)
            advice.append(floor)
            if idle is not None:
                advice.append(idle)
            too_long = idle_ms is not None and idle_ms > MAX_IDLE_TIMEOUT_MS
            suggestion = (
                "Dynamic allocation had released every executor "
                f"(spark.dynamicAllocation.executorIdleTimeout={timeout}"
                + (
                    f"; they had been idle {fmt_duration_ms(idle_ms)} when stage "
                    f"{submitted.stage_id} was submitted"
                    if idle_ms is not None
                    else ""
                )
                + ") and the stage waited for new ones to start and warm up. "
                + (
                    "That is longer than an idle timeout should keep executors (Spark's "
                    "default is 60 s): only keeping some would have helped: "
                    if too_long
                    else "Keep some: "
                )
                + advice_text(tuple(advice))
                + "."
            )
        else:
            # Static allocation: the executors asked for had not come up, or were lost.
            # Waiting for them before the first job (the registration settings) would only
            # move this wait, not shorten it.
            suggestion = _unreleased_wait(analysis, first, added_ms if startup else None)
        findings.append(
            Finding(
                rule=RULE,
                # A one-off start-up, after registration or an ordinary first one: no query
                # gets faster from it.
                severity=(
                    "info"
                    if starting or (startup and lost_ms < SLOW_STARTUP_MS)
                    else ctx.severity(lost_ms, execution_id, thresholds)
                ),
                title=(
                    f"Stage{'s' if len(stage_ids) > 1 else ''} "
                    f"{', '.join(map(str, stage_ids[:8]))}{'…' if len(stage_ids) > 8 else ''} "
                    f"waited {fmt_duration_ms(lost_ms)} for executors"
                    + (
                        " of its resource profile"
                        if others
                        else " (registered but still starting)"
                        if starting
                        else " (the application's first)"
                        if startup
                        else " (none alive, or just started)"
                        if cold
                        else " (none alive)"
                    )
                ),
                suggestion=suggestion,
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=execution_id,
                stage_id=first.stage_id,
                stage_attempt_id=first.stage_attempt_id,
                evidence=tuple(evidence),
                advice=tuple(advice),
            )
        )
    return findings


def _unreleased_wait(analysis: Analysis, first: StageWall, startup_ms: int | None) -> str:
    """The suggestion for a wait for executors that no release by dynamic allocation explains:
    `startup_ms`, when the stages waited for the application's first executors, is when the
    first one registered (epoch ms)."""
    app_start_ms = analysis.application.start_ms
    dynamic = analysis.capacity.dynamic_allocation
    if startup_ms is not None:
        when = (
            f" ({fmt_duration_ms(first.start_ms - app_start_ms)} after the application "
            "started; its first executor registered at "
            f"{fmt_duration_ms(startup_ms - app_start_ms)})"
            if app_start_ms is not None
            else ""
        )
        keeping = (
            "Keeping executors (minExecutors, executorIdleTimeout) does not shorten this wait"
            if dynamic
            else "Waiting for them before the first job "
            "(spark.scheduler.minRegisteredResourcesRatio, "
            "spark.scheduler.maxRegisteredResourcesWaitingTime) would only move this wait"
        )
        return (
            f"The application's start-up: no executor had been added yet when stage "
            f"{first.stage_id} was submitted{when}"
            + (", and none had been released" if dynamic else "")
            + f". {keeping}; if it is long, check the cluster's free capacity and executor "
            "start-up (image pulls, large --jars)."
        )
    return (
        "No executor of the stage's resource profile was alive, and the log shows none "
        + ("released by dynamic allocation " if dynamic else "removed ")
        + "before: they had been lost (see lost-executors) or "
        "were still starting. Check the cluster's free capacity and executor start-up (image "
        "pulls, large --jars)."
    )


def _starting_wait(analysis: Analysis, first: StageWall, registered: list[tuple[int, int]]) -> str:
    """The suggestion for stages whose executors had registered but were still starting:
    `registered` is, per stage, how many were registered at its first task and when the last
    of them registered (epoch ms)."""
    n_executors, last_ms = max(registered, key=lambda r: r[1])
    when = (
        f"{fmt_duration_ms(first.start_ms - last_ms)} before stage {first.stage_id} was submitted"
        if last_ms <= first.start_ms
        else f"{fmt_duration_ms(last_ms - first.start_ms)} after stage {first.stage_id} was "
        "submitted"
    )
    launch_ms = first.first_launch_ms if first.first_launch_ms is not None else last_ms
    # The plugins' class names, last part only: a full name (`com.nvidia.spark.SQLPlugin`)
    # would read as a setting.
    plugins = ", ".join(
        p.strip().rsplit(".", 1)[-1]
        for p in analysis.properties.get("spark.plugins", "").split(",")
        if p.strip()
    )
    start_up = (
        f"its executor plugins ({plugins}) initialise: RAPIDS, for one, sets up the GPU and its "
        "memory pools there"
        if plugins
        else "the executor and its plugins, if any, initialise"
    )
    return (
        f"Registered but still starting: of the {n_executors} executor(s) alive at its first "
        f"task, the last registered {when}, and that task came "
        f"{fmt_duration_ms(launch_ms - last_ms)} after the last registration. Spark offers an "
        f"executor tasks only once it reports itself started, after {start_up}. Registration "
        "was not what it waited for, so spark.scheduler.minRegisteredResourcesRatio (which "
        "waits for registrations) would not shorten this, and no query or partitioning change "
        "does: a one-off start-up cost. If it is long, read the executor logs for what their "
        "start-up spent it on."
    )
