"""Write the sample event logs in `sample_eventlogs/` by running small, real PySpark applications.

Each workload is one Spark application with a fixed name (`sea-...`), run in its own Python process
(this script re-invokes itself with `--run-one NAME`), because builder options leak from one session
to the next inside one process. Data is generated from `spark.range` with fixed hashes, so every run
processes the same rows; timings, app ids and spill sizes still differ from run to run.

The applications cover every event-log codec (none, zstd, lz4, lzf, snappy), a rolling log with
more than one `events_N` file, AQE on and off, skew with and without AQE's skew-join split, forced
spills, a retried task, a failed query, Python UDFs, caching, a scalar subquery, parquet I/O, all
join strategies, many tiny tasks and a large collected result. `connect` is a Spark Connect
server (`sbin/start-connect-server.sh`) driven by a Python Connect client from a venv of its own
(`pyspark[connect]`, made on first use under ~/.cache/spark-explain, see `pyspark_releases.py`):
its log holds the `SparkListenerConnect*` operation events, a failed and an interrupted operation.

The `cause-*` applications each carry one known root cause on one operator (data skew, row
explosion, a slow Python UDF, a nested-loop join, idle cores, small files, a failed query, a
large broadcast, a large result, spill, skewed input files), labelled in the manifest (`expect`)
as the specification finding rules must meet; the `clean-*` ones are controls without any.
`pairs/<pair>/` holds the same nightly job run twice, a baseline and a candidate with one change
(more input, a plan change, shuffle partitions, skew, fewer cores, and the baseline's advice
applied), listed in `pairs/.manifest.json`. `slots/` holds one job of sleeping tasks run with 1,
2, 4 and 8 task slots (`--slots`), on which the what-if model's predictions are checked.

After the runs the script reads every log back with the analyzer's own reader
(`analyzer.eventlog`: every codec and layout), prints a summary per application,
checks what each workload is meant to show (for example a nonzero spill), and writes
`README.md` and `.manifest.json` (hidden, so log readers skip it) beside the logs.

Usage:
    .venv/bin/python scripts/make_sample_eventlogs.py [--out DIR] [--only NAME[,NAME]]
        [--pairs all|PAIR[,PAIR]] [--slots]

Without `--only`, `--pairs` or `--slots` every log is regenerated; with them, only those, and
the manifests keep the other entries.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
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
from datetime import datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sample_eventlogs"
MANIFEST_NAME = ".manifest.json"
README_NAME = "README.md"
MANIFEST_FORMAT_VERSION = 1
CHILD_TIMEOUT_S = 1200
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
class Label:
    """One known root cause of a labelled application: the finding a report must show."""

    rule: str
    """Finding rule id, e.g. `data-skew` (docs/findings.md)."""
    node: str
    """Operator name as in the final plan (trailing spaces stripped), e.g. `SortMergeJoin`."""
    execution: str
    """A substring of the SQL execution's description (the workload sets job descriptions)."""
    note: str
    message: str = ""
    """For `failed-query`: the exception line the report must quote."""

    def as_json(self) -> dict[str, str]:
        """Return the label as the manifest stores it (without empty fields)."""
        record = {
            "rule": self.rule,
            "node": self.node,
            "execution": self.execution,
            "note": self.note,
        }
        if self.message:
            record["message"] = self.message
        return record


@dataclass(frozen=True)
class StreamLabel:
    """What a report must say of one streaming query of a sample (manifest `expect_streaming`)."""

    query: str
    """The query's name (`queryName`)."""
    rule: str
    """Finding rule id the report must lead the query's findings with, or "" for none."""
    status: str
    """How the query ended: `stopped` or `failed`."""
    note: str
    message: str = ""
    """For a failed query: a line of its exception the report must quote."""

    def as_json(self) -> dict[str, str]:
        """Return the label as the manifest stores it (without empty fields)."""
        record = {"query": self.query, "rule": self.rule, "status": self.status, "note": self.note}
        if self.message:
            record["message"] = self.message
        return record


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
    labels: tuple[Label, ...] = ()
    """The root causes the application was built to show (manifest `expect`)."""
    clean: bool = False
    """A control: nothing pathological, no finding expected (manifest `clean`, `expect: []`)."""
    setup: Runner | None = None
    """Prepares input (e.g. parquet files under scratch) in a session without an event log."""
    app: str = ""
    """The Spark application name when it is not `sea-<name>` (the runs of a pair share one)."""
    warm: bool = False
    """Warm the JVM up (`warm_up`) in the unlogged setup session before the logged application."""
    streams: tuple[StreamLabel, ...] = ()
    """The streaming queries of the application and what a report must say of each."""
    connect: bool = False
    """Run a Spark Connect server (`start-connect-server.sh`) with the application's settings,
    and `run` in a Python Connect client (a venv with `pyspark[connect]`) against it."""

    @property
    def app_name(self) -> str:
        """Return the Spark application name."""
        return self.app or f"sea-{self.name}"


def hashed(col_name: str, seed: int, modulo: int) -> Any:
    """Return a deterministic pseudo-random column in [0, modulo) derived from `col_name`."""
    from pyspark.sql import functions as F

    # The SQL function, not `F.pmod` (PySpark 3.4+): the same expression on every release.
    return F.expr(f"pmod(xxhash64(`{col_name}`, {seed}), {modulo})")


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


def run_cancel_job_group(spark: Any, scratch: Path) -> None:
    """Run a good query, then a long one in a job group that the driver program cancels after
    3 s (`cancelJobGroup`, as a timeout or a notebook's Cancel does), then a good one."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    spark.range(0, 50_000, 1, 4).agg(F.sum("id")).collect()

    def cancel() -> None:
        time.sleep(3)
        sc.cancelJobGroup("nightly-report")

    canceller = threading.Thread(target=cancel)
    canceller.start()
    sc.setJobGroup("nightly-report", "the nightly report", interruptOnCancel=True)
    try:
        spark.range(0, 10**11, 1, 4).agg(F.sum(F.col("id") % 7)).collect()
    except Exception as exc:  # the cancellation is the point of this workload
        print(f"  cancelled as intended: {type(exc).__name__}")
    canceller.join()
    sc.setJobGroup("after", "after the cancel")
    spark.range(0, 50_000, 1, 4).agg(F.count("*")).collect()


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


def run_many_tasks_large_result(spark: Any, scratch: Path, rounds: int = 6) -> None:
    """Spread tiny data over 200 partitions `rounds` times, then collect a large result."""
    from pyspark.sql import functions as F

    for i in range(rounds):
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


# ------------------------------------------------------------------------------------------------
# Labelled root causes: each application is built so that one known cause, on one operator,
# dominates its time. The labels (`Label`) are the specification finding rules must meet.
# ------------------------------------------------------------------------------------------------


def warm_up(spark: Any, scratch: Path) -> None:
    """Run a small join + aggregate, a window and a parquet write in an unlogged session.

    A fresh JVM here spends tens of seconds loading and compiling Spark's classes in its first
    queries; the labelled applications run after this in the same JVM, so that their time goes
    to their cause rather than to the JVM's start.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    left = spark.range(0, 100_000, 1, 2).select(F.col("id"), hashed("id", 90, 1_000).alias("k"))
    right = spark.range(0, 1_000, 1, 2).select(F.col("id").alias("k"), (F.col("id") % 7).alias("g"))
    left.join(right.hint("merge"), "k").groupBy("g").agg(F.count("*"), F.sum("id")).collect()
    by_key = Window.partitionBy("k").orderBy("id")
    left.join(F.broadcast(right), "k").select(F.sum("id").over(by_key).alias("w")).agg(
        F.max("w")
    ).collect()
    right.write.mode("overwrite").parquet(str(scratch / "warm-up.parquet"))


def describe(spark: Any, text: str) -> None:
    """Name the next queries: Spark uses the job description as the SQL execution description."""
    spark.sparkContext.setJobDescription(text)


GUEST_CUSTOMER_ID = 2
"""The skewed key: 2 is the smallest id that Spark's hash partitioning puts in reduce partition
0 of 8, whose task starts first, so the skewed task is the join stage's whole critical path."""


def run_cause_skew_join(spark: Any, scratch: Path) -> None:
    """Sort-merge join where one customer holds 90% of 4M orders (AQE off), then aggregate."""
    from pyspark.sql import functions as F

    # Plain arithmetic on the id keeps the map side cheap, so the skewed reduce task dominates.
    orders = spark.range(0, 4_000_000, 1, 8).select(
        F.col("id").alias("order_id"),
        F.when(F.col("id") % 10 < 9, F.lit(GUEST_CUSTOMER_ID))
        .otherwise((F.col("id") * 7_919) % 50_000)
        .alias("customer_id"),
        ((F.col("id") * 31) % 100_000 / F.lit(100.0)).alias("amount"),
    )
    # The guest customer has three address rows; every other customer has one.
    customers = customers_frame(spark, 50_000).unionByName(
        customers_frame(spark, 2).select(
            F.lit(GUEST_CUSTOMER_ID).cast("long").alias("customer_id"), "region", "segment"
        )
    )
    describe(spark, "revenue per region: orders x customers (customer 2 holds 90% of orders)")
    (
        orders.join(customers, "customer_id")
        .groupBy("region")
        .agg(F.count("*").alias("n_orders"), F.sum("amount").alias("revenue"))
        .collect()
    )


def run_cause_row_explosion(spark: Any, scratch: Path) -> None:
    """Join two 80k-row tables on a key with only 100 values (64M rows out), then count."""
    from pyspark.sql import functions as F

    visits = spark.range(0, 80_000, 1, 4).select(
        hashed("id", 21, 100).alias("store_id"), F.col("id").alias("visit_id")
    )
    sales = spark.range(0, 80_000, 1, 4).select(
        hashed("id", 22, 100).alias("store_id"), F.col("id").alias("sale_id")
    )
    describe(spark, "visits x sales per store (many-to-many on store_id), counted")
    visits.join(sales, "store_id").agg(F.count("*").alias("pairs")).collect()


PYTHON_UDF_LOOP_ITERATIONS = 1_500


def run_cause_python_udf(spark: Any, scratch: Path) -> None:
    """Score 30k rows with a slow pure-Python UDF (a per-row loop), then sum the scores."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    def risk_score(order_id: int) -> int:
        """Return a made-up risk score with a deliberately slow per-row loop."""
        score = 0
        for i in range(PYTHON_UDF_LOOP_ITERATIONS):
            score = (score * 31 + order_id + i) % 1_000_003
        return score

    score_udf = F.udf(risk_score, LongType())
    orders = orders_frame(spark, 30_000, 2_000)
    describe(spark, "risk score per order with a Python UDF, summed")
    orders.select(score_udf("order_id").alias("score")).agg(F.sum("score")).collect()


def run_cause_nested_loop(spark: Any, scratch: Path) -> None:
    """Match 20k events to 4k time windows by a range condition (broadcast nested-loop join)."""
    from pyspark.sql import functions as F

    events = spark.range(0, 20_000, 1, 4).select(
        F.col("id").alias("event_id"), hashed("id", 31, 86_400).alias("ts")
    )
    windows = spark.range(0, 4_000, 1, 1).select(
        F.col("id").alias("window_id"),
        (F.col("id") * 20).alias("start_ts"),
        (F.col("id") * 20 + 60).alias("end_ts"),
    )
    describe(spark, "events per time window: range join (ts between start and end)")
    (
        events.join(windows, (F.col("ts") >= F.col("start_ts")) & (F.col("ts") < F.col("end_ts")))
        .groupBy("window_id")
        .agg(F.count("*").alias("n_events"))
        .agg(F.max("n_events"))
        .collect()
    )


def run_cause_idle_cores(spark: Any, scratch: Path) -> None:
    """Running total over 2M orders with a window that has no partitionBy: one task does it all."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    orders = spark.range(0, 2_000_000, 1, 8).select(
        F.col("id").alias("order_id"),
        hashed("id", 41, 1_000_000_000).alias("ts"),
        (hashed("id", 42, 100_000) / F.lit(100.0)).alias("amount"),
    )
    by_time = Window.orderBy("ts")
    describe(spark, "running revenue total over all orders (window without partitionBy)")
    (
        orders.select(
            "order_id",
            F.sum("amount").over(by_time).alias("running_total"),
            F.lag("amount", 1).over(by_time).alias("previous_amount"),
        )
        .agg(F.max("running_total"), F.count("previous_amount"))
        .collect()
    )


COALESCE_ROWS = 4_000_000


def coalesce_dir(scratch: Path) -> str:
    """Where the orders table of `cause-coalesce-write` is written before the app."""
    return str(scratch / "coalesce_orders")


def setup_coalesce_write(spark: Any, scratch: Path) -> None:
    """Write 4M orders as 16 parquet files (before the logged app)."""
    from pyspark.sql import functions as F

    (
        spark.range(0, COALESCE_ROWS, 1, 16)
        .select(
            F.col("id").alias("order_id"),
            hashed("id", 61, 1_000).alias("customer_id"),
            F.sha2(F.col("id").cast("string"), 256).alias("token"),
        )
        .write.mode("overwrite")
        .parquet(coalesce_dir(scratch))
    )


def run_cause_coalesce_write(spark: Any, scratch: Path) -> None:
    """Hash every order and write the result as one file with coalesce(1): the scan and the
    hashing run in the write's one task."""
    from pyspark.sql import functions as F

    orders = spark.read.parquet(coalesce_dir(scratch))
    describe(spark, "orders with a signature, written as one file (coalesce(1))")
    (
        orders.withColumn(
            "signature",
            F.sha2(F.concat(F.col("token"), F.col("customer_id").cast("string")), 512),
        )
        .coalesce(1)
        .write.mode("overwrite")
        .parquet(str(scratch / "coalesce_out"))
    )


def setup_repartition_write(spark: Any, scratch: Path) -> None:
    """Write 6M events as 12 parquet files (before the logged app)."""
    from pyspark.sql import functions as F

    (
        spark.range(0, 6_000_000, 1, 12)
        .select(
            F.col("id").alias("event_id"),
            (F.col("id") % 100).alias("day"),
            F.sha2(F.col("id").cast("string"), 256).alias("payload"),
        )
        .write.mode("overwrite")
        .parquet(str(scratch / "repartition_events"))
    )


def run_repartition_write(spark: Any, scratch: Path) -> None:
    """Write the events with repartition(8) and partitionBy(day): the round-robin repartition
    sorts each map task's rows first, and the write sorts each task's rows by day; both spill
    on a 640 MiB driver."""
    describe(spark, "events written by day with repartition(8)")
    (
        spark.read.parquet(str(scratch / "repartition_events"))
        .repartition(8)
        .write.mode("overwrite")
        .partitionBy("day")
        .parquet(str(scratch / "repartition_out"))
    )


DYNAMIC_PAUSE_S = 20
"""How long `dynamic-allocation-release` pauses between queries: four idle timeouts."""


def run_dynamic_allocation_release(spark: Any, scratch: Path) -> None:
    """Three aggregations under dynamic allocation; the pause before the second outlasts the
    idle timeout, so its stage waits for new executors."""
    from pyspark.sql import functions as F

    def aggregate(text: str) -> None:
        describe(spark, text)
        (
            spark.range(0, 3_000_000, 1, 8)
            .withColumn("h", F.sha2(F.col("id").cast("string"), 256))
            .groupBy((F.col("id") % 50).alias("k"))
            .agg(F.count("h"))
            .collect()
        )

    aggregate("first aggregation: the application's first executors")
    time.sleep(DYNAMIC_PAUSE_S)
    aggregate("after a pause longer than the idle timeout: executors released")
    aggregate("right after: executors warm")


SMALL_FILES_ROWS = 24_000
SMALL_FILES_ROWS_PER_FILE = 10


def small_files_dir(scratch: Path) -> str:
    """Return where the small-files workload keeps its table."""
    return str(scratch / "clicks.parquet")


def setup_small_files(spark: Any, scratch: Path) -> None:
    """Write a clicks table as 2,400 parquet files of 10 rows each (before the logged app)."""
    from pyspark.sql import functions as F

    (
        spark.range(0, SMALL_FILES_ROWS, 1, 4)
        .select(
            F.col("id").alias("click_id"),
            hashed("id", 51, 500).alias("page_id"),
            hashed("id", 52, 10_000).alias("user_id"),
        )
        .write.option("maxRecordsPerFile", SMALL_FILES_ROWS_PER_FILE)
        .mode("overwrite")
        .parquet(small_files_dir(scratch))
    )


def run_cause_small_files(spark: Any, scratch: Path) -> None:
    """Read the 2,400-file clicks table and count clicks per page."""
    from pyspark.sql import functions as F

    describe(spark, "clicks per page from a table of 2,400 tiny parquet files")
    (
        spark.read.parquet(small_files_dir(scratch))
        .groupBy("page_id")
        .agg(F.count("*").alias("clicks"), F.countDistinct("user_id").alias("users"))
        .orderBy(F.desc("clicks"))
        .limit(10)
        .collect()
    )


BAD_CUSTOMER_ID = 4242
BAD_CUSTOMER_MESSAGE = f"ValueError: bad customer id {BAD_CUSTOMER_ID}"


