"""Query families: an application's runs of one query, read as one (docs/query-families.md).

`sea-repeated-queries` runs two queries 100 times each in a loop, with the same plans every
time; the streaming samples run one query per micro-batch. Two runs of the keeping-up streaming
job (`sea-stream-keeps-up`, by Spark 4.3 and by Spark 3.5) are compared with `diff`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from eventlog_samples import SAMPLES
from reports import analysis_of

from analyzer import api
from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.families import MIN_FAMILY_EXECUTIONS, execution_fingerprint
from analyzer.batch.jobkey import JobKeyRule
from analyzer.report.anchors import execution_anchor
from analyzer.report.diff import STREAMING_FIGURES
from analyzer.report.options import ReportOptions

ROUNDS = 100


def _sample(workload: str, directory: Path = SAMPLES) -> Path:
    """The log of a workload of the sample script, from its directory's manifest."""
    manifest = directory / ".manifest.json"
    if manifest.is_file():
        for entry in json.loads(manifest.read_text())["logs"]:
            if entry["workload"] == workload:
                return directory / entry["file"]
    pytest.skip(f"no sample of workload {workload} in {directory}")


def _repeated() -> Analysis:
    return analysis_of(_sample("repeated-queries"))


def _time_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Where the time went"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("Findings"))
    return lines[start:end]


def test_two_repeated_queries_are_two_families_holding_most_of_the_application() -> None:
    analysis = _repeated()
    families = analysis.query_families
    assert [f.n_executions for f in families] == [ROUNDS, ROUNDS]
    assert {f.description for f in families} == {"orders per region", "top customers"}
    app = analysis.application
    by_id = analysis.executions_by_id
    runs = [
        e
        for e in app.executions
        if app.parent_of(e) is None and e.description in ("orders per region", "top customers")
    ]
    assert len(runs) == 2 * ROUNDS
    assert sorted(i for f in families for i in f.execution_ids) == sorted(
        e.execution_id for e in runs
    )
    for family in families:
        members = [by_id[i] for i in family.execution_ids]
        durations = [e.duration_ms or 0 for e in members]
        assert {execution_fingerprint(e) for e in members} == {family.fingerprint}
        assert [e.start_ms for e in members] == sorted(e.start_ms or 0 for e in members)
        assert family.total_ms == sum(durations)
        assert family.min_ms == min(durations) and family.max_ms == max(durations)
        assert family.min_ms <= family.median_ms <= family.p90_ms <= family.max_ms
        assert by_id[family.slowest_execution_id].duration_ms == family.max_ms
        assert family.covered_ms <= family.total_ms
        assert family.trend in ("slower", "faster", "steady")
        assert family.n_failed == 0
    wall = analysis.time_spent.wall_ms or 0
    assert sum(f.covered_ms for f in families) >= 0.5 * wall


def test_the_first_screen_leads_with_the_two_families() -> None:
    analysis = _repeated()
    text = api.render_report(analysis, ReportOptions(fmt="text", width=100))
    section = _time_section(text)
    rows = [line for line in section if line[:3].strip().rstrip(".").isdigit()]
    assert rows[0].startswith(f" 1. query run {ROUNDS} times")
    assert rows[1].startswith(f" 2. query run {ROUNDS} times")
    assert {"orders per region", "top customers"} == {row.rsplit(" · ", 1)[1] for row in rows[:2]}
    # One row per query, not one per run: no member is listed as an execution of its own.
    members = {i for f in analysis.query_families for i in f.execution_ids}
    listed = [row for row in rows if " SQL execution " in row]
    assert not [row for row in listed if int(row.split()[3]) in members]
    # The section is on the first screen: before the findings, within the first 60 lines.
    assert text.splitlines().index(section[0]) + len(section) < 60
    for family in analysis.query_families:
        assert f"slowest: SQL execution {family.slowest_execution_id}" in "\n".join(section)


def test_every_format_shows_the_families_and_json_carries_their_figures() -> None:
    analysis = _repeated()
    families = analysis.query_families
    document = json.loads(api.render_report(analysis, ReportOptions(fmt="json")))
    assert [f["n_executions"] for f in document["query_families"]] == [ROUNDS, ROUNDS]
    for doc, family in zip(document["query_families"], families, strict=True):
        assert doc["execution_ids"] == list(family.execution_ids)
        assert doc["wall_ms"] == family.covered_ms and doc["total_ms"] == family.total_ms
        assert (doc["min_ms"], doc["median_ms"], doc["p90_ms"], doc["max_ms"]) == (
            family.min_ms,
            family.median_ms,
            family.p90_ms,
            family.max_ms,
        )
        assert doc["slowest_execution_id"] == family.slowest_execution_id
        assert doc["trend"] == family.trend
    markdown = api.render_report(analysis, ReportOptions(fmt="markdown"))
    assert markdown.count(f"**query run {ROUNDS} times**") == 2
    page = api.render_report(analysis, ReportOptions(fmt="html", now_ms=0))
    section = page[page.index('<section class="time-spent"') :]
    section = section[: section.index("</section>")]
    assert section.count('<div class="tx tx-family">') == 2
    for family in families:
        assert f'href="#{execution_anchor(family.slowest_execution_id)}"' in section


