"""Context around the plans in every format: configuration, executors, jobs, stages outside SQL,
and the stage quantiles (Spark's own) in the stage tables and the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eventlog_builder import (
    application_end,
    application_start,
    environment_update,
    job_start,
    log_start,
    write_log,
)
from eventlog_samples import SAMPLES
from reports import NOW_MS, Q72, analysis_of, html_report, json_report, parse_page, text_report

from analyzer import api
from analyzer.aggregate.analysis import SUMMARY_QUANTILES
from analyzer.aggregate.executor_summary import executor_summaries
from analyzer.aggregate.stage_summary import stage_task_summaries
from analyzer.errors import UsageError
from analyzer.model.config_secrets import REDACTED
from analyzer.render.terminal import visible_len
from analyzer.report import context as context_views
from analyzer.report.context import build_context_view
from analyzer.report.options import ReportOptions, parse_sections
from analyzer.report.stages import STAGE_PAGE_QUANTILES, build_stage_views
from analyzer.units import fmt_value

EXECUTOR_LOST = SAMPLES / "app-20261122042434-0000.zstd"
RDD_ONLY = SAMPLES / "local-1795322404204"


def _sample(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


SECRET = "hunter2-s3cr3t"
HOSTILE = "\x1b]0;owned\x07</script><img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny log whose configuration holds secrets and whose texts are hostile."""
    properties = {
        "spark.app.name": "vault-demo",
        "spark.hadoop.fs.s3a.secret.key": SECRET,
        "spark.hadoop.fs.s3a.access.key": SECRET,
        "spark.ssl.keyStorePassword": REDACTED,
        "spark.hostile": HOSTILE,
        "spark.long": "x" * 5000,
    }
    events = [
        log_start(),
        environment_update(properties),
        application_start("local-1700000000001", "vault-demo", timestamp_ms=1),
        job_start(0, 3, properties={"spark.job.description": HOSTILE}),
        application_end(4),
    ]
    return write_log(tmp_path_factory.mktemp("context") / "local-1700000000001", events)


def test_secrets_stay_redacted_and_hostile_text_is_harmless(hostile_log: Path) -> None:
    analysis = api.analyze(str(hostile_log))
    text = text_report(analysis, now_ms=NOW_MS)
    html = html_report(analysis)
    document = json_report(analysis)
    for report in (text, html, document):
        assert SECRET not in report
    assert "\x1b" not in text and "\\x1b]0;owned\\x07</script>" in text
    assert f"\nspark.hadoop.fs.s3a.secret.key  {REDACTED}\n" in text
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert all(visible_len(line) <= 100 for line in text.splitlines())
    # Long values are cut in the reports, whole in the JSON.
    assert "x" * (context_views.MAX_VALUE_CHARS - 1) + "…" in html
    assert "x" * context_views.MAX_VALUE_CHARS not in html
    properties = json.loads(document)["environment"]["spark_properties"]
    assert properties["spark.long"] == "x" * 5000
    assert properties["spark.ssl.keyStorePassword"] == REDACTED
    assert properties["spark.hadoop.fs.s3a.access.key"] == REDACTED
    config = build_context_view(analysis, is_filtered=False).config
    assert config.summary_str == "6 Spark properties, 3 redacted"
    assert [p.key for p in config.spark_properties if p.is_redacted] == [
        "spark.hadoop.fs.s3a.access.key",
        "spark.hadoop.fs.s3a.secret.key",
        "spark.ssl.keyStorePassword",
    ]


def test_executors_match_the_history_servers_summaries() -> None:
    analysis = analysis_of(_sample(EXECUTOR_LOST))
    view = build_context_view(analysis, is_filtered=False).executors
    assert view.summary_str == "2 executors and the driver, 1 removed; 2 cores"
    assert [e.executor_id for e in view.items] == ["driver", "0", "1"]
    lost = view.items[2]
    assert (lost.n_tasks, lost.n_failed_tasks, lost.tasks_str) == (8, 1, "8 tasks, 1 failed")
    assert lost.removed_reason == "Command exited with code 137"
    assert lost.lifetime_str.endswith(" · removed +32.9 s: Command exited with code 137")
    summaries = {s.executor_id: s for s in executor_summaries(analysis.application)}
    for row in view.items:
        assert row.n_tasks == summaries[row.executor_id].n_total_tasks
    text = text_report(analysis, sections=("executors",))
    assert text.startswith("Executors · 2 executors and the driver, 1 removed; 2 cores\n")
    assert "1           1         8       1     10.8 s   101 ms (0.9 %)" in text
    executors = json.loads(json_report(analysis))["executors"]
    assert [e["executor_id"] for e in executors] == ["driver", "0", "1"]
    assert executors[2]["remove_reason"] == "Command exited with code 137"
    assert executors[1]["total_duration_ms"] == 16547


