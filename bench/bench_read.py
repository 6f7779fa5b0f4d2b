"""Measure how fast event logs are read: decompress and split lines, parse JSON, decode events.

usage:
  python bench/bench_read.py LOG [LOG ...]           measure existing logs
  python bench/bench_read.py --make 1000 [--zstd] [--framed]
      build bench/logs/nds_q72_<N>mb from the public NDS q72 log (with --zstd a zstd copy, with
      --framed copies in Spark's lz4, snappy and lzf framings), then measure them

Each measurement runs in its own process so that its peak RSS is its own. Throughput is
decompressed JSON bytes per second (MB = 10^6 bytes), of wall time and of the process's CPU time;
the CPU figure is the steadier one on a shared machine. `--repeat N` keeps the fastest of N runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

import cramjam
import orjson
import zstandard

from analyzer.eventlog.lines import ReadStats, iter_lines
from analyzer.eventlog.source import resolve_log

BENCH_DIR = Path(__file__).resolve().parent
LOGS_DIR = BENCH_DIR / "logs"
SHARED = BENCH_DIR.parent.parent / "shared"  # ../shared beside the repository
SCALE_TOOL = SHARED / "tools" / "scale_eventlog.py"
SEED_LOG = SHARED / "eventlogs" / "public" / "nds_q72_dataproc_2_2.zstd"
MODES = ("lines", "orjson", "events")


def _peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: str, mode: str) -> dict[str, object]:
    """Read the whole log at `path` once in `mode` and return the timings."""
    source = resolve_log(path)
    stats = ReadStats()
    start_s = time.perf_counter()
    start_cpu_s = time.process_time()
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
    cpu_s = time.process_time() - start_cpu_s
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
        "cpu_seconds": round(cpu_s, 2),
        "mb_per_cpu_s": round(n_bytes / 1e6 / cpu_s, 1),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def _has_typed_events() -> bool:
    try:
        from analyzer.eventlog import events
    except ImportError:
        return False
    return hasattr(events, "read_events")


def _write_framed(plain: Path, codec: str) -> Path:
    """Write a copy of `plain` in the framing Spark's `codec` writes, 32 KiB blocks as Spark's."""
    import lzf

    out = plain.with_name(f"{plain.name}.{codec}")
    if out.exists():
        return out
    block_bytes = 32 << 10
    with plain.open("rb") as src, out.open("wb") as dst:
        if codec == "snappy":
            dst.write(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
        while block := src.read(block_bytes):
            if codec == "lz4":
                packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
                # token 0x25: LZ4 method, level 5 (32 KiB); the reader does not check the checksum.
                dst.write(b"LZ4Block" + struct.pack("<Biii", 0x25, len(packed), len(block), 0))
                dst.write(packed)
            elif codec == "snappy":
                packed = bytes(cramjam.snappy.compress_raw(block))
                dst.write(struct.pack(">i", len(packed)) + packed)
            else:
                for at in range(0, len(block), 0xFFFF):
                    piece = block[at : at + 0xFFFF]
                    packed = lzf.compress(piece) or b""
                    if packed and len(packed) < len(piece):
                        dst.write(b"ZV\x01" + struct.pack(">HH", len(packed), len(piece)) + packed)
                    else:
                        dst.write(b"ZV\x00" + struct.pack(">H", len(piece)) + piece)
        if codec == "lz4":
            dst.write(b"LZ4Block" + struct.pack("<Biii", 0x15, 0, 0, 0))
    return out


def make_logs(size_mb: int, with_zstd: bool, with_framed: bool) -> list[Path]:
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
    if with_framed:
        out += [_write_framed(plain, codec) for codec in ("lz4", "snappy", "lzf")]
    return out


def _measure_in_child(log: Path, mode: str) -> dict[str, object]:
    """Run one measurement in a fresh interpreter and return its result."""
    cmd = [sys.executable, os.path.abspath(__file__), str(log), "--only", mode]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{log} ({mode}): {done.stderr.strip().splitlines()[-1]}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    """Parse arguments, run each measurement in a fresh process, print a table and JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("logs", nargs="*", help="event logs to measure")
    parser.add_argument("--make", type=int, metavar="SIZE_MB", help="build a log of this size")
    parser.add_argument("--zstd", action="store_true", help="with --make, also a zstd copy")
    parser.add_argument(
        "--framed", action="store_true", help="with --make, also lz4, snappy and lzf copies"
    )
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    parser.add_argument("--repeat", type=int, default=1, help="keep the fastest of N runs")
    parser.add_argument("--only", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(measure(args.logs[0], args.only)))
        return
    logs = [Path(p) for p in args.logs]
    if args.make:
        logs += make_logs(args.make, args.zstd, args.framed)
    if not logs:
        parser.error("give a log or --make SIZE_MB")
    modes = [m for m in MODES if m != "events" or _has_typed_events()]
    results = []
    for log in logs:
        for mode in modes:
            result = min(
                (_measure_in_child(log, mode) for _ in range(max(1, args.repeat))),
                key=lambda r: float(str(r["cpu_seconds"])),
            )
            results.append(result)
            print(
                f"{Path(str(result['path'])).name:32} {result['codec']:6} {mode:7}"
                f" {result['decompressed_mb']:>9} MB {result['seconds']:>7} s"
                f" {result['mb_per_s']:>8} MB/s {result['cpu_seconds']:>7} cpu-s"
                f" {result['mb_per_cpu_s']:>8} MB/cpu-s  peak RSS {result['peak_rss_mb']} MB",
                flush=True,
            )
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
