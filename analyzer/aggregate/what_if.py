"""What if the run had had another number of task slots: its tasks replayed through a model of
Spark's scheduler.

Every stage attempt's task attempts are replayed on N task slots, in the order Spark launched
them (launch time, then index), each for its own measured duration (launch to finish, so its
scheduler delay, deserialization, run and result time go with it). The scheduler model follows
Spark's `TaskSchedulerImpl` with the FIFO pool: whenever a slot is free, the runnable stage
attempt of the lowest job id, then the lowest stage id, launches its next task. A stage attempt
becomes runnable when it is submitted plus its observed launch delay (submission to its first
task with a slot free: building and shipping the task binary, a locality wait before the first
task); it completes its observed driver time after its last task ends.

What stays as it was, whatever the slots (the driver's side): a stage is submitted when what it
waited for in the run has finished in the replay (its parent stages that ran, and the last
stage completion or SQL execution start before its submission), plus the same gap as in the
run; a SQL execution starts after the last stage completion or execution end before it, plus
the same gap (driver work between jobs: planning, a broadcast relation built on the driver,
Python code); an execution ends after its own stages, plus the same gap (a write's commit);
the application ends after everything, plus the same tail. So only the time tasks spend waiting
for a slot, and the packing of tasks onto slots, change with N; docs/what-if.md has the
formulas and the measured errors.

Each resource profile gets `N / run_slots` times the slots it had at its peak (at least 1); the
run's slots are the peak slots of its busiest profile (`local[N]` counts its threads).
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from typing import Literal

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.capacity import Capacity
from analyzer.aggregate.stage_wall import RunningTasks, running_tasks
from analyzer.aggregate.tables import TaskTable, int_array, stage_pieces
from analyzer.eventlog.workers import WorkerError, can_fork, usable_cpus, workers_started
from analyzer.model.application import Application

Basis = Literal["as-run", "half", "double", "quadruple", "floor", "asked"]
"""Why a slot count is shown: the run's own (the model replaying the run), half, double or four
times it, the critical path's floor, or asked for (`--what-if-slots`)."""

FLOOR_TOLERANCE = 0.01
"""The floor's slot count is the fewest slots whose predicted application wall is within this
share of the wall with unlimited slots: past it, more slots save less than 1 %."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class WhatIf:
    """The predicted wall times with one number of task slots."""

    task_slots: int = field(metadata=_help("Task slots the replay gave the application."))
    basis: Basis = field(metadata=_help("Why this slot count is shown (see `Basis`)."))
    app_wall_ms: int | None = field(
        metadata=_help("Predicted application wall, ms; None without its start and end.")
    )
    execution_ids: Sequence[int] = field(
        metadata=_help("Every SQL execution with a start and an end that the replay reached.")
    )
    walls_ms: Sequence[int] = field(
        metadata=_help(
            "Predicted start to end of each of `execution_ids`, ms: two arrays, 16 bytes an "
            "execution (a log of 100,000 micro-batch executions has half a million of them over "
            "the scenarios)."
        )
    )


@dataclass(frozen=True)
class WhatIfFigures:
    """The what-if predictions of one application."""

    run_slots: int = field(metadata=_help("Task slots the run had (its busiest profile's peak)."))
    floor_app_wall_ms: int | None = field(
        metadata=_help("Predicted application wall with unlimited slots: the critical path.")
    )
    floor_slots: int = field(
        metadata=_help("Fewest slots within `FLOOR_TOLERANCE` of the floor wall.")
    )
    scenarios: tuple[WhatIf, ...] = field(
        metadata=_help("The predictions, by slot count (the run's own first).")
    )


@dataclass(slots=True)
class _Stage:
    """A stage attempt as the replay needs it."""

    submit_node: int
    complete_node: int
    profile_id: int
    priority: tuple[int, int, int]
    """FIFO order: (job id, stage id, attempt)."""
    launch_delay_ms: int
    """Submission to the first task launch, less the time every slot was busy or none alive."""
    after_ms: int
    """Last task end to the stage's completion (the driver handling the results)."""
    durations_ms: array[int]
    """Its task attempts' durations (at least 0), in launch order: an array, 8 bytes a task."""
    empty_ms: int
    """Submission to completion of an attempt without tasks."""


