"""Resolve what the user named (a file, a rolling directory, a Databricks directory) into parts.

Paths may be local, `file://` URLs, or remote URLs (`s3://`, `gs://`, `abfs://`, `hdfs://`, ...),
which go through fsspec, imported only when such a URL is given.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import urllib.parse
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal, cast

from analyzer.errors import (
    AnalyzerError,
    EmptyLogError,
    LogNotFoundError,
    MissingRollingFileError,
    NotAnEventLogError,
    RemoteStorageError,
    UnknownCodecError,
)
from analyzer.eventlog.remote import BUCKET_WORDS, RemoteOptions, family_of

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
_SNIFF_BYTES = 64
"""How many leading bytes are read to tell a part's codec from its content."""

_ROLLING_EVENTS_RE = re.compile(r"^events_(\d+)_")
_DATABRICKS_ROTATED_RE = re.compile(r"^eventlog-(\d{4}-\d{2}-\d{2}--\d{2}-\d{2})\.gz$")
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_REMOTE_HINT = "install remote support with: pip install 'spark-explain-analyze[remote]'"


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


@dataclass(frozen=True)
class Entry:
    """One directory entry or file as seen through `Storage`."""

    path: str
    """Local path or full URL."""
    name: str
    is_dir: bool
    size_bytes: int
    modified_ms: int
    error: str | None = None
    """Why the entry cannot be read, if it cannot: a dangling symbolic link, a loop of links,
    a named pipe or other special file (listed, never opened: opening a pipe would block)."""


def _special_kind(mode: int) -> str | None:
    """Name the kind of a file that is neither regular nor a directory, else None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _not_regular(kind: str) -> str:
    return f"not a regular file or directory ({kind})"


class Storage:
    """The few file-system operations the reader needs, on local disk."""

    remote: RemoteOptions | None = None
    """How a remote storage is reached; None on local disk."""

    def not_found(
        self, path: str, shown_path: str, what: str = "file or directory"
    ) -> LogNotFoundError:
        """Say that nothing is at `path` (shown to the user as `shown_path`)."""
        return LogNotFoundError(f"no such {what}", path=shown_path)

    def stat(self, path: str) -> Entry | None:
        """Return the entry at `path`, or None if nothing is there."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise LogNotFoundError(f"cannot read: {error.strerror}", path=path) from None
        kind = _special_kind(st.st_mode)
        if kind is not None:
            raise LogNotFoundError(_not_regular(kind), path=path)
        name = os.path.basename(os.path.normpath(path))
        return Entry(path, name, stat.S_ISDIR(st.st_mode), st.st_size, int(st.st_mtime * 1000))

    def list(self, path: str) -> list[Entry]:
        """Return the entries of directory `path`, sorted by name.

        Entries that cannot be read (dangling or looping links, pipes, sockets, devices) are
        returned with their `error` set; links are followed once, never recursed into.
        """
        out = []
        try:
            with os.scandir(path) as it:
                for de in it:
                    try:
                        st = de.stat()
                    except FileNotFoundError:
                        why = "dangling symbolic link" if de.is_symlink() else "file disappeared"
                        out.append(Entry(de.path, de.name, False, 0, 0, error=why))
                        continue
                    except OSError as error:
                        why = f"cannot read: {error.strerror or error}"
                        out.append(Entry(de.path, de.name, False, 0, 0, error=why))
                        continue
                    kind = _special_kind(st.st_mode)
                    is_dir = stat.S_ISDIR(st.st_mode)
                    out.append(
                        Entry(
                            de.path,
                            de.name,
                            is_dir,
                            st.st_size,
                            int(st.st_mtime * 1000),
                            error=None if kind is None else _not_regular(kind),
                        )
                    )
        except OSError as error:
            raise LogNotFoundError(f"cannot list directory: {error.strerror}", path=path) from None
        return sorted(out, key=lambda e: e.name)

    def open(self, path: str) -> BinaryIO:
        """Open `path` for binary reading."""
        try:
            return open(path, "rb")
        except FileNotFoundError:
            raise LogNotFoundError("file disappeared while reading", path=path) from None
        except OSError as error:
            raise LogNotFoundError(f"cannot open: {error.strerror}", path=path) from None


