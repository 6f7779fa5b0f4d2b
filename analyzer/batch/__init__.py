"""Directory runs: a report per application, an index and fleet tables; the only pyspark code.

pyspark is imported only by `analyzer.batch.spark_engine`, and only for `--engine spark`. The
names below are imported on first use, so a worker process (`analyzer.batch.worker_process`) can
limit its memory before the analyzer is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analyzer.batch.runner import BatchOptions, BatchSummary, run_batch

__all__ = ["BatchOptions", "BatchSummary", "run_batch"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from analyzer.batch import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
