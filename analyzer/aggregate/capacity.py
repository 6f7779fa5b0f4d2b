"""Capacity as Spark's scheduler sees it: task slots over time, per resource profile.

A task slot is what lets Spark launch one more task: an executor of `n_cores` cores offers
`n_cores // cpus-per-task` of them (`Executor.max_tasks`, worked out by the replay from
`spark.task.cpus` or the executor's resource profile), only to stages of its own resource profile,
and only between its registration and its removal. In local mode the driver is the only executor.
The findings (is a stage waiting, or idle? how many cores did it leave unused?) and the executors
view read this once-computed timeline instead of counting every executor that ever lived.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from analyzer.aggregate.tables import TaskTable, last_task_ends_ms
from analyzer.model.application import DRIVER_ID, Application, Executor
from analyzer.units import decimal_int, parse_seconds


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


@dataclass(frozen=True)
class ProfileSlots:
    """The task slots of one resource profile as a step function of time."""

    profile_id: int = field(metadata=_help("Spark's resource profile id (0: the default)."))
    times_ms: tuple[int, ...] = field(
        metadata=_help("Epoch ms at which the slot count changes, ascending.")
    )
    slots: tuple[int, ...] = field(
        metadata=_help("Slots from the matching time on; before the first time: `initial`.")
    )
    initial: int = field(
        metadata=_help("Slots before the first change (executors of unknown age).")
    )
    peak: int = field(metadata=_help("Most slots alive at once."))

    def at(self, moment_ms: int) -> int:
        """Return the slots alive at `moment_ms`."""
        i = bisect.bisect_right(self.times_ms, moment_ms)
        return self.slots[i - 1] if i else self.initial

    def most(self, start_ms: int, end_ms: int) -> int:
        """Return the most slots alive at any moment of [start_ms, end_ms]."""
        best = self.at(start_ms)
        lo = bisect.bisect_right(self.times_ms, start_ms)
        hi = bisect.bisect_right(self.times_ms, end_ms)
        for value in self.slots[lo:hi]:
            best = max(best, value)
        return best

    def without_slots_ms(self, start_ms: int, end_ms: int) -> int:
        """Return how many ms of [start_ms, end_ms) had no slot alive.

        >>> p = ProfileSlots(0, (10, 20), (2, 0), 0, 2)
        >>> p.without_slots_ms(0, 30)
        20
        """
        if end_ms <= start_ms:
            return 0
        total = 0
        current = self.at(start_ms)
        cursor = start_ms
        lo = bisect.bisect_right(self.times_ms, start_ms)
        for i in range(lo, len(self.times_ms)):
            t = self.times_ms[i]
            if t >= end_ms:
                break
            if current == 0:
                total += t - cursor
            cursor, current = t, self.slots[i]
        if current == 0:
            total += end_ms - cursor
        return total


@dataclass(frozen=True)
class Capacity:
    """The application's task slots over time, and the settings that size them."""

    local_mode: bool = field(metadata=_help("`spark.master` is `local…`: the driver runs tasks."))
    dynamic_allocation: bool = field(
        metadata=_help("`spark.dynamicAllocation.enabled` is true (and the master is not local).")
    )
    executor_cores: int | None = field(metadata=_help("`spark.executor.cores`, if set."))
    task_cpus: int = field(metadata=_help("`spark.task.cpus` (default 1)."))
    profiles: tuple[ProfileSlots, ...] = field(
        metadata=_help("Slots over time per resource profile, by profile id.")
    )
    settings: tuple[tuple[str, str], ...] = field(
        metadata=_help("The allocation settings the log sets (`spark.dynamicAllocation.*`, …).")
    )
    offered: tuple[ProfileSlots, ...] = field(
        default=(),
        metadata=_help(
            "Slots over time per resource profile that the scheduler would offer tasks: "
            "`profiles` less executors dynamic allocation had released (see `released_ms`); "
            "empty when none were."
        ),
    )

    def profile(self, profile_id: int = 0) -> ProfileSlots:
        """Return the slots of `profile_id` (none alive, ever, for a profile without executors)."""
        for p in self.profiles:
            if p.profile_id == profile_id:
                return p
        return ProfileSlots(profile_id, (), (), 0, 0)

    def offered_profile(self, profile_id: int = 0) -> ProfileSlots:
        """Return the slots of `profile_id` that the scheduler would offer tasks (`offered`)."""
        for p in self.offered:
            if p.profile_id == profile_id:
                return p
        return self.profile(profile_id)

    def slots_at(self, moment_ms: int | None, profile_id: int = 0) -> int:
        """Return the slots of `profile_id` alive at `moment_ms` (its peak when None)."""
        p = self.profile(profile_id)
        return p.peak if moment_ms is None else p.at(moment_ms)

    @property
    def peak_slots(self) -> int:
        """Most slots alive at once in any one profile."""
        return max((p.peak for p in self.profiles), default=0)


