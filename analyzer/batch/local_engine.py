"""The local batch engine: a pool of worker processes, one application per task, polars tables."""

from __future__ import annotations

import multiprocessing
import os
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from analyzer.batch.fleet import Row, fleet_frame, sort_columns
from analyzer.batch.worker import process_application

TASKS_PER_WORKER = 8
"""A worker process is replaced after this many applications, so a big log's memory is returned."""


def _context() -> multiprocessing.context.BaseContext:
    # fork is unsafe with polars' thread pool; forkserver is cheaper than spawn where it exists.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _died(job: dict[str, Any]) -> dict[str, Any]:
    return {
        "log_name": job["log_name"],
        "ok": False,
        "error": "internal error: the worker process died (out of memory?) analyzing this log",
        "deterministic": False,
        "summary": None,
        "format_errors": {},
        "files": {},
        "elapsed_ms": 0,
    }


class LocalEngine:
    """Analyze applications in local worker processes and write tables with polars."""

    def __init__(self, workers: int | None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)

    def run(
        self, jobs: Sequence[dict[str, Any]], on_result: Callable[[dict[str, Any]], None]
    ) -> None:
        """Run `process_application` on every job, calling `on_result` in this process as each ends.

        If a worker dies (killed, out of memory) the pool breaks; the applications it was running
        are retried one at a time in a fresh pool, so only the culprit fails.
        """
        broken = self._run_pool(jobs, self.workers, on_result)
        if broken:
            still = self._run_pool(broken, 1, on_result, one_by_one=True)
            for job in still:
                on_result(_died(job))

    def _run_pool(
        self,
        jobs: Sequence[dict[str, Any]],
        workers: int,
        on_result: Callable[[dict[str, Any]], None],
        one_by_one: bool = False,
    ) -> list[dict[str, Any]]:
        """Run jobs in one pool; return the jobs whose worker died."""
        if not jobs:
            return []
        broken: list[dict[str, Any]] = []
        if one_by_one:
            for job in jobs:
                broken.extend(self._run_pool([job], 1, on_result))
            return broken
        workers = min(workers, len(jobs))
        # A fresh pool per chunk replaces the workers after TASKS_PER_WORKER applications each
        # (ProcessPoolExecutor's max_tasks_per_child can hang on Python 3.11 and 3.12).
        chunk = workers * TASKS_PER_WORKER
        for start in range(0, len(jobs), chunk):
            broken.extend(self._run_chunk(jobs[start : start + chunk], workers, on_result))
        return broken

    def _run_chunk(
        self,
        jobs: Sequence[dict[str, Any]],
        workers: int,
        on_result: Callable[[dict[str, Any]], None],
    ) -> list[dict[str, Any]]:
        broken: list[dict[str, Any]] = []
        with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
            pending: dict[Future[dict[str, Any]], dict[str, Any]] = {
                pool.submit(process_application, job): job for job in jobs
            }
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken.append(job)
                        continue
                    on_result(result)
        return broken

    def write_tables(self, rows: dict[str, list[Row]], tables_dir: Path) -> None:
        """Write each fleet table as one Parquet file `tables_dir/<name>.parquet`, atomically."""
        tables_dir.mkdir(parents=True, exist_ok=True)
        for table, table_rows in rows.items():
            frame = fleet_frame(table, table_rows).sort(sort_columns(table))
            target = tables_dir / f"{table}.parquet"
            tmp = tables_dir / f".{table}.parquet.tmp"
            frame.write_parquet(tmp)
            if target.is_dir():  # written by the Spark engine before
                shutil.rmtree(target)
            os.replace(tmp, target)

    def close(self) -> None:
        """Nothing to release: each run's pool is closed when it ends."""
