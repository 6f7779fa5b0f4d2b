"""Structured Streaming: query runs replayed from real logs, tied to their executions, reported.

The sample script writes streaming applications (`stream-*`) and what a report must say of each
query into `sample_eventlogs/.manifest.json` (`expect_streaming`: name, status, the rule that
leads its findings or none, the exception of a failed one). The public Spark 3.1 log
`local-1596020211915` is a Kafka-to-console query on the default trigger.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from eventlog_builder import query_terminated
from eventlog_samples import SAMPLES, needs_public, public, version_dirs
from markdown_it import MarkdownIt

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log
from analyzer.insights import Finding, Thresholds
from analyzer.insights.python_udf import detect_python_udf
from analyzer.report.findings import build_findings_view
from analyzer.report.header import build_header_view
from analyzer.report.options import ReportOptions
from analyzer.report.verdict import build_verdict

PROGRESS = "StreamingQueryListener$QueryProgressEvent"
IDLE = "StreamingQueryListener$QueryIdleEvent"


def _manifest(directory: Path = SAMPLES) -> list[dict[str, Any]]:
    """The streaming samples of one directory's manifest, each with its `file` made relative to
    the top samples directory (`spark-3.5/local-…` for an older version's)."""
    path = directory / ".manifest.json"
    if not path.is_file():
        return []
    prefix = "" if directory == SAMPLES else f"{directory.name}/"
    return [
        dict(e, file=prefix + e["file"])
        for e in json.loads(path.read_text())["logs"]
        if e.get("expect_streaming")
    ]


def _entries() -> list[Any]:
    """The streaming samples written by Spark 4.3 and by older versions."""
    entries = _manifest() + [e for d in version_dirs() for e in _manifest(d)]
    found = [pytest.param(e, id=f"{e['app_name']}-{e['spark_version']}") for e in entries]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no streaming samples"))]


def _entry(workload: str) -> dict[str, Any]:
    for entry in _manifest():
        if entry["workload"] == workload:
            return entry
    pytest.skip(f"no sample of workload {workload}")


@cache
def _analyzed(file: str) -> tuple[Analysis, tuple[Finding, ...]]:
    analysis = api.analyze(SAMPLES / file)
    return analysis, tuple(api.find_issues(analysis))


def _events(path: str) -> list[dict[str, Any]]:
    """Every event of a log, read with plain json."""
    return [json.loads(line.data) for line in iter_lines(resolve_log(path), ReadStats())]


def _progress_events(path: str) -> list[dict[str, Any]]:
    """The progress of every QueryProgressEvent of a batch that ran (`addBatch`: Spark times
    every batch's sink write) in a log, read with plain json."""
    return [
        event["progress"]
        for event in _events(path)
        if str(event.get("Event", "")).endswith(PROGRESS)
        and "addBatch" in event["progress"]["durationMs"]
    ]


def _idle_reports_ms(path: str, run_id: str) -> list[int]:
    """When each report of a trigger that found no new data was made, in epoch ms: a
    QueryIdleEvent (Spark 3.5+), or before 3.5 a progress of no batch (its trigger's end)."""
    found = []
    for event in _events(path):
        name = str(event.get("Event", ""))
        if name.endswith(IDLE) and event["runId"] == run_id:
            found.append(_epoch_ms(event["timestamp"]))
        elif name.endswith(PROGRESS) and event["progress"]["runId"] == run_id:
            progress = event["progress"]
            if "addBatch" not in progress["durationMs"]:
                trigger_ms = progress["durationMs"]["triggerExecution"]
                found.append(_epoch_ms(progress["timestamp"]) + trigger_ms)
    return found


def _epoch_ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _verdict(analysis: Analysis, findings: tuple[Finding, ...]) -> Any:
    header = build_header_view(analysis, None)
    ids = {e.execution_id for e in analysis.application.executions}
    views = build_findings_view(analysis.application, findings, frozenset(ids), Thresholds()).items
    return build_verdict(analysis, header, findings, views, ids)


@pytest.mark.parametrize("entry", _entries())
def test_each_query_is_named_and_its_batches_counted_exactly(entry: dict[str, Any]) -> None:
    analysis, _ = _analyzed(entry["file"])
    progress = _progress_events(str(SAMPLES / entry["file"]))
    by_name = {q.name: q for q in analysis.application.streaming}
    assert set(by_name) == {label["query"] for label in entry["expect_streaming"]}
    for label in entry["expect_streaming"]:
        query = by_name[label["query"]]
        logged = [p for p in progress if p["name"] == label["query"]]
        assert [b.batch_id for b in query.batches] == [p["batchId"] for p in logged]
        assert [b.trigger_execution_ms for b in query.batches] == [
            p["durationMs"]["triggerExecution"] for p in logged
        ]
        assert query.status == label["status"]
        if label.get("message"):
            assert label["message"] in (query.exception or "")
        # Every finished batch ran at least one SQL execution, and none is tied twice.
        ids = [e for b in query.batches for e in b.execution_ids]
        assert all(b.execution_ids for b in query.batches)
        assert len(ids) == len(set(ids))


@pytest.mark.parametrize("entry", _entries())
def test_json_batches_carry_the_progress_events_figures(entry: dict[str, Any]) -> None:
    analysis, findings = _analyzed(entry["file"])
    text = api.render_report(analysis, ReportOptions(fmt="json"), findings)
    document = json.loads(text)
    progress = _progress_events(str(SAMPLES / entry["file"]))
    for query in document["streaming"]["queries"]:
        logged = [p for p in progress if p["runId"] == query["run_id"]]
        assert query["n_batches"] == len(logged) == len(query["batches"])
        for batch, p in zip(query["batches"], logged, strict=True):
            assert batch["batch_id"] == p["batchId"]
            assert batch["trigger_execution_ms"] == p["durationMs"]["triggerExecution"]
            assert batch["input_rows"] == sum(s["numInputRows"] for s in p["sources"])
        assert {"name", "id", "run_id", "status", "trigger_interval_ms"} <= set(query)


@pytest.mark.parametrize("entry", _entries())
def test_the_labelled_rule_leads_and_a_query_that_keeps_up_raises_no_warning(
    entry: dict[str, Any],
) -> None:
    analysis, findings = _analyzed(entry["file"])
    for label in entry["expect_streaming"]:
        query = next(q for q in analysis.application.streaming if q.name == label["query"])
        own = [f for f in findings if f.execution_id in _executions_of(analysis, query.run_id)]
        if label["rule"]:
            assert own, f"no finding on {label['query']}"
            assert own[0].rule == label["rule"], [f.rule for f in own]
            if label["rule"] == "streaming-falling-behind":  # it leads the whole report
                assert findings[0].rule == label["rule"], [f.rule for f in findings]
        elif label["status"] == "stopped":
            warnings = [f for f in own if f.severity != "info"]
            assert not warnings, [(f.rule, f.title) for f in warnings]


def _executions_of(analysis: Analysis, run_id: str) -> set[int]:
    fig = next(f for f in analysis.streaming if f.query.run_id == run_id)
    return set(fig.execution_ids)


def test_falling_behind_leads_the_report_and_is_dated() -> None:
    entry = _entry("stream-falls-behind")
    analysis, findings = _analyzed(entry["file"])
    assert findings[0].rule == "streaming-falling-behind"
    fig = analysis.streaming[0]
    assert fig.trigger_interval_ms in (2_000, 3_000, 5_000, 10_000, 20_000, 30_000)
    first_late = findings[0].number("first_late_batch_id")
    assert first_late == fig.first_late_batch_id
    interval = fig.trigger_interval_ms
    late = [b.batch_id for b in fig.query.batches[1:] if (b.trigger_execution_ms or 0) > interval]
    assert late[0] == first_late and findings[0].number("n_late_batches") == len(late)
    # Its batches run late back to back: some take in more rows than they process, others
    # fewer, and on the whole it processes what arrives, so no backlog is claimed.
    assert fig.n_outpaced_batches >= 3
    assert (fig.mean_input_rows_per_s or 0) <= (fig.mean_processed_rows_per_s or 0)
    assert not any(f.rule == "streaming-input-outpaces-processing" for f in findings)


def test_keeping_up_has_its_trigger_inferred_and_no_late_batch() -> None:
    entry = _entry("stream-keeps-up")
    analysis, findings = _analyzed(entry["file"])
    fig = analysis.streaming[0]
    assert fig.trigger_interval_ms == 2_000
    assert fig.n_late_batches == 0
    assert not [f for f in findings if f.severity != "info"]


def test_per_batch_findings_are_merged_with_a_count_and_the_sum_of_their_cost() -> None:
    entry = _entry("stream-falls-behind")
    analysis, findings = _analyzed(entry["file"])
    fig = analysis.streaming[0]
    ours = set(fig.execution_ids)
    per_batch = [f for f in detect_python_udf(analysis, Thresholds()) if f.execution_id in ours]
    merged = [f for f in findings if f.rule == "python-udf"]
    if len(per_batch) < 2:
        pytest.skip("the Python UDF was flagged in fewer than two batches of this run")
    assert len(merged) == 1
    assert merged[0].number("n_batches_with_finding") == len(per_batch)
    summed = sum(f.estimated_lost_ms for f in per_batch)
    # The sum of the batches' costs, at most the time the query ran past its trigger.
    assert merged[0].estimated_lost_ms == min(summed, fig.late_ms)
    # Its other figures are the costliest batch's, and it says which batch that is.
    costliest = max(per_batch, key=lambda f: f.estimated_lost_ms)
    batch = next(b.batch_id for b in fig.query.batches if costliest.execution_id in b.execution_ids)
    assert merged[0].execution_id == costliest.execution_id
    assert f"figures of the costliest, batch {batch})" in merged[0].title
    shown = next(e.value for e in merged[0].evidence if e.key == "shown_batch")
    assert shown == f"batch {batch} (SQL execution {costliest.execution_id}), the costliest"


def test_a_stopped_query_is_not_a_failure_and_a_failed_one_is() -> None:
    for workload in ("stream-keeps-up", "stream-falls-behind", "stream-stateful"):
        analysis, findings = _analyzed(_entry(workload)["file"])
        verdict = _verdict(analysis, findings)
        assert verdict.status == "completed", (workload, verdict.summary_str)
        assert "stopped" in verdict.summary_str
        assert not [f for f in findings if f.rule == "failed-query"]
    entry = _entry("stream-fails")
    analysis, findings = _analyzed(entry["file"])
    verdict = _verdict(analysis, findings)
    assert verdict.status == "failed"
    assert "streaming query order_checks failed" in verdict.summary_str
    message = entry["expect_streaming"][0]["message"]
    assert message in verdict.root_cause_str
    # The batch's query failed because the write inside it did: one failure, one finding, on
    # the sub-execution whose tasks failed, naming the query it ran inside.
    failed = [f for f in findings if f.rule == "failed-query"]
    assert len(failed) == 1
    inside = failed[0].number("failed_root")
    assert failed[0].execution_id in analysis.application.sub_executions[inside]
    assert f"(inside query {inside}, which failed with it)" in failed[0].title
    assert failed[0].number("n_failed_tasks") > 0
    assert verdict.root_cause_execution == f"exec-{failed[0].execution_id}"


def test_state_without_watermark_grows_and_with_one_does_not() -> None:
    entry = _entry("stream-stateful")
    analysis, findings = _analyzed(entry["file"])
    figures = {f.query.name: f for f in analysis.streaming}
    unbounded, bounded = figures["clicks_unbounded"], figures["clicks_watermarked"]
    assert not unbounded.has_watermark and bounded.has_watermark
    assert (unbounded.state_rows_last or 0) > (bounded.state_rows_last or 0)
    growth = [f for f in findings if f.rule == "streaming-state-growth"]
    assert [f.number("n_batches") for f in growth] == [unbounded.n_batches]
    assert "clicks_unbounded" in growth[0].title


@needs_public
def test_public_spark_31_kafka_query_ties_three_executions_to_each_batch() -> None:
    analysis = api.analyze(public("local-1596020211915"))
    (query,) = analysis.application.streaming
    assert query.name is None and query.status == "running"
    assert [b.batch_id for b in query.batches] == list(range(8))
    assert [b.execution_ids for b in query.batches] == [
        (3 * i, 3 * i + 1, 3 * i + 2) for i in range(8)
    ]
    first = query.batches[0]
    assert first.trigger_execution_ms == 7109 and first.n_input_rows == 3
    assert first.input_rows_per_s is None  # logged as "NaN"
    assert first.state_rows_total == 1 and first.state_memory_bytes == 776
    fig = analysis.streaming[0]
    # The default trigger: each batch starts as the one before ends, on no interval.
    assert fig.trigger_interval_ms is None
    assert dict(fig.phase_totals_ms)["latestOffset"] == 3552


@needs_public
def test_public_kafka_query_finds_its_offsets_slowly_only_in_its_first_batch() -> None:
    # latestOffset: 3,524 ms in batch 0 (the topic's metadata fetched once), then 3 to 7 ms in
    # each of batches 1 to 7: 28 ms of their 3.1 s. Counted over every batch it was 35 %.
    analysis = api.analyze(public("local-1596020211915"))
    batches = analysis.streaming[0].query.batches
    assert dict(batches[0].durations_ms)["latestOffset"] == 3524
    assert sum(dict(b.durations_ms)["latestOffset"] for b in batches[1:]) == 28
    findings = api.find_issues(analysis)
    assert not [f for f in findings if f.rule == "streaming-hot-phase"]
    assert not [f for f in findings if f.rule == "streaming-falling-behind"]


def test_html_chart_draws_every_batch_against_the_trigger_and_text_a_sparkline() -> None:
    entry = _entry("stream-falls-behind")
    analysis, findings = _analyzed(entry["file"])
    fig = analysis.streaming[0]
    page = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0), findings)
    section = page[page.index('<section class="streaming"') :]
    section = section[: section.index("</section>")]
    assert section.count('<rect class="sq-bar') == fig.n_batches
    assert section.count('<rect class="sq-bar sq-late"') == fig.n_late_batches
    assert section.count('<line class="sq-trigger"') == 1
    assert "http" not in section  # a self-contained drawing: no external reference
    text = api.render_report(analysis, ReportOptions(fmt="text"), findings)
    line = next(x for x in text.splitlines() if x.strip().startswith("durations:"))
    blocks = line.split("durations:")[1].split()[0]
    assert len(blocks) == fig.n_batches and set(blocks) <= set("▁▂▃▄▅▆▇█")


