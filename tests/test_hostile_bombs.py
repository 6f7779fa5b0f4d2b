"""Decompression bombs in every codec: memory stays bounded and the answer is one line.

Each bomb is built here from scratch: 256 MiB of newlines, or one 300 MiB line, in each of
Spark's framings, and blocks whose header claims a huge decompressed length. `spark-explain
report` and `spark-explain apps` run in a child process (with an address-space limit as a safety
net) and their peak RSS must stay under `PEAK_RSS_LIMIT_MB`, reading at most a normal report or
one line on stderr, never a traceback.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from eventlog_builder import application_start, event_line
from hostile_inputs import (
    LOG_START,
    MIB,
    SNAPPY_HEADER,
    gzip_of,
    lz4_block_header,
    lz4_of,
    lzf_of,
    newlines,
    one_long_line,
    run_cli,
    snappy_of,
    varint,
    zstd_of,
)

pytestmark = pytest.mark.slow  # 2.5 GiB compressed into bombs, each read in a child process

PEAK_RSS_LIMIT_MB = 400
"""An interpreter with polars loaded takes about 100 MB; a bounded read adds tens of MB."""

NEWLINE_BOMB_BYTES = 256 * MIB
LONG_LINE_BYTES = 300 * MIB


BOMBS: dict[str, Callable[[], bytes]] = {
    "newlines.zstd": lambda: zstd_of(newlines(NEWLINE_BOMB_BYTES)),
    "long-line.zstd": lambda: zstd_of(one_long_line(LONG_LINE_BYTES)),
    "event-then-newlines.zstd": lambda: zstd_of([LOG_START, *newlines(NEWLINE_BOMB_BYTES)]),
    "newlines.lz4": lambda: lz4_of(newlines(NEWLINE_BOMB_BYTES)),
    "long-line.lz4": lambda: lz4_of(one_long_line(LONG_LINE_BYTES)),
    "newlines.lzf": lambda: lzf_of(newlines(NEWLINE_BOMB_BYTES)),
    "newlines.snappy": lambda: snappy_of(newlines(NEWLINE_BOMB_BYTES)),
    "long-line.snappy": lambda: snappy_of(one_long_line(LONG_LINE_BYTES)),
    "newlines.gz": lambda: gzip_of(newlines(NEWLINE_BOMB_BYTES)),
    "long-line.gz": lambda: gzip_of(one_long_line(LONG_LINE_BYTES)),
    # Headers that claim a huge decompressed block: refused before anything is allocated.
    "huge-block-claim.lz4": lambda: lz4_block_header(0x2F, 16, 0x7FFFFFFF) + bytes(16),
    "huge-chunk-claim.snappy": lambda: (
        SNAPPY_HEADER + struct.pack(">i", 16) + (varint(0xFFFFFFFF) + bytes(16))[:16]
    ),
}

EXPECTED_SLUG = {
    "newlines.zstd": "empty-log",
    "long-line.zstd": "line-too-long",
    "event-then-newlines.zstd": None,  # a log with one event and a blank tail: a report
    "newlines.lz4": "empty-log",
    "long-line.lz4": "line-too-long",
    "newlines.lzf": "empty-log",
    "newlines.snappy": "empty-log",
    "long-line.snappy": "line-too-long",
    "newlines.gz": "empty-log",
    "long-line.gz": "line-too-long",
    "huge-block-claim.lz4": "corrupt-data",
    "huge-chunk-claim.snappy": "corrupt-data",
}


@functools.cache
def _bomb_dir(root: Path) -> Path:
    out = root / "bombs"
    out.mkdir()
    for name, build in BOMBS.items():
        (out / name).write_bytes(build())
    return out


@pytest.fixture(scope="module")
def bomb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding every bomb (the files are a few KB to a few MB each)."""
    return _bomb_dir(tmp_path_factory.mktemp("hostile"))


def test_bombs_are_small_on_disk(bomb_dir: Path) -> None:
    sizes = {p.name: p.stat().st_size for p in bomb_dir.iterdir()}
    assert sizes["newlines.zstd"] < 64 << 10
    assert sizes["long-line.zstd"] < 64 << 10
    assert max(sizes.values()) < 32 * MIB


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_decompression_bomb_report_is_bounded(bomb_dir: Path, name: str) -> None:
    run = run_cli(["report", str(bomb_dir / name), "--format", "json"])
    assert "Traceback" not in run.stderr
    assert run.peak_rss_mb < PEAK_RSS_LIMIT_MB, (name, run.peak_rss_mb)
    slug = EXPECTED_SLUG[name]
    if slug is None:
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("{")
        return
    assert run.returncode == 1, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: {bomb_dir / name}")
    assert lines[0].endswith(f"[{slug}]")


def test_decompression_bomb_too_long_line_names_file_and_line(bomb_dir: Path) -> None:
    run = run_cli(["report", str(bomb_dir / "long-line.zstd")])
    assert run.stderr.startswith(f"error: {bomb_dir / 'long-line.zstd'}:1: ")
    assert "MiB" in run.stderr


def test_decompression_bomb_lenient_skips_the_too_long_line(tmp_path: Path) -> None:
    log = tmp_path / "app-1.zstd"
    app_start = event_line(application_start(None, "after", timestamp_ms=1))
    log.write_bytes(zstd_of([LOG_START, *one_long_line(LONG_LINE_BYTES), app_start]))
    run = run_cli(["report", str(log), "--lenient", "--format", "json"])
    assert run.returncode == 0, run.stderr
    assert run.peak_rss_mb < PEAK_RSS_LIMIT_MB
    assert '"n_malformed_skipped": 1' in run.stdout
    assert '"after"' in run.stdout


def test_decompression_bomb_apps_listing_is_bounded(bomb_dir: Path) -> None:
    run = run_cli(["apps", str(bomb_dir), "--json"])
    assert "Traceback" not in run.stderr
    assert run.returncode == 0, run.stderr
    assert run.peak_rss_mb < PEAK_RSS_LIMIT_MB, run.peak_rss_mb
    assert len(run.stdout) < 64 << 10  # no field of a listed app is megabytes long
    for name in BOMBS:
        assert name in run.stdout