_ANCHOR, _SUBMIT, _COMPLETE = 0, 1, 2


@dataclass(frozen=True)
class ReplayPlan:
    """Everything the replay needs, independent of the slot count (built once per analysis).

    Nodes are moments of the application: its start (node 0), stage submissions and
    completions, execution starts and ends, its end. A node other than a completion happens
    `gaps_ms[n]` after the last of the nodes it waits for in the replay. The nodes' figures
    are arrays, 8 bytes a node, not lists of lists: a log of thousands of micro-batches makes
    a node per stage attempt and execution end.
    """

    n_deps: array[int]
    """How many nodes each node waits for."""
    dependents_at: array[int]
    """Where each node's dependents start in `dependents` (one more entry than nodes): the
    nodes waiting for node n are `dependents[dependents_at[n]:dependents_at[n + 1]]`."""
    dependents: array[int]
    gaps_ms: Sequence[int]
    kinds: array[int]
    stage_of_node: array[int]
    stages: list[_Stage]
    executions: list[tuple[int, int, int]]
    """(execution id, start node, end node)."""
    app_end_node: int | None
    profile_peaks: dict[int, int]
    run_slots: int
    n_tasks: int


@dataclass
class _Nodes:
    """The plan's nodes while it is built: observed time and kind of each, and their deps."""

    obs_ms: list[int] = field(default_factory=list)
    kinds: list[int] = field(default_factory=list)
    deps: list[Sequence[int]] = field(default_factory=list)
    """What each node waits for; the empty tuple (one object) until it is known."""
    stage_of_node: list[int] = field(default_factory=list)

    def add(self, obs_ms: int, kind: int = _ANCHOR, stage: int = -1) -> int:
        self.obs_ms.append(obs_ms)
        self.kinds.append(kind)
        self.deps.append(())
        self.stage_of_node.append(stage)
        return len(self.obs_ms) - 1


class _Anchors:
    """The moments a start can wait for (app start, completions, execution starts and ends),
    ordered by time, to find the last one before a start."""

    def __init__(self, entries: list[tuple[int, int, int]]) -> None:
        # (observed time, observed start of its owner, node); sorted in place, not copied.
        entries.sort()
        self.entries = entries
        self.times = [e[0] for e in self.entries]

    def last_before(self, moment_ms: int) -> int:
        """Return the node of the last moment at or before `moment_ms` whose owner started
        before it (a start never waits for something that began with it), else node 0."""
        i = bisect_right(self.times, moment_ms) - 1
        while i >= 0:
            at, owner_start, node = self.entries[i]
            if at < moment_ms or owner_start < moment_ms:
                return node
            i -= 1
        return 0


def slot_release_ms(
    tasks: pl.LazyFrame, executor_slots: dict[str, int], default_slots: int
) -> pl.Series:
    """Return when each task attempt let go of its slot (epoch ms, aligned with `tasks`' rows;
    `tasks` needs their executor, launch, finish and index, and is read a column or two at a
    time, so the whole of them is never held at once).

    Spark marks a task finished once the driver has handled its result, but the executor frees
    the slot when it sends the task's end, and the driver may launch the next task before it
    marks the last one finished: in local mode a log often shows more tasks "running" at once
    than there are slots. So, per executor, a task launched while all its slots looked busy
    took the slot of the running task that finished first, which ended by that launch.

    >>> t = pl.LazyFrame({"executor_id": ["1", "1", "2"], "launch_ms": [0, 50, 0],
    ...                   "index": [0, 1, 2], "finish_ms": [60, 120, 70]})
    >>> slot_release_ms(t, {"1": 1}, 1).to_list()
    [50, 120, 70]
    """
    # Arrays, 8 bytes a task: a log can hold millions of task attempts. The launch order is
    # the rows' positions sorted, not the columns sorted with them.
    launches = int_array(tasks.select("launch_ms").collect(engine=ENGINE).to_series())
    released = int_array(
        tasks.select(pl.max_horizontal("launch_ms", "finish_ms")).collect(engine=ENGINE).to_series()
    )
    # Executors in the order of their categorical codes, not of their names: each executor's
    # tasks are replayed on their own, and sorting by the codes takes half the memory.
    code = pl.col("executor_id").to_physical()
    order = (
        tasks.select(pl.arg_sort_by(code, "launch_ms", "index")).collect(engine=ENGINE).to_series()
    )
    rows = memoryview(int_array(order, "I" if order.dtype == pl.UInt32 else "q"))
    del order
    runs = tasks.group_by("executor_id").len().sort(code).collect(engine=ENGINE).rows()
    start = 0
    for executor, count in runs:  # each executor's tasks, in launch order
        busy: list[tuple[int, int]] = []
        cap = max(1, executor_slots.get(executor, 0) or default_slots)
        for row in rows[start : start + count]:
            launch = launches[row]
            while busy and busy[0][0] <= launch:
                heapq.heappop(busy)
            while len(busy) >= cap:
                _, other = heapq.heappop(busy)
                released[other] = max(launches[other], launch)
            heapq.heappush(busy, (released[row], row))
        start += count
    return pl.Series("released_ms", released, dtype=pl.Int64)


