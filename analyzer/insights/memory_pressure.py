"""Rule `memory-pressure`: a stage's tasks both collected garbage and spilled, too little
memory per task showing twice; each alone may be under the floor while together they matter."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_stats import gc_host_outlier
from analyzer.insights._common import context
from analyzer.insights.advice import advice_text, memory_advice
from analyzer.insights.finding import Finding, ev
from analyzer.insights.gc_pressure import gc_share, gc_wall_ms, host_gc_evidence, host_gc_text
from analyzer.insights.spill import spill_task_ms, spill_wall_ms
from analyzer.insights.spill_cause import spill_cause
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_pct

RULE = "memory-pressure"
METHOD = (
    "the GC part of the stage's run wall time (at most what taking the GC out of its tasks, "
    "laid out on its slots, saves) plus the spill I/O estimate of `spill`, at most the "
    "stage's running part (run and tail)"
)


def detect_memory_pressure(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts with GC of at least half `gc_share` of task time and a spill of at
    least a quarter of `spill_min_bytes`, when the two together cost a significant share.

    Not when the spill was not for want of memory (`spill_cause`: a spill-forcing setting, or
    a peak far below a task's memory): then GC and spill are not one shortage shown twice.
    """
    ctx = context(analysis)
    findings = []
    for key, s in ctx.stage_stats.items():
        share = gc_share(s.gc_sum_ms, s.duration_sum_ms)
        spilled = max(s.memory_bytes_spilled, s.disk_bytes_spilled)
        if share < thresholds.gc_share / 2 or spilled < thresholds.spill_min_bytes / 4:
            continue
        if ctx.in_failed_execution(s.stage_id):
            continue
        if spill_cause(analysis, key) is not None:
            continue  # the spill was not for want of memory: `spill` and `gc-pressure` say so
        execution_id = ctx.stage_execution(s.stage_id)
        gc_ms = gc_wall_ms(analysis, key)
        spill_ms = spill_wall_ms(analysis, key, spill_task_ms(spilled, thresholds))
        wall = ctx.walls.get(key)
        cap = wall.run_ms + wall.tail_ms if wall is not None else gc_ms + spill_ms
        lost_ms = min(gc_ms + spill_ms, cap)
        advice = memory_advice(analysis, key)
        # GC far above the rest on one host: that host first; the spill, even over the hosts,
        # keeps its memory advice.
        host = gc_host_outlier(analysis.tasks, *key)
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=(
                f"Stage {s.stage_id}: memory pressure: {fmt_pct(share)} of task time in GC "
                f"and {fmt_bytes(spilled)} spilled"
                + (
                    f" (GC {fmt_pct(host.gc_share)} on host {host.host}, "
                    f"{fmt_pct(host.gc_share_elsewhere)} elsewhere)"
                    if host is not None
                    else ""
                )
            ),
            suggestion=(
                (host_gc_text(host) + " For the spill: g" if host is not None else "G")
                + "ive each task more memory: smaller partitions, fewer concurrent tasks per "
                "executor or more executor memory"
                + (f" ({advice_text(advice)})" if advice_text(advice) else "")
                + "; avoid caching deserialized objects."
            ),
            advice=advice,
            execution_id=execution_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            evidence=(
                ev("gc_ms", "GC time (tasks)", s.gc_sum_ms, "ms"),
                ev("gc_share", "GC share of task time", share, "share"),
                ev("gc_wall_ms", "GC (wall)", gc_ms, "ms"),
                ev("bytes_spilled", "spilled", spilled, "bytes"),
                ev("spill_wall_ms", "spill I/O (wall, estimated)", spill_ms, "ms"),
                *host_gc_evidence(host),
            ),
        )
        if finding is not None:
            findings.append(finding)
    return findings
