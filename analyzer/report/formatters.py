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


def fmt_ratio(ratio: float | None) -> str:
    """Format a ratio such as max / median: `×4.2`, `×120`."""
    if ratio is None:
        return "–"
    return f"×{ratio:.1f}" if ratio < 100 else f"×{ratio:,.0f}"


def clip_text(text: str, width: int) -> str:
    """Cut `text` to its first line and at most `width` characters, ending in `…` when cut.

    >>> clip_text("Exchange hashpartitioning(a#1, 200)", 12)
    'Exchange ha…'
    """
    first, _, rest = text.partition("\n")
    if len(first) <= width and not rest:
        return first
    return first[: max(width - 1, 0)].rstrip() + "…"


def wrap_text(text: str, width: int, max_lines: int | None = None) -> list[str]:
    """Break `text` into lines of at most `width` characters at spaces (long words are cut).

    Newlines in `text` are kept; with `max_lines`, the last line kept ends in `…` if more followed.

    >>> wrap_text("select a, b from t where a > 1", 12)
    ['select a, b', 'from t where', 'a > 1']
    """
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        words = paragraph.split()
        current = ""
        for word in words:
            while len(word) > width:
                if current:
                    lines.append(current)
                    current = ""
                lines.append(word[:width])
                word = word[width:]
            candidate = f"{current} {word}" if current else word
            if len(candidate) <= width:
                current = candidate
            else:
                lines.append(current)
                current = word
        lines.append(current)
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = clip_text(lines[-1] + " …", width)
    return lines


ANSI_STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
"""The ANSI SGR codes the text report may use, by style name."""


def ansi(text: str, style: str, enabled: bool) -> str:
    """Wrap `text` in the ANSI escape of `style` (`bold`, `red`, …) when `enabled`, else return it.

    An empty `style` leaves the text plain, so a view model can say "no colour".

    >>> ansi("FAILED", "red", False)
    'FAILED'
    >>> ansi("info", "", True)
    'info'
    """
    if not enabled or not text or not style:
        return text
    return f"\x1b[{ANSI_STYLES[style]}m{text}\x1b[0m"


def wrap_prefixed(
    text: str, prefix: str, width: int = 100, max_lines: int | None = None
) -> list[str]:
    """Wrap `text` to `width` columns after `prefix`, indenting later lines under the first.

    >>> wrap_prefixed("one two three", "x: ", 10)
    ['x: one two', '   three']
    """
    inner = max(width - len(prefix), 10)
    lines = wrap_text(text, inner, max_lines)
    pad = " " * len(prefix)
    return [(prefix if i == 0 else pad) + line for i, line in enumerate(lines)]


def clip_after(tail: str, head: str, width: int = 100) -> str:
    """Clip `tail` so that `head + tail` fits in `width` columns (`head` is printed before it).

    >>> clip_after(" Exchange hashpartitioning(a#1)", "├─ Sort", 20)
    ' Exchange ha…'
    """
    return clip_text(tail, max(width - len(head), 1))
