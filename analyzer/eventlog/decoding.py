"""What every event-log decoder shares: the stream it reads, the report it fills, bounded reads.

`codecs.py` chooses a decoder by codec; the decoders live in `zstd_frames.py` (zstd),
`java_framings.py` (lz4-java, snappy-java, ning lzf) and `codecs.py` (gzip, and none).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import cramjam

from analyzer.errors import CorruptCompressedDataError

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


def corrupt(report: DecodeReport, offset: int, what: str) -> CorruptCompressedDataError:
    return CorruptCompressedDataError(
        f"compressed data is damaged: {what}",
        path=report.path,
        offset=offset,
        hint="the file is corrupt or its extension names the wrong codec; fetch a fresh copy",
    )


def read_chunks(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield raw chunks of `stream` of at most `READ_CHUNK_BYTES` bytes, counting them in `report`.

    The size is looked up at each call, so that tests can make it small for every decoder."""
    while True:
        chunk = stream.read(READ_CHUNK_BYTES)
        if not chunk:
            return
        report.bytes_read += len(chunk)
        yield chunk


def slices(block: bytes | cramjam.Buffer) -> Iterator[bytes]:
    """Yield a decompressed block as bytes, in pieces of at most `MAX_CHUNK_BYTES`."""
    if len(block) <= MAX_CHUNK_BYTES:
        yield bytes(block)
        return
    view = memoryview(block)
    for start in range(0, len(view), MAX_CHUNK_BYTES):
        yield bytes(view[start : start + MAX_CHUNK_BYTES])


def decode_none(stream: Readable, report: DecodeReport) -> Iterator[bytes]:
    """Yield an uncompressed file's bytes as they are."""
    for chunk in read_chunks(stream, report):
        report.bytes_decompressed += len(chunk)
        yield chunk


class ByteWindow:
    """A growable window over the compressed input, for formats parsed by header."""

    def __init__(self, stream: Readable, report: DecodeReport) -> None:
        self._chunks = read_chunks(stream, report)
        self.data = b""
        self.pos = 0
        self.base_offset = 0
        """File offset of `data[0]`."""
        self.at_eof = False
        self.report = report
        self.block_start = 0
        """File offset of the block (or chunk) being parsed."""

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

    def next_block(self, header_bytes: int) -> bool:
        """Start the next block at the current offset and make its first `header_bytes`
        available; False at the end of the file, where a partial header is noted as a cut."""
        self.block_start = self.offset
        if self.ensure(header_bytes):
            return True
        if not self.remaining_is_empty():
            self.report.truncated_at_offset = self.block_start
        return False

    def ensure_block(self, n_bytes: int) -> bool:
        """Make `n_bytes` of the current block available from `pos`; False, with the block noted
        as cut, where the file ends first."""
        if self.ensure(n_bytes):
            return True
        self.report.truncated_at_offset = self.block_start
        return False

    def remaining_is_empty(self) -> bool:
        """True if no byte is left in the file after `pos`."""
        return not self.ensure(1)
