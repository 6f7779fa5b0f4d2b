"""Measure what each way of starting a worker process costs, for reading and for batch.

The analyzer starts worker processes in two places: reading a large local log
(`eventlog/workers.py`: forked children that inherit the decoders) and a batch run's local engine
(`batch/local_engine.py`: fresh interpreters that limit their memory before importing anything).
This measures, median of `--repeat` tries, in wall time:

* fork: `run_in_workers` over two trivial items with two forked workers, the decoders imported;
* a bare `python -P` that imports nothing, for scale;
* spawn for reading: a fresh `python -P` importing what a reading worker runs
  (`analyzer.replay.parallel`);
* spawn for batch: a fresh `python -P` importing what a batch worker runs (`analyzer.batch.worker`);
* the batch driver's heap when it starts its workers (what a forked batch worker would inherit and
  count against its `RLIMIT_DATA`), and whether polars' thread pool runs in it by then.

usage:
  python bench/worker_start.py [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _median_s(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _spawn(module: str) -> None:
    subprocess.run([sys.executable, "-P", "-c", f"import {module}"], check=True, cwd=REPO, env=None)


def _identity(item: int) -> int:
    return item


def _driver_state() -> dict[str, float]:
    """The heap of a batch driver about to start its workers, in a fresh interpreter."""
    code = (
        "import analyzer.batch.runner, analyzer.batch.local_engine, threading, resource;"
        "import polars as pl; pl.DataFrame({'a': [1, 2]}).sort('a');"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, threading.active_count(),"
        " open('/proc/self/status').read().split('Threads:')[1].split()[0])"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], check=True, cwd=REPO, capture_output=True, text=True
    ).stdout.split()
    return {"driver_max_rss_mb": int(out[0]) / 1024, "driver_os_threads": int(out[2])}


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    import analyzer.replay.parallel  # noqa: F401  # what a forked reading worker inherits
    from analyzer.eventlog.workers import run_in_workers

    figures: dict[str, float] = {
        "fork_two_workers_s": _median_s(
            lambda: list(run_in_workers(_identity, [1, 2], 2)), args.repeat
        ),
        "spawn_bare_python_s": _median_s(lambda: _spawn("sys"), args.repeat),
        "spawn_reading_worker_s": _median_s(
            lambda: _spawn("analyzer.replay.parallel"), args.repeat
        ),
        "spawn_batch_worker_s": _median_s(lambda: _spawn("analyzer.batch.worker"), args.repeat),
        **_driver_state(),
    }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for name, value in figures.items():
        print(f"{name:24} {value:.3f}")


if __name__ == "__main__":
    main()
