"""Measure the sequential replay of event logs: wall and CPU time, and the RSS it leaves.

usage:
  python bench/bench_replay.py LOG [LOG ...] [--repeat N]

Each run is its own process, so that its RSS is its own; `--repeat N` keeps the fastest of N
runs (the CPU figure is the steadier one on a shared machine). RSS is read from
/proc/self/status after the imports and after the replay (`VmRSS`), with the peak (`VmHWM`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def _status_mb() -> dict[str, int]:
    out = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) // 1024
    return out


def _one(path: str) -> None:
    from analyzer import api  # noqa: F401  (counted with the imports, as `analyze` has them)
    from analyzer.errors import Strictness
    from analyzer.eventlog.source import resolve_log
    from analyzer.replay.parallel import replay_log

    imports_mb = _status_mb()["VmRSS"]
    source = resolve_log(path)
    wall, cpu = time.perf_counter(), time.process_time()
    replayed = replay_log(source, Strictness.STRICT, None, n_workers=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = _status_mb()  # with the replayed application still held
    del replayed
    print(
        json.dumps(
            {
                "wall_s": wall,
                "cpu_s": cpu,
                "rss_imports_mb": imports_mb,
                "rss_after_mb": after["VmRSS"],
                "peak_mb": after["VmHWM"],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args.logs[0])
        return
    for log in args.logs:
        runs = []
        for _ in range(args.repeat):
            done = subprocess.run(
                [sys.executable, __file__, "--one", log], check=True, capture_output=True, text=True
            )
            runs.append(json.loads(done.stdout))
        best = min(runs, key=lambda run: run["cpu_s"])
        print(
            f"{log}: replay {min(r['wall_s'] for r in runs):.2f} s wall, {best['cpu_s']:.2f} s CPU;"
            f" RSS {best['rss_imports_mb']} MB after imports, {best['rss_after_mb']} MB after"
            f" the replay (peak {best['peak_mb']} MB)"
        )


if __name__ == "__main__":
    main()
