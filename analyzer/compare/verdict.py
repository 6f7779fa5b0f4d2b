"""The verdict: which one thing explains most of the change between two runs.

Every paired execution whose wall time changed significantly gets a cause: the first of `RULES`
that fires for it. The causes' changes are summed (executions only in one run count for
`plan-change`, time outside SQL executions for `outside-sql`), and the cause with the largest sum
is the verdict. Rules, their order and every threshold below are documented in
docs/diff.md#the-verdict; keep the two in step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from analyzer.compare.figures import ExecutionFigures, ExecutorFigures
from analyzer.compare.result import (
    Cause,
    CauseShare,
    ExecutionCause,
    ExecutionDiff,
    FindingChanges,
    Verdict,
)
from analyzer.insights import Finding
from analyzer.units import fmt_bytes, fmt_count, fmt_duration_ms, fmt_pct, fmt_ratio, plural

MIN_CHANGE_SHARE = 0.10
"""A change smaller than this share of the baseline's time is no change …"""
MIN_CHANGE_MS = 1_000
"""… and so is one under this many ms, for the whole run."""
MIN_EXECUTION_CHANGE_MS = 500
"""An execution's change counts from this many ms (and `MIN_CHANGE_SHARE` of its wall time)."""
UNRELATED_MAX_SHARE = 0.5
"""Runs whose paired executions hold less than this share of either run's SQL time are
unrelated, whatever their applications' names (two runs of one script named alike can still do
different work)."""
FAILED_MAIN_SHARE = 0.5
"""A run whose failed executions hold at least this share of its SQL time failed its main work:
the verdict says so, since its time measures a run cut short."""
FAILED_SHARE = 0.25
"""`failures`: failed task attempts' time grew by this share of the execution's change."""
INPUT_MIN_FACTOR = 1.5
"""`more-input`: rows or bytes read grew at least this much …"""
INPUT_TIME_EXPONENT = 0.5
"""… and at least (time factor) ** this: a similar factor, at least half of it on a log scale."""
CORES_MAX_FACTOR = 0.8
"""`fewer-cores`: the peak cores fell to this share or less …"""
CORES_WORK_FACTOR = 0.8
"""… and task time grew less than this share of the wall-time factor (same work, fewer hands)."""
TASKS_MIN_FACTOR = 1.5
"""`partitions`: task attempts grew at least this much, with the declared shuffle partitions or
the files read grown at least as much as this too."""
SKEW_SHARE = 0.5
"""`skew`: the critical path's longest-minus-median task times grew by this share of the
execution's change …"""
SKEW_READ_FACTOR = 4.0
"""… and a skew finding is new at it, or its most uneven stage's largest task read this many
times the median task's bytes."""
SKEW_RULES = frozenset({"data-skew", "task-skew", "unsplit-skew"})
SPILL_MIN_FACTOR = 2.0
"""`spill`: spilled bytes grew at least this much …"""
SPILL_MIN_BYTES = 16 << 20
"""… to at least this many bytes."""


@dataclass(frozen=True)
class RunContext:
    """What every rule may read besides the execution: capacity, new findings."""

    baseline_executors: ExecutorFigures
    candidate_executors: ExecutorFigures
    new_findings: Sequence[Finding]


def _factor(before: float, after: float) -> float | None:
    """after / before; None when the baseline is 0."""
    return after / before if before > 0 else None


