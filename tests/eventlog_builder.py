"""Tiny event logs for the tests that need one bad or hostile input, built event by event.

The suite reads real logs written by PySpark (sample_eventlogs/) and public real logs; a log made
by hand is only for a case no real run writes (a hostile name, a secret in the configuration, a
stage declaring billions of tasks). These builders write such events in the shape Spark's
`JsonProtocol` gives them (the keys, and compact JSON lines in UTF-8), so a test states only what
its case changes:

>>> lines = log_bytes(tiny_application("local-1")).splitlines()
>>> lines[0]
b'{"Event":"SparkListenerLogStart","Spark Version":"3.5.1"}'
>>> [orjson.loads(line)["Event"] for line in lines[1:]]
['SparkListenerApplicationStart', 'SparkListenerApplicationEnd']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson
import zstandard

Event = dict[str, Any]
"""One event as Spark logs it: a JSON object with its class name under "Event"."""

SQL_EVENTS = "org.apache.spark.sql.execution.ui."
"""The package of the SQL listener's events, part of their "Event" name."""
STREAMING_EVENTS = "org.apache.spark.sql.streaming.StreamingQueryListener$"
"""The prefix of Structured Streaming's query events."""

START_MS = 1_700_000_000_001
"""When the built applications start (epoch ms)."""
END_MS = 1_700_000_009_001
"""When the built applications end (epoch ms)."""


def log_start(spark_version: str = "3.5.1") -> Event:
    """The first event of every log."""
    return {"Event": "SparkListenerLogStart", "Spark Version": spark_version}


def application_start(
    app_id: str | None = "local-1700000000000",
    name: str = "app",
    timestamp_ms: int = START_MS,
    user: str = "u",
    **more: Any,
) -> Event:
    """The application's start; `more` adds keys as logged (`**{"App Attempt ID": "1"}`)."""
    event: Event = {"Event": "SparkListenerApplicationStart", "App Name": name}
    if app_id is not None:
        event["App ID"] = app_id
    return {**event, "Timestamp": timestamp_ms, "User": user, **more}


def application_end(timestamp_ms: int = END_MS) -> Event:
    """The application's end."""
    return {"Event": "SparkListenerApplicationEnd", "Timestamp": timestamp_ms}


def environment_update(
    spark_properties: dict[str, str],
    system_properties: dict[str, str] | None = None,
    java_version: str = "17.0.9",
) -> Event:
    """The driver's configuration and JVM, as `SparkListenerEnvironmentUpdate` logs them."""
    return {
        "Event": "SparkListenerEnvironmentUpdate",
        "JVM Information": {"Java Version": java_version},
        "Spark Properties": spark_properties,
        "System Properties": system_properties or {"java.version": java_version},
    }


def stage_info(stage_id: int, n_tasks: int, attempt_id: int = 0, name: str = "s") -> Event:
    """A `Stage Info` object, as job starts and stage events carry it."""
    return {
        "Stage ID": stage_id,
        "Stage Attempt ID": attempt_id,
        "Stage Name": name,
        "Number of Tasks": n_tasks,
        "RDD Info": [],
        "Parent IDs": [],
        "Details": "",
        "Accumulables": [],
    }


def job_start(
    job_id: int,
    submission_ms: int,
    stages: Sequence[Event] = (),
    properties: dict[str, str] | None = None,
) -> Event:
    """A job's start with its stages (`stage_info`) and properties (`spark.sql.execution.id`,
    `spark.job.description` ...)."""
    return {
        "Event": "SparkListenerJobStart",
        "Job ID": job_id,
        "Submission Time": submission_ms,
        "Stage Infos": list(stages),
        "Stage IDs": [s["Stage ID"] for s in stages],
        "Properties": properties or {},
    }


def stage_submitted(stage: Event) -> Event:
    """A stage attempt's submission (`stage_info`)."""
    return {"Event": "SparkListenerStageSubmitted", "Stage Info": stage}


def sql_metric(name: str, accumulator_id: int, metric_type: str = "sum") -> Event:
    """One metric a plan node declares."""
    return {"name": name, "accumulatorId": accumulator_id, "metricType": metric_type}


