"""The executor timeline of an execution: task attempts per executor over time, laid out for SVG."""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.model.application import Execution
from analyzer.units import fmt_count, fmt_duration_ms, fmt_partition, plural

MAX_TIMELINE_TASKS = 1500
"""Per execution, the timeline draws at most this many task attempts (the longest ones)."""
MAX_TIMELINE_TASKS_TOTAL = 6_000
"""Over the whole page, at most this many timeline bars."""
MAX_TIMELINE_LANES = 60
TIMELINE_WIDTH = 1000
SUBLANE_HEIGHT = 4
LANE_LABEL_CHARS = 26
"""Lane labels are cut to this many characters (the full one is the label's tooltip)."""


@dataclass(frozen=True)
class TimelineLaneView:
    """One executor's lane in the task timeline."""

    full_label: str = field(metadata={"help": "Executor id and host, uncut (tooltip)."})
    y: int = field(metadata={"help": "Top of the lane in pixels."})
    height: int = field(metadata={"help": "Height of the lane in pixels."})
    label: str = field(
        init=False,
        metadata={"help": "`full_label` cut to fit the label column (derived, never walked)."},
    )

    def __post_init__(self) -> None:
        # Derived here, not by the builder: redaction rebuilds the record from its redacted
        # `full_label`, so the cut is always of the redacted value, never of the raw host.
        object.__setattr__(self, "label", _lane_label(self.full_label))


@dataclass(frozen=True)
class TimelineStageView:
    """A stage in the timeline's legend, with its colour."""

    stage_id: int = field(metadata={"help": "Spark's stage id."})
    color: str = field(metadata={"help": "Its colour, `#rrggbb`, distinct from every other's."})
    css_class: str = field(metadata={"help": "Class of its bars: `s12`."})
    label_str: str = field(
        metadata={
            "help": "`stage 12 · 200 tasks`; `stage 58 · 6 of 431 tasks` when some are left out."
        }
    )


@dataclass(frozen=True)
class TimelineBarView:
    """One task attempt in the timeline."""

    x: float = field(metadata={"help": "Left edge in pixels."})
    y: int = field(metadata={"help": "Top edge in pixels."})
    width: float = field(metadata={"help": "Width in pixels (at least 1)."})
    css_class: str = field(
        metadata={"help": "`sN` (its stage), plus `failed` for failed attempts."}
    )
    color: str = field(metadata={"help": "Its stage's colour."})
    title: str = field(metadata={"help": "Tooltip: task, stage, partition, duration."})


@dataclass(frozen=True)
class TimelineView:
    """Task attempts of an execution per executor over time."""

    width: int = field(metadata={"help": "SVG width in pixels, lane labels included."})
    height: int = field(metadata={"help": "SVG height in pixels."})
    label_width: int = field(metadata={"help": "Width of the lane-label column."})
    lanes: tuple[TimelineLaneView, ...] = field(metadata={"help": "One lane per executor."})
    stages: tuple[TimelineStageView, ...] = field(
        metadata={"help": "The legend: every stage drawn, by id, with its colour."}
    )
    bars: tuple[TimelineBarView, ...] = field(metadata={"help": "The drawn task attempts."})
    ticks: tuple[tuple[float, str], ...] = field(
        metadata={"help": "Axis ticks: x position and elapsed time."}
    )
    note: str = field(metadata={"help": "Says what was left out, or empty."})


def _lane_label(label: str) -> str:
    """`3 · worker-2.example…`: short enough for the label column.

    >>> _lane_label("3 · host-2"), _lane_label("12 · worker-2.example.internal")
    ('3 · host-2', '12 · worker-2.example.int…')
    """
    return label if len(label) <= LANE_LABEL_CHARS else label[: LANE_LABEL_CHARS - 1] + "…"


