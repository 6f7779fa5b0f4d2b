"""Stream the decompressed bytes of an event-log file, for each Spark codec, in bounded memory.

Spark's codecs are not the standard Python containers (except zstd and gzip): lz4 is lz4-java's
`LZ4Block` framing, snappy is xerial's `\\x82SNAPPY\\x00` framing and lzf is ning's `ZV` chunks.
Each decoder below reads the file in chunks of `READ_CHUNK_BYTES`, yields decompressed chunks, and
tolerates a file that stops mid-frame or mid-block (a crashed or still-running application): it
yields what decodes and records where the cut is in a `DecodeReport`. Damage anywhere else raises
`CorruptCompressedDataError` with the file and byte offset.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import cramjam
import zstandard

from analyzer.errors import CorruptCompressedDataError, UnknownCodecError
from analyzer.eventlog.source import SUPPORTED_CODECS_STR, Codec

READ_CHUNK_BYTES = 1 << 20
"""How much compressed input to read at a time."""

_ZSTD_INPUT_BYTES = 1 << 17
"""Smaller input pieces for zstd: event logs compress 20-50x, so this bounds one output chunk."""

_GZIP_OUTPUT_BYTES = 4 << 20
"""Largest decompressed piece zlib returns at once."""

_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<8sBiii")
_LZ4_METHOD_RAW = 0x10
_LZ4_METHOD_LZ4 = 0x20
_LZ4_MAX_BLOCK_BYTES = 32 << 20
"""lz4-java's largest block size (1 << (0x0F + 10))."""

_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_BYTES = 16
"""Magic, then int32-BE version and int32-BE compatible version."""

_LZF_MAGIC = b"ZV"
_LZF_TYPE_STORED = 0
_LZF_TYPE_COMPRESSED = 1

ZSTD_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class DecodeReport:
    """What one decoder saw: bytes in and out, and whether the file stops mid-frame or mid-block."""

    path: str
    bytes_read: int = 0
    bytes_decompressed: int = 0
    truncated_at_offset: int | None = None
    """Byte offset of the incomplete frame or block the file ends in, if it ends in one."""


def _corrupt(report: DecodeReport, offset: int, what: str) -> CorruptCompressedDataError:
    return CorruptCompressedDataError(
        f"compressed data is damaged: {what}",
        path=report.path,
        offset=offset,
        hint="the file is corrupt or its extension names the wrong codec; fetch a fresh copy",
    )


def _read_chunks(stream: BinaryIO, report: DecodeReport, size: int) -> Iterator[bytes]:
    """Yield raw chunks of `stream` of at most `size` bytes, counting them in `report`."""
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        report.bytes_read += len(chunk)
        yield chunk


def decode_none(stream: BinaryIO, report: DecodeReport) -> Iterator[bytes]:
    """Yield an uncompressed file's bytes as they are."""
    for chunk in _read_chunks(stream, report, READ_CHUNK_BYTES):
        report.bytes_decompressed += len(chunk)
        yield chunk


def decode_zstd(stream: BinaryIO, report: DecodeReport) -> Iterator[bytes]:
    """Yield the output of every zstd frame in turn (Spark closes a frame on each flush)."""
    dctx = zstandard.ZstdDecompressor()
    dobj = dctx.decompressobj()
    frame_start = 0  # offset of the frame being decoded
    fed = 0  # bytes of input given to decompressors so far
    frame_fed = 0  # bytes given to the current frame's decompressor
    for chunk in _read_chunks(stream, report, _ZSTD_INPUT_BYTES):
        data = chunk
        while data:
            try:
                out = dobj.decompress(data)
            except zstandard.ZstdError as error:
                raise _corrupt(report, frame_start, f"zstd frame: {error}") from None
            if out:
                report.bytes_decompressed += len(out)
                yield out
            if not dobj.eof:
                fed += len(data)
                frame_fed += len(data)
                break
            # The frame ended inside `data`: the rest starts the next frame.
            rest = dobj.unused_data
            used = len(data) - len(rest)
            fed += used
            frame_start = fed
            frame_fed = 0
            dobj = dctx.decompressobj()
            data = rest
    if frame_fed:
        report.truncated_at_offset = frame_start


def decode_gzip(stream: BinaryIO, report: DecodeReport) -> Iterator[bytes]:
    """Yield the output of every gzip member in turn (Databricks' rotated `eventlog-*.gz`)."""
    dobj = zlib.decompressobj(wbits=31)
    member_start = 0
    fed = 0
    member_fed = 0
    for chunk in _read_chunks(stream, report, READ_CHUNK_BYTES):
        data = chunk
        while data:
            try:
                out = dobj.decompress(data, _GZIP_OUTPUT_BYTES)
                while out:
                    report.bytes_decompressed += len(out)
                    yield out
                    if not dobj.unconsumed_tail:
                        break
                    out = dobj.decompress(dobj.unconsumed_tail, _GZIP_OUTPUT_BYTES)
            except zlib.error as error:
                raise _corrupt(report, member_start, f"gzip member: {error}") from None
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
        # zlib keeps decoded-but-unflushed output back until more input or flush().
        tail = dobj.flush()
        if tail:
            report.bytes_decompressed += len(tail)
            yield tail
        report.truncated_at_offset = member_start


