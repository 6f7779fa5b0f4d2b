"""Stream the framings of Spark's Java compression streams, in bounded memory.

lz4 is lz4-java's `LZ4Block` framing (not the LZ4 frame format), snappy is xerial's
`\\x82SNAPPY\\x00` framing (not the Snappy framing format) and lzf is ning's `ZV` chunks. Each
block's header is checked before its block is allocated, and a file that stops mid-block is noted
in the `DecodeReport`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

import cramjam

from analyzer.eventlog.decoding import (
    MAX_BLOCK_BYTES,
    ByteWindow,
    DecodeReport,
    Readable,
    corrupt,
    slices,
)

LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<8sBiii")
_LZ4_METHOD_RAW = 0x10
_LZ4_METHOD_LZ4 = 0x20
_LZ4_MAX_BLOCK_BYTES = MAX_BLOCK_BYTES

SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_BYTES = 16
"""Magic, then int32-BE version and int32-BE compatible version."""
_SNAPPY_MAX_COMPRESSED_BYTES = 32 + MAX_BLOCK_BYTES + MAX_BLOCK_BYTES // 6
"""Snappy's MaxCompressedLength of the largest chunk accepted."""

LZF_MAGIC = b"ZV"
_LZF_TYPE_STORED = 0
_LZF_TYPE_COMPRESSED = 1


def decode_lz4(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield the blocks of lz4-java's `LZ4BlockOutputStream` framing (not the LZ4 frame format).

    A block's header is checked as lz4-java checks it before anything is allocated: its
    decompressed length may not exceed the block size its token declares.
    """
    buf = ByteWindow(stream, report)
    while True:
        if not buf.next_block(_LZ4_HEADER.size):
            return
        start = buf.block_start
        magic, token, compressed_len, decompressed_len, _checksum = _LZ4_HEADER.unpack_from(
            buf.data, buf.pos
        )
        if magic != LZ4_MAGIC:
            raise corrupt(report, start, "expected an LZ4Block header")
        method = token & 0xF0
        block_bytes = 1 << (10 + (token & 0x0F))
        if (
            method not in (_LZ4_METHOD_RAW, _LZ4_METHOD_LZ4)
            or not 0 <= compressed_len <= _LZ4_MAX_BLOCK_BYTES
            or not 0 <= decompressed_len <= min(block_bytes, _LZ4_MAX_BLOCK_BYTES)
            or (method == _LZ4_METHOD_RAW and compressed_len != decompressed_len)
        ):
            raise corrupt(report, start, "invalid LZ4Block header")
        if not buf.ensure_block(_LZ4_HEADER.size + compressed_len):
            return
        buf.skip(_LZ4_HEADER.size)
        payload = buf.take(compressed_len)
        if decompressed_len == 0:
            continue  # end-of-stream block; another stream may follow
        out: bytes | cramjam.Buffer = payload
        if method == _LZ4_METHOD_LZ4:
            try:
                out = cramjam.lz4.decompress_block(payload, output_len=decompressed_len)
            except cramjam.DecompressionError as error:
                raise corrupt(report, start, f"LZ4 block: {error}") from None
            if len(out) != decompressed_len:
                raise corrupt(report, start, "LZ4 block has the wrong decompressed length")
        report.bytes_decompressed += len(out)
        yield from slices(out)


def _snappy_length(payload: bytes) -> int | None:
    """The decompressed length a raw snappy block declares (a varint prefix), or None."""
    value = 0
    for i, byte in enumerate(payload[:5]):
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value
    return None


def decode_snappy(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield the chunks of xerial's `SnappyOutputStream` framing (not the Snappy framing format).

    A chunk's declared decompressed length is checked against `MAX_BLOCK_BYTES` before the
    chunk is decompressed.
    """
    buf = ByteWindow(stream, report)
    seen_header = False
    while True:
        if not buf.next_block(4):
            return
        start = buf.block_start
        if buf.data[buf.pos] == SNAPPY_MAGIC[0]:
            # A header (0x82 is negative as an int32, so never a chunk length): at the start, or
            # again where streams were concatenated.
            if not buf.ensure_block(_SNAPPY_HEADER_BYTES):
                return
            if buf.data[buf.pos : buf.pos + len(SNAPPY_MAGIC)] != SNAPPY_MAGIC:
                raise corrupt(report, start, "expected a snappy-java header")
            buf.skip(_SNAPPY_HEADER_BYTES)
            seen_header = True
            continue
        if not seen_header:
            raise corrupt(report, start, "expected a snappy-java header")
        (compressed_len,) = struct.unpack_from(">i", buf.data, buf.pos)
        if not 0 <= compressed_len <= _SNAPPY_MAX_COMPRESSED_BYTES:
            raise corrupt(report, start, f"invalid snappy chunk length {compressed_len}")
        if not buf.ensure_block(4 + compressed_len):
            return
        buf.skip(4)
        payload = buf.take(compressed_len)
        declared = _snappy_length(payload)
        if declared is None or declared > MAX_BLOCK_BYTES:
            raise corrupt(report, start, "snappy chunk declares an invalid decompressed length")
        try:
            out = cramjam.snappy.decompress_raw(payload)
        except cramjam.DecompressionError as error:
            raise corrupt(report, start, f"snappy chunk: {error}") from None
        report.bytes_decompressed += len(out)
        yield from slices(out)


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


def decode_lzf(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield the chunks of ning compress-lzf's `ZV` framing."""
    lzf_decompress = _lzf_decoder()

    buf = ByteWindow(stream, report)
    while True:
        if not buf.next_block(5):
            return
        start = buf.block_start
        data, pos = buf.data, buf.pos
        if data[pos : pos + 2] != LZF_MAGIC:
            raise corrupt(report, start, "expected an LZF 'ZV' chunk header")
        chunk_type = data[pos + 2]
        if chunk_type == _LZF_TYPE_STORED:
            (length,) = struct.unpack_from(">H", data, pos + 3)
            if not buf.ensure_block(5 + length):
                return
            buf.skip(5)
            out = buf.take(length)
        elif chunk_type == _LZF_TYPE_COMPRESSED:
            if not buf.ensure_block(7):
                return
            compressed_len, decompressed_len = struct.unpack_from(">HH", buf.data, buf.pos + 3)
            if not buf.ensure_block(7 + compressed_len):
                return
            buf.skip(7)
            payload = buf.take(compressed_len)
            decoded = lzf_decompress(payload, decompressed_len)
            if decoded is None:
                raise corrupt(report, start, "LZF chunk does not decode to its stated length")
            out = decoded
        else:
            raise corrupt(report, start, f"unknown LZF chunk type {chunk_type}")
        report.bytes_decompressed += len(out)
        yield out
