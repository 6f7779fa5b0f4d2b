"""Hostile inputs around the reports: settings files, options, output targets, file names that
are not UTF-8, special files in a log directory, and long texts to redact. Each gives a report or
one clear error line, never a crash, a hang or a replaced device.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import stat
import threading
from pathlib import Path

import orjson
import polars as pl
import pytest
from eventlog_samples import SAMPLES
from hostile_inputs import run_cli

from analyzer import api
from analyzer.aggregate.pricing import read_price_table
from analyzer.batch import BatchOptions, run_batch
from analyzer.errors import CannotWriteError, PriceFileError, UsageError
from analyzer.eventlog.remote import load_remote_config, parse_storage_options
from analyzer.output import write_atomic
from analyzer.redact import environment
from analyzer.redact.plan_text import _has_attribute
from analyzer.report.options import ReportOptions, parse_what_if_slots

SQL_LOG = "local-1795320224872"
NOT_UTF8_NAME = os.fsdecode(b"bad\xff\xfename")
"""A file name whose bytes are not UTF-8: Python holds them as lone surrogates."""


def _sample(name: str = SQL_LOG) -> Path:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


# --- settings files -----------------------------------------------------------------------

NESTED_TOML = "core_hour = " + "[" * 5000 + "]" * 5000 + "\n"
DEEP_TABLES = "[" + ".".join(["a"] * 100) + "]\nx = 1\n"
LONG_NUMBER_TOML = "core_hour = " + "9" * 5000 + "\n"


@pytest.mark.parametrize(
    "text", [NESTED_TOML, DEEP_TABLES, LONG_NUMBER_TOML], ids=["nested", "tables", "long-number"]
)
def test_a_hostile_price_file_is_one_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    with pytest.raises(PriceFileError, match="the price file is"):
        read_price_table(path)


@pytest.mark.parametrize(
    "text", [NESTED_TOML, DEEP_TABLES, LONG_NUMBER_TOML], ids=["nested", "tables", "long-number"]
)
def test_a_hostile_remote_config_is_one_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "remote.toml"
    path.write_text(text.replace("core_hour", "[s3]\nkey"))
    with pytest.raises(UsageError, match="remote config file"):
        load_remote_config(str(path))


def test_settings_files_that_are_pipes_or_devices_are_refused_unread(tmp_path: Path) -> None:
    # Opening a pipe with no writer would wait forever; /dev/zero would fill memory.
    fifo = _fifo(tmp_path, "prices.toml")
    with pytest.raises(PriceFileError, match="not a regular file"):
        read_price_table(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        load_remote_config(str(fifo))
    with pytest.raises(UsageError, match="not a regular file"):
        load_remote_config("/dev/zero")


def test_a_storage_option_nested_too_deep_is_its_text() -> None:
    text = "[" * 100_000
    assert parse_storage_options([f"a={text}"]) == {"a": text}
    assert parse_storage_options(["a=" + "[" * 40 + "]" * 40]) == {"a": "[" * 40 + "]" * 40}
    assert parse_storage_options(["a=[[1]]"]) == {"a": [[1]]}


@pytest.mark.parametrize("value", ["\u00b2", "9" * 5000, "1,\u2460"])
def test_what_if_slots_that_are_no_numbers(value: str) -> None:
    with pytest.raises(UsageError, match="--what-if-slots"):
        parse_what_if_slots(value)


# --- output targets -----------------------------------------------------------------------


def test_writing_to_a_named_pipe_writes_through_it(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path, "out.json")
    got: list[bytes] = []
    # A daemon: were the pipe replaced by a file, the reader would wait for a writer for ever.
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_atomic(fifo, "report\n")
    reader.join(timeout=30)
    assert got == [b"report\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # not replaced by a regular file


def test_writing_to_dev_null_keeps_the_device() -> None:
    write_atomic("/dev/null", "report\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_full_device_is_a_clear_error() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with pytest.raises(CannotWriteError, match="No space left"):
        write_atomic("/dev/full", "report\n")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "report\n")
    assert link.is_symlink() and real.read_text() == "report\n"


def test_a_path_nested_thousands_deep_is_a_clear_error(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d"] * 2000, "x.txt")
    with pytest.raises(CannotWriteError):
        write_atomic(deep, "report\n")


# --- file names that are not UTF-8 --------------------------------------------------------


def test_a_log_whose_name_is_not_utf8_gives_every_report(tmp_path: Path) -> None:
    log = tmp_path / NOT_UTF8_NAME
    shutil.copy(_sample(), log)
    analysis = api.analyze(str(log))
    for fmt in ("json", "text", "html", "markdown"):
        report = api.render_report(analysis, ReportOptions(fmt=fmt, now_ms=0))
        # Shown as escapes; JSON writes each backslash doubled.
        assert ("bad\\\\xff\\\\xfename" if fmt == "json" else "bad\\xff\\xfename") in report
    listed = run_cli(["apps", str(tmp_path)])
    assert listed.returncode == 0, listed.stderr
    assert "bad\\xff\\xfename" in listed.stdout


def test_batch_over_a_name_that_is_not_utf8_and_a_pipe(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(_sample(), logs / NOT_UTF8_NAME)
    _fifo(logs, "fifo")  # listed as unreadable, never opened (opening it would wait forever)
    options = BatchOptions(jobs=1)
    first = run_batch(str(logs), str(tmp_path / "out"), options)
    assert (first.n_analyzed, first.n_failed) == (1, 1)
    again = run_batch(str(logs), str(tmp_path / "out"), options)
    assert again.n_analyzed == 0 and again.n_failed == 1


def _with_app_id(source: Path, target: Path, app_id: str, attempt_id: str) -> None:
    """`source` with its application's id and attempt id replaced."""
    lines = source.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"SparkListenerApplicationStart"' in line)
    event = orjson.loads(lines[at])
    event["App ID"], event["App Attempt ID"] = app_id, attempt_id
    lines[at] = orjson.dumps(event)
    target.write_bytes(b"\n".join(lines) + b"\n")