def run_cause_failed_udf(spark: Any, scratch: Path) -> None:
    """Run a good query, then one whose Python UDF raises for customer 4242 (the query fails)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    def checked_customer(customer_id: int) -> int:
        """Return the id; reject the one known-bad customer."""
        if customer_id == BAD_CUSTOMER_ID:
            raise ValueError(f"bad customer id {customer_id}")
        return customer_id

    check_udf = F.udf(checked_customer, LongType())
    orders = orders_frame(spark, 200_000, 10_000)
    describe(spark, "revenue per customer bucket")
    orders.groupBy((F.col("customer_id") % 10).alias("bucket")).agg(F.sum("amount")).collect()
    describe(spark, "validated revenue per customer (Python UDF rejects bad ids)")
    try:
        (
            orders.select(check_udf("customer_id").alias("customer_id"), "amount")
            .groupBy("customer_id")
            .agg(F.sum("amount"))
            .collect()
        )
    except Exception as exc:  # the failure is the point of this workload
        print(f"expected failure: {type(exc).__name__}", file=sys.stderr)


def run_cause_large_broadcast(spark: Any, scratch: Path) -> None:
    """Join 1M sales to a 600k-row product table that is broadcast (tens of MB)."""
    from pyspark.sql import functions as F

    products = spark.range(0, 600_000, 1, 4).select(
        F.col("id").alias("product_id"),
        F.sha2(F.col("id").cast("string"), 256).alias("description"),
        (F.col("id") % 40).alias("category"),
    )
    # The sales' estimated size (1M rows with a string) exceeds the products' (600k rows), so
    # the planner broadcasts the products, the smaller side under the raised threshold.
    sales = spark.range(0, 1_000_000, 1, 4).select(
        hashed("id", 61, 600_000).alias("product_id"),
        (F.col("id") % 7).alias("qty"),
        F.concat(F.lit("store-"), (F.col("id") % 50).cast("string")).alias("store"),
    )
    describe(spark, "units per category: sales x products (products broadcast)")
    (
        sales.join(products, "product_id")
        .groupBy("category")
        .agg(
            F.sum("qty").alias("units"),
            F.max(F.length("description")),
            F.approx_count_distinct("store"),
        )
        .collect()
    )


def run_cause_large_result(spark: Any, scratch: Path) -> None:
    """Collect 300k rows with a 135-character fingerprint each (about 45 MB) to the driver."""
    from pyspark.sql import functions as F

    # Eight cheap 64-bit hashes in hex: as incompressible as a SHA-256 hex digest, but cheap to
    # compute, so moving the result to the driver is what the query spends its time on.
    fingerprint = F.concat_ws(
        "-", *(F.lpad(F.hex(F.xxhash64(F.col("id"), F.lit(seed))), 16, "0") for seed in range(8))
    )
    describe(spark, "collect every document fingerprint to the driver")
    spark.range(0, 300_000, 1, 4).select("id", fingerprint.alias("fingerprint")).collect()


def run_cause_spill_sort(spark: Any, scratch: Path) -> None:
    """Sort 6M rows within 4 partitions on a small heap, so the sort spills, then write (noop)."""
    from pyspark.sql import functions as F

    rows = spark.range(0, 6_000_000, 1, 4).select(
        F.col("id").alias("event_id"),
        hashed("id", 71, 1_000_000_000).alias("user_id"),
        F.concat(
            F.lit("event-"), F.col("id").cast("string"), F.lit("-"), hashed("id", 72, 9_999)
        ).alias("label"),
    )
    describe(spark, "events sorted by user within each partition before writing")
    rows.sortWithinPartitions("user_id").write.format("noop").mode("overwrite").save()


SKEWED_FILES_BIG_ROWS = 2_000_000


def skewed_files_dir(scratch: Path) -> str:
    """Return where the skewed-files workload keeps its table."""
    return str(scratch / "page_views.parquet")


def setup_skewed_files(spark: Any, scratch: Path) -> None:
    """Write a page-views table: two big files hold 99.9% of the rows, 6 files hold 200 each."""
    from pyspark.sql import functions as F

    def views(start: int, end: int, n_files: int) -> Any:
        return spark.range(start, end, 1, n_files).select(
            F.col("id").alias("view_id"),
            hashed("id", 81, 1_000).alias("page_id"),
            hashed("id", 82, 1_000_000).alias("user_id"),
            (hashed("id", 83, 60_000) / F.lit(1000.0)).alias("seconds"),
        )

    table = skewed_files_dir(scratch)
    views(0, 2 * SKEWED_FILES_BIG_ROWS, 2).write.mode("overwrite").parquet(table)
    start = 2 * SKEWED_FILES_BIG_ROWS
    views(start, start + 1_200, 6).write.mode("append").parquet(table)


def run_cause_skewed_files(spark: Any, scratch: Path) -> None:
    """Read the uneven page-views table, join pages (broadcast) and sum time per section."""
    from pyspark.sql import functions as F

    pages = spark.range(0, 1_000, 1, 1).select(
        F.col("id").alias("page_id"), (F.col("id") % 20).alias("section")
    )
    describe(spark, "time per section: page views (2 of 8 files hold 99.9%) x pages")
    (
        spark.read.parquet(skewed_files_dir(scratch))
        .join(F.broadcast(pages), "page_id")
        .groupBy("section")
        .agg(
            F.sum("seconds").alias("seconds"),
            F.approx_count_distinct("user_id").alias("users"),
        )
        .collect()
    )


EVEN_FILES_ROWS = 2_000_000
"""Rows per file of the even-files table: one row group of about 29 MiB each."""


def even_files_dir(scratch: Path) -> str:
    """Return where the row-groups-default-split workload keeps its table."""
    return str(scratch / "page_views_even.parquet")


def setup_even_files(spark: Any, scratch: Path) -> None:
    """Write a page-views table of 3 equal files, each one row group (below parquet.block.size)."""
    from pyspark.sql import functions as F

    spark.range(0, 3 * EVEN_FILES_ROWS, 1, 3).select(
        F.col("id").alias("view_id"),
        hashed("id", 81, 1_000).alias("page_id"),
        hashed("id", 82, 1_000_000).alias("user_id"),
        (hashed("id", 83, 60_000) / F.lit(1000.0)).alias("seconds"),
    ).write.mode("overwrite").parquet(even_files_dir(scratch))


def run_row_groups_default_split(spark: Any, scratch: Path) -> None:
    """Read the even table with Spark's default split size on 8 slots and sum time per page."""
    from pyspark.sql import functions as F

    describe(spark, "time per page: 3 equal files of one row group, default splits")
    (
        spark.read.parquet(even_files_dir(scratch))
        .groupBy("page_id")
        .agg(F.sum("seconds").alias("seconds"), F.count("*").alias("views"))
        .collect()
    )


# Clean controls: nothing pathological, so no finding is expected.


def run_clean_join_agg(spark: Any, scratch: Path) -> None:
    """Join 1M orders to 20k customers (broadcast) and aggregate per region, AQE on."""
    from pyspark.sql import functions as F

    orders = orders_frame(spark, 1_000_000, 20_000, n_partitions=4)
    customers = customers_frame(spark, 20_000)
    describe(spark, "revenue per region and segment")
    (
        orders.join(customers, "customer_id")
        .groupBy("region", "segment")
        .agg(F.count("*").alias("n_orders"), F.sum("amount").alias("revenue"))
        .orderBy(F.desc("revenue"))
        .collect()
    )


def run_clean_multi_query(spark: Any, scratch: Path) -> None:
    """Run four small, well-shaped queries against two temp views."""
    orders_frame(spark, 200_000, 5_000, n_partitions=2).createOrReplaceTempView("orders")
    customers_frame(spark, 5_000).createOrReplaceTempView("customers")
    statements = (
        ("order count", "SELECT count(*), sum(amount) FROM orders"),
        (
            "orders per region",
            "SELECT region, count(*) AS n FROM orders JOIN customers USING (customer_id) "
            "GROUP BY region ORDER BY n DESC",
        ),
        (
            "top customers",
            "SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id "
            "ORDER BY total DESC LIMIT 20",
        ),
        (
            "segment mix",
            "SELECT segment, count(DISTINCT region) FROM customers GROUP BY segment",
        ),
    )
    for description, statement in statements:
        describe(spark, description)
        spark.sql(statement).collect()


REPEATED_QUERY_ROUNDS = 100
"""Rounds of the repeated-queries application: each runs its two queries once."""
REPEATED_QUERIES = (
    (
        "orders per region",
        "SELECT region, count(*) AS n, sum(amount) AS revenue FROM orders "
        "JOIN customers USING (customer_id) GROUP BY region ORDER BY revenue DESC",
    ),
    (
        "top customers",
        "SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id "
        "ORDER BY total DESC LIMIT 20",
    ),
)
REPEATED_QUERIES_CONF = {
    # One partition per stage and no adaptive re-plans: few task and plan events per query, so
    # that hundreds of runs stay a small log.
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    # zstd level 19: the log repeats two plans and their jobs' properties hundreds of times.
    "spark.io.compression.zstd.level": "19",
}


def run_repeated_queries(spark: Any, scratch: Path) -> None:
    """Run the same two queries (a join + aggregate, a top-k) in a loop, as a dashboard refresh
    or a notebook re-run does: two families of `REPEATED_QUERY_ROUNDS` executions each, with the
    same plans every time."""
    orders_frame(spark, 100_000, 2_000, n_partitions=1).createOrReplaceTempView("orders")
    customers_frame(spark, 2_000).createOrReplaceTempView("customers")
    for _ in range(REPEATED_QUERY_ROUNDS):
        for description, statement in REPEATED_QUERIES:
            describe(spark, description)
            spark.sql(statement).collect()


# ------------------------------------------------------------------------------------------------
# Spark Connect: a Connect server with an event log, driven by a Python client in a venv of its own
# ------------------------------------------------------------------------------------------------

CONNECT_REPEATED_SQL = "select count(*) as n, sum(id % 7) as total from range({n})"
"""The query the Connect client runs with the same text `CONNECT_REPEATED_RUNS` times (N
`CONNECT_REPEATED_N`), then once with N `CONNECT_OTHER_N`."""
CONNECT_REPEATED_RUNS = 4
CONNECT_REPEATED_N = 100_000
CONNECT_OTHER_N = 200_000
CONNECT_FAILURE_MESSAGE = "boom"
CONNECT_LONG_QUERY_ROWS = 10**11
"""Rows of the long query: minutes of work on two slots, interrupted long before its end."""
CONNECT_INTERRUPT_AFTER_S = 3.0
CONNECT_EVENT_PREFIX = "org.apache.spark.sql.connect.service."
CONNECT_OPERATION_STARTED = CONNECT_EVENT_PREFIX + "SparkListenerConnectOperationStarted"
CONNECT_OPERATION_FAILED = CONNECT_EVENT_PREFIX + "SparkListenerConnectOperationFailed"
CONNECT_OPERATION_CANCELED = CONNECT_EVENT_PREFIX + "SparkListenerConnectOperationCanceled"
CONNECT_CONF = {
    # zstd level 19: Spark ends a zstd frame at every flush of the log (after most events, and
    # every Connect and SQL event), so each event is compressed on its own; level 19 makes this
    # log about a sixth smaller than level 1.
    "spark.io.compression.zstd.level": "19",
}


def run_connect_client(spark: Any, scratch: Path) -> None:
    """Drive a Spark Connect server from its Python client (`spark` is a Connect session): a
    join + aggregate, one SQL text run 4 times and then with another N, a query that fails, a
    long query interrupted with `interruptAll()` after 3 s, and a parquet write read back."""
    from pyspark.sql import functions as F

    orders = spark.range(0, 2_000_000, 1, 4).select(
        (F.col("id") % 20_000).alias("customer_id"), (F.col("id") * 7 % 1_000).alias("amount")
    )
    customers = spark.range(0, 20_000, 1, 2).select(
        F.col("id").alias("customer_id"), (F.col("id") % 7).alias("region")
    )
    (
        orders.join(customers, "customer_id")
        .groupBy("region")
        .agg(F.sum("amount").alias("revenue"))
        .orderBy("region")
        .collect()
    )
    for _ in range(CONNECT_REPEATED_RUNS):
        spark.sql(CONNECT_REPEATED_SQL.format(n=CONNECT_REPEATED_N)).collect()
    spark.sql(CONNECT_REPEATED_SQL.format(n=CONNECT_OTHER_N)).collect()
    try:
        spark.range(10).select(F.raise_error(F.lit(CONNECT_FAILURE_MESSAGE))).collect()
    except Exception as exc:  # the failure is the point of this step
        print(f"expected failure: {type(exc).__name__}", file=sys.stderr)
    else:
        raise RuntimeError("the failing query did not fail")
    interrupter = threading.Timer(CONNECT_INTERRUPT_AFTER_S, spark.interruptAll)
    interrupter.start()
    try:
        spark.range(0, CONNECT_LONG_QUERY_ROWS).selectExpr("sum(id % 7)").collect()
    except Exception as exc:  # the interruption is the point of this step
        print(f"expected interruption: {type(exc).__name__}", file=sys.stderr)
    else:
        raise RuntimeError("the long query was not interrupted")
    finally:
        interrupter.join()
    parquet_dir = str(scratch / "connect-orders.parquet")
    orders_frame(spark, 100_000, 2_000, n_partitions=2).write.mode("overwrite").parquet(parquet_dir)
    n_rows = spark.read.parquet(parquet_dir).count()
    if n_rows != 100_000:
        raise RuntimeError(f"read {n_rows} rows back from {parquet_dir}")


# ------------------------------------------------------------------------------------------------
# Structured Streaming: micro-batch queries that keep up with their trigger, fall behind it, fail,
# or keep state. Each query reads the `rate` source (rows stamped with the time they were made),
# runs for a bounded time and is stopped with `query.stop()` (or ends with its exception).
# ------------------------------------------------------------------------------------------------

STREAM_TRIGGER = "1 second"
STREAM_FAILURE_MESSAGE = "sample stream failure: order 300 is malformed"


STREAM_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    # zstd level 9 instead of 1: a streaming log repeats the same plans and properties for
    # every batch, which compresses well.
    "spark.io.compression.zstd.level": "9",
}


def run_stream_for(query: Any, seconds: float, min_batches: int = 0) -> None:
    """Let a streaming query run for `seconds` (longer, up to twice that, until it has written
    `min_batches` batches), then stop it normally with `query.stop()`."""
    started = time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        progress = query.lastProgress
        done = progress is not None and int(progress["batchId"]) + 1 >= min_batches
        if elapsed >= 2 * seconds or (elapsed >= seconds and done):
            break
        if not query.isActive:
            raise RuntimeError(f"query {query.name} ended early: {query.exception()}")
        time.sleep(0.2)
    query.stop()


def stream_orders(spark: Any, rows_per_second: int, ramp_up_s: int = 0) -> Any:
    """Return a stream of orders from the `rate` source: order_id, customer_id, amount, ts."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", rows_per_second)
        .option("numPartitions", 2)
    )
    if ramp_up_s:
        reader = reader.option("rampUpTime", f"{ramp_up_s}s")
    return reader.load().select(
        F.col("value").alias("order_id"),
        hashed("value", 201, 1_000).alias("customer_id"),
        (hashed("value", 202, 100_000) / F.lit(100.0)).alias("amount"),
        F.col("timestamp").alias("ts"),
    )


STREAM_KEEPS_UP_TRIGGERS_MS = (2_000, 5_000, 10_000)
"""The keeping-up stream's trigger: the first of these at least 4 times a batch's cost on this
machine, measured first. A batch takes about half a second on an idle machine (two jobs: the
broadcast of the static table and the write), so 2 s; a machine shared with other work can take
seconds for the same batch."""
STREAM_KEEPS_UP_PLAN_FILE = "keeps-up-plan.json"


def start_enriched_orders(spark: Any, scratch: Path, trigger_ms: int, checkpoint: str) -> Any:
    """Start the keeping-up stream: 200 orders/s joined with a static customers table
    (broadcast), written to a noop sink; `trigger_ms` 0 runs batches back to back."""
    customers = customers_frame(spark, 1_000)
    writer = (
        stream_orders(spark, 200)
        .join(customers, "customer_id")
        .writeStream.queryName("orders_enriched")
        .format("noop")
        .option("checkpointLocation", str(scratch / checkpoint))
    )
    if trigger_ms:
        writer = writer.trigger(processingTime=f"{trigger_ms} milliseconds")
    return writer.start()


def setup_stream_keeps_up(spark: Any, scratch: Path) -> None:
    """Measure a batch of the keeping-up stream on this machine (unlogged, batches back to back)
    and choose its trigger: the first of `STREAM_KEEPS_UP_TRIGGERS_MS` at least 4 times the
    median batch."""
    probe = start_enriched_orders(spark, scratch, 0, "checkpoint-keeps-up-probe")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        probe.lastProgress is None or int(probe.lastProgress["batchId"]) < 5
    ):
        time.sleep(0.2)
    durations = sorted(int(p["durationMs"]["triggerExecution"]) for p in probe.recentProgress[1:])
    probe.stop()
    base_ms = durations[len(durations) // 2] if durations else 2_000
    trigger_ms = next(
        (t for t in STREAM_KEEPS_UP_TRIGGERS_MS if t >= 4 * base_ms),
        STREAM_KEEPS_UP_TRIGGERS_MS[-1],
    )
    plan = {"base_ms": base_ms, "trigger_ms": trigger_ms}
    print(f"keeps-up plan {plan}", file=sys.stderr)
    (scratch / STREAM_KEEPS_UP_PLAN_FILE).write_text(json.dumps(plan))


def run_stream_keeps_up(spark: Any, scratch: Path) -> None:
    """Run the keeping-up stream on its planned trigger (`setup_stream_keeps_up`) for ten
    batches or more; each batch takes a fraction of the trigger."""
    plan_file = scratch / STREAM_KEEPS_UP_PLAN_FILE
    trigger_ms = (
        json.loads(plan_file.read_text())["trigger_ms"]
        if plan_file.is_file()
        else STREAM_KEEPS_UP_TRIGGERS_MS[0]
    )
    query = start_enriched_orders(spark, scratch, trigger_ms, "checkpoint-keeps-up")
    run_stream_for(query, 10 * trigger_ms / 1000, min_batches=10)


STREAM_LATE_TRIGGERS_MS = (2_000, 3_000, 5_000, 10_000, 20_000, 30_000)
"""The falling-behind stream's trigger: the first of these at least 2.5 times a batch's fixed
cost on this machine (measured first; a busy machine can take seconds for a batch that scores
next to nothing)."""
STREAM_ROWS_PER_BATCH = 2_000
STREAM_PLAN_FILE = "stream-plan.json"


def stream_risk_score(order_id: int, step: int) -> int:
    """Return a made-up risk score with a per-row loop that walks the order's history: longer
    for later orders (`step` more iterations per batch of orders)."""
    score = 0
    for i in range(1 + (order_id // STREAM_ROWS_PER_BATCH) * step):
        score = (score * 31 + order_id + i) % 1_000_003
    return score


def start_scoring_stream(spark: Any, scratch: Path, step: int, trigger_ms: int) -> Any:
    """Start the falling-behind stream: 2,000 orders per batch (`rate-micro-batch`) joined with
    a static customers table, scored by the UDF (`step` more loop iterations per batch), and
    aggregated per region in `foreachBatch`; `trigger_ms` 0 runs batches back to back."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    score_udf = F.udf(lambda order_id: stream_risk_score(order_id, step), LongType())

    def write_batch(batch: Any, batch_id: int) -> None:
        (
            batch.groupBy("region")
            .agg(F.count("*").alias("n_orders"), F.sum("risk").alias("risk"))
            .collect()
        )

    orders = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", STREAM_ROWS_PER_BATCH)
        .option("numPartitions", 2)
        .load()
        .select(F.col("value").alias("order_id"), hashed("value", 201, 1_000).alias("customer_id"))
    )
    writer = (
        orders.join(customers_frame(spark, 1_000), "customer_id")
        .select("order_id", "region", score_udf("order_id").alias("risk"))
        .writeStream.queryName("order_risk")
        .foreachBatch(write_batch)
        .option("checkpointLocation", str(scratch / f"checkpoint-scoring-{trigger_ms}"))
    )
    if trigger_ms:
        writer = writer.trigger(processingTime=f"{trigger_ms} milliseconds")
    return writer.start()


