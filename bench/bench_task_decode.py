"""Measure ways of turning task-end lines into typed columns, side by side, on the same lines.

The task ends are most of a large log, and their decoding is most of a report's time on logs of
big plans or giant stages. Every candidate starts from the same task-end lines (pre-filtered
from a plain log, as a worker's piece would be) and ends with the same things: the task columns
and every accumulator update as (row, accumulator id, value) columns. Each candidate's CPU time
is the best of `--repeat` runs in this process (one core; polars may use more, its wall time is
shown too), and the candidates' outputs are checked to agree with the recorder's.

- `recorder`: what the replay does (msgspec `TaskEnd` structs, `TaskRecorder.end` per event,
  the segment totals and SQL updates, the columns);
- `msgspec structs`: decoding into `TaskEnd` structs alone (the floor of the current path);
- `msgspec batch`: the lines joined into one JSON array and decoded by one call into a list of
  structs, columns by `attrgetter`, updates gathered in one comprehension;
- `msgspec lean`: a struct declaring only the columns' fields and the accumulables' id and
  update (the rest skipped: a lighter field skip);
- `polars ndjson`: `polars.read_ndjson` with an explicit schema (the accumulables a list of
  structs), exploded into update columns, the string updates cast to integers.

Then a whole reading worker: `replay.parallel.read_piece` over every piece of the log (line
splitting, event names, task starts and the other events' lines included), CPU time per task
end, and the pickling of its results (what a worker sends back), best of `--repeat`.

usage:
  python bench/bench_task_decode.py LOG [--limit N] [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import io
import pickle
import resource
import sys
import time
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analyzer.eventlog.pieces import PIECE_BYTES, plan_pieces  # noqa: E402
from analyzer.eventlog.source import resolve_log  # noqa: E402
from analyzer.eventlog.task_events import TaskEnd  # noqa: E402
from analyzer.replay.parallel import read_piece  # noqa: E402
from analyzer.replay.task_columns import TaskRecorder  # noqa: E402

TASK_END = b'{"Event":"SparkListenerTaskEnd"'


def task_end_lines(log: Path, limit: int) -> list[bytes]:
    """The task-end lines of a plain log (at most `limit`)."""
    lines: list[bytes] = []
    with log.open("rb") as handle:
        for line in handle:
            if line.startswith(TASK_END):
                lines.append(line)
                if len(lines) >= limit:
                    break
    return lines


def run_recorder(lines: list[bytes]) -> tuple[int, int]:
    """The current path: decode, record, take the chunk; (rows, SQL updates)."""
    decode = msgspec.json.Decoder(TaskEnd).decode
    recorder = TaskRecorder(keep_number_updates=False)
    for line in lines:
        recorder.end(decode(line))
    segment = recorder.close_segment()
    chunk = recorder.take_chunk()
    n_updates = sum(len(v[0]) for u in segment.sql.values() for v in u.accumulators.values())
    return chunk.n_rows, n_updates


def run_structs(lines: list[bytes]) -> tuple[int, int]:
    """Decoding alone."""
    decode = msgspec.json.Decoder(TaskEnd).decode
    events = [decode(line) for line in lines]
    return len(events), -1


def _columns_and_updates(events: list[Any]) -> tuple[int, int]:
    infos = [e.info for e in events]
    columns = {
        name: list(map(attrgetter(name), infos))
        for name in ("task_id", "index", "attempt", "launch_ms", "finish_ms")
    }
    rows: list[int] = []
    ids: list[int] = []
    values: list[str] = []
    for row, info in enumerate(infos):
        for acc in info.accumulables:
            if type(acc.update) is str:
                rows.append(row)
                ids.append(acc.id)
                values.append(acc.update)
    parsed = [int(v) for v in values]
    return len(columns["task_id"]), len(parsed)


def run_batch(lines: list[bytes]) -> tuple[int, int]:
    """One decode call per batch of lines joined as a JSON array."""
    decode = msgspec.json.Decoder(list[TaskEnd]).decode
    events: list[Any] = []
    for start in range(0, len(lines), 4096):
        events += decode(b"[" + b",".join(lines[start : start + 4096]) + b"]")
    return _columns_and_updates(events)


class _LeanUpdate(msgspec.Struct, gc=False):
    id: int = msgspec.field(name="ID")
    update: Any = msgspec.field(name="Update", default=None)


class _LeanInfo(msgspec.Struct, gc=False):
    task_id: int = msgspec.field(name="Task ID")
    index: int = msgspec.field(name="Index", default=-1)
    attempt: int = msgspec.field(name="Attempt", default=0)
    launch_ms: int = msgspec.field(name="Launch Time", default=0)
    finish_ms: int = msgspec.field(name="Finish Time", default=0)
    accumulables: list[_LeanUpdate] = msgspec.field(name="Accumulables", default_factory=list)


class _LeanEnd(msgspec.Struct, gc=False):
    stage_id: int = msgspec.field(name="Stage ID")
    info: _LeanInfo | None = msgspec.field(name="Task Info", default=None)


def run_lean(lines: list[bytes]) -> tuple[int, int]:
    """A struct with only the fields the columns need."""
    decode = msgspec.json.Decoder(_LeanEnd).decode
    return _columns_and_updates([decode(line) for line in lines])


def run_polars(lines: list[bytes]) -> tuple[int, int]:
    """polars' NDJSON reader with an explicit schema, then the updates exploded."""
    import polars as pl

    update = pl.Struct({"ID": pl.Int64, "Update": pl.String})
    info = pl.Struct(
        {
            "Task ID": pl.Int64,
            "Index": pl.Int64,
            "Attempt": pl.Int64,
            "Launch Time": pl.Int64,
            "Finish Time": pl.Int64,
            "Accumulables": pl.List(update),
        }
    )
    schema = {"Stage ID": pl.Int64, "Task Info": info}
    frame = pl.read_ndjson(io.BytesIO(b"".join(lines)), schema=schema)
    tasks = frame.unnest("Task Info").with_row_index("row")
    updates = (
        tasks.select("row", "Accumulables")
        .explode("Accumulables")
        .unnest("Accumulables")
        .filter(pl.col("Update").is_not_null())
    )
    # A JSON number read into a String column comes out as its text: only SQL metrics (strings
    # in the log) should count, which this reader can no longer tell apart.
    values = updates.with_columns(pl.col("Update").cast(pl.Int64, strict=False))
    return tasks.height, values.height


