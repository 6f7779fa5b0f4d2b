"""Stream the decompressed bytes of an event-log file, for each Spark codec, in bounded memory.

Spark's codecs are not the standard Python containers (except zstd and gzip): lz4 is lz4-java's
`LZ4Block` framing, snappy is xerial's `\\x82SNAPPY\\x00` framing and lzf is ning's `ZV` chunks.
Each decoder reads the file in chunks of `READ_CHUNK_BYTES`, yields decompressed chunks, and
tolerates a file that stops mid-frame or mid-block (a crashed or still-running application): it
yields what decodes and records where the cut is in a `DecodeReport`. Damage anywhere else raises
`CorruptCompressedDataError` with the file and byte offset.

This module chooses the decoder by codec, checks that the content is in the codec the name says,
and decodes gzip; zstd is in `zstd_frames.py`, the Java framings in `java_framings.py`, and what
they share in `decoding.py`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any

from analyzer.errors import CodecMismatchError, UnknownCodecError
from analyzer.eventlog.decoding import (
    MAX_BLOCK_BYTES,
    MAX_CHUNK_BYTES,
    READ_CHUNK_BYTES,
    DecodeReport,
    Readable,
    corrupt,
    decode_none,
    read_chunks,
)
from analyzer.eventlog.java_framings import (
    LZ4_MAGIC,
    LZF_MAGIC,
    SNAPPY_MAGIC,
    decode_lz4,
    decode_lzf,
    decode_snappy,
    lzf_decompress_block,
)
from analyzer.eventlog.source import SUPPORTED_CODECS_STR, Codec
from analyzer.eventlog.zstd_frames import (
    ZSTD_FRAME_MAGIC,
    ZSTD_MAX_WINDOW_BYTES,
    decode_zstd,
    zstd_frame_offsets,
)

_GZIP_OUTPUT_BYTES = MAX_CHUNK_BYTES
"""Largest decompressed piece zlib returns at once."""

GZIP_MAGIC = b"\x1f\x8b"

_UTF8_BOM = b"\xef\xbb\xbf"
_SNIFF_BYTES = 16
"""How many leading bytes are looked at to tell which format a file really holds."""


def _inflate(dobj: Any, data: bytes, report: DecodeReport) -> Iterator[bytes]:
    """Feed `data` to a zlib decompressor, yielding its output in pieces of bounded size."""
    while True:
        out = dobj.decompress(data, _GZIP_OUTPUT_BYTES)
        if out:
            report.bytes_decompressed += len(out)
            yield out
        data = dobj.unconsumed_tail
        if dobj.eof or (not data and len(out) < _GZIP_OUTPUT_BYTES):
            return


def decode_gzip(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield the output of every gzip member in turn (Databricks' rotated `eventlog-*.gz`)."""
    dobj = zlib.decompressobj(wbits=31)
    member_start = 0
    fed = 0
    member_fed = 0
    for chunk in read_chunks(stream, report):
        data = chunk
        while data:
            try:
                yield from _inflate(dobj, data, report)
            except zlib.error as error:
                raise corrupt(report, member_start, f"gzip member: {error}") from None
            if not dobj.eof:
                fed += len(data)
                member_fed += len(data)
                break
            rest = dobj.unused_data
            fed += len(data) - len(rest)
            member_start = fed
            member_fed = 0
            dobj = zlib.decompressobj(wbits=31)
            data = rest
    if member_fed:
        # zlib keeps decoded-but-unflushed output back until more input or flush(); what it
        # holds is less than one deflate window (32 KiB).
        tail = dobj.flush()
        if tail:
            report.bytes_decompressed += len(tail)
            yield tail
        report.truncated_at_offset = member_start


_Decoder = Callable[[Readable, DecodeReport], Iterator[bytes]]

_DECODERS: dict[str, _Decoder] = {
    "none": decode_none,
    "zstd": decode_zstd,
    "gz": decode_gzip,
    "lz4": decode_lz4,
    "snappy": decode_snappy,
    "lzf": decode_lzf,
}


