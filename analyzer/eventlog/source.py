"""Resolve what the user named (a file, a rolling directory, a Databricks directory) into parts.

Paths may be local, `file://` URLs, or remote URLs (`s3://`, `gs://`, `abfs://`, `hdfs://`, ...),
which go through fsspec, imported only when such a URL is given (`storage.py`). Each part's
codec is found from its first bytes, the file name being only a hint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import BinaryIO, Literal

from analyzer.errors import (
    AnalyzerError,
    EmptyLogError,
    LogNotFoundError,
    MissingRollingFileError,
    NotAnEventLogError,
    UnknownCodecError,
)
from analyzer.eventlog.remote import RemoteOptions, one_line, remote_error
from analyzer.eventlog.storage import Entry, RemoteStorage, Storage, is_url, storage_for
from analyzer.units import shown_path

Codec = Literal["none", "zstd", "lz4", "lzf", "snappy", "gz"]
Layout = Literal["single", "rolling", "databricks"]

IN_PROGRESS_SUFFIX = ".inprogress"
COMPACT_SUFFIX = ".compact"
ROLLING_DIR_PREFIX = "eventlog_v2_"
DATABRICKS_LIVE_NAME = "eventlog"

_EXTENSION_CODECS: dict[str, Codec] = {
    "zstd": "zstd",
    "lz4": "lz4",
    "lzf": "lzf",
    "snappy": "snappy",
    "gz": "gz",
}
SUPPORTED_CODECS_STR = "none (no extension), .zstd, .lz4, .lzf, .snappy, .gz"

_PLAIN_EXTENSIONS = frozenset({"json", "jsonl", "ndjson", "log", "txt"})
"""Extensions users give decompressed logs: they name plain JSON lines."""

_EXTENSION_HINTS = {
    "zst": "Spark names zstd logs '.zstd'; rename the file to end in .zstd",
    "gzip": "rename the file to end in .gz",
}
_COMPRESSION_EXTENSIONS = frozenset(
    ("zst", "gzip", "bz2", "xz", "lzma", "lz", "br", "z", "7z", "zip", "tgz", "tar")
)
"""Extensions of compressed files Spark does not write: such a file is `unknown-codec` (to be
decompressed first) whatever its first bytes look like."""
_SNIFF_BYTES = 64
"""How many leading bytes are read to tell a part's codec from its content."""

_ROLLING_EVENTS_RE = re.compile(r"^events_(\d+)_")
_DATABRICKS_ROTATED_RE = re.compile(r"^eventlog-(\d{4}-\d{2}-\d{2}--\d{2}-\d{2})\.gz$")


@dataclass(frozen=True)
class LogPart:
    """One physical file of an event log, read in order with the others of its log."""

    path: str
    """Local path or URL of the file."""
    codec: Codec
    size_bytes: int
    modified_ms: int
    """Last modification time, epoch milliseconds."""
    codec_note: str | None = None
    """Set when the content's codec is not the one the file name suggests (the content wins):
    a reading note for the reports."""
    remote: RemoteOptions | None = None
    """How the file's storage is reached, for a URL; None for a local file."""


@dataclass(frozen=True)
class LogSource:
    """An application's event log: one or more parts, read in order, as one stream of lines."""

    path: str
    """What the user named: the file or the directory."""
    layout: Layout
    parts: tuple[LogPart, ...]
    in_progress: bool
    """True for `.inprogress` files and rolling dirs whose appstatus file is still `.inprogress`."""

    @property
    def size_bytes(self) -> int:
        """Total on-disk size of all parts."""
        return sum(p.size_bytes for p in self.parts)

    @property
    def codec(self) -> Codec:
        """The codec of the last part (what the writer is using now)."""
        return self.parts[-1].codec if self.parts else "none"


def open_part(part: LogPart) -> BinaryIO:
    """Open one part of a log for binary reading, locally or through fsspec."""
    storage, path = storage_for(part.path, part.remote)
    return storage.open(path)


