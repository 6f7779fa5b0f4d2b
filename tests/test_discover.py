"""Listing the applications of a log directory from log heads and tails, never raising per log."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest
import zstandard
from eventlog_samples import BAD, PUBLIC, needs_public, public, sample_files

from analyzer.errors import CorruptCompressedDataError, LogNotFoundError
from analyzer.eventlog import discover
from analyzer.eventlog.codecs import DecodeReport, iter_decompressed
from analyzer.eventlog.discover import TAIL_DECODE_MAX_BYTES, AppInfo, discover_applications
from analyzer.render.apps_table import format_apps_table


def by_path(infos: list[AppInfo]) -> dict[str, AppInfo]:
    """Index infos by the last component of their path."""
    return {Path(i.path).name: i for i in infos}


@needs_public
def test_public_log_dir() -> None:
    infos = by_path(discover_applications(str(PUBLIC)))
    assert len(infos) == 12
    assert all(i.error is None for i in infos.values())
    nds = infos["nds_q72_dataproc_2_2.zstd"]
    assert nds.app_id == "application_1751493828576_0001"
    assert nds.name == "NDS - Power Run"
    assert nds.spark_version == "3.5.3"
    assert nds.codec == "zstd"
    assert nds.completed
    assert nds.end_ms is not None and nds.start_ms is not None
    assert nds.duration_ms == nds.end_ms - nds.start_ms
    rolling = infos["eventlog_v2_local-1623876083964"]
    db = infos["db_sim_eventlog"]
    assert (rolling.layout, db.layout) == ("rolling", "databricks")
    assert rolling.app_id == db.app_id == "local-1623876083964"
    assert rolling.end_ms == db.end_ms == 1623876217227
    assert rolling.completed and db.completed
    truncated = infos["truncated_eventlog"]
    assert truncated.state == "incomplete"
    assert truncated.end_ms is None
    assert infos["spark2-eventlog.zstd"].spark_version == "2.2.3"


@needs_public
def test_sorted_by_start_time() -> None:
    starts = [i.start_ms for i in discover_applications(str(PUBLIC))]
    assert starts == sorted(s for s in starts if s is not None)


def test_bad_inputs_become_error_rows() -> None:
    infos = by_path(discover_applications(str(BAD)))
    assert "README.md" not in infos
    errors = {name: i.error for name, i in infos.items() if i.error}
    assert set(errors) == {
        "blank_lines_eventlog",
        "empty_eventlog",
        "eventlog_v2_local-1700000000000",
        "not_an_eventlog",
        "spark-defaults.conf",
        "unknown_codec.bz2",
    }
    assert errors["empty_eventlog"].endswith("[empty-log]")
    assert "events_2 is missing" in errors["eventlog_v2_local-1700000000000"]
    assert errors["not_an_eventlog"].endswith("[not-an-event-log]")
    assert errors["unknown_codec.bz2"].endswith("[unknown-codec]")
    assert errors["spark-defaults.conf"].endswith("[not-an-event-log]")
    assert all("\n" not in e for e in errors.values())
    assert infos["truncated_last_line"].app_id == "local-1700000000002"
    assert infos["truncated_last_line"].state == "incomplete"
    assert infos["malformed_mid_file"].completed


def test_hidden_and_checksum_files_are_skipped(tmp_path: Path) -> None:
    shutil.copy(public("python_udf_eventlog"), tmp_path / "local-1774375206936")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    (tmp_path / ".local-1774375206936.crc").write_bytes(b"crc")
    (tmp_path / "local-1774375206936.crc").write_bytes(b"crc")
    (tmp_path / "notes").mkdir()
    infos = discover_applications(str(tmp_path))
    assert [Path(i.path).name for i in infos] == ["local-1774375206936"]


def test_in_progress_files(tmp_path: Path) -> None:
    text = public("local-1642039451826").read_bytes()
    (tmp_path / "local-1642039451826.inprogress").write_bytes(text[: len(text) // 2])
    info = discover_applications(str(tmp_path))[0]
    assert info.in_progress and not info.completed
    assert info.state == "in progress"
    assert info.app_id == "local-1642039451826"


def test_large_zstd_tail_found_by_frame_resync(tmp_path: Path) -> None:
    """Past TAIL_DECODE_MAX_BYTES only the last frames are decoded (Spark flushes frames often)."""
    text = public("join_missing_sql_end").read_bytes()
    cctx = zstandard.ZstdCompressor(level=1)
    data = b"".join(cctx.compress(text[i : i + 20000]) for i in range(0, len(text), 20000))
    blob = data * (TAIL_DECODE_MAX_BYTES // len(data) + 2)  # still a valid stream of frames
    (tmp_path / "local-1622561780883.zstd").write_bytes(blob)
    info = discover_applications(str(tmp_path))[0]
    assert info.size_bytes > TAIL_DECODE_MAX_BYTES
    assert info.completed
    assert info.end_ms is not None


@pytest.mark.parametrize("ext", ["lz4", "lzf", "snappy"])
def test_spark_written_samples(ext: str) -> None:
    files = sample_files(ext)
    if not files:
        pytest.skip(f"no *.{ext} sample log under sample_eventlogs/ (made by the pyspark script)")
    log_dir = files[0].parent.parent if files[0].name.startswith("events_") else files[0].parent
    infos = [i for i in discover_applications(str(log_dir)) if i.codec == ext]
    assert infos
    assert all(i.error is None and i.app_id and i.start_ms for i in infos)


def test_missing_dir_raises() -> None:
    with pytest.raises(LogNotFoundError, match=r"/no/such/dir: no such directory"):
        discover_applications("/no/such/dir")


def test_file_instead_of_dir_raises() -> None:
    with pytest.raises(LogNotFoundError, match=r"not a directory"):
        discover_applications(str(BAD / "malformed_mid_file"))


def test_empty_dir_table(tmp_path: Path) -> None:
    assert discover_applications(str(tmp_path)) == []
    assert format_apps_table([]) == "no event logs found\n"


def test_table_columns_align() -> None:
    table = format_apps_table(discover_applications(str(BAD)))
    lines = table.splitlines()
    header = lines[0]
    for column in ("APP ID", "ATTEMPT", "NAME", "SPARK", "START (UTC)", "DURATION", "STATE"):
        assert column in header
    assert "2023-11-14T22:13:20Z" in table
    assert "6 entries could not be read:" in table


def test_rolling_in_progress_and_databricks_without_end(tmp_path: Path) -> None:
    src = public("eventlog_v2_local-1623876083964")
    rolling = tmp_path / "eventlog_v2_local-1623876083964"
    rolling.mkdir()
    shutil.copy(src / "events_1_local-1623876083964.zstd", rolling)
    (rolling / "appstatus_local-1623876083964.inprogress").touch()
    db = tmp_path / "cluster-1"
    db.mkdir()
    shutil.copy(public("db_sim_eventlog") / "eventlog-2021-06-15--15-00.gz", db)
    live = (public("db_sim_eventlog") / "eventlog").read_bytes()
    (db / "eventlog").write_bytes(live[: live.rindex(b'{"Event":"SparkListenerApplicationEnd"')])
    infos = by_path(discover_applications(str(tmp_path)))
    assert infos["eventlog_v2_local-1623876083964"].state == "in progress"
    assert infos["cluster-1"].state == "in progress"
    assert infos["cluster-1"].spark_version == "3.1.1"


def test_remote_log_dir() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/sea-discover/app-1.zstd", public("aqeshuffle_eventlog.zstd").read_bytes())
    fs.pipe("/sea-discover/notes.md", b"# notes")
    try:
        infos = discover_applications("memory://sea-discover")
    finally:
        fs.rm("/sea-discover", recursive=True)
    assert len(infos) == 1
    assert infos[0].app_id == "local-1651694304852"
    assert infos[0].completed and infos[0].end_ms is not None


def _whole_tail(raw: bytes) -> bytes | None:
    """The tail as the whole decode gives it."""
    return discover._tail_of(iter_decompressed(io.BytesIO(raw), "zstd", DecodeReport("x.zstd")))


@pytest.mark.parametrize("frame_bytes", [7, 61, 1000, 20000])
@pytest.mark.parametrize("ended", [True, False])
def test_zstd_tail_from_last_frames_reads_the_same_end(frame_bytes: int, ended: bool) -> None:
    """Decoding only the last frames finds the end event the whole decode finds, also when its
    line or its name is split across frames, and when there is none."""
    text = public("join_missing_sql_end").read_bytes()
    if not ended:
        text = text[: text.rindex(b'{"Event":"SparkListenerApplicationEnd"')]
    cctx = zstandard.ZstdCompressor(level=1)
    head, rest = text[:-300_000], text[-300_000:]
    raw = cctx.compress(head) + b"".join(
        cctx.compress(rest[i : i + frame_bytes]) for i in range(0, len(rest), frame_bytes)
    )
    fast = discover._zstd_tail(raw, "x.zstd")
    whole = _whole_tail(raw)
    assert fast is not None and whole is not None
    assert whole.endswith(fast)
    assert discover._end_ms_in(fast) == discover._end_ms_in(whole)
    assert (discover._end_ms_in(fast) is not None) == ended


def test_zstd_tail_of_samples_and_damaged_copies() -> None:
    """On every zstd sample the last frames give the whole decode's end; a cut, a trailing
    byte or an undecodable last frame sends the part to the whole decode."""
    for path in sample_files("zstd"):
        raw = path.read_bytes()
        fast = discover._zstd_tail(raw, str(path))
        whole = _whole_tail(raw)
        assert fast is not None and whole is not None and whole.endswith(fast)
        assert discover._end_ms_in(fast) == discover._end_ms_in(whole)
        assert discover._zstd_tail(raw[:-1], str(path)) is None
        assert discover._zstd_tail(raw + b"\0", str(path)) is None
        damaged = bytearray(raw)
        damaged[-6] ^= 0xFF  # inside the last frame's only block
        with contextlib.suppress(CorruptCompressedDataError):  # raised by the whole decode
            fast = discover._zstd_tail(bytes(damaged), str(path))
            whole = _whole_tail(bytes(damaged))
            assert fast is None or (whole is not None and whole.endswith(fast))