def _task_table(
    tasks: TaskTable, executor_slots: dict[str, int], default_slots: int
) -> dict[tuple[int, int], tuple[array[int], int, int]]:
    """Per stage attempt: how long each task held its slot, in launch order (launch time, then
    index), its first launch and its last slot release."""
    if tasks.is_empty():
        return {}
    released = slot_release_ms(tasks.lazy(), executor_slots, default_slots).alias("end")
    ends = tasks.part(("stage_id", "stage_attempt_id", "launch_ms", "index"), released)
    out: dict[tuple[int, int], tuple[array[int], int, int]] = {}
    # Each stage attempt's tasks sorted within it, a piece of whole stages at a time
    # (`tables.stage_pieces`): the table is a dict by stage attempt, so the attempts need no
    # order, and no sorted copy of every task's columns is made.
    for piece in stage_pieces(ends):
        grouped = (
            piece.group_by("stage_id", "stage_attempt_id")
            .agg(
                (pl.col("end") - pl.col("launch_ms"))
                .clip(lower_bound=0)
                .sort_by("launch_ms", "index", maintain_order=True)
                .alias("durations"),
                pl.col("launch_ms").min().alias("first"),
                pl.col("end").max().alias("last"),
            )
            .collect(engine=ENGINE)
        )
        for sid, att, durations, first, last in grouped.iter_rows():
            out[(int(sid), int(att))] = (array("q", durations), int(first), int(last))
    return out


def run_task_slots(capacity: Capacity) -> int:
    """Return the task slots the run had: the peak of its busiest profile (at least 1)."""
    return max(1, capacity.peak_slots)


