"""Rule `large-result`: a stage sent a large result to the driver (collect, toPandas …)."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import execution_of_stage, severity_for, stage_stats
from analyzer.insights.finding import Finding
from analyzer.insights.thresholds import Thresholds
from analyzer.report.formatters import fmt_bytes, fmt_count, fmt_duration_ms

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
                    ("result bytes", fmt_bytes(s.result_size_bytes)),
                    ("result tasks", fmt_count(s.n_result_tasks)),
                    ("getting result time", fmt_duration_ms(s.getting_result_sum_ms)),
                    ("result serialization time", fmt_duration_ms(s.result_serialization_sum_ms)),
                ),
                numbers=(
                    ("result_size_bytes", s.result_size_bytes),
                    ("n_result_tasks", s.n_result_tasks),
                    ("getting_result_ms", s.getting_result_sum_ms),
                    ("result_serialization_ms", s.result_serialization_sum_ms),
                ),
            )
        )
    return findings
