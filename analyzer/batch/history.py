"""Job history: every recorded run of every recurring job, appended run after run, never rewritten.

Three Parquet tables under `OUTDIR/tables/history/` (`runs`, `executions`, `findings`), each a
directory holding one file per batch run that recorded something. A batch run appends one file to
each, the `runs` file last: a `runs` file is the commit of its batch, and `executions` or
`findings` files without one (a run killed between the writes) are deleted by the next run before
it reads the history. Earlier files are never opened for writing, so no crash can damage them.

A run is an application (one attempt) that completed, with a start and a duration; it is recorded
once, whatever re-runs or log directories show it again (by application id and attempt). When it
is recorded it is compared with the earlier runs of its job (`compare`): the previous run, the
median of the last `MEDIAN_WINDOW`, and whether it regressed. A finding whose key was not seen in
any earlier run of the job is new. The tables are documented in docs/batch.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
import os
import secrets
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analyzer.batch.fleet import DocExecution, DocFinding, ReportDoc
from analyzer.batch.jobkey import normalize_app_name
from analyzer.batch.limits import DEFAULT_REGRESSION_MIN_CHANGE_S, DEFAULT_REGRESSION_THRESHOLD
from analyzer.batch.outputs import cannot_write
from analyzer.compare.advice_check import applied_status
from analyzer.insights.finding import Advice
from analyzer.units import fmt_duration_ms

HISTORY_DIR = "history"
"""The history tables' directory under `OUTDIR/tables/`."""
HISTORY_TABLES = ("runs", "executions", "findings", "advice", "advice_applied")
HISTORY_FORMAT_VERSION = 1
"""Version of the history tables' columns: bumped when one is renamed, removed or changes
meaning (docs/batch.md)."""
MEDIAN_WINDOW = 10
"""A run is compared with the median duration of up to this many runs of its job before it."""
SPARKLINE_RUNS = 30
"""The index draws the durations of a job's last this many runs."""
MAX_TEXT_CHARS = 2000
"""Descriptions and titles are cut to this many characters in the tables."""

_COLUMN_TYPES: dict[str, type[pl.DataType]] = {
    "int": pl.Int64,
    "float": pl.Float64,
    "str": pl.String,
    "bool": pl.Boolean,
    "date": pl.Date,
}


@dataclass(frozen=True)
class HistoryRow:
    """The columns every history table starts with: which run of which job, recorded when."""

    job_key: str
    run_date: dt.date
    """The run's start date, UTC (the tables are partitioned by it)."""
    run_start_ms: int
    app_key: str
    app_id: str | None
    attempt_id: str | None
    batch_run_ms: int
    """When the batch run that recorded it started, epoch ms."""


@dataclass(frozen=True)
class RunRow(HistoryRow):
    """A row of `runs`: one recorded run of a job and how it compared with the runs before it."""

    name: str | None
    user: str | None
    spark_version: str | None
    end_ms: int | None
    duration_ms: int
    log_path: str
    n_executions: int
    n_failed_executions: int
    n_failed_tasks: int
    n_findings: int
    n_new_findings: int
    worst_severity: str | None
    previous_app_key: str | None
    previous_duration_ms: int | None
    n_median_runs: int
    median_duration_ms: int | None
    regressed: bool
    regression_threshold: float
    regression_min_change_ms: int
    core_hours_allocated: float | None
    core_hours_used: float | None
    idle_share: float | None
    memory_gib_hours: float | None
    cost: float | None
    cost_idle: float | None
    currency: str | None


@dataclass(frozen=True)
class ExecutionRow(HistoryRow):
    """A row of `executions`: one SQL execution of a recorded run."""

    execution_id: int
    root_execution_id: int | None
    description: str | None
    status: str | None
    start_ms: int | None
    end_ms: int | None
    duration_ms: int | None
    n_jobs: int
    n_stages: int
    n_plan_versions: int
    n_nodes: int
    n_findings: int
    error_message: str | None


