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

This module turns a batch's analyzed applications into the rows of the tables and the advice a
run applied; the rows' columns are in `history_rows.py`, the records read back and the
comparison of runs in `history_records.py`, the files in `history_store.py`. Their public names
are re-exported here.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analyzer.batch.fleet import DocExecution, DocFinding, ReportDoc, recorded_id
from analyzer.batch.history_records import (
    MEDIAN_WINDOW,
    SPARKLINE_RUNS,
    AdviceAppliedRecord,
    AdviceRecord,
    Comparison,
    FindingRecord,
    History,
    JobState,
    NewRecords,
    RegressionRule,
    RunIdentity,
    RunRecord,
    compare_with_history,
    job_states,
    run_identity,
)
from analyzer.batch.history_rows import (
    HISTORY_FORMAT_VERSION,
    HISTORY_ROWS,
    HISTORY_SCHEMAS,
    HISTORY_TABLES,
    MAX_TEXT_CHARS,
    AdviceAppliedRow,
    AdviceRow,
    ExecutionRow,
    FindingRow,
    HistoryRow,
    RunRow,
    history_schema,
)
from analyzer.batch.history_store import HISTORY_DIR, HistoryStore
from analyzer.batch.jobkey import normalize_app_name
from analyzer.compare.advice_check import applied_status
from analyzer.insights.finding import Advice

_SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


def finding_key(finding: DocFinding, execution: DocExecution | None, node_name: str | None) -> str:
    """Return what identifies a finding across runs of a job: the rule, the execution and node.

    The execution is named by its description (dates and ids normalized away, as in job keys),
    which stays the same from run to run where ids may not; the node by its operator name.

    >>> finding_key(DocFinding("data-skew", "warning", "t"), None, "Window")
    'data-skew | - | Window'
    """
    if execution is None:
        where = "-"
    elif execution.name:
        where = normalize_app_name(execution.name)
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
        identity = run_identity(recorded_id(app.id), recorded_id(app.attempt_id), item.app_key)
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
    comparison = compare_with_history(duration_ms, earlier, rule, item.job_key)
    seen_keys = {k for s, k in keys_by_job.get(item.job_key, []) if s < start_ms}
    key = HistoryRow(
        job_key=item.job_key,
        run_date=_run_date(start_ms),
        run_start_ms=start_ms,
        app_key=item.app_key,
        app_id=recorded_id(app.id),
        attempt_id=recorded_id(app.attempt_id),
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
            described = _cut(execution.name) if execution is not None else None
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
                execution_description=(_cut(execution.name) if execution is not None else None),
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
                description=_cut(e.name),
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
            n_failed_executions=sum(1 for e in doc.executions if e.failed),
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
        app_id=recorded_id(app.id),
        attempt_id=recorded_id(app.attempt_id),
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
        if e.name:
            by_description.setdefault(normalize_app_name(e.name), e.duration_ms)
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


__all__ = [
    "HISTORY_DIR",
    "HISTORY_FORMAT_VERSION",
    "HISTORY_ROWS",
    "HISTORY_SCHEMAS",
    "HISTORY_TABLES",
    "MAX_TEXT_CHARS",
    "MEDIAN_WINDOW",
    "SPARKLINE_RUNS",
    "AdviceAppliedRecord",
    "AdviceAppliedRow",
    "AdviceRecord",
    "AdviceRow",
    "Comparison",
    "ExecutionRow",
    "FindingRecord",
    "FindingRow",
    "History",
    "HistoryRow",
    "HistoryStore",
    "JobState",
    "NewRecords",
    "RegressionRule",
    "RunIdentity",
    "RunInput",
    "RunRecord",
    "RunRow",
    "applied_advice",
    "compare_with_history",
    "finding_key",
    "history_schema",
    "job_states",
    "new_records",
    "recordable",
    "run_identity",
]
