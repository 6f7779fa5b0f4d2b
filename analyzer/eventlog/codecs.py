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
from typing import Any, Protocol

import cramjam
import zstandard

from analyzer.errors import CodecMismatchError, CorruptCompressedDataError, UnknownCodecError
from analyzer.eventlog.source import SUPPORTED_CODECS_STR, Codec

READ_CHUNK_BYTES = 1 << 20
"""How much compressed input to read at a time."""

MAX_CHUNK_BYTES = 4 << 20
"""The most decompressed bytes any decoder yields at once, whatever the input claims or holds.

Compressed input can expand thousands of times (an 8 KB zstd frame holds 256 MiB of newlines),
so no decoder decompresses "everything this input makes": zstd is fed one block's worth at a
time, gzip is asked for at most this much per call, and the block formats check a block's
claimed length before allocating it and hand out a large block in slices.
"""

MAX_BLOCK_BYTES = 32 << 20
"""The largest lz4 block or snappy chunk accepted: lz4-java's largest block size
(1 << (0x0F + 10)). Spark writes 32 KiB blocks; a header claiming more is damaged data."""

ZSTD_MAX_WINDOW_BYTES = 1 << 27
"""The largest zstd window accepted (libzstd's default limit; level 22 needs it, Spark's level 1
uses 512 KiB). The decompressor holds one window, so this bounds its memory too."""

_ZSTD_BLOCK_MAX_BYTES = 128 << 10
"""A zstd block never decompresses to more than this (the format's Block_Maximum_Size)."""
_ZSTD_FEED_OUTPUT_BYTES = 128 << 10
"""The most output one call to the zstd decompressor may give: one block's worth. Small outputs
reuse the same warm memory; multi-MB ones cost page faults and a join (measured: 40% slower)."""
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
"""Skippable frames have magic 0x184D2A50 to 0x184D2A5F (little-endian)."""

_GZIP_OUTPUT_BYTES = MAX_CHUNK_BYTES
"""Largest decompressed piece zlib returns at once."""

_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<8sBiii")
_LZ4_METHOD_RAW = 0x10
_LZ4_METHOD_LZ4 = 0x20
_LZ4_MAX_BLOCK_BYTES = MAX_BLOCK_BYTES

_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER_BYTES = 16
"""Magic, then int32-BE version and int32-BE compatible version."""
_SNAPPY_MAX_COMPRESSED_BYTES = 32 + MAX_BLOCK_BYTES + MAX_BLOCK_BYTES // 6
"""Snappy's MaxCompressedLength of the largest chunk accepted."""

_LZF_MAGIC = b"ZV"
_LZF_TYPE_STORED = 0
_LZF_TYPE_COMPRESSED = 1

ZSTD_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_FRAME_MAGIC_INT = int.from_bytes(ZSTD_FRAME_MAGIC, "little")
GZIP_MAGIC = b"\x1f\x8b"

_UTF8_BOM = b"\xef\xbb\xbf"
_SNIFF_BYTES = 16
"""How many leading bytes are looked at to tell which format a file really holds."""


class Readable(Protocol):
    """What the decoders need of a stream: a local file, an fsspec file, `io.BytesIO`."""

    def read(self, size: int = -1, /) -> bytes:
        """Read up to `size` bytes; b"" at the end."""
        ...


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


def _read_chunks(stream: Readable, report: DecodeReport, size: int) -> Iterator[bytes]:
    """Yield raw chunks of `stream` of at most `size` bytes, counting them in `report`."""
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        report.bytes_read += len(chunk)
        yield chunk


def _slices(block: bytes | cramjam.Buffer) -> Iterator[bytes]:
    """Yield a decompressed block as bytes, in pieces of at most `MAX_CHUNK_BYTES`."""
    if len(block) <= MAX_CHUNK_BYTES:
        yield bytes(block)
        return
    view = memoryview(block)
    for start in range(0, len(view), MAX_CHUNK_BYTES):
        yield bytes(view[start : start + MAX_CHUNK_BYTES])


