"""Every option of a batch run, validated once when built, and `--since` ages."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import cached_property

from analyzer.batch.engine import ENGINES
from analyzer.batch.history import RegressionRule
from analyzer.batch.jobkey import JobKeyRule
from analyzer.batch.jobs import JobSettings
from analyzer.batch.limits import (
    DEFAULT_MAX_MEMORY_MB,
    DEFAULT_REGRESSION_MIN_CHANGE_S,
    DEFAULT_REGRESSION_THRESHOLD,
    DEFAULT_TIMEOUT_S,
)
from analyzer.errors import Strictness, UsageError
from analyzer.eventlog.remote import RemoteOptions
from analyzer.report.options import ReportOptions

MIN_MEMORY_MB = 256
"""Below this a worker cannot even import the analyzer."""
MAX_SINCE_MS = 100 * 365 * 86_400_000
"""`--since` beyond a century is refused as a typo."""
_SINCE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_SINCE_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str) -> int:
    """Return a `--since` age (`90m`, `24h`, `7d`, `2w`, `30s`) in milliseconds.

    >>> parse_since("24h")
    86400000
    """
    m = _SINCE_RE.match(text)
    if m is None:
        raise UsageError(f"cannot read --since {text!r}; use a number and s, m, h, d or w: 24h, 7d")
    age_ms = float(m.group(1)) * _SINCE_UNIT_S[m.group(2)] * 1000
    if not math.isfinite(age_ms) or age_ms > MAX_SINCE_MS:
        number = m.group(1)
        shown = number + m.group(2) if len(number) <= 20 else f"{number[:20]}…{m.group(2)}"
        raise UsageError(f"--since {shown} is too long; at most 100 years (36500d)")
    return int(age_ms)


@dataclass(frozen=True)
class BatchOptions:
    """Every option of a batch run, validated when built (a bad value is a `UsageError`)."""

    since: str | None = None
    """Only logs modified within this age (`parse_since`)."""
    match: str | None = None
    """Only applications whose id or name matches this regular expression."""
    include_incomplete: bool = False
    engine: str = "local"
    jobs: int | None = None
    """Worker processes of the local engine (None: the CPU count)."""
    master: str | None = None
    max_memory_mb: int = DEFAULT_MAX_MEMORY_MB
    """Data size one worker may use, MiB (0: no limit)."""
    timeout_s: int = DEFAULT_TIMEOUT_S
    """Wall time one log may take, seconds (0: no limit)."""
    strictness: Strictness = Strictness.STRICT
    report: ReportOptions = field(default_factory=ReportOptions)
    """Options of every report (thresholds); the format is set per report."""
    job_key: str | None = None
    """How applications are grouped into jobs (`jobkey.JobKeyRule`); None: normalized names."""
    regression_threshold: float = DEFAULT_REGRESSION_THRESHOLD
    """A run regressed at this many times the median duration of its job's last runs..."""
    regression_min_change_s: float = DEFAULT_REGRESSION_MIN_CHANGE_S
    """...and at least this many seconds above it."""
    remote: RemoteOptions = field(default_factory=RemoteOptions)
    """How a remote log directory's storage is reached (timeout, endpoint, storage options)."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(f"unknown --engine {self.engine!r}; use {' or '.join(ENGINES)}")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if self.max_memory_mb != 0 and self.max_memory_mb < MIN_MEMORY_MB:
            raise UsageError(f"--max-memory-mb must be 0 (no limit) or at least {MIN_MEMORY_MB}")
        if self.timeout_s < 0:
            raise UsageError("--timeout-s must be 0 (no limit) or more")
        if self.since is not None:
            parse_since(self.since)
        if self.match is not None:
            try:
                re.compile(self.match)
            except (re.error, OverflowError, RecursionError) as error:
                raise UsageError(f"--match is not a valid regular expression: {error}") from None
        JobKeyRule(self.job_key)
        if not (math.isfinite(self.regression_threshold) and self.regression_threshold >= 1.0):
            raise UsageError("--regression-threshold must be at least 1 (1.5: 50 % slower)")
        if not (
            math.isfinite(self.regression_min_change_s)
            and 0 <= self.regression_min_change_s <= MAX_SINCE_MS / 1000
        ):
            raise UsageError("--regression-min-change-s must be 0 or more seconds")

    @property
    def regression_rule(self) -> RegressionRule:
        """When a run counts as regressed."""
        return RegressionRule(
            ratio=self.regression_threshold,
            min_change_ms=round(self.regression_min_change_s * 1000),
        )

    @cached_property
    def max_age_ms(self) -> int | None:
        """`since` in milliseconds."""
        return parse_since(self.since) if self.since is not None else None

    def job_settings(self) -> JobSettings:
        """Return the settings every job of the run gets."""
        return JobSettings(
            strictness=self.strictness,
            report=replace(self.report, color=False),
            max_memory_mb=self.max_memory_mb,
            timeout_s=self.timeout_s,
            job_key=self.job_key,
            remote=self.remote,
        )
