"""Batch runs over real logs: reports, index, tables, incremental re-runs, bad logs, SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from eventlog_samples import PUBLIC, SAMPLES
from typer.testing import CliRunner

from analyzer.batch import run_batch
from analyzer.batch.fleet import TABLE_NAMES, polars_schema
from analyzer.batch.manifest import load_manifest
from analyzer.batch.runner import parse_since, report_dir_name
from analyzer.cli import app
from analyzer.errors import UsageError
from analyzer.eventlog.discover import discover_applications

REPORTS = ("report.html", "report.txt", "report.json")


def _sample_dir() -> Path:
    """The generated samples, or the public logs when the samples have not been generated."""
    for directory in (SAMPLES, PUBLIC):
        if directory.is_dir() and any(
            i.completed and i.error is None for i in discover_applications(str(directory))
        ):
            return directory
    pytest.skip("no sample or public event logs")


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A private copy of the completed sample logs, so tests may touch and break them."""
    src = _sample_dir()
    dest = tmp_path / "logs"
    dest.mkdir()
    for info in discover_applications(str(src)):
        if info.error is None and info.completed:
            path = Path(info.path)
            if path.is_dir():
                shutil.copytree(path, dest / path.name)
            else:
                shutil.copy2(path, dest / path.name)
    return dest


def _out(out: Path) -> list[str]:
    return ["-o", str(out), "-j", "2"]


def _report_dirs(out: Path) -> set[str]:
    return {p.parent.name for p in out.glob("*/report.json")}


def _visible_temp_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_cli_batch_writes_reports_index_and_tables(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["batch", str(logs), "-o", str(out), "-j", "2"])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.output
    infos = discover_applications(str(logs))
    expected = {report_dir_name(i.app_id, i.attempt_id, "") for i in infos}
    assert _report_dirs(out) == expected
    for name in expected:
        for report in REPORTS:
            assert (out / name / report).stat().st_size > 0, (name, report)
        doc = json.loads((out / name / "report.json").read_text())
        assert doc["application"]["id"] == name
    index = (out / "index.html").read_text()
    for name in expected:
        assert f'href="{name}/report.html"' in index
    assert "http://" not in index and "https://" not in index
    apps = pl.read_parquet(out / "tables" / "applications.parquet")
    assert sorted(apps["app_key"]) == sorted(expected)
    for table in TABLE_NAMES:
        frame = pl.read_parquet(out / "tables" / f"{table}.parquet")
        assert dict(frame.schema) == {k: v() for k, v in polars_schema(table).items()}
    executions = pl.read_parquet(out / "tables" / "executions.parquet")
    assert executions.height == int(apps["n_executions"].sum())
    metrics = pl.read_parquet(out / "tables" / "plan_node_metrics.parquet")
    assert metrics.height > 0
    assert (metrics["min"] <= metrics["median"]).all()
    assert (metrics["median"] <= metrics["max"]).all()
    assert not _visible_temp_files(out)


