"""Rule `gc-pressure`: a stage's tasks spent much of their run time in JVM garbage collection."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.stage_stats import HostGc, gc_host_outlier, part_saved_ms
from analyzer.insights._common import context, stage_part_wall_ms
from analyzer.insights.advice import advice_text, memory_advice
from analyzer.insights.finding import Evidence, Finding, ev
from analyzer.insights.spill_cause import spill_cause
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count, fmt_pct

RULE = "gc-pressure"
METHOD = (
    "the GC part of the stage's running wall time: its run part × GC time / task run time; at "
    "most how much sooner its tasks, laid out in launch order on its slots, end without their "
    "GC"
)


def gc_share(gc_ms: int, task_ms: int) -> float:
    """Return GC time as a share of task time, at most 1 (0 when nothing ran).

    Task time is launch to finish, which holds every GC pause of the task; executor run time
    can be far smaller than the task's GC time (deserialization, GPU plugins), so it is not
    the denominator.

    >>> gc_share(250, 1000)
    0.25
    >>> gc_share(900, 300)
    1.0
    """
    return min(1.0, gc_ms / task_ms) if task_ms > 0 else 0.0


def gc_part_wall_ms(analysis: Analysis, key: tuple[int, int]) -> int:
    """The GC part of a stage attempt's run part: `gc_wall_ms` before its cap, and a bound of
    it that needs no pass over the tasks."""
    return stage_part_wall_ms(analysis, key, lambda w: w.gc_ms, lambda s: s.gc_sum_ms)


def gc_wall_ms(analysis: Analysis, key: tuple[int, int]) -> int:
    """The wall time a stage attempt's tasks spent in GC: the GC part of its run part, at most
    how much sooner its tasks, laid out in launch order on its slots, end without their GC (a
    task's GC matters only as far as it held the stage's end: stragglers that ran long without
    GC keep the stage as long)."""
    gc_ms = gc_part_wall_ms(analysis, key)
    wall = context(analysis).walls.get(key)
    if wall is not None and wall.peak_running > 0:
        gc_ms = min(gc_ms, part_saved_ms(analysis.tasks, *key, "gc_ms", wall.peak_running))
    return gc_ms


def detect_gc_pressure(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report stage attempts whose GC time is at least `gc_share` of their task time, when it
    cost a meaningful share of the query's wall time."""
    ctx = context(analysis)
    findings = []
    for key, s in ctx.stage_stats.items():
        share = gc_share(s.gc_sum_ms, s.duration_sum_ms)
        if s.gc_sum_ms == 0 or share < thresholds.gc_share:
            continue
        execution_id = ctx.stage_execution(s.stage_id)
        if not ctx.significant(gc_part_wall_ms(analysis, key), execution_id, thresholds):
            continue  # its estimate is at most that: no finding, whatever the tasks say
        lost_ms = gc_wall_ms(analysis, key)
        spilled = s.memory_bytes_spilled > 0
        host = gc_host_outlier(analysis.tasks, *key)
        if host is not None and host.gc_share_elsewhere >= thresholds.gc_share:
            host = None  # every host collected too much: the job's memory, not one host
        advice = memory_advice(analysis, key) if spilled and host is None else ()
        why_no_value = (
            "the tasks did not spill"
            if not spilled
            else "the tasks' spill was not for want of memory"
            if spill_cause(analysis, key) is not None
            else "the tasks already had the memory their spill asked for"
        )
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=f"Stage {s.stage_id}: {fmt_pct(share)} of task time was GC"
            + (
                f", {fmt_pct(host.gc_share)} on host {host.host} against "
                f"{fmt_pct(host.gc_share_elsewhere)} elsewhere"
                if host is not None
                else ""
            ),
            suggestion=host_gc_text(host)
            if host is not None
            else (
                "Reduce memory pressure per task: more executor memory, fewer concurrent "
                "tasks per executor or more partitions"
                + (
                    f" ({advice_text(advice)})"
                    if advice_text(advice)
                    else f" ({why_no_value}, so the run does not say how much more memory would do)"
                )
                + "; avoid collecting large rows or caching deserialized objects "
                "(prefer MEMORY_AND_DISK_SER)."
            ),
            advice=advice,
            execution_id=execution_id,
            stage_id=s.stage_id,
            stage_attempt_id=s.stage_attempt_id,
            evidence=(
                ev("gc_ms", "GC time", s.gc_sum_ms, "ms"),
                ev("task_ms", "task time", s.duration_sum_ms, "ms"),
                ev("run_ms", "executor run time", s.run_sum_ms, "ms"),
                ev("gc_share", "GC share", share, "share"),
                *host_gc_evidence(host),
            ),
        )
        if finding is not None:
            findings.append(finding)
    return findings


def host_gc_text(host: HostGc) -> str:
    """The suggestion for GC that one host's tasks carried."""
    return (
        f"Most of the GC was one host's: the {fmt_count(host.n_tasks)} tasks on {host.host} "
        f"({fmt_count(host.n_executors)} executor{'s' if host.n_executors != 1 else ''}) spent "
        f"{fmt_pct(host.gc_share)} of their time in GC against "
        f"{fmt_pct(host.gc_share_elsewhere)} on the other {fmt_count(host.n_other_hosts)} "
        f"host{'s' if host.n_other_hosts != 1 else ''}, doing the stage's same work. Look at "
        "that host (its memory and swap, other processes on it, its executors' logs) before "
        "giving every executor more memory."
    )


def host_gc_evidence(host: HostGc | None) -> tuple[Evidence, ...]:
    """The evidence of GC that one host's tasks carried (none without such a host)."""
    if host is None:
        return ()
    return (
        ev("gc_host", "host with the most GC", host.host, "text"),
        ev("gc_host_share", "its tasks' GC share", host.gc_share, "share"),
        ev("gc_share_elsewhere", "GC share on the other hosts", host.gc_share_elsewhere, "share"),
    )
