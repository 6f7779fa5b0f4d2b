"""A plan node's metric statistics, worded once for every format; where a maximum came from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzer.aggregate.node_metrics import MaxLocation, MetricStats, NodeStats
from analyzer.report.options import MetricsLevel
from analyzer.units import fmt_count, fmt_metric_value, fmt_partition, fmt_pct, fmt_ratio

SUMMARY_METRIC_NAMES = frozenset(
    {
        "number of output rows",
        "output rows",
        "duration",
        "spill size",
        "peak memory",
        "data size",
        "shuffle bytes written",
        "shuffle records written",
        "records read",
        "number of files read",
        "size of files read",
        "number of partitions",
        "number of coalesced partitions",
        "number of skewed partitions",
        "number of skewed partition splits",
        "partition data size",
    }
)
"""Metrics shown at `--metrics summary`, besides every timing metric (full shows all of them)."""

SKEW_RATIO_MARK = 4.0
"""A metric is marked skewed when its max is at least this many times its median …"""

SKEW_MIN_MAX = {"timing": 100, "nsTiming": 100_000_000, "size": 1 << 20, "sum": 10_000}
"""… and its max is at least this large (100 ms, 1 MiB, 10,000 rows): small values are noise."""

TIMING_TYPES = frozenset({"timing", "nsTiming"})


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class MetricView:
    """One SQL metric of one plan node, formatted for reading."""

    name: str = field(metadata=_help("Spark's metric name, e.g. `number of output rows`."))
    metric_type: str = field(
        metadata=_help("Spark's type: sum, size, timing, nsTiming, average, v2Custom_…, vendors'.")
    )
    accumulator_id: int = field(metadata=_help("Spark's accumulator id (keys the histogram)."))
    total_str: str = field(
        metadata=_help("The sum over all values; empty for averages, whose sum means nothing.")
    )
    headline_str: str = field(
        metadata=_help(
            "The one figure to print first: the total; for averages the median task's value; "
            "for peaks (`peak memory`) `max …`, since a sum of per-task peaks means nothing."
        )
    )
    min_str: str = field(metadata=_help("Smallest value (task slots that reported nothing are 0)."))
    median_str: str = field(metadata=_help("Spark's upper median."))
    p95_str: str = field(metadata=_help("95th percentile (the higher value, no interpolation)."))
    max_str: str = field(metadata=_help("Largest value."))
    count: int = field(metadata=_help("How many values (task slots plus driver values) there are."))
    count_str: str = field(metadata=_help("That count, formatted."))
    has_spread: bool = field(
        metadata=_help("True when there are several values and they differ: show min/med/p95/max.")
    )
    is_skewed: bool = field(
        metadata=_help("max ≥ 4 × median and max above the noise floor (see docs/metrics.md).")
    )
    skew_str: str = field(metadata=_help("max / median, e.g. `×12.0`; `–` when the median is 0."))
    skew_pct_str: str = field(
        metadata=_help("Skew score 100 × (max − median) / max, e.g. `91.7 %`.")
    )
    max_at_str: str = field(
        metadata=_help("Where the max came from: `stage 3.0 task 12 partition 4 exec 1 @ host`.")
    )
    spark_ui: str = field(metadata=_help("The string Spark's SQL tab shows for this metric."))


def max_at_str(at: MaxLocation | None) -> str:
    """Say where a metric's maximum came from: `stage 3.0 task 12 partition 4 exec 1 @ host`.

    A driver-side maximum names the driver's executor id; an unknown place is empty.
    """
    if at is None:
        return ""
    if at.task_id is None:
        return at.executor_id or ""
    parts = [f"stage {at.stage_id}.{at.stage_attempt_id}", f"task {at.task_id}"]
    if partition := fmt_partition(at.partition_id):  # none before Spark 3.3
        parts.append(partition)
    if at.executor_id is not None:
        parts.append(f"exec {at.executor_id} @ {at.host}" if at.host else f"exec {at.executor_id}")
    return " ".join(parts)


def stage_ids_str(ids: Iterable[int]) -> str:
    """Say which stages something ran in: `stage 3`, `stages 3, 4`, or empty.

    >>> stage_ids_str([3]), stage_ids_str([3, 4]), stage_ids_str([])
    ('stage 3', 'stages 3, 4', '')
    """
    ids = list(ids)
    if not ids:
        return ""
    return ("stage " if len(ids) == 1 else "stages ") + ", ".join(map(str, ids))


def is_skewed(m: MetricStats) -> bool:
    """Return True when a metric's max is far above its median and large enough to matter."""
    floor = SKEW_MIN_MAX.get(m.metric_type)
    return (
        floor is not None
        and m.skew_ratio is not None
        and m.skew_ratio >= SKEW_RATIO_MARK
        and m.max_value >= floor
    )


def is_peak(name: str) -> bool:
    """Return True for a metric that records a per-task peak (`peak memory`), not an amount."""
    return name.startswith("peak ")


def headline_str(m: MetricStats) -> str:
    """Return the figure a metric is read by: total, median (averages) or max (peaks).

    Spark's average metrics hold each task's own average (in tenths); their sum means nothing,
    and a sum of per-task peaks is not a peak.
    """
    if m.metric_type == "average":
        return fmt_metric_value(m.metric_type, m.median)
    if is_peak(m.name):
        return f"max {fmt_metric_value(m.metric_type, m.max_value)}"
    return fmt_metric_value(m.metric_type, m.total)


def build_metric_view(m: MetricStats) -> MetricView:
    """Format one metric's statistics."""
    t = m.metric_type
    return MetricView(
        name=m.name,
        metric_type=t,
        accumulator_id=m.accumulator_id,
        total_str="" if t == "average" else fmt_metric_value(t, m.total),
        headline_str=headline_str(m),
        min_str=fmt_metric_value(t, m.min_value),
        median_str=fmt_metric_value(t, m.median),
        p95_str=fmt_metric_value(t, m.p95),
        max_str=fmt_metric_value(t, m.max_value),
        count=m.count,
        count_str=fmt_count(m.count),
        has_spread=m.count > 1 and m.min_value != m.max_value,
        is_skewed=is_skewed(m),
        skew_str=fmt_ratio(m.skew_ratio),
        skew_pct_str=fmt_pct(m.skew_pct / 100),
        max_at_str=max_at_str(m.max_at),
        spark_ui=m.spark_ui,
    )


def shown_metrics(stats: NodeStats | None, level: MetricsLevel) -> tuple[MetricView, ...]:
    """Return a node's metrics at a detail level: none, the main ones with a value, or all."""
    if stats is None or level == "none":
        return ()
    if level == "full":
        return tuple(build_metric_view(m) for m in stats.metrics)
    return tuple(
        build_metric_view(m)
        for m in stats.metrics
        if (m.metric_type in TIMING_TYPES or m.name in SUMMARY_METRIC_NAMES)
        and (m.total != 0 or m.max_value != 0)
    )