def _extension(name: str) -> str | None:
    """What follows the last '.' of a file name once `.inprogress` and `.compact` are removed."""
    base = name
    if base.endswith(IN_PROGRESS_SUFFIX):
        base = base[: -len(IN_PROGRESS_SUFFIX)]
    if base.endswith(COMPACT_SUFFIX):
        base = base[: -len(COMPACT_SUFFIX)]
    return base.rsplit(".", 1)[1] if "." in base else None


def codec_hint(name: str) -> Codec | None:
    """Return the codec a file name suggests (`none` for no extension or a plain-text one such
    as `.json`), or None for an extension that names no codec Spark writes."""
    ext = _extension(name)
    if ext is None or ext.lower() in _PLAIN_EXTENSIONS:
        return "none"
    return _EXTENSION_CODECS.get(ext.lower())


def codec_of(name: str, path: str) -> Codec:
    """Return the codec a file name implies; `UnknownCodecError` for an unknown extension."""
    codec = codec_hint(name)
    if codec is None:
        ext = _extension(name) or ""
        hint = _EXTENSION_HINTS.get(ext.lower(), "decompress it first or rename it")
        raise UnknownCodecError(
            f"unknown compression extension '.{ext}' (supported: {SUPPORTED_CODECS_STR})",
            path=path,
            hint=hint,
        )
    return codec


