"""The plain fixed-width table of `spark-explain apps`: one row per application of a log dir."""

from __future__ import annotations

import datetime as dt
import os

from analyzer.eventlog.discover import AppInfo

NAME_MAX_CHARS = 40
_HEADERS = (
    "APP ID",
    "ATTEMPT",
    "NAME",
    "SPARK",
    "START (UTC)",
    "DURATION",
    "STATE",
    "CODEC",
    "LAYOUT",
    "SIZE",
)
_RIGHT_ALIGNED = {"DURATION", "SIZE"}


def fmt_start_utc(start_ms: int | None) -> str:
    """Format epoch milliseconds as an ISO-8601 UTC time to the second, `-` if unknown.

    >>> fmt_start_utc(1623876083370)
    '2021-06-16T20:41:23Z'
    """
    if start_ms is None:
        return "-"
    when = dt.datetime.fromtimestamp(start_ms / 1000, tz=dt.UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_duration_ms(duration_ms: int | None) -> str:
    """Format a duration compactly (`850 ms`, `12.3 s`, `4m 05s`, `2h 03m`), `-` if unknown.

    >>> [fmt_duration_ms(v) for v in (850, 12_340, 245_000, 7_380_000, None)]
    ['850 ms', '12.3 s', '4m 05s', '2h 03m', '-']
    """
    if duration_ms is None or duration_ms < 0:
        return "-"
    if duration_ms < 1000:
        return f"{duration_ms} ms"
    seconds = duration_ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    total_s = int(seconds)
    if total_s < 3600:
        return f"{total_s // 60}m {total_s % 60:02d}s"
    return f"{total_s // 3600}h {total_s % 3600 // 60:02d}m"


def fmt_size_bytes(size_bytes: int) -> str:
    """Format a size in bytes with binary units.

    >>> [fmt_size_bytes(v) for v in (0, 1536, 1210993, 3 << 30)]
    ['0 B', '1.5 KiB', '1.2 MiB', '3.0 GiB']
    """
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size_bytes} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _row(info: AppInfo) -> tuple[str, ...]:
    app_id = info.app_id or os.path.basename(info.path.rstrip("/")) or info.path
    return (
        app_id,
        info.attempt_id or "-",
        _clip(info.name or "-", NAME_MAX_CHARS),
        info.spark_version or "-",
        fmt_start_utc(info.start_ms),
        fmt_duration_ms(info.duration_ms),
        info.state,
        "-" if info.error is not None else info.codec,
        info.layout,
        fmt_size_bytes(info.size_bytes),
    )


def format_apps_table(infos: list[AppInfo]) -> str:
    """Return the applications as a fixed-width text table, then one line per unreadable entry."""
    if not infos:
        return "no event logs found\n"
    rows = [_HEADERS, *(_row(i) for i in infos)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(_HEADERS))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(w) if _HEADERS[c] in _RIGHT_ALIGNED else cell.ljust(w)
            for c, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    errors = [i for i in infos if i.error is not None]
    if errors:
        out.append("")
        out.append(f"{len(errors)} entr{'y' if len(errors) == 1 else 'ies'} could not be read:")
        out.extend(f"  {i.error}" for i in errors)
    return "\n".join(out) + "\n"
