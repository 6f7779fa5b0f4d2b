"""Rule `scheduler-delay`: stages held by the driver, not by their tasks' work.

Scheduler delay is the part of a stage's wall time in which its tasks were launched but not
running their code (Spark's UI: duration minus run, deserialization and result time), plus the
time before its first task and after its last with slots free: the driver busy launching tasks
or handling results, or an RPC layer backed up. An attempt that launched no task has none (its
wall is `not_launched_ms`): there was no task for the driver to hold. Stages running side by
side stalled by one driver hiccup share the same wall time, so the finding counts their
windows' union once. The wait before the application's very first task launch is start-up (a
fresh JVM loading the scheduler's, serializer's and broadcast's classes for its first job, often
on a starved host), not a stall: it is left out, as is a wait while the stage's executors were
still starting.
"""

from __future__ import annotations

from collections import defaultdict

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_wall import StageWall
from analyzer.aggregate.time_spent import covered_ms
from analyzer.insights._common import context
from analyzer.insights.executor_wait import startup_delay_ms
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_duration_ms

RULE = "scheduler-delay"
METHOD = (
    "the union over the query's stages of their scheduler-delay windows (each stage's scheduler "
    "delay, placed at its end): stalls of stages running side by side are counted once"
)
MIN_STAGE_SHARE = 0.25
"""A stage counts when scheduler delay is at least this share of its wall time …"""


def delay_window(wall: StageWall, startup_ms: int = 0) -> tuple[int, int]:
    """The stretch a stage's scheduler delay is charged to: the last `scheduler_delay_ms` of it,
    less `startup_ms` of it that was executors starting (see `executor_wait.startup_delay_ms`).

    >>> from analyzer.aggregate.stage_wall import StageWall
    >>> w = StageWall(stage_id=1, stage_attempt_id=0, start_ms=100, end_ms=200,
    ...     first_launch_ms=100, slots=4, n_tasks=1, peak_running=1, wait_executor_ms=0,
    ...     queued_ms=0, scheduler_delay_ms=60, deserialize_ms=0, run_ms=40, gc_ms=0,
    ...     fetch_wait_ms=0, result_ms=0, tail_ms=0)
    >>> delay_window(w)
    (140, 200)
    """
    return wall.end_ms - wall.scheduler_delay_ms + startup_ms, wall.end_ms


def warmup_delay_ms(wall: StageWall, app_first_launch_ms: int | None) -> int:
    """The part of a stage's wait before its first task that came before the application's
    first task launch (`app_first_launch_ms`, epoch ms): nothing had run anywhere yet, so the
    wait is the application warming up for its first job, not the driver stalling.

    >>> from analyzer.aggregate.stage_wall import StageWall
    >>> w = StageWall(stage_id=0, stage_attempt_id=0, start_ms=100, end_ms=500,
    ...     first_launch_ms=300, slots=2, n_tasks=1, peak_running=1, wait_executor_ms=0,
    ...     queued_ms=0, scheduler_delay_ms=250, deserialize_ms=0, run_ms=150, gc_ms=0,
    ...     fetch_wait_ms=0, result_ms=0, tail_ms=0)
    >>> warmup_delay_ms(w, 300), warmup_delay_ms(w, 50)
    (200, 0)
    """
    if wall.first_launch_ms is None or app_first_launch_ms is None:
        return 0
    pending = wall.first_launch_ms - wall.start_ms - wall.wait_executor_ms - wall.queued_ms
    before_any = app_first_launch_ms - wall.start_ms
    return max(0, min(pending, before_any, wall.scheduler_delay_ms))


