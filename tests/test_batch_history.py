"""Job history in batch runs over three "nights" of real logs of one nightly job.

Night 1 and 2 hold two ordinary runs of `sea-nightly-orders` (the baselines of two run pairs) and
another application each; night 3 holds the slow run of the `partitions` pair (400 shuffle
partitions: four times slower, with tiny-task findings its earlier runs never had). Each night is
a log directory of its own, analyzed by one batch run into the same output directory: the history
must outlive the manifest, which only covers the current log directory.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import PAIRS, PUBLIC_CORPUS, SAMPLES
from typer.testing import CliRunner

from analyzer import api
from analyzer.batch.fleet import parse_report
from analyzer.batch.history import (
    HISTORY_TABLES,
    History,
    HistoryStore,
    RegressionRule,
    RunInput,
    history_schema,
    new_records,
)
from analyzer.batch.jobkey import JobKeyRule
from analyzer.batch.layout import DIFF_FILE
from analyzer.batch.runner import BatchOptions, run_batch
from analyzer.cli import app
from analyzer.errors import UsageError
from analyzer.eventlog.discover import discover_applications

pytestmark = pytest.mark.slow  # seven batch runs with worker processes

JOB = "sea-nightly-orders"


def _pair_file(pair: str, side: str) -> Path:
    manifest = json.loads((PAIRS / ".manifest.json").read_text())
    entry = next(p for p in manifest["pairs"] if p["pair"] == pair)
    return PAIRS / pair / entry[side]["file"]


def _sample_named(name: str) -> Path:
    for info in discover_applications(str(SAMPLES)):
        if info.name == name and info.error is None:
            return Path(info.path)
    pytest.skip(f"sample log of {name} not present")


def _night(directory: Path, logs: list[Path]) -> Path:
    """A log directory holding copies of `logs`, each modified when its application ended."""
    directory.mkdir(parents=True)
    for log in logs:
        shutil.copy2(log, directory / log.name)
    for info in discover_applications(str(directory)):
        end_s = (info.end_ms or info.start_ms or 0) / 1000
        os.utime(info.path, (end_s, end_s))
    return directory


def _batch(log_dir: Path, out: Path, *extra: str) -> str:
    result = CliRunner().invoke(app, ["batch", str(log_dir), "-o", str(out), "-j", "2", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def _table(out: Path, table: str) -> pl.DataFrame:
    files = sorted((out / "tables" / "history" / table).glob("*.parquet"))
    return pl.concat([pl.read_parquet(f) for f in files]) if files else pl.DataFrame()


def _history_files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in (out / "tables" / "history").rglob("*"))


def _jobs_section(index: str) -> str:
    return index[index.index("<h2>Jobs</h2>") : index.index("<h2>Applications</h2>")]


def _job_row(index: str, job_key: str) -> str:
    section = _jobs_section(index)
    start = section.index(f"<code>{job_key}</code>")
    return section[section.rindex("<tr", 0, start) : section.index("</tr>", start)]


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three nights analyzed one after the other into one output directory."""
    if not PAIRS.is_dir():
        pytest.skip("run pairs not present")
    root = tmp_path_factory.mktemp("nights")
    n1 = _night(
        root / "night-1",
        [_pair_file("broadcast-off", "baseline"), _sample_named("sea-clean-join-agg")],
    )
    n2 = _night(
        root / "night-2",
        [_pair_file("partitions", "baseline"), _sample_named("sea-clean-multi-query")],
    )
    n3 = _night(root / "night-3", [_pair_file("partitions", "candidate")])
    out = root / "out"
    for night in (n1, n2, n3):
        _batch(night, out)
    return {"night-1": n1, "night-2": n2, "night-3": n3, "out": out}


