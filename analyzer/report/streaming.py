"""View of the streaming section: each Structured Streaming query run, its batches against the
trigger, where a batch's time goes, rates and state.

Shared by the text, HTML and Markdown reports; every figure comes from
`Analysis.streaming` (`aggregate.streaming`), and this module only words and lays it out (the
chart's coordinates included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.streaming import MIN_ALIGNED, StreamingFigures
from analyzer.report.anchors import execution_anchor
from analyzer.units import (
    MISSING,
    fmt_bytes,
    fmt_count,
    fmt_duration_ms,
    fmt_pct,
    fmt_timestamp_ms,
    plural,
)

SPARK_BLOCKS = "▁▂▃▄▅▆▇█"
"""Sparkline levels, lowest first."""

CHART_WIDTH = 600
CHART_HEIGHT = 120
CHART_HEADROOM = 1.2
"""The chart's top stands for this many times the longest batch (or the trigger interval)."""
CHART_MAX_BARS = 300
"""The chart shows at most this many batches (the last ones), one bar each."""
MAX_PHASES = 6
MAX_EXCEPTION_CHARS = 2_000


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class ChartBarView:
    """One batch in the chart of batch durations (SVG user units, y grows downwards)."""

    x: float = field(metadata=_help("Left edge."))
    y: float = field(metadata=_help("Top edge."))
    width: float = field(metadata=_help("Bar width."))
    height: float = field(metadata=_help("Bar height: the batch's duration."))
    is_late: bool = field(
        metadata=_help("A batch after the first that took longer than the trigger interval.")
    )
    title_str: str = field(metadata=_help("Tooltip: `batch 7 · 3.2 s · 12,000 rows`."))


@dataclass(frozen=True)
class StreamingChartView:
    """A small SVG chart of batch durations with the trigger interval as a line."""

    width: int = field(metadata=_help("Width of the drawing (SVG user units)."))
    height: int = field(metadata=_help("Height of the drawing."))
    bars: tuple[ChartBarView, ...] = field(metadata=_help("One bar per batch, in batch order."))
    trigger_y: float | None = field(
        metadata=_help("Height of the trigger line (y), None when the interval is unknown.")
    )
    max_str: str = field(metadata=_help("The duration the top of the chart stands for."))
    trigger_str: str = field(metadata=_help("Label of the trigger line, or empty."))
    caption_str: str = field(metadata=_help("What the chart shows, for its title and alt text."))


@dataclass(frozen=True)
class StreamingQueryView:
    """One streaming query run, as every report format shows it."""

    label: str = field(metadata=_help("The query's name, or the first 8 characters of its id."))
    query_id: str = field(metadata=_help("The query's id (kept across restarts)."))
    run_id: str = field(metadata=_help("This run's id."))
    status: str = field(metadata=_help("`stopped`, `failed` or `running` (also a CSS class)."))
    status_str: str = field(
        metadata=_help("How it ended: `stopped normally`, `failed: <exception line>`…")
    )
    exception_str: str = field(
        metadata=_help("The exception of a failed run (bounded), else empty.")
    )
    time_str: str = field(metadata=_help("`2026-11-25 14:59:51 UTC · ran 19.7 s`."))
    trigger_str: str = field(
        metadata=_help("`every 1.0 s (inferred)`, or that it is unknown and why.")
    )
    batches_str: str = field(
        metadata=_help(
            "`12 batches · 9 over the trigger from batch 3 · median 1.4 s · longest 3.9 s`."
        )
    )
    sparkline_str: str = field(
        metadata=_help("Batch durations as block characters (bucket maxima past 60 batches).")
    )
    sparkline_scale_str: str = field(metadata=_help("`▁ 0 … █ 3.9 s`."))
    rates_str: str = field(
        metadata=_help("`input 4,210 rows/s · processed 3,320 rows/s (means after batch 0)`.")
    )
    phases_str: str = field(
        metadata=_help("Where a batch's time goes: each phase summed over the batches, share.")
    )
    hot_operators_str: str = field(
        metadata=_help("Operators with the most self time over all batches, or empty.")
    )
    state_str: str = field(metadata=_help("State rows and memory, watermark; empty if stateless."))
    sources_str: str = field(metadata=_help("Source descriptions, `; `-separated."))
    sink_str: str = field(metadata=_help("Sink description."))
    unfinished_str: str = field(
        metadata=_help("The batch the run was stopped or failed in, with its executions, or empty.")
    )
    idle_str: str = field(
        metadata=_help(
            "`no new data, reported 13 times, the last at 2026-11-27 21:07:07 UTC`: Spark's "
            "reports of triggers that ran no batch (not counted as batches), or empty."
        )
    )
    executions_str: str = field(metadata=_help("`40 SQL executions (3–42)`."))
    first_execution_anchor: str = field(
        metadata=_help("Element id of its first batch's first execution, or empty.")
    )
    chart: StreamingChartView = field(metadata=_help("Batch durations against the trigger."))


