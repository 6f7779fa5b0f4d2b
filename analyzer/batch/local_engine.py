"""The local batch engine: worker processes on this machine, one application at a time each.

Each worker is a child process (`analyzer.batch.worker_process`) fed jobs through a pipe. It dies
with this process, limits its own memory, and writes an application's reports into the run's
staging directory (`OUTDIR/.staging-<run>/`); its result comes back through a pipe and the
driver moves the reports in place. The driver enforces the time limit by killing
a worker whose job runs too long; a worker that dies takes only its own job with it. A worker
lives and ends as the reading workers do (`eventlog/processes.py`: it dies with the driver, and
the driver kills and reaps it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path

import polars as pl

import analyzer
from analyzer.batch.jobs import AnyJob, FailureKind, JobResult, JobSettings
from analyzer.batch.limits import available_cores
from analyzer.batch.outputs import cannot_write, make_staging_dir
from analyzer.eventlog.processes import end_process

TASKS_PER_WORKER = 8
"""A worker process is replaced after this many applications, so a big log's memory is returned."""
STARTUP_GRACE_S = 120
"""With a time limit, a worker must also have started the job within this long (an import that
hangs on a dead network mount, say)."""
STOP_GRACE_S = 10.0
"""How long a worker told to stop, or dying, may take to exit by itself before it is killed."""
STDERR_TAIL_BYTES = 4096
"""What is kept of a dead worker's standard error to tell why it died."""
_MEMORY_SIGNS = ("memory allocation of", "MemoryError", "Cannot allocate memory", "std::bad_alloc")


def _worker_env() -> dict[str, str]:
    """The environment of a worker: this one, with this analyzer package first on the path."""
    env = dict(os.environ)
    root = str(Path(analyzer.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class _Worker:
    """One worker process, its two pipes and the job it is running."""

    def __init__(self, max_memory_mb: int) -> None:
        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        # Standard output and error go to an unlinked file: read only to tell why a worker died.
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115  # closed in close()
        args = [str(job_r), str(result_w), str(os.getpid()), str(max_memory_mb)]
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "analyzer.batch.worker_process", *args],
                stdin=subprocess.DEVNULL,
                stdout=self.stderr,
                stderr=self.stderr,
                pass_fds=(job_r, result_w),
                env=_worker_env(),
            )
        finally:
            os.close(job_r)
            os.close(result_w)
        self.jobs = Connection(job_w, readable=False)
        self.results = Connection(result_r, writable=False)
        self.job: AnyJob | None = None
        self.deadline: float | None = None
        self.n_done = 0

    def start(self, job: AnyJob, settings: JobSettings, staging_dir: Path) -> bool:
        """Send a job; False if the worker is gone already. Its clock starts when it says so."""
        self.job = job
        self.deadline = None
        if settings.timeout_s:
            self.deadline = time.monotonic() + STARTUP_GRACE_S + settings.timeout_s
        try:
            self.jobs.send((job, settings, str(staging_dir)))
        except OSError:
            return False
        return True

    def end(self, grace_s: float = 0.0) -> int:
        """End the process (`processes.end_process`: killed after `grace_s` seconds) and return
        its exit status, which `proc` then holds too."""
        if self.proc.returncode is None:
            returncode = end_process(self.proc.pid, grace_s)
            self.proc.returncode = returncode if returncode is not None else 0
        return self.proc.returncode

    def kill(self) -> None:
        """Kill the process and release its pipes."""
        self.end()
        self.close()

    def stop(self) -> None:
        """Ask an idle worker to exit, and reap it."""
        with contextlib.suppress(OSError):
            self.jobs.send(None)
        self.end(STOP_GRACE_S)
        self.close()

    def close(self) -> None:
        self.jobs.close()
        self.results.close()
        self.stderr.close()

    def death(self, settings: JobSettings) -> tuple[FailureKind, str]:
        """Reap a worker that closed its pipe mid-job and tell why it died."""
        returncode = self.end(STOP_GRACE_S)
        self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, self.stderr.tell() - STDERR_TAIL_BYTES))
        tail = self.stderr.read().decode("utf-8", "replace")
        if any(sign in tail for sign in _MEMORY_SIGNS):
            return "limit", settings.memory_error()
        if returncode < 0:
            how = f"killed by {signal.Signals(-returncode).name}"
        else:
            how = f"exit status {returncode}"
        last = next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")
        detail = f": {last[:200]}" if last else ""
        if returncode == -signal.SIGKILL and not last:
            detail = " (out of memory?)"
        return "retry", f"internal error: the worker process died ({how}){detail}"


