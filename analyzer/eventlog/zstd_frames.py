"""Stream a zstd event log frame by frame and block by block, in bounded memory.

Spark closes a zstd frame at every flush, so a log is thousands of small frames; a frame of a
few KB may also expand to gigabytes. The frame and block headers are walked here, so that the
decompressor is fed at most one block's worth of output at a time and a cut file's last frame is
found; `zstd_frame_offsets` walks a whole file's headers for `pieces.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

import zstandard

from analyzer.eventlog.decoding import DecodeReport, Readable, corrupt, read_chunks

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

ZSTD_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_FRAME_MAGIC_INT = int.from_bytes(ZSTD_FRAME_MAGIC, "little")


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
    chunks = read_chunks(stream, report)
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
            raise corrupt(report, group_offset, f"zstd frame: {error}") from None
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
                raise corrupt(report, base + pos, "expected a zstd frame header")
            if len(data) - pos < 5 and not more(5):
                report.truncated_at_offset = base + pos
                break
            descriptor = data[pos + 4]
            if descriptor & 0x08:
                raise corrupt(report, base + pos, "zstd frame header has its reserved bit set")
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
            raise corrupt(report, base + pos, "invalid zstd block header")
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