def setup_stream_falls_behind(spark: Any, scratch: Path) -> None:
    """Measure this machine, and plan the falling-behind stream: its trigger and how much its
    per-row loop grows per batch.

    A shared machine's speed varies several-fold from run to run. The stream is run here (no
    event log) with a one-iteration loop to measure a batch's fixed cost; the trigger is the
    first of `STREAM_LATE_TRIGGERS_MS` at least 2.5 times that. The loop's cost per iteration is
    measured as the difference between a long and a short loop on a static table (the fixed
    costs of a job cancel out), and the loop is planned to grow by a third of the trigger per
    batch (in a stream it grows by less: the measurement overstates the loop's cost), so that
    the first batches keep up and later ones overrun it."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    probe = start_scoring_stream(spark, scratch, step=0, trigger_ms=0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        probe.lastProgress is None or int(probe.lastProgress["batchId"]) < 4
    ):
        time.sleep(0.2)
    durations = sorted(int(p["durationMs"]["triggerExecution"]) for p in probe.recentProgress[1:])
    probe.stop()
    base_ms = durations[len(durations) // 2] if durations else 2_000
    trigger_ms = next(
        (t for t in STREAM_LATE_TRIGGERS_MS if t >= 2.5 * base_ms), STREAM_LATE_TRIGGERS_MS[-1]
    )

    loop_udf = F.udf(lambda x: stream_risk_score(x * STREAM_ROWS_PER_BATCH, 1), LongType())
    n_rows = 20_000

    def seconds(iterations: int) -> float:
        started = time.monotonic()
        spark.range(0, n_rows, 1, 2).select(loop_udf(F.lit(iterations)).alias("s")).agg(
            F.sum("s")
        ).collect()
        return time.monotonic() - started

    longer = 1_000
    slope_s = min(seconds(longer) for _ in range(2)) - min(seconds(0) for _ in range(2))
    per_iteration_s = max(slope_s, 0.05) / (n_rows * longer) * 2
    # Two Python workers share a batch's rows; a batch's loop grows by `step` per row.
    step = (trigger_ms / 3_000) / (per_iteration_s * STREAM_ROWS_PER_BATCH / 2)
    plan = {"base_ms": base_ms, "trigger_ms": trigger_ms, "step": max(1, round(step))}
    print(f"stream plan {plan}", file=sys.stderr)
    (scratch / STREAM_PLAN_FILE).write_text(json.dumps(plan))


def run_stream_falls_behind(spark: Any, scratch: Path) -> None:
    """Run the scoring stream with the planned trigger and loop growth (see
    `setup_stream_falls_behind`): the first batches keep up with the trigger, later ones take
    longer and longer."""
    plan = json.loads((scratch / STREAM_PLAN_FILE).read_text())
    query = start_scoring_stream(spark, scratch, plan["step"], plan["trigger_ms"])
    # Nine batches or more: on a slow trigger (a busy machine) that takes longer.
    run_stream_for(query, max(30, 9 * plan["trigger_ms"] / 1000), min_batches=9)


def run_stream_fails(spark: Any, scratch: Path) -> None:
    """A stream of 100 orders/s whose 301st order is rejected (raise_error), so a task fails on
    every attempt and the query ends with its exception."""
    from pyspark.sql import functions as F

    orders = stream_orders(spark, 100)
    checked = orders.select(
        F.when(F.col("order_id") == 300, F.raise_error(F.lit(STREAM_FAILURE_MESSAGE)))
        .otherwise(F.col("order_id"))
        .alias("order_id"),
        "amount",
    )
    query = (
        checked.writeStream.queryName("order_checks")
        .format("noop")
        .trigger(processingTime=STREAM_TRIGGER)
        .option("checkpointLocation", str(scratch / "checkpoint-fails"))
        .start()
    )
    await_failure(query, "the failing stream")


def await_failure(query: Any, what: str) -> None:
    """Wait up to 60 s for a streaming query to fail, as its workload makes it; stop it and
    raise when it does not."""
    try:
        query.awaitTermination(60)
    except Exception as exc:  # the failure is the point of these workloads
        print(f"expected failure: {type(exc).__name__}", file=sys.stderr)
    if query.isActive:
        query.stop()
        raise RuntimeError(f"{what} did not fail")


FOREACH_BATCH_FAILURE_MESSAGE = "sample foreachBatch failure: the warehouse rejected batch"
FOREACH_BATCH_FAILING_BATCH = 2


def run_stream_foreach_batch_fails(spark: Any, scratch: Path) -> None:
    """A stream of 100 orders/s whose foreachBatch function (Python, on the driver) writes each
    batch's totals to parquet, then raises on batch 2: no task fails, the function's exception
    ends the query through py4j."""
    from pyspark.sql import functions as F

    def write_totals(batch: Any, batch_id: int) -> None:
        totals = batch.agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
        totals.write.mode("append").parquet(str(scratch / "order-totals"))
        if batch_id == FOREACH_BATCH_FAILING_BATCH:
            raise ValueError(f"{FOREACH_BATCH_FAILURE_MESSAGE} {batch_id}")

    query = (
        stream_orders(spark, 100)
        .writeStream.queryName("order_totals")
        .foreachBatch(write_totals)
        .trigger(processingTime=STREAM_TRIGGER)
        .option("checkpointLocation", str(scratch / "checkpoint-foreach"))
        .start()
    )
    await_failure(query, "the foreachBatch stream")


STREAM_IDLE_SECONDS = 12
"""How long the idle stream waits for files after its second batch, before it is stopped."""
STREAM_IDLE_MIN_REPORTS = 5
"""Idle reports the idle stream's log must hold (about one a second while it waits)."""
STREAM_IDLE_CONF = {**STREAM_CONF, "spark.sql.streaming.noDataProgressEventInterval": "1000"}
"""An idle report a second, not Spark's default of one per 10 s, so a short run has several."""


ORDER_FILE_SCHEMA = "order_id LONG, amount DOUBLE"
"""The schema of the orders files the file-source streams read (`_drop_orders_file`)."""


def ran_a_batch(progress: dict[str, Any]) -> bool:
    """Whether a streaming progress is of a batch that ran (Spark times every batch's sink
    write as `addBatch`), not a report of a trigger that found no new data."""
    return "addBatch" in progress.get("durationMs", {})


def _drop_orders_file(folder: Path, name: str, first_order: int, n_orders: int) -> None:
    """Write a JSON-lines file of orders into a watched folder at once (renamed into place, so
    the stream never reads half a file)."""
    staged = folder.parent / f".{name}"
    with staged.open("w", encoding="utf-8") as out:
        for order_id in range(first_order, first_order + n_orders):
            out.write(json.dumps({"order_id": order_id, "amount": order_id % 97 + 0.5}) + "\n")
    staged.rename(folder / name)


