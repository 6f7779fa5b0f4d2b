"""Batch runs over real logs: reports, index, tables, incremental re-runs, bad logs, hostile input,
limits, SIGKILL, unwritable outputs."""

from __future__ import annotations

import fcntl
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
import zstandard
from eventlog_builder import (
    START_MS,
    accumulable,
    application_end,
    application_start,
    event_line,
    job_start,
    log_bytes,
    log_start,
    plan_node,
    sql_execution_end,
    sql_execution_start,
    sql_metric,
    stage_info,
    stage_submitted,
    task_end,
    tiny_application,
    write_log,
)
from eventlog_samples import PUBLIC, REPO, SAMPLES
from typer.testing import CliRunner

from analyzer import api
from analyzer.batch import BatchOptions, run_batch
from analyzer.batch.fleet import TABLE_NAMES, polars_schema
from analyzer.batch.jobs import Job, JobSettings
from analyzer.batch.layout import LOCK_NAME, MAX_KEY_BYTES, OWN_NAMES, app_key, is_app_key
from analyzer.batch.manifest import Manifest, fingerprint_log, load_manifest
from analyzer.batch.runner import parse_since
from analyzer.batch.worker import process_application
from analyzer.cli import EXIT_BUSY, app
from analyzer.errors import Strictness, UsageError
from analyzer.eventlog.discover import discover_applications
from analyzer.eventlog.source import resolve_log
from analyzer.report.options import ReportOptions

REPORTS = ("report.html", "report.txt", "report.json")
CLI = [sys.executable, "-c", "from analyzer.cli import main; main()"]
NOW_MS = 1_700_000_000_000
"""A fixed clock for reports compared byte for byte."""


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


def _manifest(out: Path) -> Manifest:
    return load_manifest(out / "manifest.json").manifest


def _app_keys(out: Path) -> set[str]:
    return {p.parent.name for p in out.glob("apps/*/report.json")}


def _visible_temp_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def _assert_consistent(out: Path) -> None:
    """Every manifest entry that claims reports has them, whole."""
    for entry in _manifest(out).entries.values():
        if entry.ok:
            assert entry.app_key is not None and is_app_key(entry.app_key)
            for report in REPORTS:
                assert (out / "apps" / entry.app_key / report).stat().st_size > 0
            json.loads((out / "apps" / entry.app_key / "report.json").read_text())


def _tiny_log(path: Path, app_id: str, name: str = "tiny") -> None:
    """A hand-written log of one application without jobs (hostile ids, not real workloads)."""
    write_log(path, tiny_application(app_id, name))


def test_cli_batch_writes_reports_index_and_tables(
    runner: CliRunner, logs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["batch", str(logs), "-o", str(out), "-j", "2"])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.output
    infos = discover_applications(str(logs))
    expected = {app_key(i.app_id, i.attempt_id, "") for i in infos}
    assert _app_keys(out) == expected
    for name in expected:
        for report in REPORTS:
            assert (out / "apps" / name / report).stat().st_size > 0, (name, report)
        doc = json.loads((out / "apps" / name / "report.json").read_text())
        assert doc["application"]["id"] == name
    assert {p.name for p in out.iterdir()} == OWN_NAMES
    index = (out / "index.html").read_text()
    for name in expected:
        assert f'href="apps/{name}/report.html"' in index
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


def test_findings_are_computed_once_per_application(
    logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = api.detect_all

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "detect_all", counting)
    infos = [i for i in discover_applications(str(logs)) if i.error is None][:4]
    for info in infos:
        job = Job(Path(info.path).name, info.path, "k", fingerprint_log(resolve_log(info.path)))
        result = process_application(job, JobSettings())
        assert result.ok and [name for name, _ in result.reports] == list(REPORTS)
        assert result.summary is not None
    assert len(calls) == len(infos)


