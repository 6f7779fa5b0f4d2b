"""Every rule, and `detect_all`: run them over an `Analysis`, keep one finding per place, group a
rule that fired on many stages of one query into one finding, rank them by estimated time lost.

See docs/findings.md.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Sequence

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.time_spent import stage_slack_ms
from analyzer.insights._common import context
from analyzer.insights.advice import predict
from analyzer.insights.broadcast import detect_large_broadcast
from analyzer.insights.cold_executors import detect_cold_executors
from analyzer.insights.data_skew import detect_data_skew
from analyzer.insights.executor_wait import detect_executor_wait
from analyzer.insights.failed_jobs import detect_failed_jobs
from analyzer.insights.failed_queries import detect_failed_queries
from analyzer.insights.file_scans import detect_small_files
from analyzer.insights.finding import SEVERITIES, Evidence, Finding, ev
from analyzer.insights.gc_pressure import detect_gc_pressure
from analyzer.insights.gpu_fallback import detect_gpu_fallback
from analyzer.insights.idle_cores import detect_idle_cores
from analyzer.insights.idle_executors import detect_idle_executors
from analyzer.insights.idle_session import detect_idle_session
from analyzer.insights.large_results import detect_large_results
from analyzer.insights.lost_executors import detect_lost_executors
from analyzer.insights.memory_pressure import detect_memory_pressure
from analyzer.insights.nested_loop_join import detect_nested_loop_join
from analyzer.insights.partition_pruning import detect_no_partition_pruning
from analyzer.insights.partition_sizes import detect_partition_sizes
from analyzer.insights.python_udf import detect_python_udf
from analyzer.insights.row_explosion import detect_row_explosion
from analyzer.insights.scheduler_delay import detect_scheduler_delay
from analyzer.insights.sort_merge_join import detect_small_side_sort_merge_join
from analyzer.insights.speculation import detect_speculation
from analyzer.insights.spill import detect_spill
from analyzer.insights.stage_retries import detect_stage_retries
from analyzer.insights.streaming_lag import detect_falling_behind
from analyzer.insights.streaming_phases import detect_hot_phase
from analyzer.insights.streaming_rates import detect_input_outpaces_processing
from analyzer.insights.streaming_state import detect_state_growth
from analyzer.insights.task_failures import detect_task_failures
from analyzer.insights.task_skew import detect_task_skew
from analyzer.insights.thresholds import Thresholds
from analyzer.insights.tiny_tasks import detect_tiny_tasks
from analyzer.insights.too_many_partitions import detect_too_many_partitions
from analyzer.insights.unsplit_skew import detect_unsplit_skew
from analyzer.units import fmt_duration_ms

Rule = Callable[[Analysis, Thresholds], list[Finding]]

RULES: tuple[Rule, ...] = (
    detect_failed_queries,
    detect_failed_jobs,
    detect_falling_behind,
    detect_input_outpaces_processing,
    detect_state_growth,
    detect_hot_phase,
    detect_task_failures,
    detect_stage_retries,
    detect_lost_executors,
    detect_executor_wait,
    detect_scheduler_delay,
    detect_cold_executors,
    detect_speculation,
    detect_row_explosion,
    detect_data_skew,
    detect_task_skew,
    detect_unsplit_skew,
    detect_too_many_partitions,
    detect_python_udf,
    detect_gpu_fallback,
    detect_idle_cores,
    detect_memory_pressure,
    detect_spill,
    detect_gc_pressure,
    detect_tiny_tasks,
    detect_partition_sizes,
    detect_small_side_sort_merge_join,
    detect_large_broadcast,
    detect_nested_loop_join,
    detect_small_files,
    detect_no_partition_pruning,
    detect_large_results,
    detect_idle_executors,
    detect_idle_session,
)
"""Every rule, in the order ties in `detect_all` keep."""

__all__ = ["RULES", "Rule", "detect_all"]


def _rank_key(finding: Finding) -> tuple[int, int]:
    return (-finding.estimated_lost_ms, -SEVERITIES.index(finding.severity))


SUPERSEDED = {
    "task-skew": ("data-skew", "aqe-skew-not-split", "cold-executors"),
    "python-udf": ("too-many-partitions",),
    "tiny-tasks": ("too-many-partitions",),
    "scheduler-delay": ("too-many-partitions",),
    "gc-pressure": ("memory-pressure",),
    "spill": ("memory-pressure",),
}
"""A finding of the key's rule is left out where one of these rules points at the same stage of
the same query: they name the cause of the same slow time more precisely (a hot key or a cold
executor behind a slow task; a fixed cost per partition behind a Python UDF's time or the
scheduler delay of many tiny tasks; GC and spill together as memory pressure)."""

KEEP_SEVERITY = frozenset({"failed-query", "failed-job"})
"""Rules whose severity says what happened (a failure), whatever their estimate is capped to."""

GROUP_MIN = 3
"""A rule firing on this many stages of one query (and at no node) becomes one finding."""


def _drop_superseded(findings: Sequence[Finding]) -> list[Finding]:
    places = {(f.rule, f.execution_id, f.stage_id) for f in findings}
    return [
        f
        for f in findings
        if not any(
            (other, f.execution_id, f.stage_id) in places for other in SUPERSEDED.get(f.rule, ())
        )
    ]


def _group(analysis: Analysis, findings: Sequence[Finding]) -> list[Finding]:
    """Merge stage-level findings of one rule and query into one, when there are many.

    The estimates add up, capped by the query's wall time: stages that ran side by side cannot
    have lost more time than the query took."""
    buckets: dict[tuple[str, int | None], list[Finding]] = defaultdict(list)
    for f in findings:
        if f.node_id is None and f.stage_id is not None:
            buckets[(f.rule, f.execution_id)].append(f)
    merged: dict[int, Finding] = {}
    dropped: set[int] = set()
    for group in buckets.values():
        if len(group) < GROUP_MIN:
            continue
        group.sort(key=_rank_key)
        first = group[0]
        stages = sorted({f.stage_id for f in group if f.stage_id is not None})
        lost = sum(f.estimated_lost_ms for f in group)
        if first.execution_id is not None and (
            wall := context(analysis).wall_ms(first.execution_id)
        ):
            lost = min(lost, wall)
        merged[id(first)] = Finding(
            rule=first.rule,
            severity=max((f.severity for f in group), key=SEVERITIES.index),
            title=f"{first.title} (and {len(group) - 1} more stages like it)",
            suggestion=first.suggestion,
            estimated_lost_ms=lost,
            estimate_method=first.estimate_method
            + "; summed over the stages, at most the query's wall time",
            execution_id=first.execution_id,
            stage_id=first.stage_id,
            stage_attempt_id=first.stage_attempt_id,
            task_ids=first.task_ids,
            advice=first.advice,
            evidence=(
                ev("stage_ids", "stages", ", ".join(map(str, stages)), "text"),
                ev("n_stages", "", len(stages), "count"),
                *first.evidence,
            ),
        )
        dropped.update(id(f) for f in group[1:])
    return [merged.get(id(f), f) for f in findings if id(f) not in dropped]


def _stage_wall_ms(analysis: Analysis, stage_id: int) -> int | None:
    walls = [w.wall_ms for (sid, _), w in analysis.stage_walls.items() if sid == stage_id]
    return sum(walls) if walls else None


STAGE_TIME_RULES = frozenset(
    {
        "data-skew",
        "task-skew",
        "idle-cores",
        "spill",
        "gc-pressure",
        "memory-pressure",
        "tiny-tasks",
        "too-many-partitions",
        "cold-executors",
        "small-files",
        "task-failures",
        "stage-retry",
    }
)
"""Rules whose estimate is how much sooner one stage (the finding's) would have ended."""


def _off_critical_path(
    analysis: Analysis, findings: Sequence[Finding], thresholds: Thresholds
) -> list[Finding]:
    """Keep of a stage-time estimate only what reaches its query.

    A stage off its query's critical path could have ended sooner by its slack
    (`time_spent.stage_slack_ms`: its consumers waited that long for other stages) with the
    query ending no sooner; a finding about it keeps what exceeds that, and is `info` when
    that is not significant.
    """
    ctx = context(analysis)
    slacks: dict[int, dict[int, int]] = {}
    out = []
    for f in findings:
        execution = (
            analysis.executions_by_id.get(f.execution_id) if f.execution_id is not None else None
        )
        if (
            f.rule not in STAGE_TIME_RULES
            or f.stage_id is None
            or execution is None
            or f.estimated_lost_ms <= 0
        ):
            out.append(f)
            continue
        if execution.execution_id not in slacks:
            slacks[execution.execution_id] = stage_slack_ms(
                execution.stage_ids, analysis.application.stages
            )
        slack = slacks[execution.execution_id].get(f.stage_id, 0)
        if slack <= 0:
            out.append(f)
            continue
        # What the stage saves still frees its slots for the stages beside it while every
        # slot was busy: on one slot all of it reaches the query, on 200 a 200th.
        lost = max(
            f.estimated_lost_ms - slack,
            int(f.estimated_lost_ms * _contended_share(analysis, f.stage_id)),
        )
        if lost >= f.estimated_lost_ms:
            out.append(f)
            continue
        loud = f.severity != "info" and ctx.significant(lost, f.execution_id, thresholds)
        out.append(
            dataclasses.replace(
                f,
                estimated_lost_ms=lost,
                severity=ctx.severity(lost, f.execution_id, thresholds) if loud else "info",
                estimate_method=f.estimate_method
                + f"; less the {fmt_duration_ms(slack)} by which the stage could have ended "
                "sooner without its query ending sooner (its consumers waited that long for "
                "other stages: it is off the query's critical path)",
                evidence=(
                    *f.evidence,
                    ev(
                        "slack_ms",
                        "stage's slack (off the query's critical path)",
                        slack,
                        "ms",
                        f" (before: {fmt_duration_ms(f.estimated_lost_ms)})",
                    ),
                ),
            )
        )
    return out


def _contended_share(analysis: Analysis, stage_id: int) -> float:
    """The share of a stage's saved time that would reach stages running beside it: the share
    of its wall time with every slot of its profile busy, over its slots."""
    ctx = context(analysis)
    walls = [w for (sid, _), w in ctx.walls.items() if sid == stage_id and w.wall_ms > 0]
    if not walls:
        return 1.0
    share = 0.0
    for wall in walls:
        attempt = ctx.attempts.get((wall.stage_id, wall.stage_attempt_id))
        profile = ctx.capacity.profile(attempt.resource_profile_id if attempt else 0)
        busy = analysis.running_tasks.busy_ms(wall.start_ms, wall.end_ms, profile)
        share = max(share, busy / wall.wall_ms / max(1, wall.slots))
    return min(1.0, share)


def _cap_estimates(
    analysis: Analysis, findings: Sequence[Finding], thresholds: Thresholds
) -> list[Finding]:
    """Cap estimates so that claims on the same time never add up past it.

    Largest first, each finding's estimate is cut to the wall time its stage (for a finding
    about one stage; and its stage attempt, for one about an attempt), its query and the
    application have left after the findings ranked above
    it took theirs; what it takes is then gone for the findings below. So per stage, per
    execution and per application the estimates sum to at most the wall time. A finding cut
    below significance is `info`.
    """
    ctx = context(analysis)
    # Each place's wall time (its stage, stage attempt, query or the application), and what the
    # findings ranked so far left of it.
    full: dict[tuple[object, ...], int] = {}
    left: dict[tuple[object, ...], int] = {}
    out = []
    for f in sorted(findings, key=_rank_key):
        lost = f.estimated_lost_ms
        if lost <= 0:
            out.append(f)
            continue
        places: list[tuple[tuple[object, ...], int | None]] = []
        if f.stage_id is not None and "stage_ids" not in {e.key for e in f.evidence}:
            places.append((("stage", f.stage_id), _stage_wall_ms(analysis, f.stage_id)))
            # A finding about one attempt also shares that attempt's wall: a failed attempt's
            # whole wall (stage-retry) holds the delay its failed tasks caused (task-failures).
            if f.stage_attempt_id is not None:
                attempt = analysis.stage_walls.get((f.stage_id, f.stage_attempt_id))
                places.append(
                    (
                        ("attempt", f.stage_id, f.stage_attempt_id),
                        attempt.wall_ms if attempt is not None else None,
                    )
                )
        if f.execution_id is not None:
            places.append((("execution", f.execution_id), ctx.wall_ms(f.execution_id)))
        if analysis.application.duration_ms is not None:
            places.append((("application",), ctx.wall_ms(None)))
        budgets = []
        for key, wall in places:
            if wall is None:
                continue
            if key not in full:
                full[key] = left[key] = wall
            budgets.append(key)
        capped = min([lost, *(max(0, left[b]) for b in budgets)])
        # Cut by the findings above it, or by its place's own wall time (a job's 70 ms against
        # its stage's 69 ms).
        by_others = any(left[b] < full[b] for b in budgets)
        for b in budgets:
            left[b] -= capped
        if capped == lost:
            out.append(f)
            continue
        severity = f.severity
        if f.rule not in KEEP_SEVERITY:
            significant = ctx.significant(capped, f.execution_id, thresholds)
            # Capping never raises a severity: an `info` finding stays `info`.
            loud = significant and f.severity != "info"
            severity = ctx.severity(capped, f.execution_id, thresholds) if loud else "info"
        out.append(
            dataclasses.replace(
                f,
                estimated_lost_ms=capped,
                severity=severity,
                estimate_method=f.estimate_method
                + (
                    f"; capped from {fmt_duration_ms(lost)} at the wall time the findings "
                    "ranked above it left of its stage, query and application"
                    if by_others
                    else f"; capped from {fmt_duration_ms(lost)} at the wall time of its "
                    "stage, query or application"
                ),
            )
        )
    return sorted(out, key=_rank_key)


UNMERGED_RULES = frozenset({"failed-query"})
"""Rules whose findings stay one per execution inside a streaming query (a failure's root cause
names its own execution)."""

STREAM_RULES = frozenset(
    {
        "streaming-falling-behind",
        "streaming-input-outpaces-processing",
        "streaming-state-growth",
        "streaming-hot-phase",
    }
)
"""Rules about a streaming query as a whole (never merged over its batches)."""


def _merge_batches(analysis: Analysis, findings: Sequence[Finding]) -> list[Finding]:
    """Merge the findings one rule made on several micro-batches of one streaming query run
    into one finding: the costliest batch's, with the number of batches and the summed cost.

    A micro-batch's time matters only as far as it overran the trigger (a batch within its
    trigger waits for the next one anyway), so on a query whose trigger interval is known, the
    cost of a finding on its batches is capped by the time they ran past the interval."""
    figures = {f.query.run_id: f for f in analysis.streaming}
    if not figures:
        return list(findings)
    run_of: dict[int, str] = {}
    for fig in figures.values():
        for execution_id in fig.execution_ids:
            run_of[execution_id] = fig.query.run_id
    buckets: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        run_id = run_of.get(f.execution_id) if f.execution_id is not None else None
        if run_id is not None and f.rule not in STREAM_RULES | UNMERGED_RULES:
            buckets[(f.rule, run_id)].append(f)
    replaced: dict[int, Finding] = {}
    dropped: set[int] = set()
    for (_, run_id), group in buckets.items():
        fig = figures[run_id]
        cap = fig.late_ms if fig.trigger_interval_ms is not None else None
        group.sort(key=_rank_key)
        first = group[0]
        lost = sum(f.estimated_lost_ms for f in group)
        method = first.estimate_method
        if len(group) > 1:
            method += "; summed over the batches"
        if cap is not None and lost > cap:
            lost = cap
            method += "; at most the time the query's batches ran past their trigger"
        if len(group) == 1 and lost == first.estimated_lost_ms:
            continue
        batch_of = {e: b.batch_id for b in fig.query.batches for e in b.execution_ids}
        batch_ids = sorted({batch_of[f.execution_id] for f in group if f.execution_id in batch_of})
        severity = max((f.severity for f in group), key=SEVERITIES.index)
        if lost == 0 and first.estimated_lost_ms > 0:
            severity = "info"  # a time cost that costs the query nothing
        title = first.title
        shown: tuple[Evidence, ...] = ()
        if len(group) > 1:
            # The figures are the costliest batch's: said so, as they read like the query's.
            costliest = batch_of.get(first.execution_id) if first.execution_id is not None else None
            where = f"batch {costliest}" if costliest is not None else "its costliest batch"
            title = (
                f"{title} (in {len(group)} micro-batches of streaming query {fig.query.label}; "
                f"figures of the costliest, {where})"
            )
            shown = (
                ev(
                    "shown_batch",
                    "figures below from",
                    f"{where} (SQL execution {first.execution_id}), the costliest",
                    "text",
                ),
            )
        replaced[id(first)] = Finding(
            rule=first.rule,
            severity=severity,
            title=title,
            suggestion=first.suggestion,
            estimated_lost_ms=lost,
            estimate_method=method,
            execution_id=first.execution_id,
            node_id=first.node_id,
            stage_id=first.stage_id,
            stage_attempt_id=first.stage_attempt_id,
            task_ids=first.task_ids,
            advice=first.advice,
            evidence=(
                ev("n_batches_with_finding", "micro-batches", len(group), "count"),
                ev(
                    "batch_ids",
                    "batch ids",
                    _id_ranges(batch_ids),
                    "text",
                ),
                ev("execution_ids", "", ", ".join(str(f.execution_id) for f in group[:50]), "text"),
                *shown,
                *first.evidence,
            ),
        )
        dropped.update(id(f) for f in group[1:])
    return [replaced.get(id(f), f) for f in findings if id(f) not in dropped]


def _id_ranges(ids: Sequence[int]) -> str:
    """Write sorted ids as ranges: `1-4, 7, 9-10`.

    >>> _id_ranges([1, 2, 3, 4, 7, 9, 10])
    '1-4, 7, 9-10'
    """
    parts: list[str] = []
    start = prev = None
    for i in ids:
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if start is not None:
            parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = i
    if start is not None:
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ", ".join(parts)


def detect_all(analysis: Analysis, thresholds: Thresholds | None = None) -> list[Finding]:
    """Run every rule in `RULES` and return the findings, largest estimated time lost first.

    One finding is kept per place (see `SUPERSEDED`), a rule firing on `GROUP_MIN` or more
    stages of a query gives one finding for them, and a rule firing on several micro-batches of
    one streaming query gives one finding for them (`_merge_batches`). Findings with equal
    estimates (often 0: not a time cost) are ordered by severity, then by the order of `RULES`.
    `thresholds` defaults to `Thresholds()`.
    """
    chosen = thresholds if thresholds is not None else Thresholds()
    found = [finding for rule in RULES for finding in rule(analysis, chosen)]
    grouped = _group(analysis, _off_critical_path(analysis, _drop_superseded(found), chosen))
    merged = _merge_batches(analysis, grouped)
    # A streaming query's findings, and one rule's merged over its batches, are about the whole
    # run, not the execution they point at: their estimates are capped by the time its batches
    # ran past their trigger, not by that execution's wall time.
    whole = [f for f in merged if _about_a_run(f)]
    rest = [f for f in merged if not _about_a_run(f)]
    capped = [*_cap_estimates(analysis, rest, chosen), *whole]
    return sorted((predict(analysis, f) for f in capped), key=_rank_key)


def _about_a_run(finding: Finding) -> bool:
    """Whether a finding is about a whole streaming query run (see `detect_all`)."""
    return finding.rule in STREAM_RULES or any(
        e.key == "n_batches_with_finding" for e in finding.evidence
    )
