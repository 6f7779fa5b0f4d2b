"""Smaller hostile cases: `-j` beyond the cores, a batch summary that names only what it wrote,
a pipe where a rolling log's events file should be, and files of /proc whose size says 0."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from eventlog_samples import SAMPLES
from typer.testing import CliRunner

from analyzer.batch.limits import available_cores
from analyzer.cli import EXIT_INPUT_ERROR, app

LOG = SAMPLES / "local-1795320224872"
ROLLING = SAMPLES / "eventlog_v2_local-1795320584980"


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOG, logs / LOG.name)
    return logs


def test_jobs_beyond_the_cores_are_capped_with_a_warning(
    runner: CliRunner, log_dir: Path, tmp_path: Path
) -> None:
    cores = available_cores()
    result = runner.invoke(app, ["batch", str(log_dir), "-o", str(tmp_path / "out"), "-j", "60"])
    assert result.exit_code == 0, result.output
    assert (
        f"warning: --jobs 60 is more than the {cores} cores this process may use: "
        f"running {cores} workers"
    ) in result.output
    result = runner.invoke(app, ["batch", str(log_dir), "-o", str(tmp_path / "out2"), "-j", "1"])
    assert "warning" not in result.output


def test_the_summary_names_the_index_only_when_written(
    runner: CliRunner, log_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["batch", str(log_dir), "-o", str(out), "-j", "1"])
    assert result.exit_code == 0, result.output
    assert f"index {out / 'index.html'}" in result.output
    # index.html cannot be written (a directory holding a file stands in its place).
    (out / "index.html").unlink()
    (out / "index.html").mkdir()
    (out / "index.html" / "keep").write_text("x")
    result = runner.invoke(app, ["batch", str(log_dir), "-o", str(out), "-j", "1"])
    assert result.exit_code == EXIT_INPUT_ERROR, result.output
    assert "[cannot-write]" in result.output
    summary = result.output.strip().splitlines()[-1]
    assert "index not written" in summary
    assert "index.html" not in summary


@pytest.mark.parametrize("name", ["events_1", "events_1_local-1795320584980.zstd"])
def test_a_pipe_as_a_rolling_events_file_is_named(
    runner: CliRunner, tmp_path: Path, name: str
) -> None:
    rolling = tmp_path / ROLLING.name
    rolling.mkdir()
    for part in ROLLING.iterdir():
        if not part.name.startswith("events_1_"):
            shutil.copy(part, rolling / part.name)
    os.mkfifo(rolling / name)
    result = runner.invoke(app, ["report", str(rolling)])
    assert result.exit_code == EXIT_INPUT_ERROR, result.output
    assert result.output == (
        f"error: {rolling}: {name} in the rolling event-log directory cannot be read: not a "
        "regular file or directory (a named pipe); copy the rolling directory's events files as "
        "regular files [not-found]\n"
    )


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_proc_files_are_not_called_empty(runner: CliRunner) -> None:
    result = runner.invoke(app, ["report", "/proc/self/mem"])
    assert result.exit_code == EXIT_INPUT_ERROR
    assert "empty" not in result.output
    assert "cannot read: Input/output error" in result.output
    result = runner.invoke(app, ["report", "/proc/self/status"])
    assert result.exit_code == EXIT_INPUT_ERROR
    assert "empty" not in result.output
    assert "[not-an-event-log]" in result.output


def test_an_empty_file_is_still_empty(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "app-1"
    path.write_bytes(b"")
    result = runner.invoke(app, ["report", str(path)])
    assert result.output == f"error: {path}: event log file is empty (0 bytes) [empty-log]\n"
