"""Spark's own metric strings (`SQLMetrics.stringValue`), byte for byte, with Java's rounding.

Java's `String.format("%.1f")` rounds half-up on the shortest decimal form of a double, and
Spark divides durations in float32; Python's `%` rounds half-even on the binary value, so both
are emulated here.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def java_fixed(value: float, precision: int) -> str:
    """Format like Java's `String.format("%.Nf", value)` (HALF_UP on the shortest repr)."""
    quantum = Decimal(1).scaleb(-precision)
    return f"{Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP):.{precision}f}"


def java_group_int(value: int) -> str:
    """Format like `NumberFormat.getIntegerInstance(Locale.US)`: thousands separators."""
    return f"{value:,}"


def bytes_to_string(size: int) -> str:
    """Spark's `Utils.bytesToString`: the largest binary unit with size >= 2 units."""
    units = (
        (1 << 60, "EiB"),
        (1 << 50, "PiB"),
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    )
    for unit, label in units:
        if size >= 2 * unit:
            return f"{java_fixed(size / unit, 1)} {label}"
    return f"{java_fixed(float(size), 1)} B"


def ms_duration_to_string(ms: int) -> str:
    """Spark's `Utils.msDurationToString`, dividing in float32 as Spark does."""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{java_fixed(_f32(_f32(float(ms)) / _f32(1000.0)), 1)} s"
    if ms < 3_600_000:
        return f"{java_fixed(_f32(_f32(float(ms)) / _f32(60000.0)), 1)} m"
    return f"{java_fixed(_f32(_f32(float(ms)) / _f32(3600000.0)), 2)} h"


def java_number(value: float) -> str:
    """Format like `NumberFormat.getNumberInstance(Locale.US)`: grouping, 3 decimals, HALF_EVEN."""
    d = Decimal(repr(value)).quantize(Decimal("0.001"), rounding="ROUND_HALF_EVEN")
    text = f"{d:,.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


BUILTIN_TYPES = frozenset({"sum", "size", "timing", "nsTiming", "average"})
"""The metric types `SQLMetrics` defines; vendors log others (Databricks: `count`, `maximum`,
`minimum`), which Spark's `stringValue` formats as `[unknown] N` with its size/timing layout."""

CUSTOM_PREFIX = "v2Custom_"
"""DataSource V2 custom metrics: `v2Custom_<class>`. The History Server aggregates them with the
class's `aggregateTaskMetrics`, or shows `N/A` when it cannot load the class (always here)."""


def is_custom(metric_type: str) -> bool:
    """Whether a metric type is a DataSource V2 custom metric (`v2Custom_<class>`)."""
    return metric_type.startswith(CUSTOM_PREFIX)


@lru_cache(maxsize=1 << 14)
def format_value(metric_type: str, value: int) -> str:
    """Format one raw value of a metric type the way Spark's UI does.

    Kept for the last 16,384 (type, value) pairs: every metric string of every execution
    formats its total, minimum, median and maximum, and small times and sizes recur across
    executions (a Java-style rounding costs microseconds, a lookup a tenth of that).

    A type Spark does not define prints as `[unknown] ` and the grouped integer, as
    `MetricUtils.stringValue` does.

    >>> [format_value(t, v) for t, v in (("size", 2304), ("count", 1234), ("average", 12))]
    ['2.3 KiB', '[unknown] 1,234', '1.2']
    """
    if metric_type == "size":
        return bytes_to_string(value)
    if metric_type == "timing":
        return ms_duration_to_string(value)
    if metric_type == "nsTiming":
        return ms_duration_to_string(
            int(value / 1_000_000) if value >= 0 else -((-value) // 1_000_000)
        )
    if metric_type == "average":
        return java_number(value / 10.0)
    if metric_type == "sum" or is_custom(metric_type):
        return java_group_int(value)
    return f"[unknown] {java_group_int(value)}"


def valid_for_spark(metric_type: str, value: int) -> bool:
    """Whether Spark's string counts this value.

    Averages count values > 0; sums and custom metrics count every value; sizes, times and
    types Spark does not define count values >= 0.
    """
    if metric_type == "average":
        return value > 0
    if metric_type == "sum" or is_custom(metric_type):
        return True
    return value >= 0


def spark_string_from_stats(
    metric_type: str,
    n_valid: int,
    total: int,
    min_value: int,
    median: int,
    max_value: int,
    max_at: tuple[int, int, int] | None,
) -> str:
    """Spark's metric string from statistics of the valid values (see `valid_for_spark`)."""
    if metric_type == "sum":
        return java_group_int(total)
    if is_custom(metric_type):
        return "N/A"
    if n_valid <= 1:
        return format_value(metric_type, min_value if n_valid == 1 else 0)
    task_info = (
        "(driver)" if max_at is None else f"(stage {max_at[0]}.{max_at[1]}: task {max_at[2]})"
    )
    mn, med, mx = (format_value(metric_type, v) for v in (min_value, median, max_value))
    if metric_type == "average":
        return f"(min, med, max (stageId: taskId)):\n({mn}, {med}, {mx} {task_info})"
    return (
        "total (min, med, max (stageId: taskId))\n"
        f"{format_value(metric_type, total)} ({mn}, {med}, {mx} {task_info})"
    )


def spark_metric_string(
    metric_type: str,
    values: Sequence[int],
    max_at: tuple[int, int, int] | None,
) -> str:
    """Return the metric string the History Server's REST API shows for these values.

    `values` are every task slot of every stage (zeros included) and the driver's values;
    `max_at` is (stage_id, stage_attempt_id, task_id) of the maximum, or None for "(driver)".
    The REST API strips one leading newline, so none is produced here.
    """
    if metric_type == "sum":
        return java_group_int(sum(values))
    if is_custom(metric_type):
        return "N/A"
    task_info = (
        "(driver)" if max_at is None else f"(stage {max_at[0]}.{max_at[1]}: task {max_at[2]})"
    )
    if metric_type == "average":
        valid = sorted(v for v in values if v > 0)
        if len(valid) <= 1:
            return format_value("average", valid[0] if valid else 0)
        mn, med, mx = valid[0], valid[len(valid) // 2], valid[-1]
        return (
            "(min, med, max (stageId: taskId)):\n("
            f"{format_value('average', mn)}, {format_value('average', med)}, "
            f"{format_value('average', mx)} {task_info})"
        )
    # size, timing, nsTiming, and every type Spark does not define.
    valid = sorted(v for v in values if v >= 0)
    if len(valid) <= 1:
        return format_value(metric_type, valid[0] if valid else 0)
    total = sum(valid)
    mn, med, mx = valid[0], valid[len(valid) // 2], valid[-1]
    return (
        "total (min, med, max (stageId: taskId))\n"
        f"{format_value(metric_type, total)} ({format_value(metric_type, mn)}, "
        f"{format_value(metric_type, med)}, {format_value(metric_type, mx)} {task_info})"
    )
