"""Fleet tables: rows over many applications, built from each application's JSON report document.

Both batch engines build their rows here, from the same JSON documents (`report.json`), so the
tables they write hold the same rows. The part of the document the tables use is read into typed
records (`ReportDoc`, docs/json-format.md); a document that does not fit them is refused. Column
types are given once, in `TABLE_SCHEMAS`, with a small vocabulary (`int`, `float`, `str`, `bool`)
that maps onto polars and onto Spark SQL types. The tables are documented in docs/batch.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec
import polars as pl

FLEET_FORMAT_VERSION = 1
"""Version of the table layout; bumped when a column is renamed, removed or changes meaning."""

MAX_ID_CHARS = 1000
"""Application and attempt ids are cut to this many characters in the fleet tables and the
history (`recorded_id`), as `spark-explain apps` cuts them."""
_ID_HASH_CHARS = 16

ColumnType = str
"""One of `int` (64-bit), `float` (64-bit), `str`, `bool`."""

_APP_KEY_COLUMNS: tuple[tuple[str, ColumnType], ...] = (
    ("app_key", "str"),
    ("app_id", "str"),
    ("attempt_id", "str"),
)

TABLE_SCHEMAS: dict[str, tuple[tuple[str, ColumnType], ...]] = {
    "applications": (
        *_APP_KEY_COLUMNS,
        ("name", "str"),
        ("spark_version", "str"),
        ("user", "str"),
        ("start_ms", "int"),
        ("end_ms", "int"),
        ("duration_ms", "int"),
        ("completed", "bool"),
        ("log_path", "str"),
        ("log_size_bytes", "int"),
        ("n_executions", "int"),
        ("n_failed_executions", "int"),
        ("n_stage_attempts", "int"),
        ("n_failed_stage_attempts", "int"),
        ("n_task_attempts", "int"),
        ("n_failed_task_attempts", "int"),
    ),
    "executions": (
        *_APP_KEY_COLUMNS,
        ("execution_id", "int"),
        ("root_execution_id", "int"),
        ("description", "str"),
        ("status", "str"),
        ("start_ms", "int"),
        ("end_ms", "int"),
        ("duration_ms", "int"),
        ("n_jobs", "int"),
        ("n_stages", "int"),
        ("n_plan_versions", "int"),
        ("n_nodes", "int"),
        ("error_message", "str"),
    ),
    "plan_node_metrics": (
        *_APP_KEY_COLUMNS,
        ("execution_id", "int"),
        ("node_id", "int"),
        ("node_name", "str"),
        ("is_cluster", "bool"),
        ("codegen_id", "int"),
        ("cluster_id", "int"),
        ("metric_name", "str"),
        ("metric_type", "str"),
        ("accumulator_id", "int"),
        ("spark_ui", "str"),
        ("total", "int"),
        ("min", "int"),
        ("p25", "int"),
        ("median", "int"),
        ("p75", "int"),
        ("p95", "int"),
        ("max", "int"),
        ("count", "int"),
        ("skew_ratio", "float"),
        ("skew_score_pct", "float"),
        ("max_stage_id", "int"),
        ("max_stage_attempt_id", "int"),
        ("max_task_id", "int"),
        ("max_partition_id", "int"),
        ("max_executor_id", "str"),
        ("max_host", "str"),
    ),
    "stages": (
        *_APP_KEY_COLUMNS,
        ("stage_id", "int"),
        ("stage_attempt_id", "int"),
        ("name", "str"),
        ("status", "str"),
        ("n_tasks", "int"),
        ("n_task_attempts", "int"),
        ("n_failed_task_attempts", "int"),
        ("submission_ms", "int"),
        ("completion_ms", "int"),
        ("duration_ms", "int"),
        ("failure_reason", "str"),
    ),
}

TABLE_NAMES: tuple[str, ...] = tuple(TABLE_SCHEMAS)

Row = tuple[Any, ...]
"""One row, its values in the order of the table's columns in `TABLE_SCHEMAS`."""

_POLARS_TYPES: dict[ColumnType, type[pl.DataType]] = {
    "int": pl.Int64,
    "float": pl.Float64,
    "str": pl.String,
    "bool": pl.Boolean,
}


