"""What a report shows: one frozen, validated set of options built by the CLI and batch alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from analyzer.errors import UsageError
from analyzer.insights import Thresholds

ReportFormat = Literal["text", "html", "json", "markdown"]
FORMATS: tuple[ReportFormat, ...] = ("text", "html", "json", "markdown")

MetricsLevel = Literal["none", "summary", "full"]
METRICS_LEVELS: tuple[MetricsLevel, ...] = ("none", "summary", "full")

DEFAULT_WIDTH = 100
"""Columns the text report fits in unless told otherwise."""
MIN_WIDTH = 60
"""The narrowest text report: operator lines need room for a name and an id."""


@dataclass(frozen=True)
class ReportOptions:
    """Everything that changes a report, validated when built (a bad value is a `UsageError`).

    `executions` and `top` choose the SQL executions every format shows (an id the log does not
    hold is reported when the report is built, see `report.selection`); `metrics` is the text
    report's detail; `color` and `width` are for the text report only; `now_ms` is the clock
    printed as the generation time (None: not printed in text, the real clock in HTML).
    """

    fmt: ReportFormat = "text"
    metrics: MetricsLevel = "summary"
    executions: tuple[int, ...] = ()
    top: int | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    color: bool = False
    width: int = DEFAULT_WIDTH
    now_ms: int | None = None

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise UsageError(f"unknown format {self.fmt!r}; use one of {', '.join(FORMATS)}")
        if self.metrics not in METRICS_LEVELS:
            raise UsageError(f"unknown --metrics {self.metrics!r}; use {', '.join(METRICS_LEVELS)}")
        if self.top is not None and self.top < 1:
            raise UsageError(f"--top must be at least 1, not {self.top}")
        if self.width < MIN_WIDTH:
            raise UsageError(f"--width must be at least {MIN_WIDTH}, not {self.width}")
