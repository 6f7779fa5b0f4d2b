"""Hostile values inside well-formed events: settings, versions, ids and numbers a log holds as
text or at the edge of a Java long. Each is a real sample log with one value changed; every
report format must come out (the value read as unreadable, or written as it is), never a crash.

The JSON of each event is valid and typed as Spark writes it, so the decoder accepts it; the
values are read later, by the parsers of settings (`units.decimal_int` and its users), the
aggregation and the renderers.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from eventlog_samples import PUBLIC_CORPUS, SAMPLES
from hostile_inputs import run_cli
from oracle.locations import PUBLIC_EVENTLOGS

from analyzer import api
from analyzer.aggregate.capacity import local_threads
from analyzer.aggregate.cost import parse_memory_mib
from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log
from analyzer.insights._common import parse_bytes
from analyzer.insights.scheduler_delay import detect_scheduler_delay
from analyzer.insights.thresholds import Thresholds
from analyzer.report.options import ReportOptions
from analyzer.units import LONG_MAX, decimal_int, fmt_bytes, fmt_count, parse_seconds

SQL_LOG = "local-1795320224872"
"""Local mode, one SQL execution with a sort-merge join (plain text)."""
CLUSTER_LOG = "app-20261122042434-0000.zstd"
"""`local-cluster` with two executors, one of them lost."""
STREAM_LOG = "local-1795622263284.zstd"
"""A streaming query (its jobs carry the micro-batch properties)."""

HOSTILE_NUMBERS = {
    "superscript": "\u00b2",
    "circled": "\u2460",
    "5000-digits": "1" + "0" * 5000,
    "400-digits": "1" + "0" * 400,
    "past-a-long": "99999999999999999999999",
}
"""Texts that look like numbers to `str.isdigit` (or to `float`) but are none a setting holds."""

Event = dict[str, Any]
Edit = Callable[[list[Event]], None]


def _events(name: str) -> list[Event]:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return [orjson.loads(line.data) for line in iter_lines(resolve_log(str(path)), ReadStats())]


def _write(tmp_path: Path, events: list[Event]) -> Path:
    path = tmp_path / "eventlog"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def _of(events: list[Event], name: str) -> list[Event]:
    return [e for e in events if e["Event"].endswith(name)]


def _setting(key: str, value: str, **more: str) -> Edit:
    def edit(events: list[Event]) -> None:
        for e in _of(events, "SparkListenerEnvironmentUpdate"):
            e["Spark Properties"] = {**e["Spark Properties"], key: value, **more}

    return edit


def _all_reports(path: Path) -> None:
    analysis = api.analyze(str(path))
    findings = api.find_issues(analysis)
    for fmt in ("json", "text", "html", "markdown"):
        assert api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=0), findings)


SETTINGS = [
    "spark.executor.cores",
    "spark.task.cpus",
    "spark.driver.memory",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.executor.pyspark.memory",
    "spark.memory.offHeap.size",
    "spark.sql.adaptive.advisoryPartitionSizeInBytes",
    "spark.sql.files.maxPartitionBytes",
    "spark.sql.autoBroadcastJoinThreshold",
    "spark.sql.shuffle.partitions",
    "spark.shuffle.spill.numElementsForceSpillThreshold",
    "spark.dynamicAllocation.executorIdleTimeout",
    "spark.dynamicAllocation.maxExecutors",
]


def _on_a_cluster(events: list[Event]) -> None:
    """The cluster sample with dynamic allocation and off-heap memory on, and its executors
    removed before the end, so that every setting above is read."""
    _setting("spark.dynamicAllocation.enabled", "true", **{"spark.memory.offHeap.enabled": "true"})(
        events
    )
    end = _of(events, "SparkListenerApplicationEnd")[0]
    for added in _of(events, "SparkListenerExecutorAdded"):
        removed = {
            "Event": "SparkListenerExecutorRemoved",
            "Timestamp": end["Timestamp"] - 1,
            "Executor ID": added["Executor ID"],
            "Removed Reason": "idle",
        }
        events.insert(events.index(end), removed)


@pytest.mark.parametrize("number", list(HOSTILE_NUMBERS.values()), ids=list(HOSTILE_NUMBERS))
@pytest.mark.parametrize("key", SETTINGS)
@pytest.mark.parametrize("log", [SQL_LOG, CLUSTER_LOG], ids=["local", "cluster"])
def test_settings_that_are_no_numbers_are_unreadable_not_a_crash(
    tmp_path: Path, log: str, key: str, number: str
) -> None:
    events = _events(log)
    if log == CLUSTER_LOG:
        _on_a_cluster(events)
    _setting(key, number)(events)
    _all_reports(_write(tmp_path, events))


@pytest.mark.parametrize("value", ["inf", "-inf", "1e308", "nan"])
def test_task_cpus_beyond_an_int_on_spark_4(tmp_path: Path, value: str) -> None:
    # Spark 4 multiplies run times by spark.task.cpus, an int setting.
    events = _events(SQL_LOG)
    _setting("spark.task.cpus", value)(events)
    analysis = api.analyze(str(_write(tmp_path, events)))
    assert (analysis.application.spark_major or 0) >= 4
    _all_reports(_write(tmp_path, events))


@pytest.mark.parametrize("threads", ["\u00b2", "1" + "0" * 5000, "99999999999999999999999"])
def test_local_master_threads_that_are_no_number(tmp_path: Path, threads: str) -> None:
    events = _events(SQL_LOG)
    _setting("spark.master", f"local[{threads}]")(events)
    for e in _of(events, "SparkListenerExecutorAdded"):
        e["Executor Info"]["Total Cores"] = 0  # the slots then come from spark.master
    _all_reports(_write(tmp_path, events))


@pytest.mark.parametrize("version", ["\u00b2.0", "1" + "0" * 5000 + ".0"])
def test_spark_version_that_is_no_number(tmp_path: Path, version: str) -> None:
    events = _events(SQL_LOG)
    for e in _of(events, "SparkListenerLogStart"):
        e["Spark Version"] = version
    path = _write(tmp_path, events)
    assert api.analyze(str(path)).application.spark_major is None
    _all_reports(path)


def test_codegen_stage_id_of_thousands_of_digits(tmp_path: Path) -> None:
    events = _events(SQL_LOG)

    def rename(node: Event) -> None:
        if node["nodeName"].startswith("WholeStageCodegen"):
            node["nodeName"] = "WholeStageCodegen (" + "9" * 5000 + ")"
        for child in node["children"]:
            rename(child)

    for e in _of(events, "SparkListenerSQLExecutionStart"):
        rename(e["sparkPlanInfo"])
    _all_reports(_write(tmp_path, events))


def test_micro_batch_id_that_is_no_number(tmp_path: Path) -> None:
    events = _events(STREAM_LOG)
    changed = 0
    for e in _of(events, "SparkListenerJobStart"):
        if "streaming.sql.batchId" in e.get("Properties", {}):
            e["Properties"]["streaming.sql.batchId"] = "\u00b2"
            changed += 1
    assert changed
    _all_reports(_write(tmp_path, events))


FAILED_34_LOG = "spark-3.4/local-1795619588256.snappy"
"""Spark 3.4: a failed query whose error the log holds as JSON (`errorClass` LEGACY)."""
HOSTILE_ERRORS = {
    "nested": '{"errorClass": "X", "messageParameters": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "not-json": '{"errorClass": "X", "messageParameters": {',
    "class-no-text": '{"errorClass": 7, "messageParameters": {"message": "m"}}',
    "params-no-dict": '{"errorClass": "LEGACY", "messageParameters": ["a", "b"]}',
    "message-no-text": '{"errorClass": "LEGACY", "messageParameters": {"message": [1]}}',
    "template-unknown-params": (
        '{"errorClass": "X", "messageTemplate": "<a> <b> <' + "c" * 10_000 + '>", '
        '"messageParameters": {"a": "\u001b[2J\u202e", "b": {"deep": [1, 2]}}}'
    ),
    "huge-message": (
        '{"errorClass": "LEGACY", "messageParameters": {"message": "'
        + "boom\\n\\tat x" * 200_000
        + '"}}'
    ),
}
"""Execution errors in the JSON form Spark 3.4 logs, each broken or hostile in one way."""


@pytest.mark.parametrize("message", list(HOSTILE_ERRORS.values()), ids=list(HOSTILE_ERRORS))
def test_hostile_json_error_messages_are_text_not_a_crash(tmp_path: Path, message: str) -> None:
    events = _events(FAILED_34_LOG)
    ends = [e for e in _of(events, "SparkListenerSQLExecutionEnd") if e.get("errorMessage")]
    assert ends
    for e in ends:
        e["errorMessage"] = message
    _all_reports(_write(tmp_path, events))


def _long_max_sql_updates(events: list[Event]) -> None:
    for e in _of(events, "SparkListenerTaskEnd"):
        for acc in e["Task Info"]["Accumulables"]:
            if acc.get("Metadata") == "sql":
                acc["Update"] = acc["Value"] = str(LONG_MAX)


def _long_max_run_times(events: list[Event]) -> None:
    for e in _of(events, "SparkListenerTaskEnd"):
        e["Task Metrics"]["Executor Run Time"] = LONG_MAX


def _long_max_completions(events: list[Event]) -> None:
    for e in _of(events, "SparkListenerStageCompleted"):
        e["Stage Info"]["Completion Time"] = LONG_MAX


def _long_max_task_span(events: list[Event]) -> None:
    for e in _of(events, "SparkListenerTaskEnd"):
        e["Task Info"]["Launch Time"] = LONG_MAX
        e["Task Info"]["Finish Time"] = -LONG_MAX - 1


def _huge_driver_memory(events: list[Event]) -> None:
    _setting("spark.driver.memory", "9" * 19)(events)  # in MiB: past 8 bytes in bytes


LONG_EDGES = {
    "sql-metric-updates": _long_max_sql_updates,
    "executor-run-times": _long_max_run_times,
    "stage-completions": _long_max_completions,
    "task-launch-and-finish": _long_max_task_span,
    "driver-memory": _huge_driver_memory,
}


@pytest.mark.parametrize("edit", list(LONG_EDGES.values()), ids=list(LONG_EDGES))
def test_values_at_a_long_s_edges_add_up_without_a_crash(tmp_path: Path, edit: Edit) -> None:
    # Sums and products of such values pass 8 bytes: the JSON report writes them whole.
    events = _events(SQL_LOG)
    edit(events)
    _all_reports(_write(tmp_path, events))


def test_streaming_rows_that_add_up_past_a_long(tmp_path: Path) -> None:
    events = _events(STREAM_LOG)
    progress = [
        e for e in events if e["Event"].endswith("QueryProgressEvent") and e["progress"]["sources"]
    ]
    assert progress
    for e in progress:
        source = e["progress"]["sources"][0]
        e["progress"]["sources"] = [dict(source, numInputRows=LONG_MAX) for _ in range(3)]
    path = _write(tmp_path, events)
    _all_reports(path)
    doc = orjson.loads(api.render_report(api.analyze(str(path)), ReportOptions(fmt="json")))
    totals = [q for q in doc["streaming"]["queries"]]
    assert totals


def test_the_cli_writes_a_report_of_a_hostile_setting(tmp_path: Path) -> None:
    events = _events(CLUSTER_LOG)
    _setting("spark.executor.memory", "\u00b2g", **{"spark.task.cpus": "1" + "0" * 5000})(events)
    log = _write(tmp_path, events)
    for out in ("out.json", "out.html", None):
        args = ["report", str(log)] + (["-o", str(tmp_path / out)] if out else [])
        run = run_cli(args)
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("\u00b2", 7.0), ("\u00b2s", 7.0), ("1" + "0" * 400 + "s", 7.0), ("45", 45.0)],
)
def test_parse_seconds_of_hostile_text(text: str, seconds: float) -> None:
    assert parse_seconds(text, 7) == seconds


def test_setting_parsers_refuse_what_is_no_long() -> None:
    for text in HOSTILE_NUMBERS.values():
        assert decimal_int(text) is None
        assert parse_memory_mib(text) is None
        assert parse_bytes(text, 7) == 7
        assert local_threads(f"local[{text}]") is None
    assert decimal_int(str(LONG_MAX)) == LONG_MAX
    assert decimal_int(str(LONG_MAX + 1)) is None


def test_formatting_numbers_past_a_double() -> None:
    assert fmt_bytes(10**400) == fmt_count(10**400) == "–"


def test_a_stage_whose_task_ends_are_lost_is_not_a_driver_stall(tmp_path: Path) -> None:
    # The public pandas log with 195 of stage 2's 200 task ends removed: the stage completed,
    # but its wall can no longer be taken apart. Before, scheduler-delay called it a 5.2 s
    # driver stall; now the header says what is missing and no stall is claimed.
    source = PUBLIC_CORPUS / "pandas_execs_eventlog.zstd"
    lines = []
    kept = 0
    with zstandard.ZstdDecompressor().stream_reader(source.open("rb")) as raw:
        events = io.TextIOWrapper(raw, encoding="utf-8").read().splitlines()
    for text in events:
        if '"SparkListenerTaskEnd"' in text and '"Stage ID":2,' in text:
            kept += 1
            if kept > 5:
                continue
        lines.append(text)
    log = tmp_path / "lost_task_ends.json"
    log.write_text("\n".join(lines) + "\n")
    analysis = api.analyze(str(log))
    loose = Thresholds().with_overrides(["min_query_share=0", "min_lost_ms=0"])
    assert detect_scheduler_delay(analysis, loose) == []
    text = api.render_report(analysis, ReportOptions())
    assert "1 completed stage attempt with most task ends missing from the log (2.0)" in text


def test_hostile_gpu_settings_and_frames_in_the_failure_advice_are_bounded(
    tmp_path: Path,
) -> None:
    # The GPU out-of-memory advice quotes the run's settings and the failing task's frame, both
    # from the log: a setting is shown on one line, at most 40 characters, and a frame that is
    # no Java frame is not quoted; the text report shows no raw control character.
    path = PUBLIC_EVENTLOGS / "gpu_oom_eventlog.zstd"
    if not path.exists():
        pytest.skip(f"{path} not present")
    events = [orjson.loads(line.data) for line in iter_lines(resolve_log(str(path)), ReadStats())]
    hostile = "\u001b[2J\n" + "9" * 100_000 + "gb"
    _setting(
        "spark.sql.files.maxPartitionBytes",
        hostile,
        **{"spark.rapids.memory.gpu.maxAllocFraction": "\u202e0.15"},
    )(events)
    for e in _of(events, "SparkListenerJobEnd"):
        result = e.get("Job Result", {})
        if "Exception" in result:
            message = result["Exception"].get("Message", "")
            result["Exception"]["Message"] = message.replace(
                "\tat com.nvidia",
                "\tat \u001b]8;;x\u0007" + "a" * 10_000 + "(x)\n\tat com.nvidia",
                1,
            )
    log = _write(tmp_path, events)
    analysis = api.analyze(str(log))
    (failed,) = [f for f in api.find_issues(analysis) if f.rule == "failed-query"]
    assert "spark.sql.files.maxPartitionBytes (" in failed.suggestion
    quoted = failed.suggestion.split("spark.sql.files.maxPartitionBytes (", 1)[1].split(
        " in this run"
    )[0]
    assert len(quoted) <= 40 and "\n" not in quoted
    text = api.render_report(analysis, ReportOptions(fmt="text", now_ms=0))
    assert "\u001b" not in text and "\u0007" not in text
    _all_reports(log)