def codec_of_content(head: bytes) -> Codec | None:
    """Return the codec the first bytes of a file are in: zstd, lz4-java, xerial snappy, lzf
    (`ZV`) or gzip magic, `none` for plain JSON (`{`, after a byte-order mark and blank space);
    None when they say nothing (an empty file, other data)."""
    from analyzer.eventlog.codecs import sniff_codec  # codecs imports this module

    found = sniff_codec(head)
    if found is not None:
        return found
    if head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{"):
        return "none"
    return None


def _is_text(head: bytes) -> bool:
    r"""Whether a file's first bytes are UTF-8 text without NUL bytes (a character cut at the
    end allowed): a configuration file or notes, not compressed data.

    >>> _is_text(b"spark.master yarn\n"), _is_text(b"\x28\xb5\x2f\xfd\x00"), _is_text(b"")
    (True, False, False)
    """
    if not head or b"\x00" in head:
        return False
    for cut in range(4):
        try:
            head[: len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return True
    return False


def _sniff(storage: Storage, entry: Entry) -> bytes:
    """The first bytes of a file, or nothing when it cannot be read now (the reader says why)."""
    if entry.size_bytes == 0:
        return b""
    try:
        with storage.open(entry.path) as stream:
            return stream.read(_SNIFF_BYTES)
    except Exception:  # drivers raise their own types; the read proper reports the failure
        return b""


_NAMES = {
    "none": "plain JSON lines",
    "zstd": "zstd",
    "lz4": "lz4",
    "lzf": "lzf",
    "snappy": "snappy",
    "gz": "gzip",
}


def _part(storage: Storage, entry: Entry) -> LogPart:
    """The part of a file, its codec found from its first bytes; the name is only a hint, used
    when the content says nothing (an empty in-progress file)."""
    hint = codec_hint(entry.name)
    head = _sniff(storage, entry)
    found = codec_of_content(head)
    if found is None:
        # Text under any name is read as plain lines, whose first says it is no event log
        # (`not-an-event-log`): not a codec to decompress first.
        ext = (_extension(entry.name) or "").lower()
        codec = (
            "none"
            if hint is None and ext not in _COMPRESSION_EXTENSIONS and _is_text(head)
            else codec_of(entry.name, entry.path)
        )
        return LogPart(
            entry.path, codec, entry.size_bytes, entry.modified_ms, remote=storage.remote
        )
    note = None
    if hint is not None and hint != found:
        said = "has no codec extension" if _extension(entry.name) is None else f"says {hint}"
        note = (
            f"{shown_path(entry.name)} holds {_NAMES[found]} data but its name {said}: "
            f"read as {_NAMES[found]}"
        )
    elif hint is None:
        note = (
            f"{entry.name} holds {_NAMES[found]} data under an extension Spark does not write: "
            f"read as {_NAMES[found]}"
        )
    return LogPart(
        entry.path,
        found,
        entry.size_bytes,
        entry.modified_ms,
        codec_note=note,
        remote=storage.remote,
    )


def is_rolling_dir(name: str, children: list[Entry]) -> bool:
    """True for a rolling event-log directory (`eventlog_v2_<appId>/` with `events_N_*` files)."""
    return name.startswith(ROLLING_DIR_PREFIX) or any(
        _ROLLING_EVENTS_RE.match(c.name) for c in children if not c.is_dir
    )


def is_databricks_dir(children: list[Entry]) -> bool:
    """True for a Databricks log directory (a live `eventlog` file, maybe rotated pieces)."""
    return any(
        c.name == DATABRICKS_LIVE_NAME and not c.is_dir and c.error is None for c in children
    )


def _resolve_rolling(storage: Storage, path: str, children: list[Entry]) -> LogSource:
    indexed: list[tuple[int, bool, Entry]] = []
    in_progress = True  # no appstatus file: completion unknown, so do not claim it
    for c in children:
        if c.is_dir or c.name.startswith("."):
            continue
        if c.error is not None:
            if _ROLLING_EVENTS_RE.match(c.name) or _ROLLING_EVENTS_RE.match(c.name + "_"):
                # A pipe, a device or a dangling link where an events file should be: say so,
                # rather than that there is no such file.
                raise LogNotFoundError(
                    f"{c.name} in the rolling event-log directory cannot be read: {c.error}",
                    path=path,
                    hint="copy the rolling directory's events files as regular files",
                )
            continue
        if c.name.startswith("appstatus_"):
            in_progress = c.name.endswith(IN_PROGRESS_SUFFIX)
            continue
        m = _ROLLING_EVENTS_RE.match(c.name) or _ROLLING_EVENTS_RE.match(c.name + "_")
        if m:
            indexed.append((int(m.group(1)), c.name.endswith(COMPACT_SUFFIX), c))
    if not indexed:
        raise EmptyLogError(
            "rolling event-log directory holds no events_N files",
            path=path,
            hint="point at a directory that contains events_1_<appId>[.<codec>]",
        )
    # A .compact file sorts just after the plain file of its index; reading starts at the last one.
    indexed.sort(key=lambda t: (t[0], t[1]))
    last_compact = max((i for i, t in enumerate(indexed) if t[1]), default=0)
    indexed = indexed[last_compact:]
    first_index = indexed[0][0]
    present = [t[0] for t in indexed]
    seen: dict[tuple[int, bool], list[str]] = {}
    for index, compact, entry in indexed:
        seen.setdefault((index, compact), []).append(entry.name)
    doubled = next(((key, names) for key, names in seen.items() if len(names) > 1), None)
    if doubled is not None:
        (index, _), names = doubled
        shown = ", ".join(shown_path(n) for n in names[:3]) + (" …" if len(names) > 3 else "")
        raise MissingRollingFileError(
            f"events_{index} is there {len(names)} times ({shown})",
            path=path,
            hint="keep one file per index, as Spark's writer makes them",
        )
    for expected, (index, _, _) in enumerate(indexed, start=first_index):
        if index != expected:
            raise MissingRollingFileError(
                f"events_{expected} is missing (found events files {present})",
                path=path,
                hint="copy the whole rolling directory; Spark's reader needs every file",
            )
    parts = tuple(_part(storage, t[2]) for t in indexed)
    return LogSource(path=path, layout="rolling", parts=parts, in_progress=in_progress)


def _resolve_databricks(storage: Storage, path: str, children: list[Entry]) -> LogSource:
    rotated: list[tuple[str, Entry]] = []
    live: Entry | None = None
    for c in children:
        if c.is_dir or c.error is not None:
            continue
        if c.name == DATABRICKS_LIVE_NAME:
            live = c
            continue
        m = _DATABRICKS_ROTATED_RE.match(c.name)
        if m:
            rotated.append((m.group(1), c))
    # The timestamps are zero-padded, so their text order is time order; the live file is newest.
    rotated.sort(key=lambda t: t[0])
    entries = [t[1] for t in rotated] + ([live] if live is not None else [])
    parts = tuple(_part(storage, e) for e in entries)
    return LogSource(path=path, layout="databricks", parts=parts, in_progress=False)


def _check_empty(storage: Storage, entry: Entry, shown_path: str) -> None:
    """Raise the right error for a file whose size is 0: empty, unreadable, or a file of a
    special file system (`/proc`, `/sys`) whose size says nothing about its content."""
    codec_of(entry.name, shown_path)
    try:
        with storage.open(entry.path) as stream:
            first = stream.read(1)
    except AnalyzerError:
        raise
    except OSError as error:
        raise LogNotFoundError(
            f"cannot read: {error.strerror or error} (a file that gives its size as 0 bytes, "
            "as files of /proc and /sys do)",
            path=shown_path,
            hint="point at an event log file",
        ) from None
    except Exception as error:  # drivers raise their own types
        raise LogNotFoundError(f"cannot read: {one_line(error)}", path=shown_path) from None
    if first:
        raise NotAnEventLogError(
            "a file that gives its size as 0 bytes but has content (a file of /proc or /sys): "
            "not an event log",
            path=shown_path,
            hint="point at an event log file",
        )
    raise EmptyLogError("event log file is empty (0 bytes)", path=shown_path)


def resolve_entry(storage: Storage, entry: Entry, shown_path: str) -> LogSource:
    """Resolve one existing file or directory into a `LogSource`."""
    if entry.is_dir:
        children = storage.list(entry.path)
        if is_databricks_dir(children):
            return _resolve_databricks(storage, shown_path, children)
        if is_rolling_dir(entry.name, children):
            return _resolve_rolling(storage, shown_path, children)
        raise LogNotFoundError(
            "directory is not an event log (no events_N files, no Databricks 'eventlog')",
            path=shown_path,
            hint="to list the logs in a log directory run: spark-explain apps DIR",
        )
    if entry.size_bytes == 0:
        _check_empty(storage, entry, shown_path)
    part = _part(storage, entry)
    return LogSource(
        path=shown_path,
        layout="single",
        parts=(part,),
        in_progress=entry.name.endswith(IN_PROGRESS_SUFFIX),
    )


def resolve_log(path: str, remote: RemoteOptions | None = None) -> LogSource:
    """Resolve a path or URL into a `LogSource`; raise an `AnalyzerError` if it is not a log.

    `remote` says how a URL's storage is reached; local paths ignore it."""
    storage, native = storage_for(path, remote)
    entry = storage.stat(native)
    if entry is None:
        raise storage.not_found(native, path)
    source = resolve_entry(storage, entry, path)
    if source.size_bytes == 0:
        raise EmptyLogError("event log holds no bytes", path=path)
    return source


__all__ = [
    "COMPACT_SUFFIX",
    "DATABRICKS_LIVE_NAME",
    "IN_PROGRESS_SUFFIX",
    "ROLLING_DIR_PREFIX",
    "SUPPORTED_CODECS_STR",
    "Codec",
    "Entry",
    "Layout",
    "LogPart",
    "LogSource",
    "RemoteStorage",
    "Storage",
    "codec_hint",
    "codec_of",
    "codec_of_content",
    "is_databricks_dir",
    "is_rolling_dir",
    "is_url",
    "open_part",
    "remote_error",
    "resolve_entry",
    "resolve_log",
    "storage_for",
]
