"""Make a long streaming application out of a real streaming sample log, for benchmarks.

The micro-batches of the sample's one streaming query run (every event between its
`QueryStartedEvent` and its `QueryTerminatedEvent`) are repeated COPIES times, as one longer run
of the same query: each copy with fresh execution, job, stage, task, RDD and accumulator ids
(`../shared/tools/scale_eventlog.py` shifts those), timestamps moved on by the span of the
copied batches rounded up to whole trigger intervals (so that the copies' batches start on the
trigger's timer as the sample's do), and batch ids continued (the progress events' `batchId`
and `timestamp`, the `batch = N` line of each execution's and job's description, the jobs'
`streaming.sql.batchId`). The application's start, its environment and executors come once,
before; the query's end and the application's end once, after. Spark's History Server replays
the result.

usage: python bench/scale_stream_log.py INPUT OUTPUT --copies K [--trigger-ms MS]
  INPUT   an uncompressed event log of one streaming query run (e.g. `zstd -dc` of the
          `sea-stream-keeps-up` sample)
  --trigger-ms  the query's trigger interval (default: the most common gap between its
          batches' start times, to 100 ms)
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import importlib.util
import itertools
import json
import re
from pathlib import Path
from typing import Any

SCALE_TOOL = (
    Path(__file__).resolve().parent.parent.parent / "shared" / "tools" / "scale_eventlog.py"
)
STARTED = "StreamingQueryListener$QueryStartedEvent"
PROGRESS = "StreamingQueryListener$QueryProgressEvent"
TERMINATED = "StreamingQueryListener$QueryTerminatedEvent"
_BATCH_LINE = re.compile(r"(\nbatch = )(\d+)$")
ID_SPACES = ("exec", "job", "stage", "task", "rdd", "acc")


def _scale_tool() -> Any:
    """The shared log-scaling tool's module (its id scan and shift)."""
    spec = importlib.util.spec_from_file_location("scale_eventlog", SCALE_TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _short(event: dict[str, Any]) -> str:
    return str(event["Event"]).rsplit(".", 1)[-1]


def _shift_iso(text: str, delta_ms: int) -> str:
    """Move an ISO 8601 UTC time (`2026-11-25T15:55:43.758Z`) on by `delta_ms`."""
    when = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ") + dt.timedelta(milliseconds=delta_ms)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _iso_ms(text: str) -> int:
    """An ISO 8601 UTC time as epoch milliseconds."""
    when = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _common_gap_ms(starts: list[int]) -> int:
    """The most common gap between consecutive batch starts, to 100 ms."""
    gaps = [round((b - a) / 100) * 100 for a, b in itertools.pairwise(starts)]
    counted = collections.Counter(g for g in gaps if g > 0)
    return counted.most_common(1)[0][0] if counted else 1000


def _next_batch(text: str, n_batches: int, k: int) -> str:
    """Continue the `batch = N` line Spark ends a micro-batch's description with."""
    return _BATCH_LINE.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + k * n_batches}", text)


def _renumber(event: dict[str, Any], n_batches: int, k: int, delta_ms: int) -> dict[str, Any]:
    """Continue the batch ids and times Spark's streaming writes outside the shared tool's keys."""
    kind = _short(event)
    if kind == PROGRESS:
        progress = dict(event["progress"])
        progress["batchId"] = progress["batchId"] + k * n_batches
        progress["timestamp"] = _shift_iso(progress["timestamp"], delta_ms)
        return dict(event, progress=progress)
    if kind == "SparkListenerSQLExecutionStart":
        return dict(event, description=_next_batch(event.get("description", ""), n_batches, k))
    if kind == "SparkListenerJobStart" and isinstance(event.get("Properties"), dict):
        props = dict(event["Properties"])
        if "spark.job.description" in props:
            props["spark.job.description"] = _next_batch(
                props["spark.job.description"], n_batches, k
            )
        if "streaming.sql.batchId" in props:
            props["streaming.sql.batchId"] = str(
                int(props["streaming.sql.batchId"]) + k * n_batches
            )
        return dict(event, Properties=props)
    return event


def main() -> None:
    """Write the scaled log."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--copies", type=int, required=True)
    parser.add_argument("--trigger-ms", type=int, default=None)
    args = parser.parse_args()
    tool = _scale_tool()
    events = [json.loads(line) for line in args.input.open("rb") if line.strip()]
    kinds = [_short(e) for e in events]
    if kinds.count(STARTED) != 1 or kinds.count(TERMINATED) != 1:
        raise SystemExit(f"{args.input}: not one streaming query run (started/terminated once)")
    first, last = kinds.index(STARTED) + 1, kinds.index(TERMINATED)
    head, body, tail = events[:first], events[first:last], events[last:]
    n_batches = kinds.count(PROGRESS)
    maxima: dict[str, int] = {}
    tool.scan(body, maxima)
    times = [e.get("time") or e.get("Submission Time") or e.get("Completion Time") for e in body]
    stamps = [t for t in times if isinstance(t, int)]
    starts = [_iso_ms(e["progress"]["timestamp"]) for e in body if _short(e) == PROGRESS]
    trigger_ms = args.trigger_ms or _common_gap_ms(starts)
    # The copied batches' span and one interval more, rounded up to whole intervals.
    span_ms = -(-(max(stamps) - min(stamps) + trigger_ms) // trigger_ms) * trigger_ms
    with args.output.open("wb") as out:

        def write(event: dict[str, Any]) -> None:
            out.write(json.dumps(event, separators=(",", ":")).encode() + b"\n")

        for event in head:
            write(event)
        for k in range(args.copies):
            off = {space: k * (maxima.get(space, 0) + 1) for space in ID_SPACES}
            for event in body:
                if k:
                    event = _renumber(
                        tool.shift(event, off, k * span_ms), n_batches, k, k * span_ms
                    )
                write(event)
        zero = dict.fromkeys(ID_SPACES, 0)
        for event in tail:
            moved = tool.shift(event, zero, (args.copies - 1) * span_ms)
            if "Timestamp" in moved and isinstance(moved["Timestamp"], int):
                moved["Timestamp"] += (args.copies - 1) * span_ms
            write(moved)


if __name__ == "__main__":
    main()
