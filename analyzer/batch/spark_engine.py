"""The Spark batch engine: the per-application step on Spark executors, tables written by Spark.

This is the only module that imports pyspark, and it is imported only for `--engine spark`.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
import tempfile
import threading
import uuid
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import analyzer
from analyzer.batch import _bootstrap
from analyzer.batch.fleet import TABLE_SCHEMAS
from analyzer.batch.jobs import AnyJob, JobResult, JobSettings
from analyzer.batch.layout import OutputLayout
from analyzer.batch.outputs import cannot_write, make_staging_dir
from analyzer.errors import UsageError

if TYPE_CHECKING:
    import polars as pl


def build_package_zip(dest_dir: Path) -> Path:
    """Zip the analyzer package (templates included) for executors; the name carries its hash."""
    root = Path(analyzer.__file__).resolve().parent
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            info = zipfile.ZipInfo(
                str(Path("analyzer") / path.relative_to(root)), (1980, 1, 1, 0, 0, 0)
            )
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    data = buffer.getvalue()
    target = dest_dir / f"spark_explain_analyzer-{hashlib.sha256(data).hexdigest()[:12]}.zip"
    target.write_bytes(data)
    return target


def _spark_type(kind: str) -> Any:
    from pyspark.sql import types as T

    return {
        "int": T.LongType(),
        "float": T.DoubleType(),
        "str": T.StringType(),
        "bool": T.BooleanType(),
    }[kind]


def spark_schema(table: str) -> Any:
    """Return the Spark SQL schema of a fleet table (the same columns as the polars one)."""
    from pyspark.sql import types as T

    return T.StructType(
        [T.StructField(name, _spark_type(kind), True) for name, kind in TABLE_SCHEMAS[table]]
    )


class SparkEngine:
    """Analyze applications as Spark tasks (one per application) and write tables with Spark."""

    name = "spark"

    def __init__(self, master: str | None, layout: OutputLayout) -> None:
        try:
            import pyspark
            from pyspark.sql import SparkSession
        except ImportError:
            raise UsageError(
                "--engine spark needs pyspark",
                hint="pip install 'spark-explain-analyze[spark]' or run through spark-submit",
            ) from None
        self.layout = layout
        self.master = master or "local[*]"
        local = self.master.startswith("local")
        # Local masters run executors from this machine's Python; local-cluster workers also
        # need SPARK_HOME to find Spark's jars (the pyspark package holds them).
        if local:
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
        builder = SparkSession.builder.appName("spark-explain-batch").master(self.master)
        if local:
            builder = builder.config("spark.driver.host", "127.0.0.1")
        self.spark = builder.getOrCreate()
        self._package_dir = Path(tempfile.mkdtemp(prefix="spark-explain-batch-"))
        self.zip_name: str | None = build_package_zip(self._package_dir).name
        self.spark.sparkContext.addPyFile(str(self._package_dir / self.zip_name))

    def run(
        self,
        jobs: Sequence[AnyJob],
        settings: JobSettings,
        on_result: Callable[[JobResult], None],
        on_progress: Callable[[int], None],
    ) -> None:
        """Run the per-application step on executors, one task per application.

        Executors that see the output directory (a probe file in the run's staging directory
        tells them) put the reports there; otherwise the text comes back. Either way the driver,
        in `on_result`, writes or moves them in place: nothing reaches the reports unlocked.
        """
        if not jobs:
            return
        staging = make_staging_dir(self.layout.root)
        probe = staging / ".probe"
        try:
            probe.write_text("", encoding="utf-8")
        except OSError as error:
            raise cannot_write(probe, error) from None
        from pyspark.cloudpickle import register_pickle_by_value

        register_pickle_by_value(_bootstrap)  # type: ignore[no-untyped-call]
        sc = self.spark.sparkContext
        group = f"spark-explain-{uuid.uuid4().hex}"
        sc.setJobGroup(group, "spark-explain batch")
        done = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(group, on_progress, done), daemon=True)
        watcher.start()
        try:
            function = _bootstrap.partition_function(
                self.zip_name, str(staging.resolve()), str(probe.resolve())
            )
            items = [(job, settings) for job in jobs]
            results: list[JobResult] = (
                sc.parallelize(items, numSlices=len(items)).mapPartitions(function).collect()
            )
            done.set()
            watcher.join()
            for result in results:
                on_result(result)
            on_progress(len(results))
        finally:
            done.set()
            watcher.join()
            shutil.rmtree(staging, ignore_errors=True)

    def _watch(self, group: str, on_progress: Callable[[int], None], done: threading.Event) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        while not done.wait(0.5):
            n = 0
            for job_id in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job_id)
                for stage_id in info.stageIds if info else ():
                    stage = tracker.getStageInfo(stage_id)
                    n += stage.numCompletedTasks if stage else 0
            on_progress(n)

    def write_tables(self, tables: dict[str, pl.DataFrame], tables_dir: Path) -> None:
        """Write each fleet table as a Parquet directory `tables_dir/<name>.parquet` with Spark."""
        try:
            tables_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise cannot_write(tables_dir, error) from None
        for table, table_frame in tables.items():
            target = tables_dir / f"{table}.parquet"
            if target.is_file():  # written by the local engine before
                target.unlink()
            frame = self.spark.createDataFrame(table_frame.rows(), schema=spark_schema(table))
            try:
                frame.coalesce(1).write.mode("overwrite").parquet(target.resolve().as_uri())
            except Exception as error:  # Py4JJavaError: the Java IOException's first line
                raise cannot_write(target, error) from None

    def close(self) -> None:
        """Stop the Spark session and remove the shipped zip."""
        self.spark.stop()
        shutil.rmtree(self._package_dir, ignore_errors=True)