def build_replay_plan(
    app: Application,
    tasks: TaskTable,
    capacity: Capacity,
    running: RunningTasks | None = None,
) -> ReplayPlan:
    """Work out, once, what the replay needs: every stage attempt's tasks and delays, and what
    each submission, execution start and end waited for in the run, with the gap after it.
    `running` is `running_tasks(tasks)`, made here if not given."""
    executor_slots = {e.executor_id: e.max_tasks for e in app.executors if e.max_tasks > 0}
    by_stage = _task_table(tasks, executor_slots, run_task_slots(capacity))
    if running is None:
        running = running_tasks(tasks)
    attempts = [s for s in app.stages if s.submission_ms is not None]
    observed = [s.submission_ms for s in attempts if s.submission_ms is not None]
    observed += [e.start_ms for e in app.executions if e.start_ms is not None]
    t0 = app.start_ms if app.start_ms is not None else min(observed, default=0)

    nodes = _Nodes()
    nodes.add(t0)
    stages: list[_Stage] = []
    anchors: list[tuple[int, int, int]] = [(t0, t0 - 1, 0)]
    completions: dict[int, list[tuple[int, int]]] = {}
    submits: list[tuple[int, int, tuple[int, ...]]] = []
    for s in attempts:
        submit_ms = s.submission_ms if s.submission_ms is not None else t0
        # Taken out as used: the table's keys and tuples go while the plan grows.
        durations, first, last = by_stage.pop(
            (s.stage_id, s.attempt_id), (array("q"), submit_ms, submit_ms)
        )
        complete_ms = max(s.completion_ms if s.completion_ms is not None else last, submit_ms)
        index = len(stages)
        submit = nodes.add(submit_ms, _SUBMIT, index)
        complete = nodes.add(complete_ms, _COMPLETE, index)
        delay = 0
        if durations:
            first = max(first, submit_ms)
            profile = capacity.profile(s.resource_profile_id)
            blocked = profile.without_slots_ms(submit_ms, first)
            blocked += running.busy_ms(submit_ms, first, profile)
            delay = max(0, first - submit_ms - blocked)
        stages.append(
            _Stage(
                submit_node=submit,
                complete_node=complete,
                profile_id=s.resource_profile_id,
                priority=(min(s.job_ids, default=1 << 62), s.stage_id, s.attempt_id),
                launch_delay_ms=delay,
                after_ms=max(0, complete_ms - max(last, submit_ms)) if durations else 0,
                durations_ms=durations,
                empty_ms=0 if durations else complete_ms - submit_ms,
            )
        )
        anchors.append((complete_ms, submit_ms, complete))
        completions.setdefault(s.stage_id, []).append((complete_ms, complete))
        submits.append((submit, submit_ms, s.parent_ids))

    execution_nodes: list[tuple[int, int, int]] = []
    ex_nodes: dict[int, tuple[int, int]] = {}
    for e in app.executions:
        if e.start_ms is None or e.end_ms is None:
            continue
        start = nodes.add(e.start_ms)
        end = nodes.add(max(e.end_ms, e.start_ms))
        anchors.append((e.start_ms, e.start_ms, start))
        anchors.append((max(e.end_ms, e.start_ms), e.start_ms, end))
        ex_nodes[e.execution_id] = (start, end)
        execution_nodes.append((e.execution_id, start, end))
    before = _Anchors(anchors)

    # A stage waits for its parents that ran and for the last moment before its submission.
    for submit, submit_ms, parent_ids in submits:
        deps = {before.last_before(submit_ms)}
        for parent in parent_ids:
            done = [(at, node) for at, node in completions.get(parent, ()) if at < submit_ms]
            if done:
                deps.add(max(done)[1])
        nodes.deps[submit] = sorted(deps)
    for e in app.executions:
        if e.execution_id not in ex_nodes:
            continue
        start, end = ex_nodes[e.execution_id]
        nodes.deps[start] = [before.last_before(nodes.obs_ms[start])]
        end_ms = nodes.obs_ms[end]
        deps = {start}  # its start, its stages' completions, its sub-executions' ends
        for stage_id in e.stage_ids:
            deps.update(node for at, node in completions.get(stage_id, ()) if at <= end_ms)
        for sub in app.sub_executions.get(e.execution_id, ()):
            if sub in ex_nodes and nodes.obs_ms[ex_nodes[sub][1]] <= end_ms:
                deps.add(ex_nodes[sub][1])
        nodes.deps[end] = sorted(deps)
    app_end: int | None = None
    if app.end_ms is not None:
        app_end = nodes.add(max(app.end_ms, t0))
        nodes.deps[app_end] = [
            node
            for node, kind in enumerate(nodes.kinds[:-1])
            if kind != _SUBMIT and nodes.obs_ms[node] <= nodes.obs_ms[app_end]
        ]

    # The build's lookups go before the plan's arrays are made: the peak is when both live.
    del before, anchors, completions, submits, ex_nodes, by_stage, running
    obs_ms = nodes.obs_ms
    gaps = _compact(
        [
            max(0, obs - max(obs_ms[d] for d in waited_for)) if waited_for else 0
            for obs, waited_for in zip(obs_ms, nodes.deps, strict=True)
        ]
    )
    # Each node's dependents in node order, laid out one node after the other.
    starts = [0] * (len(obs_ms) + 1)
    for waited_for in nodes.deps:
        for d in waited_for:
            starts[d + 1] += 1
    dependents_at = array("q", accumulate(starts))
    dependents = array("q", bytes(8 * dependents_at[-1]))
    filled = list(dependents_at)
    for node, waited_for in enumerate(nodes.deps):
        for d in waited_for:
            dependents[filled[d]] = node
            filled[d] += 1
    return ReplayPlan(
        n_deps=array("q", map(len, nodes.deps)),
        dependents_at=dependents_at,
        dependents=dependents,
        gaps_ms=gaps,
        kinds=array("q", nodes.kinds),
        stage_of_node=array("q", nodes.stage_of_node),
        stages=stages,
        executions=execution_nodes,
        app_end_node=app_end,
        profile_peaks={p.profile_id: p.peak for p in capacity.profiles},
        run_slots=run_task_slots(capacity),
        n_tasks=sum(len(s.durations_ms) for s in stages),
    )


