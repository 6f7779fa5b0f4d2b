"""Line splitting over whole logs: layouts, codecs, truncated tails, inputs that are not logs."""

from __future__ import annotations

import gzip
import io
import shutil
from pathlib import Path

import orjson
import pytest
import zstandard
from eventlog_samples import BAD, SAMPLES, public, sample_file, zstd_reference

from analyzer.api import analyze
from analyzer.errors import EmptyLogError, NotAnEventLogError
from analyzer.eventlog import decoding
from analyzer.eventlog.codecs import DecodeReport, iter_decompressed, zstd_frame_offsets
from analyzer.eventlog.lines import Line, ReadStats, iter_lines
from analyzer.eventlog.source import Codec, resolve_log
from analyzer.report.header import log_notes

ROLLING = "eventlog_v2_local-1623876083964"


def read_all(path: str | Path) -> tuple[list[Line], ReadStats]:
    """Read every line of the log at `path`."""
    stats = ReadStats()
    return list(iter_lines(resolve_log(str(path)), stats)), stats


def expected_lines(text: bytes) -> list[bytes]:
    """The non-empty lines of a decompressed text."""
    return [line for line in text.split(b"\n") if line]


@pytest.mark.parametrize(
    "name",
    ["python_udf_eventlog", "local-1642039451826", "join_missing_sql_end", "truncated_eventlog"],
)
def test_plain_logs(name: str) -> None:
    path = public(name)
    lines, stats = read_all(path)
    text = path.read_bytes()
    assert [ln.data for ln in lines] == expected_lines(text)
    assert [ln.line_no for ln in lines] == list(range(1, len(lines) + 1))
    assert stats.n_lines == len(lines)
    assert stats.bytes_decompressed == len(text)
    assert not stats.truncated_tail


def test_truncated_public_log_has_no_application_end() -> None:
    lines, stats = read_all(public("truncated_eventlog"))
    assert b"SparkListenerApplicationEnd" not in lines[-1].data
    assert orjson.loads(lines[-1].data)["Event"] == "SparkListenerTaskEnd"
    assert not stats.truncated_tail  # it was cut at a line boundary


@pytest.mark.parametrize("name", ["nds_q72_dataproc_2_2.zstd", "gpu_oom_eventlog.zstd"])
def test_zstd_logs(name: str) -> None:
    path = public(name)
    lines, stats = read_all(path)
    text = zstd_reference(path)
    assert [ln.data for ln in lines] == expected_lines(text)
    assert stats.bytes_decompressed == len(text)
    assert stats.bytes_compressed == path.stat().st_size


def test_malformed_public_log_yields_the_bad_line_unchanged() -> None:
    lines, stats = read_all(public("malformed_json_eventlog.zstd"))
    bad = [ln for ln in lines if not _is_json(ln.data)]
    assert [ln.line_no for ln in bad] == [4]
    assert bad[0].data.startswith(b'{"Event":"SparkListenerEnvironmentUpdate",_')
    assert not stats.truncated_tail


def test_malformed_mid_file_bad_input() -> None:
    lines, stats = read_all(BAD / "malformed_mid_file")
    assert [ln.line_no for ln in lines] == [1, 2, 3, 4]
    assert not _is_json(lines[2].data)
    assert all(ln.path == str(BAD / "malformed_mid_file") for ln in lines)
    assert not stats.truncated_tail


def test_rolling_and_databricks_layouts_hold_the_same_application() -> None:
    rolling, rolling_stats = read_all(public(ROLLING))
    databricks, db_stats = read_all(public("db_sim_eventlog"))
    assert [ln.data for ln in rolling] == [ln.data for ln in databricks]
    assert rolling_stats.bytes_decompressed == db_stats.bytes_decompressed
    # Line numbers restart in each part.
    parts = [Path(ln.path).name for ln in databricks]
    assert parts[0] == "eventlog-2021-06-15--15-00.gz"
    boundary = parts.index("eventlog")
    assert databricks[boundary].line_no == 1
    assert databricks[boundary - 1].line_no == boundary


def test_databricks_order_follows_event_time() -> None:
    """The rotated piece ends with task starts that the live file's first task ends close."""
    lines, _ = read_all(public("db_sim_eventlog"))
    events = [orjson.loads(ln.data) for ln in lines]
    assert events[0]["Event"] == "SparkListenerLogStart"
    assert events[-1]["Event"] == "SparkListenerApplicationEnd"
    started = set()
    for e in events:
        if e["Event"] == "SparkListenerTaskStart":
            started.add(e["Task Info"]["Task ID"])
        elif e["Event"] == "SparkListenerTaskEnd":
            assert e["Task Info"]["Task ID"] in started
    ends = [e["Task Info"]["Finish Time"] for e in events if e["Event"] == "SparkListenerTaskEnd"]
    assert ends == sorted(ends)  # one local executor finishes tasks in order