def test_every_run_is_recorded_once_with_its_date(nights: dict[str, Path]) -> None:
    out = nights["out"]
    runs = _table(out, "runs")
    assert runs.schema == history_schema("runs")
    assert runs.height == 5
    assert runs.select("app_id", "attempt_id").is_unique().all()
    assert runs.filter(pl.col("job_key") == JOB).height == 3
    assert runs["batch_run_ms"].n_unique() == 3  # one batch run per night
    for row in runs.iter_rows(named=True):
        start = dt.datetime.fromtimestamp(row["run_start_ms"] / 1000, tz=dt.UTC)
        assert row["run_date"] == start.date()
        assert row["duration_ms"] == row["end_ms"] - row["run_start_ms"] > 0
        assert row["job_key"] == row["name"]  # the sample names carry no date or id
    executions = _table(out, "executions")
    assert executions.schema == history_schema("executions")
    assert executions.height == runs["n_executions"].sum()
    assert executions.select("app_key", "execution_id").is_unique().all()
    findings = _table(out, "findings")
    assert findings.schema == history_schema("findings")
    assert findings.height == runs["n_findings"].sum()
    for table in HISTORY_TABLES:  # one file per batch run and table, no temporary file left
        assert len(list((out / "tables" / "history" / table).iterdir())) == 3


def test_third_night_regressed_against_the_median(nights: dict[str, Path]) -> None:
    runs = _table(nights["out"], "runs").filter(pl.col("job_key") == JOB).sort("run_start_ms")
    first, second, third = runs.iter_rows(named=True)
    assert not first["regressed"] and first["previous_app_key"] is None
    assert not second["regressed"] and second["previous_app_key"] == first["app_key"]
    assert third["regressed"]
    assert third["previous_app_key"] == second["app_key"]
    assert third["previous_duration_ms"] == second["duration_ms"]
    assert third["n_median_runs"] == 2
    assert third["median_duration_ms"] == round((first["duration_ms"] + second["duration_ms"]) / 2)
    assert third["duration_ms"] >= 1.5 * third["median_duration_ms"]
    assert (third["regression_threshold"], third["regression_min_change_ms"]) == (1.5, 30_000)
    others = _table(nights["out"], "runs").filter(pl.col("job_key") != JOB)
    assert not others["regressed"].any()


def _third_night_findings(out: Path) -> tuple[pl.DataFrame, set[str]]:
    """The regressed (third) run's findings, and the finding keys of the job's earlier runs."""
    runs = _table(out, "runs").filter(pl.col("job_key") == JOB).sort("run_start_ms")
    all_findings = _table(out, "findings")
    third = runs["app_key"][2]
    earlier = set(all_findings.filter(pl.col("app_key").is_in(runs["app_key"][:2]))["finding_key"])
    return all_findings.filter(pl.col("app_key") == third), earlier


def test_findings_seen_for_the_first_time_are_new(nights: dict[str, Path]) -> None:
    out = nights["out"]
    runs = _table(out, "runs").filter(pl.col("job_key") == JOB).sort("run_start_ms")
    third = runs.row(2, named=True)
    findings, earlier = _third_night_findings(out)
    assert findings.height == third["n_findings"]
    # New exactly when no earlier run of the job had the same finding.
    expected_new = [k not in earlier for k in findings["finding_key"]]
    assert findings["is_new"].to_list() == expected_new
    assert third["n_new_findings"] == sum(expected_new) > 0
    # The 400 partitions' tiny tasks appear on the slow night only; the broadcast-off baseline
    # of night 1 already had a too-many-partitions finding at the same stage, not new again.
    tiny = findings.filter(pl.col("rule") == "tiny-tasks")
    assert tiny.height > 0 and tiny["is_new"].all()
    assert all(k.startswith("tiny-tasks | nightly orders: ") for k in tiny["finding_key"])
    assert not findings["is_new"].all()
    assert runs["n_findings"].to_list()[1] == 0


def test_index_flags_the_regressed_job_and_its_new_findings(nights: dict[str, Path]) -> None:
    index = (nights["out"] / "index.html").read_text()
    section = _jobs_section(index)
    assert "3 jobs, 1 whose last run regressed" in section
    assert "at least 1.5× the median of the last 10 earlier runs, and 30.0 s more" in section
    row = _job_row(index, JOB)
    assert 'class="job regressed"' in row and "flag-regressed" in row
    findings, _ = _third_night_findings(nights["out"])
    assert row.count('<span class="flag-new">new</span>') == findings["is_new"].sum()
    assert "+33.0 s (4.4×)" in row  # 9.8 s on night 2, 42.8 s on night 3
    assert "4.1×" in row  # against the median of nights 1 and 2
    assert row.count("<polyline") == 1 and "last 3 runs" in row
    third = _table(nights["out"], "runs").sort("run_start_ms")["app_key"][-1]
    assert f'href="apps/{third}/report.html"' in row
    for other in ("sea-clean-join-agg", "sea-clean-multi-query"):
        other_row = _job_row(index, other)
        assert "flag-regressed" not in other_row and "first run" in other_row
    assert "<script src" not in index and "http://" not in index and "https://" not in index