def _failures(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    b, c = ed.baseline, ed.candidate
    if c.status == "FAILED" and b.status != "FAILED":
        return f"it failed in the candidate ({plural(c.n_failed_tasks, 'failed task attempt')})"
    failed_growth = c.failed_run_ms - b.failed_run_ms
    if failed_growth >= FAILED_SHARE * ed.change_ms and failed_growth > 0:
        return (
            f"failed task attempts took {fmt_duration_ms(c.failed_run_ms)} of task time "
            f"(baseline {fmt_duration_ms(b.failed_run_ms)})"
        )
    if c.n_stage_retries > b.n_stage_retries:
        return (
            f"{plural(c.n_stage_retries, 'stage retry', 'stage retries')} "
            f"(baseline {b.n_stage_retries})"
        )
    return None


def _input_factor(b: ExecutionFigures, c: ExecutionFigures) -> tuple[float, str] | None:
    options = []
    rows = _factor(b.input_rows, c.input_rows)
    if rows is not None:
        options.append((rows, f"{fmt_count(b.input_rows)} → {fmt_count(c.input_rows)} rows read"))
    size = _factor(b.input_bytes, c.input_bytes)
    if size is not None:
        options.append((size, f"{fmt_bytes(b.input_bytes)} → {fmt_bytes(c.input_bytes)} read"))
    return max(options, key=lambda o: o[0]) if options else None


def _more_input(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    b, c = ed.baseline, ed.candidate
    grown = _input_factor(b, c)
    time = _factor(b.wall_ms, c.wall_ms)
    if grown is None or time is None:
        return None
    factor, what = grown
    if factor >= INPUT_MIN_FACTOR and factor >= time**INPUT_TIME_EXPONENT:
        return f"input grew {fmt_ratio(factor)} ({what}) while wall time grew {fmt_ratio(time)}"
    return None


def _fewer_cores(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    before, after = ctx.baseline_executors.peak_cores, ctx.candidate_executors.peak_cores
    cores = _factor(before, after)
    time = _factor(ed.baseline.wall_ms, ed.candidate.wall_ms)
    work = _factor(ed.baseline.task_run_ms, ed.candidate.task_run_ms)
    if cores is None or time is None or work is None or cores > CORES_MAX_FACTOR:
        return None
    if work <= CORES_WORK_FACTOR * time:
        return (
            f"peak cores {before} → {after}: task time {fmt_ratio(work)} but wall time "
            f"{fmt_ratio(time)}"
        )
    return None


def _partitions(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    b, c = ed.baseline, ed.candidate
    tasks = _factor(b.n_tasks, c.n_tasks)
    if tasks is None or tasks < TASKS_MIN_FACTOR:
        return None
    declared = _factor(b.shuffle_partitions, c.shuffle_partitions)
    files = _factor(b.files_read, c.files_read)
    because = []
    if declared is not None and declared >= TASKS_MIN_FACTOR:
        because.append(
            f"its exchanges declare {fmt_count(c.shuffle_partitions)} shuffle partitions "
            f"instead of {fmt_count(b.shuffle_partitions)}"
        )
    if files is not None and files >= TASKS_MIN_FACTOR:
        because.append(
            f"it read {fmt_count(c.files_read)} files instead of {fmt_count(b.files_read)}"
        )
    if not because:
        return None
    return (
        f"{fmt_count(b.n_tasks)} → {fmt_count(c.n_tasks)} tasks ({fmt_ratio(tasks)}): "
        + "; ".join(because)
    )


def aqe_differences(b: ExecutionFigures, c: ExecutionFigures) -> list[str]:
    """Say which AQE decisions differ between two runs of an execution (empty: none)."""
    qa, qc = b.aqe, c.aqe
    out = []
    if qa.adaptive != qc.adaptive:
        out.append(
            f"adaptive execution {'on' if qa.adaptive else 'off'} → "
            f"{'on' if qc.adaptive else 'off'}"
        )
    if qa.runtime_joins != qc.runtime_joins:
        out.append(
            "run-time join switches: "
            + (", ".join(qa.runtime_joins) or "none")
            + " in the baseline, "
            + (", ".join(qc.runtime_joins) or "none")
            + " in the candidate"
        )
    if (qa.n_coalesced_reads > 0) != (qc.n_coalesced_reads > 0):
        out.append(f"coalesced shuffle reads {qa.n_coalesced_reads} → {qc.n_coalesced_reads}")
    if (qa.skewed_partitions > 0) != (qc.skewed_partitions > 0):
        out.append(f"skewed partitions split {qa.skewed_partitions} → {qc.skewed_partitions}")
    if qa.n_local_reads != qc.n_local_reads:
        out.append(f"local shuffle reads {qa.n_local_reads} → {qc.n_local_reads}")
    return out


def _plan_change(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    parts = []
    joins: dict[str, int] = {}
    for s in ed.plan.join_switches:
        key = f"{s.baseline_name} → {s.candidate_name}"
        joins[key] = joins.get(key, 0) + 1
    if joins:
        parts.append(
            "join strategy switched: "
            + ", ".join(k + (f" (×{n})" if n > 1 else "") for k, n in joins.items())
        )
    aqe = aqe_differences(ed.baseline, ed.candidate)
    parts += aqe
    if not joins and not aqe and ed.plan.changed:
        # One operator in both lists sits elsewhere in the other plan (a broadcast of the other
        # side of a join): said so, not as one added and one removed.
        ops = [
            f"{name} moved" + (f" (×{n})" if n > 1 else "") + " to another place in the plan"
            for name, n in ed.plan.moved
        ]
        ops += [f"+{n} {name}" for name, n in ed.plan.only_in("candidate")]
        ops += [f"−{n} {name}" for name, n in ed.plan.only_in("baseline")]
        ops += [f"{s.baseline_name} → {s.candidate_name}" for s in ed.plan.switches]
        parts.append("operators changed: " + ", ".join(ops))
    return "; ".join(parts) if parts else None


def _skew(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    b, c = ed.baseline, ed.candidate
    growth = c.straggler_ms - b.straggler_ms
    top = c.straggler
    if top is None or growth < SKEW_SHARE * ed.change_ms or growth <= 0:
        return None
    new_rules = sorted(
        {f.rule for f in ctx.new_findings if f.execution_id == c.execution_id} & SKEW_RULES
    )
    read = _factor(top.read_median_bytes, top.read_max_bytes)
    uneven = read is not None and read >= SKEW_READ_FACTOR
    if not new_rules and not uneven:
        return None
    text = (
        f"stage {top.stage_id}'s longest task took {fmt_duration_ms(top.max_task_ms)} against "
        f"a median of {fmt_duration_ms(top.median_task_ms)}"
    )
    if b.straggler is not None:
        s = b.straggler
        text += (
            f" (baseline: stage {s.stage_id}, {fmt_duration_ms(s.max_task_ms)} vs "
            f"{fmt_duration_ms(s.median_task_ms)})"
        )
    if uneven:
        text += (
            f"; it read {fmt_bytes(top.read_max_bytes)} against a median of "
            f"{fmt_bytes(top.read_median_bytes)}"
        )
    if new_rules:
        text += "; new finding: " + ", ".join(new_rules)
    return text


def _spill(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    b, c = ed.baseline.spill_bytes, ed.candidate.spill_bytes
    if c >= SPILL_MIN_BYTES and c >= SPILL_MIN_FACTOR * b:
        return f"tasks spilled {fmt_bytes(c)} (baseline {fmt_bytes(b)})"
    return None


def _slower_tasks(ed: ExecutionDiff, ctx: RunContext) -> str | None:
    b, c = ed.baseline, ed.candidate
    work = _factor(b.task_run_ms, c.task_run_ms)
    time = _factor(b.wall_ms, c.wall_ms)
    return (
        f"the same plan and input took longer: task time {fmt_ratio(work)}, wall time "
        f"{fmt_ratio(time)} (slower or busier machines?)"
    )


Rule = Callable[[ExecutionDiff, RunContext], str | None]
RULES: tuple[tuple[Cause, Rule], ...] = (
    ("failures", _failures),
    ("more-input", _more_input),
    ("fewer-cores", _fewer_cores),
    ("partitions", _partitions),
    ("plan-change", _plan_change),
    ("skew", _skew),
    ("spill", _spill),
    ("slower-tasks", _slower_tasks),
)
"""In order: the first that fires names an execution's cause; `slower-tasks` always fires."""


def _no_change_reason(total_ms: float, before_ms: float) -> str:
    """Why a difference is no change, with its direction and the bound it stayed under.

    The difference is the SQL executions' change plus time outside them when that grew.

    >>> _no_change_reason(-195, 20_000)
    'a difference of 195 ms less: under 1.0 s, no change'
    >>> _no_change_reason(1256, 13_754)
    "a difference of 1.3 s more: 9.1 % of the baseline's 13.8 s, under 10 %, no change"
    >>> _no_change_reason(1999, 20_000)[:33], _no_change_reason(0, 20_000)
    ('a difference of 2.0 s more: 9.9 %', 'no difference: no change')
    """
    if total_ms == 0:
        return "no difference: no change"
    direction = "more" if total_ms > 0 else "less"
    amount = f"a difference of {fmt_duration_ms(abs(total_ms))} {direction}"
    if abs(total_ms) < MIN_CHANGE_MS:
        return f"{amount}: under {fmt_duration_ms(MIN_CHANGE_MS)}, no change"
    # Cut, not rounded: a share just under the bound never reads as the bound itself.
    share = math.floor(1000 * abs(total_ms) / before_ms) / 1000 if before_ms else 0.0
    return (
        f"{amount}: {fmt_pct(share)} of the baseline's {fmt_duration_ms(before_ms)}, under "
        f"{int(MIN_CHANGE_SHARE * 100)} %, no change"
    )


def significant(change_ms: float, before_ms: float, floor_ms: float) -> bool:
    """True when a change is at least `MIN_CHANGE_SHARE` of `before_ms` and `floor_ms`.

    >>> significant(600, 1000, MIN_EXECUTION_CHANGE_MS), significant(600, 10_000, 500)
    (True, False)
    """
    return abs(change_ms) >= floor_ms and abs(change_ms) >= MIN_CHANGE_SHARE * before_ms


def execution_cause(ed: ExecutionDiff, ctx: RunContext) -> ExecutionCause:
    """Name one execution's cause: the first rule of `RULES` that fires."""
    for cause, rule in RULES:
        reason = rule(ed, ctx)
        if reason is not None:
            return ExecutionCause(
                baseline_id=ed.baseline.execution_id,
                candidate_id=ed.candidate.execution_id,
                change_ms=ed.change_ms,
                cause=cause,
                reason=reason,
            )
    raise AssertionError("slower-tasks always fires")


def failed_main_work(figures: Sequence[ExecutionFigures], sql_ms: int, side: str) -> str | None:
    """Say that a run's main work failed: its failed executions hold at least
    `FAILED_MAIN_SHARE` of its SQL time (`side` is `baseline` or `candidate`); else None.

    >>> failed_main_work([], 0, "baseline") is None
    True
    """
    failed = sorted((f for f in figures if f.status == "FAILED"), key=lambda f: f.execution_id)
    # A nested execution's time is in its root's: counted once, as the SQL time counts it.
    failed_ms = sum(f.wall_ms for f in failed if not f.nested)
    if not failed or sql_ms <= 0 or failed_ms < FAILED_MAIN_SHARE * sql_ms:
        return None
    ids = ", ".join(str(f.execution_id) for f in failed)
    return (
        f"the {side}'s main work failed: SQL execution{'s' if len(failed) > 1 else ''} {ids} "
        f"failed, {fmt_duration_ms(failed_ms)} of its {fmt_duration_ms(sql_ms)} of SQL time "
        f"({fmt_pct(failed_ms / sql_ms)}); its time is that of a run cut short"
    )


def build_verdict(
    executions: Sequence[ExecutionDiff],
    baseline_only: Sequence[ExecutionFigures],
    candidate_only: Sequence[ExecutionFigures],
    findings: FindingChanges,
    app_ms: tuple[int | None, int | None],
    sql_ms: tuple[int, int],
    executors: tuple[ExecutorFigures, ExecutorFigures],
) -> Verdict:
    """Decide what explains most of the change (see the module's docstring)."""
    base_sql, cand_sql = sql_ms
    # Nested executions' time is in their roots', as each run's SQL time counts it.
    paired_b = sum(e.baseline.wall_ms for e in executions if not e.baseline.nested)
    paired_c = sum(e.candidate.wall_ms for e in executions if not e.candidate.nested)

    def verdict(cause: Cause, reason: str, shares: tuple[CauseShare, ...] = ()) -> Verdict:
        return Verdict(
            cause=cause,
            reason=reason,
            baseline_sql_ms=base_sql,
            candidate_sql_ms=cand_sql,
            baseline_app_ms=app_ms[0],
            candidate_app_ms=app_ms[1],
            shares=shares,
            executions=tuple(causes),
            notes=notes,
        )

    causes: list[ExecutionCause] = []
    notes = tuple(
        note
        for note in (
            failed_main_work(
                [*(e.baseline for e in executions), *baseline_only], base_sql, "baseline"
            ),
            failed_main_work(
                [*(e.candidate for e in executions), *candidate_only], cand_sql, "candidate"
            ),
        )
        if note is not None
    )
    # A query whose log ends before it did has no time to compare with its other run's.
    cut = [
        (side, figures)
        for e in executions
        for side, figures, other in (
            ("baseline", e.baseline, e.candidate),
            ("candidate", e.candidate, e.baseline),
        )
        if not figures.ended and other.ended
    ]
    if cut:
        side, first = cut[0]
        more = f" (and {len(cut) - 1} more)" if len(cut) > 1 else ""
        return verdict(
            "incomplete",
            f"the {side}'s SQL execution {first.execution_id}{more} has no end event in its "
            "log where the other run's has one: its time is not known, so the runs' times are "
            "not compared",
        )
    share_b = paired_b / base_sql if base_sql else 1.0
    share_c = paired_c / cand_sql if cand_sql else 1.0
    if (baseline_only or candidate_only) and (
        not executions or min(share_b, share_c) < UNRELATED_MAX_SHARE
    ):
        paired = (
            f"{len(executions)} of {len(executions) + len(baseline_only)} baseline and "
            f"{len(executions) + len(candidate_only)} candidate SQL executions pair up "
            "(docs/diff.md#matching-executions)"
        )
        if not executions:
            return verdict("unrelated", f"{paired}: these look like different applications")
        return verdict(
            "unrelated",
            f"{paired}, but they hold only {fmt_pct(share_b)} of the baseline's and "
            f"{fmt_pct(share_c)} of the candidate's SQL time: the runs did different work, "
            "and their times are not comparable",
        )
    ctx = RunContext(executors[0], executors[1], findings.new)
    change = cand_sql - base_sql
    app_before, app_after = app_ms
    outside = None
    if app_before is not None and app_after is not None:
        outside = (app_after - app_before) - change
    total = change + max(0, outside or 0)
    before = app_before or base_sql
    if not significant(total, before, MIN_CHANGE_MS):
        return verdict("no-change", _no_change_reason(total, before))
    if total < 0:
        # The headline is the SQL executions' change; the application's is told apart.
        reason = f"the candidate's SQL executions took {fmt_duration_ms(-change)} less"
        if (
            app_before is not None
            and app_after is not None
            and outside is not None
            and abs(outside) >= MIN_CHANGE_MS
        ):
            app_change = app_after - app_before
            more_less = "less" if app_change <= 0 else "more"
            reason += (
                f"; the application as a whole {fmt_duration_ms(abs(app_change))} {more_less} "
                f"(time outside SQL executions {'grew' if outside > 0 else 'fell'} by "
                f"{fmt_duration_ms(abs(outside))})"
            )
        return verdict("faster", reason)
    changed = [
        e
        for e in executions
        if e.change_ms > 0 and significant(e.change_ms, e.baseline.wall_ms, MIN_EXECUTION_CHANGE_MS)
    ] or [e for e in executions if e.change_ms > 0]
    causes = [execution_cause(e, ctx) for e in changed]
    sums: dict[Cause, list[ExecutionCause]] = {}
    for ec in causes:
        sums.setdefault(ec.cause, []).append(ec)
    shares = [
        CauseShare(
            cause=cause,
            change_ms=sum(ec.change_ms for ec in items),
            reasons=tuple(
                f"SQL execution {ec.candidate_id}: {ec.reason}"
                for ec in sorted(items, key=lambda ec: -ec.change_ms)
            ),
        )
        for cause, items in sums.items()
    ]
    only = sum(e.wall_ms for e in candidate_only if not e.nested) - sum(
        e.wall_ms for e in baseline_only if not e.nested
    )
    if only > 0 and significant(only, base_sql, MIN_EXECUTION_CHANGE_MS):
        shares.append(
            CauseShare(
                cause="plan-change",
                change_ms=only,
                reasons=(
                    f"executions only in the candidate took {fmt_duration_ms(only)} more than "
                    "those only in the baseline",
                ),
            )
        )
    if outside is not None and outside > 0 and significant(outside, app_before or 0, MIN_CHANGE_MS):
        shares.append(
            CauseShare(
                cause="outside-sql",
                change_ms=outside,
                reasons=(
                    f"time outside SQL executions (jobs without SQL, the driver alone) grew by "
                    f"{fmt_duration_ms(outside)}",
                ),
            )
        )
    merged: dict[Cause, CauseShare] = {}
    for share in shares:
        if share.cause in merged:
            old = merged[share.cause]
            share = CauseShare(
                cause=share.cause,
                change_ms=old.change_ms + share.change_ms,
                reasons=old.reasons + share.reasons,
            )
        merged[share.cause] = share
    order = [cause for cause, _ in RULES] + ["outside-sql"]
    ranked = sorted(merged.values(), key=lambda s: (-s.change_ms, order.index(s.cause)))
    if not ranked:
        return verdict("slower-tasks", "no execution's time changed significantly")
    top = ranked[0]
    return verdict(top.cause, top.reasons[0], tuple(ranked))