@dataclass(frozen=True)
class FindingRow(HistoryRow):
    """A row of `findings`: one finding of a recorded run, new or seen in an earlier run."""

    finding_key: str
    is_new: bool
    rule: str
    severity: str
    title: str
    estimated_lost_ms: int | None
    execution_id: int | None
    execution_description: str | None
    node_id: int | None
    node_name: str | None
    stage_id: int | None
    stage_attempt_id: int | None


@dataclass(frozen=True)
class AdviceRow(HistoryRow):
    """A row of `advice`: one setting a finding of a recorded run advised."""

    finding_key: str
    rule: str
    setting: str
    advised: str | None
    current: str
    kind: str
    arithmetic: str
    execution_description: str | None
    execution_ms: int | None
    estimated_lost_ms: int | None
    predicted_ms: int | None
    measured_ms: int | None
    predicted_of: str


@dataclass(frozen=True)
class AdviceAppliedRow(HistoryRow):
    """A row of `advice_applied`: a setting an earlier run of the job advised that this run
    applied, with the query's predicted and measured wall time."""

    advised_app_key: str
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


HISTORY_ROWS: dict[str, type[HistoryRow]] = {
    "runs": RunRow,
    "executions": ExecutionRow,
    "findings": FindingRow,
    "advice": AdviceRow,
    "advice_applied": AdviceAppliedRow,
}
"""The row type of each history table (`HISTORY_TABLES`)."""

_COLUMN_KINDS = {"str": "str", "int": "int", "float": "float", "bool": "bool", "dt.date": "date"}

HISTORY_SCHEMAS: dict[str, tuple[tuple[str, str], ...]] = {
    table: tuple(
        (f.name, _COLUMN_KINDS[str(f.type).removesuffix(" | None")])
        for f in dataclasses.fields(row)
    )
    for table, row in HISTORY_ROWS.items()
}
"""Each table's columns and their kinds, in order: the fields of its row type."""
_SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


def history_schema(table: str) -> dict[str, type[pl.DataType]]:
    """Return the polars schema of a history table."""
    return {name: _COLUMN_TYPES[kind] for name, kind in HISTORY_SCHEMAS[table]}


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
    duration_ms: int, earlier: Sequence[RunRecord], rule: RegressionRule
) -> Comparison:
    """Compare a run's duration with the earlier runs of its job (oldest first).

    Regressed: at least `rule.ratio` times the median of the last `MEDIAN_WINDOW` earlier runs,
    and at least `rule.min_change_ms` more than it. A first run never regressed.

    >>> def r(ms): return RunRecord("j", "a", "a", None, "j", 0, ms, None, 0, None, False, 0)
    >>> compare_with_history(45_000, [r(10_000), r(11_000)], RegressionRule()).regressed
    True
    >>> compare_with_history(15_000, [r(5_000)], RegressionRule()).regressed  # 3x, only 10 s more
    False
    >>> compare_with_history(40_000, [], RegressionRule()).median_ms is None
    True
    """
    window = [r.duration_ms for r in earlier[-MEDIAN_WINDOW:]]
    if not window:
        return Comparison(None, None, 0, False)
    median_ms = round(statistics.median(window))
    regressed = (
        duration_ms >= rule.ratio * median_ms and duration_ms - median_ms >= rule.min_change_ms
    )
    return Comparison(earlier[-1], median_ms, len(window), regressed)


def finding_key(finding: DocFinding, execution: DocExecution | None, node_name: str | None) -> str:
    """Return what identifies a finding across runs of a job: the rule, the execution and node.

    The execution is named by its description (dates and ids normalized away, as in job keys),
    which stays the same from run to run where ids may not; the node by its operator name.

    >>> finding_key(DocFinding("data-skew", "warning", "t"), None, "Window")
    'data-skew | - | Window'
    """
    if execution is None:
        where = "-"
    elif execution.description:
        where = normalize_app_name(execution.description)
    else:
        where = f"execution {execution.execution_id}"
    return f"{finding.rule} | {where} | {node_name or '-'}"


@dataclass(frozen=True)
class RunInput:
    """An analyzed application the history may record: its manifest facts and its JSON report."""

    app_key: str
    job_key: str
    log_path: str
    n_failed_tasks: int
    doc: ReportDoc


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