def test_second_run_skips_everything_and_touched_log_is_redone(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_batch(str(logs), str(out), jobs=2)
    assert first.n_failed == 0 and first.n_analyzed == first.n_selected > 0
    index_before = (out / "index.html").read_text()
    second = run_batch(str(logs), str(out), jobs=2)
    assert (second.n_analyzed, second.n_unchanged) == (0, first.n_analyzed)
    assert "0 analyzed" in second.line()
    assert (out / "index.html").read_text().count("<tr>") == index_before.count("<tr>")

    victim = sorted(p for p in logs.iterdir() if p.is_file())[0]
    before = {p: p.stat().st_mtime_ns for p in out.glob("*/report.json")}
    stamp = time.time() + 5
    os.utime(victim, (stamp, stamp))
    third = run_batch(str(logs), str(out), jobs=2)
    assert (third.n_analyzed, third.n_unchanged) == (1, first.n_analyzed - 1)
    changed = {p.parent.name for p, ns in before.items() if p.stat().st_mtime_ns != ns}
    entry = load_manifest(out).entries[victim.name]
    assert changed == {entry.report_dir}


def test_grown_in_progress_log_is_analyzed_again(logs: Path, tmp_path: Path) -> None:
    plain = [p for p in sorted(logs.iterdir()) if p.is_file() and "." not in p.name]
    if not plain:
        pytest.skip("no uncompressed sample log")
    lines = plain[0].read_bytes().splitlines(keepends=True)
    running = logs / f"{plain[0].name}.inprogress"
    for other in logs.iterdir():
        if other != plain[0]:
            shutil.rmtree(other) if other.is_dir() else other.unlink()
    plain[0].unlink()
    running.write_bytes(b"".join(lines[: len(lines) // 2]))
    out = tmp_path / "out"
    skipped = run_batch(str(logs), str(out))
    assert skipped.n_selected == 0
    first = run_batch(str(logs), str(out), include_incomplete=True)
    assert first.n_analyzed == 1
    with running.open("ab") as handle:
        handle.write(b"".join(lines[len(lines) // 2 :]))
    again = run_batch(str(logs), str(out), include_incomplete=True)
    assert again.n_analyzed == 1
    doc = json.loads(next(out.glob("*/report.json")).read_text())
    assert doc["log"]["size_bytes"] == running.stat().st_size


def test_bad_logs_are_listed_and_the_exit_status_is_non_zero(logs: Path, tmp_path: Path) -> None:
    zstd = sorted(logs.glob("*.zstd"))
    if not zstd:
        pytest.skip("no zstd sample log to corrupt")
    data = bytearray(zstd[0].read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = b"\xff" * 4096  # garbage inside a zstd frame
    (logs / "corrupt-1.zstd").write_bytes(bytes(data))
    (logs / "empty-log").write_bytes(b"")
    (logs / "notes.txt").write_text("shopping list: milk, eggs\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["batch", str(logs), "-o", str(out)])
    assert result.exit_code == 1, result.output
    summary = result.output.strip().splitlines()[-1]
    assert "3 failed" in summary, result.output
    index = (out / "index.html").read_text()
    for name in ("corrupt-1.zstd", "empty-log", "notes.txt"):
        assert name in index
    assert len(_report_dirs(out)) == len(
        [i for i in discover_applications(str(logs)) if i.error is None and i.completed]
    )
    # A bad log that did not change is not read again, but still counts.
    again = run_batch(str(logs), str(out))
    assert again.n_failed == 3 and again.n_analyzed == 0


def test_match_since_and_usage_errors(logs: Path, tmp_path: Path) -> None:
    infos = [i for i in discover_applications(str(logs)) if i.error is None]
    target = infos[0]
    out = tmp_path / "out"
    summary = run_batch(str(logs), str(out), match=f"^{target.app_id}$")
    assert summary.n_selected == 1 and _report_dirs(out) == {target.app_id}
    old = time.time() - 3 * 86400
    for path in logs.iterdir():
        os.utime(path, (old, old))
    assert run_batch(str(logs), str(tmp_path / "o2"), since="24h").n_selected == 0
    assert run_batch(str(logs), str(tmp_path / "o3"), since="7d").n_selected == len(infos)
    assert parse_since("90m") == 90 * 60_000
    with pytest.raises(UsageError):
        parse_since("yesterday")
    with pytest.raises(UsageError):
        run_batch(str(logs), str(out), match="(")
    with pytest.raises(UsageError):
        run_batch(str(logs), str(out), engine="dask")
    result = CliRunner().invoke(app, ["batch", str(logs), "-o", str(out), "--since", "soon"])
    assert result.exit_code == 2


def test_sigkill_mid_run_leaves_no_partial_report_and_rerun_completes(
    logs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    # More work than one sample directory, so the kill lands mid-run.
    for i, path in enumerate(sorted(p for p in logs.iterdir() if p.is_file())):
        for k in range(3):
            shutil.copy2(path, logs / f"copy{k}-{i}-{path.name}")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from analyzer.cli import main; main()",
            "batch",
            str(logs),
            *_out(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(out.glob("*/report.json")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for report_dir in out.iterdir():
        if report_dir.is_dir() and report_dir.name != "tables":
            for path in report_dir.iterdir():
                assert path.name in REPORTS or (
                    path.name.startswith(".") and path.name.endswith(".tmp")
                ), path
            for report in REPORTS:
                if (report_dir / report).exists():
                    assert (report_dir / report).stat().st_size > 0
            if (report_dir / "report.json").exists():
                json.loads((report_dir / "report.json").read_text())
    manifest = load_manifest(out)
    for entry in manifest.entries.values():
        assert entry.report_dir is None or (out / entry.report_dir / "report.json").is_file()

    rerun = run_batch(str(logs), str(out), jobs=2)
    assert rerun.n_failed == 0
    assert rerun.n_analyzed + rerun.n_unchanged == rerun.n_selected
    assert rerun.n_analyzed >= 1 or rerun.n_unchanged == rerun.n_selected
    assert not _visible_temp_files(out)
    assert len(load_manifest(out).entries) == rerun.n_selected
    assert (out / "index.html").is_file()