def test_jobs_carry_description_call_site_and_execution() -> None:
    analysis = analysis_of(_sample(EXECUTOR_LOST))
    jobs = build_context_view(analysis, is_filtered=False).jobs
    assert jobs.summary_str == "2 jobs: 2 in SQL executions, 0 outside; 0 failed"
    second = jobs.items[1]
    assert (second.execution_str, second.stages_str, second.job_group) == (
        "SQL 1",
        "stages 2, 3",
        "lose-executor",
    )
    assert second.label_str.startswith("reduce stage loses executor 1 · collect at ")
    document = json.loads(json_report(analysis))
    assert document["jobs"][1]["description"] == "reduce stage loses executor 1"
    assert document["jobs"][1]["execution_id"] == 1
    html = html_report(analysis)
    assert 'id="jobs"' in html and "reduce stage loses executor 1" in html


def test_rdd_stages_and_jobs_outside_sql_are_listed() -> None:
    analysis = analysis_of(_sample(RDD_ONLY))
    text = text_report(analysis, now_ms=NOW_MS)
    assert "2 jobs outside SQL executions: 0, 1" in text
    assert "Stage 0.0 COMPLETE" in text
    ids = [p.get("id") for _, p in parse_page(html_report(analysis)).tags]
    assert "other-stages" in ids


def test_sections_choose_what_the_text_prints() -> None:
    analysis = analysis_of(_sample(EXECUTOR_LOST))
    only = text_report(analysis, sections=("findings", "jobs"))
    assert only.startswith("Findings")
    assert "\nJobs · 2 jobs" in only
    for absent in ("EXPLAIN ANALYZE", "Where the time went", "Plan", "Executors", "Configuration"):
        assert absent not in only
    stages_only = text_report(analysis, sections=("stages",))
    assert "SQL execution 1 ·" in stages_only and "Stages · task quantiles" in stages_only
    assert "\nPlan" not in stages_only and "Operators" not in stages_only
    full = text_report(analysis)
    assert all(
        heading in full for heading in ("Plan", "Stages", "Jobs", "Executors", "Configuration")
    )


def test_sections_option_is_validated() -> None:
    assert parse_sections("config, plans") == ("plans", "config")
    with pytest.raises(UsageError, match="unknown --sections nope"):
        parse_sections("plans,nope")
    with pytest.raises(UsageError):
        parse_sections(" , ")
    with pytest.raises(UsageError):
        ReportOptions(sections=())
    with pytest.raises(UsageError, match="--width must be between 60 and 1000"):
        ReportOptions(width=59)


def test_stage_tables_show_sparks_own_quantiles() -> None:
    analysis = analysis_of(_sample(EXECUTOR_LOST))
    stages = [s for s in analysis.application.stages if (s.stage_id, s.attempt_id) == (3, 0)]
    (view,) = build_stage_views(analysis, stages, with_quantiles=True)
    spark = stage_task_summaries(analysis, STAGE_PAGE_QUANTILES)[(3, 0)]
    rows = {q.label: q.values for q in view.quantiles}
    # Failed attempts count in Spark's durations (not in its other metrics): 94 ms is one.
    assert rows["Duration (Spark's REST API)"] == tuple(
        fmt_value("ms", v) for v in spark.duration_ms
    )
    assert rows["Duration (Spark's REST API)"][0] == "94 ms"
    assert rows["Shuffle read"] == tuple(fmt_value("bytes", v) for v in spark.shuffle_read_bytes)
    assert view.n_summary_tasks == spark.n_tasks == 2
    text = text_report(analysis, sections=("stages",))
    rows_text = [" ".join(line.split()) for line in text.splitlines()]
    assert "Duration (Spark's REST API) 94 ms 94 ms 604 ms 604 ms 604 ms" in rows_text


@pytest.mark.parametrize(
    "log", [EXECUTOR_LOST, Q72], ids=lambda p: p.name if isinstance(p, Path) else str(p)
)
def test_json_stages_carry_the_task_summary(log: Path) -> None:
    analysis = analysis_of(_sample(log))
    stages = json.loads(json_report(analysis))["stages"]
    spark = stage_task_summaries(analysis, SUMMARY_QUANTILES)
    assert len(stages) == len(analysis.application.stages)
    with_summary = [s for s in stages if s["task_summary"] is not None]
    assert {(s["stage_id"], s["attempt_id"]) for s in with_summary} == set(spark)
    for stage in with_summary:
        summary = spark[(stage["stage_id"], stage["attempt_id"])]
        carried = stage["task_summary"]
        assert carried["quantiles"] == list(SUMMARY_QUANTILES)
        assert carried["n_tasks"] == summary.n_tasks
        assert carried["metrics"] == {m.field: list(v) for m, v in summary.metrics()}