class DocApplication(msgspec.Struct, frozen=True):
    """`application` of a JSON report."""

    id: str | None
    attempt_id: str | None
    name: str | None
    spark_version: str | None
    user: str | None
    start_ms: int | None
    end_ms: int | None
    completed: bool


class DocLog(msgspec.Struct, frozen=True):
    """`log` of a JSON report."""

    path: str
    size_bytes: int


class DocStage(msgspec.Struct, frozen=True):
    """One entry of `stages`."""

    stage_id: int
    attempt_id: int
    name: str | None
    status: str | None
    n_tasks: int | None
    n_task_attempts: int
    n_failed_attempts: int
    submission_ms: int | None
    completion_ms: int | None
    failure_reason: str | None


class DocSkew(msgspec.Struct, frozen=True):
    """`skew` of a metric."""

    ratio: float | None
    score_pct: float | None


class DocMaxAt(msgspec.Struct, frozen=True):
    """`max_at` of a metric: the task attempt that holds the maximum."""

    stage_id: int | None = None
    stage_attempt_id: int | None = None
    task_id: int | None = None
    partition_id: int | None = None
    executor_id: str | None = None
    host: str | None = None


class DocMetric(msgspec.Struct, frozen=True):
    """One metric of a plan node."""

    name: str
    type: str
    accumulator_id: int
    spark_ui: str | None
    total: int | None
    min: int | None
    p25: int | None
    median: int | None
    p75: int | None
    p95: int | None
    max: int | None
    count: int | None
    skew: DocSkew
    max_at: DocMaxAt | None


class DocNode(msgspec.Struct, frozen=True):
    """One node of an execution's final plan."""

    node_id: int
    name: str
    is_cluster: bool
    codegen_id: int | None
    cluster_id: int | None
    metrics: list[DocMetric]


class DocExecution(msgspec.Struct, frozen=True):
    """One entry of `executions`."""

    execution_id: int
    root_execution_id: int | None
    description: str | None
    status: str | None
    start_ms: int | None
    end_ms: int | None
    duration_ms: int | None
    job_ids: list[int]
    stage_ids: list[int]
    n_plan_versions: int
    nodes: list[DocNode]
    error_message: str | None
    shown_description: str | None = None
    """What the reports call it (a Spark Connect operation: what it ran); None in reports
    written before the key."""
    interrupted: bool = False
    """It was cut short on purpose (a streaming query's stop, a cancel): a FAILED status that is
    no failure, as the reports' verdict counts it; False in reports written before the key."""

    @property
    def failed(self) -> bool:
        """Whether it failed, as the report's verdict and the batch index count failures."""
        return self.status == "FAILED" and not self.interrupted

    @property
    def name(self) -> str | None:
        """What the execution is called: `shown_description`, else Spark's description."""
        return self.shown_description or self.description


class DocAdvice(msgspec.Struct, frozen=True):
    """One entry of a finding's `advice` (docs/findings.md#advice-with-numbers)."""

    setting: str
    value: str | None
    current: str
    kind: str
    arithmetic: str = ""
    predicted_ms: int | None = None
    measured_ms: int | None = None
    predicted_of: str = ""


class DocFinding(msgspec.Struct, frozen=True):
    """One entry of `findings` (the job history records them)."""

    rule: str
    severity: str
    title: str
    estimated_lost_ms: int | None = None
    advice: list[DocAdvice] = msgspec.field(default_factory=list)
    execution_id: int | None = None
    node_id: int | None = None
    stage_id: int | None = None
    stage_attempt_id: int | None = None


class DocPrice(msgspec.Struct, frozen=True):
    """`cost.price` of a JSON report."""

    currency: str


class DocEnvironment(msgspec.Struct, frozen=True):
    """`environment` of a JSON report: the Spark properties a later run's advice is checked
    against."""

    spark_properties: dict[str, str] = msgspec.field(default_factory=dict)


class DocCost(msgspec.Struct, frozen=True):
    """`cost` of a JSON report (docs/cost.md)."""

    core_hours_allocated: float
    core_hours_used: float
    idle_share: float | None
    memory_gib_hours: float
    price: DocPrice | None = None
    cost_allocated: float | None = None
    cost_idle: float | None = None