@needs_public
def test_hostile_query_names_and_exceptions_stay_text(tmp_path: Any) -> None:
    """A query name and exception with terminal escapes and markup, in a copy of a real log."""
    lines = public("local-1596020211915").read_text().splitlines()
    evil = "\x1b[31mred\x1b[0m<script>alert(1)</script>"
    edited = []
    for line in lines:
        if "QueryProgressEvent" in line or "QueryStartedEvent" in line:
            line = line.replace('"name":null', '"name":' + json.dumps(evil))
        edited.append(line)
    run_id = "e225d92f-2545-48f8-87a2-9c0309580f8a"
    query_id = "8d268dc2-bc9c-4be8-97a9-b135d2943028"
    terminated = query_terminated(query_id, run_id, evil + "\n\tat Foo.bar(Foo.scala:1)")
    edited.insert(len(edited) - 1, json.dumps(terminated))
    path = tmp_path / "local-1596020211915"
    path.write_text("\n".join(edited) + "\n")
    analysis = api.analyze(path)
    (query,) = analysis.application.streaming
    assert query.name == evil and query.status == "failed"
    findings = api.find_issues(analysis)
    text = api.render_report(analysis, ReportOptions(fmt="text"), findings)
    assert "\x1b" not in text
    page = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0), findings)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    markdown = api.render_report(analysis, ReportOptions(fmt="markdown"), findings)
    assert "\x1b" not in markdown
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    html = [
        c.content
        for t in tokens
        for c in (t, *(t.children or ()))
        if c.type in ("html_inline", "html_block")
    ]
    assert set(html) <= {"<sub>", "</sub>"}  # the report's own footnote markup only


