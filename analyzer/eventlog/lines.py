"""Stream the decompressed lines of a `LogSource`, lazily, in constant memory.

Lines are split out of large decompressed chunks with `bytes.split`, and a line that spans chunks
is joined once, so the cost is linear in the log size whatever the line lengths.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

import orjson

from analyzer.errors import EmptyLogError, NotAnEventLogError
from analyzer.eventlog.codecs import DecodeReport, iter_decompressed, sniff_codec
from analyzer.eventlog.source import LogPart, LogSource, open_part

_NL = b"\n"
_HEAD_CHECK_BYTES = 64
"""How much of the first line is looked at to tell an event log from another file."""


@dataclass
class ReadStats:
    """What happened while reading; filled in as lines are produced."""

    n_lines: int = 0
    bytes_decompressed: int = 0
    truncated_tail: bool = False
    """The last line of the log was incomplete and was dropped (crashed or in-progress app)."""
    truncated_tail_path: str | None = None
    n_malformed_skipped: int = 0
    """Malformed lines skipped in lenient mode (set by the event decoder)."""
    malformed_examples: list[str] = field(default_factory=list)
    """Up to a few `path:line` locations of skipped malformed lines."""
    bytes_compressed: int = 0
    """On-disk bytes read, over all parts."""
    incomplete_block_path: str | None = None
    """The part whose compressed data stops inside a frame or block (in-progress or crashed app)."""
    incomplete_block_offset: int | None = None
    """Byte offset, in `incomplete_block_path`, of that incomplete frame or block."""


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
    """Raise `NotAnEventLogError` if the first bytes of the log cannot start an event log."""
    codec = sniff_codec(first)
    if codec is not None and codec != part.codec:
        raise NotAnEventLogError(
            f"the file holds {codec}-compressed data but its name says codec '{part.codec}'",
            path=part.path,
            offset=0,
            hint="rename it with the right extension (.zstd, .lz4, .lzf, .snappy, .gz)",
        )
    head = first.lstrip()[:_HEAD_CHECK_BYTES]
    if head and not head.startswith(b"{"):
        raise NotAnEventLogError(
            "line 1 is not a JSON object, so this is not a Spark event log",
            path=part.path,
            line=1,
            hint="point at the event log file (spark.eventLog.dir), not at other output",
        )


def _iter_part_lines(
    part: LogPart, stats: ReadStats, is_last: bool, check_head: bool
) -> Iterator[Line]:
    report = DecodeReport(path=part.path)
    path = part.path
    line_no = 0
    pending: list[bytes] = []  # pieces of a line that spans chunks
    n_yielded = 0
    with open_part(part) as stream:
        for chunk in iter_decompressed(stream, part.codec, report):
            if check_head:
                _check_head(part, chunk)
                check_head = False
            stats.bytes_decompressed += len(chunk)
            last_nl = chunk.rfind(_NL)
            if last_nl < 0:
                pending.append(chunk)
                continue
            if pending:
                first_nl = chunk.find(_NL)
                pending.append(chunk[:first_nl])
                joined = b"".join(pending)
                pending = []
                line_no += 1
                if joined and not joined.isspace():
                    n_yielded += 1
                    yield Line(path, line_no, joined)
                start = first_nl + 1
            else:
                start = 0
            if start <= last_nl:
                for data in chunk[start:last_nl].split(_NL):
                    line_no += 1
                    if data and not data.isspace():
                        n_yielded += 1
                        yield Line(path, line_no, data)
            if last_nl + 1 < len(chunk):
                pending.append(chunk[last_nl + 1 :])
    stats.bytes_compressed += report.bytes_read
    if report.truncated_at_offset is not None:
        stats.incomplete_block_path = path
        stats.incomplete_block_offset = report.truncated_at_offset
    stats.n_lines += n_yielded
    if pending:
        data = b"".join(pending)
        line_no += 1
        if data and not data.isspace():
            # A writer cut off mid-line leaves an incomplete last line; Spark's replay drops it.
            if is_last and not _is_json(data):
                stats.truncated_tail = True
                stats.truncated_tail_path = path
                return
            stats.n_lines += 1
            yield Line(path, line_no, data)


def iter_lines(source: LogSource, stats: ReadStats) -> Generator[Line, None, None]:
    """Yield every complete, non-empty line of every part of `source` in order.

    An incomplete final line (no newline and not valid JSON) of the last part is dropped and noted
    in `stats.truncated_tail`. Raises `EmptyLogError` if the log holds no line at all,
    `NotAnEventLogError` if it does not start like one, and `CorruptCompressedDataError` for
    damaged compressed data away from the end of a file.
    """
    n_parts = len(source.parts)
    for i, part in enumerate(source.parts):
        yield from _iter_part_lines(part, stats, is_last=i == n_parts - 1, check_head=i == 0)
    if stats.n_lines == 0:
        what = "only an incomplete line" if stats.truncated_tail else "no lines"
        raise EmptyLogError(f"event log holds {what}", path=source.path)
