"""The few file-system operations the reader needs, on local disk or through fsspec.

`storage_for` chooses: a local path or `file://` URL is read with `os`, any other URL through
its fsspec driver (imported only then), whose every error becomes one `AnalyzerError` line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import urllib.parse
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

from analyzer.errors import LogNotFoundError, RemoteStorageError, UsageError
from analyzer.eventlog.file_kind import special_kind
from analyzer.eventlog.remote import BUCKET_WORDS, RemoteOptions, family_of, one_line, remote_error

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_REMOTE_HINT = "install remote support with: pip install 'spark-explain-analyze[remote]'"


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


def _not_regular(kind: str) -> str:
    return f"not a regular file or directory ({kind})"


def os_hint(error: OSError) -> str | None:
    """What to do about a local file-system error the user can fix, or None.

    >>> os_hint(PermissionError(errno.EACCES, "Permission denied"))
    'check its permissions: the user running spark-explain must be able to read it'
    >>> os_hint(OSError(errno.ELOOP, "Too many levels of symbolic links"))
    'a loop of symbolic links: fix or remove the link'
    """
    if error.errno in (errno.EACCES, errno.EPERM):
        return "check its permissions: the user running spark-explain must be able to read it"
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links: fix or remove the link"
    return None


def cannot_message(what: str, error: OSError) -> str:
    """`what` failed, why, and what to do when the user can fix it, as one message."""
    hint = os_hint(error)
    return f"{what}: {error.strerror or error}" + (f"; {hint}" if hint else "")


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
            raise LogNotFoundError(cannot_message("cannot read", error), path=path) from None
        kind = special_kind(st.st_mode)
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
                        why = cannot_message("cannot read", error)
                        out.append(Entry(de.path, de.name, False, 0, 0, error=why))
                        continue
                    kind = special_kind(st.st_mode)
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
            message = cannot_message("cannot list directory", error)
            raise LogNotFoundError(message, path=path) from None
        return sorted(out, key=lambda e: e.name)

    def open(self, path: str) -> BinaryIO:
        """Open `path` for binary reading."""
        try:
            return open(path, "rb")
        except FileNotFoundError:
            raise LogNotFoundError("file disappeared while reading", path=path) from None
        except OSError as error:
            raise LogNotFoundError(cannot_message("cannot open", error), path=path) from None


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
                f"no driver for this URL: {one_line(error)}",
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


def is_url(path: str) -> bool:
    """True if `path` has a scheme (`s3://...`, `file://...`)."""
    return bool(_URL_RE.match(path))


def storage_for(path: str, remote: RemoteOptions | None = None) -> tuple[Storage, str]:
    """Return the storage that serves `path` and the path in the form that storage expects.

    `remote` says how a URL's storage is reached (defaults: `RemoteOptions()`). Raises
    `UsageError` for an empty path (a shell variable that is not set), which names nothing."""
    if not path:
        raise UsageError(
            "no log path given (an empty path)",
            hint="give the path or URL of an event log or a log directory",
        )
    if path.startswith("file://"):
        # Imported here: urllib.request pulls in http.client, ssl and email, which a local
        # path never needs.
        from urllib.request import url2pathname

        parsed = urllib.parse.urlparse(path)
        return Storage(), url2pathname(parsed.path)
    if is_url(path):
        return RemoteStorage(path, remote), path
    return Storage(), path
