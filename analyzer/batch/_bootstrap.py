"""Executor-side entry of the Spark engine; pickled by value, so it runs before `analyzer` imports.

On an executor the analyzer package may not be installed: the driver ships it as a zip
(`SparkContext.addPyFile`). The zip is extracted once per machine into the temporary directory and
put first on `sys.path`, so the package reads its templates from real files. This module imports
nothing from `analyzer` at module level, and the function it returns captures only strings: the
jobs and their settings are unpickled while iterating, after the package is in place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any


def _use_shipped_package(zip_name: str) -> None:
    from pyspark import SparkFiles

    target = os.path.join(tempfile.gettempdir(), f"spark-explain-{zip_name.removesuffix('.zip')}")
    if not os.path.isdir(target):
        staging = tempfile.mkdtemp(prefix=".spark-explain-", dir=tempfile.gettempdir())
        with zipfile.ZipFile(SparkFiles.get(zip_name)) as archive:
            archive.extractall(staging)
        try:
            os.replace(staging, target)
        except OSError:  # another worker on this machine extracted it first
            shutil.rmtree(staging, ignore_errors=True)
    if target not in sys.path:
        sys.path.insert(0, target)


def partition_function(
    zip_name: str | None, staging_dir: str, probe: str
) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """Return the function Spark runs on each partition of `(AnyJob, JobSettings)` pairs.

    Each job runs under the memory and time limits of its settings. If this executor sees the
    `probe` file, the output directory is shared: reports go into `staging_dir` for the driver
    to move in place; otherwise their text comes back in the result.
    """

    def run_partition(items: Iterable[Any]) -> Iterator[Any]:
        if zip_name is not None:
            _use_shipped_package(zip_name)
        from pathlib import Path

        from analyzer.batch.jobs import JobResult
        from analyzer.batch.limits import TimeLimitExceeded, memory_limit, time_limit
        from analyzer.batch.worker import process_job, stage_reports

        shared = os.path.exists(probe)
        for job, settings in items:
            try:
                with memory_limit(settings.max_memory_mb), time_limit(settings.timeout_s):
                    result = process_job(job, settings)
            except TimeLimitExceeded:
                result = JobResult(job.log_name, error=settings.time_error(), failure="limit")
            if shared:  # if staging fails, the driver writes the text and reports what fails
                with contextlib.suppress(OSError):
                    result = stage_reports(result, Path(staging_dir), job)
            yield result

    return run_partition
