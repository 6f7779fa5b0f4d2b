"""Task time per plan node, each millisecond counted once: the self time of every operator.

Spark's timing metrics overlap: a WholeStageCodegen `duration` is the wall time of its pipeline
from start to end (consumers included), `time in aggregation build` covers the operators fused
below the aggregate, scan time and file-system API times count the same reads, and a driver's
broadcast build runs outside any task. Summing them counts a stretch of task time several times.

The model here (docs/metrics.md, "Time attribution") starts from what the tasks really spent:

1. A stage's budget is the executor run time of its successful task attempts (every attempt of
   the stage that belongs to the execution; from Spark 4.0 divided by `spark.task.cpus`, which
   Spark multiplies it by). Failed and killed attempts are lost time, reported apart.
2. Time outside every operator: per task, run time beyond its longest codegen pipeline (task
   set-up, code generation, what a shuffle writer does after its last record). It is kept apart
   as the stage's `outside_ms`.
3. Metrics that time one operator's own work and nothing else (`EXCLUSIVE_METRICS`: shuffle
   write and fetch wait, sort time, scan time, a write's task commit, a GPU operator's op time)
   claim their value from the budget of the stage they were updated in. If the claims exceed
   the budget, `outside_ms` gives way first, then the claims are scaled down to fit.
4. The rest of the budget, time no metric claims, is shared among the stage's operators by the
   work they did: rows handled times a cost factor per operator family (`COST_FACTORS`). This
   part is an estimate; the stage's total is measured. Codegen `duration`s cannot do this job:
   each is the wall time from its pipeline's start to its end, consumers included, so a sort
   pipeline feeding a join lasts as long as the join does.
5. Driver-side time (`DRIVER_METRICS`: building and sending a broadcast, listing files, pruning
   partitions, committing a job) is kept apart, per node, and never mixed with task time.

So for every execution the self times of its nodes add up to at most its tasks' executor run
time, and the driver time is reported beside it.

Which metrics claim time and what a row costs are in `self_time_rules.py`; the stages' budgets
and the metric values per stage, from the task and slot frames, in `stage_budgets.py`. Their
public names are re-exported here.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.aggregate.node_metrics import NodeStats
from analyzer.aggregate.self_time_rules import (
    BOUNDING_METRICS,
    CODEGEN_DURATION,
    COST_FACTORS,
    DEFAULT_COST,
    DRIVER_METRICS,
    EXCHANGE_READ_ROWS,
    EXCHANGE_WRITE_ROWS,
    EXCLUSIVE_METRICS,
    EXPRESSION_COST,
    MAX_EXPRESSION_COST,
    NESTED_LOOP_COST,
    NO_WORK_OPERATORS,
    OWN_TIME_PARTS,
    PYTHON_OPERATORS,
    ROW_METRICS,
    VENDOR_PREFIXES,
    claiming_metrics,
    cost_factor,
    is_nested_loop,
    is_python_operator,
    is_timer,
)
from analyzer.aggregate.shared import SharedValues, by_node_id, plain_float
from analyzer.aggregate.stage_budgets import (
    acc_stage_sums,
    stage_outside_ms,
    stage_run_ms,
    task_cpus,
)
from analyzer.aggregate.tables import SlotTable, TaskTable, slot_batches
from analyzer.model.application import Application, Execution
from analyzer.model.plan import PlanEdge, PlanGraph, PlanNode
from analyzer.model.trusted import slot_setters

NS_PER_MS = 1_000_000
TOTAL = -1
"""The stage id under which a metric's total (task and driver values) is kept."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True, slots=True)
class NodeTime:
    """The time that belongs to one plan node alone."""

    node_id: int = field(metadata=_help("Plan node id (final plan)."))
    self_time_ms: float | None = field(
        metadata=_help(
            "Task time that belongs to this node alone, in ms; None for nodes that run no task "
            "work of their own (codegen clusters, adaptive wrappers, broadcast exchanges)."
        )
    )
    measured_ms: float = field(
        metadata=_help("The part of self time its own exclusive metrics measured, in ms.")
    )
    driver_time_ms: float = field(
        metadata=_help("Driver-side time of this node (broadcast build, file listing), in ms.")
    )
    stage_ids: tuple[int, ...] = field(metadata=_help("Stages whose tasks did its work."))
    stage_shares: tuple[int | float, ...] = field(
        default=(),
        metadata=_help(
            "Stage id, self time in that stage in ms, stage id, ... by stage id: flat, as "
            "thousands of executions hold one per node (see `by_stage`)."
        ),
    )

    @property
    def by_stage(self) -> tuple[tuple[int, float], ...]:
        """(stage id, self time in that stage in ms), by stage id."""
        shares = self.stage_shares
        return tuple(zip(shares[0::2], shares[1::2], strict=True))  # type: ignore[arg-type]