_FORMAT_NAMES: dict[str, str] = {
    "zstd": "zstd data (zstd frames)",
    "gz": "gzip data",
    "lz4": "lz4 data (LZ4Block)",
    "snappy": "snappy data (snappy-java framing)",
    "lzf": "lzf data (ZV chunks)",
}


class _Replay:
    """A readable stream that returns `head` first, then the rest of `stream`."""

    def __init__(self, head: bytes, stream: Readable) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1, /) -> bytes:
        """Read up to `size` bytes (all that is left if `size` is negative)."""
        head, self._head = self._head, b""
        if not head:
            return self._stream.read(size)
        if size < 0:
            return head + self._stream.read()
        if len(head) >= size:
            self._head = head[size:]
            return head[:size]
        return head + self._stream.read(size - len(head))


def _check_format(head: bytes, codec: Codec, path: str) -> None:
    """Raise `CodecMismatchError` if `head` is plainly in another format than `codec` names."""
    found = sniff_codec(head)
    if found == codec:
        return
    if found is not None:
        said = "has no codec extension" if codec == "none" else f"says {codec}"
        raise CodecMismatchError(
            f"looks like {_FORMAT_NAMES[found]}, but the file name {said}",
            path=path,
            offset=0,
            hint=f"rename it to end in .{found} (Spark's extensions: .zstd, .lz4, .lzf, .snappy)",
        )
    if codec != "none" and head.removeprefix(_UTF8_BOM).lstrip().startswith(b"{"):
        raise CodecMismatchError(
            f"looks like plain JSON lines, but the file name says {codec}",
            path=path,
            offset=0,
            hint=f"remove the .{codec} extension",
        )


def iter_decompressed(
    stream: Readable, codec: Codec, report: DecodeReport, *, check_format: bool = True
) -> Iterator[bytes]:
    """Yield the decompressed bytes of `stream` in chunks; a cut-off tail is noted in `report`.

    Every chunk holds at most `MAX_CHUNK_BYTES`. With `check_format` (for a file read from its
    start), data that is plainly in another format than `codec` (lz4 in a `.zstd` file, plain
    JSON in a `.lz4` file) raises `CodecMismatchError` naming the format found.
    """
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise UnknownCodecError(
            f"unknown codec {codec!r}", path=report.path, hint=f"supported: {SUPPORTED_CODECS_STR}"
        )
    if not check_format:
        return decoder(stream, report)
    return _checked(stream, codec, report, decoder)


def _checked(
    stream: Readable, codec: Codec, report: DecodeReport, decoder: _Decoder
) -> Iterator[bytes]:
    head = stream.read(_SNIFF_BYTES)
    _check_format(head, codec, report.path)
    yield from decoder(_Replay(head, stream), report)


def sniff_codec(head: bytes) -> Codec | None:
    """Return the codec whose magic bytes `head` starts with, or None (used for clearer errors)."""
    if head.startswith(ZSTD_FRAME_MAGIC):
        return "zstd"
    if head.startswith(GZIP_MAGIC):
        return "gz"
    if head.startswith(LZ4_MAGIC):
        return "lz4"
    if head.startswith(SNAPPY_MAGIC):
        return "snappy"
    if head.startswith(LZF_MAGIC) and len(head) > 2 and head[2] in (0, 1):
        return "lzf"
    return None


__all__ = [
    "GZIP_MAGIC",
    "MAX_BLOCK_BYTES",
    "MAX_CHUNK_BYTES",
    "READ_CHUNK_BYTES",
    "ZSTD_FRAME_MAGIC",
    "ZSTD_MAX_WINDOW_BYTES",
    "DecodeReport",
    "Readable",
    "decode_gzip",
    "decode_lz4",
    "decode_lzf",
    "decode_none",
    "decode_snappy",
    "decode_zstd",
    "iter_decompressed",
    "lzf_decompress_block",
    "sniff_codec",
    "zstd_frame_offsets",
]
