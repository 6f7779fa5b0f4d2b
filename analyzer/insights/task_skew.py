"""Rule `task-skew`: one task of a stage ran far longer than the stage's median task."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_stats import is_first_wave_with_even_data
from analyzer.insights._common import context
from analyzer.insights.advice import flag
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_duration_ms

RULE = "task-skew"
METHOD = (
    "slowest task duration minus the stage's median task duration: the stage would have ended "
    "that much sooner had its slowest task taken the median time"
)


def detect_task_skew(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages whose slowest successful task ran `skew_ratio` × longer than the median,
    when its extra time is a meaningful share of the query's wall time.

    Stages need at least `skew_min_tasks` successful tasks. A slow task of the stage's first wave
    that read no more than the others is a cold executor warming up, not skew. Where `data-skew`
    explains the same stage (a node whose rows are skewed), only that finding is kept.
    """
    ctx = context(analysis)
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
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=(
                f"Stage {s.stage_id}: slowest task ran {ratio:.1f}× the median "
                f"({fmt_duration_ms(s.max_duration_ms)} vs "
                f"{fmt_duration_ms(s.median_duration_ms)})"
            ),
            suggestion=(
                "Find what the slow partition holds (see data-skew findings): salt or "
                "pre-aggregate hot keys, set spark.sql.adaptive.skewJoin.enabled=true for "
                "joins, or set spark.speculation=true if the cause is a slow executor."
            ),
            advice=(
                flag(
                    ctx.properties,
                    "spark.sql.adaptive.skewJoin.enabled",
                    "true",
                    "true",
                    "for a join: AQE splits a skewed partition into several tasks",
                ),
                flag(
                    ctx.properties,
                    "spark.speculation",
                    "true",
                    "false",
                    "for a slow executor: Spark re-runs a straggler elsewhere",
                ),
            ),
            execution_id=execution_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            task_ids=(s.slowest_task_id,),
            evidence=(
                ev(
                    "slowest_task",
                    "slowest task",
                    f"task {s.slowest_task_id} (partition {s.slowest_partition_id}) "
                    f"on executor {s.slowest_executor_id}",
                    "text",
                ),
                ev("max_duration_ms", "slowest task duration", s.max_duration_ms, "ms"),
                ev("median_duration_ms", "median task duration", s.median_duration_ms, "ms"),
                ev("ratio", "ratio", ratio, "ratio"),
                ev("n_successful", "successful tasks", s.n_successful, "count"),
            ),
        )
        if finding is not None:
            findings.append(finding)
    return findings
