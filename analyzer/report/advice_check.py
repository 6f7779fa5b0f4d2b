"""The view of one advised setting that a later run applied: the setting's change, then the
predicted against the measured time of what the advice named (docs/diff.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.compare.advice_check import AdviceOutcome
from analyzer.units import fmt_duration_ms


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class AdviceCheckView:
    """One advised setting the candidate applied, worded."""

    status: str = field(metadata=_help("`applied` or `toward` (a CSS class too)."))
    line_str: str = field(
        metadata=_help(
            "`spark.sql.shuffle.partitions 400 → 2 as advised (too-many-partitions): stage 9 "
            "went from 15.1 s to 1.2 s; predicted 1.5 s`."
        )
    )


def build_advice_check_view(outcome: AdviceOutcome) -> AdviceCheckView:
    """Word one applied advice: the setting's change, then predicted against measured.

    >>> o = AdviceOutcome("r", "k", "2", "400", "2", "applied", "stage 4", "stage 3", 31_000,
    ...                   5_500, 6_100)
    >>> for part in build_advice_check_view(o).line_str.split("; "):
    ...     print(part)
    k 400 → 2 as advised (r): stage 4 went from 31.0 s to 6.1 s (stage 3 in the candidate)
    predicted 5.5 s
    """
    how = "as advised" if outcome.status == "applied" else f"toward the advised {outcome.advised}"
    line = f"{outcome.setting} {outcome.before} → {outcome.after} {how} ({outcome.rule}): "
    if outcome.after_ms is None:
        line += f"{outcome.target_before} has no partner in the candidate"
    else:
        line += (
            f"{outcome.target_before} went from {fmt_duration_ms(outcome.before_ms)} to "
            f"{fmt_duration_ms(outcome.after_ms)}"
        )
        if outcome.target_after and outcome.target_after != outcome.target_before:
            line += f" ({outcome.target_after} in the candidate)"
    if outcome.predicted_ms is not None:
        line += f"; predicted {fmt_duration_ms(outcome.predicted_ms)}"
    return AdviceCheckView(status=outcome.status, line_str=line)