class RemoteStorage(Storage):
    """The same operations through an fsspec file system (S3, GCS, ABFS, HDFS, ...).

    Every driver error becomes one `AnalyzerError` line: a missing object `not-found`, anything
    else `remote-storage`, named by what was being done (making the file system, a stat, a
    listing, an open, a read at a byte offset) and by its kind (access denied, no answer within
    the timeout, no connection).
    """

    def __init__(self, url: str, remote: RemoteOptions | None = None) -> None:
        self._remote = remote if remote is not None else RemoteOptions()
        self.remote = self._remote
        try:
            import fsspec.core
        except ImportError:
            raise RemoteStorageError(
                "reading a remote URL needs fsspec", path=url, hint=_REMOTE_HINT
            ) from None
        protocols = _chain_protocols(url)
        self._family = family_of(protocols[-1])
        self._chained = len(protocols) > 1
        kwargs = {
            protocol: self._remote.driver_kwargs(protocol, holds_the_log=i == len(protocols) - 1)
            for i, protocol in enumerate(protocols)
        }
        making = "cannot make its file system"
        try:
            self._fs, _ = fsspec.core.url_to_fs(url, **kwargs)
        except (ImportError, ValueError) as error:
            if isinstance(error, ValueError) and "protocol not known" not in str(error).lower():
                raise remote_error(making, url, error, self._remote) from None
            raise RemoteStorageError(
                f"no driver for this URL: {_one_line(error)}",
                path=url,
                hint="install the fsspec driver for the scheme (s3fs, gcsfs, adlfs, ...)",
            ) from None
        except Exception as error:  # drivers that connect when made: ftp, hdfs, zip::...
            raise remote_error(making, url, error, self._remote) from None
        attempts = self._remote.attempts(protocols[-1])
        if attempts is not None and not self._chained and hasattr(self._fs, "retries"):
            self._fs.retries = attempts  # s3fs: an attribute, not a constructor option

    def _url(self, fs_path: str) -> str:
        return cast(str, self._fs.unstrip_protocol(fs_path))

    def _entry(self, info: dict[str, Any]) -> Entry:
        fs_path = str(info["name"]).rstrip("/")
        mtime = info.get("mtime") or info.get("LastModified") or info.get("updated") or 0
        modified_ms = 0
        if isinstance(mtime, int | float):
            modified_ms = int(mtime * 1000)
        elif hasattr(mtime, "timestamp"):
            modified_ms = int(mtime.timestamp() * 1000)
        return Entry(
            self._url(fs_path),
            fs_path.rsplit("/", 1)[-1],
            info.get("type") == "directory",
            int(info.get("size") or 0),
            modified_ms,
        )

    def stat(self, path: str) -> Entry | None:
        """Return the entry at URL `path`, or None if nothing is there."""
        try:
            return self._entry(self._fs.info(path))
        except FileNotFoundError:
            return None
        except Exception as error:  # drivers raise their own types
            raise remote_error("cannot stat", path, error, self._remote) from None

    def not_found(
        self, path: str, shown_path: str, what: str = "file or directory"
    ) -> LogNotFoundError:
        """Say that nothing is at `path`, naming a missing bucket or container as such."""
        word = BUCKET_WORDS.get(self._family)
        if word is not None and not self._chained:
            bucket = str(self._fs._strip_protocol(path)).split("/", 1)[0]
            try:
                exists = bool(bucket) and self._fs.exists(bucket)
            except Exception:  # the question was only to word the message
                exists = True
            if not exists:
                return LogNotFoundError(
                    f"no such {word} {bucket!r}",
                    path=shown_path,
                    hint=f"check the {word} name (and the endpoint, if you gave one)",
                )
        return super().not_found(path, shown_path, what)

    def list(self, path: str) -> list[Entry]:
        """Return the entries of remote directory `path`, sorted by name."""
        try:
            infos = self._fs.ls(path, detail=True)
        except Exception as error:
            raise remote_error("cannot list", path, error, self._remote) from None
        return sorted((self._entry(i) for i in infos), key=lambda e: e.name)

    def open(self, path: str) -> BinaryIO:
        """Open remote `path` for binary reading; errors of later reads are `AnalyzerError`s."""
        try:
            handle = self._fs.open(path, "rb")
        except Exception as error:
            raise remote_error("cannot open", path, error, self._remote) from None
        return cast(BinaryIO, _RemoteFile(handle, path, self._remote))


