"""Where an application's wall time went: SQL executions, work outside SQL, and critical paths.

The application's wall time is cut into what ran: SQL executions, jobs outside any execution
(RDD work, file listing), and the rest (the driver alone: planning, Python, waiting). Inside an
execution, the critical path is the chain of stages each of which the next one waited for: from
the stage that finished last, back through the parent that finished last, to the first.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from analyzer.aggregate.tables import TaskTable, last_task_ends_ms
from analyzer.model.application import Application, StageAttempt


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def covered_ms(intervals: Iterable[tuple[int, int]]) -> int:
    """Return the length of the union of half-open intervals (start, end), in ms.

    >>> covered_ms([(0, 10), (5, 20), (30, 40)])
    30
    """
    total = 0
    current_start: int | None = None
    current_end = 0
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if current_start is None or start > current_end:
            if current_start is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_start is not None:
        total += current_end - current_start
    return total


@dataclass(frozen=True, slots=True)
class StageSpan:
    """One stage (all its attempts) as a stretch of wall time."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    start_ms: int = field(metadata=_help("First attempt's submission, epoch ms."))
    end_ms: int = field(metadata=_help("Last attempt's completion, epoch ms."))
    n_attempts: int = field(metadata=_help("Attempts that ran."))
    between_attempts_ms: int = field(
        default=0,
        metadata=_help(
            "Of the span, the time in which none of its attempts ran (a retried stage waiting "
            "for the stage whose failure made it run again)."
        ),
    )

    @property
    def wall_ms(self) -> int:
        """Submission of the first attempt to completion of the last."""
        return self.end_ms - self.start_ms