class LocalEngine:
    """Analyze applications in local worker processes and write tables with polars."""

    name = "local"

    def __init__(self, workers: int | None, output_root: Path) -> None:
        self.workers = max(1, workers or available_cores())
        self.output_root = output_root
        """The output directory, where each run's staging directory is made."""

    def run(
        self,
        jobs: Sequence[AnyJob],
        settings: JobSettings,
        on_result: Callable[[JobResult], None],
        on_progress: Callable[[int], None],
    ) -> None:
        """Run every job in worker processes, calling `on_result` here as each one ends.

        `on_progress` gets the number of jobs done. If `on_result` raises, the workers are killed
        and the exception goes on. The workers write the reports into a staging directory in the
        output directory (so they move in place without a copy), removed at the end.
        """
        if not jobs:
            return
        staging = make_staging_dir(self.output_root)
        pending = deque(jobs)
        idle: list[_Worker] = []
        busy: list[_Worker] = []
        n_done = 0
        try:
            while pending or busy:
                while pending and len(busy) < self.workers:
                    worker = idle.pop() if idle else _Worker(settings.max_memory_mb)
                    job = pending.popleft()
                    busy.append(worker)
                    if not worker.start(job, settings, staging):
                        break  # it died already: its pipe is readable (EOF), seen below
                for worker, result in self._wait(busy, settings):
                    busy.remove(worker)
                    if worker.proc.returncode is None and worker.n_done < TASKS_PER_WORKER:
                        idle.append(worker)
                    elif worker.proc.returncode is None:
                        worker.stop()
                    n_done += 1
                    on_result(result)
                    on_progress(n_done)
        finally:
            for worker in busy:
                worker.kill()
            for worker in idle:
                worker.stop()
            shutil.rmtree(staging, ignore_errors=True)

    @staticmethod
    def _wait(busy: list[_Worker], settings: JobSettings) -> list[tuple[_Worker, JobResult]]:
        """Wait until a busy worker answers, dies or runs out of time; return what ended."""
        deadlines = [w.deadline for w in busy if w.deadline is not None]
        timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        ready = set(wait([w.results for w in busy], timeout))
        ended: list[tuple[_Worker, JobResult]] = []
        now = time.monotonic()
        for worker in busy:
            job = worker.job
            assert job is not None
            if worker.results in ready:
                try:
                    result: JobResult | str = worker.results.recv()
                except (EOFError, OSError):
                    kind, error = worker.death(settings)
                    worker.close()
                    ended.append((worker, JobResult(job.log_name, error=error, failure=kind)))
                    continue
                if not isinstance(result, JobResult):  # STARTED
                    if settings.timeout_s:
                        worker.deadline = now + settings.timeout_s
                    continue
                worker.n_done += 1
                if result.failure == "limit":  # the worker exits after a memory failure
                    worker.end(STOP_GRACE_S)
                    worker.close()
                ended.append((worker, result))
            elif worker.deadline is not None and now >= worker.deadline:
                worker.kill()
                error = settings.time_error()
                ended.append((worker, JobResult(job.log_name, error=error, failure="limit")))
        return ended

    def write_tables(self, tables: dict[str, pl.DataFrame], tables_dir: Path) -> None:
        """Write each fleet table as one Parquet file `tables_dir/<name>.parquet`, atomically."""
        try:
            tables_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise cannot_write(tables_dir, error) from None
        for table, frame in tables.items():
            target = tables_dir / f"{table}.parquet"
            tmp = tables_dir / f".{table}.parquet.tmp"
            try:
                frame.write_parquet(tmp)
                if target.is_dir():  # written by the Spark engine before
                    shutil.rmtree(target)
                os.replace(tmp, target)
            except (OSError, pl.exceptions.PolarsError) as error:
                tmp.unlink(missing_ok=True)
                raise cannot_write(target, error) from None

    def close(self) -> None:
        """Nothing to release: each run's workers end with it."""
