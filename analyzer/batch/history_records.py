"""The history as it is read back: recorded runs, findings and advice, and how runs compare.

A run is compared with the earlier runs of its job: the previous run, the median of the last
`MEDIAN_WINDOW`, and whether it regressed by a `RegressionRule`. `job_states` gives the index each
job with its latest run compared by the current rule.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.batch.history_rows import HistoryRow
from analyzer.batch.limits import DEFAULT_REGRESSION_MIN_CHANGE_S, DEFAULT_REGRESSION_THRESHOLD
from analyzer.units import fmt_duration_ms

SESSION_KEY_RE = re.compile(
    r"^(Spark shell|PySparkShell|pyspark-shell|Databricks Shell|SparkR|sparklyr|"
    r"Thrift JDBC/ODBC Server)( <id>)?$"
)
"""Job keys of the names Spark's shells and notebooks give every session, whatever it runs: their
runs are unrelated work, recorded but never compared as regressions."""
MEDIAN_WINDOW = 10
"""A run is compared with the median duration of up to this many runs of its job before it."""
SPARKLINE_RUNS = 30
"""The index draws the durations of a job's last this many runs."""


RunIdentity = tuple[str, str, str]
"""What makes two recorded runs the same: (application id, attempt id, '') or, for a log
without an application id, ('', '', app key)."""


def run_identity(app_id: str | None, attempt_id: str | None, app_key: str) -> RunIdentity:
    """Return the identity of a run: the same application attempt is recorded once."""
    if app_id:
        return (app_id, attempt_id or "", "")
    return ("", "", app_key)


@dataclass(frozen=True)
class RegressionRule:
    """When a run regressed (`--regression-threshold`, `--regression-min-change-s`)."""

    ratio: float = DEFAULT_REGRESSION_THRESHOLD
    """At least this many times the median of the earlier runs (1.5: 50 % slower)."""
    min_change_ms: int = DEFAULT_REGRESSION_MIN_CHANGE_S * 1000
    """And at least this much longer than that median, milliseconds."""

    def describe(self) -> str:
        """Return the rule in words, for the index.

        >>> RegressionRule().describe()
        'regressed: at least 1.5× the median of the last 10 earlier runs, and 30.0 s more'
        """
        return (
            f"regressed: at least {self.ratio:g}× the median of the last {MEDIAN_WINDOW} "
            f"earlier runs, and {fmt_duration_ms(self.min_change_ms)} more"
        )


@dataclass(frozen=True)
class RunRecord:
    """One recorded run, as the history keeps it (the `runs` table's columns the index needs)."""

    job_key: str
    app_key: str
    app_id: str | None
    attempt_id: str | None
    name: str | None
    run_start_ms: int
    duration_ms: int
    log_path: str | None
    n_findings: int
    worst_severity: str | None
    regressed: bool
    """As decided when the run was recorded (by the regression rule of that batch run)."""
    batch_run_ms: int
    core_hours_allocated: float | None = None
    """The run's core-hours allocated (docs/cost.md); None in runs recorded before costs."""
    idle_share: float | None = None
    cost: float | None = None
    """What the run cost, when a price was given."""
    cost_idle: float | None = None
    currency: str | None = None

    @property
    def identity(self) -> RunIdentity:
        """See `run_identity`."""
        return run_identity(self.app_id, self.attempt_id, self.app_key)

    @property
    def idle_core_hours(self) -> float | None:
        """Core-hours allocated that no task used (None in runs recorded before costs)."""
        if self.core_hours_allocated is None or self.idle_share is None:
            return None
        return self.core_hours_allocated * self.idle_share


@dataclass(frozen=True)
class FindingRecord:
    """One recorded finding of a run (the `findings` table's columns the index needs)."""

    job_key: str
    app_key: str
    run_start_ms: int
    finding_key: str
    is_new: bool
    severity: str
    title: str
    estimated_lost_ms: int | None


@dataclass(frozen=True)
class AdviceRecord:
    """One advised setting of a recorded run (the `advice` table's columns a later run checks)."""

    job_key: str
    app_key: str
    run_start_ms: int
    rule: str
    setting: str
    advised: str | None
    current: str
    kind: str
    execution_description: str | None
    execution_ms: int | None
    estimated_lost_ms: int | None


@dataclass(frozen=True)
class AdviceAppliedRecord:
    """An earlier run's advice a recorded run applied (the `advice_applied` table's columns)."""

    app_key: str
    rule: str
    setting: str
    advised: str
    before: str
    after: str
    status: str
    execution_description: str | None
    before_ms: int | None
    predicted_ms: int | None
    after_ms: int | None