_new = object.__new__
_NODE_TIME_SLOTS = slot_setters(NodeTime)


def _node_time(
    node_id: int,
    self_time_ms: float | None,
    measured_ms: float,
    driver_time_ms: float,
    stage_ids: tuple[int, ...],
    stage_shares: tuple[int | float, ...],
) -> NodeTime:
    """A `NodeTime` of values already of its fields' types, put in its slots: a frozen
    dataclass's `__init__` costs twice as much, and a log of thousands of executions makes one
    per plan node."""
    out = _new(NodeTime)
    set_node, set_self, set_measured, set_driver, set_stages, set_shares = _NODE_TIME_SLOTS
    set_node(out, node_id)
    set_self(out, self_time_ms)
    set_measured(out, measured_ms)
    set_driver(out, driver_time_ms)
    set_stages(out, stage_ids)
    set_shares(out, stage_shares)
    return out


@dataclass(frozen=True, slots=True)
class StageTime:
    """How one stage's task time was attributed."""

    stage_id: int = field(metadata=_help("Spark's stage id."))
    run_ms: int = field(
        metadata=_help("Executor run time of its successful task attempts: the budget.")
    )
    outside_ms: float = field(
        metadata=_help(
            "Task time outside every operator: run time beyond each task's longest codegen "
            "pipeline (set-up, code generation, shuffle files merged after the last record)."
        )
    )
    measured_ms: float = field(metadata=_help("The part exclusive metrics claimed, after capping."))
    estimated_ms: float = field(metadata=_help("The part shared among its operators by work."))
    unattributed_ms: float = field(
        metadata=_help("Budget no operator of the final plan could take (no operator ran here).")
    )


@dataclass(frozen=True, slots=True)
class ExecutionTime:
    """Every node's self time in one SQL execution, and what the stages' budgets were."""

    execution_id: int = field(metadata=_help("Spark's SQL execution id."))
    nodes: Mapping[int, NodeTime] = field(metadata=_help("By node id."))
    stages: dict[int, StageTime] = field(metadata=_help("By stage id."))
    task_run_ms: int = field(
        metadata=_help("Executor run time of every task attempt of the execution's stages.")
    )
    failed_run_ms: int = field(
        metadata=_help("Of that, the run time of failed and killed attempts (never attributed).")
    )
    outside_ms: float = field(metadata=_help("Sum of the stages' time outside every operator."))
    driver_ms: float = field(metadata=_help("Sum of the nodes' driver time."))

    @property
    def attributed_ms(self) -> float:
        """Sum of the nodes' self times."""
        return sum(n.self_time_ms or 0.0 for n in self.nodes.values())


def _metric_ms(metric_type: str, value: float) -> float:
    return value / NS_PER_MS if metric_type == "nsTiming" else float(value)


@dataclass
class _Sums:
    """Per-(accumulator, stage) sums of one execution, and the stages' budgets."""

    by_acc_stage: dict[tuple[int, int], int]
    """(accumulator id, stage id) → sum of the task values updated in that stage."""
    run_ms: dict[int, int]
    """stage id → executor run time of its successful task attempts."""
    all_run_ms: dict[int, int]
    """stage id → executor run time of all its task attempts."""
    outside_ms: dict[int, float]
    """stage id → run time of its successful tasks beyond their longest codegen duration."""