def test_staged_reports_are_the_reports_and_a_staging_failure_is_one_line(
    logs: Path, tmp_path: Path
) -> None:
    """A local worker writes the reports into the staging directory, piece by piece, as the same
    bytes it would have returned; a report that cannot be staged is the output's fault."""
    info = next(i for i in discover_applications(str(logs)) if i.error is None)
    job = Job(Path(info.path).name, info.path, "app", fingerprint_log(resolve_log(info.path)))
    settings = JobSettings(report=ReportOptions(now_ms=NOW_MS))
    as_text = process_application(job, settings)
    staged = process_application(job, settings, tmp_path / "staging")
    assert staged.ok and staged.reports == () and staged.cannot_write is None
    assert staged.staged_dir == str(tmp_path / "staging" / "app")
    assert staged.summary == as_text.summary
    for name, text in as_text.reports:
        assert (tmp_path / "staging" / "app" / name).read_text(encoding="utf-8") == text

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the staging directory should be", encoding="utf-8")
    failed = process_application(job, settings, blocked)
    assert not failed.ok and failed.failure == "retry" and failed.traceback is None
    assert failed.error is not None and failed.error.endswith("[cannot-write]")
    assert "\n" not in failed.error and failed.cannot_write is not None
    assert failed.cannot_write[1] is not None and failed.cannot_write[1].startswith(str(blocked))


