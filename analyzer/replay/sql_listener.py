"""Replay Spark's SQL listener rules to get exactly the per-task values the SQL tab aggregates.

This mirrors `SQLAppStatusListener` and `LiveStageMetrics` as the History Server runs them on
replay (synchronously, in event order): one slot per task index of the newest stage attempt,
the first successful attempt per index wins, a new stage attempt discards the old values, and
an execution's values freeze when its end event arrives (or at the end of the log, if it never
does). The frozen slots are what the aggregation layer turns into statistics and Spark's strings.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzer.replay.scala_set import ScalaIntSet
from analyzer.replay.task_columns import SqlUpdates

SUM = "sum"


@dataclass(frozen=True, slots=True)
class FrozenExecution:
    """The values Spark's SQL tab aggregated for one execution, frozen at its end, as a few
    flat arrays of 8-byte integers rather than an object per metric, stage block and value: a
    log of tens of thousands of executions holds one of these for each until the aggregation.

    The metrics come in the order Spark's listener first met them (stage by stage, then those
    only the driver set), and each metric's stage blocks and driver values in their order.
    """

    accumulator_ids: array[int]
    """Every accumulator with a stage block or a driver value."""
    blocks: array[int]
    """Per stage block: (accumulator id, stage id, stage attempt id, number of slots), flat."""
    slot_values: array[int]
    """The blocks' slots one after the other: slot i of a block holds task index i's value."""
    slot_task_ids: array[int]
    """Task id that produced each slot, -1 for a slot no task filled (it counts as 0)."""
    driver_values: array[int]
    """Per value the driver set: (accumulator id, value), flat."""
    maxes: array[int]
    """Per metric with a task maximum Spark names: (accumulator id, value, stage id, stage
    attempt id, task id), flat; a metric whose driver set a larger value has none."""

    def max_at(self) -> dict[int, tuple[int, int, int, int]]:
        """Per accumulator id: (value, stage id, stage attempt id, task id) of Spark's maximum."""
        flat = self.maxes
        return {
            flat[i]: (flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4])
            for i in range(0, len(flat), 5)
        }

    def driver_values_of(self) -> dict[int, list[int]]:
        """Per accumulator id with driver values: the values, in the order the driver set them."""
        out: dict[int, list[int]] = {}
        flat = self.driver_values
        for i in range(0, len(flat), 2):
            out.setdefault(flat[i], []).append(flat[i + 1])
        return out


_EMPTY = array("q")


class _LiveStage:
    __slots__ = (
        "attempt_id",
        "completed",
        "maxes",
        "metric_types",
        "num_tasks",
        "stage_id",
        "task_ids",
        "values",
    )

    def __init__(
        self, stage_id: int, attempt_id: int, num_tasks: int, metric_types: dict[int, str]
    ) -> None:
        self.stage_id = stage_id
        self.attempt_id = attempt_id
        self.num_tasks = num_tasks
        self.metric_types = metric_types
        self.completed: set[int] = set()
        self.values: dict[int, array[int]] = {}
        self.task_ids: dict[int, array[int]] = {}
        self.maxes: dict[int, list[int]] = {}

    def apply(self, updates: SqlUpdates) -> None:
        """Apply a segment's task ends of this stage attempt, in log order, as Spark's
        `LiveStageMetrics.updateTaskMetrics` applies them one by one: an index whose attempt
        already succeeded keeps its values, an index out of range is ignored, and the last
        attempt of an index (up to its first success) gives each metric's value."""
        indices = updates.indices
        completed = self.completed
        n_tasks = len(indices)
        index_set = set(indices)
        keep: bytearray | None = None  # None: every task end counts
        if (
            len(index_set) != n_tasks
            or not completed.isdisjoint(index_set)
            or min(indices) < 0
            or max(indices) >= self.num_tasks
        ):
            keep = bytearray(n_tasks)
            num_tasks = self.num_tasks
            for position, (index, ok) in enumerate(zip(indices, updates.successful, strict=True)):
                if index in completed or not 0 <= index < num_tasks:
                    continue
                keep[position] = 1
                if ok:
                    completed.add(index)
        elif all(updates.successful):
            completed.update(index_set)
        else:
            completed.update(i for i, ok in zip(indices, updates.successful, strict=True) if ok)
        types = self.metric_types
        task_ids = updates.task_ids
        for acc_id, (positions, values) in updates.accumulators.items():
            if acc_id not in types:
                continue
            if keep is not None:
                pairs = [(p, v) for p, v in zip(positions, values, strict=True) if keep[p]]
                if not pairs:
                    continue
                positions = array("q", [p for p, _ in pairs])
                values = array("q", [v for _, v in pairs])
            slots = self.values.get(acc_id)
            if slots is None:
                slots = self.values[acc_id] = array("q", bytes(8 * self.num_tasks))
                self.task_ids[acc_id] = array("q", [-1]) * self.num_tasks
            slot_tasks = self.task_ids[acc_id]
            for position, value in zip(positions, values, strict=True):
                index = indices[position]
                slots[index] = value
                slot_tasks[index] = task_ids[position]
            if types[acc_id] != SUM:
                # The first of the largest values wins, as Spark compares with `>`.
                top = max(values)
                best = self.maxes.get(acc_id)
                if best is None or top > best[0]:
                    self.maxes[acc_id] = [top, task_ids[positions[values.index(top)]]]


