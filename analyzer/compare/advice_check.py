"""Advice checked on the next run: did a later run apply a setting the earlier run's findings
advised, and did the time it predicted come true? (docs/diff.md#advice-applied)

A setting counts as applied when the later run's value (its SQL execution's own setting, else
the application's) equals the advised value, or moves toward it from the earlier value. The
prediction (the advised finding's stage or query wall time minus its estimated loss) is then
set beside what the later run measured for the same stage (paired by position among its
execution's stages) or, when the stages do not pair up, for the same query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.cost import parse_memory_mib
from analyzer.insights import Finding
from analyzer.insights._common import parse_bytes
from analyzer.insights.advice import prediction_target, target_wall_ms
from analyzer.insights.finding import Advice, AdviceKind
from analyzer.units import parse_seconds

AdviceStatus = Literal["applied", "toward"]


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class AdviceOutcome:
    """One advised setting a later run applied, with the predicted and the measured change."""

    rule: str = field(metadata=_help("The rule whose finding advised it."))
    setting: str = field(metadata=_help("The Spark property."))
    advised: str = field(metadata=_help("The value the earlier run's finding advised."))
    before: str = field(metadata=_help("Its value in the earlier run (`(default)` marked)."))
    after: str = field(metadata=_help("Its value in the later run."))
    status: AdviceStatus = field(
        metadata=_help("`applied` (the advised value) or `toward` (moved toward it).")
    )
    target_before: str = field(metadata=_help("`stage 9` or `SQL execution 3` (earlier run)."))
    target_after: str | None = field(
        metadata=_help("The same stage or query in the later run; None when it has no partner.")
    )
    before_ms: int = field(metadata=_help("Its wall time in the earlier run."))
    predicted_ms: int | None = field(
        metadata=_help("Its wall time predicted with the advice; None: no prediction.")
    )
    after_ms: int | None = field(metadata=_help("Its wall time in the later run, if paired."))


def setting_number(kind: AdviceKind, text: str | None) -> float | None:
    """Read a setting's value as a number for comparing (flags: 1 or 0); None if unreadable.

    >>> [setting_number(k, v) for k, v in (("bytes", "64m"), ("memory", "2g"), ("flag", "TRUE"))]
    [67108864.0, 2048.0, 1.0]
    """
    if text is None:
        return None
    raw = text.removesuffix(" (default)").strip()
    if kind == "flag":
        low = raw.lower()
        return 1.0 if low == "true" else 0.0 if low == "false" else None
    if kind == "bytes":
        value = parse_bytes(raw, -1)
        return float(value) if value >= 0 else None
    if kind == "memory":
        mib = parse_memory_mib(raw)
        return float(mib) if mib is not None else None
    if kind == "duration":
        seconds = parse_seconds(raw, -1)
        return float(seconds) if seconds >= 0 else None
    try:
        return float(raw)
    except ValueError:
        return None


def applied_status(advice: Advice, after: str | None) -> AdviceStatus | None:
    """`applied` when `after` is the advised value, `toward` when it moved toward it from the
    earlier value, else None.

    >>> a = Advice("k", "2", "400", "", "count")
    >>> [applied_status(a, v) for v in ("2", "16", "800", None)]
    ['applied', 'toward', None, None]
    """
    if advice.value is None or after is None:
        return None
    advised = setting_number(advice.kind, advice.value)
    before = setting_number(advice.kind, advice.current)
    later = setting_number(advice.kind, after)
    if advised is None or later is None:
        return "applied" if after.strip() == advice.value else None
    if later == advised:
        return "applied"
    closer = before is not None and abs(later - advised) < abs(before - advised)
    if closer and before is not None and (later - before) * (advised - before) > 0:
        return "toward"
    return None


def _value_in(
    properties: Mapping[str, str], overrides: Mapping[str, str], advice: Advice
) -> str | None:
    """The setting in a run: its query's own value, else the application's, else (only when
    the earlier run had Spark's default too) that default."""
    if advice.setting in overrides:
        return overrides[advice.setting]
    if advice.setting in properties:
        return properties[advice.setting]
    if advice.current.endswith(" (default)"):
        return advice.current
    return None


def _stage_partner(
    baseline: Analysis, candidate: Analysis, b_execution: int, c_execution: int, stage_id: int
) -> int | None:
    """The candidate's stage at the same position among its execution's stages."""
    b_ex = baseline.executions_by_id.get(b_execution)
    c_ex = candidate.executions_by_id.get(c_execution)
    if b_ex is None or c_ex is None:
        return None
    b_stages, c_stages = sorted(b_ex.stage_ids), sorted(c_ex.stage_ids)
    if len(b_stages) != len(c_stages) or stage_id not in b_stages:
        return None
    return c_stages[b_stages.index(stage_id)]


def check_advice(
    baseline: Analysis,
    candidate: Analysis,
    baseline_findings: Sequence[Finding],
    execution_map: Mapping[int, int],
) -> tuple[AdviceOutcome, ...]:
    """Return each advised setting of `baseline_findings` that `candidate` applied.

    `execution_map` maps the baseline's execution ids to their partners in the candidate.
    """
    props = candidate.properties
    out: list[AdviceOutcome] = []
    for f in baseline_findings:
        c_execution = execution_map.get(f.execution_id) if f.execution_id is not None else None
        overrides: dict[str, str] = {}
        if c_execution is not None:
            ex = candidate.executions_by_id.get(c_execution)
            overrides = dict(ex.modified_configs) if ex is not None else {}
        for advice in f.advice:
            after = _value_in(props, overrides, advice)
            status = applied_status(advice, after)
            if status is None or after is None or advice.value is None:
                continue
            target = prediction_target(f)
            before_ms = target_wall_ms(baseline, target) if target is not None else None
            if target is None or before_ms is None:
                continue
            kind, ident = target
            predicted = advice.predicted_ms
            after_target: tuple[str, int] | None = None
            if kind == "stage" and f.execution_id is not None and c_execution is not None:
                partner = _stage_partner(baseline, candidate, f.execution_id, c_execution, ident)
                if partner is not None:
                    after_target = ("stage", partner)
            if after_target is None and c_execution is not None:
                if kind == "stage":
                    # The stages do not pair up: compare the query, predicted to save as much.
                    assert f.execution_id is not None
                    kind, ident = "execution", f.execution_id
                    before_ms = target_wall_ms(baseline, (kind, ident)) or 0
                    predicted = max(0, before_ms - f.estimated_lost_ms) if predicted else None
                after_target = ("execution", c_execution)
            after_ms = target_wall_ms(candidate, after_target) if after_target else None
            out.append(
                AdviceOutcome(
                    rule=f.rule,
                    setting=advice.setting,
                    advised=advice.value,
                    before=advice.current,
                    after=after,
                    status=status,
                    target_before=_name(kind, ident),
                    target_after=_name(*after_target) if after_target else None,
                    before_ms=before_ms,
                    predicted_ms=predicted,
                    after_ms=after_ms,
                )
            )
    return tuple(out)


def _name(kind: str, ident: int) -> str:
    return f"stage {ident}" if kind == "stage" else f"SQL execution {ident}"
