"""Builders of hostile event logs for the safety tests: bombs in every codec, made from scratch.

Every builder streams its input in pieces, so a 256 MiB bomb costs the test a few MiB.
"""

from __future__ import annotations

import gzip
import io
import os
import resource
import struct
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import cramjam
import orjson
import zstandard
from eventlog_builder import event_line, log_start

MIB = 1 << 20
PIECE_BYTES = 1 * MIB

LOG_START = event_line(log_start())


def newlines(total_bytes: int) -> Iterator[bytes]:
    """`total_bytes` of `\\n`, in pieces."""
    piece = b"\n" * PIECE_BYTES
    for start in range(0, total_bytes, PIECE_BYTES):
        yield piece[: min(PIECE_BYTES, total_bytes - start)]


def one_long_line(total_bytes: int) -> Iterator[bytes]:
    """One JSON event line of about `total_bytes`: a LogStart with a huge version string."""
    yield b'{"Event":"SparkListenerLogStart","Spark Version":"'
    piece = b"x" * PIECE_BYTES
    for start in range(0, total_bytes, PIECE_BYTES):
        yield piece[: min(PIECE_BYTES, total_bytes - start)]
    yield b'"}\n'


def blocks_of(pieces: Iterable[bytes], block_bytes: int) -> Iterator[bytes]:
    """Regroup a stream of pieces into blocks of exactly `block_bytes` (the last may be shorter)."""
    buffer = bytearray()
    for piece in pieces:
        buffer += piece
        while len(buffer) >= block_bytes:
            yield bytes(buffer[:block_bytes])
            del buffer[:block_bytes]
    if buffer:
        yield bytes(buffer)


def zstd_of(pieces: Iterable[bytes], level: int = 3) -> bytes:
    """One zstd frame holding the pieces, written through a streaming compressor."""
    out = io.BytesIO()
    cctx = zstandard.ZstdCompressor(level=level)
    with cctx.stream_writer(out, closefd=False) as writer:
        for piece in pieces:
            writer.write(piece)
    return out.getvalue()


def gzip_of(pieces: Iterable[bytes]) -> bytes:
    """One gzip member holding the pieces."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=6) as writer:
        for piece in pieces:
            writer.write(piece)
    return out.getvalue()


def lz4_block_header(token: int, compressed_len: int, decompressed_len: int) -> bytes:
    """An lz4-java `LZ4Block` header (the checksum is not checked by readers of event logs)."""
    return b"LZ4Block" + struct.pack("<Biii", token, compressed_len, decompressed_len, 0)


def lz4_of(pieces: Iterable[bytes], block_bytes: int = 32 * MIB) -> bytes:
    """lz4-java `LZ4BlockOutputStream` framing with blocks of `block_bytes` (a power of two)."""
    level = block_bytes.bit_length() - 1 - 10
    out = bytearray()
    for block in blocks_of(pieces, block_bytes):
        packed = bytes(cramjam.lz4.compress_block(block, store_size=False))
        out += lz4_block_header(0x20 | level, len(packed), len(block)) + packed
    out += lz4_block_header(0x10 | level, 0, 0)
    return bytes(out)


SNAPPY_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def snappy_of(pieces: Iterable[bytes], block_bytes: int = 32 * MIB) -> bytes:
    """xerial `SnappyOutputStream` framing with chunks of `block_bytes`."""
    out = bytearray(SNAPPY_HEADER)
    for block in blocks_of(pieces, block_bytes):
        packed = bytes(cramjam.snappy.compress_raw(block))
        out += struct.pack(">i", len(packed)) + packed
    return bytes(out)


def lzf_of(pieces: Iterable[bytes]) -> bytes:
    """ning `LZFOutputStream` framing: `ZV` chunks of at most 64 KiB."""
    import lzf

    out = bytearray()
    for block in blocks_of(pieces, 0xFFFF):
        packed = lzf.compress(block)
        if packed and len(packed) < len(block):
            out += b"ZV\x01" + struct.pack(">HH", len(packed), len(block)) + packed
        else:
            out += b"ZV\x00" + struct.pack(">H", len(block)) + block
    return bytes(out)


def varint(value: int) -> bytes:
    """Snappy's little-endian base-128 length prefix."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def deep_plan_line(depth: int, execution_id: int = 99) -> bytes:
    """A SQLExecutionStart line whose plan is a chain of `depth` Projects over a Scan."""
    node = b'{"nodeName":"Scan","simpleString":"Scan","children":[],"metadata":{},"metrics":[]}'
    head = b'{"nodeName":"Project","simpleString":"Project","children":['
    tail = b'],"metadata":{},"metrics":[]}'
    plan = head * depth + node + tail * depth
    return (
        b'{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",'
        b'"executionId":%d,"description":"deep","details":"","physicalPlanDescription":"",'
        b'"sparkPlanInfo":' % execution_id + plan + b',"time":1}'
    )


@dataclass(frozen=True)
class Run:
    """What a CLI run in a child process did."""

    returncode: int
    stdout: str
    stderr: str
    peak_rss_mb: float


