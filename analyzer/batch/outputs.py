"""Writing a batch run's outputs, only ever from the driver that holds the output directory's lock.

`locked` takes the lock; `check_output_dir` refuses, before anything is written, an output
directory whose writes could change a log.

Every file is written atomically (a `.*.tmp` file renamed over the target). A write that fails
(disk full, read-only, a path that is not a directory) raises `CannotWriteError`, one line naming
the file, and leaves no temporary file behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from analyzer.batch.jobs import REPORT_FILES, Job, JobResult
from analyzer.batch.layout import APPS_DIR, OWN_NAMES, STAGING_PREFIX, OutputLayout
from analyzer.batch.manifest import Manifest
from analyzer.errors import AnalyzerError, BatchBusyError, CannotWriteError, OutputIsInputError
from analyzer.eventlog.source import resolve_log
from analyzer.eventlog.storage import is_url, storage_for
from analyzer.output import write_atomic

_OS_ERROR_RE = re.compile(r"\(os error (\d+)\)")
OUTPUT_HINT = "check free space and permissions of the output directory"
"""What to do when a file of the output directory cannot be written."""


def cannot_write(path: Path | str, error: BaseException) -> CannotWriteError:
    """Return the one-line `CannotWriteError` for a failed write of `path`."""
    if isinstance(error, OSError) and error.strerror:
        reason = error.strerror
    else:  # a native library's message, e.g. polars: "... (os error 28)"
        found = _OS_ERROR_RE.search(str(error))
        reason = os.strerror(int(found.group(1))) if found else str(error).splitlines()[0]
    return CannotWriteError(f"cannot write: {reason}", path=str(path), hint=OUTPUT_HINT)


def make_staging_dir(root: Path) -> Path:
    """Make a run's private staging directory in the output directory `root`, where reports are
    written before the driver moves them in place (same file system: no copy); `CannotWriteError`
    if it cannot be made. The run removes it at its end, the next run any a killed one left."""
    staging = root / f"{STAGING_PREFIX}{uuid.uuid4().hex}"
    try:
        staging.mkdir()
    except OSError as error:
        raise cannot_write(staging, error) from None
    return staging


@contextlib.contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Turn an `OSError` raised while writing `path` into an `CannotWriteError`."""
    try:
        yield
    except OSError as error:
        raise cannot_write(path, error) from None


def prepare_output_dir(output: str) -> OutputLayout:
    """Create the output directory (and `apps/`) and return its layout; `CannotWriteError` else."""
    layout = OutputLayout(Path(output))
    if layout.root.exists() and not layout.root.is_dir():
        raise CannotWriteError(
            "is not a directory", path=output, hint="give -o a directory (it is created if missing)"
        )
    for directory in (layout.root, layout.apps_dir):
        with writing(directory):
            directory.mkdir(parents=True, exist_ok=True)
    return layout


class OutputWriter:
    """Writes reports, the manifest and the index of one output directory."""

    def __init__(self, layout: OutputLayout) -> None:
        self.layout = layout

    def write_reports(self, job: Job, result: JobResult) -> None:
        """Put an analyzed application's reports in its directory (from text or staged files).

        A report format missing from the result is deleted: a report of an older analysis would
        be out of step with the others.
        """
        target = self.layout.app_dir(job.app_key)
        given = dict(result.reports)
        staged = Path(result.staged_dir) if result.staged_dir is not None else None
        for file_name in REPORT_FILES.values():
            path = target / file_name
            with writing(path):
                if staged is not None and (staged / file_name).is_file():
                    target.mkdir(parents=True, exist_ok=True)
                    os.replace(staged / file_name, path)
                elif file_name in given:
                    write_atomic(path, given[file_name], OUTPUT_HINT)
                else:
                    path.unlink(missing_ok=True)

    def write_files(self, app_key: str, file_name: str, result: JobResult) -> None:
        """Put one file of a result (given as text or staged) into an application's directory."""
        path = self.layout.app_dir(app_key) / file_name
        given = dict(result.reports)
        staged = Path(result.staged_dir) / file_name if result.staged_dir is not None else None
        with writing(path):
            if staged is not None and staged.is_file():
                os.replace(staged, path)
            elif file_name in given:
                write_atomic(path, given[file_name], OUTPUT_HINT)

    def save_manifest(self, manifest: Manifest) -> None:
        """Write the manifest."""
        with writing(self.layout.manifest_path):
            write_atomic(self.layout.manifest_path, manifest.to_json(), OUTPUT_HINT)

    def write_index(self, html: str) -> None:
        """Write the index page."""
        with writing(self.layout.index_path):
            write_atomic(self.layout.index_path, html, OUTPUT_HINT)


