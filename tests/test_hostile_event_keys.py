"""One event name: a line with several `"Event"` keys names the event of the last one, as
Spark's reader (Jackson keeps a repeated key's last value) and our decoder for every other key
do; the fast path that slices the first key must agree with the parser."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import zstandard
from eventlog_samples import SAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer import api
from analyzer.eventlog.events import event_name, parsed_event_name

SOURCE = SAMPLES / "local-1795449716774.zstd"


def _lines() -> list[bytes]:
    if not SOURCE.exists():
        pytest.skip(f"sample log {SOURCE} not present")
    with SOURCE.open("rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()
    return [line for line in data.split(b"\n") if line.strip()]


def _with_keys(line: bytes, first: str, last: str) -> bytes:
    """`line` with `"Event":first` as its first key and `"Event":last` as its last one."""
    body = orjson.loads(line)
    body.pop("Event")
    inner = orjson.dumps(body)[1:-1]
    return b'{"Event":%s,%s,"Event":%s}' % (orjson.dumps(first), inner, orjson.dumps(last))


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _figures(path: Path, workers: int) -> tuple[object, ...]:
    analysis = api.analyze(path, read_workers=workers)
    app = analysis.application
    return (
        analysis.decode_stats.n_events,
        dict(analysis.decode_stats.unknown_event_types),
        [(e.execution_id, e.end_ms, e.status) for e in app.executions],
        [(j.job_id, j.status) for j in app.jobs],
        analysis.tasks.height,
    )


@pytest.mark.parametrize("workers", [0, 2])
def test_the_last_event_key_names_the_event(tmp_path: Path, workers: int) -> None:
    lines = _lines()
    original = _figures(_write(tmp_path / "original", lines), workers)
    ends = [i for i, line in enumerate(lines) if b"SQLExecutionEnd" in line[:80]]
    tasks = [
        i for i, line in enumerate(lines) if line.startswith(b'{"Event":"SparkListenerTaskEnd"')
    ]
    assert ends and tasks
    # The real name last: the same analysis as the original log.
    changed = list(lines)
    for i in ends:
        real = orjson.loads(lines[i])["Event"]
        changed[i] = _with_keys(lines[i], "SparkListenerUnpersistRDD", real)
    assert _figures(_write(tmp_path / "real-last", changed), workers) == original
    # The real name first, another last: the line is that other event (skipped, unused here),
    # the same as without the line.
    changed = list(lines)
    changed[tasks[0]] = _with_keys(lines[tasks[0]], "SparkListenerTaskEnd", "SparkListenerX")
    without = [line for i, line in enumerate(lines) if i != tasks[0]]
    skipped = _figures(_write(tmp_path / "other-last", changed), workers)
    expected = _figures(_write(tmp_path / "without", without), workers)
    assert skipped[0] == expected[0] and skipped[2:] == expected[2:]
    assert skipped[1] == {**expected[1], "SparkListenerX": 1}


_NAMES = st.sampled_from(
    ["SparkListenerTaskEnd", "SparkListenerJobEnd", "SparkListenerX", "Event", "a\\"]
)


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(_NAMES, min_size=1, max_size=4),
    values=st.lists(
        st.sampled_from(['"Event"', '"x\\"Event\\""', "1", '{"Event":"y"}']), max_size=3
    ),
)
def test_the_fast_path_agrees_with_the_parser(names: list[str], values: list[str]) -> None:
    keys = [b'"Event":' + orjson.dumps(name) for name in names]
    others = [b'"k%d":%s' % (i, v.encode()) for i, v in enumerate(values)]
    line = b"{" + b",".join([keys[0], *others, *keys[1:]]) + b"}"
    fast = event_name(line)
    # A name sliced with an escape in it is parsed again by its callers.
    assert (parsed_event_name(line) if fast and b"\\" in fast else fast) == parsed_event_name(line)
