"""Stream the decompressed lines of a `LogSource`, lazily, in bounded memory.

Lines are split out of decompressed chunks (at most `codecs.MAX_CHUNK_BYTES` each) with
`bytes.split`, and a line that spans chunks is joined once, so the cost is linear in the log
size whatever the line lengths. Two limits keep a hostile log from taking more than that:
a line longer than `MAX_LINE_BYTES` is refused (or skipped and counted, with LENIENT), and runs
of blank lines are stepped over in C without a Python object per line.

Only the last part of a log may end mid-frame or mid-line (a running or crashed application);
a cut in an earlier part of a rolling or Databricks log loses events, and is an error
(`TruncatedPartError`) or, with LENIENT, a note in `ReadStats.truncated_parts`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

import orjson

from analyzer.errors import (
    EmptyLogError,
    LineTooLongError,
    NotAnEventLogError,
    Strictness,
    TruncatedPartError,
)
from analyzer.eventlog.codecs import DecodeReport, iter_decompressed, sniff_codec
from analyzer.eventlog.source import LogPart, LogSource, open_part
from analyzer.units import shown_path

MAX_LINE_BYTES = 128 << 20
"""The longest line read (128 MiB). Spark's writer sets no limit; the longest real lines are
SQLExecutionStart events carrying a huge physical plan, tens of MB. A longer line is refused with
`LineTooLongError` (skipped and counted with LENIENT), so one line never costs more than a few
times this in memory (its pieces, the joined line, the decoded strings)."""

MAX_MALFORMED_EXAMPLES = 5
"""How many `path:line` locations of skipped lines `ReadStats` keeps."""

_NL = b"\n"
_UTF8_BOM = b"\xef\xbb\xbf"
_HEAD_CHECK_BYTES = 64
"""How much of the first line is looked at to tell an event log from another file."""
_MIN_MEAN_LINE_BYTES = 32
"""Below this mean line length a chunk's lines are found by stepping over blank runs instead of
one `split` (the shortest Spark event, `SparkListenerUnpersistRDD`, is about 50 bytes)."""
_BLANK_STEP_MAX_BYTES = 1 << 20


@dataclass
class ReadStats:
    """What happened while reading; filled in as lines are produced."""

    n_lines: int = 0
    bytes_decompressed: int = 0
    truncated_tail: bool = False
    """The log ends cut off (crashed or in-progress app): its last line was incomplete and was
    dropped, or its last part stops inside a compressed frame or block, whose events are lost
    even when what decoded before the cut ends at a newline."""
    truncated_tail_path: str | None = None
    dropped_last_line: bool = False
    """The last line had no newline and was not JSON, and was dropped (as Spark's replay does)."""
    n_malformed_skipped: int = 0
    """Lines skipped in lenient mode: malformed ones (set by the event decoder) and lines longer
    than `MAX_LINE_BYTES`."""
    malformed_examples: list[str] = field(default_factory=list)
    """Up to `MAX_MALFORMED_EXAMPLES` `path:line` locations of skipped lines."""
    bytes_compressed: int = 0
    """On-disk bytes read, over all parts."""
    incomplete_block_path: str | None = None
    """The last part, if its compressed data stops inside a frame or block (in-progress or
    crashed app)."""
    incomplete_block_offset: int | None = None
    """Byte offset, in `incomplete_block_path`, of that incomplete frame or block."""
    truncated_parts: tuple[str, ...] = ()
    """Parts other than the last that end mid-frame or mid-line, in log order (read with LENIENT;
    STRICT raises `TruncatedPartError`). Events after the cut in such a part are lost, so the
    report's numbers may be incomplete although the log looks finished."""

    def note_skipped(self, path: str, line_no: int) -> None:
        """Count a skipped line and keep its location if few are kept so far."""
        self.n_malformed_skipped += 1
        if len(self.malformed_examples) < MAX_MALFORMED_EXAMPLES:
            self.malformed_examples.append(f"{path}:{line_no}")


@dataclass(frozen=True, slots=True)
class Line:
    """One raw line of the log, without its trailing newline."""

    path: str
    line_no: int
    """1-based line number within `path` (a part of the log)."""
    data: bytes


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def _check_head(part: LogPart, first: bytes) -> None:
    """Raise `NotAnEventLogError` if the first decompressed bytes cannot start an event log."""
    inner = sniff_codec(first)
    if inner is not None:
        raise NotAnEventLogError(
            f"the decompressed {part.codec} data is itself {inner}-compressed",
            path=part.path,
            offset=0,
            hint="decompress the inner layer first",
        )
    head = first.lstrip()[:_HEAD_CHECK_BYTES]
    if head and not head.startswith(b"{"):
        raise NotAnEventLogError(
            "line 1 is not a JSON object, so this is not a Spark event log",
            path=part.path,
            line=1,
            hint="point at the event log file (spark.eventLog.dir), not at other output",
        )


def _skip_blank(text: bytes, pos: int) -> int:
    """Return the position of the first non-whitespace byte of `text` at or after `pos`.

    Steps through windows that double in size, each stripped in C: a run of blank lines of any
    length costs time linear in its bytes and no object per line.
    """
    size = 64
    end = len(text)
    while pos < end:
        window = text[pos : pos + size]
        left = len(window.lstrip())
        if left:
            return pos + len(window) - left
        pos += len(window)
        size = min(size * 2, _BLANK_STEP_MAX_BYTES)
    return end


def _sparse_lines(text: bytes, line_no: int) -> Iterator[tuple[int, bytes]]:
    """Yield (line number, line) for the non-blank lines of `text`, complete lines joined by
    newlines whose first is numbered `line_no + 1`."""
    pos = 0
    end = len(text)
    while pos < end:
        first = _skip_blank(text, pos)
        if first >= end:
            return
        # `pos` starts a line, so with no newline between it and `first` the line starts there.
        line_start = text.rfind(_NL, pos, first) + 1 or pos
        line_no += text.count(_NL, pos, line_start)
        line_end = text.find(_NL, first)
        if line_end < 0:
            line_end = end
        line_no += 1
        yield line_no, text[line_start:line_end]
        pos = line_end + 1


def _too_long(
    path: str, line_no: int, max_line_bytes: int, strictness: Strictness, stats: ReadStats
) -> None:
    """Refuse line `line_no` (STRICT) or count it as skipped (LENIENT)."""
    if strictness is Strictness.STRICT:
        raise LineTooLongError(
            f"line is longer than {max_line_bytes >> 20} MiB, the longest this reader accepts",
            path=path,
            line=line_no,
            hint="the log is damaged or hostile; pass --lenient to skip such lines",
        )
    stats.note_skipped(path, line_no)


def _iter_part_lines(
    part: LogPart,
    stats: ReadStats,
    *,
    is_last: bool,
    check_head: bool,
    strictness: Strictness,
    max_line_bytes: int,
    limit_bytes: int | None,
) -> Iterator[Line]:
    report = DecodeReport(path=part.path)
    path = part.path
    line_no = 0
    pending: list[bytes] = []  # pieces of a line that spans chunks
    pending_bytes = 0
    skipping = False  # inside a too-long line that is being skipped (LENIENT)
    first_chunk = True
    n_yielded = 0
    with open_part(part) as stream:
        for chunk in iter_decompressed(stream, part.codec, report):
            stats.bytes_decompressed += len(chunk)
            if first_chunk:
                first_chunk = False
                chunk = chunk.removeprefix(_UTF8_BOM)
                if check_head:
                    _check_head(part, chunk)
            nl = chunk.find(_NL)
            if nl < 0:
                if not skipping:
                    pending_bytes += len(chunk)
                    if pending_bytes > max_line_bytes:
                        _too_long(path, line_no + 1, max_line_bytes, strictness, stats)
                        skipping = True
                        pending = []
                        pending_bytes = 0
                    else:
                        pending.append(chunk)
            else:
                # The line in progress ends at the chunk's first newline.
                line_no += 1
                if skipping:
                    skipping = False
                else:
                    if pending:
                        pending.append(chunk[:nl])
                        data = b"".join(pending)
                        pending = []
                        pending_bytes = 0
                    else:
                        data = chunk[:nl]
                    if len(data) > max_line_bytes:
                        _too_long(path, line_no, max_line_bytes, strictness, stats)
                    elif data and not data.isspace():
                        n_yielded += 1
                        yield Line(path, line_no, data)
                last_nl = chunk.rfind(_NL)
                if nl < last_nl:
                    body_bytes = last_nl - nl - 1
                    # At most one piece per _MIN_MEAN_LINE_BYTES: a chunk of blank lines does
                    # not become millions of list items; its unsplit rest is stepped through.
                    # (The slice is not kept in a variable: holding it while the lines are
                    # used costs a fresh 1 MiB allocation per chunk, 25% of the time.)
                    max_pieces = body_bytes // _MIN_MEAN_LINE_BYTES + 1
                    pieces = chunk[nl + 1 : last_nl].split(_NL, max_pieces)
                    rest = pieces.pop() if len(pieces) > max_pieces else None
                    check_length = body_bytes > max_line_bytes  # only with a small limit
                    for data in pieces:
                        line_no += 1
                        if check_length and len(data) > max_line_bytes:
                            _too_long(path, line_no, max_line_bytes, strictness, stats)
                        elif data and not data.isspace():
                            n_yielded += 1
                            yield Line(path, line_no, data)
                    if rest is not None:
                        for rest_no, data in _sparse_lines(rest, line_no):
                            if check_length and len(data) > max_line_bytes:
                                _too_long(path, rest_no, max_line_bytes, strictness, stats)
                            else:
                                n_yielded += 1
                                yield Line(path, rest_no, data)
                        line_no += rest.count(_NL) + 1
                if last_nl + 1 < len(chunk):
                    pending = [chunk[last_nl + 1 :]]
                    pending_bytes = len(pending[0])
            if limit_bytes is not None and stats.bytes_decompressed >= limit_bytes:
                stats.n_lines += n_yielded
                return
    stats.bytes_compressed += report.bytes_read
    stats.n_lines += n_yielded
    cut_at_line: int | None = None
    if pending and not skipping:
        data = b"".join(pending)
        line_no += 1
        if data and not data.isspace():
            if _is_json(data):
                stats.n_lines += 1
                yield Line(path, line_no, data)
            elif is_last:
                # A writer cut off mid-line leaves an incomplete last line; Spark's replay
                # drops it.
                stats.truncated_tail = True
                stats.truncated_tail_path = path
                stats.dropped_last_line = True
            else:
                cut_at_line = line_no
    if is_last:
        if report.truncated_at_offset is not None:
            # A cut inside a frame or block loses the events in it even when the text decoded
            # before it ends at a newline (Spark's writers flush, and so end a block, at a
            # line's end): the decoder noted the cut while reading, no pass more is needed.
            stats.truncated_tail = True
            stats.truncated_tail_path = path
            stats.incomplete_block_path = path
            stats.incomplete_block_offset = report.truncated_at_offset
    elif report.truncated_at_offset is not None or cut_at_line is not None:
        _cut_part(part, stats, strictness, report, cut_at_line)


def _cut_part(
    part: LogPart,
    stats: ReadStats,
    strictness: Strictness,
    report: DecodeReport,
    line_no: int | None,
) -> None:
    """Refuse (STRICT) or note (LENIENT) a part, not the last, that ends mid-frame or mid-line.

    A cut mid-frame is located at the part's last byte read (where the copy stopped), with the
    start of the frame it is in: a part of one frame would otherwise read "byte 0".
    """
    if strictness is Strictness.LENIENT:
        stats.truncated_parts = (*stats.truncated_parts, shown_path(part.path))
        return
    frame_start = report.truncated_at_offset
    if frame_start is None:
        where, offset = "mid-line", None
    else:
        where = f"mid-frame (the frame or block starts at byte {frame_start})"
        offset = report.bytes_read
    raise TruncatedPartError(
        f"this part is cut off {where}, but it is not the last part of the log, so the events"
        " after the cut are missing",
        path=part.path,
        line=line_no if offset is None else None,
        offset=offset,
        hint="copy the file again; pass --lenient to read what is there and note the gap",
    )


def iter_lines(
    source: LogSource,
    stats: ReadStats,
    *,
    strictness: Strictness = Strictness.STRICT,
    max_line_bytes: int = MAX_LINE_BYTES,
    limit_bytes: int | None = None,
) -> Generator[Line, None, None]:
    """Yield every complete, non-empty line of every part of `source` in order.

    An incomplete final line (no newline and not valid JSON) of the last part is dropped and
    noted in `stats.truncated_tail`; an earlier part that ends mid-frame or mid-line raises
    `TruncatedPartError` (STRICT) or is noted in `stats.truncated_parts` (LENIENT). A line longer
    than `max_line_bytes` raises `LineTooLongError` (STRICT) or is skipped and counted (LENIENT).
    With `limit_bytes`, reading stops quietly once that many bytes were decompressed.

    Raises `EmptyLogError` if the log holds no line at all, `NotAnEventLogError` if it does not
    start like one (`CodecMismatchError` if it is in another format than its name says), and
    `CorruptCompressedDataError` for damaged compressed data away from the end of a file.
    """
    n_parts = len(source.parts)
    for i, part in enumerate(source.parts):
        yield from _iter_part_lines(
            part,
            stats,
            is_last=i == n_parts - 1,
            check_head=i == 0,
            strictness=strictness,
            max_line_bytes=max_line_bytes,
            limit_bytes=limit_bytes,
        )
        if limit_bytes is not None and stats.bytes_decompressed >= limit_bytes:
            break
    if stats.n_lines == 0:
        raise _empty(source, stats, limit_bytes)


def _empty(source: LogSource, stats: ReadStats, limit_bytes: int | None) -> EmptyLogError:
    if limit_bytes is not None and stats.bytes_decompressed >= limit_bytes:
        return EmptyLogError(
            f"no event in the first {limit_bytes >> 20} MiB of the log", path=source.path
        )
    if stats.incomplete_block_offset is not None and stats.bytes_decompressed == 0:
        return EmptyLogError(
            "the file ends inside its first compressed block, so nothing in it can be decoded"
            " (it is truncated)",
            path=source.path,
            hint="copy it again; a running application may not have written a whole block yet",
        )
    if stats.n_malformed_skipped:
        return EmptyLogError("event log holds no line that could be read", path=source.path)
    if stats.dropped_last_line:
        what = "only an incomplete line"
    elif stats.bytes_decompressed:
        what = "only blank lines"
    else:
        what = "no lines"
    return EmptyLogError(f"event log holds {what}", path=source.path)