ALLOCATION_SETTINGS = (
    "spark.dynamicAllocation.enabled",
    "spark.dynamicAllocation.minExecutors",
    "spark.dynamicAllocation.initialExecutors",
    "spark.dynamicAllocation.maxExecutors",
    "spark.dynamicAllocation.executorIdleTimeout",
    "spark.dynamicAllocation.schedulerBacklogTimeout",
    "spark.dynamicAllocation.cachedExecutorIdleTimeout",
    "spark.executor.instances",
    "spark.executor.cores",
    "spark.task.cpus",
    "spark.master",
)
"""The settings that decide how many slots a stage finds (shown as evidence, quoted in advice)."""


def _int_setting(props: dict[str, str], key: str) -> int | None:
    return decimal_int(props.get(key, "").strip())


def _steps(
    changes: Iterable[tuple[int, int]], initial: int
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    times: list[int] = []
    values: list[int] = []
    current = initial
    for t, delta in sorted(changes):
        current += delta
        if times and times[-1] == t:
            values[-1] = current
        else:
            times.append(t)
            values.append(current)
    return tuple(times), tuple(values)


def _profile_slots(profile_id: int, changes: list[tuple[int, int]], initial: int) -> ProfileSlots:
    """A profile's slots over time from its (moment, change) steps and its slots at the start."""
    times, values = _steps(changes, initial)
    return ProfileSlots(
        profile_id=profile_id,
        times_ms=times,
        slots=values,
        initial=initial,
        peak=max((initial, *values)),
    )


def local_threads(master: str) -> int | None:
    """Return N of `local[N]` / `local[N,F]` (1 for plain `local`), None for `local[*]` or else.

    >>> [local_threads(m) for m in ("local[4]", "local[2,3]", "local", "local[*]")]
    [4, 2, 1, None]
    """
    if master == "local":
        return 1
    if master.startswith("local[") and master.endswith("]"):
        threads = decimal_int(master[6:-1].split(",")[0].strip())
        return threads if threads is not None and threads > 0 else None
    return None


def local_mode(app: Application) -> bool:
    """True when the driver runs the tasks: a `local` master (`local-cluster[...]` runs real
    executor processes), or a log that names no other executor."""
    master = dict(app.spark_properties).get("spark.master", "")
    local = master.startswith("local") and not master.startswith("local-cluster")
    return local or all(e.executor_id == DRIVER_ID for e in app.executors)


def executor_slots(e: Executor, master: str, local: bool) -> int:
    """An executor's task slots: its most tasks at once (cores over `spark.task.cpus`), else
    its cores; in local mode, where the driver's cores were not logged, `local[N]`'s N. 0 when
    none of these is known."""
    n = e.max_tasks or e.n_cores
    if local and n <= 0:
        n = local_threads(master) or 0
    return n


def task_slots_by_executor(app: Application) -> dict[str, int]:
    """Each executor's task slots (`executor_slots`), by executor id: the most of its tasks
    that can run at once. Executors whose slots are not known are left out.

    The log's task intervals overlap more than that: a task's finish time is set once the
    driver has handled its result, after its slot was offered to the next task."""
    master = dict(app.spark_properties).get("spark.master", "")
    local = local_mode(app)
    slots = {str(e.executor_id): executor_slots(e, master, local) for e in app.executors}
    return {e: n for e, n in slots.items() if n > 0}


def most_at_once(spans: Iterable[tuple[int, int]]) -> int:
    """The most of these (start, stop) spans that overlap at once (a span ending at a moment
    another starts does not overlap it).

    >>> most_at_once([(0, 10), (5, 15), (10, 20), (30, 40)])
    2
    """
    changes = [step for a, b in spans for step in ((a, 1), (b, -1))]
    return max(_steps(changes, 0)[1], default=0)


IDLE_TIMEOUT_DEFAULT_S = 60
"""Spark's default `spark.dynamicAllocation.executorIdleTimeout`, in seconds."""


def released_ms(
    app: Application, last_task_end_ms: Mapping[str, int], idle_timeout_ms: int
) -> dict[str, int]:
    """Return, per executor dynamic allocation released, when it stopped being offered tasks.

    Spark's `ExecutorAllocationManager` asks to kill an executor once it has been idle for
    `executorIdleTimeout`; from that request on, `CoarseGrainedSchedulerBackend` counts it as
    pending removal and offers it no task, though its ExecutorRemoved event can come many
    seconds later (on YARN, once the container stops). An executor removed after an idle
    stretch (from its last task's end, or its registration) at least that long was released
    at the stretch's start plus the timeout; an executor of unknown age that ran nothing is
    left alone.
    """
    out: dict[str, int] = {}
    for e in app.executors:
        if e.executor_id == DRIVER_ID or e.removed_ms is None:
            continue
        ends = [t for t in (e.added_ms, last_task_end_ms.get(e.executor_id)) if t is not None]
        if not ends:
            continue
        marked = max(ends) + idle_timeout_ms
        if marked < e.removed_ms:
            out[e.executor_id] = marked
    return out


def build_capacity(
    app: Application, observed_peak: int = 1, tasks: TaskTable | None = None
) -> Capacity:
    """Work out the task slots alive over time, per resource profile.

    An executor counts from its registration to its removal; one whose registration was not
    logged counts from the start. The driver counts only in local mode (or when the log names
    no other executor); when its cores were not logged, `local[N]` gives them, else
    `observed_peak` (the most tasks seen running at once, see `Analysis.peak_running_tasks`). Under
    dynamic allocation, with `tasks` given, the slots offered (`Capacity.offered`) leave out
    each executor from its release (`released_ms`) to its removal.
    """
    props = dict(app.spark_properties)
    master = props.get("spark.master", "")
    workers = [e for e in app.executors if e.executor_id != DRIVER_ID]
    local = local_mode(app)
    chosen = (
        [e for e in app.executors if e.executor_id == DRIVER_ID] or list(app.executors)
        if local
        else workers
    )
    dynamic = not local and _flag(props.get("spark.dynamicAllocation.enabled"))
    released = (
        released_ms(
            app,
            {str(e): ms for e, ms in last_task_ends_ms(tasks, "executor_id")},
            round(
                1000
                * parse_seconds(
                    props.get("spark.dynamicAllocation.executorIdleTimeout"),
                    IDLE_TIMEOUT_DEFAULT_S,
                )
            ),
        )
        if dynamic and tasks is not None
        else {}
    )
    by_profile: dict[int, tuple[list[tuple[int, int]], list[int]]] = {}
    withdrawn: dict[int, list[tuple[int, int]]] = {}
    for e in chosen:
        n = executor_slots(e, master, local)
        if local and n <= 0:
            n = max(observed_peak, 1)
        changes, initial = by_profile.setdefault(e.resource_profile_id, ([], [0]))
        if e.added_ms is None:
            initial[0] += n
        else:
            changes.append((e.added_ms, n))
        if e.removed_ms is not None:
            changes.append((e.removed_ms, -n))
            if e.executor_id in released:
                # Offered until its release, not until its removal.
                withdrawn.setdefault(e.resource_profile_id, []).extend(
                    [(released[e.executor_id], -n), (e.removed_ms, n)]
                )
    profiles = []
    offered = []
    for pid, (changes, initial) in sorted(by_profile.items()):
        profiles.append(_profile_slots(pid, changes, initial[0]))
        if pid in withdrawn:
            offered.append(_profile_slots(pid, [*changes, *withdrawn[pid]], initial[0]))
    return Capacity(
        local_mode=local,
        dynamic_allocation=dynamic,
        executor_cores=_int_setting(props, "spark.executor.cores"),
        task_cpus=_int_setting(props, "spark.task.cpus") or 1,
        profiles=tuple(profiles),
        settings=tuple((k, props[k]) for k in ALLOCATION_SETTINGS if k in props),
        offered=tuple(offered),
    )
