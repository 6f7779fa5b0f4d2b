"""Resolving a named path into the parts of a log: files, rolling and Databricks dirs, URLs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from eventlog_samples import BAD, public

from analyzer.errors import (
    EmptyLogError,
    LogNotFoundError,
    MissingRollingFileError,
    RemoteStorageError,
    UnknownCodecError,
)
from analyzer.eventlog.source import resolve_log

ROLLING = "eventlog_v2_local-1623876083964"


@pytest.mark.parametrize(
    ("name", "codec"),
    [
        ("nds_q72_dataproc_2_2.zstd", "zstd"),
        ("python_udf_eventlog", "none"),
        ("local-1642039451826", "none"),
    ],
)
def test_single_file(name: str, codec: str) -> None:
    path = public(name)
    source = resolve_log(str(path))
    assert source.layout == "single"
    assert source.codec == codec
    assert not source.in_progress
    assert [p.path for p in source.parts] == [str(path)]
    assert source.size_bytes == path.stat().st_size


@pytest.mark.parametrize(
    ("name", "codec"),
    [
        ("app-1.inprogress", "none"),
        ("app-1.zstd.inprogress", "zstd"),
        ("app-1.lz4", "lz4"),
        ("app-1.lzf", "lzf"),
        ("app-1.snappy", "snappy"),
        ("events_1_app-1.zstd.compact", "zstd"),
    ],
)
def test_codec_comes_from_the_extension(tmp_path: Path, name: str, codec: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"x")
    source = resolve_log(str(path))
    assert source.codec == codec
    assert source.in_progress == name.endswith(".inprogress")


@pytest.mark.parametrize("ext", ["zst", "bz2", "gzip"])
def test_unknown_extension_names_file_and_supported_codecs(tmp_path: Path, ext: str) -> None:
    path = tmp_path / f"app-1.{ext}"
    path.write_bytes(b"x")
    with pytest.raises(UnknownCodecError) as info:
        resolve_log(str(path))
    message = str(info.value)
    assert str(path) in message
    assert f"'.{ext}'" in message
    assert ".zstd, .lz4, .lzf, .snappy, .gz" in message
    assert message.endswith("[unknown-codec]")


def test_unknown_codec_bad_input() -> None:
    with pytest.raises(UnknownCodecError, match=r"unknown_codec\.bz2.*\[unknown-codec\]"):
        resolve_log(str(BAD / "unknown_codec.bz2"))


def test_rolling_dir_parts_in_index_order() -> None:
    path = public(ROLLING)
    source = resolve_log(str(path))
    assert source.layout == "rolling"
    assert source.codec == "zstd"
    assert not source.in_progress
    assert [Path(p.path).name for p in source.parts] == [
        "events_1_local-1623876083964.zstd",
        "events_2_local-1623876083964.zstd",
    ]


def test_rolling_dir_in_progress_and_compact(tmp_path: Path) -> None:
    src = public(ROLLING)
    d = tmp_path / ROLLING
    d.mkdir()
    (d / "appstatus_local-1623876083964.inprogress").touch()
    (d / ".events_1_local-1623876083964.zstd.crc").write_bytes(b"crc")
    e1 = src / "events_1_local-1623876083964.zstd"
    e2 = src / "events_2_local-1623876083964.zstd"
    for index in (1, 2, 10):
        shutil.copy(e1 if index == 1 else e2, d / f"events_{index}_local-1623876083964.zstd")
    with pytest.raises(MissingRollingFileError, match=r"events_3 is missing"):
        resolve_log(str(d))
    for index in range(3, 10):
        shutil.copy(e2, d / f"events_{index}_local-1623876083964.zstd")
    source = resolve_log(str(d))
    assert source.in_progress
    assert [Path(p.path).name.split("_")[1] for p in source.parts] == [str(i) for i in range(1, 11)]
    # Reading starts at the last .compact file; the plain file of its index is dropped.
    shutil.copy(e1, d / "events_2_local-1623876083964.zstd.compact")
    shutil.copy(e1, d / "events_5_local-1623876083964.zstd.compact")
    names = [Path(p.path).name for p in resolve_log(str(d)).parts]
    assert names[0] == "events_5_local-1623876083964.zstd.compact"
    assert names[1:] == [f"events_{i}_local-1623876083964.zstd" for i in range(6, 11)]


def test_rolling_dir_missing_file_bad_input() -> None:
    path = BAD / "eventlog_v2_local-1700000000000"
    with pytest.raises(MissingRollingFileError) as info:
        resolve_log(str(path))
    message = str(info.value)
    assert str(path) in message
    assert "events_2 is missing" in message
    assert message.endswith("[missing-rolling-file]")


def test_databricks_dir_rotated_pieces_then_live_file(tmp_path: Path) -> None:
    source = resolve_log(str(public("db_sim_eventlog")))
    assert source.layout == "databricks"
    assert [Path(p.path).name for p in source.parts] == [
        "eventlog-2021-06-15--15-00.gz",
        "eventlog",
    ]
    assert [p.codec for p in source.parts] == ["gz", "none"]


def test_databricks_rotated_pieces_sorted_by_timestamp(tmp_path: Path) -> None:
    src = public("db_sim_eventlog")
    d = tmp_path / "db"
    d.mkdir()
    for name in ("eventlog-2021-06-15--16-00.gz", "eventlog-2021-06-15--09-30.gz"):
        shutil.copy(src / "eventlog-2021-06-15--15-00.gz", d / name)
    shutil.copy(src / "eventlog", d / "eventlog")
    names = [Path(p.path).name for p in resolve_log(str(d)).parts]
    assert names == ["eventlog-2021-06-15--09-30.gz", "eventlog-2021-06-15--16-00.gz", "eventlog"]


def test_missing_path() -> None:
    with pytest.raises(LogNotFoundError, match=r"/no/such/log: no such file.*\[not-found\]"):
        resolve_log("/no/such/log")


def test_directory_that_is_not_a_log(tmp_path: Path) -> None:
    with pytest.raises(LogNotFoundError, match=r"spark-explain apps"):
        resolve_log(str(tmp_path))


def test_empty_file_bad_input() -> None:
    path = BAD / "empty_eventlog"
    with pytest.raises(EmptyLogError) as info:
        resolve_log(str(path))
    assert str(path) in str(info.value)
    assert str(info.value).endswith("[empty-log]")


def test_file_url() -> None:
    path = public("python_udf_eventlog")
    source = resolve_log(path.as_uri())
    assert source.path == path.as_uri()
    assert source.parts[0].path == str(path)


def test_remote_url_through_fsspec() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    data = public(f"{ROLLING}/events_1_local-1623876083964.zstd").read_bytes()
    fs.pipe("/sea-test/eventlog_v2_app-1/events_1_app-1.zstd", data)
    fs.pipe("/sea-test/eventlog_v2_app-1/events_2_app-1.zstd", data)
    fs.pipe("/sea-test/eventlog_v2_app-1/appstatus_app-1", b"")
    try:
        source = resolve_log("memory://sea-test/eventlog_v2_app-1")
        assert source.layout == "rolling"
        # fsspec spells the memory root "memory:///"; the parts keep the protocol.
        names = [p.path.rsplit("/", 1)[1] for p in source.parts]
        assert names == ["events_1_app-1.zstd", "events_2_app-1.zstd"]
        assert all(p.path.startswith("memory://") for p in source.parts)
        assert source.size_bytes == 2 * len(data)
        with pytest.raises(LogNotFoundError):
            resolve_log("memory://sea-test/nothing-here")
    finally:
        fs.rm("/sea-test", recursive=True)


def test_remote_url_without_fsspec_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    monkeypatch.setitem(sys.modules, "fsspec.core", None)
    with pytest.raises(RemoteStorageError) as info:
        resolve_log("s3://bucket/spark-events/app-1.zstd")
    message = str(info.value)
    assert "s3://bucket/spark-events/app-1.zstd" in message
    assert "pip install 'spark-explain-analyze[remote]'" in message
    assert message.endswith("[remote-storage]")