def test_chosen_executions_are_followed_one_by_one() -> None:
    analysis = _repeated()
    chosen = analysis.query_families[0].execution_ids[:2]
    text = api.render_report(analysis, ReportOptions(fmt="text", executions=frozenset(chosen)))
    section = "\n".join(_time_section(text))
    assert "query run" not in section
    assert f"SQL execution {chosen[0]}" in section or f"SQL execution {chosen[1]}" in section


@pytest.mark.parametrize("version", ["", "spark-3.5"])
def test_a_streaming_query_is_one_family_of_its_micro_batches(version: str) -> None:
    """Every batch's plan numbers its batch (and, in Spark 3.5, prints its write's JVM objects
    with their identity hashes): the fingerprint leaves those out."""
    analysis = analysis_of(_sample("stream-keeps-up", SAMPLES / version))
    (fig,) = analysis.streaming
    (family,) = analysis.query_families
    app = analysis.application
    batch_roots = [
        i for i in fig.execution_ids if app.parent_of(analysis.executions_by_id[i]) is None
    ]
    assert sorted(family.execution_ids) == sorted(batch_roots)
    assert family.n_executions >= fig.n_batches >= MIN_FAMILY_EXECUTIONS
    text = api.render_report(analysis, ReportOptions(fmt="text", width=100))
    flat = " ".join(" ".join(_time_section(text)).split())
    # The row counts the query's batches (its finished ones), not its executions.
    assert f"{fig.n_batches} micro-batches" in flat
    assert "streaming query orders_enriched" in flat


def _keeps_up_runs() -> tuple[Path, Path]:
    return _sample("stream-keeps-up", SAMPLES / "spark-3.5"), _sample("stream-keeps-up")


def test_diff_of_two_runs_of_a_streaming_job_sets_batches_and_rates_side_by_side() -> None:
    older, newer = _keeps_up_runs()
    baseline, candidate = analysis_of(older), analysis_of(newer)
    result = api.diff(baseline, candidate)
    (pair,) = result.streaming
    assert pair.label == "orders_enriched"
    assert pair.baseline is baseline.streaming[0] and pair.candidate is candidate.streaming[0]
    document = json.loads(api.render_diff(result, ReportOptions(fmt="json")))
    (doc,) = document["streaming"]
    for side, fig in (("baseline", pair.baseline), ("candidate", pair.candidate)):
        assert doc[side]["n_batches"] == fig.n_batches
        assert doc[side]["trigger_execution_ms"] == [
            b.trigger_execution_ms for b in fig.query.batches
        ]
        assert doc[side]["mean_processed_rows_per_s"] == fig.mean_processed_rows_per_s
    text = api.render_diff(result, ReportOptions(fmt="text", width=100))
    section = text[text.index("Streaming queries") : text.index("Executions")]
    assert "orders_enriched · stopped → stopped" in section
    labels = [label for label, _, _ in STREAMING_FIGURES]
    for line, label in zip(section.splitlines()[2:], labels, strict=False):
        assert line.strip().startswith(label)
    for fmt in ("html", "markdown"):
        assert "orders_enriched" in api.render_diff(result, ReportOptions(fmt=fmt, now_ms=0))


def test_a_streaming_job_diffed_with_itself_changes_nothing() -> None:
    log = _sample("stream-falls-behind")
    result = api.diff(analysis_of(log), analysis_of(log))
    (pair,) = result.streaming
    view = api.render_diff(result, ReportOptions(fmt="json"))
    (doc,) = json.loads(view)["streaming"]
    assert doc["baseline"] == doc["candidate"]
    assert pair.baseline is pair.candidate


def test_batch_history_keys_the_runs_of_a_streaming_job_as_one_job() -> None:
    """Job keys come from the application name, as for any job: both runs of the keeping-up
    stream are one job."""
    rule = JobKeyRule()
    keys = set()
    for log in _keeps_up_runs():
        app: Any = analysis_of(log).application
        keys.add(rule.key(app.name, dict(app.spark_properties)))
    assert keys == {"sea-stream-keeps-up"}