@pytest.mark.slow  # four batch runs over every sample log
def test_second_run_skips_everything_and_touched_log_is_redone(
    runner: CliRunner, logs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    options = BatchOptions(jobs=2)
    first = run_batch(str(logs), str(out), options)
    assert first.n_failed == 0 and first.n_analyzed == first.n_selected > 0
    index_before = (out / "index.html").read_text()
    second = run_batch(str(logs), str(out), options)
    assert (second.n_analyzed, second.n_unchanged) == (0, first.n_analyzed)
    assert "0 analyzed" in second.line()
    assert (out / "index.html").read_text().count("<tr>") == index_before.count("<tr>")

    victim = sorted(p for p in logs.iterdir() if p.is_file())[0]
    before = {p: p.stat().st_mtime_ns for p in out.glob("apps/*/report.json")}
    stamp = time.time() + 5
    os.utime(victim, (stamp, stamp))
    third = run_batch(str(logs), str(out), options)
    assert (third.n_analyzed, third.n_unchanged) == (1, first.n_analyzed - 1)
    changed = {p.parent.name for p, ns in before.items() if p.stat().st_mtime_ns != ns}
    assert changed == {_manifest(out).entries[victim.name].app_key}

    # Other thresholds change the reports: every log is analyzed again.
    tuned = runner.invoke(
        app, ["batch", str(logs), "-o", str(out), "--threshold", "skew_min_tasks=2"]
    )
    assert tuned.exit_code == 0, tuned.output
    assert f"{first.n_analyzed} analyzed, 0 unchanged" in tuned.output


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
    incomplete = BatchOptions(include_incomplete=True)
    first = run_batch(str(logs), str(out), incomplete)
    assert first.n_analyzed == 1
    with running.open("ab") as handle:
        handle.write(b"".join(lines[len(lines) // 2 :]))
    again = run_batch(str(logs), str(out), incomplete)
    assert again.n_analyzed == 1
    doc = json.loads(next(out.glob("apps/*/report.json")).read_text())
    assert doc["log"]["size_bytes"] == running.stat().st_size


@pytest.mark.slow  # two batch runs over every sample log
def test_bad_logs_are_listed_and_the_exit_status_is_non_zero(
    runner: CliRunner, logs: Path, tmp_path: Path
) -> None:
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
    result = runner.invoke(app, ["batch", str(logs), "-o", str(out)])
    assert result.exit_code == 1, result.output
    summary = result.output.strip().splitlines()[-1]
    assert "0 unchanged, 0 failed; 3 other entries failed;" in summary, result.output
    index = (out / "index.html").read_text()
    for name in ("corrupt-1.zstd", "empty-log", "notes.txt"):
        assert name in index
    assert len(_app_keys(out)) == len(
        [i for i in discover_applications(str(logs)) if i.error is None and i.completed]
    )
    # A bad log that did not change is not read again, but still counts.
    again = run_batch(str(logs), str(out))
    assert again.n_failed == 3 and again.n_analyzed == 0


@pytest.mark.slow  # a batch run over every sample log, and three more
def test_match_since_and_usage_errors(runner: CliRunner, logs: Path, tmp_path: Path) -> None:
    infos = [i for i in discover_applications(str(logs)) if i.error is None]
    target = infos[0]
    out = tmp_path / "out"
    summary = run_batch(str(logs), str(out), BatchOptions(match=f"^{target.app_id}$"))
    assert summary.n_selected == 1 and _app_keys(out) == {target.app_id}
    old = time.time() - 3 * 86400
    for path in logs.iterdir():
        os.utime(path, (old, old))
    assert run_batch(str(logs), str(tmp_path / "o2"), BatchOptions(since="24h")).n_selected == 0
    week = run_batch(str(logs), str(tmp_path / "o3"), BatchOptions(since="7d"))
    assert week.n_selected == len(infos)
    assert parse_since("90m") == 90 * 60_000
    for bad in (
        {"since": "yesterday"},
        {"match": "("},
        {"engine": "dask"},
        {"jobs": 0},
        {"max_memory_mb": 10},
        {"timeout_s": -1},
    ):
        with pytest.raises(UsageError):
            BatchOptions(**bad)  # type: ignore[arg-type]
    for args in (["--since", "soon"], ["--threshold", "nope=1"], ["--max-memory-mb", "12"]):
        result = runner.invoke(app, ["batch", str(logs), "-o", str(out), *args])
        assert result.exit_code == 2, (args, result.output)
        assert "[usage]" in result.output and "Traceback" not in result.output


def _one_good_and_two_broken(tmp_path: Path) -> Path:
    """A log directory of one sample log, a garbage file named like a zstd log and a CSV named
    like a log whose name holds an escape sequence."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    shutil.copy(SAMPLES / "local-1795320174558.zstd", log_dir)
    (log_dir / "local-1795320000000.zstd").write_bytes(b"not zstd at all\n" * 64)
    (log_dir / "app-20240101000000-0001\x1b[31m").write_bytes(b"a,b\n1,2\n")
    return log_dir


def test_cli_batch_names_each_failed_log_on_one_line(runner: CliRunner, tmp_path: Path) -> None:
    log_dir = _one_good_and_two_broken(tmp_path)
    out = tmp_path / "out"
    result = runner.invoke(app, ["batch", str(log_dir), "-o", str(out), "--include-incomplete"])
    assert result.exit_code == 1, result.output
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed: ")]
    assert failed == [
        f"failed: {log_dir}/app-20240101000000-0001\\x1b[31m:1: line 1 is not a JSON object, so "
        "this is not a Spark event log; point at the event log file (spark.eventLog.dir), not "
        "at other output [not-an-event-log]",
        f"failed: {log_dir}/local-1795320000000.zstd (byte 0): compressed data is damaged: "
        "expected a zstd frame header; the file is corrupt or its extension names the wrong "
        "codec; fetch a fresh copy [corrupt-data]",
    ]
    assert "\x1b" not in result.output
    assert "1 analyzed, 0 unchanged, 0 failed; 2 other entries failed;" in result.stdout


def test_batch_names_at_most_so_many_failed_logs_then_the_index(tmp_path: Path) -> None:
    log_dir = _one_good_and_two_broken(tmp_path)
    summary = run_batch(str(log_dir), str(tmp_path / "out"), BatchOptions(include_incomplete=True))
    lines = summary.failure_lines(max_lines=1)
    assert len(lines) == 2
    # The name's escape sequence is written out in the error itself (and so in the index).
    assert lines[0].startswith(f"{log_dir}/app-20240101000000-0001\\x1b[31m:1: ")
    assert lines[1] == f"… and 1 more failed log; see {tmp_path / 'out' / 'index.html'}"


def test_lenient_analyzes_a_log_with_a_malformed_line(logs: Path, tmp_path: Path) -> None:
    bad = Path(__file__).parent / "bad_inputs" / "malformed_mid_file"
    shutil.copy(bad, logs / "malformed_mid_file")
    out = tmp_path / "out"
    strict = run_batch(str(logs), str(out), BatchOptions(match="local-1700000000001"))
    assert strict.n_failed == 1 and "[malformed-line]" in strict.failures[0][1]
    lenient = BatchOptions(match="local-1700000000001", strictness=Strictness.LENIENT)
    again = run_batch(str(logs), str(out), lenient)
    assert (again.n_analyzed, again.n_failed) == (1, 0)


# --- Item 2: output names from application ids -------------------------------------------------

HOSTILE_IDS = (
    "index.html",
    "manifest.json",
    "tables",
    "apps",
    LOCK_NAME,
    "..",
    "a/b",
    "x" * 300,
    "evil\x1b]0;owned\x07\r\n\u202eid",
)


def _hostile_logs(directory: Path) -> None:
    directory.mkdir(exist_ok=True)
    for i, app_id in enumerate(HOSTILE_IDS):
        _tiny_log(directory / f"hostile-{i}", app_id, name=f"name\x1b[31m{i}")
    # A plain log named like its own report directory would be in the old layout.
    _tiny_log(directory / "local-1700000000042", "local-1700000000042")


def _check_hostile_run(out: Path, output: str) -> None:
    assert "0 failed" in output, output
    assert "\x1b" not in output and "\r" not in output and "\u202e" not in output
    assert (out / "index.html").is_file() and (out / "manifest.json").is_file()
    entries = _manifest(out).entries
    assert len(entries) == len(HOSTILE_IDS) + 1 and all(e.ok for e in entries.values())
    apps = (out / "apps").resolve()
    for entry in entries.values():
        assert entry.app_key is not None and len(entry.app_key.encode()) <= MAX_KEY_BYTES
        report_dir = (out / "apps" / entry.app_key).resolve()
        assert report_dir.parent == apps
        assert sorted(p.name for p in report_dir.iterdir()) == sorted(REPORTS)
    _assert_consistent(out)


def test_app_ids_naming_batch_files_do_not_collide_with_them(
    runner: CliRunner, tmp_path: Path
) -> None:
    logs, out = tmp_path / "logs", tmp_path / "out"
    _hostile_logs(logs)
    for _ in range(2):  # the second run finds everything unchanged
        result = runner.invoke(app, ["batch", str(logs), "-o", str(out), "-j", "2"])
        assert result.exit_code == 0, result.output
        _check_hostile_run(out, result.output)
    assert "10 unchanged" in result.output
    assert {p.name for p in out.iterdir()} == OWN_NAMES


def test_output_dir_equal_to_log_dir(runner: CliRunner, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _hostile_logs(logs)
    before = {p.name: p.read_bytes() for p in logs.iterdir()}
    for _ in range(2):
        result = runner.invoke(app, ["batch", str(logs), "-o", str(logs), "-j", "2"])
        assert result.exit_code == 0, result.output
        _check_hostile_run(logs, result.output)
        assert "10 of 10 logs selected" in result.output  # batch's own files are not logs
    assert {name: (logs / name).read_bytes() for name in before} == before


def test_old_layout_is_rebuilt_under_apps(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    info = next(i for i in discover_applications(str(logs)) if i.error is None)
    old_dir = out / str(info.app_id)
    old_dir.mkdir(parents=True)
    for report in REPORTS:
        (old_dir / report).write_text("old")
    (out / "notes").mkdir()
    (out / "manifest.json").write_text(
        json.dumps(
            {
                "format_version": 1,
                "analyzer_version": "0.1.0",
                "entries": {"x": {"report_dir": info.app_id}, "y": {"report_dir": "notes"}},
            }
        )
    )
    (out / "notes" / "keep.txt").write_text("mine")
    summary = run_batch(str(logs), str(out), BatchOptions(match=f"^{info.app_id}$"))
    assert summary.n_analyzed == 1
    assert not old_dir.exists() and (out / "notes" / "keep.txt").exists()
    assert _app_keys(out) == {info.app_id}


# --- Item 3: memory and time limits per log ----------------------------------------------------


def _event_head(app_id: str) -> bytes:
    return log_bytes([log_start(), application_start(app_id, "bomb")])


def _write_zstd(path: Path, parts: list[bytes], repeat: bytes = b"", n_repeat: int = 0) -> None:
    with path.open("wb") as handle, zstandard.ZstdCompressor(level=1).stream_writer(handle) as w:
        w.write(parts[0])
        for _ in range(n_repeat):
            w.write(repeat)
        for part in parts[1:]:
            w.write(part)


def _peak_rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _heavy_log(app_id: str, n_tasks: int, n_metrics: int) -> bytes:
    """A small log whose one stage declares `n_tasks` tasks and updates `n_metrics` SQL metrics:
    the replay keeps a value per declared task and metric, as Spark's SQL tab does."""
    metrics = [sql_metric(f"m{i}", i + 1) for i in range(n_metrics)]
    stage = stage_info(0, n_tasks)
    updates = [accumulable(i + 1, f"m{i}", 5, 5) for i in range(n_metrics)]
    t0 = START_MS
    return log_bytes(
        [
            log_start(),
            application_start(app_id, "bomb"),
            sql_execution_start(0, plan_node("Scan", metrics=metrics), t0 + 1),
            job_start(0, t0 + 2, [stage], {"spark.sql.execution.id": "0"}),
            stage_submitted(stage),
            task_end(
                0, task_id=0, index=5, launch_ms=t0 + 3, finish_ms=t0 + 4, accumulables=updates
            ),
            sql_execution_end(0, t0 + 9),
            application_end(),
        ]
    )


@pytest.mark.slow
def test_decompression_bomb_fails_alone_within_the_memory_limit(logs: Path, tmp_path: Path) -> None:
    mib = b"x" * (1 << 20)
    # 1 GiB of `x` without a newline: not even a log (refused by the listing).
    _write_zstd(logs / "bomb.zstd", [b""], mib, 1024)
    # The same after the head of a real log: an event line of 1 GiB, refused by the line limit.
    end = b"\n" + event_line(application_end())
    _write_zstd(logs / "bomb-app.zstd", [_event_head("bomb-app") + b'{"Event":"', end], mib, 1024)
    # A well-formed log whose stage of 10 million tasks updates 12 SQL metrics: a worker needs
    # gigabytes for it, and meets the memory limit.
    _write_zstd(logs / "heavy.zstd", [_heavy_log("local-heavy", 10_000_000, 12)])
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*CLI, "batch", str(logs), "-o", str(out), "-j", "2", "--max-memory-mb", "512"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak_kb = 0
    while proc.poll() is None:
        peak_kb = max(peak_kb, _peak_rss_kb(proc.pid))
        time.sleep(0.05)
    stdout, stderr = proc.communicate()
    print(f"parent peak RSS {peak_kb / 1024:.0f} MiB")
    assert proc.returncode == 1, stdout + stderr
    assert "2 failed; 1 other entry failed;" in stdout and "Traceback" not in stderr, (
        stdout + stderr
    )
    index = (out / "index.html").read_text()
    assert "exceeded the memory limit of 512 MiB" in index
    failures = {e.log_name: e.error for e in _manifest(out).entries.values() if not e.ok}
    assert failures["heavy.zstd"] == (
        "exceeded the memory limit of 512 MiB; raise --max-memory-mb (0: no limit) to analyze it"
    )
    assert "[line-too-long]" in failures["bomb-app.zstd"]
    assert "bomb.zstd" in index
    good = [i for i in discover_applications(str(logs)) if i.error is None and i.completed]
    assert len(_app_keys(out)) == len(good) - 2  # all but bomb-app and heavy
    # The driver lists every log (heads and tails) in bounded memory, whatever a log holds.
    assert peak_kb < 512 * 1024


@pytest.mark.slow
def test_log_over_the_time_limit_fails_alone(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _tiny_log(logs / "quick", "local-quick")
    line = event_line({"Event": "SparkListenerExecutorMetricsUpdate", "Executor ID": "driver"})
    end = event_line(application_end())
    # Three million events: many seconds of reading, little memory. The limit leaves the tiny
    # log room to start a worker and finish on a busy machine.
    _write_zstd(logs / "slow.zstd", [_event_head("local-slow"), end], line * 10_000, 300)
    out = tmp_path / "out"
    started = time.monotonic()
    summary = run_batch(str(logs), str(out), BatchOptions(jobs=2, timeout_s=3))
    assert time.monotonic() - started < 60
    assert summary.failures == [
        ("slow.zstd", "took longer than 3 s; raise --timeout-s (0: no limit) to analyze it")
    ]
    assert summary.n_analyzed == 1 and _app_keys(out) == {"local-quick"}
    # Recorded with its limits: not tried again under the same ones, tried under others.
    again = run_batch(str(logs), str(out), BatchOptions(timeout_s=3))
    # The quick log unchanged; the slow one not tried again, and still one of the failures.
    assert (again.n_analyzed, again.n_unchanged, again.n_failed) == (0, 1, 1)
    assert run_batch(str(logs), str(out), BatchOptions(timeout_s=300)).n_analyzed == 1


# --- Item 7: SIGKILL of the driver -------------------------------------------------------------


def _session_processes(sid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":  # fields[3]: session id
            found.append(int(entry.name))
    return found


def _tree_state(out: Path) -> dict[str, tuple[int, int]]:
    state = {}
    for path in out.rglob("*"):
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        state[str(path.relative_to(out))] = (st.st_size, st.st_mtime_ns)
    return state


@pytest.mark.slow
def test_sigkill_of_the_driver_kills_its_workers_and_nothing_is_written_after(
    logs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    # More work than one sample directory, so the kill lands mid-run.
    for i, path in enumerate(sorted(p for p in logs.iterdir() if p.is_file())):
        for k in range(3):
            shutil.copy2(path, logs / f"copy{k}-{i}-{path.name}")
    started = time.monotonic()
    proc = subprocess.Popen(
        [*CLI, "batch", str(logs), "-o", str(out), "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(out.glob("apps/*/report.json")):
        time.sleep(0.05)
    assert len(_session_processes(proc.pid)) >= 2  # the driver and its workers
    os.kill(proc.pid, signal.SIGKILL)  # the driver only, not its process group
    proc.wait()
    killed = time.monotonic()
    while _session_processes(proc.pid) and time.monotonic() - killed < 5:
        time.sleep(0.05)
    assert _session_processes(proc.pid) == [], "processes of the run outlived it"
    print(f"all gone {time.monotonic() - killed:.2f} s after SIGKILL")
    state = _tree_state(out)
    time.sleep(2)
    assert _tree_state(out) == state, "files changed after the driver died"

    for path in out.glob("apps/*/*"):
        assert path.name in REPORTS or (path.name.startswith(".") and path.name.endswith(".tmp"))
    _assert_consistent(out)
    rerun = run_batch(str(logs), str(out), BatchOptions(jobs=2))
    assert rerun.n_failed == 0
    assert rerun.n_analyzed + rerun.n_unchanged == rerun.n_selected
    assert not _visible_temp_files(out)
    assert len(_manifest(out).entries) == rerun.n_selected
    _assert_consistent(out)
    print(f"kill test {time.monotonic() - started:.1f} s")


# --- Item 8: outputs that cannot be written ----------------------------------------------------


def _one_error_line(output: str, slug: str) -> None:
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].endswith(f"[{slug}]"), output
    assert "Traceback" not in output


def test_output_that_is_a_file_or_cannot_be_created_is_one_line(
    runner: CliRunner, logs: Path, tmp_path: Path
) -> None:
    regular = tmp_path / "a-file"
    regular.write_text("x")
    for target, what in ((regular, "is not a directory"), (regular / "sub", "Not a directory")):
        result = runner.invoke(app, ["batch", str(logs), "-o", str(target)])
        assert result.exit_code == 1, result.output
        _one_error_line(result.output, "cannot-write")
        assert what in result.output


def test_since_with_400_digits_is_a_usage_error(
    runner: CliRunner, logs: Path, tmp_path: Path
) -> None:
    result = runner.invoke(
        app, ["batch", str(logs), "-o", str(tmp_path / "out"), "--since", "9" * 400 + "d"]
    )
    assert result.exit_code == 2, result.output
    _one_error_line(result.output, "usage")


def _can_mount_tmpfs() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k none /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0


needs_tmpfs = pytest.mark.skipif(
    not _can_mount_tmpfs(), reason="needs root and unshare to mount a small tmpfs"
)


def _batch_on_tmpfs(logs: Path, mount: Path, report: Path, mount_options: str) -> str:
    """Run a batch into a fresh tmpfs at `mount` (private mount namespace); copy what it left."""
    mount.mkdir()
    script = (
        f'mount -t tmpfs -o {mount_options} none "$1" || exit 99; '
        '"$2" -c "from analyzer.cli import main; main()" batch "$3" -o "$1" -j 2 2>"$4/stderr"; '
        'echo $? > "$4/rc"; cd "$1" && find . -type f | sort > "$4/files"; '
        'cp manifest.json "$4/manifest.json" 2>/dev/null; exit 0'
    )
    report.mkdir()
    done = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            script,
            "sh",
            str(mount),
            sys.executable,
            str(logs),
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return (report / "stderr").read_text()


@needs_tmpfs
def test_read_only_output_dir_is_one_line(logs: Path, tmp_path: Path) -> None:
    stderr = _batch_on_tmpfs(logs, tmp_path / "ro", tmp_path / "report", "ro,size=64k")
    assert (tmp_path / "report" / "rc").read_text().strip() == "1"
    _one_error_line(stderr, "cannot-write")
    assert "Read-only file system" in stderr


@needs_tmpfs
def test_disk_full_stops_cleanly_without_temp_files(logs: Path, tmp_path: Path) -> None:
    report = tmp_path / "report"
    stderr = _batch_on_tmpfs(logs, tmp_path / "full", report, "size=2m")
    assert (report / "rc").read_text().strip() == "1"
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert lines and all(
        line.startswith("error: ") and line.endswith("[cannot-write]") for line in lines
    ), stderr
    assert "No space left on device" in stderr
    assert len(lines) <= 5  # the failed report, then at most the manifest, tables, history, index
    files = (report / "files").read_text().split()
    assert not [f for f in files if f.endswith(".tmp")], files
    if (report / "manifest.json").exists():  # consistent: every recorded report is there
        manifest = load_manifest(report / "manifest.json").manifest
        for entry in manifest.entries.values():
            if entry.ok:
                for name in REPORTS:
                    assert f"./apps/{entry.app_key}/{name}" in files


# --- Item 9: a second run on the same output directory -----------------------------------------


def test_second_concurrent_run_is_busy_not_a_usage_error(
    runner: CliRunner, logs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with open(out / LOCK_NAME, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = runner.invoke(app, ["batch", str(logs), "-o", str(out)])
    assert result.exit_code == EXIT_BUSY == 75, result.output
    _one_error_line(result.output, "busy")
    assert not (out / "manifest.json").exists()


def test_incomplete_logs_left_out_are_counted_and_named_in_the_index(
    runner: CliRunner, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    complete = SAMPLES / "local-1795320224872"
    shutil.copy(complete, logs / complete.name)
    lines = complete.read_bytes().splitlines(keepends=True)
    # A driver still writing: the first half of the log, its last line cut.
    (logs / "local-1795320224873.inprogress").write_bytes(
        b"".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:20]
    )
    out = tmp_path / "out"
    result = runner.invoke(app, ["batch", str(logs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    summary = result.stdout.strip().splitlines()[-1]
    assert summary.startswith(
        "batch: 1 of 2 logs selected: 1 analyzed, 0 unchanged, 0 failed; 1 incomplete left out "
        "(--include-incomplete analyzes them); 1 run recorded, 0 of them regressed;"
    ), summary
    index = (out / "index.html").read_text()
    assert "1 incomplete log left out (no end event" in index
    again = runner.invoke(app, ["batch", str(logs), "-o", str(out), "--include-incomplete"])
    assert again.exit_code == 0, again.output
    assert "2 of 2 logs selected" in again.stdout and "left out" not in again.stdout


def test_a_file_name_with_a_line_break_keeps_its_whole_error_on_one_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "notes\nmore.txt").write_text("shopping list: milk, eggs\n")
    result = runner.invoke(app, ["batch", str(logs), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    [failed] = [line for line in result.stderr.splitlines() if line.startswith("failed:")]
    assert failed == (
        f"failed: {logs}/notes\\x0amore.txt:1: line 1 is not a JSON object, so this is not a "
        "Spark event log; point at the event log file (spark.eventLog.dir), not at other output "
        "[not-an-event-log]"
    )


def test_a_log_failing_in_analysis_is_named_as_the_listing_names_it(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker reads the log at its absolute path; the failure line names it under the
    # directory as given, as it names a log that failed in the listing.
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REPO / "tests" / "bad_inputs" / "malformed_mid_file", logs)
    (logs / "notes.txt").write_text("shopping list\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["batch", "logs", "-o", "out"])
    assert result.exit_code == 1, result.output
    failed = sorted(line for line in result.stderr.splitlines() if line.startswith("failed:"))
    assert [line.split(":")[1].strip() for line in failed] == [
        "logs/malformed_mid_file",
        "logs/notes.txt",
    ], failed
    assert str(tmp_path) not in (tmp_path / "out" / "index.html").read_text()


@pytest.mark.parametrize("given", ["missing", "a-file"])
def test_a_log_directory_that_is_not_there_writes_nothing(
    runner: CliRunner, tmp_path: Path, given: str
) -> None:
    (tmp_path / "a-file").write_text("not a directory\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["batch", str(tmp_path / given), "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and result.stderr.rstrip().endswith("[not-found]")
    assert not out.exists()


def test_failed_executions_are_counted_alike_in_the_manifest_and_the_tables(
    tmp_path: Path,
) -> None:
    # sea-connect: one query fails, another is interrupted by its client (Spark marks it
    # FAILED too): one failure, in the index's summary and in every table.
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(SAMPLES / "local-1795803803322.zstd", logs)
    out = tmp_path / "out"
    run_batch(str(logs), str(out), BatchOptions(jobs=1))
    [entry] = json.loads((out / "manifest.json").read_text())["entries"].values()
    assert entry["summary"]["n_failed_executions"] == 1
    apps = pl.read_parquet(out / "tables" / "applications.parquet")
    assert apps["n_failed_executions"].to_list() == [1]
    runs = pl.read_parquet(out / "tables" / "history" / "runs")
    assert runs["n_failed_executions"].to_list() == [1]


def test_the_manifest_shows_bidi_and_invisible_characters_as_escapes(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    name = "local-1795320224872\u202etxt.\u200b"
    shutil.copy(SAMPLES / "local-1795320224872", logs / name)
    out = tmp_path / "out"
    run_batch(str(logs), str(out), BatchOptions(jobs=1))
    text = (out / "manifest.json").read_text(encoding="utf-8")
    assert "\u202e" not in text and "\u200b" not in text
    assert "\\u202e" in text
    assert list(json.loads(text)["entries"]) == [name]
    again = run_batch(str(logs), str(out), BatchOptions(jobs=1))
    assert again.n_unchanged == 1  # read back as the same name