def _wait_for_batch(query: Any, batch_id: int, timeout_s: float = 60) -> None:
    """Wait until the query has finished the batch `batch_id` (its progress has that id and
    ran: an idle report repeats the next batch's id)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not query.isActive:
            raise RuntimeError(f"query {query.name} ended early: {query.exception()}")
        if any(int(p["batchId"]) >= batch_id and ran_a_batch(p) for p in query.recentProgress):
            return
        time.sleep(0.2)
    raise RuntimeError(f"query {query.name} did not finish batch {batch_id}")


def run_stream_idle(spark: Any, scratch: Path) -> None:
    """A stream over a folder of JSON files that goes idle: a file, a batch; a second file 3 s
    later, a batch; then no file for 12 s before query.stop(). Every trigger without a new
    file is reported as idle (about once a second), not as a batch."""
    from pyspark.sql import functions as F

    incoming = scratch / "incoming-orders"
    incoming.mkdir(parents=True, exist_ok=True)
    _drop_orders_file(incoming, "orders-0.json", 0, 1_000)
    orders = spark.readStream.schema(ORDER_FILE_SCHEMA).json(str(incoming))
    query = (
        orders.groupBy()
        .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
        .writeStream.queryName("orders_from_files")
        .outputMode("complete")
        .format("noop")
        .trigger(processingTime=STREAM_TRIGGER)
        .option("checkpointLocation", str(scratch / "checkpoint-idle"))
        .start()
    )
    _wait_for_batch(query, 0)
    time.sleep(3)
    _drop_orders_file(incoming, "orders-1.json", 1_000, 500)
    _wait_for_batch(query, 1)
    time.sleep(STREAM_IDLE_SECONDS)
    query.stop()


STREAM_NO_DATA_SECONDS = 12
"""How long the stream that never gets data waits before it is stopped."""


def run_stream_no_data(spark: Any, scratch: Path) -> None:
    """A stream over a folder of JSON files into which no file ever arrives: no batch runs; the
    triggers are reported idle (about once a second) until query.stop()."""
    incoming = scratch / "incoming-none"
    incoming.mkdir(parents=True, exist_ok=True)
    query = (
        spark.readStream.schema(ORDER_FILE_SCHEMA)
        .json(str(incoming))
        .writeStream.queryName("orders_never_arrived")
        .format("noop")
        .trigger(processingTime=STREAM_TRIGGER)
        .option("checkpointLocation", str(scratch / "checkpoint-no-data"))
        .start()
    )
    time.sleep(STREAM_NO_DATA_SECONDS)
    if any(ran_a_batch(p) for p in query.recentProgress):
        raise RuntimeError("the stream without data ran a batch")
    query.stop()


def run_stream_stateful(spark: Any, scratch: Path) -> None:
    """Two counts per page and 1 s window over one stream of 500 clicks/s: one with a 1 s
    watermark (old windows leave the state), one without (the state keeps every window)."""
    from pyspark.sql import functions as F

    clicks = stream_orders(spark, 500).select("ts", (F.col("customer_id") % 20).alias("page_id"))
    per_window = F.window("ts", "1 second")
    watermarked = (
        clicks.withWatermark("ts", "1 second")
        .groupBy(per_window, "page_id")
        .count()
        .writeStream.queryName("clicks_watermarked")
        .outputMode("append")
        .format("noop")
        .trigger(processingTime=STREAM_TRIGGER)
        .option("checkpointLocation", str(scratch / "checkpoint-watermarked"))
        .start()
    )
    unbounded = (
        clicks.groupBy(per_window, "page_id")
        .count()
        .writeStream.queryName("clicks_unbounded")
        .outputMode("update")
        .format("noop")
        .trigger(processingTime=STREAM_TRIGGER)
        .option("checkpointLocation", str(scratch / "checkpoint-unbounded"))
        .start()
    )
    deadline = time.monotonic() + 50
    while time.monotonic() < deadline and not all(
        q.lastProgress is not None and int(q.lastProgress["batchId"]) >= 5
        for q in (watermarked, unbounded)
    ):
        time.sleep(0.2)
    watermarked.stop()
    unbounded.stop()


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
        name="cancel-job-group",
        codec="zstd",
        rolling=False,
        exercises="a long query in a job group the driver program cancels after 3 s "
        "(cancelJobGroup: its job ends [SPARK_JOB_CANCELLED] … cancelled job group, its SQL "
        "execution FAILED with that message); good queries before and after",
        run=run_cancel_job_group,
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
        name="dynamic-allocation-release",
        codec="zstd",
        rolling=False,
        exercises="local-cluster under dynamic allocation (shuffle tracking, idle timeout 5 s, "
        "at most 2 executors): the first query waits for the first executors, a 20 s pause "
        "releases them, and the next query waits for new ones",
        run=run_dynamic_allocation_release,
        conf={
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.minExecutors": "0",
            "spark.dynamicAllocation.maxExecutors": "2",
            "spark.dynamicAllocation.executorIdleTimeout": "5s",
            "spark.dynamicAllocation.shuffleTracking.timeout": "5s",
            "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
            "spark.executor.cores": "2",
            "spark.executor.memory": "1g",
        },
        master="local-cluster[2,2,1024]",
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
    Workload(
        name="cause-skew-join",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled data skew: sort-merge join (AQE and broadcast off) where customer 2 "
        "holds 90% of 4M orders and 3 of 50k rows on the other side; one reduce task does the "
        "join",
        run=run_cause_skew_join,
        conf={**NO_AUTO_BROADCAST, **AQE_OFF, "spark.sql.shuffle.partitions": "8"},
        expects=("skewed_smj", "one_task_dominates"),
        labels=(
            Label(
                rule="data-skew",
                node="SortMergeJoin",
                execution="revenue per region",
                note="key customer_id=2 holds 90% of the streamed side; its one reduce task "
                "does most of the query's work",
            ),
        ),
    ),
    Workload(
        name="cause-row-explosion",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled row explosion: a many-to-many sort-merge join of 2 x 80k rows over "
        "100 keys emits 64M rows, then a count",
        run=run_cause_row_explosion,
        conf={**NO_AUTO_BROADCAST, **AQE_OFF},
        expects=("row_explosion",),
        labels=(
            Label(
                rule="row-explosion",
                node="SortMergeJoin",
                execution="visits x sales",
                note="64M output rows from 2 x 80k input rows (400x)",
            ),
        ),
    ),
    Workload(
        name="cause-python-udf",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled slow Python UDF: a per-row Python loop (BatchEvalPython) over 30k "
        "cheap rows takes most of the query",
        run=run_cause_python_udf,
        expects=("python_udf", "slow_python_udf"),
        labels=(
            Label(
                rule="python-udf",
                node="BatchEvalPython",
                execution="risk score per order",
                note="the UDF's per-row loop is nearly all of the task time",
            ),
        ),
    ),
    Workload(
        name="cause-nested-loop",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled nested-loop join: a range join of 20k events x 4k windows has no "
        "equi-key, so it runs as a broadcast nested-loop join (80M comparisons)",
        run=run_cause_nested_loop,
        expects=("nested_loop_join",),
        labels=(
            Label(
                rule="nested-loop-join",
                node="BroadcastNestedLoopJoin",
                execution="events per time window",
                note="range condition without an equi-key: every event is compared with every "
                "window",
            ),
        ),
    ),
    Workload(
        name="cause-idle-cores",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled idle cores: a window without partitionBy moves 2M rows into one "
        "partition, so one task sorts and windows everything while 3 of 4 slots idle",
        run=run_cause_idle_cores,
        expects=("single_task_window",),
        master="local[4,3]",
        labels=(
            Label(
                rule="idle-cores",
                node="Window",
                execution="running revenue total",
                note="Window with no partitionBy: its stage runs 1 task on a 4-slot master",
            ),
        ),
    ),
    Workload(
        name="cause-coalesce-write",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled idle cores: coalesce(1) before a write runs the scan of 16 parquet "
        "files and the hashing of 4M rows in one task while 3 of 4 slots idle",
        run=run_cause_coalesce_write,
        setup=setup_coalesce_write,
        master="local[4,3]",
        labels=(
            Label(
                rule="idle-cores",
                node="Execute InsertIntoHadoopFsRelationCommand",
                execution="written as one file",
                note="coalesce(1) before the write: the whole stage, its scan included, runs in "
                "1 task on a 4-slot master",
            ),
        ),
    ),
    Workload(
        name="repartition-write-spill",
        codec="zstd",
        rolling=False,
        exercises="repartition(8) then partitionBy(day) on a parquet write of 6M events: the "
        "round-robin repartition's sort spills in the map stage's shuffle write, the write's "
        "sort by day spills in the stage that reads the repartition",
        run=run_repartition_write,
        setup=setup_repartition_write,
        conf={"spark.driver.memory": "640m"},
        master="local[4,3]",
    ),
    Workload(
        name="cause-small-files",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled small files: a parquet table of 2,400 files of 10 rows each "
        "(written before the app by a setup session) read and aggregated",
        run=run_cause_small_files,
        setup=setup_small_files,
        expects=("many_files_read",),
        labels=(
            Label(
                rule="small-files",
                node="Scan parquet",
                execution="clicks per page",
                note="2,400 files of about 1 KB: opening files dominates the scan",
            ),
        ),
    ),
    Workload(
        name="cause-failed-udf",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled failed query: a Python UDF raises ValueError for customer 4242, so "
        "the second query fails after 3 attempts; a good query before it",
        run=run_cause_failed_udf,
        expects=("failed_execution", "failure_message"),
        labels=(
            Label(
                rule="failed-query",
                node="BatchEvalPython",
                execution="validated revenue per customer",
                note="the Python UDF raises on every attempt",
                message=BAD_CUSTOMER_MESSAGE,
            ),
        ),
    ),
    Workload(
        name="cause-large-broadcast",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled large broadcast: a 600k-row product table (tens of MB) is "
        "broadcast (threshold raised to 100 MB) for a join with 1M sales",
        run=run_cause_large_broadcast,
        conf={"spark.sql.autoBroadcastJoinThreshold": "100m"},
        expects=("large_broadcast",),
        labels=(
            Label(
                rule="large-broadcast",
                node="BroadcastExchange",
                execution="units per category",
                note="collecting and building the broadcast relation is most of the query",
            ),
        ),
    ),
    Workload(
        name="cause-large-result",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled large result: collect() of 300k rows with a 135-character hex "
        "fingerprint each (about 45 MB) to the driver",
        run=run_cause_large_result,
        conf=AQE_OFF,
        expects=("large_result",),
        labels=(
            Label(
                rule="large-result",
                node="Project",
                execution="collect every document fingerprint",
                note="the result stage (its top operator) sends tens of MB to the driver",
            ),
        ),
    ),
    Workload(
        name="cause-spill-sort",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled spill: a sort of 6M rows within 4 partitions on a 640 MB driver "
        "heap spills hundreds of MB (no test knobs)",
        run=run_cause_spill_sort,
        conf={"spark.driver.memory": "640m"},
        expects=("spill", "sort_spill"),
        labels=(
            Label(
                rule="spill",
                node="Sort",
                execution="events sorted by user",
                note="the sort's buffers exceed execution memory and spill to disk",
            ),
        ),
    ),
    Workload(
        name="row-groups-default-split",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="a parquet table of 3 equal files, one row group of about 29 MiB each, read "
        "with Spark's default split size on 8 slots: (bytes + 4 MiB open cost per file) / 8 "
        "gives splits of about 12.5 MiB, so each row group lands in one of its file's 3 splits "
        "and 6 of 9 scan tasks read no rows; open-source Spark logs no split size",
        run=run_row_groups_default_split,
        setup=setup_even_files,
        master="local[8,3]",
    ),
    Workload(
        name="cause-skewed-files",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="labelled scan skew: a parquet table whose 2 big files hold 99.9% of the rows "
        "(one row group each) read in 8 MB splits, so most scan tasks read no rows; a "
        "broadcast hash join and an aggregate follow",
        run=run_cause_skewed_files,
        setup=setup_skewed_files,
        conf={"spark.sql.files.maxPartitionBytes": "8m"},
        expects=("skewed_scan",),
        labels=(
            Label(
                rule="data-skew",
                node="Scan parquet",
                execution="time per section",
                note="uneven files",
            ),
        ),
    ),
    Workload(
        name="stream-keeps-up",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="streaming query that keeps up: 200 orders/s from the rate source joined with "
        "a static customers table, written to a noop sink on a trigger of at least 4 times a "
        "batch's cost on this machine (measured first: 2 s on an idle one), stopped with "
        "query.stop()",
        run=run_stream_keeps_up,
        setup=setup_stream_keeps_up,
        conf=STREAM_CONF,
        expects=("stream_progress", "stream_stopped", "stream_keeps_up"),
        streams=(
            StreamLabel(
                query="orders_enriched",
                rule="",
                status="stopped",
                note="every batch after the first within its trigger: no warning",
            ),
        ),
    ),
    Workload(
        name="stream-falls-behind",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="streaming query that falls behind: 2,000 orders per batch (rate-micro-batch) "
        "joined with a static table, scored by a Python UDF whose per-row loop grows with the "
        "order id, aggregated in foreachBatch; trigger and growth planned from this machine's "
        "speed (measured first) so batches 1-3 keep up and later ones overrun the trigger, "
        "then query.stop()",
        run=run_stream_falls_behind,
        setup=setup_stream_falls_behind,
        conf=STREAM_CONF,
        expects=("stream_progress", "stream_stopped", "stream_falls_behind"),
        streams=(
            StreamLabel(
                query="order_risk",
                rule="streaming-falling-behind",
                status="stopped",
                note="batch durations grow past the trigger; input arrives faster than "
                "the query processes it",
            ),
        ),
    ),
    Workload(
        name="stream-fails",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="streaming query that fails: raise_error rejects one order of the rate "
        "source, its task fails 3 times and the query terminates with the exception",
        run=run_stream_fails,
        conf=STREAM_CONF,
        expects=("stream_some_progress", "stream_failed"),
        streams=(
            StreamLabel(
                query="order_checks",
                rule="",
                status="failed",
                note="the query ends with the task's exception",
                message=STREAM_FAILURE_MESSAGE,
            ),
        ),
    ),
    Workload(
        name="stream-stateful",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="two stateful streaming queries over one rate source: a windowed count with "
        "a 1 s watermark (state evicted) and one without a watermark (state grows), both "
        "stopped with query.stop()",
        run=run_stream_stateful,
        conf=STREAM_CONF,
        expects=("stream_progress", "stream_stopped", "stream_state"),
        streams=(
            StreamLabel(
                query="clicks_watermarked",
                rule="",
                status="stopped",
                note="the watermark advances and old windows leave the state",
            ),
            StreamLabel(
                query="clicks_unbounded",
                rule="streaming-state-growth",
                status="stopped",
                note="no watermark: the state keeps every window and grows with every batch",
            ),
        ),
    ),
    Workload(
        name="stream-foreach-batch-fails",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="streaming query whose foreachBatch function (Python, on the driver) writes "
        f"each batch's totals to parquet and raises ValueError on batch "
        f"{FOREACH_BATCH_FAILING_BATCH}: no task fails; the query terminates with a py4j "
        "exception whose text holds the Python traceback",
        run=run_stream_foreach_batch_fails,
        conf=STREAM_CONF,
        expects=("stream_some_progress", "stream_foreach_batch_failed"),
        streams=(
            StreamLabel(
                query="order_totals",
                rule="",
                status="failed",
                note="the foreachBatch function's own exception, not py4j's wrapper, is the cause",
                message=FOREACH_BATCH_FAILURE_MESSAGE,
            ),
        ),
    ),
    Workload(
        name="stream-no-data",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="streaming query over a folder of JSON files into which no file arrives: "
        f"no batch in {STREAM_NO_DATA_SECONDS} s, only idle reports (noDataProgressEventInterval "
        "1 s), then query.stop()",
        run=run_stream_no_data,
        conf=STREAM_IDLE_CONF,
        expects=("stream_stopped", "stream_idle", "stream_no_batch"),
        streams=(
            StreamLabel(
                query="orders_never_arrived",
                rule="",
                status="stopped",
                note="no data ever arrived: no batch, no trigger to infer, no warning",
            ),
        ),
    ),
    Workload(
        name="stream-idle",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="streaming query over a folder of JSON files that goes idle: two files, "
        f"two batches, then {STREAM_IDLE_SECONDS} s without a file before query.stop(); "
        "noDataProgressEventInterval 1 s, so Spark reports the idle triggers about once a "
        "second (QueryIdleEvent from 3.5, a progress event of no batch before)",
        run=run_stream_idle,
        conf=STREAM_IDLE_CONF,
        expects=("stream_some_progress", "stream_stopped", "stream_idle"),
        streams=(
            StreamLabel(
                query="orders_from_files",
                rule="",
                status="stopped",
                note="idle between files: its idle reports are not batches, no warning",
            ),
        ),
    ),
    Workload(
        name="repeated-queries",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises=f"two queries (a join + aggregate and a top-k) run {REPEATED_QUERY_ROUNDS} "
        "times each in a loop, with the same plans every time: two query families",
        run=run_repeated_queries,
        conf=REPEATED_QUERIES_CONF,
        expects=("balanced", "repeated_queries"),
    ),
    Workload(
        name="clean-join-agg",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="clean control: 1M orders joined to 20k customers (broadcast) and aggregated "
        "per region with AQE on; nothing pathological",
        run=run_clean_join_agg,
        expects=("balanced",),
        clean=True,
    ),
    Workload(
        name="clean-multi-query",
        warm=True,
        codec="zstd",
        rolling=False,
        exercises="clean control: four small, well-shaped SQL queries (count, join + group by, "
        "top-k, distinct count); nothing pathological",
        run=run_clean_multi_query,
        expects=("balanced", "several_executions_4"),
        clean=True,
    ),
    Workload(
        name="connect",
        codec="zstd",
        rolling=False,
        exercises="a Spark Connect server (start-connect-server.sh) driven by a Python Connect "
        "client: a join + aggregate, one SQL text run "
        f"{CONNECT_REPEATED_RUNS} times and then with another N, a query that fails "
        "(raise_error: ConnectOperationFailed), a long query interrupted by interruptAll() "
        "after 3 s (ConnectOperationCanceled, its SQL execution ends with an errorMessage), "
        "a parquet write read back; SparkListenerConnect* events, SQL executions with "
        "jobTags `SparkConnect_OperationTag_..._Operation_<id>`",
        run=run_connect_client,
        conf=CONNECT_CONF,
        expects=(
            "connect_failed_once",
            "connect_canceled_once",
            "connect_interrupted_execution",
            "failed_execution",
        ),
        master="local[2]",
        connect=True,
    ),
)
WORKLOADS_BY_NAME = {w.name: w for w in WORKLOADS}

OLDER_ROLLING_MAX_FILE_SIZE = "10m"
"""Spark 3.x rejects `spark.eventLog.rolling.maxFileSize` below 10 MiB (4.x accepts 2 MiB)."""
OLDER_ROLLING_ROUNDS = 8
"""Rounds of 200 tasks that make the rolling log pass 10 MiB, so it has two `events_N` files."""
OLDER_ROLLING_ROUNDS_BY_VERSION = {"3.3": 10}
"""Versions that need more rounds: Spark 3.3's task-end events are a quarter smaller (4.9 KB
against 6.7 KB; no push-based shuffle read metrics, added in 3.4), so 8 rounds stay in one file."""

OLDER_VERSION_WORKLOADS: tuple[tuple[str, str], ...] = (
    ("join-agg-aqe-on", "zstd"),
    ("join-agg-aqe-off", "snappy"),
    ("skewed-join-aqe-split", "lzf"),
    ("join-strategies", "lzf"),
    ("spill-sort-agg-window", "lz4"),
    ("python-udf-task-retry", "zstd"),
    ("failed-query", "snappy"),
    ("many-tasks-large-result", "zstd"),
    ("stream-keeps-up", "zstd"),
    ("stream-falls-behind", "zstd"),
    ("stream-idle", "zstd"),
)
"""The workloads (and their codecs) run with older PySpark releases: AQE on and off, every join
strategy, AQE's skew split, spills, a Python UDF with a retried task, a failed query, a rolling
log, and a streaming query that keeps up and one that falls behind, compressed so that one
version's logs stay small. Uncompressed logs are covered by 4.3's."""

PYTHON_311_UNPICKLABLE = (
    "Python UDFs, which PySpark 3.3 cannot ship to its Python workers from Python 3.11+ (the "
    "project's Python): its bundled cloudpickle 2.0.0 predates 3.11's code objects, so the "
    "worker fails with `TypeError: code() argument 13 must be str, not int`; Python 3.11 is "
    "supported from PySpark 3.4"
)

OLDER_VERSION_LEFT_OUT: dict[str, dict[str, str]] = {
    "3.3": {
        "python-udf-task-retry": PYTHON_311_UNPICKLABLE,
        "stream-falls-behind": PYTHON_311_UNPICKLABLE,
    },
}
"""Spark minor version -> the workloads of `OLDER_VERSION_WORKLOADS` it does not run, each with
the reason (written into that version's README)."""

OLDER_VERSION_EXERCISES: dict[str, dict[str, str]] = {
    "3.3": {
        "failed-query": "a query whose task fails on every attempt (raise_error), so the stage, "
        "job and SQL execution fail (no SQLExecutionEnd errorMessage before Spark 3.4: the "
        "failed job is the only sign); good queries before and after",
    },
}
"""Spark minor version -> the workloads whose log shows something else in that version, with
what it exercises there."""


def older_version_workloads(version: str) -> list[tuple[str, str]]:
    """Return the workloads (and codecs) of `OLDER_VERSION_WORKLOADS` a Spark version runs."""
    left_out = OLDER_VERSION_LEFT_OUT.get(version, {})
    return [(name, codec) for name, codec in OLDER_VERSION_WORKLOADS if name not in left_out]


def workload_catalog(version: str | None) -> dict[str, Workload]:
    """Return the workloads runnable for a Spark version (None: the project's own pyspark)."""
    if version is None:
        return RUNNABLE
    catalog = {}
    rounds = OLDER_ROLLING_ROUNDS_BY_VERSION.get(version, OLDER_ROLLING_ROUNDS)
    exercises = OLDER_VERSION_EXERCISES.get(version, {})
    for name, codec in older_version_workloads(version):
        workload = dataclasses.replace(WORKLOADS_BY_NAME[name], codec=codec)
        if name in exercises:
            workload = dataclasses.replace(workload, exercises=exercises[name])
        if workload.rolling:
            workload = dataclasses.replace(
                workload,
                run=functools.partial(run_many_tasks_large_result, rounds=rounds),
                exercises=f"rolling log (several events_N files of at most "
                f"{OLDER_ROLLING_MAX_FILE_SIZE}, Spark 3.x's smallest): "
                f"{rounds} queries of 200 tiny tasks each, then a ~10 MB result "
                "collected to the driver",
                conf={
                    **workload.conf,
                    "spark.eventLog.rolling.maxFileSize": OLDER_ROLLING_MAX_FILE_SIZE,
                },
            )
        catalog[name] = workload
    return catalog


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


CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
CONNECT_IDENT = "sea"
"""`SPARK_IDENT_STRING` of the Connect server daemon: part of its pid and log file names."""
CONNECT_START_TIMEOUT_S = 180
CONNECT_CLIENT_TIMEOUT_S = 600
CONNECT_STOP_TIMEOUT_S = 60


def connect_client_python() -> Path:
    """Return the Python of the Spark Connect client's venv (`pyspark[connect]` of the project's
    own PySpark release, under ~/.cache/spark-explain), making it on first use."""
    from importlib.metadata import version

    from pyspark_releases import connect_client_python as client_python

    return client_python(version("pyspark"))


def process_running(pid: int) -> bool:
    """Return True if the process exists and has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def tail_of(path: Path, n_chars: int = 4000) -> str:
    """Return the end of a text file, or a note that it is missing."""
    if not path.is_file():
        return f"(no {path})"
    return path.read_text(errors="replace")[-n_chars:]


@contextmanager
def connect_server(workload: Workload, log_dir: Path, scratch: Path) -> Iterator[str]:
    """Start a Spark Connect server with the workload's settings and event log; yield its URL.

    `sbin/start-connect-server.sh` starts it as a daemon (pid and output files under `scratch`)
    listening on a free port of 127.0.0.1; `sbin/stop-connect-server.sh` stops it when the block
    exits (SIGTERM: the SparkContext stops, logs ApplicationEnd and closes the event log), and
    this waits until its JVM has exited.
    """
    home = spark_home()
    daemon_dir = scratch / "connect-server"
    env = {k: v for k, v in os.environ.items() if k != "SPARK_NO_DAEMONIZE"}
    env.update(
        SPARK_HOME=home,
        SPARK_PID_DIR=str(daemon_dir),
        SPARK_LOG_DIR=str(daemon_dir),
        SPARK_IDENT_STRING=CONNECT_IDENT,
    )
    port = free_port()
    conf = {
        **spark_conf(workload, log_dir),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
    }
    cmd = [f"{home}/sbin/start-connect-server.sh", "--master", workload.master]
    cmd += ["--name", workload.app_name]
    for key, value in conf.items():
        cmd += ["--conf", f"{key}={value}"]
    subprocess.run(cmd, env=env, check=True)
    # spark-daemon.sh names its files spark-<ident>-<class>-<instance>[-<host>.out|.pid].
    daemon_name = f"spark-{CONNECT_IDENT}-{CONNECT_SERVER_CLASS}-1"
    pid = int((daemon_dir / f"{daemon_name}.pid").read_text())
    server_output = next(daemon_dir.glob(f"{daemon_name}-*.out"), daemon_dir / "missing.out")
    try:
        deadline = time.monotonic() + CONNECT_START_TIMEOUT_S
        while True:
            with socket.socket() as probe:
                probe.settimeout(1)
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if not process_running(pid):
                raise RuntimeError(f"the Connect server exited:\n{tail_of(server_output)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Connect server did not listen on port {port} within "
                    f"{CONNECT_START_TIMEOUT_S} s:\n{tail_of(server_output)}"
                )
            time.sleep(0.5)
        print(f"Connect server (pid {pid}) listens on port {port}", file=sys.stderr, flush=True)
        yield f"sc://127.0.0.1:{port}"
    finally:
        subprocess.run([f"{home}/sbin/stop-connect-server.sh"], env=env, check=False)
        deadline = time.monotonic() + CONNECT_STOP_TIMEOUT_S
        while process_running(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if process_running(pid):
            print(f"the Connect server did not stop; killing pid {pid}", file=sys.stderr)
            os.kill(pid, signal.SIGKILL)
        print(tail_of(server_output), file=sys.stderr, flush=True)


def run_connect(workload: Workload, log_dir: Path, scratch: Path) -> None:
    """Run a Spark Connect workload: its server in a JVM of its own, its `run` in a Python
    Connect client (this script in the client's venv, `--connect-url`) against the server."""
    python = connect_client_python()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_HOME", "PYTHONPATH", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")
    }
    with connect_server(workload, log_dir, scratch) as url:
        client = [str(python), str(Path(__file__).resolve()), "--run-one", workload.name]
        client += ["--connect-url", url, "--scratch", str(scratch)]
        subprocess.run(client, env=env, check=True, timeout=CONNECT_CLIENT_TIMEOUT_S)


