"""Write the sample event logs in `sample_eventlogs/` by running small, real PySpark applications.

Each workload is one Spark application with a fixed name (`sea-...`), run in its own Python process
(this script re-invokes itself with `--run-one NAME`), because builder options leak from one session
to the next inside one process. Data is generated from `spark.range` with fixed hashes, so every run
processes the same rows; timings, app ids and spill sizes still differ from run to run.

The applications cover every event-log codec (none, zstd, lz4, lzf, snappy), a rolling log with
more than one `events_N` file, AQE on and off, skew with and without AQE's skew-join split, forced
spills, a retried task, a failed query, Python UDFs, caching, a scalar subquery, parquet I/O, all
join strategies, many tiny tasks and a large collected result.

After the runs the script reads every log back with the analyzer's own reader
(`analyzer.eventlog`: every codec and layout), prints a summary per application,
checks what each workload is meant to show (for example a nonzero spill), and writes
`README.md` and `.manifest.json` (hidden, so log readers skip it) beside the logs.

Usage:
    .venv/bin/python scripts/make_sample_eventlogs.py [--out DIR] [--only NAME[,NAME]]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_eventlogs"
MANIFEST_NAME = ".manifest.json"
README_NAME = "README.md"
MANIFEST_FORMAT_VERSION = 1
CHILD_TIMEOUT_S = 600
REGENERATE_COMMAND = ".venv/bin/python scripts/make_sample_eventlogs.py"

# Names Spark gives single-file logs and rolling-log directories (app id `local-<ms>` in local
# mode, `app-<yyyyMMddHHmmss>-<nnnn>` on a standalone or local-cluster master); nothing else in
# the output directory is ever deleted.
APP_ID_PATTERN = r"(local-\d+|app-\d{14}-\d{4})"
LOG_NAME_RE = re.compile(
    rf"^({APP_ID_PATTERN}(\.(lz4|lzf|snappy|zstd))?(\.inprogress)?|eventlog_v2_{APP_ID_PATTERN})$"
)

# The smallest `spark.eventLog.rolling.maxFileSize` Spark 4.3 accepts ("at least 2 MiB"); the size
# is counted before compression.
ROLLING_MAX_FILE_SIZE = "2m"


# ------------------------------------------------------------------------------------------------
# Workloads (run inside the child process; pyspark is imported lazily)
# ------------------------------------------------------------------------------------------------

Runner = Callable[[Any, Path], None]


@dataclass(frozen=True)
class Workload:
    """One sample application: its Spark settings, what it runs, and what its log must show."""

    name: str
    """Short name used by `--only`; the Spark app name is `sea-<name>`."""
    codec: str
    """`none`, `zstd`, `lz4`, `lzf` or `snappy`."""
    rolling: bool
    exercises: str
    """One line for the README: what the log is good for."""
    run: Runner
    conf: dict[str, str] = field(default_factory=dict)
    expects: tuple[str, ...] = ()
    """Checks from `CHECKS` the written log must pass."""
    master: str = "local[2,3]"
    """`local[...]`, `local-cluster[...]`, or `standalone` (see `standalone_hosts`)."""
    standalone_hosts: tuple[str, ...] = ()
    """With master `standalone`: one Worker per host (loopback addresses), started for this app."""

    @property
    def app_name(self) -> str:
        """Return the Spark application name."""
        return f"sea-{self.name}"


def hashed(col_name: str, seed: int, modulo: int) -> Any:
    """Return a deterministic pseudo-random column in [0, modulo) derived from `col_name`."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(F.col(col_name), F.lit(seed)), F.lit(modulo))


def orders_frame(spark: Any, n_rows: int, n_customers: int, n_partitions: int = 4) -> Any:
    """Return an orders table: order_id, customer_id, amount (deterministic)."""
    from pyspark.sql import functions as F

    return spark.range(0, n_rows, 1, n_partitions).select(
        F.col("id").alias("order_id"),
        hashed("id", 1, n_customers).alias("customer_id"),
        (hashed("id", 2, 100_000) / F.lit(100.0)).alias("amount"),
    )


def customers_frame(spark: Any, n_customers: int) -> Any:
    """Return a customers table: customer_id, region, segment."""
    from pyspark.sql import functions as F

    return spark.range(0, n_customers, 1, 2).select(
        F.col("id").alias("customer_id"),
        F.concat(F.lit("region-"), (F.col("id") % 12).cast("string")).alias("region"),
        (F.col("id") % 3).alias("segment"),
    )


def run_join_agg(spark: Any, scratch: Path) -> None:
    """Join orders to customers and aggregate per region (the AQE on/off pair runs this)."""
    from pyspark.sql import functions as F

    orders = orders_frame(spark, 300_000, 20_000, n_partitions=4)
    customers = customers_frame(spark, 20_000).filter(F.col("segment") == 1)
    per_region = (
        orders.join(customers, "customer_id")
        .groupBy("region")
        .agg(
            F.count("*").alias("n_orders"),
            F.sum("amount").alias("revenue"),
            F.countDistinct("customer_id").alias("n_customers"),
        )
        .orderBy(F.desc("revenue"))
    )
    per_region.collect()


def skewed_frames(spark: Any) -> tuple[Any, Any]:
    """Return (facts, dims) where key 0 holds 90% of the facts."""
    from pyspark.sql import functions as F

    facts = spark.range(0, 400_000, 1, 8).select(
        F.when(F.col("id") % 10 < 9, F.lit(0)).otherwise(hashed("id", 3, 2_000)).alias("k"),
        F.col("id").alias("v"),
    )
    dims = spark.range(0, 2_000, 1, 2).select(F.col("id").alias("k"), (F.col("id") % 7).alias("w"))
    return facts, dims


def run_skewed_join(spark: Any, scratch: Path) -> None:
    """Join a skewed fact table to a small dimension with a sort-merge join, then aggregate."""
    from pyspark.sql import functions as F

    facts, dims = skewed_frames(spark)
    joined = facts.join(dims, "k").groupBy("w").agg(F.count("*").alias("n"), F.sum("v").alias("s"))
    joined.collect()


