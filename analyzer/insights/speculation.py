"""Rule `speculation`: Spark launched speculative copies of slow tasks."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds

RULE = "speculation"
METHOD = (
    "not a time cost: speculation shortens stages; the duplicates cost executor time "
    "(reported as evidence)"
)


def detect_speculation(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts that ran speculative task attempts (slow tasks or executors)."""
    ctx = context(analysis)
    findings = []
    for _key, s in ctx.stage_stats.items():
        if s.n_speculative == 0:
            continue
        findings.append(
            Finding(
                rule=RULE,
                severity="info",
                title=f"Stage {s.stage_id}: {s.n_speculative} speculative task attempt(s)",
                suggestion=(
                    "Speculation hides slow tasks; if they are slow because of their data, fix "
                    "the skew (see task-skew); if one host is slow, check it. Tune "
                    "spark.speculation.multiplier / spark.speculation.quantile."
                ),
                estimated_lost_ms=0,
                estimate_method=METHOD,
                execution_id=ctx.stage_execution(s.stage_id),
                stage_id=s.stage_id,
                stage_attempt_id=s.stage_attempt_id,
                evidence=(
                    ev("n_speculative", "speculative attempts", s.n_speculative, "count"),
                    ev("n_killed", "killed attempts", s.n_killed, "count"),
                    ev("n_attempts", "all attempts", s.n_attempts, "count"),
                ),
            )
        )
    return findings