def run_connect_session(workload: Workload, url: str, scratch: Path) -> None:
    """Run a Spark Connect workload's `run` in a Connect session to the server at `url` (in the
    Connect client's venv), then close the session."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        workload.run(spark, scratch)
    finally:
        spark.stop()


def run_one(workload: Workload, log_dir: Path, scratch: Path) -> None:
    """Run one workload as a Spark application in this process."""
    if workload.connect:
        run_connect(workload, log_dir, scratch)
        return
    if workload.master.startswith("local-cluster"):
        # local-cluster starts Workers inside the driver JVM; they launch executors with
        # SPARK_HOME's scripts and write their work dirs under SPARK_WORKER_DIR.
        os.environ["SPARK_HOME"] = spark_home()
        os.environ["SPARK_WORKER_DIR"] = str(scratch / "workers")
    if workload.master == "standalone":
        with standalone_cluster(workload.standalone_hosts, scratch) as url:
            run_session(workload, url, log_dir, scratch)
    else:
        if workload.setup is not None or workload.warm:
            run_session(workload, workload.master, log_dir, scratch, setup=True)
        run_session(workload, workload.master, log_dir, scratch)


def run_session(
    workload: Workload, master: str, log_dir: Path, scratch: Path, setup: bool = False
) -> None:
    """Start the workload's SparkSession on `master`, run it, and stop the session.

    With `setup`, run the warm-up and the workload's setup step instead, with the same settings
    but no event log, so the logged application holds only the workload itself. SQL execution
    ids are counted per JVM, so the logged application's first execution id is then not 0.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(workload.app_name)
    conf = spark_conf(workload, log_dir)
    if setup:
        conf["spark.eventLog.enabled"] = "false"
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if setup:
            if workload.warm:
                warm_up(spark, scratch)
            if workload.setup is not None:
                workload.setup(spark, scratch)
        else:
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
class TaskFacts:
    """One finished task attempt: where it ran, how long, and its SQL metric updates."""

    stage_id: int
    duration_ms: int
    result_bytes: int
    succeeded: bool
    metric_updates: dict[int, int]
    """Accumulator id -> this attempt's update."""


