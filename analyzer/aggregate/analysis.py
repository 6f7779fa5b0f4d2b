"""The result of analyzing one event log: domain model, task frames and per-node statistics."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.allocator import release_free_memory
from analyzer.aggregate.attribution import ExecutionTime, attribute_time, task_cpus
from analyzer.aggregate.capacity import Capacity, build_capacity, task_slots_by_executor
from analyzer.aggregate.cost import CostFigures, compute_cost
from analyzer.aggregate.executor_summary import (
    FALLBACK_EXECUTOR_ID,
    ExecutorSummary,
    executor_order,
    executor_summaries,
    summarize_executor,
)
from analyzer.aggregate.failure_delay import failure_delays
from analyzer.aggregate.families import QueryFamily, query_families
from analyzer.aggregate.memory_need import MemoryNeed, stage_memory_needs
from analyzer.aggregate.node_metrics import MetricStats, NodeStats, aggregate_node_metrics
from analyzer.aggregate.outside_run import OutsideRun, outside_run
from analyzer.aggregate.plan_bounds import ShownPlan, bound_plan
from analyzer.aggregate.pricing import PriceSpec
from analyzer.aggregate.stage_stats import (
    StageTaskStats,
    aggregate_stage_tasks,
    executor_task_spans,
)
from analyzer.aggregate.stage_summary import StageTaskSummary, stage_task_summaries
from analyzer.aggregate.stage_wall import (
    RunningTasks,
    StageWall,
    running_tasks,
    stage_parts,
    take_stage_walls,
)
from analyzer.aggregate.streaming import (
    StreamingFigures,
    batch_of_execution,
    streaming_figures,
)
from analyzer.aggregate.tables import (
    PUSH_SHUFFLE_SCHEMA,
    SlotTable,
    TaskTable,
    narrowest,
    slot_frame,
    task_frames,
)
from analyzer.aggregate.task_detail import (
    MetricHistogram,
    NodeTaskQuery,
    NodeTaskRows,
    TaskCounts,
    TaskRow,
    metric_histograms,
    retried_task_counts,
    stage_task_rows,
    task_counts,
    top_task_rows,
)
from analyzer.aggregate.time_spent import (
    AppTimeSpent,
    StageSpan,
    app_time_spent,
    attempts_of,
    critical_path,
    has_open_work,
    last_task_ms_by_stage,
)
from analyzer.aggregate.timeline import Timeline, timeline_lanes
from analyzer.aggregate.what_if import WhatIfFigures, build_replay_plan, what_if_figures
from analyzer.eventlog.events import DecodeStats
from analyzer.eventlog.lines import ReadStats
from analyzer.eventlog.source import LogSource
from analyzer.model.application import (
    Application,
    Execution,
    Executor,
    PlanVersion,
    StageAttempt,
)
from analyzer.model.plan import PlanNode
from analyzer.replay.application import BuiltApplication

T = TypeVar("T")


@dataclass(frozen=True)
class _Making:
    """A figure being computed: by which thread, and when it is done (made or failed)."""

    thread: int
    done: threading.Event = field(default_factory=threading.Event)


SUMMARY_QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
"""The quantiles of `Analysis.stage_summaries`: Spark's stage page's (min, 25th, median, 75th,
max) and its REST API's default tails."""


