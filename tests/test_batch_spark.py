"""The Spark engine on a local cluster writes the same JSON reports and tables as local runs, and
Spark SQL reads the job history tables."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import PUBLIC, SAMPLES
from oracle import missing_requirement
from typer.testing import CliRunner

from analyzer.batch.fleet import TABLE_NAMES, sort_columns
from analyzer.batch.history import HISTORY_TABLES
from analyzer.cli import app
from analyzer.eventlog.discover import discover_applications

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _frozen_copy(dest: Path) -> Path:
    """Copy the completed sample logs (or public logs) so both engines see the same directory."""
    for src in (SAMPLES, PUBLIC):
        infos = [i for i in discover_applications(str(src)) if i.completed and i.error is None]
        if src.is_dir() and infos:
            break
    else:
        pytest.skip("no sample or public event logs")
    dest.mkdir()
    for info in infos:
        path = Path(info.path)
        if path.is_dir():
            shutil.copytree(path, dest / path.name)
        else:
            shutil.copy2(path, dest / path.name)
    return dest


def _table(out: Path, table: str) -> pl.DataFrame:
    path = out / "tables" / f"{table}.parquet"
    frame = pl.read_parquet(path / "*.parquet" if path.is_dir() else path)
    return frame.sort(sort_columns(table))


def test_spark_engine_on_local_cluster_matches_local_engine(tmp_path: Path) -> None:
    reason = missing_requirement()
    if reason is not None:
        pytest.skip(reason)
    logs = _frozen_copy(tmp_path / "logs")
    local_out, spark_out = tmp_path / "local", tmp_path / "spark"
    runner = CliRunner()
    local = runner.invoke(app, ["batch", str(logs), "-o", str(local_out), "-j", "2"])
    assert local.exit_code == 0, local.output
    spark = runner.invoke(
        app,
        [
            "batch",
            str(logs),
            "-o",
            str(spark_out),
            "--engine",
            "spark",
            "--master",
            "local-cluster[2,1,1024]",
        ],
    )
    assert spark.exit_code == 0, spark.output
    assert "0 failed" in spark.output
    local_reports = sorted(p.relative_to(local_out) for p in local_out.glob("apps/*/report.*"))
    spark_reports = sorted(p.relative_to(spark_out) for p in spark_out.glob("apps/*/report.*"))
    assert local_reports == spark_reports and local_reports
    for rel in local_reports:
        if rel.suffix == ".json":
            assert json.loads((spark_out / rel).read_text()) == json.loads(
                (local_out / rel).read_text()
            ), rel
    for table in TABLE_NAMES:
        assert (spark_out / "tables" / f"{table}.parquet").is_dir()
        assert _table(spark_out, table).equals(_table(local_out, table)), table
    assert not [p for p in spark_out.rglob("*") if p.name.endswith(".tmp")]
    assert not list(spark_out.glob(".staging-*"))  # executors' reports were moved in place
    for rel in local_reports:  # the HTML and text reports are equal too, but for the clock
        if rel.suffix == ".txt":
            assert (spark_out / rel).read_text() == (local_out / rel).read_text(), rel

    # The job history: the same rows from both engines (but for the batch run's time), and
    # readable with Spark SQL as the documented table definitions say.
    for table in HISTORY_TABLES:
        frames = []
        for out in (local_out, spark_out):
            frame = pl.read_parquet(out / "tables" / "history" / table / "*.parquet")
            frame = frame.drop("batch_run_ms")
            frames.append(frame.sort(frame.columns))
        # One night has no earlier run whose advice it could have applied.
        assert frames[0].height > 0 or table == "advice_applied", table
        assert frames[0].equals(frames[1]), table
    from pyspark.sql import SparkSession

    spark_session = (
        SparkSession.builder.master("local[1]")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    try:
        history = spark_out / "tables" / "history"
        for table in HISTORY_TABLES:
            spark_session.sql(
                f"CREATE TEMPORARY VIEW history_{table} USING parquet "
                f"OPTIONS (path '{history / table}')"
            )
        n_runs, n_jobs = spark_session.sql(
            "SELECT count(*), count(DISTINCT job_key) FROM history_runs"
        ).collect()[0]
        assert n_runs == pl.read_parquet(history / "runs" / "*.parquet").height > 0
        assert 0 < n_jobs <= n_runs
        (n_findings,) = spark_session.sql(
            "SELECT count(*) FROM history_findings f JOIN history_runs r USING (app_key)"
        ).collect()[0]
        assert n_findings == pl.read_parquet(history / "findings" / "*.parquet").height
    finally:
        spark_session.stop()