@dataclass(frozen=True)
class StreamingSectionView:
    """The streaming section: every query run of the application (none: no section)."""

    queries: tuple[StreamingQueryView, ...] = field(metadata=_help("In the order first seen."))
    summary_str: str = field(
        metadata=_help("`2 streaming queries · 1 falls behind its trigger`, or empty.")
    )


def sparkline(values: Sequence[int]) -> str:
    """Draw values as block characters scaled to the largest.

    >>> sparkline([0, 5, 10])
    '▁▅█'
    """
    top = max(values, default=0)
    if top <= 0:
        return SPARK_BLOCKS[0] * len(values)
    last = len(SPARK_BLOCKS) - 1
    return "".join(SPARK_BLOCKS[min(last, round(v / top * last))] for v in values)


def _chart(fig: StreamingFigures) -> StreamingChartView:
    batches = fig.query.batches[-CHART_MAX_BARS:]
    interval = fig.trigger_interval_ms
    top = max([b.trigger_execution_ms or 0 for b in batches] + [interval or 0, 1])
    # Headroom above the longest bar and the trigger line, for the labels.
    scale = (CHART_HEIGHT - 4) / (top * CHART_HEADROOM)
    step = CHART_WIDTH / max(len(batches), 1)
    gap = min(2.0, step / 4)
    bars = []
    for i, b in enumerate(batches):
        ms = b.trigger_execution_ms or 0
        height = round(ms * scale, 2)
        bars.append(
            ChartBarView(
                x=round(i * step + gap / 2, 2),
                y=round(CHART_HEIGHT - height, 2),
                width=round(max(step - gap, 0.5), 2),
                height=height,
                # The first batch plans the query and is not counted late (as in the figures).
                is_late=interval is not None and ms > interval and b is not fig.query.batches[0],
                title_str=(
                    f"batch {b.batch_id} · {fmt_duration_ms(ms)} · {plural(b.n_input_rows, 'row')}"
                ),
            )
        )
    shown = (
        f"the last {len(batches)} of {fig.n_batches} batches"
        if len(batches) < fig.n_batches
        else plural(len(batches), "batch", "batches")
    )
    return StreamingChartView(
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        bars=tuple(bars),
        trigger_y=round(CHART_HEIGHT - interval * scale, 2) if interval else None,
        max_str=fmt_duration_ms(top * CHART_HEADROOM),
        trigger_str=f"trigger {fmt_duration_ms(interval)}" if interval else "",
        caption_str=(
            f"Duration of {shown} of streaming query {fig.query.label}"
            + (f" against its {fmt_duration_ms(interval)} trigger" if interval else "")
        ),
    )


def _ids_str(ids: Sequence[int]) -> str:
    if not ids:
        return "no SQL executions"
    low, high = min(ids), max(ids)
    span = f" ({low}–{high})" if low != high else f" ({low})"
    return plural(len(ids), "SQL execution") + span