class _Buffer:
    """A growable window over the compressed input, for block formats parsed by header."""

    def __init__(self, stream: BinaryIO, report: DecodeReport) -> None:
        self._chunks = _read_chunks(stream, report, READ_CHUNK_BYTES)
        self.data = b""
        self.pos = 0
        self.base_offset = 0
        """File offset of `data[0]`."""
        self.at_eof = False

    @property
    def offset(self) -> int:
        """File offset of the next unparsed byte."""
        return self.base_offset + self.pos

    def ensure(self, n_bytes: int) -> bool:
        """Make `n_bytes` available from `pos`; False if the file ends first."""
        while len(self.data) - self.pos < n_bytes:
            if self.at_eof:
                return False
            chunk = next(self._chunks, b"")
            if not chunk:
                self.at_eof = True
                return False
            self.base_offset += self.pos
            self.data = self.data[self.pos :] + chunk
            self.pos = 0
        return True

    def take(self, n_bytes: int) -> bytes:
        """Return the next `n_bytes` (already ensured) and move past them."""
        out = self.data[self.pos : self.pos + n_bytes]
        self.pos += n_bytes
        return out

    def remaining_is_empty(self) -> bool:
        """True if no byte is left in the file after `pos`."""
        return not self.ensure(1)


def decode_lz4(stream: BinaryIO, report: DecodeReport) -> Iterator[bytes]:
    """Yield the blocks of lz4-java's `LZ4BlockOutputStream` framing (not the LZ4 frame format)."""
    buf = _Buffer(stream, report)
    while True:
        start = buf.offset
        if not buf.ensure(_LZ4_HEADER.size):
            if not buf.remaining_is_empty():
                report.truncated_at_offset = start
            return
        magic, token, compressed_len, decompressed_len, _checksum = _LZ4_HEADER.unpack_from(
            buf.data, buf.pos
        )
        if magic != _LZ4_MAGIC:
            raise _corrupt(report, start, "expected an LZ4Block header")
        method = token & 0xF0
        if (
            method not in (_LZ4_METHOD_RAW, _LZ4_METHOD_LZ4)
            or not 0 <= compressed_len <= _LZ4_MAX_BLOCK_BYTES
            or not 0 <= decompressed_len <= _LZ4_MAX_BLOCK_BYTES
            or (method == _LZ4_METHOD_RAW and compressed_len != decompressed_len)
        ):
            raise _corrupt(report, start, "invalid LZ4Block header")
        if not buf.ensure(_LZ4_HEADER.size + compressed_len):
            report.truncated_at_offset = start
            return
        buf.take(_LZ4_HEADER.size)
        payload = buf.take(compressed_len)
        if decompressed_len == 0:
            continue  # end-of-stream block; another stream may follow
        if method == _LZ4_METHOD_RAW:
            out = payload
        else:
            try:
                out = bytes(cramjam.lz4.decompress_block(payload, output_len=decompressed_len))
            except cramjam.DecompressionError as error:
                raise _corrupt(report, start, f"LZ4 block: {error}") from None
            if len(out) != decompressed_len:
                raise _corrupt(report, start, "LZ4 block has the wrong decompressed length")
        report.bytes_decompressed += len(out)
        yield out


def decode_snappy(stream: BinaryIO, report: DecodeReport) -> Iterator[bytes]:
    """Yield the chunks of xerial's `SnappyOutputStream` framing (not the Snappy framing format)."""
    buf = _Buffer(stream, report)
    seen_header = False
    while True:
        start = buf.offset
        if not buf.ensure(4):
            if not buf.remaining_is_empty():
                report.truncated_at_offset = start
            return
        if buf.data[buf.pos] == _SNAPPY_MAGIC[0]:
            # A header (0x82 is negative as an int32, so never a chunk length): at the start, or
            # again where streams were concatenated.
            if not buf.ensure(_SNAPPY_HEADER_BYTES):
                report.truncated_at_offset = start
                return
            if buf.data[buf.pos : buf.pos + len(_SNAPPY_MAGIC)] != _SNAPPY_MAGIC:
                raise _corrupt(report, start, "expected a snappy-java header")
            buf.take(_SNAPPY_HEADER_BYTES)
            seen_header = True
            continue
        if not seen_header:
            raise _corrupt(report, start, "expected a snappy-java header")
        (compressed_len,) = struct.unpack_from(">i", buf.data, buf.pos)
        if compressed_len < 0:
            raise _corrupt(report, start, "negative snappy chunk length")
        if not buf.ensure(4 + compressed_len):
            report.truncated_at_offset = start
            return
        buf.take(4)
        payload = buf.take(compressed_len)
        try:
            out = bytes(cramjam.snappy.decompress_raw(payload))
        except cramjam.DecompressionError as error:
            raise _corrupt(report, start, f"snappy chunk: {error}") from None
        report.bytes_decompressed += len(out)
        yield out