def _idle_entries() -> list[Any]:
    found = [
        p
        for p in _entries()
        if p.values[0] is not None and p.values[0]["workload"] == "stream-idle"
    ]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no idle stream sample"))]


@pytest.mark.parametrize("entry", _idle_entries())
def test_an_idle_streams_reports_are_not_batches_and_extend_its_run(entry: dict[str, Any]) -> None:
    """Spark 3.5+ logs a QueryIdleEvent for a trigger that found no new data; Spark 3.4 a
    progress event of no batch, with the next batch's id. Neither is a batch: the stream ran
    two, and was idle (reported about once a second) until it was stopped."""
    analysis, findings = _analyzed(entry["file"])
    (query,) = analysis.application.streaming
    assert [b.batch_id for b in query.batches] == [0, 1]
    idle_ms = _idle_reports_ms(str(SAMPLES / entry["file"]), query.run_id)
    assert query.idle_reports == len(idle_ms) >= 5
    assert query.last_idle_ms == max(idle_ms)
    assert query.end_ms is not None and query.end_ms >= query.last_idle_ms
    assert not [f for f in findings if f.rule.startswith("streaming")]
    text = api.render_report(analysis, ReportOptions(fmt="text"), findings)
    assert f"idle: no new data, reported {len(idle_ms)} times, the last at" in text
    assert "2 batches" in text
    document = json.loads(api.render_report(analysis, ReportOptions(fmt="json"), findings))
    (shown,) = document["streaming"]["queries"]
    assert (shown["n_batches"], shown["idle_reports"]) == (2, len(idle_ms))
    assert shown["last_idle_ms"] == query.last_idle_ms