def plan_node(
    name: str,
    simple_string: str | None = None,
    children: Sequence[Event] = (),
    metrics: Sequence[Event] = (),
) -> Event:
    """A node of `sparkPlanInfo`: the operator, its children and its metrics (`sql_metric`)."""
    return {
        "nodeName": name,
        "simpleString": name if simple_string is None else simple_string,
        "children": list(children),
        "metadata": {},
        "metrics": list(metrics),
    }


def sql_execution_start(
    execution_id: int, plan: Event, time_ms: int, description: str = "q", **more: Any
) -> Event:
    """A SQL execution's start with its plan (`plan_node`); `more` adds keys as logged
    (`modifiedConfigs`, `physicalPlanDescription`)."""
    return {
        "Event": SQL_EVENTS + "SparkListenerSQLExecutionStart",
        "executionId": execution_id,
        "description": description,
        "details": "",
        "physicalPlanDescription": "",
        "sparkPlanInfo": plan,
        "time": time_ms,
        **more,
    }


def driver_accum_updates(execution_id: int, updates: Iterable[tuple[int, int]]) -> Event:
    """Metric values the driver posts for an execution: (accumulator id, value) pairs."""
    return {
        "Event": SQL_EVENTS + "SparkListenerDriverAccumUpdates",
        "executionId": execution_id,
        "accumUpdates": [list(pair) for pair in updates],
    }


def sql_execution_end(execution_id: int, time_ms: int) -> Event:
    """A SQL execution's end."""
    return {
        "Event": SQL_EVENTS + "SparkListenerSQLExecutionEnd",
        "executionId": execution_id,
        "time": time_ms,
    }


def accumulable(accumulator_id: int, name: str, update: int, value: int) -> Event:
    """One SQL metric update a task reports (`Task Info` → `Accumulables`)."""
    return {
        "ID": accumulator_id,
        "Name": name,
        "Update": str(update),
        "Value": str(value),
        "Internal": True,
        "Count Failed Values": True,
        "Metadata": "sql",
    }


def task_end(
    stage_id: int,
    task_id: int,
    index: int,
    launch_ms: int,
    finish_ms: int,
    accumulables: Sequence[Event] = (),
    executor_id: str = "driver",
    host: str = "h",
) -> Event:
    """A successful result task's end with its metric updates (`accumulable`)."""
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage_id,
        "Stage Attempt ID": 0,
        "Task Type": "ResultTask",
        "Task End Reason": {"Reason": "Success"},
        "Task Info": {
            "Task ID": task_id,
            "Index": index,
            "Attempt": 0,
            "Launch Time": launch_ms,
            "Executor ID": executor_id,
            "Host": host,
            "Locality": "PROCESS_LOCAL",
            "Speculative": False,
            "Getting Result Time": 0,
            "Finish Time": finish_ms,
            "Failed": False,
            "Killed": False,
            "Accumulables": list(accumulables),
        },
    }


def query_terminated(query_id: str, run_id: str, exception: str | None = None) -> Event:
    """A streaming query run's end; with `exception`, a failed one."""
    return {
        "Event": STREAMING_EVENTS + "QueryTerminatedEvent",
        "id": query_id,
        "runId": run_id,
        "exception": exception,
    }


def event_line(event: Event) -> bytes:
    """One event as a log line: compact JSON, UTF-8, with its newline."""
    return orjson.dumps(event) + b"\n"


def log_bytes(events: Iterable[Event]) -> bytes:
    """The text of a plain log holding `events`."""
    return b"".join(event_line(e) for e in events)


def tiny_application(
    app_id: str | None, name: str = "tiny", middle: Iterable[Event] = ()
) -> list[Event]:
    """A whole application: log start, application start, `middle`, application end."""
    return [log_start(), application_start(app_id, name), *middle, application_end()]


def write_log(path: Path, events: Iterable[Event], zstd: bool = False) -> Path:
    """Write a log holding `events` to `path`, plain or as one zstd frame, and return the path."""
    data = log_bytes(events)
    path.write_bytes(zstandard.ZstdCompressor(level=1).compress(data) if zstd else data)
    return path
