"""Cut a log into pieces that decompress on their own, so that several processes can read it.

An uncompressed part is cut into byte ranges; a zstd part (Spark closes a frame on each flush)
into runs of whole frames; any other part is one piece. A piece's bytes start and end anywhere in
a line: the reader of the pieces joins the end of one to the start of the next (`PieceBytes.head`
and `tail` in `replay.parallel`). Only local files are cut; a piece never crosses parts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from analyzer.errors import AnalyzerError
from analyzer.eventlog.codecs import (
    READ_CHUNK_BYTES,
    ZSTD_FRAME_MAGIC,
    DecodeReport,
    decode_none,
    decode_zstd,
    iter_decompressed,
)
from analyzer.eventlog.lines import MAX_LINE_BYTES
from analyzer.eventlog.source import LogSource, open_part
from analyzer.eventlog.storage import is_url

PIECE_BYTES = 8 << 20
"""About how many decompressed bytes one piece holds: small enough to spread the work and to
keep a piece's results small, large enough that the per-piece cost (a message, a few joins)
does not count."""

_ZSTD_MAGIC_INT = int.from_bytes(ZSTD_FRAME_MAGIC, "little")
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50


@dataclass(frozen=True)
class Piece:
    """A piece of one part of a log: `[start, end)` of the part's bytes on disk."""

    part_index: int
    start: int
    end: int
    whole: bool
    """The piece is the whole part, read with the part's codec from its start."""

    @property
    def first_of_part(self) -> bool:
        """The piece starts at the beginning of its part."""
        return self.start == 0


def plan_pieces(source: LogSource, piece_bytes: int = PIECE_BYTES) -> list[Piece] | None:
    """Cut every part of a local log into pieces, in log order; None for a remote log.

    A zstd part that does not walk as a sequence of complete frames (one frame only, or damage)
    stays one piece: its reader reports what is wrong.
    """
    if any(is_url(part.path) for part in source.parts):
        return None
    pieces: list[Piece] = []
    for index, part in enumerate(source.parts):
        try:
            size = os.stat(part.path).st_size
        except OSError:
            return None
        if part.codec == "none":
            starts = list(range(0, size, piece_bytes)) or [0]
            ends = [*starts[1:], size]
            pieces += [Piece(index, s, e, whole=False) for s, e in zip(starts, ends, strict=True)]
        elif part.codec == "zstd":
            cuts = _zstd_cuts(part.path, size, piece_bytes)
            if cuts is None:
                pieces.append(Piece(index, 0, size, whole=True))
            else:
                pieces += [
                    Piece(index, s, e, whole=False)
                    for s, e in zip([0, *cuts], [*cuts, size], strict=True)
                ]
        else:
            pieces.append(Piece(index, 0, size, whole=True))
    return pieces


_ZSTD_RATIO = 20
"""A guess at how many times a zstd event log expands (level 1 makes 20 to 40 times), used only to
choose how many pieces to cut a zstd part into."""