def _cut(text: str | None) -> str | None:
    return None if text is None else text[:MAX_TEXT_CHARS]


def _run_date(start_ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(start_ms / 1000, tz=dt.UTC).date()


def recordable(doc: ReportDoc) -> bool:
    """True for an application the history records: completed, with a start and an end."""
    app = doc.application
    return app.completed and app.start_ms is not None and app.end_ms is not None


def new_records(
    history: History,
    inputs: Iterable[RunInput],
    rule: RegressionRule,
    batch_run_ms: int,
) -> NewRecords:
    """Return the rows that record each input not recorded yet (in order of start).

    Each run is compared with the runs of its job that started before it (recorded earlier or in
    this batch), and each of its findings is new unless an earlier run of the job had its key.
    """
    seen = history.identities()
    fresh: list[RunInput] = []
    for item in inputs:
        app = item.doc.application
        identity = run_identity(app.id, app.attempt_id, item.app_key)
        if identity in seen or not recordable(item.doc):
            continue
        seen.add(identity)
        fresh.append(item)
    fresh.sort(key=lambda i: (i.doc.application.start_ms or 0, i.app_key))
    runs_by_job: dict[str, list[RunRecord]] = {}
    for run in history.runs:
        runs_by_job.setdefault(run.job_key, []).append(run)
    keys_by_job: dict[str, list[tuple[int, str]]] = {}
    for f in history.findings:
        keys_by_job.setdefault(f.job_key, []).append((f.run_start_ms, f.finding_key))
    advice_by_app: dict[str, list[AdviceRecord]] = {}
    for a in history.advice:
        advice_by_app.setdefault(a.app_key, []).append(a)
    out = NewRecords({t: [] for t in HISTORY_TABLES}, [], [], {})
    for item in fresh:
        _record(item, runs_by_job, keys_by_job, rule, batch_run_ms, out, advice_by_app)
    return out


def _record(
    item: RunInput,
    runs_by_job: dict[str, list[RunRecord]],
    keys_by_job: dict[str, list[tuple[int, str]]],
    rule: RegressionRule,
    batch_run_ms: int,
    out: NewRecords,
    advice_by_app: dict[str, list[AdviceRecord]] | None = None,
) -> None:
    advice_by_app = advice_by_app if advice_by_app is not None else {}
    doc = item.doc
    app = doc.application
    start_ms = app.start_ms or 0
    duration_ms = (app.end_ms or 0) - start_ms
    job_runs = runs_by_job.setdefault(item.job_key, [])
    earlier = sorted(
        (r for r in job_runs if r.run_start_ms < start_ms), key=lambda r: r.run_start_ms
    )
    comparison = compare_with_history(duration_ms, earlier, rule)
    seen_keys = {k for s, k in keys_by_job.get(item.job_key, []) if s < start_ms}
    key = HistoryRow(
        job_key=item.job_key,
        run_date=_run_date(start_ms),
        run_start_ms=start_ms,
        app_key=item.app_key,
        app_id=app.id,
        attempt_id=app.attempt_id,
        batch_run_ms=batch_run_ms,
    )
    key_cols = dataclasses.asdict(key)
    executions = {e.execution_id: e for e in doc.executions}
    findings: list[FindingRecord] = []
    per_execution: dict[int, int] = {}
    for f in doc.findings:
        execution = executions.get(f.execution_id) if f.execution_id is not None else None
        node_name = None
        if execution is not None and f.node_id is not None:
            node_name = next((n.name for n in execution.nodes if n.node_id == f.node_id), None)
        finding_key_str = finding_key(f, execution, node_name)
        is_new = finding_key_str not in seen_keys
        if f.execution_id is not None:
            per_execution[f.execution_id] = per_execution.get(f.execution_id, 0) + 1
        record = FindingRecord(
            item.job_key, item.app_key, start_ms, finding_key_str, is_new, f.severity, f.title,
            f.estimated_lost_ms,
        )  # fmt: skip
        findings.append(record)
        for a in f.advice:
            described = _cut(execution.description) if execution is not None else None
            lasted = execution.duration_ms if execution is not None else None
            out.rows["advice"].append(
                AdviceRow(
                    **key_cols,
                    finding_key=finding_key_str,
                    rule=f.rule,
                    setting=a.setting,
                    advised=a.value,
                    current=a.current,
                    kind=a.kind,
                    arithmetic=_cut(a.arithmetic) or "",
                    execution_description=described,
                    execution_ms=lasted,
                    estimated_lost_ms=f.estimated_lost_ms,
                    predicted_ms=a.predicted_ms,
                    measured_ms=a.measured_ms,
                    predicted_of=a.predicted_of,
                )
            )
            advice_by_app.setdefault(item.app_key, []).append(
                AdviceRecord(
                    item.job_key, item.app_key, start_ms, f.rule, a.setting, a.value,
                    a.current, a.kind, described, lasted, f.estimated_lost_ms,
                )
            )  # fmt: skip
        out.rows["findings"].append(
            FindingRow(
                **key_cols,
                finding_key=finding_key_str,
                is_new=is_new,
                rule=f.rule,
                severity=f.severity,
                title=f.title[:MAX_TEXT_CHARS],
                estimated_lost_ms=f.estimated_lost_ms,
                execution_id=f.execution_id,
                execution_description=(
                    _cut(execution.description) if execution is not None else None
                ),
                node_id=f.node_id,
                node_name=node_name,
                stage_id=f.stage_id,
                stage_attempt_id=f.stage_attempt_id,
            )
        )
    for e in doc.executions:
        out.rows["executions"].append(
            ExecutionRow(
                **key_cols,
                execution_id=e.execution_id,
                root_execution_id=e.root_execution_id,
                description=_cut(e.description),
                status=e.status,
                start_ms=e.start_ms,
                end_ms=e.end_ms,
                duration_ms=e.duration_ms,
                n_jobs=len(e.job_ids),
                n_stages=len(e.stage_ids),
                n_plan_versions=e.n_plan_versions,
                n_nodes=len(e.nodes),
                n_findings=per_execution.get(e.execution_id, 0),
                error_message=_cut(e.error_message),
            )
        )
    worst = max(
        (f.severity for f in doc.findings), key=lambda s: _SEVERITY_RANK.get(s, -1), default=None
    )
    if comparison.previous is not None:
        applied_rows = applied_advice(
            advice_by_app.get(comparison.previous.app_key, []), doc, key_cols
        )
        out.rows["advice_applied"].extend(applied_rows)
        out.applied.extend(
            AdviceAppliedRecord(
                app_key=item.app_key,
                rule=r.rule,
                setting=r.setting,
                advised=r.advised,
                before=r.before,
                after=r.after,
                status=r.status,
                execution_description=r.execution_description,
                before_ms=r.before_ms,
                predicted_ms=r.predicted_ms,
                after_ms=r.after_ms,
            )
            for r in applied_rows
        )
    cost = doc.cost
    currency = cost.price.currency if cost is not None and cost.price is not None else None
    previous = comparison.previous
    out.rows["runs"].append(
        RunRow(
            **key_cols,
            name=_cut(app.name),
            user=app.user,
            spark_version=app.spark_version,
            end_ms=app.end_ms,
            duration_ms=duration_ms,
            log_path=item.log_path,
            n_executions=len(doc.executions),
            n_failed_executions=sum(1 for e in doc.executions if e.status == "FAILED"),
            n_failed_tasks=item.n_failed_tasks,
            n_findings=len(findings),
            n_new_findings=sum(1 for f in findings if f.is_new),
            worst_severity=worst,
            previous_app_key=previous.app_key if previous is not None else None,
            previous_duration_ms=previous.duration_ms if previous is not None else None,
            n_median_runs=comparison.n_median_runs,
            median_duration_ms=comparison.median_ms,
            regressed=comparison.regressed,
            regression_threshold=rule.ratio,
            regression_min_change_ms=rule.min_change_ms,
            core_hours_allocated=cost.core_hours_allocated if cost is not None else None,
            core_hours_used=cost.core_hours_used if cost is not None else None,
            idle_share=cost.idle_share if cost is not None else None,
            memory_gib_hours=cost.memory_gib_hours if cost is not None else None,
            cost=cost.cost_allocated if cost is not None else None,
            cost_idle=cost.cost_idle if cost is not None else None,
            currency=currency,
        )
    )
    run = RunRecord(
        job_key=item.job_key,
        app_key=item.app_key,
        app_id=app.id,
        attempt_id=app.attempt_id,
        name=app.name,
        run_start_ms=start_ms,
        duration_ms=duration_ms,
        log_path=item.log_path,
        n_findings=len(findings),
        worst_severity=worst,
        regressed=comparison.regressed,
        batch_run_ms=batch_run_ms,
        core_hours_allocated=cost.core_hours_allocated if cost is not None else None,
        idle_share=cost.idle_share if cost is not None else None,
        cost=cost.cost_allocated if cost is not None else None,
        cost_idle=cost.cost_idle if cost is not None else None,
        currency=currency,
    )
    job_runs.append(run)
    keys_by_job.setdefault(item.job_key, []).extend((start_ms, f.finding_key) for f in findings)
    out.runs.append(run)
    out.findings.extend(findings)
    out.comparisons[item.app_key] = comparison


def applied_advice(
    earlier: Sequence[AdviceRecord], doc: ReportDoc, key_cols: dict[str, object]
) -> list[AdviceAppliedRow]:
    """The advice of an earlier run of the job that this run (its JSON report `doc`) applied:
    its Spark properties hold the advised value, or moved toward it. Each is measured on the
    query the finding was about, paired by description (normalized as job keys are); the
    prediction is that query's earlier wall time minus the finding's estimated loss."""
    props = doc.environment.spark_properties if doc.environment is not None else {}
    by_description: dict[str, int | None] = {}
    for e in doc.executions:
        if e.description:
            by_description.setdefault(normalize_app_name(e.description), e.duration_ms)
    rows: list[AdviceAppliedRow] = []
    for a in earlier:
        if a.advised is None:
            continue
        after = props.get(a.setting)
        if after is None and a.current.endswith(" (default)"):
            after = a.current
        kind = a.kind if a.kind in ("count", "bytes", "memory", "duration", "flag") else "count"
        advice = Advice(a.setting, a.advised, a.current, "", kind)  # type: ignore[arg-type]
        status = applied_status(advice, after)
        if status is None or after is None:
            continue
        described = a.execution_description
        after_ms = by_description.get(normalize_app_name(described)) if described else None
        lost = a.estimated_lost_ms or 0
        predicted = a.execution_ms - lost if a.execution_ms is not None and lost > 0 else None
        rows.append(
            AdviceAppliedRow(
                **key_cols,  # type: ignore[arg-type]
                advised_app_key=a.app_key,
                rule=a.rule,
                setting=a.setting,
                advised=a.advised,
                before=a.current,
                after=after,
                status=status,
                execution_description=described,
                before_ms=a.execution_ms,
                predicted_ms=predicted,
                after_ms=after_ms,
            )
        )
    return rows


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
                comparison=compare_with_history(latest.duration_ms, runs[:-1], rule),
                findings=tuple(findings_by_app.get(latest.app_key, ())),
                applied=tuple(applied_by_app.get(latest.app_key, ())),
            )
        )
    return states