@dataclass(frozen=True)
class Analysis:
    """Everything known about one application; the input of every report.

    Every figure a report or a rule shows is reached through this object: the fields hold what
    reading the log built, and the accessors below compute the rest on first use and keep it in
    `_figures`, the one cache of derived figures (an analysis is immutable, so a figure never
    goes stale). Views only shape what these return.
    """

    source: LogSource
    application: Application
    tasks: TaskTable
    """One row per task attempt, stored narrow; read it through `tasks.lazy()` (see
    `aggregate.tables.TaskTable`)."""
    slots: SlotTable
    """The values Spark's SQL tab aggregates (see `aggregate.tables.slot_frame`)."""
    node_stats: dict[int, Mapping[int, NodeStats]]
    """Per execution id, per plan node id: metric statistics and stages."""
    read_stats: ReadStats
    decode_stats: DecodeStats
    push_shuffle_tasks: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=PUSH_SHUFFLE_SCHEMA)
    )
    """Push-based shuffle read metrics of the task rows that have any (see
    `aggregate.tables.TaskFrames`); empty for most logs."""

    _figures: dict[Hashable, Any] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Derived figures by accessor and arguments, filled on first use (see `_once`)."""
    _making: dict[Hashable, _Making] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """The figures being computed now, by key: a figure asked for by a second thread while the
    first computes it is waited for, not computed twice (see `figures_made_aside`)."""
    _making_lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def _once(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Return the figure kept under `key`, computing it the first time it is asked for."""
        figures = self._figures
        if key in figures:
            return cast(T, figures[key])
        me = threading.get_ident()
        with self._making_lock:
            making = self._making.get(key)
            if making is None:
                making = self._making[key] = _Making(me)
        if making.thread != me:
            making.done.wait()
            if key in figures:
                return cast(T, figures[key])
            return self._once(key, compute)  # the other thread failed: fail here, with its error
        try:
            figures[key] = compute()
        finally:
            with self._making_lock:
                del self._making[key]
            making.done.set()
        return cast(T, figures[key])

    # Lookups of the application model.

    @property
    def executions_by_id(self) -> dict[int, Execution]:
        """The SQL executions by id."""
        return self._once(
            "executions_by_id", lambda: {e.execution_id: e for e in self.application.executions}
        )

    @property
    def attempts_by_key(self) -> dict[tuple[int, int], StageAttempt]:
        """The stage attempts by (stage id, attempt id)."""
        return self._once(
            "attempts_by_key",
            lambda: {(s.stage_id, s.attempt_id): s for s in self.application.stages},
        )

    @property
    def execution_of_stage(self) -> dict[int, int]:
        """The SQL execution of every stage that ran for one (the first one wins)."""

        def compute() -> dict[int, int]:
            out: dict[int, int] = {}
            for ex in self.application.executions:
                for stage_id in ex.stage_ids:
                    out.setdefault(stage_id, ex.execution_id)
            return out

        return self._once("execution_of_stage", compute)

    @property
    def properties(self) -> dict[str, str]:
        """The application's Spark properties by key."""
        return self._once("properties", lambda: dict(self.application.spark_properties))

    @property
    def job_execution_starts_ms(self) -> tuple[int, ...]:
        """Start times of the SQL executions that ran a job, ascending: which executions with
        jobs started within a given stretch, found by bisection."""
        return self._once(
            "job_execution_starts_ms",
            lambda: tuple(
                sorted(
                    e.start_ms
                    for e in self.application.executions
                    if e.job_ids and e.start_ms is not None
                )
            ),
        )

    @property
    def failed_execution_ids(self) -> frozenset[int]:
        """The SQL executions that failed."""
        return self._once(
            "failed_execution_ids",
            lambda: frozenset(
                e.execution_id for e in self.application.executions if e.status == "FAILED"
            ),
        )

    # Figures of the whole application.

    @property
    def times(self) -> dict[int, ExecutionTime]:
        """Per execution id: every node's self time and driver time (`aggregate.attribution`)."""
        return self._once(
            "times",
            lambda: attribute_time(self.application, self.node_stats, self.slots, self.tasks),
        )

    @property
    def peak_running_tasks(self) -> int:
        """The most task attempts that ran at once in the application (at least 1)."""
        return self._once(
            "peak_running_tasks", lambda: max(1, max(self.running_tasks.running, default=1))
        )

    @property
    def capacity(self) -> Capacity:
        """Task slots over time per resource profile (`aggregate.capacity`)."""
        return self._once(
            "capacity",
            lambda: build_capacity(self.application, self.peak_running_tasks, self.tasks),
        )

    def cost(self, prices: PriceSpec | None = None) -> CostFigures:
        """Core-hours and memory-hours held and used, priced by `prices` when given
        (`aggregate.cost`)."""
        return self._once(
            ("cost", prices),
            lambda: compute_cost(
                self.application,
                self.tasks,
                self.capacity.task_cpus,
                self.peak_running_tasks,
                prices.pricing_for(self.properties) if prices is not None else None,
            ),
        )

    @property
    def stage_walls(self) -> dict[tuple[int, int], StageWall]:
        """Per (stage, attempt): its wall time taken apart (`aggregate.stage_wall`)."""
        return self._once(
            "stage_walls",
            lambda: take_stage_walls(
                self.application,
                self.tasks,
                self.capacity,
                task_cpus(self.application),
                self.running_tasks,
                self.task_slots,
            ),
        )

    @property
    def task_slots(self) -> dict[str, int]:
        """Each executor's task slots, by executor id (`capacity.task_slots_by_executor`): the
        running counts are capped at them."""
        return self._once("task_slots", lambda: task_slots_by_executor(self.application))

    @property
    def running_tasks(self) -> RunningTasks:
        """Task attempts running at once in the whole application, as a step function of time
        (`aggregate.stage_wall.running_tasks`): the stage walls and the what-if both read it."""
        return self._once("running_tasks", lambda: running_tasks(self.tasks, self.task_slots))

    def what_if(self, task_slots: tuple[int, ...] | None = None) -> WhatIfFigures:
        """The predicted walls with other task slot counts (`task_slots`; None: half, double and
        four times the run's) and the critical path's floor (`aggregate.what_if`).

        The replay's plan (every task's duration, every moment's dependencies) is built for the
        figures and then dropped: a report asks once per slot list, and the plan holds a few
        hundred bytes per stage attempt and SQL execution.
        """
        return self._once(
            ("what_if", task_slots),
            lambda: what_if_figures(
                build_replay_plan(self.application, self.tasks, self.capacity, self.running_tasks),
                task_slots,
            ),
        )

    def stage_parts(self, stage_id: int) -> dict[str, int]:
        """A stage's wall parts summed over its attempts (`aggregate.stage_wall.stage_parts`)."""
        return self._once(
            ("stage_parts", stage_id), lambda: stage_parts(self.stage_walls, stage_id)
        )

    @property
    def streaming(self) -> tuple[StreamingFigures, ...]:
        """The figures of every Structured Streaming query run (`aggregate.streaming`); empty
        for an application without streaming queries."""
        if not self.application.streaming:
            return ()
        return self._once("streaming", lambda: streaming_figures(self.application, self.times))

    @property
    def query_families(self) -> tuple[QueryFamily, ...]:
        """The root executions that ran the same query, grouped by the plan fingerprint of their
        initial plans, the most wall time first (`aggregate.families`); empty when no query
        ran twice."""
        return self._once("query_families", lambda: query_families(self.application))

    @property
    def time_spent(self) -> AppTimeSpent:
        """The application's wall time cut into SQL executions, other jobs and the driver."""
        app = self.application

        def compute() -> AppTimeSpent:
            # Only work with no end event is counted up to its tasks: most logs have none.
            last_task = last_task_ms_by_stage(self.tasks) if has_open_work(app) else {}
            return app_time_spent(app, last_task)

        return self._once("time_spent", compute)

    @property
    def task_counts(self) -> TaskCounts:
        """The application's task attempts, and how many failed or were killed."""
        return self._once("task_counts", lambda: task_counts(self))

    @property
    def executor_summaries(self) -> tuple[ExecutorSummary, ...]:
        """Every executor and the driver with the History Server's totals."""
        return self._once("executor_summaries", lambda: executor_summaries(self.application))

    @property
    def stage_stats(self) -> dict[tuple[int, int], StageTaskStats]:
        """Task figures per (stage, attempt) (`aggregate.stage_stats`), in key order: the rules
        walk them in that order, and sorting 20,000 keys in each of a dozen rules cost more than
        sorting them once."""
        return self._once(
            "stage_stats", lambda: dict(sorted(aggregate_stage_tasks(self.tasks).items()))
        )

    @property
    def failure_delays(self) -> dict[tuple[int, int], int]:
        """Per (stage, attempt) with failed tasks: how much later (ms) its tasks ended for
        the failures and their retries (`aggregate.failure_delay`), on its task slots."""
        return self._once(
            "failure_delays",
            lambda: failure_delays(
                self.tasks, {key: wall.slots for key, wall in self.stage_walls.items()}
            ),
        )

    @property
    def executor_task_spans(self) -> dict[str, tuple[int, int]]:
        """Per executor id: its first task's launch and its last task's finish, epoch ms
        (`aggregate.stage_stats.executor_task_spans`)."""
        return self._once("executor_task_spans", lambda: executor_task_spans(self.tasks))

    @property
    def outside_run(self) -> OutsideRun:
        """Per kind, the intervals the log times outside the application's run, and the
        farthest distance from it (`aggregate.outside_run`)."""
        return self._once(
            "outside_run", lambda: outside_run(self.application, self.executor_task_spans)
        )

    @property
    def memory_needs(self) -> dict[tuple[int, int], MemoryNeed]:
        """Per (stage, attempt): its tasks' largest execution memory held and needed
        (`aggregate.memory_need`)."""
        return self._once("memory_needs", lambda: stage_memory_needs(self.tasks))

    @property
    def stage_summaries(self) -> dict[tuple[int, int], StageTaskSummary]:
        """Spark's task summary of every stage attempt at `SUMMARY_QUANTILES`, by (stage,
        attempt)."""
        return self._once("stage_summaries", lambda: stage_task_summaries(self, SUMMARY_QUANTILES))

    @property
    def retried_task_counts(self) -> dict[tuple[int, int], int]:
        """Per (stage, attempt): its task attempts that re-ran an index (none: left out)."""
        return self._once("retried_task_counts", lambda: retried_task_counts(self))

    # Figures of one execution.

    def stage_attempts_of(self, execution: Execution) -> list[StageAttempt]:
        """The attempts of an execution's stages, in the application's order (from an index of
        the stages: the reports ask this of every execution)."""
        return self._once(
            ("stage_attempts_of", execution.execution_id),
            lambda: attempts_of(set(execution.stage_ids), self.application.stages),
        )

    def critical_path(self, stage_ids: Collection[int], keep: bool = True) -> tuple[StageSpan, ...]:
        """The chain of stages an execution (of `stage_ids`, its own or with its sub-executions')
        waited for, first to last (`aggregate.time_spent`).

        With `keep=False` a path not kept yet is worked out and not kept: the JSON report asks
        once for every execution's, and keeping them grew the report's memory with executions
        (about 1 KB each).
        """
        # Kept per execution: a sorted tuple is a quarter of a frozenset of the same ids.
        key = ("critical_path", tuple(sorted(set(stage_ids))))
        if not keep and key not in self._figures:
            return critical_path(tuple(stage_ids), self.application.stages)
        return self._once(key, lambda: critical_path(tuple(stage_ids), self.application.stages))

    def metric_histograms(self, execution_id: int, n_bins: int) -> dict[int, MetricHistogram]:
        """Each plan-node metric of an execution binned into `n_bins` equal bins, by
        accumulator id."""
        return self._once(
            ("metric_histograms", execution_id, n_bins),
            lambda: metric_histograms(self, execution_id, n_bins),
        )

    def node_task_rows(
        self, execution_id: int, queries: Mapping[str, NodeTaskQuery], max_rows: int
    ) -> dict[str, NodeTaskRows]:
        """Per node key of `queries`: the execution's tasks with the largest main metric (at most
        `max_rows`) and all the node's metric values for them."""
        stage_ids = self.executions_by_id[execution_id].stage_ids
        return self._once(
            ("node_task_rows", execution_id, tuple(queries.items()), max_rows),
            lambda: top_task_rows(self, execution_id, stage_ids, queries, max_rows),
        )

    def timeline(self, execution_id: int, max_tasks: int, max_lanes: int) -> Timeline:
        """The execution's longest `max_tasks` task attempts per executor, in sub-lanes, on the
        `max_lanes` busiest executors (`aggregate.timeline`)."""
        stage_ids = self.executions_by_id[execution_id].stage_ids
        return self._once(
            ("timeline", execution_id, max_tasks, max_lanes),
            lambda: timeline_lanes(self, stage_ids, max_tasks, max_lanes),
        )

    def stage_task_rows(
        self, stage_keys: Collection[tuple[int, int]]
    ) -> dict[tuple[int, int], list[TaskRow]]:
        """The task attempts of some stage attempts, by task id, one dict per task line.

        Not kept: a line per task of many stages is large, and a report asks for them once.
        """
        return stage_task_rows(self, stage_keys)

    def shown_plan(self, execution: Execution, plan: PlanVersion) -> ShownPlan | None:
        """The plan version as pages draw it, bounded (`aggregate.plan_bounds`), worked out once
        per plan; None when the whole plan is drawn.

        An earlier plan version's operators take the statistics of the final plan's operators
        with the same accumulators (the page shares their panels); only the final plan's have
        self times.
        """
        return self._once(
            ("shown_plan", execution.execution_id, plan.index),
            lambda: self._bound_plan(execution, plan),
        )

    def _bound_plan(self, execution: Execution, plan: PlanVersion) -> ShownPlan | None:
        final_stats = self.node_stats.get(execution.execution_id, {})
        is_final = plan.index == execution.final_plan.index
        by_acc: dict[int, MetricStats] = {}

        def stats_of(node: PlanNode) -> NodeStats | None:
            if is_final:
                return final_stats.get(node.node_id)
            if not by_acc:
                by_acc.update(
                    (m.accumulator_id, m) for ns in final_stats.values() for m in ns.metrics
                )
            found = tuple(
                by_acc[acc_id]
                for acc_id in plan.graph.accumulator_ids(node.node_id)
                if acc_id in by_acc
            )
            return NodeStats(node.node_id, found, ())

        def self_time_of(node_id: int) -> float:
            times = self.times.get(execution.execution_id) if is_final else None
            node_time = times.nodes.get(node_id) if times is not None else None
            return (node_time.self_time_ms or 0.0) if node_time is not None else 0.0

        return bound_plan(plan.graph, stats_of, self_time_of)

    def listed_executor_summaries(self, max_rows: int) -> tuple[ExecutorSummary, ...]:
        """The History Server's summaries of the first `max_rows` executors a table lists (the
        driver, then by numeric id, then other ids); only those are summarized, as a log can
        register a million executors."""

        def compute() -> tuple[ExecutorSummary, ...]:
            executors = sorted(
                (e for e in self.application.executors if e.executor_id != FALLBACK_EXECUTOR_ID),
                key=executor_order,
            )
            return tuple(self._executor_summary(e, keep=True) for e in executors[:max_rows])

        return self._once(("listed_executor_summaries", max_rows), compute)

    def iter_executor_summaries(self) -> Iterator[tuple[Executor, ExecutorSummary]]:
        """Every executor and the driver, in registration order, each with its summary, one at
        a time: those a table listed are reused, the others made and not kept (the JSON report
        writes a million of them as they come)."""
        return (
            (e, self._executor_summary(e, keep=False))
            for e in self.application.executors
            if e.executor_id != FALLBACK_EXECUTOR_ID
        )

    def _executor_summary(self, executor: Executor, keep: bool) -> ExecutorSummary:
        """One executor's summary, kept (under its id, unique in a log) when `keep`."""
        key = ("executor_summary", executor.executor_id)
        if keep:
            return self._once(key, lambda: summarize_executor(executor, self.application))
        found = self._figures.get(key)
        return found if found is not None else summarize_executor(executor, self.application)

    def metrics_on_no_operator(self, execution: Execution) -> int:
        """How many metrics of `execution` hold task values though no operator of any of its
        plan versions declares them: metrics a plug-in declared only through adaptive metric
        updates (`SQLAdaptiveSQLMetricUpdates`, e.g. spark-rapids' subqueries). Spark's UI
        shows them on no operator either. Worked out on each call (a report asks it for the
        executions it details), from that execution's slot rows."""
        declared: set[int] = set()
        for plan in execution.plans:
            declared.update(plan.graph.all_accumulator_ids)
        if not self.slots.height or declared.issuperset(execution.metric_catalog.accumulator_ids):
            return 0  # every metric it tracks is an operator's: the slot rows need no look
        valued = (
            self.slots.lazy()
            .filter(pl.col("execution_id") == execution.execution_id)
            .select(pl.col("accumulator_id").unique())
            .collect(engine=ENGINE)
            .get_column("accumulator_id")
            .to_list()
        )
        return sum(1 for acc in valued if acc not in declared)

    @property
    def streaming_batches(self) -> dict[int, tuple[str, int]]:
        """Per execution id of a micro-batch: (its streaming query's label, the batch id)."""
        return self._once("streaming_batches", lambda: batch_of_execution(self.streaming))