@dataclass
class History:
    """Every run and finding recorded so far, and the files that could not be read."""

    runs: list[RunRecord] = field(default_factory=list)
    findings: list[FindingRecord] = field(default_factory=list)
    advice: list[AdviceRecord] = field(default_factory=list)
    applied: list[AdviceAppliedRecord] = field(default_factory=list)
    """The advice each run applied (the `advice_applied` table)."""
    unreadable: list[str] = field(default_factory=list)
    """One line per history file that could not be read (skipped)."""

    def identities(self) -> set[RunIdentity]:
        """The runs recorded already."""
        return {r.identity for r in self.runs}


@dataclass(frozen=True)
class Comparison:
    """How a run compares with the runs of its job before it."""

    previous: RunRecord | None
    """The latest earlier run."""
    median_ms: int | None
    """Median duration of up to `MEDIAN_WINDOW` earlier runs (the latest ones)."""
    n_median_runs: int
    regressed: bool


def compare_with_history(
    duration_ms: int, earlier: Sequence[RunRecord], rule: RegressionRule, job_key: str = ""
) -> Comparison:
    """Compare a run's duration with the earlier runs of its job (oldest first).

    Regressed: at least `rule.ratio` times the median of the last `MEDIAN_WINDOW` earlier runs,
    and at least `rule.min_change_ms` more than it. A first run never regressed, nor does a run
    of an interactive session's name (`SESSION_KEY_RE`): its earlier runs did other work.

    >>> def r(ms): return RunRecord("j", "a", "a", None, "j", 0, ms, None, 0, None, False, 0)
    >>> compare_with_history(45_000, [r(10_000), r(11_000)], RegressionRule()).regressed
    True
    >>> compare_with_history(15_000, [r(5_000)], RegressionRule()).regressed  # 3x, only 10 s more
    False
    >>> compare_with_history(40_000, [], RegressionRule()).median_ms is None
    True
    >>> compare_with_history(45_000, [r(10_000)], RegressionRule(), "Spark shell").regressed
    False
    """
    window = [r.duration_ms for r in earlier[-MEDIAN_WINDOW:]]
    if not window:
        return Comparison(None, None, 0, False)
    median_ms = round(statistics.median(window))
    regressed = (
        duration_ms >= rule.ratio * median_ms
        and duration_ms - median_ms >= rule.min_change_ms
        and SESSION_KEY_RE.match(job_key) is None
    )
    return Comparison(earlier[-1], median_ms, len(window), regressed)


@dataclass(frozen=True)
class NewRecords:
    """What one batch run adds to the history: the tables' rows and the records for the index."""

    rows: dict[str, list[HistoryRow]]
    runs: list[RunRecord]
    findings: list[FindingRecord]
    comparisons: dict[str, Comparison]
    """By app key of each run recorded."""
    applied: list[AdviceAppliedRecord] = field(default_factory=list)
    """The earlier runs' advice the runs recorded applied."""

    @property
    def empty(self) -> bool:
        """True when nothing new is recorded."""
        return not self.runs


@dataclass(frozen=True)
class JobState:
    """A job as the index shows it: its runs (oldest first) and how its latest run compares."""

    job_key: str
    runs: tuple[RunRecord, ...]
    latest: RunRecord
    comparison: Comparison
    """The latest run against the runs before it, by the current regression rule."""
    findings: tuple[FindingRecord, ...]
    """The latest run's findings."""
    applied: tuple[AdviceAppliedRecord, ...] = ()
    """The advice of the run before that the latest run applied."""


def job_states(history: History, rule: RegressionRule) -> list[JobState]:
    """Return every job of the history with its latest run compared (current rule)."""
    runs_by_job: dict[str, list[RunRecord]] = {}
    for run in history.runs:
        runs_by_job.setdefault(run.job_key, []).append(run)
    findings_by_app: dict[str, list[FindingRecord]] = {}
    for f in history.findings:
        findings_by_app.setdefault(f.app_key, []).append(f)
    applied_by_app: dict[str, list[AdviceAppliedRecord]] = {}
    for a in history.applied:
        applied_by_app.setdefault(a.app_key, []).append(a)
    states: list[JobState] = []
    for job_key, runs in runs_by_job.items():
        runs.sort(key=lambda r: (r.run_start_ms, r.app_key))
        latest = runs[-1]
        states.append(
            JobState(
                job_key=job_key,
                runs=tuple(runs),
                latest=latest,
                comparison=compare_with_history(latest.duration_ms, runs[:-1], rule, job_key),
                findings=tuple(findings_by_app.get(latest.app_key, ())),
                applied=tuple(applied_by_app.get(latest.app_key, ())),
            )
        )
    return states
