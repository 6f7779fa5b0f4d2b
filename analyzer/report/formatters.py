"""Pure formatting helpers for human-readable reports (text and HTML).

These are for our own reports; Spark's exact metric strings live in
`analyzer.aggregate.spark_format`.
"""

from __future__ import annotations

import datetime as _dt


def fmt_bytes(n_bytes: int | float | None) -> str:
    """Format a byte count with binary units: `0 B`, `512 B`, `1.5 KiB`, `3.2 GiB`."""
    if n_bytes is None:
        return "–"
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def fmt_duration_ms(ms: int | float | None) -> str:
    """Format milliseconds: `850 ms`, `1.2 s`, `3m 05s`, `2h 03m`."""
    if ms is None:
        return "–"
    ms = float(ms)
    if abs(ms) < 1000:
        return f"{round(ms)} ms"
    seconds = ms / 1000
    if abs(seconds) < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def fmt_duration_ns(ns: int | float | None) -> str:
    """Format nanoseconds as a duration (see `fmt_duration_ms`)."""
    return "–" if ns is None else fmt_duration_ms(ns / 1_000_000)


def fmt_count(n: int | float | None) -> str:
    """Format a count with thousands separators: `1,234,567`."""
    if n is None:
        return "–"
    return f"{int(n):,}"


def fmt_pct(fraction: float | None) -> str:
    """Format a fraction 0..1 as a percentage: `42.0 %`."""
    return "–" if fraction is None else f"{100 * fraction:.1f} %"


def fmt_timestamp_ms(epoch_ms: int | None) -> str:
    """Format an epoch-millisecond timestamp as UTC ISO 8601: `2024-01-31 23:59:01 UTC`."""
    if epoch_ms is None:
        return "–"
    moment = _dt.datetime.fromtimestamp(epoch_ms / 1000, tz=_dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def fmt_metric_value(metric_type: str, value: int | float | None) -> str:
    """Format a raw SQL metric value by its Spark metric type (size, timing, nsTiming, …)."""
    if value is None:
        return "–"
    if metric_type == "size":
        return fmt_bytes(value)
    if metric_type == "timing":
        return fmt_duration_ms(value)
    if metric_type == "nsTiming":
        return fmt_duration_ns(value)
    if metric_type == "average":
        return f"{value / 10:.1f}"
    return fmt_count(value)
