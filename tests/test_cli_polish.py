"""The command line reads like a command line: flags as flags, `LOG` in usage, paths in `apps`,
an application found by id with `--dir`, widths and sections, and hints naming real options."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from eventlog_samples import REPO, SAMPLES, sample
from typer.testing import CliRunner

from analyzer import api
from analyzer.cli import EXIT_INPUT_ERROR, EXIT_USAGE, app
from analyzer.errors import LogNotFoundError, UsageError

SAMPLE = SAMPLES / "local-1795320253957.snappy"
SAMPLE_ID = "local-1795320253957"


def _sample() -> Path:
    return sample(SAMPLE.name)


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("report", "Usage: spark-explain report [OPTIONS] LOG\n"),
        ("apps", "Usage: spark-explain apps [OPTIONS] LOG_DIR\n"),
        ("batch", "Usage: spark-explain batch [OPTIONS] LOG_DIR\n"),
    ],
)
def test_help_shows_flags_as_flags(runner: CliRunner, command: str, usage: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith(usage)
    assert "<bool>" not in out and "{" not in out
    assert re.search(r"^  --lenient +Skip", out, re.M) or command == "apps"
    assert re.search(r"^  --help +Show this message", out, re.M)


def test_apps_shows_each_logs_path_and_size(runner: CliRunner) -> None:
    _sample()
    result = runner.invoke(app, ["apps", str(SAMPLES)])
    assert result.exit_code == 0
    header, *rows = result.stdout.splitlines()
    assert header.split()[-2:] == ["SIZE", "PATH"]
    row = next(r for r in rows if r.startswith(SAMPLE_ID))
    assert row.endswith(f"98.0 KiB  {SAMPLE}")


def test_report_finds_an_application_by_id_in_a_directory(runner: CliRunner) -> None:
    _sample()
    by_id = runner.invoke(
        app, ["report", "--dir", str(SAMPLES), SAMPLE_ID, "--sections", "summary"]
    )
    assert by_id.exit_code == 0, by_id.stderr
    assert by_id.stdout.startswith(f"EXPLAIN ANALYZE · sea-skewed-join · {SAMPLE_ID}\n")
    by_name = runner.invoke(app, ["report", "-d", str(SAMPLES), SAMPLE.name, "--sections", "jobs"])
    assert by_name.exit_code == 0 and by_name.stdout.startswith("Jobs · ")


def test_report_dir_with_no_match_is_one_line(runner: CliRunner) -> None:
    _sample()
    result = runner.invoke(app, ["report", "--dir", str(SAMPLES), "app-nope"])
    assert result.exit_code == EXIT_INPUT_ERROR
    assert result.stderr == (
        f"error: {SAMPLES}: no application 'app-nope' in this directory; list its applications "
        f"with: spark-explain apps {SAMPLES} [not-found]\n"
    )


def test_report_dir_with_two_copies_names_both(runner: CliRunner, tmp_path: Path) -> None:
    sample = _sample()
    first, second = tmp_path / "copy-a.snappy", tmp_path / "copy-b.snappy"
    shutil.copy(sample, first)
    shutil.copy(sample, second)
    result = runner.invoke(app, ["report", "--dir", str(tmp_path), SAMPLE_ID])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.count("\n") == 1
    assert f"2 logs in {tmp_path} hold application '{SAMPLE_ID}': " in result.stderr
    assert str(first) in result.stderr and str(second) in result.stderr
    assert result.stderr.endswith("give the path of one [usage]\n")
    with pytest.raises(UsageError):
        api.find_log(str(tmp_path), SAMPLE_ID)
    assert api.find_log(str(tmp_path), first.name) == str(first)
    with pytest.raises(LogNotFoundError):
        api.find_log(str(tmp_path / "missing"), SAMPLE_ID)


def test_width_defaults_to_100_off_a_terminal_and_can_be_set(runner: CliRunner) -> None:
    sample = str(_sample())
    piped = runner.invoke(app, ["report", sample, "--sections", "summary,plans"])
    assert max(len(line) for line in piped.stdout.splitlines()) == 100
    wide = runner.invoke(app, ["report", sample, "--width", "160", "--sections", "summary,plans"])
    assert "═" * 160 in wide.stdout
    assert max(len(line) for line in wide.stdout.splitlines()) <= 160
    narrow = runner.invoke(app, ["report", sample, "--width", "20"])
    assert narrow.exit_code == EXIT_USAGE
    assert narrow.stderr.startswith("error: --width must be between 60 and 1000, not 20")


def test_bad_sections_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(app, ["report", str(_sample()), "--sections", "plans,graphs"])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.startswith("error: unknown --sections graphs; use all or names from")


def _options_of(command: str) -> set[str]:
    click_command = typer.main.get_command(app)
    sub = click_command.commands[command]  # type: ignore[attr-defined]
    return {opt for param in sub.params for opt in param.opts}


def test_error_hints_name_only_options_that_exist() -> None:
    """Every `--option` a hint or message of the analyzer names is an option of `report` or
    `batch` (the commands that read whole logs); `--lenient` is an option of both."""
    named: set[str] = set()
    for path in (REPO / "analyzer").rglob("*.py"):
        for hint in re.findall(r'hint=(?:f?"[^"]*"|\(\s*(?:f?"[^"]*"\s*)+\))', path.read_text()):
            named |= set(re.findall(r"--[a-z][a-z-]*", hint))
    assert "--lenient" in named
    report, batch = _options_of("report"), _options_of("batch")
    assert "--lenient" in report and "--lenient" in batch
    assert named <= report | batch | {"--help"}, named - report - batch


def test_a_report_piped_into_a_reader_that_stops_ends_quietly() -> None:
    # `spark-explain report LOG | head`: the report is written as it is made; once the reader
    # is gone the command stops, with no traceback and no error.
    cli = Path(sys.executable).parent / "spark-explain"
    command = [str(cli), "report", str(SAMPLE), "--metrics", "full", "--format", "json"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith(b"{")
        process.stdout.close()
        stderr = process.stderr.read()
        assert process.wait(timeout=120) == 0
    assert stderr == b""