@contextmanager
def figures_made_aside(
    analysis: Analysis, figures: Sequence[Callable[[Analysis], object]]
) -> Iterator[None]:
    """Compute `figures` (accessors of `analysis`, in order) in a second thread while the block
    runs, and wait for them when it ends.

    The figures of the task table (stage walls, task statistics and quantiles) are mostly
    polars, which works without holding Python's lock: made beside the Python of the what-if
    and the rules, they take no wall time of their own on a second core. A figure the block asks
    for while the thread makes it is waited for (`Analysis._once`); one the thread fails to make
    is made again where it is asked for, which raises its error there.
    """

    if not figures:
        yield
        return

    def make() -> None:
        for figure in figures:
            try:
                figure(analysis)
            except Exception:  # made again, and raised, where it is asked for
                continue

    thread = threading.Thread(target=make, name="figures-aside", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


MAX_TASK_MS = (1 << 63) >> 24
"""A task time above this (about 17 years) is no measurement: a task attempt's times are capped
at it, so that no sum over up to 2^24 task attempts passes a Java long's range and wraps into a
negative time (a log can give 2^63 - 1 ms)."""
_TASK_TIMES_MS = (
    "duration_ms",
    "getting_result_ms",
    "run_ms",
    "deserialize_ms",
    "gc_ms",
    "result_serialization_ms",
    "shuffle_fetch_wait_ms",
    "shuffle_remote_reqs_duration_ms",
)


def _sane_times(tasks: TaskTable) -> tuple[TaskTable, int]:
    """The task table with every task attempt's times capped at `MAX_TASK_MS`, and how many
    attempts end before their launch (a clock that went back, a hand-edited log): the replay
    made their durations 0 ms, and they are counted with the log's other inverted intervals."""
    found = (
        tasks.lazy()
        .select(
            ((pl.col("finish_ms") != 0) & (pl.col("finish_ms") < pl.col("launch_ms")))
            .sum()
            .alias("inverted"),
            pl.max_horizontal(pl.col(_TASK_TIMES_MS).max()).alias("longest"),
        )
        .collect(engine=ENGINE)
        .row(0)
    )
    n_inverted, longest = int(found[0] or 0), found[1]
    if longest is None or longest <= MAX_TASK_MS:
        return tasks, n_inverted  # the replay made the inverted attempts' durations 0 ms
    fixed = (
        tasks.lazy()
        .select(pl.col(_TASK_TIMES_MS).clip(upper_bound=MAX_TASK_MS))
        .collect(engine=ENGINE)
    )
    # Stored narrow again, as the table keeps every integer column (`TaskTable`).
    stored = tasks.stored.with_columns([narrowest(fixed[name]) for name in _TASK_TIMES_MS])
    return TaskTable(stored), n_inverted


def analyze_built(
    source: LogSource, built: BuiltApplication, read_stats: ReadStats, decode_stats: DecodeStats
) -> Analysis:
    """Turn a built application into an `Analysis` (frames and per-node statistics)."""
    frames = task_frames(built.tasks)
    tasks, n_inverted = _sane_times(frames.tasks)
    application = built.application
    if n_inverted:
        counted = (*application.inverted_intervals, ("task attempt", n_inverted))
        application = application.model_copy(update={"inverted_intervals": tuple(sorted(counted))})
        built = replace(built, application=application)
    slots = slot_frame(built.frozen)
    release_free_memory()  # the task arrays and the frozen slot arrays, now in polars
    node_stats = aggregate_node_metrics(built, slots, tasks)
    release_free_memory()  # the aggregation's batches of per-metric records
    return Analysis(
        source=source,
        application=application,
        tasks=tasks,
        slots=slots,
        node_stats=node_stats,
        read_stats=read_stats,
        decode_stats=decode_stats,
        push_shuffle_tasks=frames.push_shuffle,
    )
