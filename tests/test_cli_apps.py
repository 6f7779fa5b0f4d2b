"""`spark-explain apps`: the table, JSON, and one-line errors with exit status 1."""

from __future__ import annotations

import json

from eventlog_samples import BAD, PUBLIC, needs_public
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