@dataclass(frozen=True)
class _PlanProfile:
    """What the attribution reads of a plan's structure, the same for every run of the plan:
    a stream's micro-batches and a repeated query's runs share one (see `_profile_of`).

    Metrics are named by their index in the graph's `all_accumulator_ids` (node after node,
    each node's in the order of its `metrics`), so a run only brings its own ids.
    """

    nodes: tuple[PlanNode, ...]
    edges: tuple[PlanEdge, ...]
    """The graph's own tuples: held so that the key of a profile names live objects."""
    children: dict[int, list[PlanNode]]
    spans: dict[int, tuple[int, int]]
    """Node id → where its metrics' ids start and end."""
    rows_at: dict[int, int]
    """Node id → the index of its first row metric (`ROW_METRICS`), for the nodes with one."""
    read_at: dict[int, int]
    """Exchange id → the index of its first read-side row metric (`EXCHANGE_READ_ROWS`)."""
    write_at: dict[int, int]
    """Exchange id → the index of its first write-side row metric (`EXCHANGE_WRITE_ROWS`)."""
    fetch_at: dict[int, int]
    """Exchange id → the index of its fetch wait time."""
    operators: tuple[PlanNode, ...]
    """The nodes that do work (no clusters, no `NO_WORK_OPERATORS`), in graph order."""
    operator_ids: frozenset[int]
    """The node ids of `operators`."""
    claims: dict[int, tuple[tuple[int, str], ...]]
    """Operator id → its claiming metrics (`claiming_metrics`) as (index, metric type)."""
    whole_own: frozenset[int]
    """Operators that declare a timer of their whole own time (`OWN_TIME_PARTS`: a
    spark-rapids `op time`, a Photon `exclusive time`): measured, so no share of the time no
    timer claims."""
    bounds: dict[int, tuple[int, str]]
    """Operator id → (index, metric type) of a timer of its time with its children's (a
    spark-rapids `total time`, plugin 21.10 and older), for an operator without an own-time
    timer: its own time is at most that."""
    vendor: frozenset[int]
    """GPU and Photon operators (`VENDOR_PREFIXES`): in a stage of such timed operators, the
    time no timer claims is not theirs either (their transfers, exchanges and unions are
    timed or do no work of their own)."""
    driver: tuple[tuple[int, int, str], ...]
    """(node id, index, metric type) of every driver-side timing (`DRIVER_METRICS`)."""


def _first_named(node: PlanNode, start: int, names: tuple[str, ...]) -> int | None:
    """The index of the node's first metric named one of `names` (its metrics start at
    `start`), if any."""
    for i, m in enumerate(node.metrics):
        if m.name in names:
            return start + i
    return None


def _build_profile(graph: PlanGraph) -> _PlanProfile:
    """Work out a graph's profile (see `_PlanProfile`)."""
    spans: dict[int, tuple[int, int]] = {}
    rows_at: dict[int, int] = {}
    read_at: dict[int, int] = {}
    write_at: dict[int, int] = {}
    fetch_at: dict[int, int] = {}
    driver: list[tuple[int, int, str]] = []
    start = 0
    for n in graph.nodes:
        node_id = n.node_id
        spans[node_id] = (start, start + len(n.metrics))
        for at, found in (
            (rows_at, _first_named(n, start, ROW_METRICS)),
            (read_at, _first_named(n, start, EXCHANGE_READ_ROWS)),
            (write_at, _first_named(n, start, EXCHANGE_WRITE_ROWS)),
            (fetch_at, _first_named(n, start, ("fetch wait time",))),
        ):
            if found is not None:
                at[node_id] = found
        driver.extend(
            (node_id, start + i, m.metric_type)
            for i, m in enumerate(n.metrics)
            if m.name in DRIVER_METRICS
        )
        start += len(n.metrics)
    operators = tuple(
        n for n in graph.nodes if not n.is_cluster and n.name not in NO_WORK_OPERATORS
    )
    claims = {
        n.node_id: tuple(
            (at, m.metric_type)
            for m, at in claiming_metrics(n, range(spans[n.node_id][0], spans[n.node_id][1]))
        )
        for n in operators
    }
    whole_own = frozenset(
        n.node_id
        for n in operators
        if any(m.name in OWN_TIME_PARTS and is_timer(m) for m in n.metrics)
    )
    vendor = frozenset(n.node_id for n in operators if n.name.startswith(VENDOR_PREFIXES))
    bounds = {}
    for n in operators:
        if n.node_id in whole_own:
            continue
        for i, m in enumerate(n.metrics):
            if m.name in BOUNDING_METRICS and is_timer(m):
                bounds[n.node_id] = (spans[n.node_id][0] + i, m.metric_type)
                break
    return _PlanProfile(
        nodes=graph.nodes,
        edges=graph.edges,
        children={n.node_id: graph.children_of(n.node_id) for n in graph.nodes},
        spans=spans,
        rows_at=rows_at,
        read_at=read_at,
        write_at=write_at,
        fetch_at=fetch_at,
        operators=operators,
        operator_ids=frozenset(n.node_id for n in operators),
        claims=claims,
        whole_own=whole_own,
        bounds=bounds,
        vendor=vendor,
        driver=tuple(driver),
    )