def decode_none(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield an uncompressed file's bytes as they are."""
    for chunk in _read_chunks(stream, report, READ_CHUNK_BYTES):
        report.bytes_decompressed += len(chunk)
        yield chunk


class _Buffer:
    """A growable window over the compressed input, for formats parsed by header."""

    def __init__(self, stream: Readable, report: DecodeReport) -> None:
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
        """Make `n_bytes` available from `pos`; False if the file ends first.

        The chunks needed are joined once, so a large block costs one copy, not one per chunk.
        """
        missing = n_bytes - (len(self.data) - self.pos)
        if missing <= 0:
            return True
        if self.at_eof:
            return False
        pieces = [self.data[self.pos :]]
        while missing > 0:
            chunk = next(self._chunks, b"")
            if not chunk:
                self.at_eof = True
                break
            pieces.append(chunk)
            missing -= len(chunk)
        self.base_offset += self.pos
        self.data = b"".join(pieces)
        self.pos = 0
        return missing <= 0

    def take(self, n_bytes: int) -> bytes:
        """Return the next `n_bytes` (already ensured) and move past them."""
        out = self.data[self.pos : self.pos + n_bytes]
        self.pos += n_bytes
        return out

    def skip(self, n_bytes: int) -> None:
        """Move past the next `n_bytes` (already ensured)."""
        self.pos += n_bytes

    def remaining_is_empty(self) -> bool:
        """True if no byte is left in the file after `pos`."""
        return not self.ensure(1)


def _zstd_header_bytes(descriptor: int) -> int:
    """Length of a zstd frame header (magic included) from its Frame_Header_Descriptor byte."""
    fcs_flag = descriptor >> 6
    single_segment = (descriptor >> 5) & 1
    dict_id_flag = descriptor & 3
    fcs_bytes = (single_segment, 2, 4, 8)[fcs_flag]
    return 4 + 1 + (0 if single_segment else 1) + (0, 1, 2, 4)[dict_id_flag] + fcs_bytes


def decode_zstd(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield the output of every zstd frame in turn (Spark closes a frame on each flush).

    The frame and block headers are walked here so that the decompressor is fed whole blocks
    whose output cannot exceed `_ZSTD_FEED_OUTPUT_BYTES` per call (a zstd block holds at most
    128 KiB): a frame of a few KB that expands to gigabytes is read in bounded pieces. The walk
    also tells where the frame a cut file ends in starts. It keeps its state in local variables
    (a Spark log has a frame per flush, thousands per GB).
    """
    dobj = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW_BYTES).decompressobj(
        write_size=_ZSTD_FEED_OUTPUT_BYTES, read_across_frames=True
    )
    chunks = _read_chunks(stream, report, READ_CHUNK_BYTES)
    data = b""
    pos = 0  # next byte of `data` to parse
    fed = 0  # data[fed:pos] holds whole blocks (and headers) not yet given to the decompressor
    base = 0  # file offset of data[0]
    out_bound = 0  # the most data[fed:pos] can decompress to
    group_offset = 0  # file offset of the first frame with bytes in data[fed:pos]
    frame_start = -1  # file offset of the frame being walked; -1 between frames
    check_bytes = 0  # length of the current frame's checksum
    last_block = False

    def more(n_bytes: int) -> bool:
        """Make n_bytes available at `pos`, keeping data[fed:]; False if the file ends first."""
        nonlocal data, pos, fed, base
        pieces = [data[fed:]]
        missing = n_bytes - (len(data) - pos)
        while missing > 0:
            chunk = next(chunks, b"")
            if not chunk:
                break
            pieces.append(chunk)
            missing -= len(chunk)
        base += fed
        pos -= fed
        fed = 0
        data = b"".join(pieces)
        return missing <= 0

    def feed() -> bytes:
        nonlocal fed, out_bound, group_offset
        piece = data[fed:pos]
        fed = pos
        out_bound = 0
        try:
            out: bytes = dobj.decompress(piece)
        except zstandard.ZstdError as error:
            raise _corrupt(report, group_offset, f"zstd frame: {error}") from None
        group_offset = frame_start if frame_start >= 0 else base + pos
        report.bytes_decompressed += len(out)
        return out

    while True:
        if frame_start < 0:
            # Between frames: a frame header, a skippable frame, or the end of the file.
            if len(data) - pos < 4 and not more(4):
                if pos < len(data):
                    report.truncated_at_offset = base + pos
                break
            magic = int.from_bytes(data[pos : pos + 4], "little")
            if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE_MAGIC:
                if fed < pos and (out := feed()):
                    yield out
                if len(data) - pos < 8 and not more(8):
                    report.truncated_at_offset = base + pos
                    break
                skip = 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
                start = base + pos
                # Skipped without buffering: the frame may declare up to 4 GiB.
                while len(data) - pos < skip:
                    skip -= len(data) - pos
                    base += len(data)
                    data, pos, fed = next(chunks, b""), 0, 0
                    if not data:
                        report.truncated_at_offset = start
                        return
                pos += skip
                fed = pos
                continue
            if magic != _ZSTD_FRAME_MAGIC_INT:
                raise _corrupt(report, base + pos, "expected a zstd frame header")
            if len(data) - pos < 5 and not more(5):
                report.truncated_at_offset = base + pos
                break
            descriptor = data[pos + 4]
            if descriptor & 0x08:
                raise _corrupt(report, base + pos, "zstd frame header has its reserved bit set")
            header_bytes = _zstd_header_bytes(descriptor)
            if len(data) - pos < header_bytes and not more(header_bytes):
                report.truncated_at_offset = base + pos
                break
            frame_start = base + pos
            if fed == pos:
                group_offset = frame_start
            check_bytes = 4 if descriptor & 0x04 else 0
            last_block = False
            pos += header_bytes
            continue
        if last_block:
            # The frame's optional checksum, then the frame is complete.
            if len(data) - pos < check_bytes and not more(check_bytes):
                report.truncated_at_offset = frame_start
                break
            pos += check_bytes
            frame_start = -1
            continue
        if len(data) - pos < 3 and not more(3):
            report.truncated_at_offset = frame_start
            break
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        block_type = (header >> 1) & 3
        block_size = header >> 3
        if block_type == 3 or block_size > _ZSTD_BLOCK_MAX_BYTES:
            raise _corrupt(report, base + pos, "invalid zstd block header")
        # An RLE block holds one byte, repeated block_size times.
        block_bytes = 4 if block_type == 1 else 3 + block_size
        if len(data) - pos < block_bytes and not more(block_bytes):
            report.truncated_at_offset = frame_start
            break
        bound = block_size if block_type < 2 else _ZSTD_BLOCK_MAX_BYTES
        if out_bound + bound > _ZSTD_FEED_OUTPUT_BYTES and (out := feed()):
            yield out
        pos += block_bytes
        out_bound += bound
        last_block = bool(header & 1)
    if fed < pos and (out := feed()):
        yield out


def zstd_frame_offsets(data: bytes) -> tuple[list[int], int] | None:
    """Walk the frame and block headers of a whole zstd file held in `data`, decompressing nothing.

    Return the offset of every frame and a bound on the whole output (a compressed block yields
    at most 128 KiB), or None where `decode_zstd` might not read the file cleanly: a skippable
    frame, anything it would call corrupt, a frame it could not decode without a dictionary or
    within `ZSTD_MAX_WINDOW_BYTES`, or a file cut short. Frames can then be decoded alone (each
    starts afresh), the last ones first.
    """
    offsets: list[int] = []
    out_bound = 0
    pos = 0
    end = len(data)
    while pos < end:
        if end - pos < 6 or data[pos : pos + 4] != ZSTD_FRAME_MAGIC:
            return None
        descriptor = data[pos + 4]
        header_bytes = _zstd_header_bytes(descriptor)
        if descriptor & 0x0B or end - pos < header_bytes:  # reserved bit, or a dictionary id
            return None
        try:
            parameters = zstandard.get_frame_parameters(data[pos : pos + header_bytes])
        except zstandard.ZstdError:
            return None
        if parameters.window_size > ZSTD_MAX_WINDOW_BYTES:
            return None
        offsets.append(pos)
        pos += header_bytes
        while True:
            if end - pos < 3:
                return None
            header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            block_type = (header >> 1) & 3
            block_size = header >> 3
            if block_type == 3 or block_size > _ZSTD_BLOCK_MAX_BYTES:
                return None
            pos += 4 if block_type == 1 else 3 + block_size
            out_bound += block_size if block_type < 2 else _ZSTD_BLOCK_MAX_BYTES
            if header & 1:
                break
        pos += 4 if descriptor & 0x04 else 0  # the frame's checksum
    return (offsets, out_bound) if pos == end else None


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
    for chunk in _read_chunks(stream, report, READ_CHUNK_BYTES):
        data = chunk
        while data:
            try:
                yield from _inflate(dobj, data, report)
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
        # zlib keeps decoded-but-unflushed output back until more input or flush(); what it
        # holds is less than one deflate window (32 KiB).
        tail = dobj.flush()
        if tail:
            report.bytes_decompressed += len(tail)
            yield tail
        report.truncated_at_offset = member_start


def decode_lz4(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield the blocks of lz4-java's `LZ4BlockOutputStream` framing (not the LZ4 frame format).

    A block's header is checked as lz4-java checks it before anything is allocated: its
    decompressed length may not exceed the block size its token declares.
    """
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
        block_bytes = 1 << (10 + (token & 0x0F))
        if (
            method not in (_LZ4_METHOD_RAW, _LZ4_METHOD_LZ4)
            or not 0 <= compressed_len <= _LZ4_MAX_BLOCK_BYTES
            or not 0 <= decompressed_len <= min(block_bytes, _LZ4_MAX_BLOCK_BYTES)
            or (method == _LZ4_METHOD_RAW and compressed_len != decompressed_len)
        ):
            raise _corrupt(report, start, "invalid LZ4Block header")
        if not buf.ensure(_LZ4_HEADER.size + compressed_len):
            report.truncated_at_offset = start
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
                raise _corrupt(report, start, f"LZ4 block: {error}") from None
            if len(out) != decompressed_len:
                raise _corrupt(report, start, "LZ4 block has the wrong decompressed length")
        report.bytes_decompressed += len(out)
        yield from _slices(out)


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
            buf.skip(_SNAPPY_HEADER_BYTES)
            seen_header = True
            continue
        if not seen_header:
            raise _corrupt(report, start, "expected a snappy-java header")
        (compressed_len,) = struct.unpack_from(">i", buf.data, buf.pos)
        if not 0 <= compressed_len <= _SNAPPY_MAX_COMPRESSED_BYTES:
            raise _corrupt(report, start, f"invalid snappy chunk length {compressed_len}")
        if not buf.ensure(4 + compressed_len):
            report.truncated_at_offset = start
            return
        buf.skip(4)
        payload = buf.take(compressed_len)
        declared = _snappy_length(payload)
        if declared is None or declared > MAX_BLOCK_BYTES:
            raise _corrupt(report, start, "snappy chunk declares an invalid decompressed length")
        try:
            out = cramjam.snappy.decompress_raw(payload)
        except cramjam.DecompressionError as error:
            raise _corrupt(report, start, f"snappy chunk: {error}") from None
        report.bytes_decompressed += len(out)
        yield from _slices(out)


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
            buf.skip(5)
            out = buf.take(length)
        elif chunk_type == _LZF_TYPE_COMPRESSED:
            if not buf.ensure(7):
                report.truncated_at_offset = start
                return
            compressed_len, decompressed_len = struct.unpack_from(">HH", buf.data, buf.pos + 3)
            if not buf.ensure(7 + compressed_len):
                report.truncated_at_offset = start
                return
            buf.skip(7)
            payload = buf.take(compressed_len)
            decoded = lzf_decompress(payload, decompressed_len)
            if decoded is None:
                raise _corrupt(report, start, "LZF chunk does not decode to its stated length")
            out = decoded
        else:
            raise _corrupt(report, start, f"unknown LZF chunk type {chunk_type}")
        report.bytes_decompressed += len(out)
        yield out


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
    if head.startswith(_LZ4_MAGIC):
        return "lz4"
    if head.startswith(_SNAPPY_MAGIC):
        return "snappy"
    if head.startswith(_LZF_MAGIC) and len(head) > 2 and head[2] in (0, 1):
        return "lzf"
    return None