def run_spills(spark: Any, scratch: Path) -> None:
    """Run a sort, a hash aggregate and a window, each forced to spill by low thresholds."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = spark.range(0, 300_000, 1, 2).select(
        F.col("id"),
        hashed("id", 4, 1_000_000_000).alias("sort_key"),
        hashed("id", 5, 60_000).alias("group_key"),
        F.sha2(F.col("id").cast("string"), 256).alias("payload"),
    )
    rows.orderBy("sort_key").write.format("noop").mode("overwrite").save()
    (
        rows.groupBy("group_key")
        .agg(F.sum("id").alias("s"), F.max(F.length("payload") + F.col("id")).alias("m"))
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    by_bucket = Window.partitionBy(F.col("group_key") % 4)
    (
        rows.select("id", "group_key", F.sum("id").over(by_bucket).alias("bucket_total"))
        .write.format("noop")
        .mode("overwrite")
        .save()
    )


def run_python_udf_retry(spark: Any, scratch: Path) -> None:
    """Run Python UDFs; one task fails on its first attempt and succeeds when retried."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType

    marker = str(scratch / "udf-failed-once")

    def double_or_fail_once(x: int) -> int:
        """Double x; raise once (for row 777) until the marker file exists."""
        if x == 777 and not os.path.exists(marker):
            Path(marker).touch()
            raise RuntimeError("sample transient failure: retry me")
        return x * 2

    def label(x: int) -> str:
        """Label a number by its last digit."""
        return f"digit-{x % 10}"

    double_udf = F.udf(double_or_fail_once, LongType())
    label_udf = F.udf(label, StringType())
    spark.range(0, 20_000, 1, 4).select(double_udf("id").alias("d")).agg(F.sum("d")).collect()
    (
        spark.range(0, 20_000, 1, 4)
        .select(label_udf("id").alias("label"), F.col("id"))
        .groupBy("label")
        .agg(F.count("*"), F.max("id"))
        .collect()
    )


def run_failed_query(spark: Any, scratch: Path) -> None:
    """Run a good query, a query whose tasks always fail (its job fails), then a good one."""
    from pyspark.sql import functions as F

    buckets = spark.range(0, 50_000, 1, 4).groupBy((F.col("id") % 10).alias("b"))
    buckets.agg(F.sum("id").alias("s")).collect()
    failing = buckets.agg(F.sum("id").alias("s")).select(
        F.when(F.col("b") == 3, F.raise_error(F.lit("sample failure: bucket 3 is rejected")))
        .otherwise(F.col("s"))
        .alias("s")
    )
    try:
        failing.collect()
    except Exception as exc:  # the failure is the point of this workload
        print(f"expected failure: {type(exc).__name__}", file=sys.stderr)
    spark.range(0, 1_000, 1, 2).agg(F.count("*")).collect()


def run_cache_subquery_parquet(spark: Any, scratch: Path) -> None:
    """Cache a table and query it twice, run a scalar subquery, then write and read parquet."""
    from pyspark.sql import functions as F

    orders = orders_frame(spark, 100_000, 5_000)
    orders.cache()
    orders.count()
    orders.groupBy((F.col("customer_id") % 50).alias("bucket")).agg(F.sum("amount")).collect()
    orders.filter(F.col("amount") > 900).agg(F.count("*"), F.avg("amount")).collect()
    orders.createOrReplaceTempView("orders")
    spark.sql(
        "SELECT customer_id, count(*) AS n FROM orders "
        "WHERE amount > (SELECT avg(amount) FROM orders) "
        "GROUP BY customer_id ORDER BY n DESC LIMIT 20"
    ).collect()
    orders.unpersist()
    parquet_dir = str(scratch / "orders.parquet")
    orders.repartition(4, "customer_id").write.mode("overwrite").parquet(parquet_dir)
    (
        spark.read.parquet(parquet_dir)
        .filter(F.col("customer_id") < 500)
        .groupBy("customer_id")
        .agg(F.sum("amount"))
        .collect()
    )


def run_join_strategies(spark: Any, scratch: Path) -> None:
    """Run a broadcast hash, sort-merge, shuffled hash, cartesian and broadcast nested-loop join."""
    from pyspark.sql import functions as F

    facts = orders_frame(spark, 100_000, 1_000)
    dims = customers_frame(spark, 1_000)
    for hint in ("broadcast", "merge", "shuffle_hash"):
        facts.join(dims.hint(hint), "customer_id").groupBy("region").agg(F.sum("amount")).collect()
    left = spark.range(0, 300, 1, 2).withColumnRenamed("id", "a")
    right = spark.range(0, 200, 1, 2).withColumnRenamed("id", "b")
    left.crossJoin(right).filter(F.col("a") < F.col("b")).agg(F.count("*")).collect()
    left.join(F.broadcast(right), F.col("a") < F.col("b")).agg(F.count("*")).collect()


def run_many_tasks_large_result(spark: Any, scratch: Path) -> None:
    """Spread tiny data over 200 partitions several times, then collect a large result."""
    from pyspark.sql import functions as F

    for i in range(6):
        spark.range(0, 4_000, 1, 4).repartition(200).agg(F.sum(F.col("id") + i)).collect()
    rows = spark.range(0, 100_000, 1, 4).select(
        "id", F.sha2(F.col("id").cast("string"), 256).alias("digest")
    )
    rows.collect()


def run_multi_sql(spark: Any, scratch: Path) -> None:
    """Run several SQL statements of different shapes against two temp views."""
    orders_frame(spark, 50_000, 2_000).createOrReplaceTempView("orders")
    customers_frame(spark, 2_000).createOrReplaceTempView("customers")
    statements = (
        "SELECT count(*) FROM orders",
        "SELECT region, count(*) AS n FROM orders JOIN customers USING (customer_id) "
        "GROUP BY region HAVING count(*) > 100",
        "SELECT customer_id, amount, "
        "rank() OVER (PARTITION BY customer_id % 10 ORDER BY amount DESC) AS r "
        "FROM orders ORDER BY amount DESC LIMIT 10",
        "SELECT DISTINCT segment FROM (SELECT segment FROM customers UNION ALL "
        "SELECT customer_id % 3 AS segment FROM orders)",
        "WITH big AS (SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id) "
        "SELECT c.region, max(b.total) FROM big b JOIN customers c USING (customer_id) GROUP BY 1",
        "SELECT percentile_approx(amount, 0.5), approx_count_distinct(customer_id) FROM orders",
    )
    for statement in statements:
        spark.sql(statement).collect()
    spark.sql("SELECT * FROM orders WHERE amount > 999").show(5)