def _profile_of(graph: PlanGraph, profiles: dict[tuple[int, int], _PlanProfile]) -> _PlanProfile:
    """The graph's profile, made once for all graphs that hold the same node and edge tuples
    (the replay gives every run of a plan its shape's)."""
    key = (id(graph.nodes), id(graph.edges))
    found = profiles.get(key)
    if found is None or found.nodes is not graph.nodes or found.edges is not graph.edges:
        found = profiles[key] = _build_profile(graph)
    return found


class _ExecutionAttribution:
    """Works out one execution's node times (see the module docstring).

    What each node's metrics are (its row count, an exchange's read and write rows, the metrics
    that claim time) and its inputs are looked up once per execution, not once per stage and
    walk: a log of thousands of short executions runs this for each of them.
    """

    def __init__(self, execution: Execution, sums: _Sums, profile: _PlanProfile) -> None:
        self.execution = execution
        self.graph: PlanGraph = execution.final_plan.graph
        self.sums = sums
        self.stages = sorted(
            {s for s in execution.stage_ids if s in sums.run_ms or s in sums.all_run_ms}
        )
        self.profile = profile
        self.children = profile.children
        self.ids: Sequence[int] = self.graph.all_accumulator_ids
        """The run's accumulator ids, at the indexes the profile names."""
        self.node_stages: dict[int, set[int]] = {}
        self._assign_stages()

    def _acc(self, at: int | None) -> int | None:
        """The run's accumulator id at a profile index, if there is one."""
        return None if at is None else self.ids[at]

    def value(self, acc_id: int, stage: int) -> int:
        return self.sums.by_acc_stage.get((acc_id, stage), 0)

    def _acc_stages(self) -> dict[int, set[int]]:
        """Accumulator id → the execution's stages in which its task values sum to non-zero."""
        in_execution = set(self.stages)
        out: dict[int, set[int]] = defaultdict(set)
        for (acc_id, stage), total in self.sums.by_acc_stage.items():
            if total and stage in in_execution:
                out[acc_id].add(stage)
        return out

    def _assign_stages(self) -> None:
        """Give every operator the stages it ran in: its metrics', else its cluster's, else the
        nearest descendant's within the same stage (an exchange's read side for its parent)."""
        graph = self.graph
        acc_stages = self._acc_stages()
        spans, ids = self.profile.spans, self.ids
        node_stages = self.node_stages
        for node in graph.nodes:
            own: set[int] = set()
            start, end = spans[node.node_id]
            for acc_id in ids[start:end]:
                found = acc_stages.get(acc_id)
                if found:
                    own |= found
            node_stages[node.node_id] = own
        for node in graph.nodes:
            if node.is_cluster or node_stages[node.node_id]:
                continue
            if node.cluster_id is not None:
                cluster = node_stages.get(node.cluster_id)
                if cluster:
                    node_stages[node.node_id] = set(cluster)
                    continue
            node_stages[node.node_id] = self._inherited(node)

    def _inherited(self, node: PlanNode) -> set[int]:
        seen: set[int] = set()
        children, node_stages = self.children, self.node_stages
        frontier = deque(children[node.node_id])
        while frontier:
            child = frontier.popleft()
            child_id = child.node_id
            if child_id in seen:
                continue
            seen.add(child_id)
            stages = node_stages.get(child_id)
            if not stages:
                frontier.extend(children[child_id])
                continue
            if "Exchange" in child.name:
                read = {s for s in stages if self._reads_in(child, s)}
                if read:
                    return read
                continue
            if not child.is_cluster:
                return set(stages)
            frontier.extend(children[child_id])
        return set()

    def _reads_in(self, exchange: PlanNode, stage: int) -> bool:
        profile = self.profile
        read = self._acc(profile.read_at.get(exchange.node_id))
        fetch = self._acc(profile.fetch_at.get(exchange.node_id))
        return (read is not None and self.value(read, stage) > 0) or (
            fetch is not None and (fetch, stage) in self.sums.by_acc_stage
        )

    def _rows_out(self, node: PlanNode, stage: int, memo: dict[tuple[int, int], int]) -> int:
        """Rows a node produced in a stage: its row metric, else what its inputs produced."""
        key = (node.node_id, stage)
        if key in memo:
            return memo[key]
        memo[key] = 0  # a reused node reached again while being worked out
        profile = self.profile
        acc = self._acc(profile.rows_at.get(node.node_id))
        if "Exchange" in node.name:
            write = self._acc(profile.write_at.get(node.node_id))
            read = self._acc(profile.read_at.get(node.node_id))
            rows = (self.value(read, stage) if read is not None else 0) or (
                self.value(write, stage) if write is not None else 0
            )
        elif acc is not None:
            rows = self.value(acc, stage)
        else:
            rows = self._rows_in(node, stage, memo)
        memo[key] = rows
        return rows

    def _rows_in(self, node: PlanNode, stage: int, memo: dict[tuple[int, int], int]) -> int:
        total = 0
        node_stages = self.node_stages
        for child in self.children[node.node_id]:
            if child.is_cluster or stage in node_stages[child.node_id]:
                total += self._rows_out(child, stage, memo)
        return total

    def _weight(self, node: PlanNode, stage: int, memo: dict[tuple[int, int], int]) -> float:
        """The work a node did in a stage, in cost-weighted rows."""
        name = node.name
        rows_in = self._rows_in(node, stage, memo)
        rows_out = self._rows_out(node, stage, memo)
        if is_nested_loop(name):
            sides = [self._side_rows(child) for child in self.children[node.node_id]]
            pairs = sides[0] * sides[1] if len(sides) == 2 else 0
            return NESTED_LOOP_COST * pairs + rows_out
        if "Join" in name:
            return cost_factor(name, node.desc) * (rows_in + rows_out)
        if "Exchange" in name:
            return cost_factor(name, node.desc) * rows_out
        if any(part in name for part in ("Expand", "Generate", "Scan", "Range")):
            return cost_factor(name, node.desc) * rows_out
        return cost_factor(name, node.desc) * max(rows_in, rows_out if not rows_in else 0)

    def _side_rows(self, node: PlanNode) -> int:
        """All rows one input of a join produced, driver values included (a broadcast's rows are
        counted on the driver), else what its own inputs produced."""
        memo: dict[tuple[int, int], int] = {}
        acc = self._acc(self.profile.rows_at.get(node.node_id))
        if acc is not None:
            return self.sums.by_acc_stage.get((acc, TOTAL), 0)
        children = self.children[node.node_id]
        if len(children) == 1:
            return self._side_rows(children[0])
        return sum(self._rows_out(node, s, memo) for s in self.stages)

    def run(
        self, shared: SharedValues, idle_times: dict[tuple[object, ...], NodeTime]
    ) -> ExecutionTime:
        """Attribute the execution's task time; `shared` hands out the one object of each
        repeated value (most times are 0, and every run of a repeated query has the same), and
        `idle_times` the one time of each node without work of its own, by its fields."""
        graph = self.graph
        sums = self.sums
        measured: dict[int, float] = defaultdict(float)
        estimated: dict[int, float] = defaultdict(float)
        per_stage: dict[int, dict[int, float]] = defaultdict(dict)
        driver: dict[int, float] = defaultdict(float)
        stage_times: dict[int, StageTime] = {}
        profile, ids = self.profile, self.ids
        operators = profile.operators
        for node_id, at, metric_type in profile.driver:
            driver[node_id] += _metric_ms(metric_type, self._driver_total(ids[at]))
        memo: dict[tuple[int, int], int] = {}
        node_claims = profile.claims  # (profile index of the accumulator, type) per node
        by_acc_stage = sums.by_acc_stage
        for stage in self.stages:
            # Never negative: a hostile log's run times can add up past 8 bytes and wrap.
            budget = max(0.0, float(sums.run_ms.get(stage, 0)))
            outside = min(budget, sums.outside_ms.get(stage, 0.0))
            in_stage = [n for n in operators if stage in self.node_stages[n.node_id]]
            claims: dict[int, float] = defaultdict(float)
            for node in in_stage:
                for at, metric_type in node_claims[node.node_id]:
                    claims[node.node_id] += _metric_ms(
                        metric_type, by_acc_stage.get((ids[at], stage), 0)
                    )
            claimed = sum(claims.values())
            if claimed > budget - outside:  # the measured work needs the room: outside gives way
                outside = max(0.0, budget - claimed)
            scale = budget / claimed if claimed > budget else 1.0
            for node_id, ms in claims.items():
                measured[node_id] += ms * scale
            rest = max(0.0, budget - outside - claimed * scale)
            # Operators whose whole own time a timer measured take no share of the rest: on a
            # GPU or Photon stage whose every operator is timed, the rest is time outside them
            # (waiting for the GPU or for other stages, transfers), not theirs.
            whole_own = profile.whole_own
            if any(n.node_id in whole_own for n in in_stage):
                vendor = profile.vendor
                sharing = [n for n in in_stage if n.node_id not in vendor]
            else:
                sharing = in_stage
            weights = {n.node_id: self._weight(n, stage, memo) for n in sharing}
            total_weight = sum(weights.values())
            shares: dict[int, float] = {}
            if rest > 0 and total_weight > 0:
                shares = {node_id: rest * w / total_weight for node_id, w in weights.items()}
            elif rest > 0 and sharing:
                shares = {n.node_id: rest / len(sharing) for n in sharing}
            # A timer of an operator's time with its children's (an old spark-rapids `total
            # time`) bounds its own: what the rows gave it beyond that is no operator's.
            bounds = profile.bounds
            for node_id, (at, metric_type) in bounds.items():
                if node_id in shares:
                    # Less its children's own such timers, which its own one holds.
                    bound_ms = _metric_ms(metric_type, by_acc_stage.get((ids[at], stage), 0))
                    for child in self.children[node_id]:
                        if child.node_id in bounds:
                            child_at, child_type = bounds[child.node_id]
                            bound_ms -= _metric_ms(
                                child_type, by_acc_stage.get((ids[child_at], stage), 0)
                            )
                    own_ms = claims.get(node_id, 0.0) * scale
                    shares[node_id] = min(shares[node_id], max(0.0, bound_ms - own_ms))
            for node_id, ms in shares.items():
                estimated[node_id] += ms
            unattributed = rest - sum(shares.values())
            for node in in_stage:
                share = claims.get(node.node_id, 0.0) * scale + shares.get(node.node_id, 0.0)
                if share > 0:
                    per_stage[node.node_id][stage] = share
            stage_times[stage] = StageTime(
                stage_id=stage,
                run_ms=int(budget),
                outside_ms=shared.real(outside),
                measured_ms=shared.real(claimed * scale),
                estimated_ms=shared.real(rest - unattributed) if in_stage else 0.0,
                unattributed_ms=shared.real(unattributed),
            )
        nodes: dict[int, NodeTime] = {}
        node_stages = self.node_stages
        operator_ids = profile.operator_ids
        real, one = shared.real, shared.one
        zero = real(0.0)
        for node in graph.nodes:
            node_id = node.node_id
            own = node_stages.get(node_id)
            stages = one(tuple(sorted(own))) if own else ()
            # Most nodes have no measured or driver time: 0.0 then, the one object of zero.
            measured_ms = real(measured[node_id]) if node_id in measured else zero
            driver_ms = real(driver[node_id]) if node_id in driver else zero
            if stages and node_id in operator_ids:
                nodes[node_id] = _node_time(
                    node_id,
                    real(measured_ms + estimated.get(node_id, 0.0)),
                    measured_ms,
                    driver_ms,
                    stages,
                    _flat_shares(per_stage[node_id], shared),
                )
                continue
            # A node without work of its own has the same times in every run of a query or
            # micro-batch: one object for all of them, when equal means the same (no int
            # standing for a float, no negative zero).
            if plain_float(measured_ms) and plain_float(driver_ms):
                key = (node_id, measured_ms, driver_ms, stages)
                idle = idle_times.get(key)
                if idle is None:
                    idle = idle_times[key] = _node_time(
                        node_id, None, measured_ms, driver_ms, stages, ()
                    )
                nodes[node_id] = idle
            else:
                nodes[node_id] = _node_time(node_id, None, measured_ms, driver_ms, stages, ())
        run_all = sum(sums.all_run_ms.get(s, 0) for s in self.stages)
        run_ok = sum(sums.run_ms.get(s, 0) for s in self.stages)
        return ExecutionTime(
            execution_id=self.execution.execution_id,
            nodes=by_node_id(nodes),
            stages=stage_times,
            task_run_ms=run_all,
            failed_run_ms=run_all - run_ok,
            outside_ms=sum(st.outside_ms for st in stage_times.values()),
            driver_ms=sum(driver.values()),
        )

    def _driver_total(self, acc_id: int) -> int:
        return self.sums.by_acc_stage.get((acc_id, TOTAL), 0)