class ReportDoc(msgspec.Struct, frozen=True):
    """The fields of a JSON report (`report.json`) the fleet and history tables are built from."""

    application: DocApplication
    log: DocLog
    stages: list[DocStage]
    executions: list[DocExecution]
    findings: list[DocFinding] = msgspec.field(default_factory=list)
    cost: DocCost | None = None
    """None in a report written before costs were computed."""
    environment: DocEnvironment | None = None


class ReportDocError(ValueError):
    """A `report.json` that is not a JSON report of this analyzer (damaged or edited)."""


def parse_report(data: bytes) -> ReportDoc:
    """Read the fields the tables need from a JSON report; `ReportDocError` if they do not fit."""
    try:
        return msgspec.json.decode(data, type=ReportDoc)
    except msgspec.MsgspecError as error:
        raise ReportDocError(str(error)) from None


def _minus(end: int | None, start: int | None) -> int | None:
    return None if end is None or start is None else end - start


def fleet_rows(app_key: str, doc: ReportDoc) -> dict[str, list[Row]]:
    """Return the rows one application adds to each fleet table, from its JSON report.

    `app_key` is the application's report directory name under `OUTDIR/apps/`, unique in a
    batch output directory.
    """
    rows = head_rows(app_key, doc)
    key = row_key(app_key, doc.application)
    for ex in doc.executions:
        execution, metrics = execution_rows(key, ex)
        rows["executions"].append(execution)
        rows["plan_node_metrics"].extend(metrics)
    return rows


RowKey = tuple[str, str | None, str | None]
"""The first columns of every fleet table's row: app key, application id, attempt id."""


def recorded_id(text: str | None) -> str | None:
    """An application or attempt id as the fleet tables and the history record it: as it is, up
    to `MAX_ID_CHARS` characters; a longer one (no Spark writes one) cut, with a hash of the
    whole id so that different ids stay different. Every row of an application repeats its id,
    and a table column holds a copy of each row's value: an id of 10 MB made a batch of one log
    hold 1.7 GB.

    >>> recorded_id("app-20261122042339-0000")
    'app-20261122042339-0000'
    >>> len(recorded_id("a" * 5000))
    1000
    >>> recorded_id("a" * 5000) != recorded_id("a" * 5001)
    True
    """
    if text is None or len(text) <= MAX_ID_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_ID_HASH_CHARS]
    return f"{text[: MAX_ID_CHARS - _ID_HASH_CHARS - 2]}…~{digest}"


def row_key(app_key: str, app: DocApplication) -> RowKey:
    """The first columns of an application's rows."""
    return (app_key, recorded_id(app.id), recorded_id(app.attempt_id))


def head_rows(app_key: str, doc: ReportDoc) -> dict[str, list[Row]]:
    """An application's row and its stage attempts' rows (the other tables empty): what
    `fleet_rows` makes besides the executions' rows (`execution_rows`), which it needs only their
    number and statuses for."""
    app = doc.application
    key = row_key(app_key, app)
    stages = doc.stages
    executions = doc.executions
    rows: dict[str, list[Row]] = {name: [] for name in TABLE_NAMES}
    rows["applications"].append(
        (
            *key,
            app.name,
            app.spark_version,
            app.user,
            app.start_ms,
            app.end_ms,
            _minus(app.end_ms, app.start_ms),
            app.completed,
            doc.log.path,
            doc.log.size_bytes,
            len(executions),
            sum(1 for e in executions if e.failed),
            len(stages),
            sum(1 for s in stages if s.status == "FAILED"),
            sum(s.n_task_attempts for s in stages),
            sum(s.n_failed_attempts for s in stages),
        )
    )
    for s in stages:
        rows["stages"].append(
            (
                *key,
                s.stage_id,
                s.attempt_id,
                s.name,
                s.status,
                s.n_tasks,
                s.n_task_attempts,
                s.n_failed_attempts,
                s.submission_ms,
                s.completion_ms,
                _minus(s.completion_ms, s.submission_ms),
                s.failure_reason,
            )
        )
    return rows