_READ_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": tuple(f.name for f in dataclasses.fields(RunRecord)),
    "findings": tuple(f.name for f in dataclasses.fields(FindingRecord)),
    "advice": tuple(f.name for f in dataclasses.fields(AdviceRecord)),
    "advice_applied": tuple(f.name for f in dataclasses.fields(AdviceAppliedRecord)),
}
"""The columns read back from each table: those of its record."""
_ADDED_COLUMNS: dict[str, frozenset[str]] = {
    "runs": frozenset(
        f.name for f in dataclasses.fields(RunRecord) if f.default is not dataclasses.MISSING
    ),
    "findings": frozenset(),
    "advice": frozenset(),
    "advice_applied": frozenset(),
}
"""Columns added to a table after its first version: null when an older file lacks them."""


class HistoryStore:
    """The history tables of one output directory: read them, append a batch, clean up."""

    def __init__(self, tables_dir: Path) -> None:
        self.root = tables_dir / HISTORY_DIR

    def table_dir(self, table: str) -> Path:
        """The directory of one history table (one Parquet file per batch run)."""
        return self.root / table

    def _files(self, table: str) -> list[Path]:
        directory = self.table_dir(table)
        if not directory.is_dir():
            return []
        return sorted(
            p for p in directory.iterdir() if p.suffix == ".parquet" and not p.name.startswith(".")
        )

    def remove_uncommitted(self) -> list[str]:
        """Delete `executions` and `findings` files of a batch whose `runs` file was never written.

        Such files are what a run killed mid-append leaves; the runs they describe are recorded
        again by the next run. Return the names removed.
        """
        committed = {p.name for p in self._files("runs")}
        removed: list[str] = []
        for table in HISTORY_TABLES[1:]:
            for path in self._files(table):
                if path.name not in committed:
                    with contextlib.suppress(OSError):
                        path.unlink()
                        removed.append(f"{table}/{path.name}")
        return removed

    def load(self) -> History:
        """Read the recorded runs and findings; a file that cannot be read is skipped (listed)."""
        history = History()
        for _, frame in self._frames("runs", history):
            history.runs.extend(RunRecord(**row) for row in frame.iter_rows(named=True))
        committed = {p.name for p in self._files("runs")}
        for path, frame in self._frames("findings", history):
            if path.name not in committed:
                continue
            history.findings.extend(FindingRecord(**row) for row in frame.iter_rows(named=True))
        for path, frame in self._frames("advice", history):
            if path.name in committed:
                history.advice.extend(AdviceRecord(**row) for row in frame.iter_rows(named=True))
        for path, frame in self._frames("advice_applied", history):
            if path.name in committed:
                history.applied.extend(
                    AdviceAppliedRecord(**row) for row in frame.iter_rows(named=True)
                )
        return history

    def _frames(self, table: str, history: History) -> list[tuple[Path, pl.DataFrame]]:
        needed = list(_READ_COLUMNS[table])
        frames: list[tuple[Path, pl.DataFrame]] = []
        for path in self._files(table):
            try:
                # Columns added since a file was written (the cost columns) read as null.
                present = set(pl.read_parquet_schema(path))
                added = _ADDED_COLUMNS[table] - present
                frame = pl.read_parquet(path, columns=[c for c in needed if c not in added])
                frame = frame.with_columns(pl.lit(None).alias(c) for c in added).select(needed)
            except (OSError, pl.exceptions.PolarsError) as error:
                reason = str(error).strip().splitlines()[0] if str(error).strip() else "unreadable"
                history.unreadable.append(
                    f"{path}: cannot read this history file ({reason[:200]}); it is skipped: "
                    "restore it from a backup or delete it"
                )
                continue
            frames.append((path, frame))
        return frames

    def append(self, records: NewRecords, batch_run_ms: int) -> str | None:
        """Write one file per history table for this batch, `runs` last; return its file name.

        Each file is written to a temporary name, flushed to disk and renamed into place.
        Raises `CannotWriteError` if a file cannot be written (nothing of the batch is committed).
        """
        if records.empty:
            return None
        stamp = dt.datetime.fromtimestamp(batch_run_ms / 1000, tz=dt.UTC)
        name = f"batch-{stamp:%Y%m%dT%H%M%S}{stamp.microsecond // 1000:03d}Z-{secrets.token_hex(4)}"
        file_name = f"{name}.parquet"
        for table in (*HISTORY_TABLES[1:], HISTORY_TABLES[0]):
            rows = [dataclasses.astuple(row) for row in records.rows[table]]
            frame = pl.DataFrame(rows, schema=history_schema(table), orient="row").sort(
                ["run_start_ms", "app_key"], maintain_order=True
            )
            buffer = io.BytesIO()
            frame.write_parquet(buffer)
            _write_durably(self.table_dir(table) / file_name, buffer.getvalue())
        return file_name


def _write_durably(path: Path, data: bytes) -> None:
    """Write `data` to a new file `path` through a flushed temporary file and a rename."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        with contextlib.suppress(OSError):  # make the rename itself durable where possible
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise cannot_write(path, error) from None