def wait_for_executors(spark: Any, n_executors: int, timeout_s: float = 120) -> None:
    """Wait until `n_executors` executors have registered, so tasks spread over all of them."""
    jsc = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout_s
    # getExecutorMemoryStatus lists the driver's block manager too.
    while jsc.getExecutorMemoryStatus().size() < n_executors + 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {n_executors} executors after {timeout_s} s")
        time.sleep(0.2)


SLOW_HOST_ENV = "SEA_SLOW_HOST"
"""Set to `1` in the environment of the first standalone Worker (its executors inherit it)."""


def run_speculation(spark: Any, scratch: Path) -> None:
    """Aggregate twice over 8 partitions; one row pauses, so its task gets a speculative copy."""
    from pyspark.sql import functions as F

    wait_for_executors(spark, 2)
    warm_up = spark.range(0, 80_000, 1, 8).groupBy((F.col("id") % 8).alias("k")).count()
    warm_up.collect()
    # The pause is a JVM call (no Python worker). It is long on the first Worker's host and
    # shorter on the other, so whichever host runs the original, a copy is launched on the
    # other host: a copy on the fast host wins and the original is killed, or the original
    # wins and the copy is killed.
    pause_ms = (
        f"CASE WHEN reflect('java.lang.System', 'getenv', '{SLOW_HOST_ENV}') = '1' "
        "THEN 6000 ELSE 2000 END"
    )
    rows = spark.range(0, 80_000, 1, 8).select(
        "id",
        F.when(
            F.col("id") == 50_000,
            F.expr(f"reflect('java.lang.Thread', 'sleep', cast({pause_ms} AS bigint))"),
        ).alias("pause"),
    )
    rows.groupBy((F.col("id") % 8).alias("k")).agg(
        F.sum("id").alias("s"), F.count("pause").alias("n_paused")
    ).collect()


def run_partition_pruning(spark: Any, scratch: Path) -> None:
    """Write a table partitioned by day (120 days), then read it without and with pruning."""
    from pyspark.sql import functions as F

    table_dir = str(scratch / "events_by_day.parquet")
    (
        spark.range(0, 120_000, 1, 4)
        .select(
            F.date_add(F.lit("2024-01-01").cast("date"), (F.col("id") % 120).cast("int")).alias(
                "dt"
            ),
            hashed("id", 6, 1_000).alias("user_id"),
            (hashed("id", 7, 100_000) / F.lit(100.0)).alias("amount"),
        )
        .repartition(4, "dt")
        .write.partitionBy("dt")
        .mode("overwrite")
        .parquet(table_dir)
    )
    table = spark.read.parquet(table_dir)
    # Filter on a data column only: every one of the 120 partitions is listed and read.
    (
        table.filter(F.col("amount") > 990)
        .groupBy("dt")
        .agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
        .collect()
    )
    # Filter on the partition column: PartitionFilters prune the scan to 7 partitions.
    (
        table.filter(F.col("dt").between("2024-02-01", "2024-02-07"))
        .groupBy("user_id")
        .agg(F.sum("amount").alias("total"))
        .orderBy(F.desc("total"))
        .limit(10)
        .collect()
    )


def executor_pid(app_id: str, executor_id: str) -> int | None:
    """Return the pid of this application's executor JVM with the given id, if it runs."""
    listing = subprocess.run(
        ["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True
    ).stdout
    for line in listing.splitlines():
        pid, _, args = line.strip().partition(" ")
        words = args.split()
        if (
            "org.apache.spark.executor.CoarseGrainedExecutorBackend" in words
            and f"--app-id {app_id}" in args
            and f"--executor-id {executor_id}" in " ".join(words)
            and words[words.index("--executor-id") + 1] == executor_id
        ):
            return int(pid)
    return None


def kill_executor_when_stage_runs(
    spark: Any, job_group: str, executor_id: str, delay_s: float
) -> threading.Thread:
    """Start a thread that SIGKILLs an executor `delay_s` after the group's last stage starts."""
    sc = spark.sparkContext
    app_id = sc.applicationId

    def watch() -> None:
        tracker = sc.statusTracker()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            for job_id in tracker.getJobIdsForGroup(job_group):
                job = tracker.getJobInfo(job_id)
                if job is None or len(job.stageIds) < 2:
                    continue
                stage = tracker.getStageInfo(max(job.stageIds))
                if stage is not None and stage.numActiveTasks > 0:
                    time.sleep(delay_s)
                    pid = executor_pid(app_id, executor_id)
                    if pid is None:
                        print(f"executor {executor_id} not found", file=sys.stderr)
                        return
                    print(f"killing executor {executor_id} (pid {pid})", file=sys.stderr)
                    os.kill(pid, signal.SIGKILL)
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


PAUSE_150_MS = "CAST(150 AS bigint)"


def run_executor_lost(spark: Any, scratch: Path) -> None:
    """Run an aggregation twice; the second time executor 1 is killed while the reduce runs."""
    from pyspark.sql import functions as F

    wait_for_executors(spark, 2)

    def query() -> Any:
        # 40 groups over 4 reduce tasks; each output row pauses 150 ms (a JVM call), so the
        # reduce stage runs for about 1.5 s per task: long enough to lose an executor mid-stage.
        return (
            spark.range(0, 200_000, 1, 4)
            .groupBy((F.col("id") % 40).alias("k"))
            .agg(F.sum("id").alias("s"))
            .withColumn("pause", F.expr(f"reflect('java.lang.Thread', 'sleep', {PAUSE_150_MS})"))
        )

    query().collect()
    killer = kill_executor_when_stage_runs(spark, "lose-executor", "1", delay_s=0.5)
    spark.sparkContext.setJobGroup("lose-executor", "reduce stage loses executor 1")
    query().collect()
    killer.join(timeout=10)


def run_rdd_only(spark: Any, scratch: Path) -> None:
    """Run plain RDD jobs (a word count and a reduce): jobs and stages, but no SQL execution."""
    sc = spark.sparkContext
    words = sc.parallelize([f"w{i % 37}" for i in range(20_000)], 4)
    counts = words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b, 3).collect()
    assert len(counts) == 37
    assert sc.parallelize(range(10_000), 4).map(lambda x: x * 2).sum() == 99_990_000


AQE_OFF = {"spark.sql.adaptive.enabled": "false"}
NO_AUTO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}

