"""The history tables' columns: one typed row per table, and the Parquet schema it gives.

Each table's columns are the fields of its row type (`HISTORY_ROWS`), in order, so a column is
added, renamed or typed in one place; docs/batch.md documents them and `HISTORY_FORMAT_VERSION`
says which version a reader has.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass

import polars as pl

HISTORY_TABLES = ("runs", "executions", "findings", "advice", "advice_applied")
HISTORY_FORMAT_VERSION = 1
"""Version of the history tables' columns: bumped when one is renamed, removed or changes
meaning (docs/batch.md)."""
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


def history_schema(table: str) -> dict[str, type[pl.DataType]]:
    """Return the polars schema of a history table."""
    return {name: _COLUMN_TYPES[kind] for name, kind in HISTORY_SCHEMAS[table]}
