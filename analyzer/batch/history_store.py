"""The history tables on disk: one Parquet file per table and batch run, appended, never rewritten.

A batch run appends one file to each table, the `runs` file last: a `runs` file is the commit of
its batch, and `executions` or `findings` files without one (a run killed between the writes)
are deleted by the next run before it reads the history. Earlier files are never opened for
writing, so no crash can damage them; a file that cannot be read is skipped and listed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import io
import os
import secrets
from pathlib import Path

import polars as pl

from analyzer.batch.history_records import (
    AdviceAppliedRecord,
    AdviceRecord,
    FindingRecord,
    History,
    NewRecords,
    RunRecord,
)
from analyzer.batch.history_rows import HISTORY_TABLES, history_schema
from analyzer.batch.outputs import cannot_write
from analyzer.units import shown_path

HISTORY_DIR = "history"
"""The history tables' directory under `OUTDIR/tables/`."""


_READ_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": tuple(f.name for f in dataclasses.fields(RunRecord)),
    "findings": tuple(f.name for f in dataclasses.fields(FindingRecord)),
    "advice": tuple(f.name for f in dataclasses.fields(AdviceRecord)),
    "advice_applied": tuple(f.name for f in dataclasses.fields(AdviceAppliedRecord)),
}
"""The columns read back from each table: those of its record."""
_ADDED_COLUMNS: dict[str, frozenset[str]] = {
    "runs": frozenset(
        f.name for f in dataclasses.fields(RunRecord) if f.default is not dataclasses.MISSING
    ),
    "findings": frozenset(),
    "advice": frozenset(),
    "advice_applied": frozenset(),
}
"""Columns added to a table after its first version: null when an older file lacks them."""


class HistoryStore:
    """The history tables of one output directory: read them, append a batch, clean up."""

    def __init__(self, tables_dir: Path) -> None:
        self.root = tables_dir / HISTORY_DIR

    def table_dir(self, table: str) -> Path:
        """The directory of one history table (one Parquet file per batch run)."""
        return self.root / table

    def _files(self, table: str) -> list[Path]:
        directory = self.table_dir(table)
        if not directory.is_dir():
            return []
        return sorted(
            p for p in directory.iterdir() if p.suffix == ".parquet" and not p.name.startswith(".")
        )

    def remove_uncommitted(self) -> list[str]:
        """Delete `executions` and `findings` files of a batch whose `runs` file was never written.

        Such files are what a run killed mid-append leaves; the runs they describe are recorded
        again by the next run. Return the names removed.
        """
        committed = {p.name for p in self._files("runs")}
        removed: list[str] = []
        for table in HISTORY_TABLES[1:]:
            for path in self._files(table):
                if path.name not in committed:
                    with contextlib.suppress(OSError):
                        path.unlink()
                        removed.append(f"{table}/{path.name}")
        return removed

    def load(self) -> History:
        """Read the recorded runs and findings; a file that cannot be read is skipped (listed)."""
        history = History()
        for _, frame in self._frames("runs", history):
            history.runs.extend(RunRecord(**row) for row in frame.iter_rows(named=True))
        committed = {p.name for p in self._files("runs")}
        for path, frame in self._frames("findings", history):
            if path.name not in committed:
                continue
            history.findings.extend(FindingRecord(**row) for row in frame.iter_rows(named=True))
        for path, frame in self._frames("advice", history):
            if path.name in committed:
                history.advice.extend(AdviceRecord(**row) for row in frame.iter_rows(named=True))
        for path, frame in self._frames("advice_applied", history):
            if path.name in committed:
                history.applied.extend(
                    AdviceAppliedRecord(**row) for row in frame.iter_rows(named=True)
                )
        return history

    def _frames(self, table: str, history: History) -> list[tuple[Path, pl.DataFrame]]:
        needed = list(_READ_COLUMNS[table])
        frames: list[tuple[Path, pl.DataFrame]] = []
        for path in self._files(table):
            try:
                # Columns added since a file was written (the cost columns) read as null.
                present = set(pl.read_parquet_schema(path))
                added = _ADDED_COLUMNS[table] - present
                frame = pl.read_parquet(path, columns=[c for c in needed if c not in added])
                frame = frame.with_columns(pl.lit(None).alias(c) for c in added).select(needed)
            except (OSError, pl.exceptions.PolarsError) as error:
                reason = str(error).strip().splitlines()[0] if str(error).strip() else "unreadable"
                history.unreadable.append(
                    f"{path}: cannot read this history file ({reason[:200]}); it is skipped: "
                    "restore it from a backup or delete it"
                )
                continue
            frames.append((path, frame))
        return frames

    def append(self, records: NewRecords, batch_run_ms: int) -> str | None:
        """Write one file per history table for this batch, `runs` last; return its file name.

        Each file is written to a temporary name, flushed to disk and renamed into place.
        Raises `CannotWriteError` if a file cannot be written (nothing of the batch is committed).
        """
        if records.empty:
            return None
        stamp = dt.datetime.fromtimestamp(batch_run_ms / 1000, tz=dt.UTC)
        name = f"batch-{stamp:%Y%m%dT%H%M%S}{stamp.microsecond // 1000:03d}Z-{secrets.token_hex(4)}"
        file_name = f"{name}.parquet"
        for table in (*HISTORY_TABLES[1:], HISTORY_TABLES[0]):
            # A log name whose bytes are not UTF-8 (lone surrogates) written as polars holds it.
            rows = [
                tuple(shown_path(v) if isinstance(v, str) else v for v in dataclasses.astuple(row))
                for row in records.rows[table]
            ]
            frame = pl.DataFrame(rows, schema=history_schema(table), orient="row").sort(
                ["run_start_ms", "app_key"], maintain_order=True
            )
            buffer = io.BytesIO()
            frame.write_parquet(buffer)
            _write_durably(self.table_dir(table) / file_name, buffer.getvalue())
        return file_name


def _write_durably(path: Path, data: bytes) -> None:
    """Write `data` to a new file `path` through a flushed temporary file and a rename."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        with contextlib.suppress(OSError):  # make the rename itself durable where possible
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise cannot_write(path, error) from None
