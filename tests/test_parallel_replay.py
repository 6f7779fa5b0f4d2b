"""The replay in worker processes gives exactly what the sequential replay gives.

Every real log is cut into pieces far smaller than in use (16 KiB), so that lines, frames and
segments cross piece boundaries everywhere; the result, or the error, must be the same as the
sequential replay's, field for field.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventlog_samples import BAD, PUBLIC, SAMPLES

from analyzer.errors import AnalyzerError, Strictness
from analyzer.eventlog.pieces import plan_pieces
from analyzer.eventlog.source import resolve_log
from analyzer.eventlog.workers import WorkerError, can_fork, run_in_workers, workers_started
from analyzer.replay.parallel import Replayed, replay_log

pytestmark = pytest.mark.skipif(not can_fork(), reason="worker processes need Linux")

PIECE_BYTES = 16 << 10


def _logs() -> list[Path]:
    logs: list[Path] = []
    for root in (SAMPLES, PUBLIC, BAD):
        if root.is_dir():
            logs += sorted(
                p
                for p in root.iterdir()
                if not p.name.startswith(".") and p.suffix not in (".md", ".txt")
            )
    return logs


def _state(replayed: Replayed) -> dict[str, Any]:
    """Everything the replay hands on, comparable with `==`."""
    built = replayed.built
    decode = replayed.decode_stats
    return {
        "application": built.application.model_dump_json(),
        "frozen": built.frozen,
        "stage_accumulators": built.stage_accumulators,
        "tasks": built.tasks.take(),
        "read_stats": replayed.read_stats,
        "n_events": decode.n_events,
        "unknown_event_types": list(decode.unknown_event_types.items()),
        "unknown_fields": list(decode.unknown_fields.items()),
    }


def _outcome(path: Path, strictness: Strictness, n_workers: int) -> tuple[int, Any]:
    try:
        replayed = replay_log(
            resolve_log(str(path)), strictness, n_workers=n_workers, piece_bytes=PIECE_BYTES
        )
    except AnalyzerError as error:
        return 0, f"{type(error).__name__}: {error}"
    return replayed.n_processes, _state(replayed)


@pytest.mark.parametrize("strictness", [Strictness.STRICT, Strictness.LENIENT])
@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name)
def test_parallel_replay_is_exact(path: Path, strictness: Strictness) -> None:
    _, expected = _outcome(path, strictness, n_workers=0)
    n_processes, got = _outcome(path, strictness, n_workers=2)
    assert got == expected
    clean = isinstance(expected, dict) and not (
        expected["read_stats"].truncated_tail
        or expected["read_stats"].n_malformed_skipped
        or expected["read_stats"].incomplete_block_path
    )
    if not clean or path.suffix not in ("", ".zstd"):
        return
    pieces = plan_pieces(resolve_log(str(path)), PIECE_BYTES)
    if pieces is not None and len(pieces) > 1:
        # A clean plain or zstd log is read by the workers, not sent back to the sequential
        # replay.
        assert n_processes == 2


def test_small_logs_stay_in_one_process() -> None:
    log = next(p for p in _logs() if p.name == "local-1795320224872")
    assert replay_log(resolve_log(str(log))).n_processes == 1


def _some_log() -> Path:
    """A clean log read in several pieces by the workers."""
    return next(p for p in _logs() if p.name == "local-1795320224872")


def test_work_while_reading_runs_beside_the_workers_once_they_are_forked() -> None:
    seen: list[tuple[str, int]] = []

    def note() -> None:
        seen.append((threading.current_thread().name, len(_children())))

    log = resolve_log(str(_some_log()))
    replayed = replay_log(log, n_workers=2, piece_bytes=PIECE_BYTES, while_reading=note)
    assert replayed.n_processes == 2
    ((name, n_children),) = seen
    assert name == "while-reading" and n_children >= 1
    assert _state(replayed) == _state(replay_log(log, n_workers=0))
    # One process alone has no idle time to give: the work is the caller's to do then.
    seen.clear()
    replay_log(log, n_workers=0, while_reading=note)
    assert seen == []


def test_work_while_reading_that_fails_leaves_the_replay_whole() -> None:
    def broken() -> None:
        raise ImportError("no such module")

    log = resolve_log(str(_some_log()))
    replayed = replay_log(log, n_workers=2, piece_bytes=PIECE_BYTES, while_reading=broken)
    assert replayed.n_processes == 2
    assert _state(replayed) == _state(replay_log(log, n_workers=0))
    assert [t.name for t in threading.enumerate() if t.name == "while-reading"] == []


def _square(x: int) -> int:
    return x * x


def _fail_on_seven(x: int) -> int:
    if x == 7:
        raise ValueError("seven")
    return x


def test_workers_give_results_in_order() -> None:
    items = list(range(40))
    assert list(run_in_workers(_square, items, 2)) == [(x, x * x) for x in items]


def _sized(n_bytes: int) -> bytes:
    return bytes([n_bytes % 251]) * n_bytes


def test_results_of_every_size_arrive_whole() -> None:
    # Empty, a few bytes, and results many times a pipe's buffer, which arrive over many reads.
    sizes = [0, 1, 7, 3 << 20, 100, 5 << 20, 0, 64 << 10]
    assert [len(r) for _, r in run_in_workers(_sized, sizes, 2)] == sizes
    assert all(r == _sized(n) for n, r in run_in_workers(_sized, sizes, 3))


def _children() -> set[int]:
    """This process's live child processes (other tests of the session may have some: a Spark
    JVM, a browser), from /proc."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def test_a_failing_worker_is_an_error_and_leaves_no_process() -> None:
    before = _children()
    with pytest.raises(WorkerError, match="ValueError: seven"):
        list(run_in_workers(_fail_on_seven, list(range(20)), 2))
    assert _children() <= before


