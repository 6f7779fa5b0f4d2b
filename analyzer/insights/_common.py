"""What the rules share: figures computed once per analysis, significance, time-lost arithmetic."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.capacity import Capacity
from analyzer.aggregate.node_metrics import MetricStats, NodeStats
from analyzer.aggregate.stage_stats import StageTaskStats
from analyzer.aggregate.stage_wall import StageWall
from analyzer.insights.finding import Advice, Evidence, Finding, Severity
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Execution, Job, StageAttempt
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.units import decimal_int


@dataclass(frozen=True)
class RuleContext:
    """What every rule looks up, by the names the rules use; each figure is computed once and
    kept on the analysis (see `Analysis`), so a context costs nothing to make."""

    analysis: Analysis

    @property
    def stage_stats(self) -> dict[tuple[int, int], StageTaskStats]:
        """Task figures per (stage, attempt)."""
        return self.analysis.stage_stats

    @property
    def attempts(self) -> dict[tuple[int, int], StageAttempt]:
        """The stage attempts by (stage id, attempt id)."""
        return self.analysis.attempts_by_key

    @property
    def executions(self) -> dict[int, Execution]:
        """The SQL executions by id."""
        return self.analysis.executions_by_id

    @property
    def execution_of_stage(self) -> dict[int, int]:
        """The SQL execution of every stage that ran for one (the first one wins)."""
        return self.analysis.execution_of_stage

    @property
    def failed_executions(self) -> frozenset[int]:
        """Executions that failed: their stages' failures belong to `failed-query`."""
        return self.analysis.failed_execution_ids

    @property
    def walls(self) -> dict[tuple[int, int], StageWall]:
        """Every stage attempt's wall time taken apart (`aggregate.stage_wall`)."""
        return self.analysis.stage_walls

    @property
    def capacity(self) -> Capacity:
        """Task slots over time (`aggregate.capacity`)."""
        return self.analysis.capacity

    @property
    def properties(self) -> dict[str, str]:
        """The application's Spark properties."""
        return self.analysis.properties

    @property
    def slots_per_executor(self) -> int:
        """Task slots one executor offers: `spark.executor.cores` over `spark.task.cpus` when
        set, else the most any executor offered (at least 1)."""
        cap = self.capacity
        if cap.executor_cores:
            return max(1, cap.executor_cores // max(cap.task_cpus, 1))
        return max(
            [e.max_tasks for e in self.analysis.application.executors if e.executor_id != "driver"]
            + [1]
        )

    @property
    def cores(self) -> int:
        """The most task slots alive at once (`aggregate.capacity`), at least 1."""
        return max(1, self.capacity.peak_slots)

    @property
    def speculation_can_run(self) -> bool:
        """True when Spark could have run a speculative copy of a slow task: not in local mode
        (`TaskSchedulerImpl.start` never starts speculation there) and with executors on two
        hosts or more (`TaskSetManager` never runs a copy on a host where the task runs)."""
        if self.capacity.local_mode:
            return False
        hosts = {e.host for e in self.analysis.application.executors if e.executor_id != "driver"}
        hosts.discard("")
        return len(hosts) >= 2

    @property
    def speculation_on(self) -> bool:
        """True when the run already had `spark.speculation` on."""
        return self.properties.get("spark.speculation", "").strip().lower() == "true"

    def wall_ms(self, execution_id: int | None) -> int:
        """The wall time a finding is measured against: its query's, else the application's."""
        if execution_id is not None:
            ex = self.executions.get(execution_id)
            if ex is not None and ex.duration_ms is not None:
                return max(ex.duration_ms, 0)
        return max(self.analysis.application.duration_ms or 0, 0)

    def significant(self, lost_ms: float, execution_id: int | None, t: Thresholds) -> bool:
        """True when a loss is a meaningful share of its query's wall time and above the floor."""
        return lost_ms >= t.min_lost_ms and lost_ms >= t.min_query_share * self.wall_ms(
            execution_id
        )

    def severity(
        self,
        lost_ms: float,
        execution_id: int | None,
        t: Thresholds,
        floor: Severity = "warning",
    ) -> Severity:
        """`critical` for a loss of `critical_query_share` of the query's wall time and at least
        `critical_min_ms`, else `floor`."""
        wall = self.wall_ms(execution_id)
        big = lost_ms >= t.critical_min_ms and lost_ms >= t.critical_query_share * wall
        return "critical" if wall > 0 and big else floor

    def finding(
        self,
        rule: str,
        method: str,
        thresholds: Thresholds,
        lost_ms: int,
        *,
        title: str,
        suggestion: str,
        execution_id: int | None,
        node_id: int | None = None,
        stage_id: int | None = None,
        stage_attempt_id: int | None = None,
        task_ids: tuple[int, ...] = (),
        evidence: Iterable[Evidence] = (),
        advice: Iterable[Advice | None] = (),
    ) -> Finding | None:
        """Return a rule's finding, estimated to have cost `lost_ms` by `method`, or None when
        that is not a meaningful share of its query's wall time (`significant`); its severity is
        `severity`'s."""
        if not self.significant(lost_ms, execution_id, thresholds):
            return None
        return Finding(
            rule=rule,
            severity=self.severity(lost_ms, execution_id, thresholds),
            title=title,
            suggestion=suggestion,
            estimated_lost_ms=lost_ms,
            estimate_method=method,
            execution_id=execution_id,
            node_id=node_id,
            stage_id=stage_id,
            stage_attempt_id=stage_attempt_id,
            task_ids=task_ids,
            evidence=tuple(evidence),
            advice=tuple(a for a in advice if a is not None),
        )

    def stage_execution(self, stage_id: int) -> int | None:
        """The SQL execution a stage ran for, if any."""
        return self.execution_of_stage.get(stage_id)

    def in_failed_execution(self, stage_id: int) -> bool:
        """True for a stage of a failed execution (its failures are the query's failure)."""
        return self.execution_of_stage.get(stage_id) in self.failed_executions


class NodePicks:
    """The nodes of a plan that pass `test` (a function of a node alone), in id order, found
    once per plan shape.

    The graphs of every run of a repeated query and of every micro-batch of a stream share one
    tuple of nodes, so a rule looking for one kind of operator in thousands of executions tests
    the nodes of each distinct plan once instead of every execution's. Made for one pass of a
    rule over the executions: it keeps one entry per distinct plan until the pass ends.
    """

    __slots__ = ("_picked", "_test")

    def __init__(self, test: Callable[[PlanNode], bool]) -> None:
        self._test = test
        self._picked: dict[int, tuple[tuple[PlanNode, ...], tuple[PlanNode, ...]]] = {}

    def __call__(self, graph: PlanGraph) -> tuple[PlanNode, ...]:
        """The nodes of `graph` that pass the test."""
        nodes = graph.nodes
        hit = self._picked.get(id(nodes))
        if hit is None or hit[0] is not nodes:
            hit = self._picked[id(nodes)] = (nodes, tuple(filter(self._test, nodes)))
        return hit[1]


def declares(node: PlanNode, *names: str) -> bool:
    """Whether `node` declares a metric of every one of `names` (its statistics can hold no
    other metric)."""
    declared = {m.name for m in node.metrics}
    return all(name in declared for name in names)


def stage_operators(analysis: Analysis, execution_id: int, stage_id: int) -> list[PlanNode]:
    """The operators of an execution's final plan that ran in a stage: those whose metrics or
    codegen box say so, and those that log no metric there (Spark before 3.4 gives `Window`
    none) placed by the plan's shape, with the input they read: an input in the stage, or an
    exchange the stage reads (the last of its stages)."""
    graph = context(analysis).executions[execution_id].final_plan.graph
    stats = analysis.node_stats.get(execution_id, {})

    def stages_of(node_id: int) -> tuple[int, ...]:
        ns = stats.get(node_id)
        return ns.stage_ids if ns is not None else ()

    placed: dict[int, bool] = {}

    def runs_in(node: PlanNode, depth: int = 0) -> bool:
        found = placed.get(node.node_id)
        if found is not None:
            return found
        own = stages_of(node.node_id)
        if own:
            found = stage_id in own
        elif node.is_cluster or depth > 50:
            found = False
        else:
            found = False
            for child in graph.children_of(node.node_id):
                child_own = stages_of(child.node_id)
                if "Exchange" in child.name and child_own:
                    found = max(child_own) == stage_id
                else:
                    found = runs_in(child, depth + 1)
                if found:
                    break
        placed[node.node_id] = found
        return found

    return [n for n in graph.nodes if not n.is_cluster and runs_in(n)]


def context(analysis: Analysis) -> RuleContext:
    """Return the rules' lookups of `analysis`."""
    return RuleContext(analysis)


ROW_GROUP_BYTES = 128 * 1024 * 1024
"""Parquet's default row group (and ORC's stripe, 64 MiB, is smaller): the smallest unit a scan
can split a columnar file into."""


def parse_bytes(text: str | None, default: int) -> int:
    """Parse a Spark size setting (`128m`, `1g`, `134217728`) into bytes; `default` if unreadable.

    >>> parse_bytes("64m", 0), parse_bytes("1g", 0), parse_bytes("1000", 0), parse_bytes("x", 7)
    (67108864, 1073741824, 1000, 7)
    """
    raw = (text or "").strip().lower().removesuffix("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    factor = units.get(raw[-1:], 1) if raw else 1
    amount = decimal_int(raw[:-1] if raw[-1:] in units else raw)
    return amount * factor if amount is not None else default


def split_can_shrink(task_input_bytes: int, properties: dict[str, str]) -> bool:
    """True when lowering `spark.sql.files.maxPartitionBytes` could split a task's input further.

    A scan splits a file at `maxPartitionBytes` boundaries, but a columnar file only between row
    groups (and a compressed text file not at all): a task that read at most a couple of row
    groups, or more than a split holds (an unsplittable file), gains nothing from smaller splits.

    >>> split_can_shrink(100 << 20, {}), split_can_shrink(1 << 30, {}), split_can_shrink(
    ...     1 << 30, {"spark.sql.files.maxPartitionBytes": "1g"})
    (False, False, True)
    """
    split = parse_bytes(properties.get("spark.sql.files.maxPartitionBytes"), 128 << 20)
    return 2 * ROW_GROUP_BYTES <= task_input_bytes <= split + split // 10


def stage_stats(analysis: Analysis) -> dict[tuple[int, int], StageTaskStats]:
    """Return the task figures per (stage, attempt), computed once per analysis object."""
    return context(analysis).stage_stats


def wall_share_ms(
    stage_wall_ms: int | None, part_task_ms: float, stage_task_ms: float, slots: int = 1
) -> int:
    """Turn task time spent on one thing into the stage wall time it probably cost.

    The stage's wall time is split in proportion to task time: a part that took 20 % of the
    stage's summed task time is charged 20 % of the stage's wall time. Without a stage wall
    time (an unfinished stage) the task time is charged as if spread over the `slots` task
    slots the stage could use: its tasks ran side by side, so their summed time is no wall.

    >>> wall_share_ms(10_000, 2_000, 8_000), wall_share_ms(None, 31_900, 300_000, 12)
    (2500, 2658)
    """
    if stage_task_ms <= 0 or part_task_ms <= 0:
        return 0
    if stage_wall_ms is None:
        return int(part_task_ms / max(slots, 1))
    return int(min(stage_wall_ms, stage_wall_ms * part_task_ms / stage_task_ms))


def stage_part_wall_ms(
    analysis: Analysis,
    key: tuple[int, int],
    wall_part: Callable[[StageWall], int],
    summed_ms: Callable[[StageTaskStats], float],
) -> int:
    """The wall time a stage attempt's tasks spent on one thing: that part of its wall time
    (`wall_part` of `aggregate.stage_wall`), else the thing's summed task time (`summed_ms`)
    charged its share of the stage's wall (`wall_share_ms`)."""
    ctx = context(analysis)
    wall = ctx.walls.get(key)
    if wall is not None:
        return wall_part(wall)
    s = ctx.stage_stats[key]
    stage = ctx.attempts.get(key)
    return wall_share_ms(
        stage.duration_ms if stage else None, summed_ms(s), s.duration_sum_ms, ctx.cores
    )


FILE_LISTING_DESCRIPTION = "Listing leaf files and directories"
"""How Spark describes its parallel file listing job (partition discovery: `HadoopFSUtils`,
`InMemoryFileIndex` before 3.1): `… for 2004 paths:<br/>gs://…, ...`, `… for 1 path:<br/>…`."""
READER_METHODS = frozenset(("load", "parquet", "json", "csv", "orc", "text", "xml"))
"""`DataFrameReader` methods: a job named `load at …` ran inside the reader (schema inference,
a footer read), before the user's query existed."""


def spark_internal_job(job: Job) -> str | None:
    """Say what Spark itself was doing in a job it ran for its own sake, or None for a job the
    user's code started.

    Spark names a job by the last Spark method on its call site (`collect at app.py:12`) and
    sets a description for the jobs it runs itself: the parallel file listing is
    `Listing leaf files and directories for 2004 paths:<br/>…`; a `DataFrameReader` method
    outside any SQL execution (`load at …`) is the reader inferring a schema or reading footers.

    >>> from analyzer.model.application import Job
    >>> def job(name: str, description: str | None = None, execution_id: int | None = None):
    ...     return Job(0, execution_id, None, None, "SUCCEEDED", (0,), None, name, description)
    >>> spark_internal_job(job("load at NativeMethodAccessorImpl.java:0",
    ...     "Listing leaf files and directories for 2004 paths:<br/>gs://b/t/d=1, ..."))
    'file listing'
    >>> spark_internal_job(job("parquet at Main.scala:7"))
    'a reader inferring a schema'
    >>> [spark_internal_job(job("collect at app.py:3")),
    ...  spark_internal_job(job("parquet at Main.scala:9", execution_id=2))]
    [None, None]
    """
    if (job.description or "").startswith(FILE_LISTING_DESCRIPTION):
        return "file listing"
    method = job.name.split(" at ", 1)[0]
    if job.execution_id is None and " at " in job.name and method in READER_METHODS:
        return "a reader inferring a schema"
    return None


def metric(stats: NodeStats | None, name: str) -> MetricStats | None:
    """Return a node's metric called `name`, or None."""
    if stats is None:
        return None
    for m in stats.metrics:
        if m.name == name:
            return m
    return None


def adaptive_enabled(analysis: Analysis, execution: Execution) -> bool:
    """Return True if the execution ran under AQE (its plan is an AdaptiveSparkPlan)."""
    graph = execution.plans[0].graph if execution.plans else None
    if graph is not None and graph.find_all("AdaptiveSparkPlan"):
        return True
    return len(execution.plans) > 1


ROW_METRIC_NAMES = ("number of output rows", "records read", "shuffle records written")


def rows_out(analysis: Analysis, execution: Execution, node_id: int) -> int | None:
    """Return the rows a node produced: its own row metric, else its first descendant's.

    Operators inside a codegen cluster often have no row metric; the nearest node below them
    on the first-child path that has one (a Range, a scan, an exchange) stands in.
    """
    graph = execution.final_plan.graph
    stats = analysis.node_stats.get(execution.execution_id, {})
    current: int | None = node_id
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        ns = stats.get(current)
        for name in ROW_METRIC_NAMES:
            m = metric(ns, name)
            if m is not None:
                return m.total
        children = graph.children_of(current)
        current = children[0].node_id if children else None
    return None


_READ_SIDE_METRICS = frozenset(
    {
        "records read",
        "local bytes read",
        "remote bytes read",
        "fetch wait time",
        "local blocks read",
        "remote blocks read",
    }
)
"""An exchange's metrics the stage reading its shuffle updates (they name that stage)."""
_REPARTITION_BY_NUM = re.compile(r"(\d+)\),\s*REPARTITION_(?:BY|WITH)_NUM\b")
"""An exchange's partitioning asked for by `repartition(n)`: `RoundRobinPartitioning(200),
REPARTITION_BY_NUM` or `hashpartitioning(k#1, 200), REPARTITION_BY_NUM`; Spark 3.0 and 3.1
call the origin `REPARTITION_WITH_NUM`."""


def repartition_count(exchange_desc: str) -> int | None:
    """The partition count an exchange's description says `repartition(n)` asked for, or None
    when the exchange was not the query's own repartition by number.

    >>> repartition_count("Exchange RoundRobinPartitioning(2), REPARTITION_BY_NUM, [plan_id=80]")
    2
    >>> repartition_count("Exchange RoundRobinPartitioning(1), REPARTITION_WITH_NUM, [id=#41]")
    1
    >>> repartition_count("Exchange hashpartitioning(k#1, 200), ENSURE_REQUIREMENTS") is None
    True
    """
    match = _REPARTITION_BY_NUM.search(exchange_desc)
    return int(match.group(1)) if match is not None else None


def user_repartition(analysis: Analysis, execution_id: int, stage_id: int) -> int | None:
    """The partition count a `repartition(n)` of the query set for the shuffle stage
    `stage_id` reads, or None when `spark.sql.shuffle.partitions` (or AQE) sized it.

    Such a count is the query's own: neither `spark.sql.shuffle.partitions` nor AQE's
    coalescing changes it, so advice on the setting would change nothing.
    """
    execution = context(analysis).executions.get(execution_id)
    stats = analysis.node_stats.get(execution_id)
    if execution is None or stats is None:
        return None
    for node in execution.final_plan.graph.nodes:
        if "Exchange" not in node.name or "_NUM" not in node.desc:
            continue
        ns = stats.get(node.node_id)
        reads = ns is not None and any(
            m.name in _READ_SIDE_METRICS and stage_id in m.stage_ids for m in ns.metrics
        )
        asked = repartition_count(node.desc)
        if reads and asked is not None:
            return asked
    return None


def exchange_below(execution: Execution, node_id: int) -> int | None:
    """Return the id of the first Exchange on the first-child path below a join input, if any."""
    graph = execution.final_plan.graph
    current: int | None = node_id
    seen: set[int] = set()
    while current is not None and current not in seen:
        seen.add(current)
        node = graph.node(current)
        if "Exchange" in node.name:
            return current
        if "Join" in node.name or "Aggregate" in node.name:
            return None  # a different operator's input: not this side's shuffle
        children = graph.children_of(current)
        current = children[0].node_id if children else None
    return None


def stage_wall_ms(analysis: Analysis, stage_ids: tuple[int, ...]) -> int:
    """Return the summed wall time of the last attempt of each stage."""
    last: dict[int, int] = {}
    for st in analysis.application.stages:
        if st.stage_id in stage_ids and st.duration_ms is not None:
            last[st.stage_id] = st.duration_ms
    return sum(last.values())


def node_self_wall_ms(analysis: Analysis, execution: Execution, node_ids: set[int]) -> int:
    """Turn the self time of some nodes into the wall time it probably cost.

    Each node's self time in a stage is charged to that stage's wall time by its share of the
    stage's task run time (see `wall_share_ms`); the stages' charges add up.
    """
    times = analysis.times.get(execution.execution_id)
    if times is None:
        return 0
    by_stage: dict[int, float] = {}
    for node_id in node_ids:
        nt = times.nodes.get(node_id)
        if nt is None:
            continue
        for stage_id, ms in nt.by_stage:
            by_stage[stage_id] = by_stage.get(stage_id, 0.0) + ms
    ctx = context(analysis)
    total = 0
    for stage_id, ms in by_stage.items():
        st = times.stages.get(stage_id)
        wall = _stage_wall(ctx, stage_id)
        total += wall_share_ms(wall, ms, st.run_ms if st else 0)
    return total


def _stage_wall(ctx: RuleContext, stage_id: int) -> int | None:
    spans = [
        (s.submission_ms, s.completion_ms)
        for (sid, _), s in ctx.attempts.items()
        if sid == stage_id and s.submission_ms is not None and s.completion_ms is not None
    ]
    if not spans:
        return None
    return max(end for _, end in spans) - min(start for start, _ in spans)


def _reachable_in_stage(
    step: Callable[[int], Iterable[int]], node_id: int, stage_nodes: set[int]
) -> list[int]:
    """The nodes reached from `node_id` by repeated `step`s without leaving `stage_nodes`,
    nearest first (breadth first)."""
    out: list[int] = []
    frontier = list(step(node_id))
    seen: set[int] = set()
    while frontier:
        current = frontier.pop(0)
        if current in seen or current not in stage_nodes:
            continue
        seen.add(current)
        out.append(current)
        frontier.extend(step(current))
    return out


def descendants_in_stage(graph: PlanGraph, node_id: int, stage_nodes: set[int]) -> list[int]:
    """Return the nodes below `node_id` reachable without leaving `stage_nodes`, nearest first."""
    return _reachable_in_stage(
        lambda n: [c.node_id for c in graph.children_of(n)], node_id, stage_nodes
    )


def ancestors_in_stage(graph: PlanGraph, node_id: int, stage_nodes: set[int]) -> list[int]:
    """Return the nodes above `node_id` (its consumers) that ran in the same stage."""
    return _reachable_in_stage(
        lambda n: [p.node_id for p in graph.parents_of(n)], node_id, stage_nodes
    )
