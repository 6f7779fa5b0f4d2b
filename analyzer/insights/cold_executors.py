"""Rule `cold-executors`: stages whose wall time went to tasks deserializing, not running.

A task deserializes its closure and the classes it needs before it runs; on a freshly started
executor that means loading classes and fetching the application's jars and files, which can
take seconds. A stage whose wall time is mostly that was held by cold executors (often ones
dynamic allocation just started) or by a very large task closure.
"""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context
from analyzer.insights.advice import advice_text, idle_timeout_above_gap, min_executors_for_waits
from analyzer.insights.executor_wait import profile_id, released_before, started_fresh
from analyzer.insights.finding import Advice, Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_duration_ms

RULE = "cold-executors"
METHOD = "the stage's wall time spent with its tasks deserializing (see its wall parts)"
MIN_STAGE_SHARE = 0.5
"""A stage counts when deserialization is at least this share of its wall time."""


def detect_cold_executors(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts whose wall time was mostly task deserialization, when significant."""
    ctx = context(analysis)
    findings = []
    for key, wall in sorted(ctx.walls.items()):
        lost_ms = wall.deserialize_ms
        if lost_ms < MIN_STAGE_SHARE * wall.wall_ms:
            continue
        execution_id = ctx.stage_execution(wall.stage_id)
        if started_fresh(analysis, wall) or ctx.in_failed_execution(wall.stage_id):
            continue  # executors dynamic allocation had just started: part of executor-wait
        # Keeping executors warms the next stage only where dynamic allocation had released
        # some before it; executors that stayed up but never ran a task are cold all the same.
        released = ctx.capacity.dynamic_allocation and released_before(
            analysis, profile_id(analysis, wall), wall.start_ms
        )
        advice: tuple[Advice, ...] = ()
        if released:
            floor = min_executors_for_waits(
                ctx.properties, wall.peak_running, ctx.slots_per_executor
            )
            idle = idle_timeout_above_gap(ctx.properties, analysis.time_spent.longest_gap_ms)
            advice = (floor,) + ((idle,) if idle is not None else ())
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=(
                f"Stage {wall.stage_id}: tasks spent {fmt_duration_ms(lost_ms)} of its "
                f"{fmt_duration_ms(wall.wall_ms)} deserializing (cold executors)"
            ),
            suggestion=(
                "Tasks waited on start-up, not work: new executors loading classes and "
                "fetching jars and files, or a very large task closure. Ship fewer or "
                "smaller dependencies (--jars, --py-files, --files), keep closures and "
                "broadcast variables small"
                + (f", and keep warm executors: {advice_text(advice)}." if advice else ".")
            ),
            advice=advice,
            execution_id=execution_id,
            stage_id=key[0],
            stage_attempt_id=key[1],
            evidence=(
                ev("deserialize_ms", "deserializing (wall)", lost_ms, "ms"),
                ev("stage_wall_ms", "stage wall time", wall.wall_ms, "ms"),
                ev("run_ms", "running (wall)", wall.run_ms, "ms"),
            ),
        )
        if finding is not None:
            findings.append(finding)
    return findings
