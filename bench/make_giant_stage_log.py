"""Write a real Spark event log whose one stage has a huge number of tasks (benchmark shape c).

No sample log has a stage of 100k tasks, and copying a small log (scale_eventlog.py) multiplies
stages, not the tasks of one stage. This runs a real PySpark application instead (local[2], an
uncompressed log): one aggregation over `spark.range` split into N partitions, so its map stage
has N tasks, each running Range, a partial HashAggregate and a shuffle write (a dozen SQL metrics
per task, as in a real scan stage), followed by a small reduce stage.

usage:
  python bench/make_giant_stage_log.py OUTPUT [--tasks 100000]

OUTPUT is written once the application has finished (through a temporary name). About 3.6 KB
of log per task: 100k tasks make a 350 MB log. It takes minutes: Spark's local scheduler runs a
few hundred to a thousand tiny tasks per second on two cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

APP_NAME = "sea-giant-stage"


def run_application(log_dir: Path, n_tasks: int) -> None:
    """Run the application in this process (called in a child: `--run`)."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    conf = {
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "2g",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": log_dir.resolve().as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
        # The driver's own status store need not keep every task of the stage.
        "spark.ui.retainedTasks": "1000",
        "spark.ui.showConsoleProgress": "false",
    }
    builder = SparkSession.builder.master("local[2]").appName(APP_NAME)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        frame = spark.range(0, n_tasks * 10, 1, n_tasks).select(
            F.col("id"), (F.col("id") % 7).alias("k")
        )
        frame.filter(F.col("k") > 0).write.format("noop").mode("overwrite").save()
    finally:
        spark.stop()


def main() -> None:
    """Run the application in a child process and move its log to OUTPUT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("output", type=Path)
    parser.add_argument("--tasks", type=int, default=100_000, help="tasks of the big stage")
    parser.add_argument("--run", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run is not None:
        run_application(args.run, args.tasks)
        return
    with tempfile.TemporaryDirectory(prefix="giant-stage-") as tmp:
        log_dir = Path(tmp)
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        cmd = [sys.executable, __file__, str(args.output), "--tasks", str(args.tasks)]
        subprocess.run([*cmd, "--run", str(log_dir)], check=True, env=env)
        logs = [p for p in log_dir.iterdir() if p.is_file() and not p.name.startswith(".")]
        if len(logs) != 1:
            raise SystemExit(f"expected one event log in {log_dir}, found {logs}")
        args.output.parent.mkdir(parents=True, exist_ok=True)
        partial = args.output.with_name(args.output.name + ".tmp")
        shutil.move(str(logs[0]), partial)
        partial.replace(args.output)
    print(f"wrote {args.output} ({args.output.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
