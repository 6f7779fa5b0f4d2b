"""Every bad input gets one line on stderr naming the file (and line), a slug, and exit status 1.

A cut last line is expected of a crashed or running application: it is dropped, the report says
so, and the exit status is 0. `--lenient` turns a malformed line into a counted note.
"""

from __future__ import annotations

import pytest
from eventlog_samples import BAD
from typer.testing import CliRunner

from analyzer.cli import EXIT_INPUT_ERROR, app


@pytest.mark.parametrize(
    ("name", "where", "slug", "says"),
    [
        ("empty_eventlog", "empty_eventlog: ", "empty-log", "empty"),
        (
            "blank_lines_eventlog",
            "blank_lines_eventlog: ",
            "empty-log",
            "event log holds only blank lines",
        ),
        ("malformed_mid_file", "malformed_mid_file:3: ", "malformed-line", "--lenient"),
        ("not_an_eventlog", "not_an_eventlog:1: ", "not-an-event-log", "not a Spark event log"),
        ("unknown_codec.bz2", "unknown_codec.bz2: ", "unknown-codec", "supported"),
        # Text under a name Spark never writes is no log, not something to decompress first.
        ("spark-defaults.conf", "spark-defaults.conf:1: ", "not-an-event-log", "not a Spark"),
        (
            "eventlog_v2_local-1700000000000",
            "eventlog_v2_local-1700000000000: ",
            "missing-rolling-file",
            "events_2",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_1(
    runner: CliRunner, name: str, where: str, slug: str, says: str
) -> None:
    for fmt in ("text", "json", "html"):
        result = runner.invoke(app, ["report", str(BAD / name), "--format", fmt])
        assert result.exit_code == EXIT_INPUT_ERROR
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith(f"error: {BAD / name}".removesuffix(name) + where)
        assert lines[0].endswith(f"[{slug}]")
        assert says in lines[0]
        assert "Traceback" not in result.output


def test_cut_last_line_is_dropped_and_said(runner: CliRunner) -> None:
    result = runner.invoke(app, ["report", str(BAD / "truncated_last_line")])
    assert result.exit_code == 0
    assert "the log ends in a cut line or frame" in result.stdout
    doc = runner.invoke(app, ["report", str(BAD / "truncated_last_line"), "-f", "json"]).stdout
    assert '"truncated_tail": true' in doc


def test_lenient_skips_and_counts_the_malformed_line(runner: CliRunner) -> None:
    result = runner.invoke(app, ["report", str(BAD / "malformed_mid_file"), "--lenient"])
    assert result.exit_code == 0
    assert "1 malformed line skipped (--lenient)" in result.stdout