def test_regressed_run_links_its_diff_report(nights: dict[str, Path]) -> None:
    out = nights["out"]
    third = _table(out, "runs").sort("run_start_ms")["app_key"][-1]
    page = (out / "apps" / third / DIFF_FILE).read_text()
    assert f'href="apps/{third}/{DIFF_FILE}"' in _job_row((out / "index.html").read_text(), JOB)
    # The third night ran with 400 shuffle partitions: the diff says so.
    assert "spark.sql.shuffle.partitions" in page
    assert "<script src" not in page and "http://" not in page


def test_reruns_add_no_rows_and_apply_new_thresholds(nights: dict[str, Path]) -> None:
    out = nights["out"]
    before = _history_files(out)
    sizes = {t: _table(out, t).height for t in HISTORY_TABLES}
    # Night 3 again, unchanged, with a stricter minimum change; then night 1, whose logs left
    # the manifest on night 2 and are analyzed again: both runs are recorded already.
    output = _batch(nights["night-3"], out, "--regression-min-change-s", "60")
    assert "0 runs recorded, 0 of them regressed" in output
    index = (out / "index.html").read_text()
    assert "flag-regressed" not in _job_row(index, JOB)  # 33 s above the median, not 60
    assert "and 1m 00s more" in index
    output = _batch(nights["night-1"], out)
    assert "2 analyzed" in output and "0 runs recorded" in output
    assert _history_files(out) == before
    assert {t: _table(out, t).height for t in HISTORY_TABLES} == sizes
    assert "flag-regressed" in _job_row((out / "index.html").read_text(), JOB)


def test_history_is_readable_by_duckdb_and_polars(nights: dict[str, Path]) -> None:
    history = nights["out"] / "tables" / "history"
    scanned = pl.scan_parquet(history / "runs" / "*.parquet").collect()
    assert scanned.height == 5
    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.sql(
        f"SELECT r.job_key, count(*) AS n_findings, bool_and(f.is_new) AS all_new "
        f"FROM read_parquet('{history}/runs/*.parquet') r "
        f"JOIN read_parquet('{history}/findings/*.parquet') f USING (app_key) "
        f"WHERE r.regressed GROUP BY r.job_key"
    ).fetchall()
    findings, earlier = _third_night_findings(nights["out"])
    expected_all_new = all(k not in earlier for k in findings["finding_key"])
    assert rows == [(JOB, findings.height, expected_all_new)]


