"""An output path that is an input is refused with one line, and nothing is written: `-o` onto
the log, onto a part of a rolling or Databricks log (by any spelling, link or hard link), into
such a log's directory, and batch's output directory against the log directory."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from eventlog_samples import SAMPLES, public
from typer.testing import CliRunner

from analyzer import api
from analyzer.cli import EXIT_INPUT_ERROR, app
from analyzer.errors import OutputIsInputError

LOG = SAMPLES / "local-1795320224872"
ROLLING = SAMPLES / "eventlog_v2_local-1795320584980"
OTHER = SAMPLES / "local-1795320174558.zstd"


def _digests(root: Path) -> dict[str, str]:
    """Every file under `root` (or `root` itself) with the hash of its bytes."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _refused(args: list[str], *keep: Path) -> str:
    """Run the CLI; assert it exits 1 with one `output-is-input` line, and `keep` unchanged."""
    before = {k: v for path in keep for k, v in _digests(path).items()}
    result = CliRunner().invoke(app, args)
    assert result.exit_code == EXIT_INPUT_ERROR, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ") and lines[0].endswith("[output-is-input]"), lines
    after = {k: v for path in keep for k, v in _digests(path).items()}
    assert after == before
    return lines[0]


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    """A copy of a plain log, a zstd log, a rolling log and a Databricks log."""
    shutil.copy(LOG, tmp_path / LOG.name)
    shutil.copy(OTHER, tmp_path / OTHER.name)
    shutil.copytree(ROLLING, tmp_path / ROLLING.name)
    shutil.copytree(public("db_sim_eventlog"), tmp_path / "db")
    return tmp_path


@pytest.mark.parametrize("fmt", ["text", "html", "json", "markdown"])
def test_report_onto_its_log_is_refused(copies: Path, fmt: str) -> None:
    log = copies / LOG.name
    _refused(["report", str(log), "-o", str(log), "--format", fmt], copies)


def test_report_onto_its_log_by_other_spellings_and_links_is_refused(copies: Path) -> None:
    log = copies / LOG.name
    (copies / "sub").mkdir()
    os.symlink(log, copies / "link")
    os.link(log, copies / "hard")
    spellings = [
        str(copies / "sub" / ".." / LOG.name),
        str(copies / "link"),
        str(copies / "hard"),
    ]
    for output in spellings:
        _refused(["report", str(log), "-o", output], copies)
    # The log named through a link or a URL, the output its real path.
    _refused(["report", str(copies / "link"), "-o", str(log)], copies)
    _refused(["report", f"file://{log}", "-o", str(log)], copies)


def test_report_onto_a_part_of_a_rolling_log_is_refused(copies: Path) -> None:
    rolling = copies / ROLLING.name
    for part in sorted(rolling.iterdir()):
        if part.name.startswith("events_"):
            _refused(["report", str(rolling), "-o", str(part)], copies)
    # A new file inside the rolling directory is refused too: it would change the log.
    line = _refused(["report", str(rolling), "-o", str(rolling / "events_9_x")], copies)
    assert "inside the rolling event log" in line
    assert not (rolling / "events_9_x").exists()


def test_report_onto_a_part_of_a_databricks_log_is_refused(copies: Path) -> None:
    db = copies / "db"
    for part in ("eventlog", "eventlog-2021-06-15--15-00.gz", "report.html"):
        _refused(["report", str(db), "-o", str(db / part)], copies)


def test_diff_onto_either_log_is_refused(copies: Path) -> None:
    a, b = copies / LOG.name, copies / OTHER.name
    _refused(["diff", str(a), str(b), "-o", str(b)], copies)
    _refused(["diff", str(a), str(b), "-o", str(a), "--format", "json"], copies)
    _refused(["diff", str(a), str(copies / ROLLING.name), "-o", str(copies / ROLLING.name / "x")])


def test_report_with_dir_onto_the_log_found_is_refused(copies: Path) -> None:
    log = copies / LOG.name
    _refused(["report", "--dir", str(copies), LOG.name, "-o", str(log)], copies)


def test_api_writes_refuse_their_inputs(copies: Path) -> None:
    log = copies / LOG.name
    before = _digests(log)
    analysis = api.analyze(log)
    with pytest.raises(OutputIsInputError):
        api.write_report(analysis, log)
    with pytest.raises(OutputIsInputError):
        api.write_diff(api.diff(analysis, analysis), log)
    assert _digests(log) == before


def test_report_next_to_its_log_is_written(runner: CliRunner, copies: Path) -> None:
    out = copies / "report.html"
    result = runner.invoke(app, ["report", str(copies / LOG.name), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_batch_output_inside_a_log_is_refused(copies: Path) -> None:
    out = copies / ROLLING.name / "reports"
    line = _refused(["batch", str(copies), "-o", str(out)], copies)
    assert ROLLING.name in line
    assert not out.exists()
    _refused(["batch", str(copies), "-o", str(copies / "db" / "out")], copies)


def test_batch_log_dir_inside_its_own_outputs_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    logs = out / "apps" / "logs"
    logs.mkdir(parents=True)
    shutil.copy(LOG, logs / LOG.name)
    _refused(["batch", str(logs), "-o", str(out)], logs)
    assert sorted(p.name for p in out.iterdir()) == ["apps"]
