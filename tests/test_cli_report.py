"""The `report` command and the CLI's global options, run through typer's CliRunner on real logs."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from eventlog_samples import PUBLIC, needs_public
from typer.testing import CliRunner

from analyzer import __version__
from analyzer.cli import EXIT_INPUT_ERROR, EXIT_USAGE, app

pytestmark = needs_public
LOG = str(PUBLIC / "local-1642039451826")
MALFORMED = str(PUBLIC / "malformed_json_eventlog.zstd")


def _ok(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def _one_line_error(result: object, code: int) -> None:
    assert result.exit_code == code  # type: ignore[attr-defined]
    err = result.stderr  # type: ignore[attr-defined]
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err + result.stdout  # type: ignore[attr-defined]


def test_text_report_to_stdout_by_default(runner: CliRunner) -> None:
    out = _ok(runner, "report", LOG)
    assert out.startswith("EXPLAIN ANALYZE · Spark shell · local-1642039451826")
    assert "SQL execution 0 " in out and "SQL execution 1 " in out
    assert "\x1b[" not in out  # not a terminal: never coloured


@pytest.mark.parametrize(
    ("level", "present", "absent"),
    [
        ("none", "Exchange #3", "· shuffle write time"),
        ("summary", "· shuffle write time", "├─ task "),
        ("full", "├─ task ", "no such text"),
    ],
)
def test_metrics_levels(runner: CliRunner, level: str, present: str, absent: str) -> None:
    out = _ok(runner, "report", LOG, "--metrics", level, "--no-color")
    assert present in out and absent not in out
    assert f"metrics {level}" in out


def test_execution_filter_is_repeatable(runner: CliRunner) -> None:
    out = _ok(runner, "report", LOG, "--execution", "1", "-e", "0", "--metrics", "none")
    assert "Showing 2 of 2 SQL executions (chosen by id)" in out
    assert out.index("SQL execution 0 ") < out.index("SQL execution 1 ")  # by start, not by option
    out = _ok(runner, "report", LOG, "--execution", "1", "--metrics", "none")
    assert "SQL execution 0 " not in out and "SQL execution 1 " in out


def test_top_keeps_the_slowest(runner: CliRunner) -> None:
    out = _ok(runner, "report", LOG, "--top", "1", "--metrics", "none")
    assert "the 1 slowest" in out and "SQL execution 0 " in out and "SQL execution 1 " not in out


@pytest.mark.parametrize(
    ("name", "marker"),
    [("r.txt", "EXPLAIN ANALYZE"), ("r.json", '"format_version"'), ("r.html", "<html")],
)
def test_output_file_format_by_extension(
    runner: CliRunner, tmp_path: Path, name: str, marker: str
) -> None:
    target = tmp_path / "sub" / name
    assert _ok(runner, "report", LOG, "-o", str(target)) == ""
    assert marker in target.read_text(encoding="utf-8")
    assert [p.name for p in target.parent.iterdir()] == [name]  # no temporary file left behind


def test_report_files_get_ordinary_permissions(runner: CliRunner, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    mask = os.umask(0o022)
    try:
        _ok(runner, "report", LOG, "-o", str(target))
    finally:
        os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_format_option_beats_extension(runner: CliRunner, tmp_path: Path) -> None:
    doc = json.loads(_ok(runner, "report", LOG, "--format", "json"))
    assert doc["application"]["id"] == "local-1642039451826"
    target = tmp_path / "report.html"
    _ok(runner, "report", LOG, "-f", "text", "-o", str(target))
    assert target.read_text(encoding="utf-8").startswith("EXPLAIN ANALYZE")


def test_output_file_is_never_coloured(runner: CliRunner, tmp_path: Path) -> None:
    target = tmp_path / "r.txt"
    _ok(runner, "report", LOG, "-o", str(target))
    assert "\x1b[" not in target.read_text(encoding="utf-8")


def test_lenient_skips_the_malformed_line(runner: CliRunner) -> None:
    _one_line_error(runner.invoke(app, ["report", MALFORMED]), EXIT_INPUT_ERROR)
    out = _ok(runner, "report", MALFORMED, "--lenient", "--metrics", "none")
    assert "note: 1 malformed line skipped (--lenient)" in out
    # The skipped line held the settings: the advice's "(default)" is an assumption, said so.
    assert "note: the log has no Spark settings (no environment event)" in out
    assert "the log has no Spark settings" not in _ok(runner, "report", LOG, "--metrics", "none")


def test_missing_file_is_an_input_error(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(tmp_path / "nope")])
    _one_line_error(result, EXIT_INPUT_ERROR)
    assert "[not-found]" in result.stderr


BAD_OPTIONS = [
    ["--metrics", "all"],
    ["--execution", "99"],
    ["--top", "0"],
    ["--top", "-3"],
    ["--threshold", "nope=1"],
    ["--threshold", "gc_share=lots"],
    ["--threshold", "gc_share"],
    ["--price-per-core-hour", "abc"],
    ["--price-per-core-hour", "-1"],
    # Values click cannot convert: one line too, not click's usage block.
    ["--top", "abc"],
    ["--width", "abc"],
    ["--execution", "x"],
]


@pytest.mark.parametrize("fmt", ["text", "html", "json"])
@pytest.mark.parametrize("args", BAD_OPTIONS, ids=lambda a: " ".join(a))
def test_bad_option_values_are_usage_errors_in_every_format(
    runner: CliRunner, args: list[str], fmt: str, tmp_path: Path
) -> None:
    for output in ([], ["-o", str(tmp_path / f"report.{fmt}")]):
        result = runner.invoke(app, ["report", LOG, "-f", fmt, *args, *output])
        _one_line_error(result, EXIT_USAGE)
        assert result.stderr.rstrip().endswith("[usage]"), result.stderr
        assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing written, not even an empty page


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--price-per-core-hour", "abc"],
        ["diff", "--top", "x", LOG],
        ["batch", "-o", "out", "--jobs", "many"],
        ["batch", "-o", "out", "--regression-threshold", "high"],
    ],
    ids=lambda a: " ".join(a),
)
def test_an_unconvertible_value_is_one_line_naming_the_option(
    runner: CliRunner, args: list[str], tmp_path: Path
) -> None:
    command, *rest = args
    rest = [str(tmp_path / "out") if a == "out" else a for a in rest]
    result = runner.invoke(app, [command, LOG, *rest])
    _one_line_error(result, EXIT_USAGE)
    option = next(a for a in rest if a.startswith("-") and a != "-o")
    assert option in result.stderr and result.stderr.rstrip().endswith("[usage]")
    assert "Usage:" not in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args",
    [["report", ""], ["report", "--dir", "", "app-1"], ["apps", ""], ["diff", "", LOG]],
    ids=lambda a: " ".join(a) or "empty",
)
def test_an_empty_log_path_is_a_usage_error_that_says_so(
    runner: CliRunner, args: list[str]
) -> None:
    result = runner.invoke(app, args)
    _one_line_error(result, EXIT_USAGE)
    assert result.stderr == (
        "error: no log path given (an empty path); give the path or URL of an event log or a "
        "log directory [usage]\n"
    )


def test_unknown_format_is_a_usage_error(runner: CliRunner) -> None:
    _one_line_error(runner.invoke(app, ["report", LOG, "--format", "pdf"]), EXIT_USAGE)


def test_unknown_option_is_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(app, ["report", LOG, "--colour"])
    assert result.exit_code == EXIT_USAGE
    assert "Traceback" not in result.output


def test_version(runner: CliRunner) -> None:
    assert _ok(runner, "--version") == f"spark-explain {__version__}\n"


@pytest.mark.parametrize("command", [[], ["report"], ["apps"], ["batch"]])
def test_help_of_every_command(runner: CliRunner, command: list[str]) -> None:
    out = _ok(runner, *command, "--help")
    assert "Usage:" in out
    if command == ["report"]:
        for option in ("--output", "--format", "--execution", "--top", "--metrics", "--lenient"):
            assert option in out