def test_hostile_idle_reports_stay_text_and_bounded(tmp_path: Path) -> None:
    """Idle reports of a run the log never started, with escapes in its ids, and with times
    that are no dates: every format reads them as text, and a time no date is left out."""
    entry = _entry("stream-idle")
    lines = []
    for event in _events(str(SAMPLES / entry["file"])):
        if str(event["Event"]).endswith(IDLE):
            evil = dict(event, id="\x1b[31mq\u202e", runId="<script>alert(1)</script>")
            lines.append(json.dumps(evil))
            event = dict(event, timestamp="not a date \x1b[2J")
        lines.append(json.dumps(event))
    path = tmp_path / "local-idle-hostile"
    path.write_text("\n".join(lines) + "\n")
    analysis = api.analyze(path)
    known, unknown = analysis.application.streaming
    assert known.idle_reports == unknown.idle_reports >= 5
    assert known.last_idle_ms is None and not unknown.batches
    findings = api.find_issues(analysis)
    for fmt in ("text", "markdown", "json"):
        assert "\x1b" not in api.render_report(analysis, ReportOptions(fmt=fmt), findings)
    page = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0), findings)
    assert "<script>alert(1)" not in page


def test_a_foreach_batch_failure_is_named_by_the_functions_own_exception() -> None:
    """A foreachBatch function that raises ends the query with py4j's wrapper around the
    Python traceback; the section, the verdict and the finding name the function's exception."""
    entry = _entry("stream-foreach-batch-fails")
    analysis, findings = _analyzed(entry["file"])
    (query,) = analysis.application.streaming
    message = entry["expect_streaming"][0]["message"]
    assert query.exception is not None and "Traceback (most recent call last)" in query.exception
    assert query.exception_cause.startswith(f"ValueError: {message}")
    assert message in _verdict(analysis, findings).root_cause_str
    text = api.render_report(analysis, ReportOptions(fmt="text"), findings)
    assert f"order_totals · failed: ValueError: {message}" in text
    (failed,) = [f for f in findings if f.rule == "failed-query"]
    assert failed.number("n_failed_tasks") == 0


