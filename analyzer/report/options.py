"""What a report shows: one frozen, validated set of options built by the CLI and batch alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from analyzer.aggregate.pricing import PriceSpec
from analyzer.errors import UsageError
from analyzer.insights import Thresholds
from analyzer.units import decimal_int

ReportFormat = Literal["text", "html", "json", "markdown"]
FORMATS: tuple[ReportFormat, ...] = ("text", "html", "json", "markdown")

MetricsLevel = Literal["none", "summary", "full"]
METRICS_LEVELS: tuple[MetricsLevel, ...] = ("none", "summary", "full")

DEFAULT_WIDTH = 100
"""Columns the text report fits in unless told otherwise (the CLI's default when not printing to
a terminal)."""
MIN_WIDTH = 60
"""The narrowest text report: operator lines need room for a name and an id."""
MAX_WIDTH = 1000
"""The widest text report."""

Section = Literal["summary", "time", "findings", "plans", "stages", "config", "executors", "jobs"]
SECTIONS: tuple[Section, ...] = (
    "summary",
    "time",
    "findings",
    "plans",
    "stages",
    "config",
    "executors",
    "jobs",
)
"""The text report's sections, in the order it prints them (`--sections`): the header, where
the time went, findings, each execution's plan, the stages (each execution's, then those outside
SQL executions), the Spark configuration, the executors, the jobs."""


def parse_sections(value: str) -> tuple[Section, ...]:
    """Read `--sections`: names separated by commas, or `all`; a bad name is a `UsageError`.

    >>> parse_sections("plans, findings")
    ('findings', 'plans')
    >>> parse_sections("all") == SECTIONS
    True
    """
    names = [name.strip() for name in value.split(",") if name.strip()]
    if names == ["all"]:
        return SECTIONS
    unknown = [name for name in names if name not in SECTIONS]
    if unknown or not names:
        raise UsageError(
            f"unknown --sections {', '.join(unknown) or repr(value)}; use all or names from "
            + ", ".join(SECTIONS)
        )
    return tuple(s for s in SECTIONS if s in names)


MAX_WHAT_IF_SLOTS = 1_000_000
"""The most task slots `--what-if-slots` may name."""
MAX_WHAT_IF_COUNTS = 12
"""The most slot counts `--what-if-slots` may name."""


def parse_what_if_slots(value: str) -> tuple[int, ...]:
    """Read `--what-if-slots`: whole numbers of task slots separated by commas, each from 1 to
    `MAX_WHAT_IF_SLOTS` (at most `MAX_WHAT_IF_COUNTS`); anything else is a `UsageError`.

    >>> parse_what_if_slots("1, 8,64")
    (1, 8, 64)
    """
    counts = [decimal_int(name.strip()) for name in value.split(",") if name.strip()]
    if not counts or None in counts:
        raise UsageError(
            f"--what-if-slots takes task slot counts separated by commas, like 1,8,64, "
            f"not {value[:40]!r}"
        )
    return tuple(count for count in counts if count is not None)


@dataclass(frozen=True)
class ReportOptions:
    """Everything that changes a report, validated when built (a bad value is a `UsageError`).

    `executions` and `top` choose the SQL executions every format shows (an id the log does not
    hold is reported when the report is built, see `report.selection`); `metrics` is the text
    report's detail; `color` and `width` are for the text report only; `now_ms` is the clock
    printed as the generation time (None: not printed in text, the real clock in HTML);
    `redact` replaces literals, paths, hosts and users with stable tokens in every format
    (docs/redaction.md); `what_if_slots` are the task slot counts of the what-if section (None:
    half, double and four times the run's, docs/what-if.md); `prices` prices the run's core-hours
    and findings (docs/cost.md).
    """

    fmt: ReportFormat = "text"
    metrics: MetricsLevel = "summary"
    executions: tuple[int, ...] = ()
    top: int | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    color: bool = False
    width: int = DEFAULT_WIDTH
    sections: tuple[Section, ...] = SECTIONS
    now_ms: int | None = None
    redact: bool = False
    what_if_slots: tuple[int, ...] | None = None
    prices: PriceSpec | None = None

    @property
    def stage_level(self) -> MetricsLevel:
        """How much of the stage attempts the text report lays out: its `metrics` level, or
        "none" without the stages section (then no stage quantiles either)."""
        return self.metrics if "stages" in self.sections else "none"

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise UsageError(f"unknown format {self.fmt!r}; use one of {', '.join(FORMATS)}")
        if self.metrics not in METRICS_LEVELS:
            raise UsageError(f"unknown --metrics {self.metrics!r}; use {', '.join(METRICS_LEVELS)}")
        if self.top is not None and self.top < 1:
            raise UsageError(f"--top must be at least 1, not {self.top}")
        if not MIN_WIDTH <= self.width <= MAX_WIDTH:
            raise UsageError(
                f"--width must be between {MIN_WIDTH} and {MAX_WIDTH}, not {self.width}"
            )
        if self.what_if_slots is not None:
            if not 1 <= len(self.what_if_slots) <= MAX_WHAT_IF_COUNTS:
                raise UsageError(
                    f"--what-if-slots takes 1 to {MAX_WHAT_IF_COUNTS} slot counts, "
                    f"not {len(self.what_if_slots)}"
                )
            bad = [n for n in self.what_if_slots if not 1 <= n <= MAX_WHAT_IF_SLOTS]
            if bad:
                raise UsageError(
                    f"--what-if-slots must be between 1 and {MAX_WHAT_IF_SLOTS:,}, not {bad[0]}"
                )
        unknown = [s for s in self.sections if s not in SECTIONS]
        if unknown or not self.sections:
            raise UsageError(f"unknown --sections {unknown}; use names from {', '.join(SECTIONS)}")