WORKLOADS: tuple[Workload, ...] = (
    Workload(
        name="join-agg-aqe-on",
        codec="zstd",
        rolling=False,
        exercises="join + aggregate with AQE on: sort-merge join replanned to broadcast at run "
        "time, coalesced shuffle partitions, AQE plan updates",
        run=run_join_agg,
        conf={
            **NO_AUTO_BROADCAST,
            "spark.sql.adaptive.autoBroadcastJoinThreshold": "10m",
            "spark.sql.shuffle.partitions": "8",
        },
        expects=("aqe_updates",),
    ),
    Workload(
        name="join-agg-aqe-off",
        codec="none",
        rolling=False,
        exercises="the same join + aggregate with AQE off: static sort-merge join, 8 shuffle "
        "partitions, no plan updates",
        run=run_join_agg,
        conf={**NO_AUTO_BROADCAST, **AQE_OFF, "spark.sql.shuffle.partitions": "8"},
        expects=("no_aqe_updates",),
    ),
    Workload(
        name="skewed-join",
        codec="snappy",
        rolling=False,
        exercises="sort-merge join where key 0 holds 90% of rows; AQE on but skew-join handling "
        "off, so one task per stage does most of the work",
        run=run_skewed_join,
        conf={
            **NO_AUTO_BROADCAST,
            "spark.sql.adaptive.skewJoin.enabled": "false",
            "spark.sql.adaptive.coalescePartitions.enabled": "false",
        },
        expects=("no_skew_split",),
    ),
    Workload(
        name="skewed-join-aqe-split",
        codec="lzf",
        rolling=False,
        exercises="the same skewed join with AQE skew-join handling on and low thresholds: the "
        "skewed partition is split (SortMergeJoin skew=true, AQEShuffleRead)",
        run=run_skewed_join,
        conf={
            **NO_AUTO_BROADCAST,
            "spark.sql.adaptive.skewJoin.enabled": "true",
            "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "2",
            "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "64k",
            "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64k",
            "spark.sql.adaptive.forceOptimizeSkewedJoin": "true",
        },
        expects=("skew_split",),
    ),
    Workload(
        name="spill-sort-agg-window",
        codec="lz4",
        rolling=False,
        exercises="a sort, a hash aggregate and a window that spill (forced by low spill "
        "thresholds): nonzero memory/disk bytes spilled and `spill size`",
        run=run_spills,
        conf={
            # Spark's own test knobs: spill every N records instead of waiting for memory pressure,
            # which local mode's large driver heap would never reach with data this small.
            "spark.shuffle.spill.numElementsForceSpillThreshold": "20000",
            "spark.sql.TungstenAggregate.testFallbackStartsAt": "2000,4000",
            "spark.sql.windowExec.buffer.spill.threshold": "5000",
            "spark.sql.windowExec.buffer.in.memory.threshold": "1000",
        },
        expects=("spill", "hash_aggregate"),
    ),
    Workload(
        name="python-udf-task-retry",
        codec="zstd",
        rolling=False,
        exercises="Python UDFs (BatchEvalPython); one task fails with ExceptionFailure on its "
        "first attempt and succeeds on retry",
        run=run_python_udf_retry,
        expects=("task_retry", "python_udf"),
    ),
    Workload(
        name="failed-query",
        codec="none",
        rolling=False,
        exercises="a query whose task fails on every attempt (raise_error), so the stage, job "
        "and SQL execution fail (SQLExecutionEnd errorMessage); good queries before and after",
        run=run_failed_query,
        expects=("failed_execution",),
    ),
    Workload(
        name="cache-subquery-parquet",
        codec="snappy",
        rolling=False,
        exercises="a cached table queried twice (InMemoryTableScan), a scalar subquery, a parquet "
        "write and a parquet read with a filter",
        run=run_cache_subquery_parquet,
        expects=("in_memory_scan", "subquery"),
    ),
    Workload(
        name="join-strategies",
        codec="lzf",
        rolling=False,
        exercises="broadcast hash, sort-merge and shuffled hash joins (by hint), a cartesian "
        "product and a broadcast nested-loop join on tiny data",
        run=run_join_strategies,
        conf=NO_AUTO_BROADCAST,
        expects=("join_strategies",),
    ),
    Workload(
        name="many-tasks-large-result",
        codec="zstd",
        rolling=True,
        exercises="rolling log (several events_N files): six queries of 200 tiny tasks each, "
        "then a ~10 MB result collected to the driver",
        run=run_many_tasks_large_result,
        expects=("rolling_parts",),
    ),
    Workload(
        name="multi-sql",
        codec="lz4",
        rolling=False,
        exercises="several SQL executions of different shapes: count, join + having, window "
        "rank with top-k, union + distinct, CTE, approximate aggregates, show()",
        run=run_multi_sql,
        expects=("several_executions",),
    ),
    Workload(
        name="speculation",
        codec="lz4",
        rolling=False,
        exercises="speculative execution on a two-host standalone cluster (Workers on 127.0.0.1 "
        "and 127.0.0.2): one row pauses, so its task gets a speculative copy on the other host "
        "and the losing attempt is killed",
        run=run_speculation,
        conf={
            "spark.speculation": "true",
            "spark.speculation.interval": "100ms",
            "spark.speculation.multiplier": "2",
            "spark.speculation.quantile": "0.5",
            "spark.speculation.minTaskRuntime": "500ms",
            "spark.executor.memory": "512m",
            "spark.cores.max": "4",
        },
        expects=("speculative_task",),
        master="standalone",
        standalone_hosts=("127.0.0.1", "127.0.0.2"),
    ),
    Workload(
        name="partition-pruning",
        codec="snappy",
        rolling=False,
        exercises="a parquet table partitioned by day (120 partitions) read with a filter on a "
        "data column only (all 120 partitions scanned, PartitionFilters []) and with a filter on "
        "the partition column (pruned to 7)",
        run=run_partition_pruning,
        expects=("unpruned_scan", "pruned_scan"),
    ),
    Workload(
        name="executor-lost",
        codec="zstd",
        rolling=False,
        exercises="local-cluster with 2 executors; executor 1 is killed (SIGKILL) during a reduce "
        "stage: ExecutorRemoved, ExecutorLostFailure, FetchFailed, then the lost map outputs and "
        "the unfinished reduce tasks rerun as stage attempts 1",
        run=run_executor_lost,
        conf={
            **AQE_OFF,
            "spark.executor.memory": "512m",
        },
        expects=("executor_lost", "stage_resubmitted"),
        master="local-cluster[2,1,1024]",
    ),
    Workload(
        name="rdd-only",
        codec="none",
        rolling=False,
        exercises="plain RDD jobs (a word count with a shuffle, and a sum) and no SQL at all: "
        "jobs and stages but no SQL execution",
        run=run_rdd_only,
        expects=("no_sql",),
    ),
)
WORKLOADS_BY_NAME = {w.name: w for w in WORKLOADS}