def stage_spans(stages: Iterable[StageAttempt]) -> dict[int, StageSpan]:
    """Return each stage's span over its attempts that have both a submission and a completion."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    attempts: dict[int, list[tuple[int, int]]] = {}
    for s in stages:
        if s.submission_ms is None or s.completion_ms is None:
            continue
        first[s.stage_id] = min(first.get(s.stage_id, s.submission_ms), s.submission_ms)
        last[s.stage_id] = max(last.get(s.stage_id, s.completion_ms), s.completion_ms)
        attempts.setdefault(s.stage_id, []).append((s.submission_ms, s.completion_ms))
    return {
        sid: StageSpan(
            stage_id=sid,
            start_ms=first[sid],
            end_ms=last[sid],
            n_attempts=len(attempts[sid]),
            between_attempts_ms=(
                max(0, last[sid] - first[sid] - covered_ms(attempts[sid]))
                if len(attempts[sid]) > 1
                else 0
            ),
        )
        for sid in first
    }


_INDEX: list[tuple[tuple[StageAttempt, ...], array[int] | dict[int, list[int]]]] = []
"""The index of the last stage tuple seen (see `attempts_of`)."""


def attempts_of(stage_ids: set[int], stages: Sequence[StageAttempt]) -> list[StageAttempt]:
    """The attempts of `stages` whose stage is in `stage_ids`, in their order in `stages`.

    The reports ask this for every execution of an application, each time with all of its
    stages: scanning them all each time is quadratic (40 s for 3,600 executions), so an index
    of the last tuple seen is kept (a tuple cannot change; the index holds it, so its id is not
    reused). The model lists stage attempts by stage id, so the index is their stage ids as one
    array, searched by bisection (8 bytes a stage attempt: a stream of 100,000 micro-batches
    has as many); a tuple in another order gets the positions of each stage in a dict.
    """
    if not isinstance(stages, tuple):
        return [s for s in stages if s.stage_id in stage_ids]
    if _INDEX and _INDEX[0][0] is stages:
        index = _INDEX[0][1]
    else:
        index = _stage_index(stages)
        _INDEX[:] = [(stages, index)]
    positions: list[int] = []
    if isinstance(index, array):
        for sid in stage_ids:
            first = bisect_left(index, sid)
            positions.extend(range(first, bisect_right(index, sid, first)))
    else:
        for sid in stage_ids:
            positions.extend(index.get(sid, ()))
    positions.sort()
    return [stages[p] for p in positions]


def _stage_index(stages: tuple[StageAttempt, ...]) -> array[int] | dict[int, list[int]]:
    """The stage ids of `stages` as an array when they are in order, else each stage's
    positions."""
    try:
        ids = array("q", [s.stage_id for s in stages])
    except OverflowError:
        ids = None
    if ids is not None and all(a <= b for a, b in pairwise(ids)):
        return ids
    index: dict[int, list[int]] = {}
    for position, attempt in enumerate(stages):
        index.setdefault(attempt.stage_id, []).append(position)
    return index


SUBMIT_SLACK_MS = 100
"""A stage submitted this soon after another finished may have waited for it."""


def critical_path(
    stage_ids: Sequence[int], stages: Sequence[StageAttempt]
) -> tuple[StageSpan, ...]:
    """Return the chain of stages an execution waited for, first to last.

    Starts at the stage that finished last and steps to the parent (among the execution's
    stages) that finished last; stages that never ran are skipped. Under adaptive execution a
    stage's parents are often skipped copies of stages that ran in earlier jobs, under other
    ids: then the step goes to the stage that finished last before this one was submitted.
    """
    mine = attempts_of(set(stage_ids), stages)
    spans = stage_spans(mine)
    parents: dict[int, set[int]] = {}
    for s in mine:
        parents.setdefault(s.stage_id, set()).update(p for p in s.parent_ids if p in spans)
    if not spans:
        return ()
    current = max(spans.values(), key=lambda sp: (sp.end_ms, sp.stage_id))
    path = [current]
    seen = {current.stage_id}
    while True:
        candidates = [
            spans[p]
            for p in parents.get(current.stage_id, ())
            if p not in seen and spans[p].end_ms <= current.end_ms
        ]
        if not candidates:
            start = current.start_ms + SUBMIT_SLACK_MS
            candidates = [
                sp for sp in spans.values() if sp.stage_id not in seen and sp.end_ms <= start
            ]
        if not candidates:
            break
        current = max(candidates, key=lambda sp: (sp.end_ms, sp.stage_id))
        path.append(current)
        seen.add(current.stage_id)
    return tuple(reversed(path))


def stage_slack_ms(stage_ids: Sequence[int], stages: Sequence[StageAttempt]) -> dict[int, int]:
    """Per stage of an execution off its critical path: how much sooner it could have ended
    without the execution ending any sooner. A stage's consumers start when their last parent
    ends; the time they waited for their other parents after this one ended, along the way to
    the critical path, is its slack (the least over its consumers). Stages on the path have
    none and are left out, as are stages with no consumer among the execution's stages (under
    adaptive execution a consumer may read a skipped copy under another id): their slack cannot
    be told."""
    mine = attempts_of(set(stage_ids), stages)
    spans = stage_spans(mine)
    on_path = {sp.stage_id for sp in critical_path(stage_ids, stages)}
    children: dict[int, set[int]] = {}
    for attempt in mine:
        if attempt.stage_id not in spans:
            continue
        for parent in attempt.parent_ids:
            if parent in spans and parent != attempt.stage_id:
                children.setdefault(parent, set()).add(attempt.stage_id)
    # Consumers start after their parents end: latest start first, each stage's consumers
    # are settled before it (one that is not, in a malformed log, leaves it untold).
    slack: dict[int, int | None] = {}
    for sid in sorted(spans, key=lambda k: (spans[k].start_ms, k), reverse=True):
        if sid in on_path:
            slack[sid] = 0
            continue
        waits: list[int] = []
        for child in sorted(children.get(sid, ())):
            rest = slack.get(child)
            if rest is None:
                waits = []
                break
            waits.append(max(0, spans[child].start_ms - spans[sid].end_ms) + rest)
        slack[sid] = min(waits) if waits else None
    return {sid: v for sid, v in sorted(slack.items()) if sid not in on_path and v is not None}


def merged(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the union of half-open intervals as disjoint intervals, in order.

    >>> merged([(5, 20), (0, 10), (30, 40)])
    [(0, 20), (30, 40)]
    """
    out: list[tuple[int, int]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


@dataclass(frozen=True)
class AppTimeSpent:
    """The application's wall time, cut into SQL executions, other jobs and the driver alone,
    and the driver alone cut into before the first job, between jobs and after the last."""

    wall_ms: int | None = field(metadata=_help("Application start to end; None without both."))
    sql_ms: int = field(metadata=_help("Wall time covered by at least one SQL execution."))
    other_jobs_ms: int = field(
        metadata=_help("Wall time covered by jobs outside SQL executions, and by no execution.")
    )
    driver_ms: int | None = field(
        metadata=_help("Wall time in neither: the driver alone (planning, Python, waiting).")
    )
    startup_ms: int | None = field(
        default=None,
        metadata=_help(
            "Part of `driver_ms` before the first job or execution (start-up); None when no "
            "job ran (and so for `between_ms` and `after_ms`)."
        ),
    )
    between_ms: int | None = field(
        default=None,
        metadata=_help("Part of `driver_ms` between jobs (driver work, user code, idle session)."),
    )
    after_ms: int | None = field(
        default=None, metadata=_help("Part of `driver_ms` after the last job (the tail).")
    )
    longest_gap_ms: int = field(
        default=0, metadata=_help("The longest stretch between two jobs with nothing running.")
    )
    n_gaps: int = field(default=0, metadata=_help("Stretches between jobs with nothing running."))
    open_walls_ms: Mapping[int, int] = field(
        default_factory=dict,
        metadata=_help(
            "Per execution the log has no end event for (id): the wall time it is known to "
            "have run, from its start to its last activity (`last_activity_ms`), counted in "
            "`sql_ms` as such."
        ),
    )
    n_open_jobs: int = field(
        default=0,
        metadata=_help(
            "Jobs outside SQL with no end event, counted in `other_jobs_ms` up to their last "
            "activity."
        ),
    )


def last_activity_ms(
    start_ms: int,
    stage_ids: Iterable[int],
    stages: Sequence[StageAttempt],
    last_task_ms: Mapping[int, int],
    end_limit_ms: int | None,
    more_ms: Iterable[int | None] = (),
) -> int:
    """Return the last moment an execution or job without an end event is known to have run:
    the latest submission or completion of its stage attempts, finish (or launch) of their
    tasks (`last_task_ms`, by stage id) and the times in `more_ms` (its jobs'), not before
    `start_ms` nor after `end_limit_ms` (the application's end).

    >>> last_activity_ms(100, [1], (), {1: 900}, 800, [None, 400])
    800
    """
    ids = set(stage_ids)
    times = [start_ms, *(t for t in more_ms if t is not None)]
    times += [last_task_ms[sid] for sid in ids if sid in last_task_ms]
    for s in attempts_of(ids, stages):
        times += [t for t in (s.submission_ms, s.completion_ms) if t is not None]
    end = max(times)
    if end_limit_ms is not None:
        end = min(end, end_limit_ms)
    return max(end, start_ms)


def has_open_work(app: Application) -> bool:
    """Tell whether an execution, or a job outside SQL, started and has no end event."""
    return any(e.start_ms is not None and e.end_ms is None for e in app.executions) or any(
        j.execution_id is None and j.submission_ms is not None and j.completion_ms is None
        for j in app.jobs
    )


def last_task_ms_by_stage(tasks: TaskTable) -> dict[int, int]:
    """Per stage id, the latest finish (or launch, for a task with no end) of its tasks, ms."""
    return {int(sid): ms for sid, ms in last_task_ends_ms(tasks, "stage_id")}


def app_time_spent(app: Application, last_task_ms: Mapping[int, int] | None = None) -> AppTimeSpent:
    """Cut the application's wall time into SQL executions, other jobs and the rest, and the
    rest into start-up, time between jobs and the tail after the last job.

    An execution or a job the log has no end event for (a log cut short, or a lost end event)
    counts from its start to its last activity (`last_activity_ms`; `last_task_ms` is each
    stage's last task finish or launch), the time it is known to have run, rather than not at
    all.
    """
    last_task_ms = last_task_ms or {}
    jobs_by_id = {j.job_id: j for j in app.jobs}
    open_walls: dict[int, int] = {}
    sql = []
    for e in app.executions:
        if e.start_ms is None:
            continue
        end_ms = e.end_ms
        if end_ms is None:
            mine = [jobs_by_id[j] for j in e.job_ids if j in jobs_by_id]
            end_ms = last_activity_ms(
                e.start_ms,
                e.stage_ids,
                app.stages,
                last_task_ms,
                app.end_ms,
                [t for j in mine for t in (j.submission_ms, j.completion_ms)],
            )
            open_walls[e.execution_id] = end_ms - e.start_ms
        sql.append((e.start_ms, end_ms))
    jobs = []
    n_open_jobs = 0
    for j in app.jobs:
        if j.execution_id is not None or j.submission_ms is None:
            continue
        end_ms = j.completion_ms
        if end_ms is None:
            n_open_jobs += 1
            end_ms = last_activity_ms(
                j.submission_ms, j.stage_ids, app.stages, last_task_ms, app.end_ms
            )
        jobs.append((j.submission_ms, end_ms))
    sql_ms = covered_ms(sql)
    busy = merged([*sql, *jobs])
    both_ms = sum(end - start for start, end in busy)
    wall = app.duration_ms
    if wall is None or app.start_ms is None or app.end_ms is None:
        return AppTimeSpent(
            wall_ms=wall,
            sql_ms=sql_ms,
            other_jobs_ms=both_ms - sql_ms,
            driver_ms=None,
            open_walls_ms=open_walls,
            n_open_jobs=n_open_jobs,
        )
    driver = max(0, wall - both_ms)
    if not busy:
        # No job ran: nothing tells start-up from what followed (a streaming query waiting
        # for data, driver-only code), so the driver's time is not cut.
        return AppTimeSpent(
            wall_ms=wall,
            sql_ms=sql_ms,
            other_jobs_ms=both_ms - sql_ms,
            driver_ms=driver,
            open_walls_ms=open_walls,
            n_open_jobs=n_open_jobs,
        )
    startup = min(driver, max(0, busy[0][0] - app.start_ms))
    after = min(driver - startup, max(0, app.end_ms - busy[-1][1]))
    gaps = [b[0] - a[1] for a, b in pairwise(busy)]
    return AppTimeSpent(
        wall_ms=wall,
        sql_ms=sql_ms,
        other_jobs_ms=both_ms - sql_ms,
        driver_ms=driver,
        startup_ms=startup,
        between_ms=driver - startup - after,
        after_ms=after,
        longest_gap_ms=max(gaps, default=0),
        n_gaps=len(gaps),
        open_walls_ms=open_walls,
        n_open_jobs=n_open_jobs,
    )