def execution_rows(key: RowKey, ex: DocExecution) -> tuple[Row, list[Row]]:
    """An execution's row of the executions table, and its nodes' metrics' rows."""
    execution = (
        *key,
        ex.execution_id,
        ex.root_execution_id,
        ex.name,
        ex.status,
        ex.start_ms,
        ex.end_ms,
        ex.duration_ms,
        len(ex.job_ids),
        len(ex.stage_ids),
        ex.n_plan_versions,
        len(ex.nodes),
        ex.error_message,
    )
    metrics: list[Row] = []
    for node in ex.nodes:
        for m in node.metrics:
            at = m.max_at or DocMaxAt()
            metrics.append(
                (
                    *key,
                    ex.execution_id,
                    node.node_id,
                    node.name,
                    node.is_cluster,
                    node.codegen_id,
                    node.cluster_id,
                    m.name,
                    m.type,
                    m.accumulator_id,
                    m.spark_ui,
                    m.total,
                    m.min,
                    m.p25,
                    m.median,
                    m.p75,
                    m.p95,
                    m.max,
                    m.count,
                    m.skew.ratio,
                    m.skew.score_pct,
                    at.stage_id,
                    at.stage_attempt_id,
                    at.task_id,
                    at.partition_id,
                    at.executor_id,
                    at.host,
                )
            )
    return execution, metrics


NodeLists = dict[tuple[tuple[object, ...], ...], list[DocNode]]
"""Lists of nodes without metrics by their nodes' fields (see `without_metrics`)."""


def without_metrics(ex: DocExecution, shared: NodeLists | None = None) -> DocExecution:
    """An execution without its nodes' metrics: what the job history reads of it, once its rows
    are made (the metrics are most of a report's executions).

    With `shared`, executions whose nodes are equal less their metrics (every run of a repeated
    query, every micro-batch of a stream) hold one list of them: it is never changed.
    """
    if shared is None:
        return msgspec.structs.replace(
            ex, nodes=[msgspec.structs.replace(n, metrics=[]) for n in ex.nodes]
        )
    key = tuple([(n.node_id, n.name, n.is_cluster, n.codegen_id, n.cluster_id) for n in ex.nodes])
    nodes = shared.get(key)
    if nodes is None:
        nodes = shared[key] = [msgspec.structs.replace(n, metrics=[]) for n in ex.nodes]
    return msgspec.structs.replace(ex, nodes=nodes)


def polars_schema(table: str) -> dict[str, type[pl.DataType]]:
    """Return the polars schema of a fleet table."""
    return {name: _POLARS_TYPES[kind] for name, kind in TABLE_SCHEMAS[table]}


def fleet_frame(table: str, rows: Sequence[Row]) -> pl.DataFrame:
    """Return a fleet table's rows as a polars frame with its explicit schema."""
    return pl.DataFrame(list(rows), schema=polars_schema(table), orient="row")


class FleetFrames:
    """The fleet tables of a batch run, gathered an application at a time as polars frames.

    A row as a Python tuple takes about 900 bytes (a node metric's 28 fields), as a column
    entry a few times less, and a fleet is thousands of applications: each application's rows
    are made columns as soon as they are read, and only its frames are kept.
    """

    def __init__(self) -> None:
        self._parts: dict[str, list[pl.DataFrame]] = {name: [] for name in TABLE_NAMES}

    def add(self, rows: dict[str, list[Row]]) -> None:
        """Add one application's rows, by table."""
        for table, table_rows in rows.items():
            if table_rows:
                self._parts[table].append(fleet_frame(table, table_rows))

    def frames(self) -> dict[str, pl.DataFrame]:
        """Every table as one frame, in the order of `sort_columns`; the parts are let go."""
        out: dict[str, pl.DataFrame] = {}
        for table, parts in self._parts.items():
            whole = pl.concat(parts, rechunk=True) if parts else fleet_frame(table, [])
            parts.clear()
            out[table] = whole.sort(sort_columns(table))
        return out


def sort_columns(table: str) -> list[str]:
    """Return the columns that identify a row of `table`, to order rows the same on every engine."""
    keys = {
        "applications": ["app_key"],
        "executions": ["app_key", "execution_id"],
        "plan_node_metrics": ["app_key", "execution_id", "node_id", "accumulator_id"],
        "stages": ["app_key", "stage_id", "stage_attempt_id"],
    }
    return keys[table]