class _RemoteFile:
    """An open remote file whose driver errors, at any read or seek, become one-line errors
    naming the file and the byte offset (a storage that goes away in the middle of a log)."""

    def __init__(self, handle: Any, path: str, remote: RemoteOptions) -> None:
        self._handle = handle
        self._path = path
        self._remote = remote
        self._offset = 0

    def read(self, size: int = -1, /) -> bytes:
        """Read up to `size` bytes (all that is left for -1); b"" at the end."""
        try:
            data = cast(bytes, self._handle.read(size))
        except Exception as error:
            raise remote_error(
                "read failed", self._path, error, self._remote, offset=self._offset
            ) from None
        self._offset += len(data)
        return data

    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Move to `offset` (from the start, the current position or the end)."""
        try:
            self._offset = int(self._handle.seek(offset, whence))
        except Exception as error:
            raise remote_error(
                "seek failed", self._path, error, self._remote, offset=offset
            ) from None
        return self._offset

    def tell(self) -> int:
        """The current position."""
        return self._offset

    def close(self) -> None:
        """Close the file; a storage that is gone cannot make closing fail."""
        with contextlib.suppress(Exception):
            self._handle.close()

    def __enter__(self) -> _RemoteFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chain_protocols(url: str) -> list[str]:
    """The schemes of a URL, outermost first: `zip://a::s3://b/k` → ["zip", "s3"]."""
    protocols = []
    for bit in url.split("::"):
        scheme, sep, _ = bit.partition("://")
        protocols.append(scheme if sep else bit)
    return protocols


_MAX_MESSAGE_CHARS = 300


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = text[0].strip() if text and text[0].strip() else type(error).__name__
    if len(line) > _MAX_MESSAGE_CHARS:
        line = line[: _MAX_MESSAGE_CHARS - 1] + "…"
    return line


def _kind_of(error: BaseException) -> str:
    """`timeout`, `connection`, `denied` or `other`, from the error and what it was raised from
    (drivers wrap aiohttp's and botocore's own types)."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    for e in seen:
        name = type(e).__name__
        if isinstance(e, TimeoutError) or "Timeout" in name:
            return "timeout"
    for e in seen:
        if isinstance(e, PermissionError) or type(e).__name__ == "NoCredentialsError":
            return "denied"
    for e in seen:
        name = type(e).__name__
        if isinstance(e, ConnectionError) or "Connect" in name or "Disconnect" in name:
            return "connection"
    return "other"


def remote_error(
    action: str,
    path: str,
    error: BaseException,
    remote: RemoteOptions,
    *,
    offset: int | None = None,
) -> AnalyzerError:
    """Turn a driver's exception into the one-line error the user sees."""
    if isinstance(error, AnalyzerError):
        return error
    if isinstance(error, FileNotFoundError):
        if offset is not None:
            return LogNotFoundError("file disappeared while reading", path=path, offset=offset)
        return LogNotFoundError("no such file or directory", path=path)
    detail = _one_line(error)
    kind = _kind_of(error)
    if kind == "timeout":
        return RemoteStorageError(
            f"{action}: no answer within {remote.timeout_s:g} s ({detail})",
            path=path,
            offset=offset,
            hint="check the endpoint, or allow more time with --remote-timeout",
        )
    if kind == "denied":
        return RemoteStorageError(
            f"{action}: access denied ({detail})",
            path=path,
            offset=offset,
            hint="check the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "--profile, or the storage's own login (docs/user-guide.md)",
        )
    if kind == "connection":
        return RemoteStorageError(
            f"{action}: cannot connect ({detail})",
            path=path,
            offset=offset,
            hint="check the endpoint and that the storage is up; the next run may pass",
        )
    return RemoteStorageError(
        f"{action}: {type(error).__name__}: {detail}", path=path, offset=offset
    )


def is_url(path: str) -> bool:
    """True if `path` has a scheme (`s3://...`, `file://...`)."""
    return bool(_URL_RE.match(path))


def storage_for(path: str, remote: RemoteOptions | None = None) -> tuple[Storage, str]:
    """Return the storage that serves `path` and the path in the form that storage expects.

    `remote` says how a URL's storage is reached (defaults: `RemoteOptions()`)."""
    if path.startswith("file://"):
        # Imported here: urllib.request pulls in http.client, ssl and email, which a local
        # path never needs.
        from urllib.request import url2pathname

        parsed = urllib.parse.urlparse(path)
        return Storage(), url2pathname(parsed.path)
    if is_url(path):
        return RemoteStorage(path, remote), path
    return Storage(), path


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
    found = codec_of_content(_sniff(storage, entry))
    if found is None:
        codec = codec_of(entry.name, entry.path)
        return LogPart(
            entry.path, codec, entry.size_bytes, entry.modified_ms, remote=storage.remote
        )
    note = None
    if hint is not None and hint != found:
        said = "has no codec extension" if _extension(entry.name) is None else f"says {hint}"
        note = (
            f"{entry.name} holds {_NAMES[found]} data but its name {said}: read as {_NAMES[found]}"
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
        raise LogNotFoundError(f"cannot read: {_one_line(error)}", path=shown_path) from None
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