ADDRESS_SPACE_LIMIT_BYTES = 3 << 30
"""A safety net for the child: a regression fails with MemoryError instead of exhausting RAM."""


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT_BYTES, ADDRESS_SPACE_LIMIT_BYTES))


def run_cli(args: Sequence[str], cwd: Path | None = None, timeout_s: float = 300) -> Run:
    """Run `spark-explain ARGS` in a child process and return its output and peak RSS."""
    cmd = [sys.executable, "-c", "from analyzer.cli import main; main()", *args]
    with (
        open(os.devnull, "rb") as stdin,
        _temp_output() as out,
        _temp_output() as err,
    ):
        proc = subprocess.Popen(
            cmd,
            stdin=stdin,
            stdout=out,
            stderr=err,
            cwd=cwd,
            preexec_fn=_limit_address_space,
        )
        try:
            _, status, usage = _wait(proc, timeout_s)
        finally:
            if proc.returncode is None and proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        return Run(
            returncode=os.waitstatus_to_exitcode(status),
            stdout=out.read().decode("utf-8", errors="replace"),
            stderr=err.read().decode("utf-8", errors="replace"),
            peak_rss_mb=usage.ru_maxrss / 1024,  # Linux reports KiB
        )


def _temp_output() -> io.BufferedRandom:
    import tempfile

    return tempfile.TemporaryFile()


def _wait(
    proc: subprocess.Popen[bytes], timeout_s: float
) -> tuple[int, int, resource.struct_rusage]:
    """Wait for `proc` with `wait4`, which gives the child's own resource usage."""
    import signal

    def on_alarm(signum: int, frame: object) -> None:
        proc.kill()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        pid, status, usage = os.wait4(proc.pid, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return pid, status, usage


def _sample_lines(sample: Path) -> list[bytes]:
    """The decompressed non-blank lines of a zstd sample log."""
    with sample.open("rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    return [line for line in data.split(b"\n") if line.strip()]


WIDE_EXECUTION_ID = 1000


def write_wide_plan_log(sample: Path, target: Path, n_children: int) -> Path:
    """Write `sample` (a real zstd log) plain to `target`, with one more SQL execution before its
    ApplicationEnd: a `Union` of `n_children` `Range` leaves, each with its own row count
    metric, all set by a driver update, running the whole application (100,000 children make a
    20 MB log)."""
    lines = _sample_lines(sample)
    end = next(i for i, line in enumerate(lines) if b"SparkListenerApplicationEnd" in line[:60])
    start = next(i for i, line in enumerate(lines) if b"ApplicationStart" in line[:60])
    # The slowest execution, so that the page details it first.
    time_ms = orjson.loads(lines[start])["Timestamp"] + 1
    end_ms = orjson.loads(lines[end])["Timestamp"] - 1
    first_id = 10_000_000
    with target.open("wb") as out:
        out.writelines(line + b"\n" for line in lines[:end])
        out.write(
            b'{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",'
            b'"executionId":%d,"description":"wide union","details":"",'
            b'"physicalPlanDescription":"== Physical Plan ==\\nUnion\\n",'
            b'"sparkPlanInfo":{"nodeName":"Union","simpleString":"Union","metadata":{},'
            b'"metrics":[],"children":[' % WIDE_EXECUTION_ID
        )
        for i in range(n_children):
            out.write(
                b'%s{"nodeName":"Range","simpleString":"Range (0, %d, step=1, splits=2)",'
                b'"children":[],"metadata":{},"metrics":[{"name":"number of output rows",'
                b'"accumulatorId":%d,"metricType":"sum"}]}'
                % (b"," if i else b"", i + 1, first_id + i)
            )
        out.write(b']},"time":%d,"modifiedConfigs":{}}\n' % time_ms)
        out.write(
            b'{"Event":"org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates",'
            b'"executionId":%d,"accumUpdates":[' % WIDE_EXECUTION_ID
        )
        out.write(b",".join(b"[%d,%d]" % (first_id + i, i + 1) for i in range(n_children)))
        out.write(b"]}\n")
        out.write(
            b'{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd",'
            b'"executionId":%d,"time":%d}\n' % (WIDE_EXECUTION_ID, end_ms)
        )
        out.writelines(line + b"\n" for line in lines[end:])
    return target


def write_many_executors_log(sample: Path, target: Path, n_executors: int) -> Path:
    """Write `sample` (a real zstd log) plain to `target` with `n_executors` more ExecutorAdded
    events after its first one, each a copy of it with its own id and host (10^6 make about
    180 MB)."""
    lines = _sample_lines(sample)
    at = next(i for i, line in enumerate(lines) if b"SparkListenerExecutorAdded" in line[:60])
    added = orjson.loads(lines[at])
    with target.open("wb") as out:
        out.writelines(line + b"\n" for line in lines[: at + 1])
        for i in range(n_executors):
            added["Executor ID"] = str(i + 1)
            added["Executor Info"]["Host"] = f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"
            out.write(orjson.dumps(added) + b"\n")
        out.writelines(line + b"\n" for line in lines[at + 1 :])
    return target
