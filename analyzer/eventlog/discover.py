"""Find the applications in a log directory by reading only file names, log heads and cheap tails.

Like Spark's History Server listing, each entry of the directory is a candidate log: a file, an
`eventlog_v2_*` rolling directory, or a Databricks directory holding an `eventlog` file. Hidden
files, checksums (`*.crc`) and documentation files are skipped.

What is read per log:
* the head, through the normal line reader, until `SparkListenerApplicationStart` (at most
  `HEAD_MAX_LINES` lines or `HEAD_MAX_BYTES` decompressed bytes): Spark version, app name, id,
  attempt and start time;
* the tail of the last part, for `SparkListenerApplicationEnd`: for uncompressed parts the last
  `TAIL_BYTES`; for compressed parts up to `TAIL_DECODE_MAX_BYTES` on disk the whole part is
  decoded, but a zstd part whose frame and block headers are all sound has only its last frames
  decoded (enough for the end event; see `_zstd_tail`); for larger zstd, lz4 and lzf parts
  decoding restarts at the first frame or block header found in the last `TAIL_RESYNC_BYTES`
  (Spark starts a new zstd frame on every flush); for larger snappy parts the tail is not read.
  A tail that decompresses to more than `TAIL_DECODE_MAX_OUTPUT_BYTES`, or whose first
  `TAIL_RESYNC_MAX_TRIES` candidate headers do not decode, is not read either.

Completion: an `.inprogress` file or a rolling dir whose appstatus file is `.inprogress` is in
progress. Otherwise, if the tail was read, the app is completed only when the tail holds
`SparkListenerApplicationEnd` (a crashed driver leaves a renamed file without it); a Databricks
directory without it is still running. If the tail could not be read cheaply, the app counts as
completed, as the History Server counts it.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator

import orjson
from pydantic import BaseModel, ConfigDict

from analyzer.errors import (
    AnalyzerError,
    CorruptCompressedDataError,
    LogNotFoundError,
    NotAnEventLogError,
)
from analyzer.eventlog.codecs import (
    ZSTD_FRAME_MAGIC,
    DecodeReport,
    decode_zstd,
    iter_decompressed,
    zstd_frame_offsets,
)
from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.remote import RemoteOptions
from analyzer.eventlog.source import (
    Codec,
    Layout,
    LogPart,
    LogSource,
    is_databricks_dir,
    is_rolling_dir,
    open_part,
    resolve_entry,
)
from analyzer.eventlog.storage import Entry, Storage, cannot_message, storage_for

HEAD_MAX_LINES = 200
HEAD_MAX_BYTES = 32 << 20
TAIL_BYTES = 64 << 10
TAIL_DECODE_MAX_BYTES = 4 << 20
TAIL_RESYNC_BYTES = 1 << 20
TAIL_RESYNC_MAX_TRIES = 16
"""How many candidate frame or block headers in the tail window are tried before giving up."""
TAIL_DECODE_MAX_OUTPUT_BYTES = 512 << 20
"""Decoding a tail stops (the tail counts as not cheap to read) past this many decompressed
bytes: a compressed part of a few MB can hold gigabytes."""

MAX_FIELD_CHARS = 1000
"""Names, ids and versions read from a log head are cut to this length for the listing."""

_SKIPPED_SUFFIXES = (".crc", ".md", ".rst", ".html", ".py", ".sh", ".tmp")
_SYNC_MAGIC: dict[Codec, bytes] = {"zstd": ZSTD_FRAME_MAGIC, "lz4": b"LZ4Block", "lzf": b"ZV"}

_LOG_START = b'"SparkListenerLogStart"'
_DBC_METADATA = b'"DBCEventLoggingListenerMetadata"'
_APP_START = b'"SparkListenerApplicationStart"'
_APP_END = b'"SparkListenerApplicationEnd"'


class AppInfo(BaseModel):
    """One application found in a log directory (or the error that kept it from being read)."""

    model_config = ConfigDict(frozen=True)

    path: str
    app_id: str | None = None
    attempt_id: str | None = None
    name: str | None = None
    spark_version: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    completed: bool = False
    codec: Codec = "none"
    layout: Layout = "single"
    size_bytes: int = 0
    error: str | None = None
    """One-line description of why this entry could not be read, if it could not."""
    in_progress: bool = False
    """The writer has not finished: `.inprogress` name or appstatus, or a live Databricks log."""

    @property
    def duration_ms(self) -> int | None:
        """Wall-clock time from application start to end, if both are known."""
        if self.start_ms is None or self.end_ms is None:
            return None
        return self.end_ms - self.start_ms

    @property
    def state(self) -> str:
        """`completed`, `in progress`, `incomplete` (ended without ApplicationEnd) or `error`."""
        if self.error is not None:
            return "error"
        if self.completed:
            return "completed"
        return "in progress" if self.in_progress else "incomplete"


def _is_candidate_name(name: str) -> bool:
    return not (name.startswith((".", "_")) or name.lower().endswith(_SKIPPED_SUFFIXES))


def _event(data: bytes, path: str, line_no: int) -> dict[str, object]:
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise NotAnEventLogError(
            "line is not JSON", path=path, line=line_no, hint="is this a Spark event log?"
        ) from None
    if not isinstance(event, dict) or "Event" not in event:
        raise NotAnEventLogError(
            'line has no "Event" key, so this is not a Spark event log', path=path, line=line_no
        )
    return event


def _str_or_none(value: object) -> str | None:
    """The value as a string of at most `MAX_FIELD_CHARS` characters (cut with an ellipsis)."""
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= MAX_FIELD_CHARS else text[: MAX_FIELD_CHARS - 1] + "…"


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _read_head(source: LogSource, fields: dict[str, object]) -> None:
    """Fill `fields` from the first events of the log, stopping at ApplicationStart."""
    stats = ReadStats()
    lines_iter = iter_lines(
        source, stats, max_line_bytes=HEAD_MAX_BYTES, limit_bytes=HEAD_MAX_BYTES
    )
    with contextlib.closing(lines_iter) as lines:
        for n, line in enumerate(lines):
            data = line.data
            if n == 0:
                _event(data, line.path, line.line_no)  # the first line must be an event
            if _LOG_START in data or _DBC_METADATA in data:
                fields["spark_version"] = _str_or_none(
                    _event(data, line.path, line.line_no).get("Spark Version")
                )
            elif _APP_START in data:
                event = _event(data, line.path, line.line_no)
                fields["name"] = _str_or_none(event.get("App Name"))
                fields["app_id"] = _str_or_none(event.get("App ID"))
                fields["attempt_id"] = _str_or_none(event.get("App Attempt ID"))
                fields["start_ms"] = _int_or_none(event.get("Timestamp"))
                return
            if n + 1 >= HEAD_MAX_LINES:
                return


def _end_ms_in(text: bytes) -> int | None:
    """Return the Timestamp of the last ApplicationEnd in `text` (lines, maybe cut at the start)."""
    at = text.rfind(_APP_END)
    if at < 0:
        return None
    start = text.rfind(b"\n", 0, at) + 1
    end = text.find(b"\n", at)
    try:
        event = orjson.loads(text[start : end if end >= 0 else len(text)])
    except orjson.JSONDecodeError:
        return None
    return _int_or_none(event.get("Timestamp")) if isinstance(event, dict) else None


def _tail_of(chunks: Iterator[bytes]) -> bytes | None:
    """Keep the last `TAIL_BYTES` of a stream of chunks; None if it holds too many bytes."""
    tail = b""
    n_bytes = 0
    for chunk in chunks:
        n_bytes += len(chunk)
        if n_bytes > TAIL_DECODE_MAX_OUTPUT_BYTES:
            return None  # a bomb, or a part too large to decode cheaply
        tail = (tail + chunk)[-TAIL_BYTES:] if len(chunk) < TAIL_BYTES else chunk[-TAIL_BYTES:]
    return tail


def _zstd_tail(raw: bytes, path: str) -> bytes | None:
    """The tail of a whole zstd part in `raw` from its last frames alone, or None to decode it all.

    Spark closes a frame on each flush, so the end event sits in the last frame or two. The
    frames are walked by their headers (`zstd_frame_offsets`) and decoded from the last one
    back until their output holds `TAIL_BYTES`, or holds a whole line naming ApplicationEnd:
    either way `_end_ms_in` reads the same event in it as in the whole output's last
    `TAIL_BYTES`. Anything the header walk does not vouch for (damage, a cut-off file, a bound
    on the output above `TAIL_DECODE_MAX_OUTPUT_BYTES`) and any frame that does not decode
    sends the part to the whole decode, which reports it as before. The frames before the tail
    are not decompressed, so damage inside them (with sound headers) goes unseen here, as in
    the tail window of a larger part.
    """
    walked = zstd_frame_offsets(raw)
    if walked is None or walked[1] > TAIL_DECODE_MAX_OUTPUT_BYTES:
        return None
    offsets, _ = walked
    tail = b""
    end = len(raw)
    for start in reversed(offsets):
        report = DecodeReport(path)
        try:
            # Streamed, keeping the last `TAIL_BYTES`: one frame may expand to hundreds of MB.
            out = _tail_of(decode_zstd(io.BytesIO(raw[start:end]), report))
        except CorruptCompressedDataError:
            return None
        if out is None or report.truncated_at_offset is not None:
            return None
        tail = out + tail
        end = start
        if len(tail) >= TAIL_BYTES:
            return tail[-TAIL_BYTES:]
        at = tail.rfind(_APP_END)
        if at >= 0 and tail.rfind(b"\n", 0, at) >= 0:
            return tail
    return tail


def _read_tail(part: LogPart, in_progress: bool) -> bytes | None:
    """Return the last decompressed bytes of `part`, or None where that is not cheap."""
    with open_part(part) as stream:
        if part.codec == "none":
            stream.seek(max(0, part.size_bytes - TAIL_BYTES))
            return stream.read(TAIL_BYTES)
        if part.size_bytes <= TAIL_DECODE_MAX_BYTES:
            if part.codec == "zstd":
                tail = _zstd_tail(stream.read(TAIL_DECODE_MAX_BYTES + 1), part.path)
                if tail is not None:
                    return tail
                stream.seek(0)
            return _tail_of(iter_decompressed(stream, part.codec, DecodeReport(part.path)))
        magic = _SYNC_MAGIC.get(part.codec)
        if magic is None:
            return None
        start = max(0, part.size_bytes - TAIL_RESYNC_BYTES)
        stream.seek(start)
        raw = stream.read(TAIL_RESYNC_BYTES)
    # The first header in the window may be a false match inside compressed data: try a few.
    at = raw.find(magic)
    for _ in range(TAIL_RESYNC_MAX_TRIES):
        if at < 0:
            break
        report = DecodeReport(part.path)
        chunks = iter_decompressed(io.BytesIO(raw[at:]), part.codec, report, check_format=False)
        try:
            tail = _tail_of(chunks)
        except CorruptCompressedDataError:
            tail = None
        if tail is not None and (report.truncated_at_offset is None or in_progress):
            return tail
        at = raw.find(magic, at + 1)
    return None


def _describe(source: LogSource) -> AppInfo:
    fields: dict[str, object] = {}
    _read_head(source, fields)
    in_progress = source.in_progress
    end_ms: int | None = None
    completed = not in_progress
    if source.parts and not in_progress:
        tail = _read_tail(source.parts[-1], in_progress)
        if tail is not None:
            end_ms = _end_ms_in(tail)
            completed = end_ms is not None
            if source.layout == "databricks" and end_ms is None:
                in_progress = True  # the live `eventlog` file is still being written
    return AppInfo(
        path=source.path,
        app_id=_str_or_none(fields.get("app_id")),
        attempt_id=_str_or_none(fields.get("attempt_id")),
        name=_str_or_none(fields.get("name")),
        spark_version=_str_or_none(fields.get("spark_version")),
        start_ms=_int_or_none(fields.get("start_ms")),
        end_ms=end_ms,
        completed=completed,
        in_progress=in_progress,
        codec=source.codec,
        layout=source.layout,
        size_bytes=source.size_bytes,
    )


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def describe_entry(
    entry: Entry, children: list[Entry] | None = None, storage: Storage | None = None
) -> AppInfo:
    """Return the `AppInfo` of one candidate entry; a read failure becomes `error`, never raises.

    `storage` is the one that listed the entry (by default, the one its path names)."""
    if storage is None:
        storage, _ = storage_for(entry.path)
    layout: Layout = "single"
    size_bytes = entry.size_bytes
    if children is not None:
        layout = "databricks" if is_databricks_dir(children) else "rolling"
        size_bytes = sum(c.size_bytes for c in children if not c.is_dir)
    try:
        return _describe(resolve_entry(storage, entry, entry.path))
    except AnalyzerError as error:
        message = _one_line(error)
    except OSError as error:
        wrapped = LogNotFoundError(cannot_message("cannot read", error), path=entry.path)
        message = _one_line(wrapped)
    return AppInfo(path=entry.path, layout=layout, size_bytes=size_bytes, error=message)


def log_dir_entries(
    log_dir: str, remote: RemoteOptions | None, command: str
) -> tuple[Storage, list[Entry]]:
    """Return the storage of log directory `log_dir` and its entries that may be logs (not
    hidden, not a known other file), in name order.

    Raises `LogNotFoundError` if `log_dir` is missing or not a directory; `command` says what
    reads it, for the hint (`"`apps` lists"`).
    """
    storage, native = check_log_dir(log_dir, remote, command)
    return storage, [e for e in storage.list(native) if _is_candidate_name(e.name)]


def check_log_dir(log_dir: str, remote: RemoteOptions | None, command: str) -> tuple[Storage, str]:
    """Return the storage of log directory `log_dir` and its path there; `LogNotFoundError` if
    it is missing or not a directory (`command` says what reads it, for the hint)."""
    storage, native = storage_for(log_dir, remote)
    root = storage.stat(native)
    if root is None:
        raise storage.not_found(native, log_dir, "directory")
    if not root.is_dir:
        raise LogNotFoundError(
            "not a directory",
            path=log_dir,
            hint=f"{command} a log directory; give it the directory that holds this file",
        )
    return storage, native


def discover_applications(log_dir: str, remote: RemoteOptions | None = None) -> list[AppInfo]:
    """Return one `AppInfo` per event log in `log_dir`, sorted by start time then path.

    Raises `LogNotFoundError` if `log_dir` is missing or not a directory; problems with single
    logs are reported in their `AppInfo.error` instead. `remote` says how a URL's storage is
    reached.
    """
    storage, entries = log_dir_entries(log_dir, remote, "`apps` lists")
    infos: list[AppInfo] = []
    for entry in entries:
        if entry.error is not None:
            unreadable = LogNotFoundError(entry.error, path=entry.path)
            infos.append(AppInfo(path=entry.path, error=_one_line(unreadable)))
            continue
        if entry.is_dir:
            try:
                children = storage.list(entry.path)
            except AnalyzerError as error:
                # It may hold a log: a row of its own, not the end of the listing.
                infos.append(AppInfo(path=entry.path, error=_one_line(error)))
                continue
            if is_databricks_dir(children) or is_rolling_dir(entry.name, children):
                infos.append(describe_entry(entry, children, storage))
            continue
        infos.append(describe_entry(entry, None, storage))
    return sorted(infos, key=_sort_key)


def _sort_key(info: AppInfo) -> tuple[bool, int, str]:
    start = info.start_ms
    return (start is None, start if start is not None else 0, info.path)


def app_dir_name(path: str) -> str:
    """Return the last component of a local path or URL, for display."""
    return os.path.basename(path.rstrip("/")) or path
