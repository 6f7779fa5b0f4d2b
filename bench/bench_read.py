"""Measure how fast event logs are read: decompress and split lines, parse JSON, decode events.

usage:
  python bench/bench_read.py LOG [LOG ...]           measure existing logs
  python bench/bench_read.py --make 1000 [--zstd]    build bench/logs/nds_q72_<N>mb (and .zstd)
                                                     from the public NDS q72 log, then measure them

Each measurement runs in its own process so that its peak RSS is its own. Throughput is
decompressed JSON bytes per second of wall time (MB = 10^6 bytes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import orjson
import zstandard

from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log

BENCH_DIR = Path(__file__).resolve().parent
LOGS_DIR = BENCH_DIR / "logs"
SCALE_TOOL = Path("/work/shared/tools/scale_eventlog.py")
SEED_LOG = Path("/work/shared/eventlogs/public/nds_q72_dataproc_2_2.zstd")
MODES = ("lines", "orjson", "events")


def _peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: str, mode: str) -> dict[str, object]:
    """Read the whole log at `path` once in `mode` and return the timings."""
    source = resolve_log(path)
    stats = ReadStats()
    start_s = time.perf_counter()
    n_items = 0
    if mode == "lines":
        for _ in iter_lines(source, stats):
            n_items += 1
    elif mode == "orjson":
        loads = orjson.loads
        for line in iter_lines(source, stats):
            loads(line.data)
            n_items += 1
    elif mode == "events":
        from analyzer.eventlog import events

        reader = events.read_events(source)
        for _ in reader:
            n_items += 1
        stats = getattr(reader, "read_stats", stats)
    else:
        raise SystemExit(f"unknown mode {mode}")
    elapsed_s = time.perf_counter() - start_s
    n_bytes = stats.bytes_decompressed
    return {
        "path": path,
        "mode": mode,
        "codec": source.codec,
        "size_on_disk_mb": round(source.size_bytes / 1e6, 1),
        "decompressed_mb": round(n_bytes / 1e6, 1),
        "n_items": n_items,
        "seconds": round(elapsed_s, 2),
        "mb_per_s": round(n_bytes / 1e6 / elapsed_s, 1),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def _has_typed_events() -> bool:
    try:
        from analyzer.eventlog import events
    except ImportError:
        return False
    return hasattr(events, "read_events")


def make_logs(size_mb: int, with_zstd: bool) -> list[Path]:
    """Build a plain log of about `size_mb` MB from the NDS q72 log (and a zstd copy)."""
    LOGS_DIR.mkdir(parents=True, exist_ok=True)
    seed = LOGS_DIR / "nds_q72_dataproc_2_2"  # no extension: plain JSON lines
    if not seed.exists():
        with SEED_LOG.open("rb") as src, seed.open("wb") as dst:
            reader = zstandard.ZstdDecompressor().stream_reader(src, read_across_frames=True)
            while chunk := reader.read(1 << 20):
                dst.write(chunk)
    copies = max(1, math.ceil(size_mb * 1e6 / seed.stat().st_size))
    plain = LOGS_DIR / f"nds_q72_{size_mb}mb"
    if not plain.exists():
        cmd = [sys.executable, str(SCALE_TOOL), str(seed), str(plain), "--copies", str(copies)]
        subprocess.run(cmd, check=True)
    out = [plain]
    if with_zstd:
        # Level 1 and a frame per 100 KiB, like Spark's writer (a frame closed on each flush).
        packed = plain.with_name(plain.name + ".zstd")
        if not packed.exists():
            cctx = zstandard.ZstdCompressor(level=1)
            with plain.open("rb") as src, packed.open("wb") as dst:
                while chunk := src.read(100 << 10):
                    dst.write(cctx.compress(chunk))
        out.append(packed)
    return out


def main() -> None:
    """Parse arguments, run each measurement in a fresh process, print a table and JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("logs", nargs="*", help="event logs to measure")
    parser.add_argument("--make", type=int, metavar="SIZE_MB", help="build a log of this size")
    parser.add_argument("--zstd", action="store_true", help="with --make, also a zstd copy")
    parser.add_argument("--only", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(measure(args.logs[0], args.only)))
        return
    logs = [Path(p) for p in args.logs]
    if args.make:
        logs += make_logs(args.make, args.zstd)
    if not logs:
        parser.error("give a log or --make SIZE_MB")
    modes = [m for m in MODES if m != "events" or _has_typed_events()]
    results = []
    for log in logs:
        for mode in modes:
            cmd = [sys.executable, os.path.abspath(__file__), str(log), "--only", mode]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{log} ({mode}): {done.stderr.strip().splitlines()[-1]}")
            result = json.loads(done.stdout)
            results.append(result)
            print(
                f"{Path(str(result['path'])).name:32} {result['codec']:5} {mode:7}"
                f" {result['decompressed_mb']:>9} MB {result['seconds']:>7} s"
                f" {result['mb_per_s']:>8} MB/s  peak RSS {result['peak_rss_mb']} MB",
                flush=True,
            )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
