"""The plain fixed-width table of `spark-explain apps`: one row per application of a log dir.

Every cell that comes from a log (ids, names, versions, error text) is neutralized for the
terminal before the columns are measured.
"""

from __future__ import annotations

import os

from analyzer.eventlog.discover import AppInfo
from analyzer.render.terminal import neutralize
from analyzer.units import fmt_bytes, fmt_duration_ms, fmt_timestamp_iso, shown_path

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
    "PATH",
)
_RIGHT_ALIGNED = {"DURATION", "SIZE"}


def _clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _row(info: AppInfo) -> tuple[str, ...]:
    path = shown_path(info.path)
    app_id = info.app_id or os.path.basename(path.rstrip("/")) or path
    duration = info.duration_ms
    cells = (
        app_id,
        info.attempt_id or "-",
        _clip(info.name or "-", NAME_MAX_CHARS),
        info.spark_version or "-",
        fmt_timestamp_iso(info.start_ms, missing="-"),
        "-" if duration is None or duration < 0 else fmt_duration_ms(duration),
        info.state,
        "-" if info.error is not None else info.codec,
        info.layout,
        fmt_bytes(info.size_bytes),
        path,
    )
    return tuple(neutralize(cell) for cell in cells)


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
        out.extend(f"  {neutralize(i.error or '')}" for i in errors)
    return "\n".join(out) + "\n"
