"""Decoders for each Spark codec: full decode, multi-frame input, truncated and damaged data."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import pytest
import zstandard
from eventlog_samples import as_stream, public, sample_files, zstd_reference
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.errors import CorruptCompressedDataError, UnknownCodecError
from analyzer.eventlog.codecs import DecodeReport, iter_decompressed, sniff_codec
from analyzer.eventlog.source import Codec

PUBLIC_ZSTD = [
    "nds_q72_dataproc_2_2.zstd",
    "gpu_oom_eventlog.zstd",
    "aqeshuffle_eventlog.zstd",
    "malformed_json_eventlog.zstd",
    "spark2-eventlog.zstd",
    "eventlog_v2_local-1623876083964/events_1_local-1623876083964.zstd",
]


def decode(data: bytes, codec: Codec, path: str = "mem") -> tuple[bytes, DecodeReport]:
    """Decode `data` fully and return the text and the report."""
    report = DecodeReport(path=path)
    out = b"".join(iter_decompressed(as_stream(data), codec, report))
    return out, report


@functools.cache
def _public_bytes(name: str) -> bytes:
    return public(name).read_bytes()


@functools.cache
def _plain_text() -> bytes:
    """A real uncompressed log, the source text of the re-framed streams below."""
    return _public_bytes("local-1642039451826")


@functools.cache
def _multi_frame_zstd() -> bytes:
    """The plain log as many small zstd frames, as Spark writes (one frame per flush)."""
    text = _plain_text()
    cctx = zstandard.ZstdCompressor(level=1)
    return b"".join(cctx.compress(text[i : i + 7000]) for i in range(0, len(text), 7000))


@functools.cache
def _multi_member_gzip() -> bytes:
    text = _plain_text()
    return b"".join(gzip.compress(text[i : i + 50000]) for i in range(0, len(text), 50000))


@pytest.mark.parametrize("name", PUBLIC_ZSTD)
def test_zstd_public_logs_decode_like_zstandard(name: str) -> None:
    path = public(name)
    out, report = decode(path.read_bytes(), "zstd", str(path))
    assert out == zstd_reference(path)
    assert report.truncated_at_offset is None
    assert report.bytes_decompressed == len(out)
    assert out.startswith(b'{"Event":"SparkListenerLogStart"')


def test_zstd_reads_across_frames() -> None:
    data = _multi_frame_zstd()
    assert data.count(b"\x28\xb5\x2f\xfd") > 10
    out, report = decode(data, "zstd")
    assert out == _plain_text()
    assert report.truncated_at_offset is None


def test_gzip_rotated_databricks_piece() -> None:
    path = public("db_sim_eventlog/eventlog-2021-06-15--15-00.gz")
    out, report = decode(path.read_bytes(), "gz", str(path))
    assert out == gzip.decompress(path.read_bytes())
    assert report.truncated_at_offset is None


def test_gzip_reads_concatenated_members() -> None:
    out, _ = decode(_multi_member_gzip(), "gz")
    assert out == _plain_text()


def test_none_passes_bytes_through() -> None:
    out, report = decode(_plain_text(), "none")
    assert out == _plain_text()
    assert report.bytes_read == report.bytes_decompressed == len(out)


@pytest.mark.parametrize("ext", ["lz4", "lzf", "snappy"])
def test_spark_framed_codecs_decode_real_logs(ext: str) -> None:
    files = sample_files(ext)
    if not files:
        pytest.skip(f"no *.{ext} sample log under sample_eventlogs/ (made by the pyspark script)")
    for path in files:
        data = path.read_bytes()
        out, report = decode(data, ext, str(path))  # type: ignore[arg-type]
        assert report.truncated_at_offset is None, path
        assert sniff_codec(data) == ext
        first_line = out.split(b"\n", 1)[0]
        assert first_line.startswith(b'{"Event":"SparkListener'), path
        assert out.endswith(b"\n")


def test_zstd_damaged_frame_names_file_and_offset() -> None:
    data = bytearray(_multi_frame_zstd())
    second_frame = data.index(b"\x28\xb5\x2f\xfd", 4)
    data[second_frame : second_frame + 4] = b"JUNK"
    with pytest.raises(CorruptCompressedDataError) as info:
        decode(bytes(data), "zstd", "/logs/app.zstd")
    message = str(info.value)
    assert info.value.offset == second_frame
    assert f"/logs/app.zstd (byte {second_frame})" in message
    assert message.endswith("[corrupt-data]")


def test_gzip_damaged_data_is_corrupt_not_truncated() -> None:
    data = bytearray(_multi_member_gzip())
    data[200:260] = bytes(60)
    with pytest.raises(CorruptCompressedDataError, match=r"\(byte 0\).*\[corrupt-data\]"):
        decode(bytes(data), "gz", "/logs/eventlog-2021-06-15--15-00.gz")


def test_lz4_damaged_header_is_corrupt() -> None:
    path = sample_files("lz4")[0] if sample_files("lz4") else None
    if path is None:
        pytest.skip("no *.lz4 sample log under sample_eventlogs/")
    data = bytearray(path.read_bytes())
    second = data.index(b"LZ4Block", 8)
    data[second : second + 8] = b"LZ4Blokk"
    with pytest.raises(CorruptCompressedDataError, match=rf"\(byte {second}\)"):
        decode(bytes(data), "lz4", str(path))


def test_unknown_codec_lists_the_supported_ones() -> None:
    with pytest.raises(UnknownCodecError, match=r"\.zstd.*\[unknown-codec\]"):
        decode(b"x", "bz2", "/logs/app.bz2")  # type: ignore[arg-type]


def _cut_cases() -> list[tuple[str, Codec, bytes]]:
    cases: list[tuple[str, Codec, bytes]] = [
        ("zstd multi-frame", "zstd", _multi_frame_zstd()),
        ("zstd public", "zstd", _public_bytes("aqeshuffle_eventlog.zstd")),
        ("gzip", "gz", _multi_member_gzip()),
    ]
    framed: tuple[Codec, ...] = ("zstd", "lz4", "lzf", "snappy")  # Spark-written samples
    for ext in framed:
        for path in sample_files(ext)[:1]:
            cases.append((str(path), ext, path.read_bytes()))
    return cases


@functools.cache
def _full_text(index: int) -> bytes:
    _, codec, data = _cut_cases()[index]
    return decode(data, codec)[0]


@settings(max_examples=100, deadline=None)
@given(case=st.integers(min_value=0, max_value=63), fraction=st.floats(0.0, 1.0))
def test_a_cut_file_decodes_to_an_exact_prefix(case: int, fraction: float) -> None:
    cases = _cut_cases()
    index = case % len(cases)
    name, codec, data = cases[index]
    cut = int(len(data) * fraction)
    out, report = decode(data[:cut], codec, name)
    full = _full_text(index)
    assert full.startswith(out), name
    if cut == len(data):
        assert out == full
        assert report.truncated_at_offset is None
    elif report.truncated_at_offset is not None:
        assert 0 <= report.truncated_at_offset < cut


def test_cut_mid_frame_is_reported_not_raised() -> None:
    data = _multi_frame_zstd()
    out, report = decode(data[: len(data) // 2 + 3], "zstd")
    assert report.truncated_at_offset is not None
    assert _plain_text().startswith(out)
    assert len(out) > len(_plain_text()) // 3


def test_sniff_codec_recognises_magic_bytes(tmp_path: Path) -> None:
    assert sniff_codec(_multi_frame_zstd()) == "zstd"
    assert sniff_codec(_multi_member_gzip()) == "gz"
    assert sniff_codec(b'{"Event":') is None


def test_pure_python_lzf_decoder_matches_the_c_one() -> None:
    import lzf

    from analyzer.eventlog.codecs import lzf_decompress_block

    text = b'{"Event":"SparkListenerTaskEnd","Stage ID":3}\n' * 200 + bytes(range(256)) * 4
    for size in (1, 7, 33, 500, len(text)):
        block = lzf.compress(text[:size])
        if block is None:  # incompressible input: Spark stores such chunks raw
            continue
        assert lzf_decompress_block(block, size) == text[:size]
        assert lzf_decompress_block(block, size + 1) is None
