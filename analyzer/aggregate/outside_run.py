"""Intervals a log times outside the application's run: a sign of a log joined from two runs,
or written by clocks that disagree, whose times and shares are then unreliable.

An interval (a SQL execution, job, stage attempt, streaming query run or executor) counts when
its start or end is more than `OUTSIDE_RUN_SLACK_MS` before the application's start or after its
logged end. A log
without an end event (still being written, or cut) has no known end: its last task's end stands
in for it, and events after that are no sign of anything, so it is checked against its start
only. An executor also counts when it was added more than the slack after the first launch of
a task on it: no executor runs a task before it exists, whatever the log's end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from analyzer.model.application import Application

OUTSIDE_RUN_SLACK_MS = 60_000
"""How far outside the run an interval may be logged before it counts: a minute, past the
seconds a busy driver's events lag."""

OutsideRun = tuple[tuple[str, int, int], ...]
"""Per kind (`SQL execution`, `job`, `stage attempt`, `streaming query run`, `executor`) with
any: how many intervals
and the farthest distance from the run, in ms."""


def outside_run(app: Application, executor_spans: Mapping[str, tuple[int, int]]) -> OutsideRun:
    """Count, per kind, the intervals timed outside the application's run (see the module
    docstring); `executor_spans` are each executor's first task launch and last task finish."""
    start_ms = app.start_ms
    if start_ms is None:
        return ()
    inverted = any(kind == "application" for kind, _ in app.inverted_intervals)
    end_ms = app.end_ms if app.completed and not inverted else None
    kinds: tuple[tuple[str, Iterable[tuple[int | None, int | None, int | None]]], ...] = (
        ("SQL execution", ((e.start_ms, e.end_ms, None) for e in app.executions)),
        ("job", ((j.submission_ms, j.completion_ms, None) for j in app.jobs)),
        ("stage attempt", ((s.submission_ms, s.completion_ms, None) for s in app.stages)),
        # A streaming query's times are its own events' (their timestamps, not the listener
        # bus's): a run logged outside the application's is from another application or clock.
        ("streaming query run", ((q.start_ms, q.end_ms, None) for q in app.streaming)),
        (
            "executor",
            (
                (e.added_ms, e.removed_ms, executor_spans.get(e.executor_id, (None, None))[0])
                for e in app.executors
            ),
        ),
    )
    out: list[tuple[str, int, int]] = []
    for kind, intervals in kinds:
        count = farthest_ms = 0
        for first_ms, last_ms, first_task_ms in intervals:
            away_ms = max(
                _away_ms(first_ms, start_ms, end_ms),
                _away_ms(last_ms, start_ms, end_ms),
                _added_late_ms(first_ms, first_task_ms),
            )
            if away_ms:
                count += 1
                farthest_ms = max(farthest_ms, away_ms)
        if count:
            out.append((kind, count, farthest_ms))
    return tuple(out)


def _away_ms(time_ms: int | None, start_ms: int, end_ms: int | None) -> int:
    """How far a time lies outside the run past the slack, else 0."""
    if time_ms is None:
        return 0
    if time_ms < start_ms - OUTSIDE_RUN_SLACK_MS:
        return start_ms - time_ms
    if end_ms is not None and time_ms > end_ms + OUTSIDE_RUN_SLACK_MS:
        return time_ms - end_ms
    return 0


def _added_late_ms(added_ms: int | None, first_task_ms: int | None) -> int:
    """How long after its first task's launch an executor was logged as added, past the slack,
    else 0."""
    if added_ms is None or first_task_ms is None:
        return 0
    late_ms = added_ms - first_task_ms
    return late_ms if late_ms > OUTSIDE_RUN_SLACK_MS else 0
