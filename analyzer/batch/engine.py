"""The one interface of batch engines, and the table of engines by name.

An engine runs the per-application step (`worker.process_application`) on every job and hands
each result back to the driver, which writes everything; it also writes the fleet tables. The
driver never asks which engine it has.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from analyzer.batch.jobs import AnyJob, JobResult, JobSettings
from analyzer.batch.layout import OutputLayout

if TYPE_CHECKING:
    import polars as pl


class Engine(Protocol):
    """Runs jobs somewhere and writes fleet tables."""

    name: str

    def run(
        self,
        jobs: Sequence[AnyJob],
        settings: JobSettings,
        on_result: Callable[[JobResult], None],
        on_progress: Callable[[int], None],
    ) -> None:
        """Run every job; call `on_result` in this thread for each result, `on_progress` with the
        number of jobs done now and then. An exception from `on_result` stops the run."""
        ...

    def write_tables(self, tables: dict[str, pl.DataFrame], tables_dir: Path) -> None:
        """Write each fleet table (its frame, in row order) under `tables_dir`;
        `CannotWriteError` if one cannot be."""
        ...

    def close(self) -> None:
        """Release what the engine holds (a Spark session)."""
        ...


@dataclass(frozen=True)
class EngineConfig:
    """What engines are built from."""

    layout: OutputLayout
    workers: int | None = None
    """Worker processes of the local engine (None: the CPU count)."""
    master: str | None = None
    """Spark master URL of the Spark engine (None: `local[*]`)."""


def _local(config: EngineConfig) -> Engine:
    from analyzer.batch.local_engine import LocalEngine

    return LocalEngine(config.workers, config.layout.root)


def _spark(config: EngineConfig) -> Engine:
    from analyzer.batch.spark_engine import SparkEngine

    return SparkEngine(config.master, config.layout)


ENGINES: dict[str, Callable[[EngineConfig], Engine]] = {"local": _local, "spark": _spark}
"""Engine name (`--engine`) → constructor."""