@dataclass(frozen=True)
class _Replayed:
    """One replay's outcome: every node's time (ms after the application's start; `_UNREACHED`
    if it was never reached) and the most tasks that ran at once.

    The times are an array: the floor's search keeps a dozen replays of a plan with a node per
    stage attempt and execution end, as lists of Python integers tens of MB.
    """

    times_ms: Sequence[int]
    peak_running: int


def _compact(values: list[int]) -> Sequence[int]:
    """`values` as an array of 8-byte integers, or as they are when one does not fit: a
    hostile log's times can be far beyond any real one."""
    try:
        return array("q", values)
    except OverflowError:
        return values


_UNREACHED = -(1 << 63)
"""A node's time in `_Replayed.times_ms` when the replay never reached it (a replayed time is
never negative: it starts at 0 and only waits)."""


_RESOLVE, _READY, _TASK_END = 0, 1, 2
_TIME_SHIFT, _KIND_SHIFT = 34, 32
_WHAT_MASK = (1 << _KIND_SHIFT) - 1
"""An event is one int, `time << 34 | kind << 32 | node or stage`: a heap of ints is about twice
as fast as one of tuples, and the replay pushes and pops an event per task."""


def profile_slots(plan: ReplayPlan, task_slots: int) -> dict[int, int]:
    """The slots each resource profile of the plan's stages gets when the application has
    `task_slots`: its share of the run's, scaled, at least 1."""
    scale = task_slots / plan.run_slots
    free: dict[int, int] = {}
    for stage in plan.stages:
        if stage.profile_id not in free:
            peak = plan.profile_peaks.get(stage.profile_id, 0) or plan.run_slots
            free[stage.profile_id] = max(1, round(peak * scale))
    return free


