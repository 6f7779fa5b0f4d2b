"""Spark Connect: what a Connect server's log says of the queries its clients sent.

The sample `sea-connect` is a real Spark Connect server (PySpark 4.3) driven by a Python client:
a DataFrame join, one SQL text run four times and another once, a query that raises, a long
query the client interrupts (`interruptAll`), and a parquet write read back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import zstandard
from eventlog_samples import sample
from reports import analysis_of, render, text_report

from analyzer import api
from analyzer.batch.fleet import DocExecution, DocFinding
from analyzer.batch.history import finding_key
from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log
from analyzer.insights import detect_all
from analyzer.insights.thresholds import Thresholds
from analyzer.model.connect import MAX_LABEL_CHARS, connect_label

CONNECT_LOG = "local-1795803803322.zstd"
PREFIX = 'Spark Connect - session_id: "s"\nplan {\n  root'


def _connect() -> Path:
    return sample(CONNECT_LOG)


def _events() -> list[dict[str, Any]]:
    lines = iter_lines(resolve_log(str(_connect())), ReadStats())
    return [orjson.loads(line.data) for line in lines]


def _write(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / "connect.zstd"
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    return path


def test_a_cancelled_operation_is_not_a_failure() -> None:
    analysis = analysis_of(_connect())
    app = analysis.application
    failed = [e for e in app.executions if e.status == "FAILED"]
    assert len(failed) == 2  # as Spark's SQL tab says: the raised error and the interrupted one
    assert len(app.cancelled_connect_execution_ids) == 1
    (cancelled,) = app.cancelled_connect_execution_ids
    assert cancelled in {e.execution_id for e in failed}
    findings = [f for f in detect_all(analysis, Thresholds()) if f.rule == "failed-query"]
    assert [f.execution_id for f in findings] == [
        e.execution_id for e in failed if e.execution_id != cancelled
    ]
    assert "boom" in findings[0].title
    text = text_report(analysis)
    assert "1 of " in text.splitlines()[2]
    assert "1 SQL execution cancelled by the Spark Connect client" in text
    assert "InterruptedException" not in text.split("Findings")[1].split("═" * 20)[0]


def test_queries_are_named_by_what_they_ran() -> None:
    analysis = analysis_of(_connect())
    shown = [e.shown_description for e in analysis.application.executions]
    assert all(s.startswith("Spark Connect: ") for s in shown), shown
    assert any("join → aggregate → sort" in s for s in shown), shown
    assert any(s.startswith("Spark Connect: SQL select") for s in shown), shown
    assert any("write parquet" in s for s in shown), shown
    assert any(s.startswith("Spark Connect: read parquet") for s in shown), shown
    # Spark's own description is kept as logged (the JSON report and the History Server's).
    assert all(
        e.description.startswith("Spark Connect - ") for e in analysis.application.executions
    )
    text = text_report(analysis)
    assert "description: Spark Connect: " in text
    assert "session_id" not in text.split("Stages")[0].split("Where the time went")[1]


def test_the_repeated_sql_text_is_one_family() -> None:
    analysis = analysis_of(_connect())
    families = analysis.query_families
    assert len(families) == 1
    (family,) = families
    assert len(family.execution_ids) == 4
    assert family.description.startswith("Spark Connect: SQL select")


def test_labels_read_every_request_shape() -> None:
    sql = PREFIX + ' {\n    sql {\n      query: "select \\"a\\\\b\\" \\303\\251"\n    }\n  }\n}'
    assert connect_label(PREFIX, sql) == 'Spark Connect: SQL select "a\\b" é'
    table = (
        "plan {\n  root {\n    common {\n    }\n    filter {\n      input {\n        read {\n"
        '          named_table {\n            unparsed_identifier: "db.orders"\n          }\n'
        "        }\n      }\n    }\n  }\n}"
    )
    assert connect_label(PREFIX, table) == "Spark Connect: read db.orders → filter"
    view = 'plan {\n  command {\n    create_dataframe_view {\n      name: "v"\n    }\n  }\n}'
    assert connect_label(PREFIX, view) == "Spark Connect: create view v"
    assert connect_label(PREFIX, "") == "Spark Connect: a request"
    assert connect_label("count at job.py:3", table) is None


def test_hostile_request_text_is_bounded() -> None:
    """A request's text is the client's: unclosed, deep, huge, with controls and bad escapes."""
    deep = "plan {\n  root {\n" + "project {\n  input {\n" * 50_000 + "range {\n"
    label = connect_label(PREFIX, deep)
    assert label is not None and len(label) <= MAX_LABEL_CHARS
    assert "…" in label
    odd = 'plan {\n root {\n  sql {\n   query: "\\x1b[31m\\777\\q' + "x" * 100_000 + '"\n}}}\n'
    label = connect_label(PREFIX, odd)
    assert label is not None and len(label) <= MAX_LABEL_CHARS
    assert connect_label(PREFIX, "}\n}\n}\nplan {") == "Spark Connect: a request"
    huge = "plan {\n root {\n  range {\n" + "x\n" * 5_000_000  # read up to its bound only
    assert connect_label(PREFIX, huge) == "Spark Connect: range"


def test_odd_job_tags_and_cancel_events(tmp_path: Path) -> None:
    """`jobTags` not a list of strings, and cancel events with odd tags: the tags are not read,
    every execution stays, and the reports come out."""
    events = _events()
    for event in events:
        name = event["Event"]
        if name.endswith("SQLExecutionStart"):
            event["jobTags"] = {"not": "a list"} if event["executionId"] % 2 else [1, None, "x"]
        if name.endswith("ConnectOperationCanceled"):
            events.append({"Event": name, "jobTag": 7})
            events.append({"Event": name, "jobTag": "SparkConnect_OperationTag_" + "x" * 100})
            break
    analysis = api.analyze(str(_write(tmp_path, events)))
    assert analysis.application.cancelled_connect_execution_ids == ()
    n_executions = len(analysis_of(_connect()).application.executions)
    assert len(analysis.application.executions) == n_executions
    for fmt in ("text", "json", "html", "markdown"):
        assert render(analysis, fmt)


def test_cancel_event_without_a_matching_execution(tmp_path: Path) -> None:
    """A cancel whose tag no execution carries (an operation cancelled before it ran a query)
    changes nothing."""
    events = [e for e in _events() if not e["Event"].endswith("ConnectOperationCanceled")]
    analysis = api.analyze(str(_write(tmp_path, events)))
    assert analysis.application.cancelled_connect_execution_ids == ()
    assert "2 of " in text_report(analysis).splitlines()[2]


def test_the_json_report_says_what_each_execution_ran() -> None:
    analysis = analysis_of(_connect())
    document = orjson.loads(render(analysis, "json"))
    executions = document["executions"]
    cancelled = set(analysis.application.cancelled_connect_execution_ids)
    assert {e["execution_id"] for e in executions if e["interrupted"]} == cancelled
    for entry in executions:
        assert entry["description"].startswith("Spark Connect - ")
        assert entry["shown_description"].startswith("Spark Connect: ")


def test_batch_history_names_a_connect_query_by_what_it_ran() -> None:
    """Two runs of a Connect job have other session ids: the history pairs their findings by
    what the query ran, and reads reports written before `shown_description` as before."""
    fields: dict[str, Any] = {
        "execution_id": 3,
        "root_execution_id": 3,
        "status": "FAILED",
        "start_ms": 0,
        "end_ms": 1,
        "duration_ms": 1,
        "job_ids": [],
        "stage_ids": [],
        "n_plan_versions": 1,
        "nodes": [],
        "error_message": None,
    }
    finding = DocFinding("failed-query", "critical", "t")
    keys = {
        finding_key(
            finding,
            DocExecution(
                description=f'Spark Connect - session_id: "{session}"\nplan {{',
                shown_description="Spark Connect: SQL select 1",
                **fields,
            ),
            None,
        )
        for session in ("a1", "b2")
    }
    assert keys == {"failed-query | Spark Connect: SQL select 1 | -"}
    old = DocExecution(description="nightly load", **fields)
    assert finding_key(finding, old, None) == "failed-query | nightly load | -"


def test_a_poisoned_request_text_is_escaped_in_every_report(tmp_path: Path) -> None:
    """The request's SQL text is the client's: control sequences in it (escaped in the
    protobuf text, raw once decoded) reach no terminal, and a huge one stays bounded."""
    events = _events()
    poison = "select \\033[2J\\033]0;pwned\\007 " + "x" * 50_000
    for event in events:
        if event["Event"].endswith("SQLExecutionStart") and "query:" in event["details"]:
            head, _, tail = event["details"].partition('query: "')
            event["details"] = head + 'query: "' + poison + tail[tail.index('"') :]
    analysis = api.analyze(str(_write(tmp_path, events)))
    labels = [e.shown_description for e in analysis.application.executions]
    assert any("\x1b" in label for label in labels)  # decoded as the client sent it
    assert all(len(label) <= MAX_LABEL_CHARS for label in labels)
    text = text_report(analysis)
    assert "\x1b" not in text and "\x07" not in text
    markdown = render(analysis, "markdown")
    assert "\x1b" not in markdown and "\x07" not in markdown
    html = render(analysis, "html")
    assert "\x1b" not in html and "\x07" not in html