def test_a_stream_that_never_got_data_says_no_batch_ran() -> None:
    """A query whose source never had data ran no batch: Spark logs only its idle reports. The
    section says no batch ran, draws no chart, infers no trigger, and nothing is a finding."""
    entry = _entry("stream-no-data")
    analysis, findings = _analyzed(entry["file"])
    (query,) = analysis.application.streaming
    assert query.batches == () and query.idle_reports >= 5
    assert query.status == "stopped" and query.end_ms is not None
    assert query.end_ms >= (query.last_idle_ms or 0)
    assert not findings
    text = api.render_report(analysis, ReportOptions(fmt="text"), findings)
    assert "trigger unknown: no batch ran" in text
    assert "    batches: none ran\n" in text
    assert "durations:" not in text and "median 0 ms" not in text
    assert "    sources: –\n" in text
    # No job ran: the driver's time is not called start-up (the stream was waiting for data).
    spent = analysis.time_spent
    assert (spent.startup_ms, spent.between_ms, spent.after_ms) == (None, None, None)
    assert "start-up" not in text
    assert "query orders_never_arrived: no batch, no SQL execution" in text
    page = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0), findings)
    assert 'class="sq-chart"' not in page
    assert _verdict(analysis, findings).status == "completed"


def test_a_file_streams_micro_batches_are_one_family_though_their_plans_differ() -> None:
    """Each micro-batch of a file source names the files it read (and its epoch) in its plan,
    so the batches' plan fingerprints differ; they are still one family, by query run."""
    from analyzer.aggregate.families import execution_fingerprint

    analysis, _ = _analyzed(_entry("stream-idle")["file"])
    (query,) = analysis.application.streaming
    roots = [b.execution_ids[0] for b in query.batches]
    by_id = analysis.executions_by_id
    assert len({execution_fingerprint(by_id[e]) for e in roots}) == len(roots) == 2
    (family,) = analysis.query_families
    assert family.execution_ids == tuple(roots)
    assert family.fingerprint == execution_fingerprint(by_id[roots[0]])


def test_too_few_batches_say_so_rather_than_guess_why_no_trigger_was_found() -> None:
    analysis, findings = _analyzed(_entry("stream-idle")["file"])
    text = api.render_report(analysis, ReportOptions(fmt="text"), findings)
    assert "2 batches are too few to infer it (it takes 4)" in " ".join(text.split())
    assert "under an interval every batch overran" not in text


def test_markdown_points_a_micro_batch_without_operator_time_at_its_write() -> None:
    """A micro-batch's execution holds no operator time of its own: the write inside it does.
    Its hot plan in the Markdown summary says where the work ran."""
    analysis, findings = _analyzed(_entry("stream-idle")["file"])
    markdown = api.render_report(analysis, ReportOptions(fmt="markdown"), findings)
    (query,) = analysis.application.streaming
    first, inside = query.batches[0].execution_ids[:2]
    assert f"#### Hot plan: SQL execution {first} " in markdown
    assert f"its work ran in sub-execution {inside}." in markdown