def spark_conf(workload: Workload, log_dir: Path) -> dict[str, str]:
    """Return the full Spark configuration of a workload's application."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": log_dir.resolve().as_uri(),
        "spark.eventLog.rolling.enabled": "true" if workload.rolling else "false",
    }
    if workload.rolling:
        conf["spark.eventLog.rolling.maxFileSize"] = ROLLING_MAX_FILE_SIZE
    if workload.codec == "none":
        conf["spark.eventLog.compress"] = "false"
    else:
        conf["spark.eventLog.compress"] = "true"
        conf["spark.eventLog.compression.codec"] = workload.codec
    conf.update(workload.conf)
    return conf


def spark_home() -> str:
    """Return the Spark installation inside the pyspark package (bin/, jars/, sbin/)."""
    import pyspark

    return str(Path(pyspark.__file__).resolve().parent)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def standalone_cluster(hosts: tuple[str, ...], scratch: Path) -> Iterator[str]:
    """Start a standalone Master on 127.0.0.1 and one Worker per host; yield the master URL.

    Speculative copies only run on another host than the original attempt, and `local[...]` and
    `local-cluster[...]` put every executor on one host (local mode does not speculate at all),
    so speculation needs Workers on distinct loopback addresses. The daemons are stopped (SIGTERM,
    which also ends their executors) when the block exits.
    """
    home = spark_home()
    env = dict(os.environ, SPARK_HOME=home, SPARK_NO_DAEMONIZE="1")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = f"{home}/bin/spark-class"
    commands = [
        (
            [
                *(spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"),
                *("--port", str(port), "--webui-port", str(free_port())),
            ],
            env,
        )
    ]
    for i, host in enumerate(hosts):
        worker_env = dict(env, **({SLOW_HOST_ENV: "1"} if i == 0 else {}))
        commands.append(
            (
                [
                    *(spark_class, "org.apache.spark.deploy.worker.Worker", "--host", host),
                    *("--cores", "2", "--memory", "1g", "--webui-port", str(free_port())),
                    *("--work-dir", str(scratch / f"worker-{i}"), url),
                ],
                worker_env,
            )
        )
    daemons: list[subprocess.Popen[bytes]] = []
    with (scratch / "standalone-daemons.log").open("wb") as sink:
        try:
            for cmd, cmd_env in commands:
                daemons.append(subprocess.Popen(cmd, env=cmd_env, stdout=sink, stderr=sink))
            yield url
        finally:
            for daemon in daemons:
                daemon.terminate()
            for daemon in daemons:
                try:
                    daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()


def run_one(workload: Workload, log_dir: Path, scratch: Path) -> None:
    """Run one workload as a Spark application in this process."""
    if workload.master.startswith("local-cluster"):
        # local-cluster starts Workers inside the driver JVM; they launch executors with
        # SPARK_HOME's scripts and write their work dirs under SPARK_WORKER_DIR.
        os.environ["SPARK_HOME"] = spark_home()
        os.environ["SPARK_WORKER_DIR"] = str(scratch / "workers")
    if workload.master == "standalone":
        with standalone_cluster(workload.standalone_hosts, scratch) as url:
            run_session(workload, url, log_dir, scratch)
    else:
        run_session(workload, workload.master, log_dir, scratch)


def run_session(workload: Workload, master: str, log_dir: Path, scratch: Path) -> None:
    """Start the workload's SparkSession on `master`, run it, and stop the session."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(workload.app_name)
    for key, value in spark_conf(workload, log_dir).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        workload.run(spark, scratch)
    finally:
        spark.stop()


# ------------------------------------------------------------------------------------------------
# Reading the written logs back (with the analyzer's own reader: every codec and layout)
# ------------------------------------------------------------------------------------------------


def log_parts(log_path: Path) -> list[Path]:
    """Return the files of a log in reading order (one file, or a rolling dir's events_N files)."""
    from analyzer.eventlog.source import resolve_log

    return [Path(part.path) for part in resolve_log(str(log_path)).parts]


def iter_events(log_path: Path, stats: Any) -> Iterator[dict[str, Any]]:
    """Yield the decoded JSON events of a log, counting what was read into `stats` (`ReadStats`)."""
    from analyzer.eventlog.lines import iter_lines
    from analyzer.eventlog.source import resolve_log

    for line in iter_lines(resolve_log(str(log_path)), stats):
        yield json.loads(line.data)


@dataclass
class LogSummary:
    """What the verification step found in one log."""

    spark_version: str = ""
    java_version: str = ""
    app_name: str = ""
    n_events: int = 0
    uncompressed_bytes: int = 0
    n_sql_executions: int = 0
    n_failed_executions: int = 0
    n_aqe_updates: int = 0
    n_jobs: int = 0
    n_failed_jobs: int = 0
    n_tasks: int = 0
    n_failed_tasks: int = 0
    n_retried_then_succeeded: int = 0
    memory_bytes_spilled: int = 0
    disk_bytes_spilled: int = 0
    plan_node_names: set[str] = field(default_factory=set)
    skew_split: bool = False
    n_speculative_tasks: int = 0
    n_killed_tasks: int = 0
    n_executors_removed: int = 0
    n_executor_lost_failures: int = 0
    n_fetch_failures: int = 0
    n_stage_resubmissions: int = 0
    """StageSubmitted events with a stage attempt above 0."""
    partition_filters: list[str] = field(default_factory=list)
    """The `PartitionFilters` of every scan of a partitioned table in the initial plans."""


def collect_node_names(plan: dict[str, Any], into: set[str]) -> None:
    """Add the node names of a SparkPlanInfo tree to `into`."""
    into.add(str(plan.get("nodeName", "")))
    for child in plan.get("children", []):
        collect_node_names(child, into)