def test_killed_append_and_damaged_files_never_cost_the_history(
    runner: CliRunner, nights: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(nights["out"], out)
    history = out / "tables" / "history"
    # A run killed after writing its executions file but before its runs file (the commit).
    orphan = history / "executions" / "batch-20990101T000000000Z-00000000.parquet"
    shutil.copy(next((history / "executions").iterdir()), orphan)
    # A history file damaged by hand.
    damaged = history / "runs" / "batch-20000101T000000000Z-00000000.parquet"
    damaged.write_bytes(b"not parquet")
    result = runner.invoke(app, ["batch", str(nights["night-3"]), "-o", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert not orphan.exists()
    warnings = [line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and str(damaged) in warnings[0] and "skipped" in warnings[0]
    assert "0 runs recorded" in result.output
    assert "cannot read this history file" in (out / "index.html").read_text()
    damaged.unlink()
    assert _table(out, "runs").height == 5


def test_job_key_regex_groups_other_applications(nights: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    _batch(nights["night-2"], out, "--job-key", r"^(\w+)-")
    runs = _table(out, "runs")
    assert runs["job_key"].to_list() == ["sea", "sea"]
    index = (out / "index.html").read_text()
    assert "1 job, 0 whose last run regressed" in index
    assert "<code>sea</code>" in _jobs_section(index)


def test_job_key_from_a_spark_property_of_real_logs() -> None:
    rule = JobKeyRule("spark:spark.sql.shuffle.partitions")
    keys = []
    for side in ("baseline", "candidate"):
        application = api.analyze(_pair_file("partitions", side)).application
        keys.append(rule.key(application.name, dict(application.spark_properties)))
    assert keys == ["8", "400"]
    with pytest.raises(UsageError, match="job-key"):
        BatchOptions(job_key="(")
    with pytest.raises(UsageError, match="regression-threshold"):
        BatchOptions(regression_threshold=0.5)


def test_runs_recorded_out_of_order_compare_with_earlier_runs_only(
    nights: dict[str, Path],
) -> None:
    """Runs recorded newest first: each compares only with runs that started before it, so none
    has an earlier run to regress against, and the slow night's findings are still new."""
    docs = {
        p.parent.name: parse_report(p.read_bytes())
        for p in nights["out"].glob("apps/*/report.json")
    }
    inputs = [
        RunInput(key, doc.application.name or "", doc.log.path, 0, doc)
        for key, doc in docs.items()
        if doc.application.name == JOB
    ]
    inputs.sort(key=lambda i: -(i.doc.application.start_ms or 0))
    history = History()
    for item in inputs:  # one batch per run, newest first
        records = new_records(history, [item], RegressionRule(), 1)
        history.runs += records.runs
        history.findings += records.findings
    assert [r.regressed for r in history.runs] == [False, False, False]
    # The slow night comes first, so every one of its findings is new; an older run's finding
    # with a key seen in a newer one is new too, since only earlier runs count.
    assert all(f.is_new for f in history.findings)
    again = new_records(history, inputs, RegressionRule(), 2)
    assert again.empty


def test_store_lists_no_file_of_an_empty_history(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "tables")
    assert store.load().runs == [] and store.remove_uncommitted() == []


def _streaming_run(directory: Path) -> Path:
    manifest = directory / ".manifest.json"
    if manifest.is_file():
        for entry in json.loads(manifest.read_text())["logs"]:
            if entry["workload"] == "stream-keeps-up":
                return directory / entry["file"]
    pytest.skip(f"no keeping-up streaming sample in {directory}")


def test_runs_of_a_streaming_job_are_one_job_compared_with_its_previous_run(
    tmp_path: Path,
) -> None:
    """Two runs of the keeping-up stream (written by Spark 3.5, then by 4.3) on two nights: one
    job key, the application name, as for any job; the second run points at the first."""
    older = _streaming_run(SAMPLES / "spark-3.5")
    newer = _streaming_run(SAMPLES)
    out = tmp_path / "out"
    first, second = sorted((older, newer), key=lambda p: api.analyze(p).application.start_ms or 0)
    _batch(_night(tmp_path / "night-1", [first]), out)
    _batch(_night(tmp_path / "night-2", [second]), out)
    runs = _table(out, "runs").sort("run_start_ms")
    assert runs["job_key"].to_list() == ["sea-stream-keeps-up"] * 2
    assert runs["previous_app_key"].to_list() == [None, runs["app_key"][0]]
    executions = _table(out, "executions")
    assert executions.height == runs["n_executions"].sum()
    index = (out / "index.html").read_text()
    assert "<code>sea-stream-keeps-up</code>" in _jobs_section(index)


def test_interactive_sessions_sharing_a_name_never_regress(tmp_path: Path) -> None:
    # Two unrelated clusters' applications, both named "Spark shell" (17.7 s, then 5m 56s): one
    # job by their name, but the second is no regression of the first.
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("streaming_eventlog.zstd", "databricks-aws"):
        source = PUBLIC_CORPUS / name
        if source.is_dir():
            shutil.copytree(source, logs / name)
        else:
            shutil.copy(source, logs / name)
    out = tmp_path / "out"
    summary = run_batch(str(logs), str(out), BatchOptions(jobs=1))
    assert summary.n_recorded == 2 and summary.n_regressed == 0
    runs = pl.read_parquet(out / "tables" / "history" / "runs")
    assert runs["job_key"].unique().to_list() == ["Spark shell"]
    assert not any(runs["regressed"].to_list())
    assert not list((out / "apps").glob(f"*/{DIFF_FILE}"))