def replay(plan: ReplayPlan, task_slots: int) -> _Replayed:
    """Replay the application's tasks on `task_slots` slots (scaled per resource profile)."""
    free = profile_slots(plan, task_slots)
    n_nodes = len(plan.n_deps)
    times: list[int | None] = [None] * n_nodes
    waiting = plan.n_deps.tolist()
    base = [0] * n_nodes
    stages = plan.stages
    # Per stage, read once: the loop below runs once per task.
    profile_of = [s.profile_id for s in stages]
    size_of = [len(s.durations_ms) for s in stages]
    launched = [0] * len(stages)
    running = [0] * len(stages)
    runnable: dict[int, list[tuple[tuple[int, int, int], int]]] = {p: [] for p in free}
    events: list[int] = [0]  # node 0, the application's start, at 0
    push, pop = heapq.heappush, heapq.heappop
    kinds, dependents, gaps = plan.kinds, plan.dependents, plan.gaps_ms
    dependents_at, stage_of_node = plan.dependents_at, plan.stage_of_node
    n_running = peak_running = 0
    while events:
        now = events[0] >> _TIME_SHIFT
        later = (now + 1) << _TIME_SHIFT  # the first event time after `now`
        while events and events[0] < later:
            event = pop(events)
            kind = (event >> _KIND_SHIFT) & 3
            what = event & _WHAT_MASK
            if kind == _TASK_END:
                free[profile_of[what]] += 1
                left = running[what] - 1
                running[what] = left
                n_running -= 1
                if left == 0 and launched[what] == size_of[what]:
                    stage = stages[what]
                    push(events, ((now + stage.after_ms) << _TIME_SHIFT) | stage.complete_node)
            elif kind == _RESOLVE:
                times[what] = now
                for d in dependents[dependents_at[what] : dependents_at[what + 1]]:
                    waiting[d] -= 1
                    if now > base[d]:
                        base[d] = now
                    if waiting[d] == 0 and kinds[d] != _COMPLETE:
                        push(events, ((base[d] + gaps[d]) << _TIME_SHIFT) | d)
                if kinds[what] == _SUBMIT:
                    i = stage_of_node[what]
                    stage = stages[i]
                    if size_of[i]:
                        at = now + stage.launch_delay_ms
                        push(events, (at << _TIME_SHIFT) | (_READY << _KIND_SHIFT) | i)
                    else:
                        at = now + stage.empty_ms
                        push(events, (at << _TIME_SHIFT) | stage.complete_node)
            else:
                heapq.heappush(runnable[profile_of[what]], (stages[what].priority, what))
        for profile_id, queue in runnable.items():
            slots = free[profile_id]
            while queue and slots > 0:
                i = queue[0][1]
                durations = stages[i].durations_ms
                first = launched[i]
                n = min(slots, size_of[i] - first)
                tag = (_TASK_END << _KIND_SHIFT) | i
                if n == 1:
                    push(events, ((now + durations[first]) << _TIME_SHIFT) | tag)
                else:
                    for d in durations[first : first + n]:
                        push(events, ((now + d) << _TIME_SHIFT) | tag)
                launched[i] = first + n
                running[i] += n
                n_running += n
                slots -= n
                if first + n == size_of[i]:
                    heapq.heappop(queue)
            free[profile_id] = slots
        if n_running > peak_running:
            peak_running = n_running
    return _Replayed(_compact([_UNREACHED if t is None else t for t in times]), peak_running)


def never_all_busy(plan: ReplayPlan, task_slots: int, unlimited: _Replayed) -> bool:
    """Whether the replay on `task_slots` slots is the replay with unlimited slots.

    With one resource profile it is when the profile gets at least as many slots as tasks ran
    at once in `unlimited`: the two replays launch the same tasks at the same moments, since
    at every launch the tasks ready then fit in the free slots (they all ran at once in
    `unlimited`, on top of the same running ones). With several profiles no such bound is
    kept, so they are always replayed.
    """
    slots = profile_slots(plan, task_slots)
    return len(slots) == 1 and next(iter(slots.values())) >= unlimited.peak_running


def _what_if(plan: ReplayPlan, replayed: _Replayed, task_slots: int, basis: Basis) -> WhatIf:
    times = replayed.times_ms
    walls = sorted(
        (execution_id, times[end] - times[start])
        for execution_id, start, end in plan.executions
        if times[start] != _UNREACHED and times[end] != _UNREACHED
    )
    app = times[plan.app_end_node] if plan.app_end_node is not None else None
    if app == _UNREACHED:
        app = None
    return WhatIf(
        task_slots=task_slots,
        basis=basis,
        app_wall_ms=app,
        execution_ids=array("q", [execution_id for execution_id, _ in walls]),
        walls_ms=_compact([wall_ms for _, wall_ms in walls]),
    )


def _span(replayed: _Replayed) -> int:
    """The replay's last moment: the application wall, or the last node reached without one."""
    return max((t for t in replayed.times_ms if t != _UNREACHED), default=0)