def _zstd_cuts(path: str, size: int, piece_bytes: int) -> list[int] | None:
    """Offsets of frame starts that cut a zstd file into runs of about `piece_bytes` of output.

    Walks the frame and block headers only (a few bytes per block, skipping block bodies).
    Returns None when the file is not a clean sequence of frames (it ends inside one, or a
    header is damaged), and an empty list when one piece is enough.
    """
    n_pieces = min(max(1, size * _ZSTD_RATIO // piece_bytes), size // 4096 + 1)
    if n_pieces <= 1:
        return []
    frame_starts = _zstd_frame_starts(path, size)
    if frame_starts is None:
        return None
    cuts: list[int] = []
    step = size / n_pieces
    target = step
    for offset in frame_starts[1:]:
        if offset >= target:
            cuts.append(offset)
            while target <= offset:
                target += step
    return cuts


def _zstd_frame_starts(path: str, size: int) -> list[int] | None:
    """File offsets of every zstd frame of a file, or None if it is not a clean frame sequence."""
    starts: list[int] = []
    with open(path, "rb") as handle:
        window = b""
        window_start = 0

        def read_at(offset: int, n_bytes: int) -> bytes:
            nonlocal window, window_start
            end = offset + n_bytes
            if not (window_start <= offset and end <= window_start + len(window)):
                handle.seek(offset)
                window = handle.read(max(n_bytes, READ_CHUNK_BYTES))
                window_start = offset
            return window[offset - window_start : end - window_start]

        pos = 0
        while pos < size:
            head = read_at(pos, 4)
            if len(head) < 4:
                return None
            magic = int.from_bytes(head, "little")
            if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE_MAGIC:
                length = read_at(pos + 4, 4)
                if len(length) < 4:
                    return None
                pos += 8 + int.from_bytes(length, "little")
                continue
            if magic != _ZSTD_MAGIC_INT:
                return None
            starts.append(pos)
            descriptor_byte = read_at(pos + 4, 1)
            if not descriptor_byte:
                return None
            descriptor = descriptor_byte[0]
            fcs_flag = descriptor >> 6
            single_segment = (descriptor >> 5) & 1
            dict_id_bytes = (0, 1, 2, 4)[descriptor & 3]
            fcs_bytes = (single_segment, 2, 4, 8)[fcs_flag]
            pos += 5 + (0 if single_segment else 1) + dict_id_bytes + fcs_bytes
            while True:
                block = read_at(pos, 3)
                if len(block) < 3:
                    return None
                header = block[0] | block[1] << 8 | block[2] << 16
                block_type = (header >> 1) & 3
                if block_type == 3:
                    return None
                pos += 3 + (1 if block_type == 1 else header >> 3)
                if header & 1:
                    break
            if descriptor & 0x04:
                pos += 4
        if pos != size:
            return None
    return starts


class _Range:
    """A readable view of `[start, end)` of a file."""

    def __init__(self, handle: os.PathLike[str] | str, start: int, end: int) -> None:
        self._file = open(handle, "rb")  # noqa: SIM115  (closed by `close`)
        self._file.seek(start)
        self._left = end - start

    def read(self, size: int = -1, /) -> bytes:
        """Read up to `size` bytes of the range (all that is left if `size` is negative)."""
        if self._left <= 0:
            return b""
        want = self._left if size < 0 else min(size, self._left)
        data = self._file.read(want)
        self._left -= len(data)
        return data

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def piece_chunks(source: LogSource, piece: Piece, report: DecodeReport) -> Iterator[bytes]:
    """Yield the decompressed bytes of one piece, in chunks (see `codecs.iter_decompressed`).

    A cut-off end is noted in `report` (its offset counted from the piece's start for a piece
    that is not whole); damage raises `CorruptCompressedDataError`.
    """
    part = source.parts[piece.part_index]
    if piece.whole:
        with open_part(part) as stream:
            yield from iter_decompressed(stream, part.codec, report)
        return
    view = _Range(part.path, piece.start, piece.end)
    try:
        if part.codec == "none":
            yield from decode_none(view, report)
        elif piece.first_of_part:
            yield from iter_decompressed(view, part.codec, report)
        else:
            yield from decode_zstd(view, report)
    finally:
        view.close()


_NL = b"\n"
_UTF8_BOM = b"\xef\xbb\xbf"


class PieceAnomaly(Exception):
    """A piece holds something only the sequential reader reports exactly (damage, a cut, an
    over-long line): the caller reads the whole log that way instead."""


@dataclass
class PieceEdges:
    """What a piece's reader leaves to the caller: the bytes of its first and last lines, which
    may continue in the pieces around it, and what it read."""

    head: bytes = b""
    """The bytes before the piece's first newline (all of them if it has none)."""
    tail: bytes | None = None
    """The bytes after its last newline; None if the piece has no newline at all."""
    bytes_decompressed: int = 0
    bytes_read: int = 0
    """On-disk bytes read."""


def iter_piece_lines(source: LogSource, piece: Piece, edges: PieceEdges) -> Iterator[bytes]:
    """Yield the lines of a piece that lie wholly inside it (between its first and last
    newlines), blank ones included; fill `edges` with the rest.

    Raises `PieceAnomaly` for damaged or cut-off data and for lines longer than
    `lines.MAX_LINE_BYTES`.
    """
    report = DecodeReport(path=source.parts[piece.part_index].path)
    pieces: list[bytes] = []  # of the line in progress
    n_piece_bytes = 0
    seen_newline = False
    first = piece.first_of_part
    try:
        for chunk in piece_chunks(source, piece, report):
            edges.bytes_decompressed += len(chunk)
            if first:
                first = False
                chunk = chunk.removeprefix(_UTF8_BOM)
            nl = chunk.find(_NL)
            if nl < 0:
                pieces.append(chunk)
                n_piece_bytes += len(chunk)
                if n_piece_bytes > MAX_LINE_BYTES:
                    raise PieceAnomaly("a line longer than the reader accepts")
                continue
            pieces.append(chunk[:nl])
            line = b"".join(pieces)
            if seen_newline:
                if len(line) > MAX_LINE_BYTES:
                    raise PieceAnomaly("a line longer than the reader accepts")
                yield line
            else:
                seen_newline = True
                edges.head = line
            last_nl = chunk.rfind(_NL)
            if nl < last_nl:
                yield from chunk[nl + 1 : last_nl].split(_NL)
            pieces = [chunk[last_nl + 1 :]] if last_nl + 1 < len(chunk) else []
            n_piece_bytes = len(pieces[0]) if pieces else 0
    except AnalyzerError as error:
        raise PieceAnomaly(str(error)) from error
    if report.truncated_at_offset is not None:
        raise PieceAnomaly("compressed data cut off")
    edges.bytes_read = report.bytes_read
    rest = b"".join(pieces)
    if seen_newline:
        edges.tail = rest
    else:
        edges.head = rest


__all__ = [
    "PIECE_BYTES",
    "READ_CHUNK_BYTES",
    "Piece",
    "PieceAnomaly",
    "PieceEdges",
    "iter_piece_lines",
    "piece_chunks",
    "plan_pieces",
]