def test_databricks_reversed_order_would_break_time(tmp_path: Path) -> None:
    """Guard for the ordering rule: the live file's first event comes after the rotated piece."""
    src = public("db_sim_eventlog")
    with gzip.open(src / "eventlog-2021-06-15--15-00.gz", "rb") as f:
        last_rotated = orjson.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[1])
    with (src / "eventlog").open("rb") as f:
        first_live = orjson.loads(f.readline())
    assert last_rotated["Event"] == "SparkListenerTaskStart"
    assert first_live["Event"] == "SparkListenerTaskEnd"
    assert first_live["Task Info"]["Finish Time"] >= last_rotated["Task Info"]["Launch Time"]


@pytest.mark.parametrize("ext", ["lz4", "lzf", "snappy", "zstd"])
def test_spark_written_samples(ext: str) -> None:
    path = sample_file(ext)
    source_path = path.parent if path.name.startswith("events_") else path
    lines, stats = read_all(source_path)
    events = [orjson.loads(ln.data)["Event"] for ln in lines]
    assert events[0] == "SparkListenerLogStart"
    assert "SparkListenerApplicationStart" in events
    assert stats.n_lines == len(lines)
    assert stats.incomplete_block_offset is None


def test_truncated_last_line_bad_input() -> None:
    path = BAD / "truncated_last_line"
    lines, stats = read_all(path)
    assert len(lines) == 2
    assert stats.truncated_tail
    assert stats.truncated_tail_path == str(path)


def _decoded(data: bytes, codec: Codec) -> tuple[bytes, DecodeReport]:
    report = DecodeReport(path="mem")
    return b"".join(iter_decompressed(io.BytesIO(data), codec, report)), report