def test_batch_records_ids_of_megabytes_cut_and_distinct(tmp_path: Path) -> None:
    # Every table row repeats its application's id; uncut, an id of 10 MB made a batch of one
    # log hold 1.7 GB, and one of 30 MB ran out of memory.
    logs = tmp_path / "logs"
    logs.mkdir()
    long_id = "a" * (1 << 20)
    _with_app_id(_sample(), logs / "one", long_id, "1" * 5000)
    _with_app_id(_sample(), logs / "two", long_id + "b", "1")
    options = BatchOptions(jobs=1)
    first = run_batch(str(logs), str(tmp_path / "out"), options)
    assert (first.n_analyzed, first.n_failed, first.n_recorded) == (2, 0, 2)
    tables = tmp_path / "out" / "tables"
    for table in ("applications", "executions", "plan_node_metrics", "history/runs/*"):
        ids = pl.read_parquet(tables / f"{table}.parquet").get_column("app_id").unique()
        assert ids.len() == 2 and ids.str.len_chars().to_list() == [1000, 1000], table
        assert all(i.startswith("a" * 900) and "…~" in i for i in ids)
    runs = pl.read_parquet(tables / "history/runs/*.parquet")
    assert sorted(runs.get_column("attempt_id").str.len_chars().to_list()) == [1, 1000]
    again = run_batch(str(logs), str(tmp_path / "out"), options)
    assert (again.n_analyzed, again.n_recorded) == (0, 0)  # the same runs, known by their cut ids


# --- redaction of long texts --------------------------------------------------------------


def test_attribute_names_are_found_as_the_pattern_finds_them() -> None:
    # The linear search must agree with the pattern it replaces on every text.
    pattern = re.compile(r"[A-Za-z_][\w$]*#\d+L?\b")
    rng = random.Random(7)
    alphabet = list("ab_$Z9#L ()\u00e9\u0663.,1")
    for _ in range(50_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _has_attribute(text) == bool(pattern.search(text)), text


def test_redacting_a_long_app_name(tmp_path: Path) -> None:
    # Searched with the pattern, a name of 100,000 word characters took 29 s to redact.
    text = _sample().read_text(encoding="utf-8")
    line = next(i for i in text.splitlines() if '"SparkListenerApplicationStart"' in i)
    name = re.search(r'"App Name":"([^"]*)"', line)
    assert name is not None
    log = tmp_path / "eventlog"
    log.write_text(
        text.replace(line, line.replace(name.group(0), '"App Name":"' + "a" * 200_000 + '"'))
    )
    run = run_cli(["report", str(log), "--redact", "-o", str(tmp_path / "out.json")], timeout_s=120)
    assert run.returncode == 0, run.stderr


def test_known_values_are_found_as_one_pattern_finds_them() -> None:
    # Values too long for the pattern are found by a plain search: the two together must find
    # what a single pattern of every value, longest first, finds.
    rng = random.Random(11)
    alphabet = list("ab.-_ \u00e9x")
    for _ in range(3_000):
        values = {"".join(rng.choice("ab.-") for _ in range(rng.randint(2, 6))) for _ in range(4)}
        values = {v for v in values if v.strip()}
        if not values:
            continue
        text = "".join(rng.choice([*alphabet, rng.choice(sorted(values))]) for _ in range(20))
        alts = "|".join(re.escape(v) for v in sorted(values, key=lambda v: (-len(v), v)))
        pattern = re.compile(rf"(?<![\w.-])(?:{alts})(?![\w-]|\.\w)")
        expected = [(m.start(), m.end(), m.group(0)) for m in pattern.finditer(text)]
        for limit in (0, 3, 256):
            known = environment._KnownValues(values, "-", max_pattern_chars=limit)
            assert known.finditer(text) == expected, (text, values, limit)


def test_redacting_a_host_of_megabytes(tmp_path: Path) -> None:
    # Compiled into the pattern of known hosts, a 10 MB host took 7 s and 1.1 GB to redact.
    host = "h" * (4 << 20)
    lines = _sample().read_bytes().splitlines()
    for i, line in enumerate(lines):
        if b'"SparkListenerExecutorAdded"' in line or b'"SparkListenerBlockManagerAdded"' in line:
            event = orjson.loads(line)
            info = event.get("Executor Info") or event["Block Manager ID"]
            info["Host"] = host
            lines[i] = orjson.dumps(event)
    log = tmp_path / "eventlog"
    log.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out.txt"
    run = run_cli(["report", str(log), "--redact", "-f", "text", "-o", str(out)], timeout_s=120)
    assert run.returncode == 0, run.stderr
    report = out.read_text(encoding="utf-8")
    assert "hhhh" not in report and "host-" in report