def test_closing_early_leaves_no_process() -> None:
    before = _children()
    results = run_in_workers(_square, list(range(100)), 2)
    assert next(results) == (0, 0)
    assert _children() - before  # the workers run
    results.close()
    assert _children() <= before


def _pid_of(_: int) -> int:
    return os.getpid()


def test_started_workers_work_while_the_caller_does() -> None:
    """`workers_started` has the workers on the items before the caller asks for results, and
    ends them with its block."""
    before = _children()
    with workers_started(_pid_of, [1, 2, 3], 1) as results:
        assert _children() - before
        pids = {pid for _, pid in results}
    assert len(pids) == 1 and os.getpid() not in pids
    assert _children() <= before


def test_started_workers_that_fail_leave_no_process() -> None:
    before = _children()
    with (
        workers_started(_fail_on_seven, list(range(10)), 2) as results,
        pytest.raises(WorkerError, match="ValueError: seven"),
    ):
        list(results)
    assert _children() <= before


EDITED_SAMPLE = "local-1795320224872"
"""The sample the tests of edited logs change: several stages, task events in the thousands."""


def _sample() -> Path:
    return next(p for p in _logs() if p.name == EDITED_SAMPLE)


def _sample_lines() -> list[bytes]:
    return _sample().read_bytes().splitlines()


def _both_ways(
    tmp_path: Path, name: str, lines: list[bytes], strictness: Strictness
) -> tuple[int, Any, Any]:
    """Write `lines` as a log and replay it in one process and with two workers: the number
    of processes the second used, and both outcomes."""
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    _, expected = _outcome(path, strictness, n_workers=0)
    n_processes, got = _outcome(path, strictness, n_workers=2)
    return n_processes, expected, got


def _last_event_key(line: bytes, last: str) -> bytes:
    """`line` with a second `"Event"` key, `last`, after its others."""
    return line[:-1] + b',"Event":' + last.encode() + b"}"


def test_task_lines_whose_last_event_key_names_another_event(tmp_path: Path) -> None:
    # Workers decode a line written as a task event at once, with its last `Event` key; one
    # whose last key names another event (escaped or not), or that does not decode, must be
    # what the sequential replay makes of it.
    lines = _sample_lines()
    ends = [i for i, x in enumerate(lines) if x.startswith(b'{"Event":"SparkListenerTaskEnd"')]
    starts = [i for i, x in enumerate(lines) if x.startswith(b'{"Event":"SparkListenerTaskStart"')]
    assert len(ends) > 10 and len(starts) > 10
    changed = list(lines)
    changed[ends[3]] = _last_event_key(lines[ends[3]], '"SparkListenerX"')
    changed[ends[5]] = _last_event_key(lines[ends[5]], '"SparkListener\\u0054askEnd"')
    changed[ends[7]] = _last_event_key(lines[ends[7]], '"SparkListenerTaskStart"')
    changed[starts[4]] = _last_event_key(lines[starts[4]], '"SparkListenerTaskEnd"')
    changed[starts[6]] = _last_event_key(lines[starts[6]], '"SparkListenerTaskStart"')
    n_processes, expected, got = _both_ways(tmp_path, "last-event-key", changed, Strictness.LENIENT)
    assert got == expected
    assert n_processes == 2
    assert isinstance(expected, dict) and expected["unknown_event_types"] == [("SparkListenerX", 1)]


def test_a_sql_metric_updated_with_a_number(tmp_path: Path) -> None:
    # Workers leave number updates (internal metrics, as Spark writes them) out; a SQL metric's
    # update written as a number counts in the sequential replay, so such a log is read by it.
    lines = _sample_lines()
    changed = list(lines)
    n_changed = 0
    for i, line in enumerate(lines):
        if line.startswith(b'{"Event":"SparkListenerTaskEnd"'):
            event = orjson.loads(line)
            for acc in event["Task Info"]["Accumulables"]:
                if isinstance(acc.get("Update"), str) and acc["Update"].isdigit():
                    acc["Update"] = int(acc["Update"]) + 1
                    n_changed += 1
            changed[i] = orjson.dumps(event)
    assert n_changed
    n_processes, expected, got = _both_ways(
        tmp_path, "number-sql-update", changed, Strictness.STRICT
    )
    assert got == expected
    assert n_processes == 1
    _, original = _outcome(_sample(), Strictness.STRICT, n_workers=0)
    assert isinstance(expected, dict) and expected["frozen"] != original["frozen"]