def collect_partition_filters(plan: dict[str, Any], into: list[str]) -> None:
    """Append the `PartitionFilters` of every scan of a partitioned table in a SparkPlanInfo tree.

    Only scans of partitioned tables have the "number of partitions read" metric.
    """
    metadata = plan.get("metadata") or {}
    metric_names = {m.get("name") for m in plan.get("metrics", [])}
    if "PartitionFilters" in metadata and "number of partitions read" in metric_names:
        into.append(str(metadata["PartitionFilters"]))
    for child in plan.get("children", []):
        collect_partition_filters(child, into)


def summarize_log(log_path: Path) -> LogSummary:
    """Decode a log and count what the README and the checks report."""
    from analyzer.eventlog.lines import ReadStats

    summary = LogSummary()
    failed_attempts: set[tuple[int, int, int]] = set()
    stats = ReadStats()
    for event in iter_events(log_path, stats):
        summary.n_events += 1
        kind = str(event.get("Event", "")).rsplit(".", 1)[-1]
        if kind == "SparkListenerLogStart":
            summary.spark_version = event.get("Spark Version", "")
        elif kind == "SparkListenerEnvironmentUpdate":
            summary.java_version = event.get("JVM Information", {}).get("Java Version", "")
        elif kind == "SparkListenerApplicationStart":
            summary.app_name = event.get("App Name", "")
        elif kind == "SparkListenerSQLExecutionStart":
            summary.n_sql_executions += 1
            collect_partition_filters(event.get("sparkPlanInfo", {}), summary.partition_filters)
            collect_node_names(event.get("sparkPlanInfo", {}), summary.plan_node_names)
        elif kind == "SparkListenerSQLAdaptiveExecutionUpdate":
            summary.n_aqe_updates += 1
            collect_node_names(event.get("sparkPlanInfo", {}), summary.plan_node_names)
            if "skew=true" in event.get("physicalPlanDescription", ""):
                summary.skew_split = True
        elif kind == "SparkListenerSQLExecutionEnd":
            if event.get("errorMessage"):
                summary.n_failed_executions += 1
        elif kind == "SparkListenerJobStart":
            summary.n_jobs += 1
        elif kind == "SparkListenerStageSubmitted":
            if event.get("Stage Info", {}).get("Stage Attempt ID", 0) > 0:
                summary.n_stage_resubmissions += 1
        elif kind == "SparkListenerExecutorRemoved":
            summary.n_executors_removed += 1
        elif kind == "SparkListenerJobEnd":
            if event.get("Job Result", {}).get("Result") != "JobSucceeded":
                summary.n_failed_jobs += 1
        elif kind == "SparkListenerTaskEnd":
            summary.n_tasks += 1
            info = event.get("Task Info", {})
            key = (
                event.get("Stage ID", -1),
                event.get("Stage Attempt ID", 0),
                info.get("Index", -1),
            )
            reason = event.get("Task End Reason", {}).get("Reason")
            summary.n_speculative_tasks += bool(info.get("Speculative"))
            summary.n_killed_tasks += reason == "TaskKilled"
            summary.n_executor_lost_failures += reason == "ExecutorLostFailure"
            summary.n_fetch_failures += reason == "FetchFailed"
            if reason != "Success":
                summary.n_failed_tasks += 1
                failed_attempts.add(key)
            elif key in failed_attempts:
                summary.n_retried_then_succeeded += 1
            metrics = event.get("Task Metrics") or {}
            summary.memory_bytes_spilled += int(metrics.get("Memory Bytes Spilled", 0))
            summary.disk_bytes_spilled += int(metrics.get("Disk Bytes Spilled", 0))
    summary.uncompressed_bytes = stats.bytes_decompressed
    return summary


def has_node(summary: LogSummary, prefix: str) -> bool:
    """Return True if any plan node name starts with `prefix`."""
    return any(name.startswith(prefix) for name in summary.plan_node_names)


CHECKS: dict[str, Callable[[LogSummary, Path], bool]] = {
    "aqe_updates": lambda s, _: s.n_aqe_updates > 0,
    "no_aqe_updates": lambda s, _: s.n_aqe_updates == 0,
    "skew_split": lambda s, _: s.skew_split,
    "no_skew_split": lambda s, _: not s.skew_split,
    "spill": lambda s, _: s.memory_bytes_spilled > 0 and s.disk_bytes_spilled > 0,
    "task_retry": lambda s, _: s.n_retried_then_succeeded > 0 and s.n_failed_executions == 0,
    "python_udf": lambda s, _: has_node(s, "BatchEvalPython"),
    "failed_execution": lambda s, _: s.n_failed_executions > 0 and s.n_failed_jobs > 0,
    "in_memory_scan": lambda s, _: has_node(s, "InMemoryTableScan"),
    "subquery": lambda s, _: has_node(s, "Subquery"),
    "join_strategies": lambda s, _: all(
        has_node(s, n)
        for n in (
            "BroadcastHashJoin",
            "SortMergeJoin",
            "ShuffledHashJoin",
            "CartesianProduct",
            "BroadcastNestedLoopJoin",
        )
    ),
    "rolling_parts": lambda _, p: len(log_parts(p)) >= 2,
    "several_executions": lambda s, _: s.n_sql_executions >= 5,
    "no_sql": lambda s, _: s.n_sql_executions == 0,
    "hash_aggregate": lambda s, _: has_node(s, "HashAggregate"),
    "speculative_task": lambda s, _: s.n_speculative_tasks > 0,
    "unpruned_scan": lambda s, _: "[]" in s.partition_filters,
    "pruned_scan": lambda s, _: any(f != "[]" for f in s.partition_filters),
    "executor_lost": lambda s, _: s.n_executors_removed > 0 and s.n_executor_lost_failures > 0,
    "stage_resubmitted": lambda s, _: s.n_stage_resubmissions > 0,
}


# ------------------------------------------------------------------------------------------------
# Driver: run children, move logs into place, verify, write README and manifest
# ------------------------------------------------------------------------------------------------


