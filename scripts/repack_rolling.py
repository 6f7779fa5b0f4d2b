"""Lay a single-file event log out as Spark's rolling layout, its event lines unchanged.

Spark's `RollingEventLogFilesWriter` starts a new `events_N_<appId>` file when the uncompressed
bytes written plus the next event would pass `spark.eventLog.rolling.maxFileSize`. This script
does the same to an existing log: it reads the log's lines, cuts them into parts of at most
`--part-mb` uncompressed MiB at line boundaries, and writes each part zstd-compressed into
`eventlog_v2_<appId>/`, with the `appstatus_<appId>` marker of a finished application. The
concatenated decompressed parts are byte for byte the original log.

It keeps a public log larger than a repository file should be as several smaller files:

    .venv/bin/python scripts/repack_rolling.py nds_q88_photon_db_13_3.zstd \
        sample_eventlogs/public --part-mb 48
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import zstandard

_APP_ID = re.compile(rb'"Event":"SparkListenerApplicationStart".*?"App ID":"([^"]+)"')
_SAFE_APP_ID = re.compile(r"[A-Za-z0-9_.-]{1,200}")


def _lines(path: Path) -> Iterator[bytes]:
    """Yield the decompressed lines of a plain or zstd log, each with its newline."""
    with path.open("rb") as raw:
        if path.suffix == ".zstd":
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            rest = b""
            while chunk := reader.read(1 << 22):
                rest += chunk
                *whole, rest = rest.split(b"\n")
                for line in whole:
                    yield line + b"\n"
            if rest:
                yield rest
        else:
            yield from raw


def repack(source: Path, out_dir: Path, part_bytes: int) -> Path:
    """Write `source` as a rolling log under `out_dir` and return the new directory."""
    parts: list[list[bytes]] = [[]]
    size = 0
    app_id = ""
    digest = hashlib.sha256()
    for line in _lines(source):
        digest.update(line)
        if not app_id and (m := _APP_ID.search(line)):
            app_id = m.group(1).decode()
        if size and size + len(line) > part_bytes:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line)
    if not _SAFE_APP_ID.fullmatch(app_id):
        raise SystemExit(f"{source}: no usable application id in its ApplicationStart event")
    target = out_dir / f"eventlog_v2_{app_id}"
    target.mkdir(parents=True, exist_ok=False)
    (target / f"appstatus_{app_id}").touch()
    compressor = zstandard.ZstdCompressor(level=19)
    for number, lines in enumerate(parts, start=1):
        (target / f"events_{number}_{app_id}.zstd").write_bytes(
            compressor.compress(b"".join(lines))
        )
    print(f"{source} -> {target}: {len(parts)} parts, sha256 of the events {digest.hexdigest()}")
    return target


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and repack one log."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("log", type=Path, help="a single-file event log (plain or .zstd)")
    parser.add_argument("out_dir", type=Path, help="where the eventlog_v2_<appId>/ goes")
    parser.add_argument("--part-mb", type=int, default=48, help="uncompressed MiB per part")
    args = parser.parse_args(argv)
    repack(args.log, args.out_dir, args.part_mb << 20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
