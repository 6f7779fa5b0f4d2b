"""Executor-side entry of the Spark engine; pickled by value, so it runs before `analyzer` imports.

On an executor the analyzer package may not be installed: the driver ships it as a zip
(`SparkContext.addPyFile`). The zip is extracted once per machine into the temporary directory and
put first on `sys.path`, so the package reads its templates from real files. This module imports
nothing from `analyzer` at module level.
"""

from __future__ import annotations

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
    zip_name: str | None,
) -> Callable[[Iterable[dict[str, Any]]], Iterator[dict[str, Any]]]:
    """Return the function Spark runs on each partition of jobs: one result dict per job.

    A job whose `probe` file is not visible here (the output directory is not shared with this
    executor) gets `out_dir` None, so its reports come back as text for the driver to write.
    """

    def run_partition(jobs: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if zip_name is not None:
            _use_shipped_package(zip_name)
        from analyzer.batch.worker import process_application

        for job in jobs:
            probe = job.get("probe")
            if probe is not None and not os.path.exists(probe):
                job = {**job, "out_dir": None}
            yield process_application(job)

    return run_partition