def default_slots(run_slots: int) -> tuple[tuple[int, Basis], ...]:
    """Return the slot counts a report shows by default: half, double and four times the run's.

    >>> default_slots(4)
    ((2, 'half'), (8, 'double'), (16, 'quadruple'))
    >>> default_slots(1)
    ((2, 'double'), (4, 'quadruple'))
    """
    half: tuple[tuple[int, Basis], ...] = ((run_slots // 2, "half"),) if run_slots >= 2 else ()
    return (*half, (2 * run_slots, "double"), (4 * run_slots, "quadruple"))


def what_if_figures(plan: ReplayPlan, asked: Sequence[int] | None = None) -> WhatIfFigures:
    """Predict the application's and its executions' walls with the run's own slots, the slot
    counts `asked` (default: `default_slots`) and the critical path's floor.

    The floor is the replay with unlimited slots. Its slot count is the fewest slots whose
    predicted wall is within `FLOOR_TOLERANCE` of it, found by bisection (on a log scale, to
    within `FLOOR_SLOTS_PRECISION`) between 1 and the most tasks that ran at once with
    unlimited slots (more slots than that change nothing), narrowed first by the run's own and
    the default slot counts: never by those `asked`, so the floor is a property of the run.
    """
    cache: dict[int, _Replayed] = {}

    def run(n: int) -> _Replayed:
        if n not in cache:
            cache[n] = unlimited if never_all_busy(plan, n, unlimited) else replay(plan, n)
        return cache[n]

    chosen: list[tuple[int, Basis]] = [(plan.run_slots, "as-run")]
    chosen += default_slots(plan.run_slots) if asked is None else [(n, "asked") for n in asked]
    unlimited = replay(plan, max(plan.n_tasks, plan.run_slots, 1) * plan.run_slots)
    # The counts to replay, half of them in a forked process beside this one. It is forked
    # after the unlimited replay, whose transient (an event per task) would otherwise be
    # written to pages the two processes share, and so be held twice.
    to_replay = [
        n for n in dict.fromkeys(n for n, _ in chosen) if not never_all_busy(plan, n, unlimited)
    ]
    aside = (
        to_replay[: (len(to_replay) + 1) // 2] if len(to_replay) > 1 and _worth_aside(plan) else []
    )
    with _replayed_aside(plan, aside) as made_aside:
        for n in to_replay[len(aside) :]:
            run(n)
        cache.update(made_aside())
    for n, _ in chosen:
        run(n)
    seeds = (plan.run_slots, *(n for n, _ in default_slots(plan.run_slots)))
    floor_slots = _floor_slots(plan, seeds, cache, unlimited)
    chosen.append((floor_slots, "floor"))
    seen: set[int] = set()
    scenarios = []
    for n, basis in chosen:
        if n in seen:
            continue
        seen.add(n)
        scenarios.append(_what_if(plan, run(n), n, basis))
    return WhatIfFigures(
        run_slots=plan.run_slots,
        floor_app_wall_ms=_what_if(plan, unlimited, 0, "floor").app_wall_ms,
        floor_slots=floor_slots,
        scenarios=tuple(sorted(scenarios, key=lambda w: (w.basis != "as-run", w.task_slots))),
    )


ASIDE_MIN_WORK = 50_000
"""Some of the shown slot counts are replayed in a forked process while this one replays the
others, when a replay covers at least this many tasks and moments (about a twentieth of a
second of Python): below it, forking costs more than the second core saves."""
ASIDE_MAX_MOMENTS = 100_000
"""...and at most this many moments: a replay holds a Python integer or two per moment (about
56 bytes), so two at once added 25 MB to the peak of a log of 36,000 executions (200,000
moments), whose replays the second core sped up by under 1 %."""
ASIDE_MAX_TASKS = 500_000
"""...and at most this many tasks: a replay's transient grows with its tasks, so two at once
added 45 to 60 MB to the peak of a log of a million tasks (`giant_stage_100k_x10`: 385 to 401
MB against 338 to 342 in one process) for 0.2 s of its 19 s, the second core being busy there
with the task figures made aside (`analysis.figures_made_aside`)."""


def _worth_aside(plan: ReplayPlan) -> bool:
    """Whether replaying some of the plan's slot counts in a forked process pays
    (`ASIDE_MIN_WORK`, `ASIDE_MAX_MOMENTS`, `ASIDE_MAX_TASKS`)."""
    moments = len(plan.n_deps)
    return (
        plan.n_tasks + moments >= ASIDE_MIN_WORK
        and moments <= ASIDE_MAX_MOMENTS
        and plan.n_tasks <= ASIDE_MAX_TASKS
        and usable_cpus() > 1
        and can_fork()
    )


@contextmanager
def _replayed_aside(
    plan: ReplayPlan, counts: Sequence[int]
) -> Iterator[Callable[[], dict[int, _Replayed]]]:
    """Replay `counts` in a forked process while the block runs; the function it gives waits
    for the replays, by slot count. None are made aside without `counts`; none are given if the
    process fails (the caller makes what it misses itself).

    A replay is pure Python on the plan's arrays, so this process runs one at a time: another
    core helps only from another process. Forked, it reads the plan without a copy, and sends
    back an integer per node of each replay.
    """
    with ExitStack() as stack:
        try:
            results = (
                stack.enter_context(workers_started(partial(replay, plan), counts, 1))
                if counts
                else None
            )
        except (WorkerError, OSError):  # no process to fork: all are made here
            results = None
        if results is None:
            yield dict
            return

        def made() -> dict[int, _Replayed]:
            try:
                return dict(results)
            except WorkerError:
                return {}

        yield made


FLOOR_SLOTS_PRECISION = 1.05
"""The floor's slot count is found to within 5 % (or one slot)."""
MAX_FLOOR_TASK_REPLAYS = 3_000_000
"""The floor's search stops once it replayed this many tasks in all (a replay costs about 3 µs
a task), and says its upper bound."""


def _floor_slots(
    plan: ReplayPlan, seeds: Sequence[int], done: dict[int, _Replayed], unlimited: _Replayed
) -> int:
    """Return the fewest slots whose replay ends within `FLOOR_TOLERANCE` of `unlimited`'s.

    The search starts from the replays of the slot counts `seeds` (the run's own and the
    default ones): the same on every report of a run, whatever other counts it shows, so the
    floor found is the same. `done` holds the replays made so far, by slot count; any of them
    is reused rather than replayed again (a replay depends only on its count). The search adds
    the replay of the count it returns, when it made it, and drops the others (a replay holds
    a time per node).

    Each count it tries depends on the outcome of the one before. While this process replays
    one, a forked process replays the count the search tries next if this one ends within the
    tolerance (`_replayed_aside`, when the plan is worth it): the same counts are tried in the
    same order, and a guess that does not come true is dropped.
    """
    limit = _span(unlimited) * (1 + FLOOR_TOLERANCE)
    hi = max(1, unlimited.peak_running)
    lo = 1
    for n in seeds:
        replayed = _seed_replay(plan, n, done, unlimited)
        if _span(replayed) <= limit:
            hi = min(hi, n)
        else:
            lo = max(lo, n + 1)
    lo = min(lo, hi)
    budget = MAX_FLOOR_TASK_REPLAYS
    best: _Replayed | None = None
    forking = _worth_aside(plan)
    guessed: dict[int, _Replayed] = {}  # the count tried now, if it was guessed right
    while _searching(lo, hi, budget):
        mid = _halfway(lo, hi)
        budget -= max(1, plan.n_tasks)
        made = guessed.get(mid, done.get(mid))
        after = _halfway(lo, mid) if _searching(lo, mid, budget) else None
        aside = (
            [after] if forking and made is None and after is not None and after not in done else []
        )
        with _replayed_aside(plan, aside) as made_aside:
            replayed = made if made is not None else replay(plan, mid)
            within = _span(replayed) <= limit
            guessed = made_aside() if within else {}
        if within:
            hi, best = mid, replayed
        else:
            lo = mid + 1
    if best is not None and hi not in done:
        done[hi] = best
    return hi


def _searching(lo: int, hi: int, budget: int) -> bool:
    """Whether the floor's search goes on from the bounds `lo`..`hi` with `budget` left."""
    return lo < hi and hi > lo * FLOOR_SLOTS_PRECISION and budget > 0


def _halfway(lo: int, hi: int) -> int:
    """The count the floor's search tries between `lo` and `hi`: halfway on a log scale."""
    return max(lo, min(hi - 1, int((lo * hi) ** 0.5)))


def _seed_replay(
    plan: ReplayPlan, task_slots: int, done: dict[int, _Replayed], unlimited: _Replayed
) -> _Replayed:
    """The replay on `task_slots` from `done`, else made now and not kept (a report with
    `--what-if-slots` does not show the default counts)."""
    if task_slots in done:
        return done[task_slots]
    return unlimited if never_all_busy(plan, task_slots, unlimited) else replay(plan, task_slots)