def build_query_view(
    fig: StreamingFigures, detailed_ids: set[int], app_ended: bool = False
) -> StreamingQueryView:
    """Word one query run's figures; `detailed_ids` are the executions with a section,
    `app_ended` whether the log holds the application's end (a run without its own end then
    did not run on: the application ended first)."""
    q = fig.query
    if q.status == "failed":
        status_str = f"failed: {q.exception_cause or 'no exception logged'}"
    elif q.status == "stopped":
        status_str = "stopped normally"
    else:
        status_str = (
            "no end event: the application ended first"
            if app_ended
            else "no end event (still running, or the application ended first)"
        )
    duration = q.end_ms - q.start_ms if q.start_ms is not None and q.end_ms is not None else None
    time_str = fmt_timestamp_ms(q.start_ms) + (
        f" · ran {fmt_duration_ms(duration)}" if duration is not None else ""
    )
    interval = fig.trigger_interval_ms
    if interval is not None:
        trigger_str = f"every {fmt_duration_ms(interval)} (inferred from the batches' start times)"
    elif not fig.n_batches:
        trigger_str = "unknown: no batch ran"
    elif fig.n_batches <= MIN_ALIGNED:
        # Each batch after the first can line up with an interval; it takes MIN_ALIGNED.
        trigger_str = (
            f"unknown: the log does not give it, and {plural(fig.n_batches, 'batch', 'batches')} "
            f"{'is' if fig.n_batches == 1 else 'are'} too few to infer it (it takes "
            f"{MIN_ALIGNED + 1})"
        )
    else:
        trigger_str = (
            "unknown: the log does not give it, and too few batch starts line up with an "
            "interval (batches run back to back under the default trigger, and under an "
            "interval every batch overran)"
        )
    parts = [plural(fig.n_batches, "batch", "batches") if fig.n_batches else "none ran"]
    if fig.n_batches:
        if interval is not None and fig.n_late_batches:
            parts.append(
                f"{fig.n_late_batches} over the trigger from batch {fig.first_late_batch_id}"
            )
        elif interval is not None:
            # Lateness is counted from the second batch (the first plans and starts up).
            first_late = bool(fig.trigger_ms) and fig.trigger_ms[0] > interval
            parts.append("none over the trigger" + (" after the first" if first_late else ""))
        parts.append(f"median {fmt_duration_ms(fig.median_trigger_ms)}")
        parts.append(f"longest {fmt_duration_ms(fig.max_trigger_ms)}")
    if fig.trend_ratio is not None:
        parts.append(f"last third {fig.trend_ratio:.1f}× the first")
    rates = []
    if fig.mean_input_rows_per_s is not None:
        rates.append(f"input {fmt_count(round(fig.mean_input_rows_per_s))} rows/s")
    if fig.mean_processed_rows_per_s is not None:
        rates.append(f"processed {fmt_count(round(fig.mean_processed_rows_per_s))} rows/s")
    rates_str = (
        " · ".join(rates) + f" (means after batch 0) · {fmt_count(fig.n_input_rows)} rows in all"
        if rates
        else f"{fmt_count(fig.n_input_rows)} rows in all"
    )
    total = max(fig.total_trigger_ms, 1)
    phases_str = " · ".join(
        f"{name} {fmt_duration_ms(ms)} ({fmt_pct(ms / total)})"
        for name, ms in fig.phase_totals_ms[:MAX_PHASES]
        if ms > 0
    )
    hot_str = " · ".join(
        f"{op.name} {fmt_duration_ms(op.self_time_ms)} in "
        + plural(op.n_batches, "batch", "batches")
        for op in fig.hot_operators
    )
    state_str = ""
    if fig.state_rows_last is not None:
        state_str = (
            f"{fmt_count(fig.state_rows_first)} → {fmt_count(fig.state_rows_last)} rows, "
            f"{fmt_bytes(fig.state_memory_last_bytes)} at the end, larger after "
            f"{fig.n_state_growing_batches} of {max(fig.n_batches - 1, 0)} batches · "
            + (
                ("watermark advancing" if fig.watermark_advanced else "watermark not advancing")
                if fig.has_watermark
                else "no watermark"
            )
        )
    unfinished = "; ".join(
        f"batch {batch_id} "
        + ("interrupted by the stop" if q.status == "stopped" else "unfinished")
        + f" ({_ids_str(ids)})"
        for batch_id, ids in q.unfinished_batches
    )
    ids = fig.execution_ids
    first = next((e for b in q.batches for e in b.execution_ids if e in detailed_ids), None)
    exception = (q.exception or "")[:MAX_EXCEPTION_CHARS] if q.status == "failed" else ""
    return StreamingQueryView(
        label=q.label,
        query_id=q.query_id,
        run_id=q.run_id,
        status=q.status,
        status_str=status_str,
        exception_str=exception,
        time_str=time_str,
        trigger_str=trigger_str,
        batches_str=" · ".join(parts),
        sparkline_str=sparkline(fig.sparkline_ms),
        sparkline_scale_str=f"▁ 0 … █ {fmt_duration_ms(max(fig.sparkline_ms, default=0))}",
        rates_str=rates_str,
        phases_str=phases_str,
        hot_operators_str=hot_str,
        state_str=state_str,
        # Read from the batches' progress: unknown when none ran.
        sources_str="; ".join(q.sources) or MISSING,
        sink_str=q.sink or MISSING,
        unfinished_str=unfinished,
        idle_str=(
            f"no new data, reported {plural(q.idle_reports, 'time')}"
            + (f", the last at {fmt_timestamp_ms(q.last_idle_ms)}" if q.last_idle_ms else "")
            if q.idle_reports
            else ""
        ),
        executions_str=_ids_str(ids),
        first_execution_anchor=execution_anchor(first) if first is not None else "",
        chart=_chart(fig),
    )


def build_streaming_view(analysis: Analysis, detailed_ids: set[int]) -> StreamingSectionView:
    """Build the streaming section (no queries for an application without streaming)."""
    figures = analysis.streaming
    ended = analysis.application.completed
    queries = tuple(build_query_view(f, detailed_ids, ended) for f in figures)
    if not queries:
        return StreamingSectionView(queries=(), summary_str="")
    behind = sum(1 for f in figures if f.n_late_batches)
    failed = sum(1 for f in figures if f.query.status == "failed")
    parts = [plural(len(queries), "streaming query", "streaming queries")]
    if behind:
        parts.append(f"{behind} with batches over the trigger")
    if failed:
        parts.append(f"{failed} failed")
    return StreamingSectionView(queries=queries, summary_str=" · ".join(parts))
