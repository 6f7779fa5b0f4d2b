"""Rule `large-result`: a stage sent a large result to the driver (collect, toPandas …)."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import execution_of_stage, severity_for, stage_stats
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes

RULE = "large-result"
METHOD = (
    "summed time the driver spent fetching task results plus the tasks' result serialization "
    "time (task time; the driver fetches results one stream at a time)"
)


def detect_large_results(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stages whose ResultTasks sent `large_result_bytes` or more to the driver."""
    findings = []
    exec_of = execution_of_stage(analysis)
    for _key, s in sorted(stage_stats(analysis).items()):
        if s.n_result_tasks == 0 or s.result_size_bytes < thresholds.large_result_bytes:
            continue
        lost_ms = s.getting_result_sum_ms + s.result_serialization_sum_ms
        findings.append(
            Finding(
                rule=RULE,
                severity=severity_for(lost_ms, thresholds),
                title=(
                    f"Stage {s.stage_id}: {fmt_bytes(s.result_size_bytes)} of results "
                    "sent to the driver"
                ),
                suggestion=(
                    "Keep large results out of the driver: write them (df.write) instead of "
                    "collect()/toPandas(), aggregate or limit first; if a collect is needed, "
                    "raise spark.driver.maxResultSize and spark.driver.memory."
                ),
                estimated_lost_ms=lost_ms,
                estimate_method=METHOD,
                execution_id=exec_of.get(s.stage_id),
                stage_id=s.stage_id,
                stage_attempt_id=s.stage_attempt_id,
                evidence=(
                    ev("result_size_bytes", "result bytes", s.result_size_bytes, "bytes"),
                    ev("n_result_tasks", "result tasks", s.n_result_tasks, "count"),
                    ev("getting_result_ms", "getting result time", s.getting_result_sum_ms, "ms"),
                    ev(
                        "result_serialization_ms",
                        "result serialization time",
                        s.result_serialization_sum_ms,
                        "ms",
                    ),
                ),
            )
        )
    return findings