def lzf_decompress_block(payload: bytes, out_len: int) -> bytes | None:
    """Decode one raw LZF (liblzf) block in pure Python; None if it does not give `out_len` bytes.

    The fallback when the C extension python-lzf is not installed (the `fast-lzf` extra): LZF is
    the rarest of Spark's codecs, so correctness without a compiler matters more than speed.

    >>> lzf_decompress_block(bytes([2]) + b"abc" + bytes([0x20, 2]), 6)
    b'abcabc'
    """
    out = bytearray()
    i, n = 0, len(payload)
    while i < n:
        ctrl = payload[i]
        i += 1
        if ctrl < 32:  # a literal run of ctrl + 1 bytes
            end = i + ctrl + 1
            if end > n:
                return None
            out += payload[i:end]
            i = end
            continue
        length = ctrl >> 5  # a back reference: length - 2 in the top bits, 7 means "read more"
        if length == 7:
            if i >= n:
                return None
            length += payload[i]
            i += 1
        if i >= n:
            return None
        ref = len(out) - ((ctrl & 0x1F) << 8) - payload[i] - 1
        i += 1
        length += 2
        if ref < 0:
            return None
        if ref + length <= len(out):
            out += out[ref : ref + length]
        else:  # the copy overlaps what it writes: byte by byte
            for k in range(length):
                out.append(out[ref + k])
        if len(out) > out_len:
            return None
    return bytes(out) if len(out) == out_len else None


def _lzf_decoder() -> Callable[[bytes, int], bytes | None]:
    """The C decoder of python-lzf when installed, else the pure-Python one."""
    try:
        import lzf
    except ImportError:
        return lzf_decompress_block

    def decode(payload: bytes, out_len: int) -> bytes | None:
        # python-lzf returns None when the output does not fit in the size given.
        decoded: bytes | None = lzf.decompress(payload, out_len + 1)
        return decoded if decoded is not None and len(decoded) == out_len else None

    return decode


def decode_lzf(stream: BinaryIO, report: DecodeReport) -> Iterator[bytes]:
    """Yield the chunks of ning compress-lzf's `ZV` framing."""
    lzf_decompress = _lzf_decoder()

    buf = _Buffer(stream, report)
    while True:
        start = buf.offset
        if not buf.ensure(5):
            if not buf.remaining_is_empty():
                report.truncated_at_offset = start
            return
        data, pos = buf.data, buf.pos
        if data[pos : pos + 2] != _LZF_MAGIC:
            raise _corrupt(report, start, "expected an LZF 'ZV' chunk header")
        chunk_type = data[pos + 2]
        if chunk_type == _LZF_TYPE_STORED:
            (length,) = struct.unpack_from(">H", data, pos + 3)
            if not buf.ensure(5 + length):
                report.truncated_at_offset = start
                return
            buf.take(5)
            out = buf.take(length)
        elif chunk_type == _LZF_TYPE_COMPRESSED:
            if not buf.ensure(7):
                report.truncated_at_offset = start
                return
            compressed_len, decompressed_len = struct.unpack_from(">HH", buf.data, buf.pos + 3)
            if not buf.ensure(7 + compressed_len):
                report.truncated_at_offset = start
                return
            buf.take(7)
            payload = buf.take(compressed_len)
            decoded = lzf_decompress(payload, decompressed_len)
            if decoded is None:
                raise _corrupt(report, start, "LZF chunk does not decode to its stated length")
            out = decoded
        else:
            raise _corrupt(report, start, f"unknown LZF chunk type {chunk_type}")
        report.bytes_decompressed += len(out)
        yield out


_DECODERS: dict[str, Callable[[BinaryIO, DecodeReport], Iterator[bytes]]] = {
    "none": decode_none,
    "zstd": decode_zstd,
    "gz": decode_gzip,
    "lz4": decode_lz4,
    "snappy": decode_snappy,
    "lzf": decode_lzf,
}


def iter_decompressed(stream: BinaryIO, codec: Codec, report: DecodeReport) -> Iterator[bytes]:
    """Yield the decompressed bytes of `stream` in chunks; a cut-off tail is noted in `report`."""
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise UnknownCodecError(
            f"unknown codec {codec!r}", path=report.path, hint=f"supported: {SUPPORTED_CODECS_STR}"
        )
    return decoder(stream, report)


def sniff_codec(head: bytes) -> Codec | None:
    """Return the codec whose magic bytes `head` starts with, or None (used for clearer errors)."""
    if head.startswith(ZSTD_FRAME_MAGIC):
        return "zstd"
    if head.startswith(GZIP_MAGIC):
        return "gz"
    if head.startswith(_LZ4_MAGIC):
        return "lz4"
    if head.startswith(_SNAPPY_MAGIC):
        return "snappy"
    if head.startswith(_LZF_MAGIC) and len(head) > 2 and head[2] in (0, 1):
        return "lzf"
    return None