@dataclass
class ExecutionFacts:
    """One SQL execution: its description, times, plan metrics, stages and driver updates."""

    execution_id: int
    description: str
    start_ms: int
    end_ms: int | None = None
    error: str = ""
    metrics: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Accumulator id -> (operator name, metric name), over every plan version."""
    node_names: set[str] = field(default_factory=set)
    """Operator names (trailing spaces stripped) of every plan version."""
    stage_ids: set[int] = field(default_factory=set)
    driver_updates: dict[int, int] = field(default_factory=dict)
    job_tags: tuple[str, ...] = ()
    """The `jobTags` of SQLExecutionStart (Spark 4; a Connect operation's tag among them)."""

    @property
    def duration_ms(self) -> int:
        """Return the execution's wall time (0 if it never ended)."""
        return 0 if self.end_ms is None else self.end_ms - self.start_ms


def collect_plan_metrics(plan: dict[str, Any], ex: ExecutionFacts) -> None:
    """Record the operator names and metric accumulator ids of a SparkPlanInfo tree."""
    name = str(plan.get("nodeName", "")).strip()
    ex.node_names.add(name)
    for metric in plan.get("metrics", []):
        ex.metrics[int(metric["accumulatorId"])] = (name, str(metric.get("name", "")))
    for child in plan.get("children", []):
        collect_plan_metrics(child, ex)


def as_int(value: Any) -> int | None:
    """Return an accumulator update as an int, or None if it is not a number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass
class LogFacts:
    """Per-execution, per-stage and per-task facts of a log, for the workloads' checks."""

    app_start_ms: int = 0
    app_end_ms: int = 0
    executions: dict[int, ExecutionFacts] = field(default_factory=dict)
    stage_execution: dict[int, int] = field(default_factory=dict)
    tasks: list[TaskFacts] = field(default_factory=list)

    def add(self, kind: str, event: dict[str, Any]) -> None:
        """Take in one decoded event."""
        if kind == "SparkListenerApplicationStart":
            self.app_start_ms = int(event.get("Timestamp", 0))
        elif kind == "SparkListenerApplicationEnd":
            self.app_end_ms = int(event.get("Timestamp", 0))
        elif kind == "SparkListenerSQLExecutionStart":
            ex = ExecutionFacts(
                execution_id=int(event["executionId"]),
                description=str(event.get("description", "")),
                start_ms=int(event.get("time", 0)),
                job_tags=tuple(str(tag) for tag in event.get("jobTags") or ()),
            )
            self.executions[ex.execution_id] = ex
            collect_plan_metrics(event.get("sparkPlanInfo", {}), ex)
        elif kind == "SparkListenerSQLAdaptiveExecutionUpdate":
            ex = self.executions.get(int(event["executionId"]))
            if ex is not None:
                collect_plan_metrics(event.get("sparkPlanInfo", {}), ex)
        elif kind == "SparkListenerSQLExecutionEnd":
            ex = self.executions.get(int(event["executionId"]))
            if ex is not None:
                ex.end_ms = int(event.get("time", 0))
                ex.error = str(event.get("errorMessage") or "")
        elif kind == "SparkListenerDriverAccumUpdates":
            ex = self.executions.get(int(event["executionId"]))
            if ex is not None:
                for acc_id, value in event.get("accumUpdates", []):
                    ex.driver_updates[int(acc_id)] = ex.driver_updates.get(int(acc_id), 0) + int(
                        value
                    )
        elif kind == "SparkListenerJobStart":
            execution_id = as_int((event.get("Properties") or {}).get("spark.sql.execution.id"))
            ex = self.executions.get(execution_id) if execution_id is not None else None
            if ex is not None:
                for stage_id in event.get("Stage IDs", []):
                    self.stage_execution[int(stage_id)] = ex.execution_id
                    ex.stage_ids.add(int(stage_id))
        elif kind == "SparkListenerTaskEnd":
            info = event.get("Task Info", {})
            updates: dict[int, int] = {}
            for acc in info.get("Accumulables", []):
                value = as_int(acc.get("Update"))
                if value is not None:
                    updates[int(acc["ID"])] = value
            metrics = event.get("Task Metrics") or {}
            self.tasks.append(
                TaskFacts(
                    stage_id=int(event.get("Stage ID", -1)),
                    duration_ms=int(info.get("Finish Time", 0)) - int(info.get("Launch Time", 0)),
                    result_bytes=int(metrics.get("Result Size", 0)),
                    succeeded=event.get("Task End Reason", {}).get("Reason") == "Success",
                    metric_updates=updates,
                )
            )

    @property
    def duration_ms(self) -> int:
        """Return the application's wall time."""
        return max(0, self.app_end_ms - self.app_start_ms)

    def execution(self, description_part: str) -> ExecutionFacts | None:
        """Return the one execution whose description contains `description_part`, if one."""
        found = [e for e in self.executions.values() if description_part in e.description]
        return found[0] if len(found) == 1 else None

    def tasks_of(self, ex: ExecutionFacts) -> list[TaskFacts]:
        """Return the task attempts of an execution's stages."""
        return [t for t in self.tasks if t.stage_id in ex.stage_ids]

    def metric_ids(self, ex: ExecutionFacts, node: str, metric: str) -> set[int]:
        """Return the accumulator ids of one metric of the operators named `node`."""
        return {i for i, (n, m) in ex.metrics.items() if n == node and m == metric}

    def per_task(self, ex: ExecutionFacts, node: str, metric: str) -> list[tuple[TaskFacts, int]]:
        """Return (task, update) for every successful task of `ex`, 0 where it sent none."""
        ids = self.metric_ids(ex, node, metric)
        stages = {t.stage_id for t in self.tasks_of(ex) if ids & t.metric_updates.keys()}
        return [
            (t, sum(t.metric_updates.get(i, 0) for i in ids))
            for t in self.tasks_of(ex)
            if t.succeeded and t.stage_id in stages
        ]

    def total(self, ex: ExecutionFacts, node: str, metric: str) -> int:
        """Return a metric of the operators named `node` summed over tasks and the driver."""
        ids = self.metric_ids(ex, node, metric)
        from_tasks = sum(u for _, u in self.per_task(ex, node, metric))
        return from_tasks + sum(v for i, v in ex.driver_updates.items() if i in ids)

    def stage_durations(self, ex: ExecutionFacts) -> dict[int, list[int]]:
        """Return the durations of each stage's successful tasks."""
        by_stage: dict[int, list[int]] = {}
        for t in self.tasks_of(ex):
            if t.succeeded:
                by_stage.setdefault(t.stage_id, []).append(t.duration_ms)
        return by_stage


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
    """Executions that ended with an error; in logs before Spark 3.4, which hold no execution
    error, those with a failed job (as Spark's History Server counts them)."""
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
    stream_started: list[dict[str, Any]] = field(default_factory=list)
    """Streaming QueryStartedEvents, as decoded."""
    stream_progress: list[dict[str, Any]] = field(default_factory=list)
    """The `progress` of every streaming QueryProgressEvent of a batch that ran (`addBatch`)."""
    stream_idle: int = 0
    """Reports of triggers that found no new data: QueryIdleEvents (Spark 3.5+), and before
    3.5 QueryProgressEvents of no batch."""
    stream_terminated: list[dict[str, Any]] = field(default_factory=list)
    """Streaming QueryTerminatedEvents, as decoded."""
    connect_events: dict[str, int] = field(default_factory=dict)
    """Spark Connect events (`CONNECT_EVENT_PREFIX...`) by full event name -> count."""
    connect_canceled_tags: list[str] = field(default_factory=list)
    """The `jobTag` of every canceled Spark Connect operation."""
    facts: LogFacts = field(default_factory=LogFacts)

    def stream_batches(self, name: str) -> list[dict[str, Any]]:
        """Return the progress of the named query's batches, in log order."""
        return [p for p in self.stream_progress if p.get("name") == name]


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
    job_executions: dict[int, int] = {}
    executions_with_failed_jobs: set[int] = set()
    stats = ReadStats()
    for event in iter_events(log_path, stats):
        summary.n_events += 1
        event_name = str(event.get("Event", ""))
        kind = event_name.rsplit(".", 1)[-1]
        summary.facts.add(kind, event)
        if event_name.startswith(CONNECT_EVENT_PREFIX):
            summary.connect_events[event_name] = summary.connect_events.get(event_name, 0) + 1
            if event_name == CONNECT_OPERATION_CANCELED:
                summary.connect_canceled_tags.append(str(event.get("jobTag", "")))
        if kind == "StreamingQueryListener$QueryStartedEvent":
            summary.stream_started.append(event)
        elif kind == "StreamingQueryListener$QueryProgressEvent":
            progress = event.get("progress", {})
            if ran_a_batch(progress):
                summary.stream_progress.append(progress)
            else:  # before Spark 3.5, a trigger that found no new data
                summary.stream_idle += 1
        elif kind == "StreamingQueryListener$QueryIdleEvent":
            summary.stream_idle += 1
        elif kind == "StreamingQueryListener$QueryTerminatedEvent":
            summary.stream_terminated.append(event)
        elif kind == "SparkListenerLogStart":
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
            execution_id = as_int((event.get("Properties") or {}).get("spark.sql.execution.id"))
            if execution_id is not None:
                job_executions[int(event.get("Job ID", -1))] = execution_id
        elif kind == "SparkListenerStageSubmitted":
            if event.get("Stage Info", {}).get("Stage Attempt ID", 0) > 0:
                summary.n_stage_resubmissions += 1
        elif kind == "SparkListenerExecutorRemoved":
            summary.n_executors_removed += 1
        elif kind == "SparkListenerJobEnd":
            if event.get("Job Result", {}).get("Result") != "JobSucceeded":
                summary.n_failed_jobs += 1
                execution_id = job_executions.get(int(event.get("Job ID", -1)))
                if execution_id is not None:
                    executions_with_failed_jobs.add(execution_id)
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
    if summary.spark_version and not logs_execution_errors(summary.spark_version):
        summary.n_failed_executions = len(executions_with_failed_jobs)
    return summary


def has_node(summary: LogSummary, prefix: str) -> bool:
    """Return True if any plan node name starts with `prefix`."""
    return any(name.startswith(prefix) for name in summary.plan_node_names)


def logs_execution_errors(spark_version: str) -> bool:
    """Return True if this Spark version logs a failed execution's error: SQLExecutionEnd has an
    `errorMessage` from Spark 3.4; before, the failed job is the only sign of the failure."""
    major, minor = (int(part) for part in spark_version.split(".")[:2])
    return (major, minor) >= (3, 4)


def median(values: list[int]) -> float:
    """Return the median of a non-empty list."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


MB = 1024 * 1024


def check_on(
    description: str, test: Callable[[LogFacts, ExecutionFacts], bool]
) -> Callable[[LogSummary, Path], bool]:
    """Return a check that runs `test` on the one execution whose description holds the text."""

    def check(summary: LogSummary, _: Path) -> bool:
        ex = summary.facts.execution(description)
        return ex is not None and test(summary.facts, ex)

    return check


def skewed_metric(f: LogFacts, ex: ExecutionFacts, node: str, metric: str, share: float) -> bool:
    """Return True if one task holds at least `share` of a node's metric over its tasks."""
    values = [v for _, v in f.per_task(ex, node, metric)]
    return bool(values) and sum(values) > 0 and max(values) >= share * sum(values)


def straggler_dominates(f: LogFacts, ex: ExecutionFacts) -> bool:
    """Return True if one task ran 5x its stage's median and 40% of the execution's wall time."""
    for durations in f.stage_durations(ex).values():
        longest = max(durations)
        if longest >= 5 * median(durations) and longest >= 0.4 * ex.duration_ms:
            return True
    return False


def single_task_stage_share(f: LogFacts, ex: ExecutionFacts) -> float:
    """Return the largest share of the execution's wall time taken by a one-task stage."""
    shares = [d[0] / max(1, ex.duration_ms) for d in f.stage_durations(ex).values() if len(d) == 1]
    return max(shares, default=0.0)


def row_explosion(f: LogFacts, ex: ExecutionFacts) -> bool:
    """Return True if the sort-merge join emits at least 100x the rows its inputs generated."""
    inputs = f.total(ex, "Range", "number of output rows")
    return inputs > 0 and f.total(ex, "SortMergeJoin", "number of output rows") >= 100 * inputs


def broadcast_dominates(f: LogFacts, ex: ExecutionFacts) -> bool:
    """Return True if the broadcast is over 20 MB and its driver-side times are 40% of the query."""
    driver_ms = sum(
        f.total(ex, "BroadcastExchange", m)
        for m in ("time to collect", "time to build", "time to broadcast")
    )
    return (
        f.total(ex, "BroadcastExchange", "data size") >= 20 * MB
        and driver_ms >= 0.4 * ex.duration_ms
    )


def skewed_scan(f: LogFacts, ex: ExecutionFacts) -> bool:
    """Return True if 2 scan tasks read 99% of the rows and at least half read none."""
    rows = sorted(
        (v for _, v in f.per_task(ex, "Scan parquet", "number of output rows")), reverse=True
    )
    return (
        len(rows) >= 8
        and sum(rows[:2]) >= 0.99 * sum(rows)
        and sum(1 for r in rows if r == 0) >= len(rows) / 2
        and "BroadcastHashJoin" in ex.node_names
    )


def balanced(summary: LogSummary, _: Path) -> bool:
    """Return True if nothing is pathological: no failures, no spill, no straggler task."""
    f = summary.facts
    for ex in f.executions.values():
        if ex.error:
            return False
        for durations in f.stage_durations(ex).values():
            if len(durations) >= 2 and max(durations) > 3 * median(durations) + 300:
                return False
    return summary.n_failed_tasks == 0 and summary.memory_bytes_spilled == 0


def trigger_ms(progress: dict[str, Any]) -> int:
    """Return a batch's `triggerExecution` duration in ms."""
    return int(progress.get("durationMs", {}).get("triggerExecution", 0))


def batch_starts_ms(batches: list[dict[str, Any]]) -> list[int]:
    """Return when each batch's trigger fired, in epoch ms."""
    return [
        round(datetime.fromisoformat(str(p.get("timestamp"))).timestamp() * 1000) for p in batches
    ]


def aligned_trigger_ms(batches: list[dict[str, Any]], candidates: tuple[int, ...]) -> int | None:
    """Return the longest of `candidates` that at least three batch starts (after the first)
    fall on: a batch that waited for the timer starts on a multiple of the trigger."""
    starts_ms = batch_starts_ms(batches)[1:]
    aligned = [t for t in candidates if sum(1 for ms in starts_ms if ms % t <= 100) >= 3]
    return max(aligned) if aligned else None


def stream_keeps_up(summary: LogSummary, _: Path) -> bool:
    """Return True if, after the first batch (planning and JVM warm-up), every batch of every
    query fitted in its trigger (the one `setup_stream_keeps_up` chose, told from the batches'
    start times), and the median in half of it."""
    trigger = aligned_trigger_ms(summary.stream_progress, STREAM_KEEPS_UP_TRIGGERS_MS)
    batches = [p for p in summary.stream_progress if int(p.get("batchId", 0)) > 0]
    durations = sorted(trigger_ms(p) for p in batches)
    return (
        trigger is not None
        and len(batches) >= 8
        and all(d <= trigger for d in durations)
        and durations[len(durations) // 2] <= trigger // 2
    )


def stream_falls_behind(summary: LogSummary, _: Path) -> bool:
    """Return True if the last three batches each took longer than the trigger and longer than
    the median batch, and input came faster than it was processed over them, after at least
    three batches that kept up (so the trigger can be told from their start times)."""
    batches = summary.stream_progress
    if len(batches) < 6:
        return False
    # The trigger setup_stream_falls_behind chose.
    trigger = aligned_trigger_ms(batches, STREAM_LATE_TRIGGERS_MS)
    if trigger is None:
        return False
    durations = sorted(trigger_ms(p) for p in batches)
    last = batches[-3:]
    kept_up = [p for p in batches[1:] if trigger_ms(p) <= trigger]
    arriving = sum(source_rate(p, "inputRowsPerSecond") for p in last)
    processed = sum(source_rate(p, "processedRowsPerSecond") for p in last)
    return (
        len(kept_up) >= 3
        and all(
            trigger_ms(p) > trigger and trigger_ms(p) >= durations[len(durations) // 2]
            for p in last
        )
        and arriving > processed
    )


def source_rate(progress: dict[str, Any], key: str) -> float:
    """Return a batch's rate summed over its sources (the log has no query-wide rates)."""
    total = 0.0
    for source in progress.get("sources", []):
        value = source.get(key)
        if isinstance(value, int | float):
            total += value
    return total


def stream_stopped(summary: LogSummary, _: Path) -> bool:
    """Return True if every started query terminated without an exception."""
    ended = {e.get("runId"): e for e in summary.stream_terminated}
    return bool(summary.stream_started) and all(
        s.get("runId") in ended and not ended[s.get("runId")].get("exception")
        for s in summary.stream_started
    )


def stream_failed(summary: LogSummary, _: Path) -> bool:
    """Return True if a query terminated with the injected exception."""
    return any(
        STREAM_FAILURE_MESSAGE in str(e.get("exception") or "") for e in summary.stream_terminated
    )


def state_rows(progress: dict[str, Any]) -> int:
    """Return the rows held in a batch's state stores, over its stateful operators."""
    return sum(int(op.get("numRowsTotal", 0)) for op in progress.get("stateOperators", []))


def stream_state(summary: LogSummary, _: Path) -> bool:
    """Return True if the unwatermarked query's state ends at least 3x larger than the
    watermarked one's, and grew over its last batches."""
    bounded = summary.stream_batches("clicks_watermarked")
    unbounded = summary.stream_batches("clicks_unbounded")
    if len(bounded) < 6 or len(unbounded) < 6:
        return False
    return state_rows(unbounded[-1]) >= 3 * max(1, state_rows(bounded[-1])) and state_rows(
        unbounded[-1]
    ) > state_rows(unbounded[len(unbounded) // 2])


def connect_interrupted_execution(summary: LogSummary, _: Path) -> bool:
    """Return True if exactly one SQL execution carries the job tag of a canceled Connect
    operation, and it ended with an error message."""
    tags = set(summary.connect_canceled_tags)
    executions = [e for e in summary.facts.executions.values() if tags & set(e.job_tags)]
    return len(executions) == 1 and executions[0].end_ms is not None and bool(executions[0].error)


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
    "skewed_smj": check_on(
        "revenue per region",
        lambda f, ex: skewed_metric(f, ex, "SortMergeJoin", "number of output rows", 0.7),
    ),
    "one_task_dominates": check_on("revenue per region", straggler_dominates),
    "row_explosion": check_on("visits x sales", row_explosion),
    "slow_python_udf": check_on(
        "risk score per order",
        lambda f, ex: "BatchEvalPython" in ex.node_names and ex.duration_ms >= 3_000,
    ),
    "nested_loop_join": check_on(
        "events per time window",
        lambda f, ex: "BroadcastNestedLoopJoin" in ex.node_names and ex.duration_ms >= 3_000,
    ),
    "single_task_window": check_on(
        "running revenue total",
        lambda f, ex: "Window" in ex.node_names and single_task_stage_share(f, ex) >= 0.5,
    ),
    "many_files_read": check_on(
        "clicks per page",
        lambda f, ex: f.total(ex, "Scan parquet", "number of files read") >= 2_000,
    ),
    "failure_message": check_on(
        "validated revenue per customer", lambda f, ex: BAD_CUSTOMER_MESSAGE in ex.error
    ),
    "large_broadcast": check_on("units per category", broadcast_dominates),
    "large_result": check_on(
        "collect every document fingerprint",
        lambda f, ex: sum(t.result_bytes for t in f.tasks_of(ex)) >= 20 * MB,
    ),
    "sort_spill": check_on(
        "events sorted by user", lambda f, ex: f.total(ex, "Sort", "spill size") >= 100 * MB
    ),
    "skewed_scan": check_on("time per section", skewed_scan),
    "balanced": balanced,
    "several_executions_4": lambda s, _: s.n_sql_executions >= 4,
    # Every run of both queries, and the two temp views' commands.
    "repeated_queries": lambda s, _: (
        s.n_sql_executions == len(REPEATED_QUERIES) * REPEATED_QUERY_ROUNDS + 2
    ),
    "stream_progress": lambda s, _: len(s.stream_progress) >= 3,
    "stream_some_progress": lambda s, _: len(s.stream_progress) >= 1,
    "stream_keeps_up": stream_keeps_up,
    "stream_falls_behind": stream_falls_behind,
    "stream_stopped": stream_stopped,
    "stream_failed": stream_failed,
    "stream_idle": lambda s, _: s.stream_idle >= STREAM_IDLE_MIN_REPORTS,
    "stream_no_batch": lambda s, _: not s.stream_progress,
    "stream_foreach_batch_failed": lambda s, _: any(
        FOREACH_BATCH_FAILURE_MESSAGE in str(e.get("exception") or "") for e in s.stream_terminated
    ),
    "stream_state": stream_state,
    "connect_failed_once": lambda s, _: s.connect_events.get(CONNECT_OPERATION_FAILED, 0) == 1,
    "connect_canceled_once": lambda s, _: s.connect_events.get(CONNECT_OPERATION_CANCELED, 0) == 1,
    "connect_interrupted_execution": connect_interrupted_execution,
}


# ------------------------------------------------------------------------------------------------
# Run pairs: the same nightly job run twice with one change, for comparing two runs (`pairs/`)
# ------------------------------------------------------------------------------------------------

PAIR_APP_NAME = "sea-nightly-orders"
NIGHTLY_ORDERS = 1_000_000
NIGHTLY_CUSTOMERS = 1_000_000
NIGHTLY_PRODUCTS = 2_000
NIGHTLY_SKEWED_SHARE_PCT = 90


def run_nightly_orders(spark: Any, scratch: Path, scale: int = 1, skewed: bool = False) -> None:
    """A small nightly ETL: orders x products x active customers -> daily revenue (parquet),
    and each customer's latest order (a window per customer) counted per day (parquet).

    `scale` multiplies the orders; with `skewed`, customer 0 places 90% of them.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    customer = hashed("id", 101, NIGHTLY_CUSTOMERS)
    if skewed:
        customer = F.when(hashed("id", 104, 100) < NIGHTLY_SKEWED_SHARE_PCT, F.lit(0)).otherwise(
            customer
        )
    orders = spark.range(0, NIGHTLY_ORDERS * scale, 1, 8).select(
        F.col("id").alias("order_id"),
        customer.alias("customer_id"),
        hashed("id", 102, NIGHTLY_PRODUCTS).alias("product_id"),
        (hashed("id", 103, 100_000) / F.lit(100.0)).alias("amount"),
        F.date_add(F.lit("2026-01-01").cast("date"), hashed("id", 105, 30).cast("int")).alias(
            "day"
        ),
    )
    # 8% of the customers are active: too many rows for a static broadcast, few enough for
    # AQE to broadcast them once the filter has run.
    customers = (
        spark.range(0, NIGHTLY_CUSTOMERS, 1, 4)
        .select(
            F.col("id").alias("customer_id"),
            F.concat(F.lit("region-"), (F.col("id") % 12).cast("string")).alias("region"),
            F.concat(F.lit("customer-"), F.col("id").cast("string")).alias("name"),
            F.when(hashed("id", 106, 100) < 8, F.lit("active"))
            .otherwise(F.lit("dormant"))
            .alias("status"),
        )
        .filter(F.col("status") == "active")
    )
    products = spark.range(0, NIGHTLY_PRODUCTS, 1, 1).select(
        F.col("id").alias("product_id"),
        F.concat(F.lit("category-"), (F.col("id") % 20).cast("string")).alias("category"),
    )
    describe(spark, "nightly orders: daily revenue per region and category")
    (
        orders.join(products, "product_id")
        .join(customers, "customer_id")
        .groupBy("day", "region", "category")
        .agg(F.count("*").alias("n_orders"), F.sum("amount").alias("revenue"))
        .write.mode("overwrite")
        .parquet(str(scratch / "daily_revenue.parquet"))
    )
    describe(spark, "nightly orders: customers by day of their latest order")
    latest_first = Window.partitionBy("customer_id").orderBy(F.desc("day"), F.desc("order_id"))
    whole_customer = latest_first.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    # A sliding frame is recomputed for every row (Spark cannot remove rows from an aggregate),
    # so its cost grows with the customer's number of orders, up to 100 per row.
    last_100 = latest_first.rowsBetween(0, 99)
    (
        orders.select(
            "day",
            "amount",
            F.row_number().over(latest_first).alias("rank"),
            F.sum("amount").over(whole_customer).alias("customer_total"),
            F.avg("amount").over(last_100).alias("recent_avg"),
        )
        .filter(F.col("rank") == 1)
        .groupBy("day")
        .agg(
            F.count("*").alias("n_customers"),
            F.sum("amount").alias("last_amount"),
            F.avg(F.try_divide(F.col("amount"), F.col("customer_total"))).alias("last_share"),
            F.avg(F.col("amount") - F.col("recent_avg")).alias("last_vs_recent"),
        )
        .write.mode("overwrite")
        .parquet(str(scratch / "last_order_day.parquet"))
    )


@dataclass(frozen=True)
class PairRun:
    """One run of a pair: the nightly job's input and settings."""

    conf: dict[str, str] = field(default_factory=dict)
    master: str = "local[2,3]"
    scale: int = 1
    skewed: bool = False


@dataclass(frozen=True)
class Pair:
    """The nightly job run twice, the candidate with one change against the baseline."""

    name: str
    change: str
    expect_cause: str
    """`more-input`, `plan-change`, `partitions`, `skew` or `fewer-cores`; `faster` for a
    candidate that applied the baseline's advice."""
    baseline: PairRun
    candidate: PairRun
    check: Callable[[LogSummary, LogSummary], bool]
    """Is the change visible in the logs (baseline summary, candidate summary)?"""

    def workload(self, side: str) -> Workload:
        """Return one side (`baseline` or `candidate`) as a runnable workload."""
        run = self.baseline if side == "baseline" else self.candidate
        return Workload(
            name=f"pair-{self.name}-{side}",
            codec="zstd",
            rolling=False,
            exercises=f"{self.name} {side}",
            run=functools.partial(run_nightly_orders, scale=run.scale, skewed=run.skewed),
            conf=run.conf,
            master=run.master,
            app=PAIR_APP_NAME,
            warm=True,
        )


def executions_ms(summary: LogSummary) -> int:
    """Return the summed wall time of a log's SQL executions."""
    return sum(e.duration_ms for e in summary.facts.executions.values())


def orders_rows(summary: LogSummary) -> int:
    """Return the orders the nightly job generated (its window query reads nothing else)."""
    ex = summary.facts.execution("latest order")
    return 0 if ex is None else summary.facts.total(ex, "Range", "number of output rows")


def n_executions_with(summary: LogSummary, name: str) -> int:
    """Return how many executions of a log have an operator `name` in any plan version."""
    return sum(name in ex.node_names for ex in summary.facts.executions.values())


def longest_task_ms(summary: LogSummary) -> int:
    """Return the duration of the longest successful task of a log."""
    return max((t.duration_ms for t in summary.facts.tasks if t.succeeded), default=0)


def has_straggler(summary: LogSummary) -> bool:
    """Return True if some stage's longest task ran 5x its median and at least a second."""
    f = summary.facts
    for ex in f.executions.values():
        for durations in f.stage_durations(ex).values():
            if len(durations) >= 2 and max(durations) >= max(1_000, 5 * median(durations)):
                return True
    return False


FIXED_PARTITIONS = {"spark.sql.adaptive.coalescePartitions.enabled": "false"}
DEFAULT_JOB_CONF: dict[str, str] = {"spark.sql.shuffle.partitions": "16", **FIXED_PARTITIONS}
"""The baseline's settings: AQE on (without partition coalescing, so every run has 16 reduce
tasks per shuffle) and the default 10 MB broadcast threshold."""
SPARK_DEFAULTS: dict[str, str] = {"spark.sql.shuffle.partitions": "200"}
"""Spark's own defaults (200 shuffle partitions, AQE on and coalescing them), for the AQE pair."""

PAIRS: tuple[Pair, ...] = (
    Pair(
        name="more-input",
        change="four times the orders (4M instead of 1M)",
        expect_cause="more-input",
        baseline=PairRun(conf=DEFAULT_JOB_CONF),
        candidate=PairRun(conf=DEFAULT_JOB_CONF, scale=4),
        check=lambda b, c: orders_rows(c) == 4 * orders_rows(b) > 0,
    ),
    Pair(
        name="broadcast-off",
        change="spark.sql.autoBroadcastJoinThreshold=-1: both joins become sort-merge joins",
        expect_cause="plan-change",
        baseline=PairRun(conf=DEFAULT_JOB_CONF),
        candidate=PairRun(conf={**DEFAULT_JOB_CONF, **NO_AUTO_BROADCAST}),
        check=lambda b, c: (
            n_executions_with(b, "BroadcastHashJoin") > 0
            and n_executions_with(c, "BroadcastHashJoin") == 0
        ),
    ),
    Pair(
        name="aqe-off",
        change="spark.sql.adaptive.enabled=false with Spark's default 200 shuffle partitions "
        "in both runs: the active-customers join stays a sort-merge join (AQE made it a "
        "broadcast hash join at run time) and every shuffle keeps its 200 partitions (AQE "
        "coalesced them)",
        expect_cause="plan-change",
        baseline=PairRun(conf=SPARK_DEFAULTS),
        candidate=PairRun(conf={**SPARK_DEFAULTS, **AQE_OFF}),
        check=lambda b, c: (
            n_executions_with(b, "AdaptiveSparkPlan") > 0
            and n_executions_with(c, "AdaptiveSparkPlan") == 0
            and n_executions_with(c, "SortMergeJoin") > 0
        ),
    ),
    Pair(
        name="partitions",
        change="spark.sql.shuffle.partitions 8 -> 400 (AQE partition coalescing off in both)",
        expect_cause="partitions",
        baseline=PairRun(conf={"spark.sql.shuffle.partitions": "8", **FIXED_PARTITIONS}),
        candidate=PairRun(conf={"spark.sql.shuffle.partitions": "400", **FIXED_PARTITIONS}),
        check=lambda b, c: c.n_tasks >= 5 * b.n_tasks,
    ),
    Pair(
        name="skew",
        change="customer 0 places 90% of the orders in the candidate's data, so one task of "
        "the per-customer window sorts them and slides the 100-order frame over them",
        expect_cause="skew",
        baseline=PairRun(conf=DEFAULT_JOB_CONF),
        candidate=PairRun(conf=DEFAULT_JOB_CONF, skewed=True),
        check=lambda b, c: has_straggler(c) and longest_task_ms(c) >= 3 * longest_task_ms(b),
    ),
    Pair(
        name="advised-partitions",
        change="spark.sql.shuffle.partitions 400 -> 2 as the baseline's too-many-partitions "
        "findings advise (AQE partition coalescing off in both)",
        expect_cause="faster",
        baseline=PairRun(conf={"spark.sql.shuffle.partitions": "400", **FIXED_PARTITIONS}),
        candidate=PairRun(conf={"spark.sql.shuffle.partitions": "2", **FIXED_PARTITIONS}),
        check=lambda b, c: b.n_tasks >= 5 * c.n_tasks and executions_ms(c) < executions_ms(b),
    ),
    Pair(
        name="fewer-cores",
        change="master local[2] -> local[1] (the job is CPU-bound; the machine has 2 cores)",
        expect_cause="fewer-cores",
        baseline=PairRun(conf=DEFAULT_JOB_CONF, master="local[2,3]"),
        candidate=PairRun(conf=DEFAULT_JOB_CONF, master="local[1,3]"),
        check=lambda b, c: executions_ms(c) >= 1.3 * executions_ms(b),
    ),
)
PAIRS_BY_NAME = {p.name: p for p in PAIRS}
PAIR_SIDES = ("baseline", "candidate")
PAIR_WORKLOADS = {w.name: w for p in PAIRS for w in (p.workload(s) for s in PAIR_SIDES)}


# ------------------------------------------------------------------------------------------------
# Slot series: one job run with 1, 2, 4 and 8 task slots (validates the what-if model)
# ------------------------------------------------------------------------------------------------

SLOTS_APP_NAME = "sea-sleepy-slots"
SLOT_COUNTS = (1, 2, 4, 8)
"""The task slots of the series' runs (`local[N]`): each run's neighbours have twice and half."""
SLOTS_DIR_NAME = "slots"

NAP_MS: dict[str, tuple[int, dict[int, int]]] = {
    "map": (4_800, {5: 15_600, 13: 12_000}),
    "reduce": (3_600, {2: 10_800}),
    "left": (5_400, {6: 16_800}),
    "right": (7_200, {}),
    "join": (3_600, {0: 10_800}),
}
"""Per stage of the sleepy job: each task's nap (ms) by partition, the default and stragglers.

The naps are the tasks' length: a sleeping task does not compete for the CPU, so the runs on
this 2-core machine measure scheduling, not contention. They are seconds long so that the CPU
work around them (reading a shuffle, starting a stage's first tasks), which slows down when the
machine is busy, stays a small part of a task. They run in the JVM (`reflect` calls
`Thread.sleep`), not in a Python UDF: starting Python workers is CPU work that grows with the
slots and the machine's load."""

FIRST_ROW_OF_PARTITION = f"monotonically_increasing_id() % {1 << 33} = 0"
"""True on a task's first row: the id is the partition index shifted left by 33 bits plus the
row's position in the partition."""


def nap(stage: str) -> Any:
    """Return a column that sleeps the stage's nap (by the task's partition) on the task's
    first row and 0 ms on the others, and is the string `null`."""
    from pyspark.sql import functions as F

    default_ms, stragglers = NAP_MS[stage]
    ms = str(default_ms)
    if stragglers:
        cases = " ".join(f"WHEN {p} THEN {n}" for p, n in sorted(stragglers.items()))
        ms = f"CASE spark_partition_id() {cases} ELSE {default_ms} END"
    return F.expr(
        f"reflect('java.lang.Thread', 'sleep', CASE WHEN {FIRST_ROW_OF_PARTITION} "
        f"THEN CAST({ms} AS BIGINT) ELSE CAST(0 AS BIGINT) END)"
    )


def run_sleepy_slots(spark: Any, scratch: Path) -> None:
    """Two SQL executions of sleeping tasks: map (16 tasks) -> shuffle -> reduce (8), and two
    map stages (8 and 4 tasks, run side by side) -> sort-merge join (8); stragglers in each."""
    from pyspark.sql import functions as F

    describe(spark, "slots: map, shuffle, reduce")
    (
        spark.range(0, 16 * 50, 1, 16)
        .select((F.col("id") % 100).alias("key"), nap("map").alias("n"))
        .groupBy("key")
        .agg(F.count("n").alias("n_rows"))
        .select("key", "n_rows", nap("reduce").alias("n"))
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    describe(spark, "slots: two maps, join")
    left = spark.range(0, 8 * 50, 1, 8).select(
        (F.col("id") % 100).alias("key"), nap("left").alias("a")
    )
    right = spark.range(0, 4 * 50, 1, 4).select(
        (F.col("id") % 100).alias("key"), nap("right").alias("b")
    )
    (
        left.join(right, "key")
        .select("key", "a", "b", nap("join").alias("n"))
        .write.format("noop")
        .mode("overwrite")
        .save()
    )


SLOTS_CONF = {**AQE_OFF, **NO_AUTO_BROADCAST, "spark.sql.shuffle.partitions": "8"}
"""AQE off and no broadcast: the same plan, stages and task counts in every run."""


def slot_workload(n_slots: int) -> Workload:
    """Return the run of the slot series with `n_slots` task slots."""
    return Workload(
        name=f"slots-{n_slots}",
        codec="zstd",
        rolling=False,
        exercises=f"the sleepy job on local[{n_slots}]",
        run=run_sleepy_slots,
        conf=SLOTS_CONF,
        master=f"local[{n_slots}]",
        app=SLOTS_APP_NAME,
        warm=True,
    )


SLOT_WORKLOADS = {w.name: w for w in (slot_workload(n) for n in SLOT_COUNTS)}
RUNNABLE = {**WORKLOADS_BY_NAME, **PAIR_WORKLOADS, **SLOT_WORKLOADS}
"""Every workload `--run-one` can start: the samples, both runs of every pair, the slot series."""
PAIRS_DIR_NAME = "pairs"


# ------------------------------------------------------------------------------------------------
# Driver: run children, move logs into place, verify, write README and manifest
# ------------------------------------------------------------------------------------------------


def disk_size(path: Path) -> int:
    """Return the on-disk size of a file, or of all files under a directory."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass(frozen=True)
class Target:
    """Which Spark writes the logs: the project's own pyspark, or an older release in its venv."""

    version: str | None
    """Spark minor version of an older release (`3.5`), or None for the project's pyspark."""
    python: str
    """The Python interpreter whose pyspark runs the workloads."""

    @property
    def catalog(self) -> dict[str, Workload]:
        """Return the workloads this target can run."""
        return workload_catalog(self.version)


def run_child(workload: Workload, staging: Path, target: Target) -> Path:
    """Run a workload in a fresh Python process and return the log it wrote into `staging`."""
    log_dir = staging / "log"
    scratch = staging / "scratch"
    log_dir.mkdir()
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYTHONPATH")}
    env.update(PYSPARK_PYTHON=target.python, PYSPARK_DRIVER_PYTHON=target.python)
    cmd = [
        target.python,
        str(Path(__file__).resolve()),
        "--run-one",
        workload.name,
        "--log-dir",
        str(log_dir),
        "--scratch",
        str(scratch),
        *(("--spark-version", target.version) if target.version else ()),
    ]
    if workload.connect:
        connect_client_python()  # made on first use, before the timed run
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


def label_records(workload: Workload, summary: LogSummary) -> list[dict[str, Any]]:
    """Return a workload's labels for the manifest, each with the execution id it resolves to."""
    records = []
    for label in workload.labels:
        record: dict[str, Any] = label.as_json()
        ex = summary.facts.execution(label.execution)
        record["execution_id"] = None if ex is None else ex.execution_id
        records.append(record)
    return records


def label_problems(workload: Workload, summary: LogSummary) -> list[str]:
    """Return why a workload's labels do not fit its log (execution or operator not found)."""
    problems = []
    for label in workload.labels:
        ex = summary.facts.execution(label.execution)
        if ex is None:
            problems.append(f"label {label.rule}: no single execution matches {label.execution!r}")
        elif label.node not in ex.node_names:
            problems.append(f"label {label.rule}: no {label.node} in execution {ex.execution_id}")
    return problems


def manifest_entry(workload: Workload, log_path: Path, summary: LogSummary) -> dict[str, Any]:
    """Return the manifest record of one written log."""
    entry: dict[str, Any] = {
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
    if workload.labels or workload.clean:
        entry["expect"] = label_records(workload, summary)
        entry["duration_ms"] = summary.facts.duration_ms
    if workload.clean:
        entry["clean"] = True
    if workload.connect:
        entry["counts"]["connect_operations"] = summary.connect_events.get(
            CONNECT_OPERATION_STARTED, 0
        )
        entry["counts"]["connect_failed_operations"] = summary.connect_events.get(
            CONNECT_OPERATION_FAILED, 0
        )
        entry["counts"]["connect_canceled_operations"] = summary.connect_events.get(
            CONNECT_OPERATION_CANCELED, 0
        )
    if workload.streams:
        entry["expect_streaming"] = [label.as_json() for label in workload.streams]
        entry["counts"]["streaming_batches"] = len(summary.stream_progress)
        entry["duration_ms"] = summary.facts.duration_ms
    return entry


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


def readme_table(entries: list[dict[str, Any]]) -> list[str]:
    """Return the README table of logs: one row per log, by workload."""
    lines = [
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
    return lines


ORACLE_DIR_NAME = ".history-server"
"""Beside an older version's logs: that version's History Server answers, one JSON per log."""


def version_dirs(out: Path) -> list[str]:
    """Return the names of the older versions' sample directories under `out`."""
    from pyspark_releases import VERSIONS_DIR_PREFIX

    return sorted(
        p.name for p in out.glob(f"{VERSIONS_DIR_PREFIX}*") if (p / MANIFEST_NAME).is_file()
    )


def render_version_readme(version: str, entries: list[dict[str, Any]]) -> str:
    """Return the README of an older Spark version's sample directory."""
    releases = sorted({e["spark_version"] for e in entries}) or ["?"]
    java_versions = sorted({e.get("java_version", "") for e in entries} - {""}) or ["?"]
    total = sum(e["size_bytes"] for e in entries)
    lines = [
        f"# Sample event logs of Spark {version}",
        "",
        f"Real event logs written by PySpark {', '.join(releases)} (Java "
        f"{', '.join(java_versions)}), from a virtual environment of its own, running a subset "
        "of the workloads of `scripts/make_sample_eventlogs.py` (see `../README.md` for the "
        "settings they share). They put the analyzer's rules to the test against the version "
        "that wrote the log: the conformance tests compare the report of each log with what "
        f"Spark {version}'s own History Server answers for it.",
        "",
        "Regenerate them, then the History Server's answers (each installs that PySpark release "
        "into `~/.cache/spark-explain/pyspark-<version>/` on first use):",
        "",
        "```",
        f"{REGENERATE_COMMAND} --spark-version {version}",
        f".venv/bin/python scripts/save_history_server_answers.py --spark-version {version}",
        "```",
        "",
        f"`{ORACLE_DIR_NAME}/<log>.json` holds, for each log, the REST answers of Spark "
        f"{version}'s History Server that the conformance tests compare with: the SQL "
        "executions with their plan graphs and metric strings, stage attempts with task "
        "quantiles, executors and jobs. Save them again whenever these logs change. "
        "`.manifest.json` describes the logs as the top directory's does.",
        "",
        f"Total size of the logs: {fmt_kib(total)}.",
        "",
        *readme_table(entries),
        "",
    ]
    by_reason: dict[str, list[str]] = {}
    for name, reason in OLDER_VERSION_LEFT_OUT.get(version, {}).items():
        by_reason.setdefault(reason, []).append(f"`{name}`")
    if by_reason:
        lines += [
            f"Workloads the other versions run that Spark {version}'s do not:",
            "",
            *(f"* {', '.join(names)}: {reason}." for reason, names in by_reason.items()),
            "",
        ]
    return "\n".join(lines)


def render_readme(entries: list[dict[str, Any]], older_dirs: list[str] | None = None) -> str:
    """Return the README of the sample directory (`older_dirs`: older versions' directories)."""
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
        "Regenerate all of them (half an hour on two cores), or some:",
        "",
        "```",
        REGENERATE_COMMAND,
        f"{REGENERATE_COMMAND} --only skewed-join,multi-sql   # just some",
        f"{REGENERATE_COMMAND} --pairs skew                   # one run pair",
        f"{REGENERATE_COMMAND} --slots                        # the slot series",
        f"{REGENERATE_COMMAND} --out /tmp/logs                # elsewhere",
        "```",
        "",
        "`.manifest.json` holds the same table in machine-readable form (workload, file, codec, "
        "layout, sizes, Spark settings and event counts; for the labelled applications below "
        "also `expect`, `clean` and `duration_ms`).",
        "",
        f"Total size: {fmt_kib(total)}.",
        "",
        *readme_table(entries),
    ]
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
    if older_dirs:
        listed = ", ".join(f"`{name}/`" for name in older_dirs)
        lines += [
            "## Older Spark versions",
            "",
            f"Logs written by older PySpark releases are in {listed} (the same workloads, a "
            f"subset of them, with `--spark-version`), each with the answers of that version's "
            f"own History Server under `{ORACLE_DIR_NAME}/`; see the README there.",
            "",
        ]
    lines += render_labels(entries)
    lines += render_streams(entries)
    return "\n".join(lines)


def render_streams(entries: list[dict[str, Any]]) -> list[str]:
    """Return the README section on the Structured Streaming applications."""
    streaming = sorted(
        (e for e in entries if e.get("expect_streaming")), key=lambda e: e["workload"]
    )
    if not streaming:
        return []
    lines = [
        "## Structured Streaming applications",
        "",
        "The `stream-*` applications run micro-batch queries on the `rate` source (zstd level 9: "
        "a streaming log repeats the same plans every batch). Their manifest entries carry "
        "`expect_streaming`: per query its `query` name, how it ended (`status`: `stopped` by "
        "`query.stop()`, or `failed`), the `rule` that must lead its findings (empty: no "
        "warning), a `note`, and for a failed query the `message` its exception holds; "
        "`counts.streaming_batches` is the number of progress events. See docs/streaming.md.",
        "",
        "| file | app name | query | status | leading finding | batches | app time | size |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in streaming:
        for label in e["expect_streaming"]:
            lines.append(
                f"| `{e['file']}` | `{e['app_name']}` | `{label['query']}` | {label['status']} "
                f"| {('`' + label['rule'] + '`') if label['rule'] else 'none'} | "
                f"{e['counts'].get('streaming_batches', 0)} | "
                f"{e['duration_ms'] / 1000:.1f} s | {fmt_kib(e['size_bytes'])} |"
            )
    lines.append("")
    return lines


def render_labels(entries: list[dict[str, Any]]) -> list[str]:
    """Return the README section on labelled root causes and clean controls."""
    labelled = sorted((e for e in entries if "expect" in e), key=lambda e: e["workload"])
    if not labelled:
        return []
    lines = [
        "## Labelled root causes and clean controls",
        "",
        "The `cause-*` applications are each built so that one known cause, on one operator, "
        "dominates their time; the `clean-*` ones are controls with nothing pathological. Their "
        "manifest entries carry `expect`: the findings a report must show, each as `rule` "
        "(finding rule id), `node` (the operator's name in the final plan, trailing spaces "
        "stripped), `execution` (a substring of the SQL execution's description; "
        "`execution_id` is the id it resolves to), `note`, and for `failed-query` the "
        "`message` the report must quote (the last line of the Python traceback). Clean "
        "controls have `expect: []` and `clean: true`.",
        "",
        "These applications first warm their JVM up with a few small queries in a session "
        "without an event log (and write their input tables there, where they have one), so "
        "their logs hold only the workload; SQL execution ids are counted per JVM, so their "
        "first execution id is not 0.",
        "",
        "| file | app name | expect | execution | app time | size |",
        "|---|---|---|---|---|---|",
    ]
    for e in labelled:
        expect = "; ".join(f"`{x['rule']}` at `{x['node']}`" for x in e["expect"]) or "clean"
        executions = (
            "; ".join(f"{x['execution_id']}: '{x['execution']}'" for x in e["expect"]) or "–"
        )
        lines.append(
            f"| `{e['file']}` | `{e['app_name']}` | {expect} | {executions} | "
            f"{e['duration_ms'] / 1000:.1f} s | {fmt_kib(e['size_bytes'])} |"
        )
    lines += [
        "",
        "Run pairs (the same job run twice with one change) are under `pairs/`; see "
        "`pairs/README.md`. The slot series (one job run with "
        + ", ".join(str(n) for n in SLOT_COUNTS)
        + " task slots, for the what-if model) is under `slots/`; see `slots/README.md`.",
        "",
    ]
    return lines


def verify(workload: Workload, log_path: Path) -> tuple[LogSummary, list[str]]:
    """Summarize a written log and return the names of the checks it fails."""
    if disk_size(log_path) == 0:
        raise RuntimeError(f"{log_path} is empty")
    summary = summarize_log(log_path)
    failed = [name for name in workload.expects if not CHECKS[name](summary, log_path)]
    failed += label_problems(workload, summary)
    if summary.app_name != workload.app_name:
        failed.append(f"app name {summary.app_name!r}")
    return summary, failed


def refresh_entries(
    out: Path, kept: list[dict[str, Any]], problems: list[str], target: Target
) -> list[dict[str, Any]]:
    """Re-read the logs kept from an earlier run and rebuild their manifest entries.

    The logs themselves are not touched; their entries get the counts of the current script.
    """
    refreshed = []
    for entry in kept:
        workload = target.catalog.get(entry["workload"])
        log_path = out / entry["file"]
        if workload is None or not log_path.exists():
            problems.append(f"{entry['workload']}: kept entry without workload or log, dropped")
            continue
        summary, failed_checks = verify(workload, log_path)
        if failed_checks:
            problems.append(f"{workload.name}: failed checks {failed_checks}")
        refreshed.append(manifest_entry(workload, log_path, summary))
    return refreshed


def run_workload_into(
    workload: Workload, dest: Path, problems: list[str], target: Target
) -> Path | None:
    """Run one workload in a child process and move its log into `dest`; None if it failed."""
    with tempfile.TemporaryDirectory(prefix=f"sea-{workload.name}-") as tmp:
        try:
            written = run_child(workload, Path(tmp), target)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            problems.append(str(exc))
            print(f"  FAILED: {exc}", flush=True)
            return None
        log_path = dest / written.name
        shutil.move(str(written), str(log_path))
    return log_path


def run_workloads(
    out: Path, selected: list[Workload], everything: bool, problems: list[str], target: Target
) -> None:
    """Run the selected workloads into `out`, keeping the other logs' manifest entries."""
    kept = clear_old_logs(out, selected, everything=everything)
    entries = refresh_entries(out, kept, problems, target)
    for workload in selected:
        print(f"{workload.name} ({workload.codec}{', rolling' if workload.rolling else ''})")
        log_path = run_workload_into(workload, out, problems, target)
        if log_path is None:
            continue
        summary, failed_checks = verify(workload, log_path)
        if failed_checks:
            problems.append(f"{workload.name}: failed checks {failed_checks}")
            print(f"  CHECKS FAILED: {failed_checks}", flush=True)
        entries.append(manifest_entry(workload, log_path, summary))
    manifest = {"format_version": MANIFEST_FORMAT_VERSION, "logs": entries}
    (out / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    if target.version is None:
        readme = render_readme(entries, version_dirs(out))
    else:
        readme = render_version_readme(target.version, entries)
    (out / README_NAME).write_text(readme)
    print_summary(entries)


def pair_side_record(workload: Workload, run: PairRun, log_path: Path, s: LogSummary) -> Any:
    """Return the manifest record of one run of a pair."""
    return {
        "file": log_path.name,
        "master": run.master,
        "conf": run.conf,
        "orders": NIGHTLY_ORDERS * run.scale,
        "skewed": run.skewed,
        "size_bytes": disk_size(log_path),
        "duration_ms": s.facts.duration_ms,
        "executions_ms": executions_ms(s),
        "sql_executions": s.n_sql_executions,
        "tasks": s.n_tasks,
    }


def load_pair_manifest(pairs_dir: Path) -> list[dict[str, Any]]:
    """Return the entries of an existing pairs manifest, or an empty list."""
    path = pairs_dir / MANIFEST_NAME
    if not path.exists():
        return []
    return list(json.loads(path.read_text())["pairs"])


PAIR_ATTEMPTS = 3
"""Runs of a pair until the candidate is visibly changed and slower: the machine is shared, and
a baseline slowed by other work can hide a change of a few seconds."""


def run_pair_once(
    pair: Pair, pair_dir: Path, problems: list[str], target: Target
) -> tuple[dict[str, Any], list[LogSummary]] | None:
    """Run both sides of a pair into `pair_dir`; None if a run failed."""
    for path in pair_dir.iterdir():
        remove_log(path)
    records: dict[str, Any] = {}
    summaries: list[LogSummary] = []
    for side in PAIR_SIDES:
        workload = pair.workload(side)
        log_path = run_workload_into(workload, pair_dir, problems, target)
        if log_path is None:
            return None
        summary, failed_checks = verify(workload, log_path)
        if failed_checks:
            problems.append(f"{workload.name}: failed checks {failed_checks}")
        run = pair.baseline if side == "baseline" else pair.candidate
        records[side] = pair_side_record(workload, run, log_path, summary)
        summaries.append(summary)
    return records, summaries


def pair_problems(pair: Pair, summaries: list[LogSummary]) -> list[str]:
    """Return why a pair's two runs do not show its change (empty if they do)."""
    found = []
    if not pair.check(*summaries):
        found.append(f"pair {pair.name}: the change is not visible in the logs")
    faster = pair.expect_cause == "faster"  # the candidate applied the baseline's advice
    if not faster and executions_ms(summaries[1]) <= executions_ms(summaries[0]):
        found.append(f"pair {pair.name}: the candidate was not slower than the baseline")
    return found


def run_pairs(out: Path, selected: list[Pair], problems: list[str], target: Target) -> None:
    """Run both sides of the selected pairs into `out/pairs/<pair>/` and write its manifest."""
    pairs_dir = out / PAIRS_DIR_NAME
    pairs_dir.mkdir(exist_ok=True)
    entries = {
        e["pair"]: e
        for e in load_pair_manifest(pairs_dir)
        if e["pair"] in PAIRS_BY_NAME
        and all((pairs_dir / e["pair"] / e[side]["file"]).exists() for side in PAIR_SIDES)
    }
    for pair in selected:
        print(f"pair {pair.name}: {pair.change}")
        pair_dir = pairs_dir / pair.name
        pair_dir.mkdir(exist_ok=True)
        entries.pop(pair.name, None)
        for attempt in range(1, PAIR_ATTEMPTS + 1):
            outcome = run_pair_once(pair, pair_dir, problems, target)
            if outcome is None:
                break
            records, summaries = outcome
            not_shown = pair_problems(pair, summaries)
            entries[pair.name] = {
                "pair": pair.name,
                "directory": f"{PAIRS_DIR_NAME}/{pair.name}",
                "app_name": PAIR_APP_NAME,
                "change": pair.change,
                "expect_cause": pair.expect_cause,
                "attempts": attempt,
                **records,
            }
            if not not_shown:
                break
            print(f"  attempt {attempt}: {'; '.join(not_shown)}", flush=True)
            if attempt == PAIR_ATTEMPTS:
                problems.extend(not_shown)
    ordered = [entries[p.name] for p in PAIRS if p.name in entries]
    manifest = {"format_version": MANIFEST_FORMAT_VERSION, "pairs": ordered}
    (pairs_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (pairs_dir / README_NAME).write_text(render_pairs_readme(ordered))
    for e in ordered:
        b, c = e["baseline"], e["candidate"]
        print(
            f"{e['pair']:<14} {b['executions_ms'] / 1000:>6.1f} s -> "
            f"{c['executions_ms'] / 1000:>6.1f} s  {e['change']}"
        )


def render_pairs_readme(entries: list[dict[str, Any]]) -> str:
    """Return the README of the pairs directory."""
    lines = [
        "# Run pairs",
        "",
        f"The same small nightly ETL job (`{PAIR_APP_NAME}`, `run_nightly_orders` in "
        "`scripts/make_sample_eventlogs.py`) run twice per directory: a baseline and a candidate "
        "with one change. Each directory is a log directory holding the two logs; the log "
        "listing of `sample_eventlogs/` skips these plain subdirectories. The job generates 1M "
        "orders (8 partitions), joins them to 2,000 products and to the 8% active customers of "
        "1,000,000, writes daily revenue per region and category to parquet (SQL execution "
        "'daily revenue'), then ranks each customer's orders with a window (with the "
        "customer's total and a moving average over 100 of their orders) and writes how many "
        "customers placed their latest order on each day (execution 'latest order').",
        "",
        "Unless the pair says otherwise (`conf` in the manifest), a run uses `local[2,3]`, "
        "AQE on with partition coalescing off (16 shuffle partitions, so every run has the "
        "same reduce tasks) and the default 10 MB broadcast threshold: the products join is a "
        "broadcast hash join, and AQE turns the customers sort-merge join into a broadcast "
        "hash join once the filter has run. The `aqe-off` pair starts from Spark's own "
        "defaults instead (200 shuffle partitions, coalesced by AQE). Like the labelled "
        "samples, each run warms its JVM up first in a session without an event log.",
        "",
        "Regenerate: `.venv/bin/python scripts/make_sample_eventlogs.py --pairs all` (or "
        "`--pairs skew,partitions`). `.manifest.json` lists, per pair, the two files, their "
        "settings, the change and `expect_cause` (what a comparison should name as the reason).",
        "",
        "| pair | change | expect_cause | baseline | candidate | SQL time baseline -> candidate |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        b, c = e["baseline"], e["candidate"]
        lines.append(
            f"| `{e['pair']}/` | {e['change']} | `{e['expect_cause']}` | `{b['file']}` | "
            f"`{c['file']}` | {b['executions_ms'] / 1000:.1f} s -> "
            f"{c['executions_ms'] / 1000:.1f} s |"
        )
    lines += [
        "",
        "Times are the summed wall time of the SQL executions, on a 2-core machine shared with "
        "other work, so they vary from run to run. A pair is run again (up to "
        f"{PAIR_ATTEMPTS} times, `attempts` in the manifest) until its candidate shows the "
        "change and is slower than its baseline.",
        "",
    ]
    return "\n".join(lines)


SLOT_SERIES_MAX_BYTES = 2 * 1024 * 1024
"""Each run's log stays under 2 MB (the repository keeps larger files out)."""


def slot_run_record(n_slots: int, log_path: Path, s: LogSummary) -> dict[str, Any]:
    """Return the manifest record of one run of the slot series."""
    return {
        "task_slots": n_slots,
        "file": log_path.name,
        "master": f"local[{n_slots}]",
        "size_bytes": disk_size(log_path),
        "duration_ms": s.facts.duration_ms,
        "tasks": s.n_tasks,
        "executions": [
            {
                "execution_id": ex.execution_id,
                "description": ex.description,
                "wall_ms": ex.duration_ms,
            }
            for ex in sorted(s.facts.executions.values(), key=lambda ex: ex.execution_id)
        ],
    }


def slot_series_problems(records: list[dict[str, Any]]) -> list[str]:
    """Return why the series' runs do not show what they are for (empty if they do): every run
    has the same executions and tasks, a small log, and is faster with more slots."""
    found = []
    shapes = {(len(r["executions"]), r["tasks"]) for r in records}
    if len(shapes) != 1:
        found.append(f"slot series: runs differ in executions or tasks {sorted(shapes)}")
    for r in records:
        if r["size_bytes"] >= SLOT_SERIES_MAX_BYTES:
            found.append(f"slot series: {r['file']} is {fmt_kib(r['size_bytes'])}")
    walls = [r["duration_ms"] for r in sorted(records, key=lambda r: r["task_slots"])]
    if any(b >= a for a, b in itertools.pairwise(walls)):
        found.append(f"slot series: more slots were not faster ({walls} ms)")
    return found


def run_slot_series(out: Path, problems: list[str], target: Target) -> None:
    """Run the sleepy job once per slot count into `out/slots/` and write its manifest."""
    slots_dir = out / SLOTS_DIR_NAME
    slots_dir.mkdir(exist_ok=True)
    for path in slots_dir.iterdir():
        remove_log(path)
    records = []
    for n_slots in SLOT_COUNTS:
        workload = SLOT_WORKLOADS[f"slots-{n_slots}"]
        print(f"slot series: local[{n_slots}]")
        log_path = run_workload_into(workload, slots_dir, problems, target)
        if log_path is None:
            return
        summary, failed_checks = verify(workload, log_path)
        if failed_checks:
            problems.append(f"{workload.name}: failed checks {failed_checks}")
        records.append(slot_run_record(n_slots, log_path, summary))
    problems.extend(slot_series_problems(records))
    manifest = {"format_version": MANIFEST_FORMAT_VERSION, "runs": records}
    (slots_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (slots_dir / README_NAME).write_text(render_slots_readme(records))
    for r in records:
        walls = ", ".join(f"{e['wall_ms'] / 1000:.1f} s" for e in r["executions"])
        print(f"local[{r['task_slots']}]  app {r['duration_ms'] / 1000:.1f} s  executions {walls}")


def render_slots_readme(records: list[dict[str, Any]]) -> str:
    """Return the README of the slot series directory."""
    lines = [
        "# Slot series",
        "",
        f"One job (`{SLOTS_APP_NAME}`, `run_sleepy_slots` in `scripts/make_sample_eventlogs.py`) "
        f"run with {', '.join(str(n) for n in SLOT_COUNTS)} task slots (`local[N]`), to check "
        "the what-if model (docs/what-if.md) against measured runs: the test predicts, from each "
        "run's log, the walls of the runs with twice and half the slots "
        "(`tests/test_what_if.py`).",
        "",
        "The job's tasks sleep a set time on their first row (`NAP_MS`: a default per stage and "
        "a few stragglers; `reflect` calls the JVM's `Thread.sleep`), so their length does not "
        "depend on the CPU: on a 2-core machine, runs whose tasks compete for the CPU would "
        "measure contention, not scheduling. "
        "It runs two SQL executions with AQE and broadcast joins off (the same stages and tasks in "
        "every run): 'map, shuffle, reduce' (16 map tasks, a shuffle, 8 reduce tasks) and 'two "
        "maps, join' (map stages of 8 and 4 tasks side by side, then a sort-merge join of 8 "
        "tasks). Each run warms its JVM up first in a session without an event log.",
        "",
        f"Regenerate: `{REGENERATE_COMMAND} --slots`. `.manifest.json` lists each run's file, "
        "task slots, wall time and executions' walls.",
        "",
        "| task slots | file | app wall | execution walls | size |",
        "|---|---|---|---|---|",
    ]
    for r in records:
        walls = "; ".join(
            f"{e['execution_id']}: {e['wall_ms'] / 1000:.2f} s" for e in r["executions"]
        )
        lines.append(
            f"| {r['task_slots']} | `{r['file']}` | {r['duration_ms'] / 1000:.2f} s | {walls} | "
            f"{fmt_kib(r['size_bytes'])} |"
        )
    lines.append("")
    return "\n".join(lines)


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
    parser.add_argument(
        "--pairs",
        default="",
        help="comma-separated run pairs to regenerate under pairs/, or `all`: "
        + ", ".join(p.name for p in PAIRS),
    )
    parser.add_argument(
        "--slots",
        action="store_true",
        help=f"run the slot series under {SLOTS_DIR_NAME}/ (the sleepy job on local[N] for N in "
        + ", ".join(str(n) for n in SLOT_COUNTS)
        + ")",
    )
    parser.add_argument(
        "--spark-version",
        default="",
        help="write the logs with an older PySpark release (3.3, 3.4, 3.5 or 4.0), installed in "
        "a venv of its own under ~/.cache/spark-explain, into sample_eventlogs/spark-<version>/; "
        "only the workloads "
        + ", ".join(name for name, _ in OLDER_VERSION_WORKLOADS)
        + " ("
        + "; ".join(
            f"{version} leaves out {', '.join(names)}"
            for version, names in OLDER_VERSION_LEFT_OUT.items()
        )
        + ")",
    )
    parser.add_argument("--run-one", default="", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--connect-url", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def select_workloads(only: str, target: Target) -> list[Workload]:
    """Return the workloads named in `--only`, or all of the target's."""
    available = WORKLOADS_BY_NAME if target.version is None else target.catalog
    if not only:
        return list(available.values())
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in available]
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(unknown)}")
    return [available[n] for n in names]


def select_pairs(names: str) -> list[Pair]:
    """Return the pairs named in `--pairs` (`all`, or empty, for every pair)."""
    if names in ("", "all"):
        return list(PAIRS)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in PAIRS_BY_NAME]
    if unknown:
        raise SystemExit(f"unknown pair(s): {', '.join(unknown)}")
    return [PAIRS_BY_NAME[n] for n in wanted]


def main(argv: list[str]) -> int:
    """Run the selected workloads and pairs, verify their logs, write READMEs and manifests."""
    args = parse_args(argv)
    version: str | None = args.spark_version or None
    if args.run_one:
        workload = workload_catalog(version)[args.run_one]
        if args.connect_url:
            run_connect_session(workload, args.connect_url, args.scratch)
        else:
            run_one(workload, args.log_dir, args.scratch)
        return 0
    target = Target(version=None, python=sys.executable)
    out: Path = args.out
    if version is not None:
        if args.pairs or args.slots:
            raise SystemExit("--pairs and --slots run with the project's own pyspark only")
        from pyspark_releases import VERSIONS_DIR_PREFIX, venv_python

        target = Target(version=version, python=str(venv_python(version)))
        if args.out == DEFAULT_OUT:
            out = DEFAULT_OUT / f"{VERSIONS_DIR_PREFIX}{version}"
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    everything = not args.only and not args.pairs and not args.slots
    problems: list[str] = []
    if everything or args.only:
        run_workloads(out, select_workloads(args.only, target), everything, problems, target)
    if version is None and (everything or args.pairs):
        run_pairs(out, select_pairs(args.pairs), problems, target)
    if version is None and (everything or args.slots):
        run_slot_series(out, problems, target)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