def _flat_shares(by_stage: dict[int, float], shared: SharedValues) -> tuple[int | float, ...]:
    """(stage id, ms, stage id, ms, ...) by stage id, each float the one object of its value."""
    return tuple([v for stage in sorted(by_stage) for v in (stage, shared.real(by_stage[stage]))])


def attribute_time(
    app: Application,
    node_stats: Mapping[int, Mapping[int, NodeStats]],
    slots: SlotTable,
    tasks: TaskTable,
) -> dict[int, ExecutionTime]:
    """Work out every execution's node self times and driver times (see the module docstring).

    The executions' metric sums per stage are taken in batches of about
    `tables.BATCH_SLOT_ROWS` slot rows, so the records made on the way live for one batch.
    """
    cpus = task_cpus(app)
    run_ok, run_all = stage_run_ms(tasks, cpus)
    codegen_accs = {
        acc_id
        for e in app.executions
        for graph in (e.final_plan.graph,)
        for n in graph.nodes
        if n.is_cluster
        for m, acc_id in zip(n.metrics, graph.accumulator_ids(n.node_id), strict=True)
        if m.name == CODEGEN_DURATION
    }
    outside = stage_outside_ms(slots, tasks, codegen_accs, cpus)
    shared = SharedValues()
    idle_times: dict[tuple[object, ...], NodeTime] = {}
    executions = {e.execution_id: e for e in app.executions}
    out: dict[int, ExecutionTime] = {}
    profiles: dict[tuple[int, int], _PlanProfile] = {}
    for batch_ids, batch_slots in slot_batches(slots, list(executions)):
        per_execution = acc_stage_sums(batch_slots)
        for execution_id in batch_ids:
            by_acc_stage = per_execution.pop(execution_id, {})
            # Every metric's total over stages and driver values, under the stage `TOTAL`:
            # driver-side metrics (a broadcast's rows and build time) have no stage of their own.
            for ns in node_stats.get(execution_id, {}).values():
                for m in ns.metrics:
                    by_acc_stage[(m.accumulator_id, TOTAL)] = m.total
            sums = _Sums(
                by_acc_stage=by_acc_stage, run_ms=run_ok, all_run_ms=run_all, outside_ms=outside
            )
            execution = executions[execution_id]
            profile = _profile_of(execution.final_plan.graph, profiles)
            attribution = _ExecutionAttribution(execution, sums, profile)
            out[execution_id] = attribution.run(shared, idle_times)
    return out


__all__ = [
    "CODEGEN_DURATION",
    "COST_FACTORS",
    "DEFAULT_COST",
    "DRIVER_METRICS",
    "EXCHANGE_READ_ROWS",
    "EXCHANGE_WRITE_ROWS",
    "EXCLUSIVE_METRICS",
    "EXPRESSION_COST",
    "MAX_EXPRESSION_COST",
    "NESTED_LOOP_COST",
    "NO_WORK_OPERATORS",
    "NS_PER_MS",
    "OWN_TIME_PARTS",
    "PYTHON_OPERATORS",
    "ROW_METRICS",
    "TOTAL",
    "ExecutionTime",
    "NodeTime",
    "StageTime",
    "attribute_time",
    "cost_factor",
    "is_nested_loop",
    "is_python_operator",
    "task_cpus",
]
