"""Replay a log, reading a large local one with every core.

Most of a large log is task events, and decoding them is most of the work. A large local log is
cut into pieces (`eventlog.pieces`); forked worker processes decode the pieces' task events into
columns and per-segment totals (`task_columns.TaskRecorder`), and pass every other event's line
on untouched. The parent replays, in log order, those few other events and the workers'
segments (`ApplicationBuilder.apply_segment`), and decodes the lines that cross from one piece to
the next itself. The result is the same as the sequential replay's, bit for bit.

Anything unusual (a malformed or over-long line, damaged or cut-off compressed data, a log that
is still being written, a worker that fails) sends the whole log to the sequential replay, which
reports it exactly as it always does. So do small logs (forking costs more than it saves),
remote logs, and machines without `fork` or with one core.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import msgspec

from analyzer.errors import AnalyzerError, Strictness
from analyzer.eventlog import events as ev
from analyzer.eventlog.lines import MAX_LINE_BYTES, Line, ReadStats
from analyzer.eventlog.pieces import (
    PIECE_BYTES,
    Piece,
    PieceAnomaly,
    PieceEdges,
    iter_piece_lines,
    plan_pieces,
)
from analyzer.eventlog.source import LogSource
from analyzer.eventlog.task_events import TaskEnd, TaskStart
from analyzer.eventlog.workers import WorkerError, can_fork, run_in_workers, usable_cpus
from analyzer.replay.application import ApplicationBuilder, BuiltApplication
from analyzer.replay.task_columns import ColumnSealer, TaskChunk, TaskRecorder, TaskSegment

PARALLEL_MIN_BYTES = 32 << 20
"""Logs with less JSON than this (as far as can be told from their size on disk) are read by one
process: forking and merging would cost more than the second core saves (32 MiB of JSON is
about a second of work)."""
_COMPRESSION_RATIO = 20
"""A guess at how many times a compressed event log expands (zstd level 1 and lz4 make 10 to
40 times)."""

_TASK_START = b"SparkListenerTaskStart"
_TASK_END = b"SparkListenerTaskEnd"
_TASK_DECODERS = {name: ev.event_decoder(name) for name in (_TASK_START, _TASK_END)}


class _TaskEndLine(TaskEnd, frozen=True, gc=False):
    """A task end with its event name: the value of its last `Event` key, escapes resolved, as
    `events.event_name` would say, checked after decoding instead of by a search of the line."""

    event: str = msgspec.field(name="Event", default="")


class _TaskStartLine(TaskStart, frozen=True, gc=False):
    """A task start with its event name (see `_TaskEndLine`)."""

    event: str = msgspec.field(name="Event", default="")


_FAST_DECODERS: dict[bytes, tuple[str, Callable[[bytes], _TaskEndLine | _TaskStartLine]]] = {
    _TASK_END: ("SparkListenerTaskEnd", msgspec.json.Decoder(_TaskEndLine).decode),
    _TASK_START: ("SparkListenerTaskStart", msgspec.json.Decoder(_TaskStartLine).decode),
}


def _task_event(data: bytes) -> tuple[bytes, _TaskEndLine | _TaskStartLine] | None:
    """The class name and the event of a line that starts as Spark writes a task event and is
    one, decoded at once; None for any other line, which takes the general path (a line that
    does not decode, or whose last `Event` key names another class, included)."""
    if not data.startswith(b'{"Event":"SparkListenerTask'):
        return None
    name = data[10 : data.find(b'"', 10)]
    known = _FAST_DECODERS.get(name)
    if known is None:
        return None
    try:
        event = known[1](data)
    except (ValueError, RecursionError):  # msgspec's errors are ValueErrors
        return None
    return (name, event) if event.event == known[0] else None


@dataclass
class Replayed:
    """A replayed log: the built application and what reading and decoding it saw."""

    built: BuiltApplication
    read_stats: ReadStats
    decode_stats: ev.DecodeStats
    n_processes: int
    """1 for the sequential replay, else the worker processes used besides this one."""


@dataclass
class _FirstOfClass:
    """The first task event of its class in a piece: its undeclared fields are noted in order."""

    name: bytes
    data: bytes


@dataclass
class PieceResult:
    """What a worker sends back for one piece."""

    anomaly: str | None = None
    """Why the log must be read sequentially instead; nothing else is set then."""
    edges: PieceEdges = field(default_factory=PieceEdges)
    items: list[bytes | TaskSegment | _FirstOfClass] = field(default_factory=list)
    """In log order: the line of each other event, the task events between them as segments."""
    names: list[bytes] = field(default_factory=list)
    """The event class of each line in `items`, in order (one object per class, so each is
    pickled once): the parent decodes the line without finding its name again."""
    chunk: TaskChunk | None = None
    n_lines: int = 0
    """Non-blank lines within the piece (its first and last lines are the parent's)."""
    n_events: int = 0
    """Task events decoded."""
    unknown_event_types: dict[str, int] = field(default_factory=dict)
    """Event classes the analysis does not use → count, in order of first appearance."""


def read_piece(source: LogSource, piece: Piece) -> PieceResult:
    """Decode the task events of one piece and pick out the lines of the others (worker side)."""
    # Number updates are internal metrics in a log Spark wrote: left out here, their ids noted
    # for the parent's SQL listener to check (`SqlListener.number_update_tracked`).
    recorder = TaskRecorder(keep_number_updates=False)
    out = PieceResult()
    items = out.items
    seen: set[bytes] = set()
    names = out.names
    name_objects: dict[bytes, bytes] = {}
    unknown = out.unknown_event_types
    n_lines = n_events = 0
    try:
        for data in iter_piece_lines(source, piece, out.edges):
            if not data or data.isspace():
                continue
            n_lines += 1
            if not data.isascii():
                try:
                    data.decode()
                except UnicodeDecodeError:
                    raise PieceAnomaly("a line that is not UTF-8") from None
            fast = _task_event(data)
            if fast is not None:
                task_name, task_event = fast
                n_events += 1
                if task_name not in seen:
                    seen.add(task_name)
                    items.append(_FirstOfClass(task_name, data))
                if task_event.info is not None:
                    if isinstance(task_event, _TaskEndLine):
                        recorder.end(task_event)
                    else:
                        recorder.start(task_event)
                continue
            name = ev.event_name(data)
            if name is None:
                raise PieceAnomaly("a line that is not an event")
            decoder = _TASK_DECODERS.get(name)
            if decoder is not None:
                try:
                    event = decoder.decode(data)
                except (ValueError, RecursionError):  # msgspec's errors are ValueErrors
                    raise PieceAnomaly("a task event that does not decode") from None
                n_events += 1
                if name not in seen:
                    seen.add(name)
                    items.append(_FirstOfClass(name, data))
                if event.info is not None:
                    if name == _TASK_END:
                        recorder.end(event)
                    else:
                        recorder.start(event)
            elif ev.event_decoder(name) is not None:
                segment = recorder.close_segment()
                if not segment.is_empty:
                    items.append(segment)
                items.append(data)
                names.append(name_objects.setdefault(name, name))
            else:
                if name.find(b"\\") >= 0 or not ev.is_json_object(data):
                    raise PieceAnomaly("an event name with escapes, or a malformed line")
                key = name.decode(errors="replace")
                unknown[key] = unknown.get(key, 0) + 1
    except PieceAnomaly as anomaly:
        return PieceResult(anomaly=str(anomaly) or "anomaly")
    segment = recorder.close_segment()
    if not segment.is_empty:
        items.append(segment)
    out.chunk = recorder.take_chunk()
    out.n_lines = n_lines
    out.n_events = n_events
    return out


class _Sequential(Exception):
    """The log must be read sequentially (see the module's docstring)."""


def n_worker_processes(source: LogSource) -> int:
    """How many worker processes to read `source` with; 0 for the sequential replay."""
    if not can_fork():
        return 0
    json_bytes = sum(
        part.size_bytes * (1 if part.codec == "none" else _COMPRESSION_RATIO)
        for part in source.parts
    )
    if json_bytes < PARALLEL_MIN_BYTES:
        return 0
    n_cpus = usable_cpus()
    return n_cpus if n_cpus > 1 else 0


def replay_log(
    source: LogSource,
    strictness: Strictness = Strictness.STRICT,
    progress: Callable[[int], None] | None = None,
    n_workers: int | None = None,
    piece_bytes: int = PIECE_BYTES,
    while_reading: Callable[[], object] | None = None,
    seal: ColumnSealer | None = None,
) -> Replayed:
    """Read and replay every event of `source`; in worker processes where that pays.

    `n_workers` overrides the choice of `n_worker_processes` (0: sequential); `piece_bytes` is
    about how much of the log one piece holds (`pieces.plan_pieces`). `while_reading` is work
    for this process's idle time while workers read (the caller's next imports): run in a
    thread once every worker is forked, and waited for before the replay returns; its errors
    are the caller's to meet again. `seal` keeps the task columns compact as they grow (see
    `TaskColumns`). Raises what the sequential reader raises for a log that cannot be read.
    """
    if n_workers is None:
        n_workers = n_worker_processes(source)
    # The replay builds hundreds of thousands of objects (plan nodes, per-stage records) and
    # frees almost none, and what it frees holds no reference cycle: the cyclic collector's
    # passes over them found nothing and cost a third of the replay of a log of 3,600
    # executions. It is off while the replay runs (workers are forked with it off).
    collecting = gc.isenabled()
    gc.disable()
    try:
        if n_workers > 0:
            pieces = plan_pieces(source, piece_bytes)
            if pieces is not None and len(pieces) > 1:
                try:
                    return _replay_parallel(
                        source, pieces, n_workers, progress, while_reading, seal
                    )
                except _Sequential:
                    pass
        return _replay_sequential(source, strictness, progress, seal)
    finally:
        if collecting:
            gc.enable()


def _quietly(work: Callable[[], object]) -> None:
    """Run `work`, leaving its errors to whoever meets them again (see `replay_log`)."""
    try:
        work()
    except Exception:  # the caller's own import or call raises it where it counts
        return


def _replay_sequential(
    source: LogSource,
    strictness: Strictness,
    progress: Callable[[int], None] | None,
    seal: ColumnSealer | None = None,
) -> Replayed:
    reader = ev.read_events(source, strictness)
    builder = ApplicationBuilder(seal)
    feed = builder.feed
    if progress is None:
        for event in reader:
            feed(event)
    else:
        for n, event in enumerate(reader, start=1):
            feed(event)
            if n % 50_000 == 0:
                progress(n)
    return Replayed(builder.finish(), reader.read_stats, reader.decode_stats, 1)


def _replay_parallel(
    source: LogSource,
    pieces: list[Piece],
    n_workers: int,
    progress: Callable[[int], None] | None,
    while_reading: Callable[[], object] | None = None,
    seal: ColumnSealer | None = None,
) -> Replayed:
    """Replay with `n_workers` processes decoding the pieces; raise `_Sequential` on anything
    the sequential replay must report."""
    builder = ApplicationBuilder(seal)
    # STRICT whatever the caller asked: a line LENIENT would skip is the sequential replay's.
    reader = ev.read_events(source, Strictness.STRICT)
    read_stats = reader.read_stats
    decode_stats = reader.decode_stats
    unknown = decode_stats.unknown_event_types
    last_of_part = {u.part_index: i for i, u in enumerate(pieces)}
    path = source.path

    def decode(data: bytes) -> None:
        event = reader.decode_line(Line(path, 0, data))
        if event is not None:
            builder.feed(event)

    def decode_named(name: bytes, data: bytes) -> None:
        event = reader.decode_named(name, Line(path, 0, data))
        if event is not None:
            builder.feed(event)

    def joined_line(pieces: list[bytes]) -> None:
        data = b"".join(pieces)
        if len(data) > MAX_LINE_BYTES:
            raise _Sequential
        if data and not data.isspace():
            read_stats.n_lines += 1
            decode(data)

    carry: list[bytes] = []  # pieces of the line that crosses into the next piece
    aside: threading.Thread | None = None
    try:
        results = run_in_workers(partial(read_piece, source), pieces, n_workers)
        for position, (piece, result) in enumerate(results):
            if aside is None and while_reading is not None:
                # Every worker is forked once a result is in: a thread started now is in none.
                aside = threading.Thread(
                    target=_quietly, args=(while_reading,), name="while-reading", daemon=True
                )
                aside.start()
            if result.anomaly is not None or result.chunk is None:
                raise _Sequential
            edges = result.edges
            read_stats.bytes_decompressed += edges.bytes_decompressed
            read_stats.bytes_compressed += edges.bytes_read
            carry.append(edges.head)
            if edges.tail is not None:
                joined_line(carry)
                carry = [edges.tail]
                builder.flush_tasks()
                row_offset = builder.tasks.n_rows
                for name, count in result.unknown_event_types.items():
                    unknown[name] += count
                names = iter(result.names)
                for item in result.items:
                    if type(item) is bytes:
                        decode_named(next(names), item)
                    elif type(item) is TaskSegment:
                        builder.apply_segment(item, row_offset)
                    else:
                        assert isinstance(item, _FirstOfClass)
                        reader.note_fields_once(item.name, item.data)
                builder.add_chunk(result.chunk)
                read_stats.n_lines += result.n_lines
                decode_stats.n_events += result.n_events
            if last_of_part[piece.part_index] == position:
                last = b"".join(carry)
                carry = []
                if last and not last.isspace():
                    # A cut-off last line, or a part that ends mid-line: the sequential
                    # reader's to report.
                    if not ev.is_json_object(last):
                        raise _Sequential
                    joined_line([last])
            if progress is not None:
                progress(decode_stats.n_events)
    except (AnalyzerError, WorkerError) as error:
        raise _Sequential from error
    finally:
        if aside is not None:
            aside.join()
    if read_stats.n_lines == 0 or decode_stats.n_events == 0:
        raise _Sequential
    if builder.listener.number_update_tracked:
        # A tracked SQL metric updated with a number (not as Spark writes them): the workers
        # left such updates out, the sequential replay counts them.
        raise _Sequential
    return Replayed(builder.finish(), read_stats, decode_stats, n_workers)


__all__ = ["PARALLEL_MIN_BYTES", "Replayed", "n_worker_processes", "read_piece", "replay_log"]
