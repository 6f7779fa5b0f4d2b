"""Which timing metrics are an operator's own time, which are the driver's, and what a row costs.

The rules of the self-time model (`attribution.py`, docs/metrics.md "Time attribution"): the
metrics that claim their value from a stage's budget (`EXCLUSIVE_METRICS`, less the parts of an
own-time metric), the driver's metrics kept apart, the operators that do no task work, and the
per-row cost by operator family by which time no metric claims is shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from analyzer.model.plan import MetricSpec, PlanNode

EXCLUSIVE_METRICS: frozenset[str] = frozenset(
    {
        "shuffle write time",
        "fetch wait time",
        "sort time",
        "scan time",
        "task commit time",
        # spark-rapids 21.12+: an operator's own time, its GPU children's left out. Its build,
        # stream, sort, aggregation, decode and buffer times are parts of it or of its inputs.
        "op time",
        # Databricks Photon: an operator's own time; its `cumulative time` includes its inputs'.
        "exclusive time",
    }
)
"""Timing metrics that measure one operator's own work in a task, overlapping nothing else.

Not here, because they include other operators' work: a codegen `duration`, `time in aggregation
build` (every operator fused below the aggregate), `time to build hash map` (the build side's
input), file-system API times (parts of `scan time`), `remote reqs duration` (network threads),
a GPU operator's `total time` (its children's included) and Python worker times (waiting for
input included)."""

OWN_TIME_PARTS: dict[str, frozenset[str]] = {
    "op time": frozenset({"sort time"}),
    "exclusive time": frozenset(
        {"fetch wait time", "shuffle write time", "sort time", "scan time"}
    ),
}
"""For a metric that is an operator's whole own time, the exclusive metrics that are parts of it:
on a node that declares both, only the whole is claimed (a GpuSort's `sort time` is inside its
`op time`; a Photon operator's `exclusive time` covers everything it does itself)."""

BOUNDING_METRICS = frozenset({"total time"})
"""Timers of an operator's time with its children's (spark-rapids 21.10 and older): an upper
bound of its own time, less its children's such timers."""
VENDOR_PREFIXES = ("Gpu", "Photon")
"""Name prefixes of the RAPIDS Accelerator's and Databricks Photon's operators."""

DRIVER_METRICS: frozenset[str] = frozenset(
    {
        "time to build",
        "time to broadcast",
        "metadata time",
        "dynamic partition pruning time",
        "job commit time",
    }
)
"""Timing metrics of work done by the driver, outside every task."""

CODEGEN_DURATION = "duration"
"""The metric of a WholeStageCodegen cluster: its pipeline's wall time in each task."""

ROW_METRICS = ("number of output rows", "output rows", "num output rows")
"""Names of an operator's output row count, by Spark version and plugin."""
EXCHANGE_WRITE_ROWS = ("shuffle records written",)
EXCHANGE_READ_ROWS = ("records read",)

NO_WORK_OPERATORS = frozenset(
    {
        "AdaptiveSparkPlan",
        "InputAdapter",
        "ReusedExchange",
        "ReusedSubquery",
        "ShuffleQueryStage",
        "BroadcastQueryStage",
        "TableCacheQueryStage",
        "ResultQueryStage",
        "Subquery",
        "SubqueryBroadcast",
        "BroadcastExchange",
        "WriteFiles",
    }
)
"""Operators that only wrap, reuse or hand over another's output: no task work of their own
(a broadcast's work is its build side's and the driver's; a write's is its command's)."""

PYTHON_OPERATORS = (
    "EvalPython",
    "InPandas",
    "InArrow",
    "PythonUDTF",
    "FlatMapCoGroupsInPandas",
    "PythonMapInArrow",
)
"""Name parts of the operators that run Python code in a worker process."""

COST_FACTORS: tuple[tuple[str, float], ...] = (
    ("Python", 50.0),
    ("Join", 1.0),
    ("Aggregate", 1.0),
    ("Window", 2.0),
    ("Expand", 1.0),
    ("Generate", 1.0),
    ("Sort", 0.5),
    ("Exchange", 0.2),
    ("ColumnarToRow", 0.3),
    ("RowToColumnar", 0.3),
    ("Filter", 0.1),
    ("Scan", 0.2),
    ("Project", 0.1),
    ("Range", 0.05),
    ("Write", 1.0),
    ("Insert", 1.0),
)
"""Relative cost of one row by operator family (first name part that matches): the weight by
which time no metric claims is shared. A Python operator's per-row cost dwarfs fused JVM code."""
DEFAULT_COST = 0.2
EXPRESSION_COST = 0.05
"""What each function call in a Project's or Filter's expressions adds to its cost per row (a
projection that builds strings costs far more than one that drops columns)."""
MAX_EXPRESSION_COST = 2.0
NESTED_LOOP_COST = 0.01
"""Cost of one pair of rows compared by a nested-loop or cartesian join."""


@lru_cache(maxsize=4096)
def cost_factor(name: str, desc: str = "") -> float:
    """Return the cost of one row for an operator called `name` (see `COST_FACTORS`); a Project's
    or Filter's grows with the function calls in its description `desc`.

    >>> cost_factor("BatchEvalPython"), cost_factor("SortMergeJoin"), cost_factor("Project")
    (50.0, 1.0, 0.1)
    >>> round(cost_factor("Project", "Project [upper(trim(name#1)) AS n#2]"), 2)
    0.2
    """
    if is_python_operator(name):
        return COST_FACTORS[0][1]
    for part, factor in COST_FACTORS[1:]:
        if part in name:
            if part in ("Project", "Filter") and desc:
                calls = desc.count("(")  # every function call opens a parenthesis
                return factor + min(MAX_EXPRESSION_COST, EXPRESSION_COST * calls)
            return factor
    return DEFAULT_COST


@lru_cache(maxsize=4096)
def is_python_operator(name: str) -> bool:
    """Return True for an operator that evaluates Python code in a worker process."""
    return any(part in name for part in PYTHON_OPERATORS)


def is_nested_loop(name: str) -> bool:
    """Return True for joins that compare every pair of rows."""
    return "NestedLoopJoin" in name or "CartesianProduct" in name


def is_timer(metric: MetricSpec) -> bool:
    """True for a metric Spark keeps as a time (`timing` in ms, `nsTiming` in ns)."""
    return metric.metric_type in ("timing", "nsTiming")


def claiming_metrics(
    node: PlanNode, accumulator_ids: Sequence[int]
) -> list[tuple[MetricSpec, int]]:
    """The timing metrics whose values are a node's measured self time (`EXCLUSIVE_METRICS`),
    less those that are parts of an own-time metric the node also declares (`OWN_TIME_PARTS`),
    each with its accumulator id (`accumulator_ids`: the node's, in the order of its metrics)."""
    timed = [
        (m, acc_id)
        for m, acc_id in zip(node.metrics, accumulator_ids, strict=True)
        if m.name in EXCLUSIVE_METRICS and is_timer(m)
    ]
    parts: set[str] = set()
    for m, _ in timed:
        parts |= OWN_TIME_PARTS.get(m.name, frozenset())
    return [(m, acc_id) for m, acc_id in timed if m.name not in parts] if parts else timed