def remove_leftovers(layout: OutputLayout) -> int:
    """Delete what a killed run left: `.*.tmp` files and staging directories; return how many."""
    n = 0
    with contextlib.suppress(OSError):
        for entry in layout.root.iterdir():
            if entry.name.startswith(STAGING_PREFIX) and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
                n += 1
    for base in (layout.root, layout.apps_dir, layout.tables_dir):
        if not base.is_dir():
            continue
        pattern = ".*.tmp" if base == layout.root else "**/.*.tmp"
        for path in base.glob(pattern):
            if path.is_file() or path.is_symlink():
                path.unlink(missing_ok=True)
                n += 1
    return n


def remove_legacy_report_dirs(layout: OutputLayout, names: tuple[str, ...]) -> list[str]:
    """Delete report directories of the old layout (`OUTDIR/<name>/`) named by an old manifest.

    Only a plain directory name holding nothing but report files is removed (of `apps`, now the
    parent of the new report directories, only the report files); return the names removed.
    """
    removed: list[str] = []
    allowed = set(REPORT_FILES.values())
    for name in names:
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            continue
        path = layout.root / name
        if name == APPS_DIR:
            for file_name in allowed:
                with contextlib.suppress(OSError):
                    (path / file_name).unlink(missing_ok=True)
            continue
        if path.is_symlink() or not path.is_dir():
            continue
        try:
            children = list(path.iterdir())
        except OSError:
            continue
        if all(c.is_file() and (c.name in allowed or c.name.endswith(".tmp")) for c in children):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
    return removed


@contextlib.contextmanager
def locked(layout: OutputLayout) -> Iterator[None]:
    """Hold an exclusive lock on the output directory: two runs must not interleave writes."""
    with writing(layout.lock_path):
        handle = open(layout.lock_path, "a+b")  # noqa: SIM115  # closed below
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise BatchBusyError(
                "another batch run is writing this output directory",
                path=str(layout.root),
                hint="wait for it to finish, or choose another output directory",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _path_below(path: str, directory_id: tuple[int, int]) -> str | None:
    """The first component of `path` (resolved) below the directory of identity `directory_id`
    when `path` lies strictly inside it, else None."""
    current = os.path.realpath(path)
    while True:
        up = os.path.dirname(current)
        if up == current:
            return None
        try:
            st = os.stat(up)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) == directory_id:
            return os.path.basename(current)
        current = up


def check_output_dir(log_dir: str, output: str) -> None:
    """Raise `OutputIsInputError` when batch's outputs could replace or change a log: the output
    directory inside a log of the log directory (a rolling or Databricks directory, say), or the
    log directory inside one of the directories batch rewrites (`apps/`, `tables/`, ...).

    Paths are compared resolved and by device and inode. The output directory may be the log
    directory itself: batch's own entries are then left out of the listing (docs/batch.md).
    """
    if is_url(log_dir) and not log_dir.startswith("file://"):
        return
    _, native = storage_for(log_dir)
    try:
        log_st = os.stat(native)
    except OSError:
        return  # the listing says what is wrong with it
    try:
        out_st = os.stat(output)
    except OSError:
        out_st = None
    if out_st is not None and (out_st.st_dev, out_st.st_ino) == (log_st.st_dev, log_st.st_ino):
        return
    top = _path_below(output, (log_st.st_dev, log_st.st_ino))
    if top is not None:
        try:
            resolve_log(os.path.join(native, top))
        except AnalyzerError:
            pass  # not a log: an output directory among the logs changes none of them
        else:
            raise OutputIsInputError(
                f"the output directory is inside the event log {top} of the log directory: "
                "writing there would change the log",
                path=output,
                hint="give -o a directory outside the logs",
            )
    if out_st is not None:
        mine = _path_below(native, (out_st.st_dev, out_st.st_ino))
        if mine is not None and (mine in OWN_NAMES or mine.startswith(STAGING_PREFIX)):
            raise OutputIsInputError(
                f"the log directory is inside {mine}/ of the output directory, which batch "
                "rewrites: its logs could be replaced or removed",
                path=output,
                hint="give -o a directory that does not hold the log directory",
            )


def same_directory(log_dir: str, out_dir: Path) -> bool:
    """Whether `out_dir` is the log directory itself (then batch's own entries are not logs)."""
    if is_url(log_dir):
        return False
    try:
        return os.path.samefile(log_dir, out_dir)
    except OSError:
        return False