def detect_scheduler_delay(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report, per SQL execution (and once for stages outside SQL), stages whose wall time was
    mostly scheduler delay, when the union of their delay windows is significant and at least
    `stall_min_ms`. Stage attempts with failed or killed tasks are left out."""
    ctx = context(analysis)
    by_execution: dict[int | None, list[StageWall]] = defaultdict(list)
    startup: dict[tuple[int, int], int] = {}
    app_first_launch_ms = min(
        (w.first_launch_ms for w in ctx.walls.values() if w.first_launch_ms is not None),
        default=None,
    )
    for key, wall in ctx.walls.items():
        # Both are parts of the same wait before the first task: the larger covers the other.
        startup[key] = max(
            startup_delay_ms(analysis, wall), warmup_delay_ms(wall, app_first_launch_ms)
        )
        delay = wall.scheduler_delay_ms - startup[key]
        if delay < thresholds.min_lost_ms or delay < MIN_STAGE_SHARE * wall.wall_ms:
            continue
        if ctx.in_failed_execution(wall.stage_id):
            continue  # a failing query's retries and shutdown: its failure is the finding
        stats = ctx.stage_stats.get(key)
        if stats is not None and stats.n_failed + stats.n_killed:
            continue  # attempts that failed or were killed (a lost executor): not the driver
        attempt = ctx.attempts.get(key)
        if attempt is not None and attempt.lost_task_ends:
            continue  # most of its task ends are missing from the log: no wall to take apart
        by_execution[ctx.stage_execution(wall.stage_id)].append(wall)
    findings = []
    for execution_id, walls in sorted(by_execution.items(), key=lambda kv: (kv[0] is None, kv[0])):
        lost_ms = covered_ms(
            delay_window(w, startup[(w.stage_id, w.stage_attempt_id)]) for w in walls
        )
        if lost_ms < thresholds.stall_min_ms or not ctx.significant(
            lost_ms, execution_id, thresholds
        ):
            continue
        walls.sort(
            key=lambda w: (
                -(w.scheduler_delay_ms - startup[(w.stage_id, w.stage_attempt_id)]),
                w.stage_id,
            )
        )
        stage_ids = sorted({w.stage_id for w in walls})
        run_ms = sum(w.run_ms for w in walls)
        delay_ms = sum(
            w.scheduler_delay_ms - startup[(w.stage_id, w.stage_attempt_id)] for w in walls
        )
        where = (
            f"stage {stage_ids[0]}"
            if len(stage_ids) == 1
            else f"{len(stage_ids)} stages ({', '.join(map(str, stage_ids[:8]))}"
            + ("…" if len(stage_ids) > 8 else "")
            + ")"
        )
        findings.append(
            Finding(
                rule=RULE,
                severity=ctx.severity(lost_ms, execution_id, thresholds),
                # Stages side by side stall the query once, so the stall is a union; their
                # running is only known as each wall's share, a sum: said as such.
                title=(
                    f"Driver stall: {where} held {fmt_duration_ms(lost_ms)} by scheduler delay "
                    f"while its tasks ran {fmt_duration_ms(run_ms)}"
                    if len(walls) == 1
                    else f"Driver stall: {where} held {fmt_duration_ms(lost_ms)} of wall time by "
                    f"scheduler delay; summed over their walls, {fmt_duration_ms(delay_ms)} of "
                    f"scheduler delay against {fmt_duration_ms(run_ms)} of tasks running"
                ),
                suggestion=(
                    "The driver (or the RPC layer) held launched tasks: look at what it was "
                    "doing then — GC or a full heap (spark.driver.memory), a busy driver thread "
                    "(a collect or a broadcast being built, Python driver code, many concurrent "
                    "jobs), large task binaries (big closures or broadcast variables, see the "
                    "'task of very large size' warnings) — and give it room "
                    "(spark.driver.cores, spark.driver.memory). More partitions would not help."
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=execution_id,
                stage_id=walls[0].stage_id,
                stage_attempt_id=walls[0].stage_attempt_id,
                evidence=(
                    ev("stage_ids", "stages", ", ".join(map(str, stage_ids)), "text"),
                    ev("n_stages", "", len(stage_ids), "count"),
                    ev(
                        "scheduler_delay_ms",
                        # Each stage's wall time charged to scheduler delay, not its tasks'
                        # summed delays, which overlap on the slots.
                        "scheduler delay (of the stage's wall time)"
                        if len(walls) == 1
                        else "scheduler delay (of the stages' wall times, summed)",
                        delay_ms,
                        "ms",
                    ),
                    ev("stall_ms", "wall time stalled (union)", lost_ms, "ms"),
                    ev("run_ms", "tasks running (summed over the walls)", run_ms, "ms"),
                ),
            )
        )
    return findings