def _cut_after_a_flush(data: bytes, codec: Codec) -> int | None:
    """A length to cut `data` to that stops inside a frame or block whose preceding text ends
    at a newline (Spark flushed there), or None if the log has no such frame or block."""
    starts = set()
    for k in range(1, 40):  # where the frames or blocks that cuts land in start
        _, report = _decoded(data[: len(data) * k // 40], codec)
        if report.truncated_at_offset is not None:
            starts.add(report.truncated_at_offset)
    for start in sorted(starts):
        text, report = _decoded(data[: start + 5], codec)
        if report.truncated_at_offset is not None and text.endswith(b"\n"):
            return start + 5
    return None


@pytest.mark.parametrize(
    ("ext", "at_a_newline"), [("zstd", True), ("snappy", True), ("lz4", False), ("lzf", False)]
)
def test_a_cut_inside_a_frame_or_block_is_noted(
    tmp_path: Path, ext: Codec, at_a_newline: bool
) -> None:
    """A log cut inside its last frame or block is a cut tail, also when the text decoded
    before the cut ends at a newline (zstd and snappy samples flush at a line's end; the lz4
    and lzf samples' blocks end mid-line)."""
    source = sample_file(ext)
    data = source.read_bytes()
    cut = _cut_after_a_flush(data, ext)
    assert (cut is not None) == at_a_newline
    if cut is None:
        cut = len(data) // 2
    path = tmp_path / source.name
    path.write_bytes(data[:cut])
    lines, stats = read_all(path)
    assert lines and stats.truncated_tail and stats.truncated_tail_path == str(path)
    assert stats.incomplete_block_path == str(path)
    assert stats.dropped_last_line is not at_a_newline


def _zstd_sample() -> Path:
    path = SAMPLES / "local-1795320174558.zstd"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path


def test_the_reported_zstd_cut_on_a_line_boundary_is_noted(tmp_path: Path) -> None:
    """The user's case: this sample cut at 42,864 bytes stops inside a zstd frame, right after
    a newline; `zstd -t` says "premature end"."""
    source = _zstd_sample()
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes()[:42_864])
    analysis = analyze(str(path))
    assert analysis.read_stats.truncated_tail
    assert "the log ends in a cut line or frame; what came before it was read" in log_notes(
        analysis
    )


def test_a_log_cut_at_a_frame_boundary_is_whole(tmp_path: Path) -> None:
    """Between two frames nothing is lost: no cut is noted."""
    source = _zstd_sample()
    data = source.read_bytes()
    offsets = zstd_frame_offsets(data)
    assert offsets is not None
    path = tmp_path / source.name
    path.write_bytes(data[: offsets[0][len(offsets[0]) // 2]])
    _, stats = read_all(path)
    assert not stats.truncated_tail and stats.incomplete_block_path is None


def test_last_line_without_newline_but_complete_is_kept(tmp_path: Path) -> None:
    text = public("python_udf_eventlog").read_bytes()
    path = tmp_path / "app-1"
    path.write_bytes(text.rstrip(b"\n"))
    lines, stats = read_all(path)
    assert [ln.data for ln in lines] == expected_lines(text)
    assert not stats.truncated_tail


def test_in_progress_zstd_cut_mid_frame(tmp_path: Path) -> None:
    text = public("local-1642039451826").read_bytes()
    cctx = zstandard.ZstdCompressor(level=1)
    frames = [cctx.compress(text[i : i + 5000]) for i in range(0, len(text), 5000)]
    data = b"".join(frames)
    cut = sum(len(f) for f in frames[:40]) + len(frames[40]) // 2
    path = tmp_path / "local-1642039451826.zstd.inprogress"
    path.write_bytes(data[:cut])
    source = resolve_log(str(path))
    assert source.in_progress
    stats = ReadStats()
    lines = list(iter_lines(source, stats))
    decoded = b"\n".join(ln.data for ln in lines) + b"\n"
    assert text.startswith(decoded)
    assert stats.incomplete_block_path == str(path)
    assert stats.incomplete_block_offset == sum(len(f) for f in frames[:40])
    assert stats.truncated_tail  # frame 40 ends mid-line


def test_chunk_boundaries_do_not_change_lines(tmp_path: Path) -> None:
    """A long log read through 1 MiB chunks splits exactly like bytes.split."""
    text = zstd_reference(public("nds_q72_dataproc_2_2.zstd"))
    lines, _ = read_all(public("nds_q72_dataproc_2_2.zstd"))
    assert len(text) > 8 << 20
    assert [ln.data for ln in lines] == expected_lines(text)


def test_not_an_eventlog_bad_input() -> None:
    path = BAD / "not_an_eventlog"
    with pytest.raises(NotAnEventLogError) as info:
        read_all(path)
    assert f"{path}:1: " in str(info.value)
    assert str(info.value).endswith("[not-an-event-log]")


def test_compressed_file_without_extension_is_read_by_content(tmp_path: Path) -> None:
    path = tmp_path / "app-1"
    shutil.copy(public("aqeshuffle_eventlog.zstd"), path)
    lines, _ = read_all(path)
    assert [line.data for line in lines] == [
        line.data for line in read_all(public("aqeshuffle_eventlog.zstd"))[0]
    ]
    assert resolve_log(str(path)).parts[0].codec_note == (
        "app-1 holds zstd data but its name has no codec extension: read as zstd"
    )


def test_log_of_blank_lines_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "app-1"
    path.write_bytes(b"\n\n  \n")
    with pytest.raises(EmptyLogError, match=r"holds only blank lines \[empty-log\]"):
        read_all(path)


def test_remote_log_reads_like_a_local_one() -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    path = public("aqeshuffle_eventlog.zstd")
    fs.pipe("/sea-lines/app-1.zstd", path.read_bytes())
    try:
        remote, _ = read_all("memory://sea-lines/app-1.zstd")
    finally:
        fs.rm("/sea-lines", recursive=True)
    local, _ = read_all(path)
    assert [ln.data for ln in remote] == [ln.data for ln in local]


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


@pytest.mark.parametrize("chunk_bytes", [1, 97, 4096])
def test_lines_spanning_many_read_chunks(monkeypatch: pytest.MonkeyPatch, chunk_bytes: int) -> None:
    """Lines longer than a read chunk are joined once, whatever the chunk size."""
    monkeypatch.setattr(decoding, "READ_CHUNK_BYTES", chunk_bytes)
    path = public("python_udf_eventlog")
    lines, stats = read_all(path)
    assert [ln.data for ln in lines] == expected_lines(path.read_bytes())
    assert stats.bytes_decompressed == path.stat().st_size


@pytest.mark.parametrize("ext", ["lz4", "lzf", "snappy"])
def test_framed_codecs_with_small_read_chunks(monkeypatch: pytest.MonkeyPatch, ext: str) -> None:
    """Block headers and payloads cut across read chunks decode the same."""
    path = sample_file(ext)
    source_path = path.parent if path.name.startswith("events_") else path
    expected, _ = read_all(source_path)
    monkeypatch.setattr(decoding, "READ_CHUNK_BYTES", 1000)
    lines, _ = read_all(source_path)
    assert [ln.data for ln in lines] == [ln.data for ln in expected]
