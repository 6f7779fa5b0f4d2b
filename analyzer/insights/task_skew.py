"""Rule `task-skew`: one task of a stage ran far longer than the stage's median task."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_stats import (
    end_saved_ms,
    is_first_wave_with_even_data,
    task_with_as_much_data,
)
from analyzer.insights._common import context
from analyzer.insights.advice import flag
from analyzer.insights.finding import Advice, Evidence, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_count, fmt_duration_ms, fmt_partition

RULE = "task-skew"
METHOD = (
    "slowest task duration minus the stage's median task duration: the stage would have ended "
    "that much sooner had its slowest task taken the median time, at most what laying the "
    "stage's tasks out on its task slots with that task shortened saves"
)


def task_place(task_id: int, partition_id: int | None, executor_id: str | None) -> str:
    """Say which task, of which partition, on which executor: `task 25 (partition 9) on
    executor 3`; the partition is left out when the log has none (-1: Spark before 3.3).

    >>> task_place(25, -1, "driver"), task_place(7, 2, "3")
    ('task 25 on executor driver', 'task 7 (partition 2) on executor 3')
    """
    partition = fmt_partition(partition_id)
    return f"task {task_id}{f' ({partition})' if partition else ''} on executor {executor_id}"


def detect_task_skew(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages whose slowest successful task ran `skew_ratio` × longer than the median,
    when its extra time is a meaningful share of the query's wall time.

    Stages need at least `skew_min_tasks` successful tasks. A slow task of the stage's first wave
    that read no more than the others is a cold executor warming up, not skew. Where `data-skew`
    explains the same stage (a node whose rows are skewed), only that finding is kept.

    When another task of the stage read as much (records and bytes) in no more than the median
    time, the data does not explain the slow task: it is reported as a slow task, with
    speculation as the remedy, only where Spark could have run a speculative copy on another
    host (`RuleContext.speculation_can_run`); in local mode or on one host nothing in the log
    says why it was slow, and the rule stays silent.
    """
    ctx = context(analysis)
    can_speculate = ctx.speculation_can_run
    findings = []
    for s in ctx.stage_stats.values():
        if s.n_successful < thresholds.skew_min_tasks or s.slowest_task_id is None:
            continue
        median = max(s.median_duration_ms, 1)
        ratio = s.max_duration_ms / median
        if ratio < thresholds.skew_ratio:
            continue
        lost_ms = s.max_duration_ms - s.median_duration_ms
        execution_id = ctx.stage_execution(s.stage_id)
        if not ctx.significant(lost_ms, execution_id, thresholds):  # before the costlier test
            continue
        if is_first_wave_with_even_data(
            analysis.tasks, s.stage_id, s.stage_attempt_id, s.slowest_task_id
        ):
            continue  # a cold executor's first tasks, not skew
        # The stage ends with its last task: a slow task that finished before another one
        # held the stage no longer than that one did.
        wall = ctx.walls.get((s.stage_id, s.stage_attempt_id))
        lost_ms = min(
            lost_ms,
            end_saved_ms(
                analysis.tasks,
                s.stage_id,
                s.stage_attempt_id,
                s.slowest_task_id,
                s.median_duration_ms,
                wall.peak_running if wall is not None else s.n_attempts,
            ),
        )
        if not ctx.significant(lost_ms, execution_id, thresholds):
            continue
        peer = task_with_as_much_data(
            analysis.tasks,
            s.stage_id,
            s.stage_attempt_id,
            s.slowest_task_id,
            s.median_duration_ms,
        )
        if peer is not None and not can_speculate:
            continue  # not its data, and no other host to blame or to re-run it on
        speculation = flag(
            ctx.properties,
            "spark.speculation",
            "true",
            "false",
            "for a slow executor: Spark re-runs a straggler on another host",
        )
        durations = (
            f"({fmt_duration_ms(s.max_duration_ms)} vs {fmt_duration_ms(s.median_duration_ms)})"
        )
        place = task_place(s.slowest_task_id, s.slowest_partition_id, s.slowest_executor_id)
        extra: tuple[Evidence, ...] = ()
        advice: tuple[Advice | None, ...]
        if peer is None:
            title = f"Stage {s.stage_id}: slowest task ran {ratio:.1f}× the median {durations}"
            suggestion = (
                "Find what the slow partition holds (see data-skew findings): salt or "
                "pre-aggregate hot keys, set spark.sql.adaptive.skewJoin.enabled=true for joins"
                + (
                    ", or set spark.speculation=true if the cause is a slow executor."
                    if can_speculate and not ctx.speculation_on
                    else "."
                )
            )
            advice = (
                flag(
                    ctx.properties,
                    "spark.sql.adaptive.skewJoin.enabled",
                    "true",
                    "true",
                    "for a join: AQE splits a skewed partition into several tasks",
                ),
                speculation if can_speculate else None,
            )
        else:
            peer_id, peer_bytes, peer_records, peer_ms = peer
            title = (
                f"Stage {s.stage_id}: slowest task ran {ratio:.1f}× the median {durations} on "
                "no more data than a median task: a slow task, not skewed data"
            )
            suggestion = (
                f"Task {peer_id} read as much in {fmt_duration_ms(peer_ms)}: look at where the "
                f"slow task ran (executor {s.slowest_executor_id}"
                + (f" on {s.slowest_host}" if s.slowest_host else "")
                + ": a busy or failing host, GC, a cold executor)"
                + (
                    "; speculation was already on."
                    if ctx.speculation_on
                    else ", or set spark.speculation=true to re-run such a straggler on "
                    "another host."
                )
            )
            advice = (speculation,)
            extra = (
                ev(
                    "peer_task",
                    "task with as much data",
                    f"task {peer_id}: {fmt_bytes(peer_bytes)}, {fmt_count(peer_records)} "
                    f"records, {fmt_duration_ms(peer_ms)}",
                    "text",
                ),
                ev("peer_task_id", "", peer_id, "id"),
            )
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=title,
            suggestion=suggestion,
            advice=advice,
            execution_id=execution_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            task_ids=(s.slowest_task_id,),
            evidence=(
                ev("slowest_task", "slowest task", place, "text"),
                ev("max_duration_ms", "slowest task duration", s.max_duration_ms, "ms"),
                ev("median_duration_ms", "median task duration", s.median_duration_ms, "ms"),
                ev("ratio", "ratio", ratio, "ratio"),
                ev("n_successful", "successful tasks", s.n_successful, "count"),
                *extra,
            ),
        )
        if finding is not None:
            findings.append(finding)
    return findings