def disk_size(path: Path) -> int:
    """Return the on-disk size of a file, or of all files under a directory."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_child(workload: Workload, staging: Path) -> Path:
    """Run a workload in a fresh Python process and return the log it wrote into `staging`."""
    log_dir = staging / "log"
    scratch = staging / "scratch"
    log_dir.mkdir()
    scratch.mkdir()
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--run-one",
        workload.name,
        "--log-dir",
        str(log_dir),
        "--scratch",
        str(scratch),
    ]
    started = time.monotonic()
    child_output = staging / "child-output.txt"
    with child_output.open("wb") as sink:
        proc = subprocess.run(
            cmd,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            timeout=CHILD_TIMEOUT_S,
            check=False,
        )
    elapsed_s = time.monotonic() - started
    if proc.returncode != 0:
        tail = child_output.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"{workload.name}: child exited {proc.returncode}\n{tail}")
    written = [p for p in log_dir.iterdir() if LOG_NAME_RE.match(p.name)]
    if len(written) != 1 or written[0].name.endswith(".inprogress"):
        raise RuntimeError(f"{workload.name}: expected one finished log, found {written}")
    print(f"  ran {workload.app_name} in {elapsed_s:.1f} s -> {written[0].name}", flush=True)
    return written[0]


def load_manifest(out: Path) -> list[dict[str, Any]]:
    """Return the entries of an existing manifest, or an empty list."""
    path = out / MANIFEST_NAME
    if not path.exists():
        return []
    return list(json.loads(path.read_text())["logs"])


def remove_log(path: Path) -> None:
    """Delete one event log (file or rolling directory) if its name is one Spark gives logs."""
    if not LOG_NAME_RE.match(path.name) or not path.exists():
        return
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def clear_old_logs(out: Path, selected: list[Workload], everything: bool) -> list[dict[str, Any]]:
    """Delete the logs about to be regenerated and return the manifest entries to keep."""
    names = {w.name for w in selected}
    kept: list[dict[str, Any]] = []
    for entry in load_manifest(out):
        if everything or entry["workload"] in names:
            remove_log(out / entry["file"])
        else:
            kept.append(entry)
    if everything:
        for path in out.iterdir():
            remove_log(path)
    return kept


def manifest_entry(workload: Workload, log_path: Path, summary: LogSummary) -> dict[str, Any]:
    """Return the manifest record of one written log."""
    return {
        "workload": workload.name,
        "app_name": summary.app_name,
        "file": log_path.name,
        "parts": [p.name for p in log_parts(log_path)],
        "codec": workload.codec,
        "layout": "rolling" if workload.rolling else "single",
        "size_bytes": disk_size(log_path),
        "uncompressed_bytes": summary.uncompressed_bytes,
        "spark_version": summary.spark_version,
        "java_version": summary.java_version,
        "master": master_description(workload),
        "exercises": workload.exercises,
        "extra_conf": workload.conf,
        "checks": list(workload.expects),
        "counts": {
            "events": summary.n_events,
            "sql_executions": summary.n_sql_executions,
            "failed_sql_executions": summary.n_failed_executions,
            "aqe_updates": summary.n_aqe_updates,
            "jobs": summary.n_jobs,
            "failed_jobs": summary.n_failed_jobs,
            "tasks": summary.n_tasks,
            "failed_tasks": summary.n_failed_tasks,
            "memory_bytes_spilled": summary.memory_bytes_spilled,
            "disk_bytes_spilled": summary.disk_bytes_spilled,
            "speculative_tasks": summary.n_speculative_tasks,
            "killed_tasks": summary.n_killed_tasks,
            "executors_removed": summary.n_executors_removed,
            "executor_lost_failures": summary.n_executor_lost_failures,
            "fetch_failures": summary.n_fetch_failures,
            "stage_resubmissions": summary.n_stage_resubmissions,
        },
    }


def master_description(workload: Workload) -> str:
    """Return the master a workload runs on, as the README and manifest show it."""
    if workload.master == "standalone":
        return f"standalone, Workers on {', '.join(workload.standalone_hosts)}"
    return workload.master


UNUSUAL_COUNTS = (
    ("stage_resubmissions", "stage resubmissions"),
    ("fetch_failures", "FetchFailed"),
    ("executors_removed", "executors removed"),
    ("executor_lost_failures", "ExecutorLostFailure"),
    ("speculative_tasks", "speculative"),
    ("killed_tasks", "killed"),
)
"""Counts shown in the README only when nonzero: (manifest key, label)."""


def unusual_counts(counts: dict[str, int]) -> str:
    """Return the nonzero retry, loss and speculation counts of a log, or a dash."""
    shown = [f"{label} {counts[key]}" for key, label in UNUSUAL_COUNTS if counts.get(key)]
    return ", ".join(shown) or "–"


def fmt_kib(n_bytes: int) -> str:
    """Format a byte count as KiB with one decimal."""
    return f"{n_bytes / 1024:.1f} KiB"


def render_readme(entries: list[dict[str, Any]]) -> str:
    """Return the README of the sample directory."""
    versions = sorted({e["spark_version"] for e in entries}) or ["?"]
    java_versions = sorted({e.get("java_version", "") for e in entries} - {""}) or ["?"]
    total = sum(e["size_bytes"] for e in entries)
    lines = [
        "# Sample event logs",
        "",
        f"Real event logs written by PySpark {', '.join(versions)} (Spark's own event-log writer, "
        f"Java {', '.join(java_versions)}, on one machine) running the small, deterministic "
        "workloads of `scripts/make_sample_eventlogs.py`. File names are as Spark wrote them: "
        "`local-<ms>[.<codec>]` (local mode) or `app-<yyyyMMddHHmmss>-<nnnn>[.<codec>]` "
        "(local-cluster and standalone) for single files and `eventlog_v2_local-<ms>/` for "
        "rolling logs. "
        "App ids and timings change on every run; the input data does not.",
        "",
        "Regenerate all of them (a few minutes on two cores):",
        "",
        "```",
        REGENERATE_COMMAND,
        f"{REGENERATE_COMMAND} --only skewed-join,multi-sql   # just some",
        f"{REGENERATE_COMMAND} --out /tmp/logs                # elsewhere",
        "```",
        "",
        "`.manifest.json` holds the same table in machine-readable form (workload, file, codec, "
        "layout, sizes, Spark settings and event counts).",
        "",
        f"Total size: {fmt_kib(total)}.",
        "",
        "| file | app name | master | codec | layout | size | SQL exec. (failed) | AQE updates | "
        "tasks (failed) | bytes spilled (memory / disk) | retries, losses, speculation | "
        "exercises |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in sorted(entries, key=lambda e: e["workload"]):
        c = e["counts"]
        file_cell = f"`{e['file']}/`" if e["layout"] == "rolling" else f"`{e['file']}`"
        layout = e["layout"]
        if layout == "rolling":
            layout = f"rolling, {len(e['parts'])} files"
        lines.append(
            f"| {file_cell} | `{e['app_name']}` | `{e['master']}` | {e['codec']} | {layout} | "
            f"{fmt_kib(e['size_bytes'])} | {c['sql_executions']} ({c['failed_sql_executions']}) | "
            f"{c['aqe_updates']} | {c['tasks']} ({c['failed_tasks']}) | "
            f"{c['memory_bytes_spilled']} / {c['disk_bytes_spilled']} | {unusual_counts(c)} | "
            f"{e['exercises']} |"
        )
    lines += [
        "",
        "Applications run with master `local[2,3]` (up to 3 attempts per task) unless the table "
        "names another: `executor-lost` uses `local-cluster[2,1,1024]` (two executor JVMs, so one "
        "can be killed), and `speculation` a standalone Master with Workers on 127.0.0.1 and "
        "127.0.0.2, started by the script (Spark does not speculate in local mode, and runs a "
        "speculative copy only on another host than the original). All use "
        "`spark.ui.enabled=false`, `spark.sql.shuffle.partitions=4` unless the workload sets "
        "another value, and `spark.eventLog.rolling.enabled=false` except for the rolling one, "
        f"which uses `spark.eventLog.rolling.maxFileSize={ROLLING_MAX_FILE_SIZE}` (the smallest "
        "value Spark 4.3 accepts; the limit counts uncompressed bytes). Its directory holds, as "
        "Spark left it, the empty `appstatus_*` marker, Hadoop's `.appstatus_*.crc` checksum "
        "sidecar and the `events_N_*.zstd` parts. Uncompressed logs use "
        "`spark.eventLog.compress=false`, the others `spark.eventLog.compression.codec`.",
        "",
        "The spill workload uses Spark's test-only knobs "
        "(`spark.shuffle.spill.numElementsForceSpillThreshold`, "
        "`spark.sql.TungstenAggregate.testFallbackStartsAt`, "
        "`spark.sql.windowExec.buffer.spill.threshold`) so that small data spills.",
        "",
    ]
    return "\n".join(lines)


def verify(workload: Workload, log_path: Path) -> tuple[LogSummary, list[str]]:
    """Summarize a written log and return the names of the checks it fails."""
    if disk_size(log_path) == 0:
        raise RuntimeError(f"{log_path} is empty")
    summary = summarize_log(log_path)
    failed = [name for name in workload.expects if not CHECKS[name](summary, log_path)]
    if summary.app_name != workload.app_name:
        failed.append(f"app name {summary.app_name!r}")
    return summary, failed


def refresh_entries(
    out: Path, kept: list[dict[str, Any]], problems: list[str]
) -> list[dict[str, Any]]:
    """Re-read the logs kept from an earlier run and rebuild their manifest entries.

    The logs themselves are not touched; their entries get the counts of the current script.
    """
    refreshed = []
    for entry in kept:
        workload = WORKLOADS_BY_NAME.get(entry["workload"])
        log_path = out / entry["file"]
        if workload is None or not log_path.exists():
            problems.append(f"{entry['workload']}: kept entry without workload or log, dropped")
            continue
        summary, failed_checks = verify(workload, log_path)
        if failed_checks:
            problems.append(f"{workload.name}: failed checks {failed_checks}")
        refreshed.append(manifest_entry(workload, log_path, summary))
    return refreshed


def print_summary(entries: list[dict[str, Any]]) -> None:
    """Print one line per log."""
    header = (
        f"{'file':<34} {'codec':<6} {'layout':<8} {'size':>11} {'sql':>4} {'aqe':>4} "
        f"{'tasks':>6} {'fail':>5} {'spill(mem)':>12}  app"
    )
    print(header)
    for e in sorted(entries, key=lambda e: e["workload"]):
        c = e["counts"]
        print(
            f"{e['file']:<34} {e['codec']:<6} {e['layout']:<8} {fmt_kib(e['size_bytes']):>11} "
            f"{c['sql_executions']:>4} {c['aqe_updates']:>4} {c['tasks']:>6} "
            f"{c['failed_tasks']:>5} {c['memory_bytes_spilled']:>12}  {e['app_name']}"
        )
    total = sum(e["size_bytes"] for e in entries)
    print(f"total {fmt_kib(total)} in {len(entries)} logs")


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated workload names: " + ", ".join(w.name for w in WORKLOADS),
    )
    parser.add_argument("--run-one", default="", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def select_workloads(only: str) -> list[Workload]:
    """Return the workloads named in `--only`, or all of them."""
    if not only:
        return list(WORKLOADS)
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS_BY_NAME]
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(unknown)}")
    return [WORKLOADS_BY_NAME[n] for n in names]


def main(argv: list[str]) -> int:
    """Run the selected workloads, verify their logs and write the README and manifest."""
    args = parse_args(argv)
    if args.run_one:
        run_one(WORKLOADS_BY_NAME[args.run_one], args.log_dir, args.scratch)
        return 0
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    selected = select_workloads(args.only)
    problems: list[str] = []
    kept = clear_old_logs(out, selected, everything=not args.only)
    entries = refresh_entries(out, kept, problems)
    for workload in selected:
        print(f"{workload.name} ({workload.codec}{', rolling' if workload.rolling else ''})")
        with tempfile.TemporaryDirectory(prefix=f"sea-{workload.name}-") as tmp:
            try:
                written = run_child(workload, Path(tmp))
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                problems.append(str(exc))
                print(f"  FAILED: {exc}", flush=True)
                continue
            log_path = out / written.name
            shutil.move(str(written), str(log_path))
        summary, failed_checks = verify(workload, log_path)
        if failed_checks:
            problems.append(f"{workload.name}: failed checks {failed_checks}")
            print(f"  CHECKS FAILED: {failed_checks}", flush=True)
        entries.append(manifest_entry(workload, log_path, summary))
    manifest = {"format_version": MANIFEST_FORMAT_VERSION, "logs": entries}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (out / README_NAME).write_text(render_readme(entries))
    print_summary(entries)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
