"""spark-explain-analyze: a post-hoc EXPLAIN ANALYZE for Apache Spark event logs."""

__version__ = "0.1.0"
