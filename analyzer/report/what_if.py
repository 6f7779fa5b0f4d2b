"""What if the run had had other task slots: the predicted walls of the application and of its
slowest shown executions, one row per slot count (`aggregate.what_if` computes them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.what_if import WhatIf
from analyzer.report.selection import Selection, by_duration
from analyzer.units import fmt_duration_ms, plural

MAX_EXECUTION_COLUMNS = 4
"""How many of the shown executions (the slowest) get a column; the JSON report holds all …"""
MIN_EXECUTION_SHARE = 0.05
"""… of those taking at least this share of the slowest one's wall time."""

BASIS_LABELS = {
    "as-run": "as run (replayed)",
    "half": "half",
    "double": "double",
    "quadruple": "four times",
    "floor": "floor",
    "asked": "",
}
"""How a row says why its slot count is shown."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class WhatIfRowView:
    """One slot count and the walls predicted with it."""

    task_slots: int = field(metadata=_help("Task slots of the replay."))
    basis_str: str = field(
        metadata=_help(
            "Why it is shown: `as run (replayed)`, `half`, `double`, `four times`, "
            "`floor`, or empty when asked for."
        )
    )
    is_as_run: bool = field(metadata=_help("The run's own slot count: the run replayed."))
    app_wall_str: str = field(metadata=_help("Predicted application wall, or `–`."))
    change_str: str = field(
        metadata=_help(
            "Against the measured application wall: `−35 %`, `+67 %`, or `measured "
            "9.8 s` on the run's own row."
        )
    )
    execution_walls: tuple[str, ...] = field(
        metadata=_help("Predicted wall of each execution of `WhatIfView.columns`, or `–`.")
    )


@dataclass(frozen=True)
class WhatIfView:
    """The section `What if it had other task slots`."""

    summary_str: str = field(metadata=_help("The run's slots: `the run had 2 task slots`."))
    floor_str: str = field(
        metadata=_help(
            "The floor: `past 7 slots, more save less than 1 % of the application's wall: its "
            "critical path takes 6.3 s`, "
            "or empty without an application wall."
        )
    )
    columns: tuple[str, ...] = field(
        metadata=_help("The executions with a column, `query 3`: the slowest shown ones.")
    )
    measured_walls: tuple[str, ...] = field(
        metadata=_help("The measured wall of each execution of `columns`.")
    )
    measured_app_str: str = field(metadata=_help("The measured application wall, or `–`."))
    rows: tuple[WhatIfRowView, ...] = field(
        metadata=_help("One row per slot count, the run's own first, then by slots.")
    )
    more_str: str = field(
        metadata=_help("How many shown executions have no column (all in the JSON report).")
    )
    note_str: str = field(metadata=_help("What the replay keeps as measured, in one sentence."))


NOTE = (
    "Replayed from the measured task times in Spark's launch order; the driver's gaps between "
    "stages, jobs and executions stay as measured (docs/what-if.md)."
)


def _change(predicted: int | None, baseline: int | None) -> str:
    """`−35 %` / `+67 %` / `±0 %` against a baseline wall (the replayed run's), or `–`.

    A fall is written with the minus sign (U+2212), as every other change in the reports.

    >>> _change(650, 1000), _change(1670, 1000), _change(1000, 1000), _change(None, 5)
    ('−35 %', '+67 %', '±0 %', '–')
    """
    if predicted is None or not baseline:
        return "–"
    pct = round(100 * (predicted - baseline) / baseline)
    if pct == 0:
        return "±0 %"
    return f"+{pct} %" if pct > 0 else f"−{-pct} %"


def _row(
    scenario: WhatIf, measured_app_ms: int | None, baseline_ms: int | None, ids: list[int]
) -> WhatIfRowView:
    """One slot count's row; its change is against `baseline_ms`, the replayed run's wall, so
    that the model's own error on the log (the as-run row against the measured wall) reads as
    no gain or loss of other slot counts."""
    walls = dict(zip(scenario.execution_ids, scenario.walls_ms, strict=True))
    is_run = scenario.basis == "as-run"
    return WhatIfRowView(
        task_slots=scenario.task_slots,
        basis_str=BASIS_LABELS[scenario.basis],
        is_as_run=is_run,
        app_wall_str=fmt_duration_ms(scenario.app_wall_ms),
        change_str=(
            f"measured {fmt_duration_ms(measured_app_ms)}"
            if is_run
            else _change(scenario.app_wall_ms, baseline_ms)
        ),
        execution_walls=tuple(fmt_duration_ms(walls.get(i)) for i in ids),
    )


def build_what_if_view(
    analysis: Analysis, selection: Selection, task_slots: tuple[int, ...] | None
) -> WhatIfView:
    """Shape the what-if predictions for `task_slots` (None: the default slot counts)."""
    figures = analysis.what_if(task_slots)
    measured_app = analysis.application.duration_ms
    roots = [
        e
        for e in selection.executions
        if analysis.application.parent_of(e) is None and e.duration_ms is not None
    ]
    slowest = by_duration(roots)
    longest = (slowest[0].duration_ms or 0) if slowest else 0
    shown = [
        e
        for i, e in enumerate(slowest[:MAX_EXECUTION_COLUMNS])
        if i == 0 or (e.duration_ms or 0) >= MIN_EXECUTION_SHARE * longest
    ]
    ids = [e.execution_id for e in shown]
    floor = figures.floor_app_wall_ms
    # Changes compare the model with itself: against the replayed run, else the measured wall.
    as_run = next((s for s in figures.scenarios if s.basis == "as-run"), None)
    baseline = as_run.app_wall_ms if as_run is not None else measured_app
    n_more = len(roots) - len(shown)
    return WhatIfView(
        summary_str=f"the run had {plural(figures.run_slots, 'task slot')}",
        floor_str=(
            f"past {plural(figures.floor_slots, 'slot')}, more save less than 1 % of the "
            f"application's wall: its critical path takes {fmt_duration_ms(floor)}"
            if floor is not None
            else ""
        ),
        columns=tuple(f"query {i}" for i in ids),
        measured_walls=tuple(fmt_duration_ms(e.duration_ms) for e in shown),
        measured_app_str=fmt_duration_ms(measured_app),
        rows=tuple(_row(s, measured_app, baseline, ids) for s in figures.scenarios),
        more_str=(f"{plural(n_more, 'more execution')} in the JSON report" if n_more > 0 else ""),
        note_str=NOTE,
    )