@dataclass
class _LiveExecution:
    execution_id: int
    metric_types: dict[int, str] = field(default_factory=dict)
    jobs: dict[int, str] = field(default_factory=dict)
    stages: ScalaIntSet = field(default_factory=ScalaIntSet)
    driver_updates: list[tuple[int, int]] = field(default_factory=list)
    end_events: int = 0


class _TypeNames:
    """The metric type names of a log, each with a number: a finished execution keeps its
    metrics' types as these numbers."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._codes: dict[str, int] = {}

    def code(self, name: str) -> int:
        """The number of a type name (a new one for a name not met yet)."""
        code = self._codes.get(name)
        if code is None:
            code = self._codes[name] = len(self.names)
            self.names.append(name)
        return code


class _DoneExecution:
    """A finished execution as the listener keeps it in case a later job reloads it (Spark
    reads it back from its store): the same values as its `_LiveExecution`, in flat arrays.
    A log of tens of thousands of executions keeps one for each, and the metric types' dict
    alone took 3 KB of them."""

    __slots__ = (
        "driver_updates",
        "execution_id",
        "job_ids",
        "job_states",
        "metric_runs",
        "metric_types",
        "stage_ids",
        "types_dict",
    )

    def __init__(self, ex: _LiveExecution, keep_types: bool, type_names: _TypeNames) -> None:
        self.execution_id = ex.execution_id
        types = ex.metric_types
        # A stage attempt still tracked for another execution shares the types' dict: then it
        # is kept as it is, so that both see the same metrics.
        self.types_dict = types if keep_types else None
        # In ascending order (nothing depends on the dict's order), as runs of consecutive ids
        # (first id, length), flat: a plan's accumulators are a few such runs.
        ids = [] if keep_types else sorted(types)
        runs = array("q")
        for acc_id in ids:
            if runs and runs[-2] + runs[-1] == acc_id:
                runs[-1] += 1
            else:
                runs.append(acc_id)
                runs.append(1)
        self.metric_runs = runs if runs else _EMPTY
        codes = [type_names.code(types[acc_id]) for acc_id in ids]
        # One byte each unless a log names more than 256 types.
        self.metric_types: bytes | array[int] = (
            bytes(codes) if max(codes, default=0) < 256 else array("q", codes)
        )
        self.job_ids = array("q", ex.jobs)
        self.job_states = "".join(_JOB_STATE_CODES[s] for s in ex.jobs.values())
        self.stage_ids = array("q", ex.stages.inserted())
        flat = array("q")
        for acc_id, value in ex.driver_updates:
            flat.append(acc_id)
            flat.append(value)
        self.driver_updates = flat

    def revive(self, type_names: _TypeNames) -> _LiveExecution:
        """The `_LiveExecution` this was made from (its end events not counted)."""
        types = self.types_dict
        if types is None:
            names = type_names.names
            runs = self.metric_runs
            ids = [
                acc_id
                for i in range(0, len(runs), 2)
                for acc_id in range(runs[i], runs[i] + runs[i + 1])
            ]
            types = {
                acc_id: names[code] for acc_id, code in zip(ids, self.metric_types, strict=True)
            }
        stages = ScalaIntSet()
        stages.add_all(self.stage_ids)
        flat = self.driver_updates
        return _LiveExecution(
            self.execution_id,
            types,
            {
                job_id: _JOB_STATES[code]
                for job_id, code in zip(self.job_ids, self.job_states, strict=True)
            },
            stages,
            [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)],
        )


_JOB_STATES = {"R": "RUNNING", "S": "SUCCEEDED", "F": "FAILED"}
_JOB_STATE_CODES = {name: code for code, name in _JOB_STATES.items()}


class SqlListener:
    """Fold SQL-relevant events in log order; `frozen` holds each execution's aggregated values."""

    def __init__(self) -> None:
        self._live: dict[int, _LiveExecution] = {}
        self._done: dict[int, _DoneExecution] = {}
        self._type_names = _TypeNames()
        self._stages: dict[int, _LiveStage] = {}
        self.frozen: dict[int, FrozenExecution] = {}
        self.stage_order: dict[int, list[int]] = {}
        """Each execution's stage ids in Scala Set order, as of its last change."""
        self.number_update_tracked = False
        """Whether a task end updated, with a JSON number, an accumulator its stage attempt
        tracks as a SQL metric, in a segment whose number updates were left out
        (`SqlUpdates.number_ids`): such a replay is not exact."""

    def _get_or_create(self, execution_id: int) -> _LiveExecution:
        ex = self._live.get(execution_id)
        if ex is None:
            ex = _LiveExecution(execution_id)
            self._live[execution_id] = ex
        return ex

    def add_metrics(self, execution_id: int, metrics: Iterable[tuple[int, str]]) -> None:
        """Track these metrics' accumulators and types, (accumulator id, metric type) pairs,
        for the execution (start, AQE)."""
        self._get_or_create(execution_id).metric_types.update(metrics)

    def job_start(
        self,
        execution_id: int,
        job_id: int,
        stage_ids: list[int],
        stage_tasks: list[tuple[int, int]],
    ) -> None:
        """A job of the execution started; `stage_tasks` is (stage id, number of tasks)."""
        ex = self._live.get(execution_id)
        if ex is None:
            done = self._done.pop(execution_id, None)
            if done is not None:
                # Spark reloads a finished execution from its store and tracks it again.
                ex = done.revive(self._type_names)
                ex.end_events = len(ex.jobs) + 1
                self._live[execution_id] = ex
            else:
                ex = self._get_or_create(execution_id)
        if ex.metric_types:
            for stage_id, n_tasks in stage_tasks:
                self._stages[stage_id] = _LiveStage(stage_id, 0, n_tasks, ex.metric_types)
        ex.jobs[job_id] = "RUNNING"
        ex.stages.add_all(stage_ids)
        self.stage_order[execution_id] = ex.stages.ordered()
        self._update(ex)

    def _is_sql_stage(self, stage_id: int) -> bool:
        return any(stage_id in ex.stages for ex in self._live.values())

    def stage_submitted(self, stage_id: int, attempt_id: int) -> None:
        """A stage attempt was submitted: a new attempt discards the old attempt's values."""
        if not self._is_sql_stage(stage_id):
            return
        stage = self._stages.get(stage_id)
        if stage is not None and stage.attempt_id != attempt_id:
            self._stages[stage_id] = _LiveStage(
                stage_id, attempt_id, stage.num_tasks, stage.metric_types
            )

    def job_end(self, job_id: int, succeeded: bool) -> None:
        """A job ended."""
        for ex in list(self._live.values()):
            if job_id in ex.jobs:
                ex.jobs[job_id] = "SUCCEEDED" if succeeded else "FAILED"
                ex.end_events += 1
                self._update(ex)

    def task_segment(self, sql: dict[tuple[int, int], SqlUpdates]) -> None:
        """Apply the task ends between two other events, per stage attempt (log order kept
        within each): only those of a stage attempt the listener tracks, for an execution that
        is still live, count."""
        for (stage_id, stage_attempt_id), updates in sql.items():
            stage = self._stages.get(stage_id)
            if stage is None or stage.attempt_id != stage_attempt_id:
                continue
            if not self._is_sql_stage(stage_id):
                continue
            if updates.number_ids and not updates.number_ids.isdisjoint(stage.metric_types):
                self.number_update_tracked = True
            stage.apply(updates)

    def driver_updates(self, execution_id: int, updates: list[tuple[int, int]]) -> None:
        """The driver set metric values for a live execution."""
        ex = self._live.get(execution_id)
        if ex is not None:
            ex.driver_updates.extend(updates)

    def execution_end(self, execution_id: int) -> None:
        """The execution ended: freeze its values now, as Spark does."""
        ex = self._live.get(execution_id)
        if ex is None:
            return
        self._update(ex)
        self.frozen[execution_id] = self._aggregate(ex)
        self._remove_stale(ex)
        ex.end_events += 1
        self._update(ex)

    def finish(self) -> None:
        """End of log: executions still tracked get the values that arrived (Spark's flush)."""
        for ex in self._live.values():
            self.frozen[ex.execution_id] = self._aggregate(ex)

    def _update(self, ex: _LiveExecution) -> None:
        if ex.end_events >= len(ex.jobs) + 1 and ex.execution_id in self._live:
            self._remove_stale(ex)
            del self._live[ex.execution_id]
            types = ex.metric_types
            shared = any(stage.metric_types is types for stage in self._stages.values())
            self._done[ex.execution_id] = _DoneExecution(ex, shared, self._type_names)

    def _remove_stale(self, ex: _LiveExecution) -> None:
        active: set[int] = set()
        for other in self._live.values():
            if other is not ex:
                active.update(other.stages.members())
        for stage_id in [s for s in self._stages if s not in active]:
            del self._stages[stage_id]

    def _aggregate(self, ex: _LiveExecution) -> FrozenExecution:
        types = ex.metric_types
        stages = [self._stages[s] for s in ex.stages.ordered() if s in self._stages]
        # Per metric, in the order first met: its stages' slots, then its driver values.
        blocks: dict[int, list[_LiveStage]] = {}
        maxes: dict[int, tuple[int, int, int, int]] = {}
        for stage in stages:
            for acc_id, best in stage.maxes.items():
                if acc_id not in types:
                    continue
                current = maxes.get(acc_id)
                if current is None or best[0] > current[0]:
                    maxes[acc_id] = (best[0], stage.stage_id, stage.attempt_id, best[1])
            for acc_id in stage.values:
                if acc_id in types:
                    blocks.setdefault(acc_id, []).append(stage)
        drivers: dict[int, list[int]] = {acc_id: [] for acc_id in blocks}
        for acc_id, value in ex.driver_updates:
            if acc_id in types:
                drivers.setdefault(acc_id, []).append(value)
        flat_blocks: array[int] = array("q")
        slot_values: array[int] = array("q")
        slot_task_ids: array[int] = array("q")
        flat_drivers: array[int] = array("q")
        flat_maxes: array[int] = array("q")
        for acc_id, values in drivers.items():
            for stage in blocks.get(acc_id, ()):
                slots = stage.values[acc_id]
                flat_blocks.extend((acc_id, stage.stage_id, stage.attempt_id, len(slots)))
                slot_values.extend(slots)
                slot_task_ids.extend(stage.task_ids[acc_id])
            for value in values:
                flat_drivers.extend((acc_id, value))
            best_at = maxes.get(acc_id)
            if best_at is not None and not any(v > best_at[0] for v in values):
                flat_maxes.append(acc_id)
                flat_maxes.extend(best_at)
        return FrozenExecution(
            array("q", drivers),
            flat_blocks,
            slot_values,
            slot_task_ids,
            flat_drivers or _EMPTY,
            flat_maxes or _EMPTY,
        )
