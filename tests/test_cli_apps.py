"""`spark-explain apps`: the table, JSON, and one-line errors with exit status 1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from eventlog_samples import BAD, PUBLIC, SAMPLES, needs_public
from typer.testing import CliRunner

from analyzer.cli import app


@needs_public
def test_apps_table(runner: CliRunner) -> None:
    result = runner.invoke(app, ["apps", str(PUBLIC)])
    assert result.exit_code == 0, result.output
    assert "application_1751493828576_0001" in result.stdout
    assert "NDS - Power Run" in result.stdout
    assert "databricks" in result.stdout
    assert "rolling" in result.stdout


@needs_public
def test_apps_json(runner: CliRunner) -> None:
    result = runner.invoke(app, ["apps", str(PUBLIC), "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert len(rows) == 12
    assert {r["layout"] for r in rows} == {"single", "rolling", "databricks"}


def test_apps_lists_bad_entries_without_failing(runner: CliRunner) -> None:
    result = runner.invoke(app, ["apps", str(BAD)])
    assert result.exit_code == 0
    assert "[missing-rolling-file]" in result.stdout
    assert "Traceback" not in result.output


def test_apps_missing_dir_is_one_line_exit_1(runner: CliRunner) -> None:
    result = runner.invoke(app, ["apps", "/no/such/dir"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: /no/such/dir: no such directory [not-found]\n"


def test_apps_on_a_file_is_one_line_exit_1(runner: CliRunner) -> None:
    result = runner.invoke(app, ["apps", str(BAD / "empty_eventlog")])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {BAD / 'empty_eventlog'}: not a directory")
    assert lines[0].endswith("[not-found]")
    assert "Traceback" not in result.output


def test_apps_remote_without_driver_is_one_line_exit_1(runner: CliRunner) -> None:
    result = runner.invoke(app, ["apps", "nosuchscheme://bucket/logs"])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("[remote-storage]")


def _unreadable_run(args: list[str]) -> list[str]:
    """The command line running the CLI with `args` as a process that file permissions bind:
    root ignores mode bits unless its capabilities to do so are dropped (`setpriv`)."""
    command = [sys.executable, "-c", "from analyzer.cli import main; main()", *args]
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv reads every directory")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *command]


def test_an_unreadable_directory_is_a_row_not_the_end_of_the_listing(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "local-1795320174558.zstd", logs)
    locked = logs / "locked"
    locked.mkdir()
    (logs / "loop-a").symlink_to("loop-b")
    (logs / "loop-b").symlink_to("loop-a")
    locked.chmod(0)
    try:
        listed = subprocess.run(
            _unreadable_run(["apps", str(logs), "--json"]), capture_output=True, text=True
        )
        found = subprocess.run(
            _unreadable_run(["report", "--dir", str(logs), "local-1795320174558", "-f", "json"]),
            capture_output=True,
            text=True,
        )
    finally:
        locked.chmod(0o755)
    assert listed.returncode == 0, listed.stderr
    rows = {Path(r["path"]).name: r for r in json.loads(listed.stdout)}
    assert rows["local-1795320174558.zstd"]["completed"] is True
    assert rows["locked"]["error"].endswith(
        "cannot list directory: Permission denied; check its permissions: the user running "
        "spark-explain must be able to read it [not-found]"
    )
    assert "a loop of symbolic links: fix or remove the link" in rows["loop-a"]["error"]
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["application"]["id"] == "local-1795320174558"