def stage_colors(stage_ids: Sequence[int]) -> dict[int, str]:
    """Give each stage its own colour: hues a golden angle apart (away from the red of failed
    tasks), lightness alternating, so that neighbouring stages never look alike.

    >>> colors = stage_colors(range(40))
    >>> len(set(colors.values())) == 40
    True
    """
    out = {}
    for i, sid in enumerate(sorted(set(stage_ids))):
        hue = (24 + (i * 137.508) % 312) / 360
        light = (0.40, 0.55, 0.47)[i % 3]
        r, g, b = colorsys.hls_to_rgb(hue, light, 0.68)
        out[sid] = f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
    return out


def _drawn_str(n_drawn: int, n_all: int) -> str:
    """`200 tasks`, or `6 of 431 tasks` when the timeline leaves some out.

    >>> _drawn_str(6, 431), _drawn_str(1, 1)
    ('6 of 431 tasks', '1 task')
    """
    if n_all > n_drawn:
        return f"{fmt_count(n_drawn)} of {plural(n_all, 'task')}"
    return plural(n_drawn, "task")


def build_timeline(execution: Execution, analysis: Analysis, max_bars: int) -> TimelineView | None:
    """Draw the execution's timeline (`Analysis.timeline`: at most `max_bars` task attempts, the
    longest, per executor, overlapping tasks stacked in sub-lanes)."""
    timeline = analysis.timeline(execution.execution_id, max_bars, MAX_TIMELINE_LANES)
    if not timeline.n_drawn:
        return None
    note = ""
    if timeline.n_tasks > max_bars:
        note = (
            f"The timeline shows the {fmt_count(max_bars)} longest of "
            f"{fmt_count(timeline.n_tasks)} task attempts."
        )
    if timeline.n_executors > len(timeline.lanes):
        note = (note + " " if note else "") + (
            f"The timeline shows the {MAX_TIMELINE_LANES} busiest of "
            f"{timeline.n_executors} executors."
        )
    t0 = timeline.start_ms
    span = max(timeline.end_ms - t0, 1)
    label_width = 150
    scale = TIMELINE_WIDTH / span
    counts = dict(timeline.tasks_per_stage)
    totals = dict(timeline.all_per_stage)
    colors = stage_colors(list(counts))
    lanes, bars = [], []
    y = 4
    for lane in timeline.lanes:
        height = max(lane.n_sublanes * SUBLANE_HEIGHT, 14) + 4
        lanes.append(
            TimelineLaneView(
                full_label=f"{lane.executor_id} · {lane.host}",
                y=y,
                height=height,
            )
        )
        for i, r in lane.tasks:
            status = " failed" if r.failed or r.killed else ""
            partition = fmt_partition(r.partition_id)
            bars.append(
                TimelineBarView(
                    x=round(label_width + (r.launch_ms - t0) * scale, 1),
                    y=y + 2 + i * SUBLANE_HEIGHT,
                    width=round(max((r.finish_ms - r.launch_ms) * scale, 1.0), 1),
                    css_class=f"s{r.stage_id}{status}",
                    color=colors[r.stage_id],
                    title=f"task {r.task_id}, stage {r.stage_id}.{r.stage_attempt_id}, "
                    + (f"{partition}, " if partition else "")
                    + f"{fmt_duration_ms(r.finish_ms - r.launch_ms)}{status}",
                )
            )
        y += height
    ticks = tuple(
        (round(label_width + TIMELINE_WIDTH * k / 5, 1), fmt_duration_ms(span * k / 5))
        for k in range(6)
    )
    return TimelineView(
        width=label_width + TIMELINE_WIDTH + 40,
        height=y + 22,
        label_width=label_width,
        lanes=tuple(lanes),
        stages=tuple(
            TimelineStageView(
                stage_id=sid,
                color=color,
                css_class=f"s{sid}",
                label_str=f"stage {sid} · {_drawn_str(counts[sid], totals.get(sid, 0))}",
            )
            for sid, color in colors.items()
        ),
        bars=tuple(bars),
        ticks=ticks,
        note=note,
    )
