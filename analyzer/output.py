"""Report files written safely: atomically, with the permissions a plain write gives, and
never over or into an event log being read (docs/security.md)."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from analyzer.errors import CannotWriteError, OutputIsInputError
from analyzer.eventlog.file_kind import special_kind

if TYPE_CHECKING:
    from analyzer.eventlog.source import LogSource


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


WRITE_HINT = "give -o a file path in a directory you can write to"


def write_atomic(
    path: str | Path, text: str | bytes | Iterable[bytes | memoryview], hint: str = WRITE_HINT
) -> None:
    """Write `text` (or its chunks) to `path` through a temporary file and a rename: never a
    half-written file.

    The file gets the permissions a plain `open(path, "w")` would give (0666 less the umask),
    not the owner-only ones of a temporary file: reports are meant to be shared. A symbolic link
    is written through, as `open` would (the link stays). A character device or a named pipe
    (`-o /dev/null`, `-o /dev/stdout`) is written to as it is: renaming a file over it would
    replace the device itself. Raises `CannotWriteError` with the path and the operating
    system's reason when the report cannot be written there (a directory, a path under a
    regular file, a block device or a socket, no permission, a read-only or special file
    system, a full disk) and `hint` as what to do; the temporary file is removed whatever
    happens.
    """
    given = Path(path)
    try:
        target = Path(os.path.realpath(given)) if given.is_symlink() else given
        mode = _mode_of(target)
        kind = special_kind(mode) if mode is not None else None
        if mode is not None and kind is not None:
            if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
                raise OSError(errno.EINVAL, f"it is {kind}")
            _write_through(target, text)
            return
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, "it is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise _cannot_write(given, error, hint) from None
    except RecursionError:  # pathlib makes the missing directories one call per level
        raise _cannot_write(given, OSError(errno.ENAMETOOLONG, "nested too deeply"), hint) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            _write_chunks(handle, text)
        os.replace(tmp, target)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(given, error, hint) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_of(path: Path) -> int | None:
    """The `st_mode` of an existing `path`, else None."""
    try:
        return os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _write_through(target: Path, text: str | bytes | Iterable[bytes | memoryview]) -> None:
    """Write to a character device or a named pipe as it is (no temporary file, no rename)."""
    with open(target, "wb") as handle:
        _write_chunks(handle, text)


def _write_chunks(handle: BinaryIO, text: str | bytes | Iterable[bytes | memoryview]) -> None:
    chunks = (text.encode("utf-8"),) if isinstance(text, str) else text
    if isinstance(chunks, bytes):
        handle.write(chunks)
    else:
        for chunk in chunks:
            handle.write(chunk)


def _cannot_write(target: Path, error: OSError, hint: str) -> CannotWriteError:
    if isinstance(error, FileExistsError | NotADirectoryError) and not target.is_dir():
        # mkdir met a regular file where a directory of the path should be.
        reason = "a part of the path is a regular file, not a directory"
    else:
        reason = error.strerror or str(error)
    return CannotWriteError(f"cannot write here: {reason}", path=str(target), hint=hint)


OUTPUT_IS_INPUT_HINT = "give -o a path outside the event logs read"


def _local_path(path: str) -> str | None:
    """The local file-system path of `path` (a plain path or a `file://` URL), else None."""
    if path.startswith("file://"):
        import urllib.parse
        from urllib.request import url2pathname

        return url2pathname(urllib.parse.urlparse(path).path)
    from analyzer.eventlog.source import is_url

    return None if is_url(path) else path


def _identity(path: str) -> tuple[int, int] | None:
    """The (device, inode) of what `path` names, links followed; None if nothing is there."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def enclosing_directories(path: str) -> list[tuple[str, tuple[int, int]]]:
    """The existing directories that hold `path` once resolved, nearest first, each with its
    (device, inode): what writing `path` would write into."""
    out = []
    current = os.path.dirname(os.path.realpath(path))
    while True:
        ident = _identity(current)
        if ident is not None:
            out.append((current, ident))
        up = os.path.dirname(current)
        if up == current:
            return out
        current = up


def check_output_is_not_input(output: str | Path, sources: Iterable[LogSource]) -> None:
    """Raise `OutputIsInputError` when writing `output` would replace a log being read or write
    into a log's directory (a rolling or Databricks log); nothing has been written then.

    Paths are compared resolved (symbolic links, `..`, relative spellings) and by device and
    inode, so a hard link or a bind mount of a log is caught too. Remote logs are not compared:
    the output is always a local file.
    """
    out = os.fspath(output)
    out_real = os.path.realpath(out)
    out_id = _identity(out)
    holders = {ident for _, ident in enclosing_directories(out)}
    for source in sources:
        directory = _local_path(source.path) if source.layout != "single" else None
        directory_id = _identity(directory) if directory is not None else None
        if directory_id is not None and (directory_id in holders or directory_id == out_id):
            raise OutputIsInputError(
                f"the output is inside the {source.layout} event log {source.path}: "
                "writing there would change the log",
                path=out,
                hint=OUTPUT_IS_INPUT_HINT,
            )
        for part in source.parts:
            local = _local_path(part.path)
            if local is None:
                continue
            if os.path.realpath(local) == out_real or (
                out_id is not None and out_id == _identity(local)
            ):
                what = "the event log" if source.layout == "single" else "a part of the event log"
                raise OutputIsInputError(
                    f"the output is {what} {source.path} being read: writing would destroy it",
                    path=out,
                    hint=OUTPUT_IS_INPUT_HINT,
                )


def check_output_against_logs(output: str | Path, logs: Iterable[str]) -> None:
    """Resolve the local logs named (not reading them) and `check_output_is_not_input`; for a
    command line to refuse before any work. Raises what `resolve_log` raises for a bad log."""
    from analyzer.eventlog.source import resolve_log

    check_output_is_not_input(
        output, [resolve_log(log) for log in logs if _local_path(log) is not None]
    )
