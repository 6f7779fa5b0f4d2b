"""`-o` pointing where a report cannot be written: one line naming the path and the reason,
exit status 1, and no temporary file left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from eventlog_builder import application_start, event_line
from eventlog_samples import SAMPLES
from typer.testing import CliRunner

from analyzer.cli import EXIT_INPUT_ERROR, app
from analyzer.errors import CannotWriteError
from analyzer.output import write_atomic

LOG = SAMPLES / "local-1795320224872"


def _read_only_dir(tmp_path: Path) -> Path:
    """A directory this process cannot create files in (root ignores mode bits; sysfs refuses)."""
    if os.geteuid() == 0:
        return Path("/sys/kernel")
    path = tmp_path / "read-only"
    path.mkdir()
    path.chmod(0o555)
    return path


def _targets(tmp_path: Path) -> dict[str, Path]:
    a_dir = tmp_path / "a-dir"
    a_dir.mkdir()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    return {
        "a directory": a_dir,
        "under a regular file": a_file / "report.html",
        "deeper under a regular file": a_file / "sub" / "report.html",
        "under /proc": Path("/proc/report.json"),
        "in a read-only directory": _read_only_dir(tmp_path) / "report.json",
    }


def _leftovers(tmp_path: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    "where",
    [
        "a directory",
        "under a regular file",
        "deeper under a regular file",
        "under /proc",
        "in a read-only directory",
    ],
)
def test_write_atomic_cannot_write_is_one_error(tmp_path: Path, where: str) -> None:
    target = _targets(tmp_path)[where]
    with pytest.raises(CannotWriteError) as info:
        write_atomic(target, "report")
    message = str(info.value)
    assert str(target) in message
    assert message.endswith("[cannot-write]")
    assert ": cannot write" in message
    assert _leftovers(tmp_path) == []


def test_write_atomic_into_a_directory_leaves_no_temp_file(tmp_path: Path) -> None:
    target = _targets(tmp_path)["a directory"]
    with pytest.raises(CannotWriteError, match=r"is a directory"):
        write_atomic(target, "report")
    assert list(target.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-dir", "a-file"]


def test_write_atomic_cli_output_to_a_directory_is_one_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    target = _targets(tmp_path)["a directory"]
    result = runner.invoke(app, ["report", str(LOG), "-o", str(target)])
    assert result.exit_code == EXIT_INPUT_ERROR
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {target}: ")
    assert lines[0].endswith("[cannot-write]")
    assert _leftovers(tmp_path) == []


def test_write_atomic_still_writes_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "report.txt"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two"
    assert _leftovers(tmp_path) == []


def test_no_file_is_written_from_log_content(runner: CliRunner, tmp_path: Path) -> None:
    """Names and ids in a log that look like paths never become files: only `-o` is written."""
    lines = LOG.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(b'{"Event":"SparkListenerApplicationStart"'):
            start = application_start(
                "../../escaped-id",
                "../../escaped-name",
                timestamp_ms=1,
                user="/tmp/escaped-user",
                **{"App Attempt ID": "../escaped-attempt"},
            )
            lines[i] = event_line(start).rstrip(b"\n")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "app-1").write_bytes(b"\n".join(lines))
    work = tmp_path / "work" / "deeper"
    work.mkdir(parents=True)
    before = set(tmp_path.rglob("*"))
    for fmt in ("text", "json", "html"):
        result = runner.invoke(
            app, ["report", str(log_dir / "app-1"), "-o", str(work / f"report.{fmt}")]
        )
        assert result.exit_code == 0, result.output
    created = set(tmp_path.rglob("*")) - before
    assert created == {work / "report.text", work / "report.json", work / "report.html"}
    assert not list(Path("/tmp").glob("escaped-*"))