CANDIDATES: dict[str, Callable[[list[bytes]], tuple[int, int]]] = {
    "recorder (current)": run_recorder,
    "msgspec structs (floor)": run_structs,
    "msgspec batch": run_batch,
    "msgspec lean": run_lean,
    "polars ndjson": run_polars,
}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_worker(log: Path, repeat: int) -> None:
    """A reading worker over every piece of the log, and the pickling of what it sends back."""
    source = resolve_log(str(log))
    pieces = plan_pieces(source, PIECE_BYTES) or []
    best_read = best_pickle = float("inf")
    n_rows = n_bytes = 0
    collecting = gc.isenabled()
    gc.disable()  # as in the workers (`replay_log`)
    try:
        for _ in range(repeat):
            read_s = pickle_s = 0.0
            n_rows = n_bytes = 0
            for piece in pieces:
                began = _cpu_s()
                result = read_piece(source, piece)
                done = _cpu_s()
                n_bytes += len(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
                pickle_s += _cpu_s() - done
                read_s += done - began
                if result.chunk is None:
                    print(f"piece {piece}: {result.anomaly}")
                    return
                n_rows += result.chunk.n_rows
            best_read, best_pickle = min(best_read, read_s), min(best_pickle, pickle_s)
    finally:
        if collecting:
            gc.enable()
    print(
        f"{'read_piece (a worker)':26} CPU {best_read:6.2f} s "
        f"({best_read / max(n_rows, 1) * 1e6:5.1f} µs/task)  {len(pieces)} pieces, "
        f"{n_rows:,} task ends; pickling {best_pickle:.2f} s, {n_bytes / 1e6:.1f} MB"
    )


def main() -> None:
    """Measure every candidate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("log", type=Path)
    parser.add_argument("--limit", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lines = task_end_lines(args.log, args.limit)
    n_bytes = sum(map(len, lines))
    print(f"{len(lines):,} task-end lines, {n_bytes / 1e6:.0f} MB")
    for name, fn in CANDIDATES.items():
        best_cpu = best_wall = float("inf")
        got: tuple[int, int] = (0, 0)
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_SELF)
            began = time.perf_counter()
            got = fn(lines)
            wall = time.perf_counter() - began
            after = resource.getrusage(resource.RUSAGE_SELF)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
        per_task_us = best_cpu / len(lines) * 1e6
        print(
            f"{name:26} CPU {best_cpu:6.2f} s ({per_task_us:5.1f} µs/task)  wall {best_wall:6.2f} s"
            f"  rows {got[0]:,}  updates {got[1]:,}"
        )
    measure_worker(args.log, args.repeat)


if __name__ == "__main__":
    main()
