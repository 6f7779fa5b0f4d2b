"""Directory runs: a report per application, an index and fleet tables; the only pyspark code.

pyspark is imported only by `analyzer.batch.spark_engine`, and only for `--engine spark`.
"""

from analyzer.batch.runner import BatchSummary, run_batch

__all__ = ["BatchSummary", "run_batch"]
