"""Rule `gpu-fallback`: a GPU (RAPIDS) plan with operators left on the CPU, and the row↔columnar
transitions they cost.

The RAPIDS Accelerator replaces each operator it supports with a `Gpu…` one; an operator it
cannot run stays on the CPU, and the data crosses between the GPU's columnar batches and the
CPU's rows on the way there (`GpuColumnarToRow`) and back (`GpuRowToColumnar`). Those copies and
the CPU work are time the GPU plan was meant to save. The plugin's
`spark.rapids.sql.explain=NOT_ON_GPU` says why each stayed.
"""

from __future__ import annotations

from collections.abc import Callable

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import NO_WORK_OPERATORS
from analyzer.insights._common import NodePicks, context, node_self_wall_ms
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import Execution
from analyzer.model.plan import PlanGraph, PlanNode
from analyzer.units import fmt_count

RULE = "gpu-fallback"
METHOD = (
    "the self time of the CPU operators and row/columnar transitions of the GPU plan, charged "
    "to their stages' wall time"
)
INPUT_METHOD = (
    "none: input that starts on the CPU is not costed, as the plan could not have read it on the "
    "GPU; its time and its transitions', charged to their stages' wall time, is in the evidence"
)
TRANSITIONS = ("GpuColumnarToRow", "GpuRowToColumnar", "ColumnarToRow", "RowToColumnar")
RESULT_OPERATORS = ("CollectLimit", "TakeOrderedAndProject", "CommandResult", "LocalTableScan")
"""CPU operators that only hand the result over (or hold a literal table): not fallbacks."""
SOURCE_OPERATORS = ("SerializeFromObject",)
"""Operators that turn a source's objects into rows: with the leaf below them, the plan's input
on the CPU (an RDD or a local collection), not an operator the plugin could have taken."""


def _gpu_reachable(node_id: int, step: Callable[[int], list[PlanNode]], graph: PlanGraph) -> bool:
    """Whether a `Gpu…` operator is reachable from a node by `step` (children or parents)."""
    frontier = [n.node_id for n in step(node_id)]
    seen: set[int] = set()
    while frontier:
        current = frontier.pop()
        if current in seen:
            continue
        seen.add(current)
        if graph.node(current).name.startswith("Gpu"):
            return True
        frontier.extend(n.node_id for n in step(current))
    return False


def _gpu_below(graph: PlanGraph, node_id: int) -> bool:
    return _gpu_reachable(node_id, graph.children_of, graph)


def _gpu_above(graph: PlanGraph, node_id: int) -> bool:
    return _gpu_reachable(node_id, graph.parents_of, graph)


def fallbacks(execution: Execution) -> tuple[list[int], list[int], list[int]]:
    """Return the CPU operators of a GPU plan next to GPU ones, the CPU sources among them
    (leaves, and `SOURCE_OPERATORS`: input that starts on the CPU), and the transitions (the
    final columnar-to-row conversion for the result is not one)."""
    graph = execution.final_plan.graph
    cpu: list[int] = []
    sources: list[int] = []
    crossings: list[int] = []
    for node in graph.nodes:
        if node.is_cluster or node.name in NO_WORK_OPERATORS:
            continue
        name = node.name
        if any(name.startswith(t) for t in TRANSITIONS):
            if name.endswith("ColumnarToRow") and not _gpu_above(graph, node.node_id):
                continue  # rows for the result or a write command: every GPU plan has it
            crossings.append(node.node_id)
        elif not name.startswith("Gpu") and not name.startswith("Execute "):
            if name in RESULT_OPERATORS:
                continue
            if _gpu_above(graph, node.node_id) or _gpu_below(graph, node.node_id):
                leaf = not graph.children_of(node.node_id)
                (sources if leaf or name in SOURCE_OPERATORS else cpu).append(node.node_id)
    return cpu, sources, crossings


def detect_gpu_fallback(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report GPU plans with operators left on the CPU next to GPU ones: `warning` when their
    and their transitions' time is significant, else `info` (worth knowing, little cost). Input
    that starts on the CPU (a text scan, an RDD of objects) is named but never costed; plans of
    failed queries are left out (their adaptive plan may never have been finalized)."""
    ctx = context(analysis)
    findings = []
    gpu = NodePicks(lambda node: node.name.startswith("Gpu"))
    for ex in analysis.application.executions:
        graph = ex.final_plan.graph
        if ex.status == "FAILED" or not gpu(graph):
            continue
        cpu, sources, crossings = fallbacks(ex)
        if not cpu and not sources:
            continue
        # Input that starts on the CPU is not costed (nothing in the plan could move it), but
        # its time is told, as the plan shows it: "0 ms" would contradict the operators' own.
        lost_ms = node_self_wall_ms(analysis, ex, set(cpu) | set(crossings)) if cpu else 0
        time_ev = (
            ev("self_wall_ms", "their time (wall share)", lost_ms, "ms")
            if cpu
            else ev(
                "input_wall_ms",
                "their time (wall share; input, not costed)",
                node_self_wall_ms(analysis, ex, set(sources) | set(crossings)),
                "ms",
            )
        )
        significant = ctx.significant(lost_ms, ex.execution_id, thresholds)
        names = sorted({graph.node(n).name for n in cpu or sources})
        first = min(cpu or sources)
        what = "operator" if cpu else "input operator"
        findings.append(
            Finding(
                rule=RULE,
                severity=ctx.severity(lost_ms, ex.execution_id, thresholds)
                if significant
                else "info",
                title=(
                    f"Query {ex.execution_id}: {fmt_count(len(cpu or sources))} {what}"
                    f"{'' if len(cpu or sources) == 1 else 's'} on the CPU in a GPU plan "
                    f"({', '.join(names[:4])}{'…' if len(names) > 4 else ''}), "
                    f"{fmt_count(len(crossings))} row/columnar transition"
                    f"{'' if len(crossings) == 1 else 's'}"
                ),
                suggestion=(
                    "The input starts on the CPU (an RDD, a local collection or a format the "
                    "plugin does not read): read it with a GPU-supported source (Parquet, ORC, "
                    "CSV) if the transition costs."
                    if not cpu
                    else "Set spark.rapids.sql.explain=NOT_ON_GPU to see why each stayed on the "
                    "CPU; rewrite the expressions it names (UDFs, unsupported functions or types), "
                    "enable the operator if it is off by default "
                    "(spark.rapids.sql.exec.<Exec>=true or "
                    "spark.rapids.sql.expression.<Expression>=true, named by the explain "
                    "output), or move the CPU step to where the data is small."
                ),
                estimated_lost_ms=lost_ms if significant else 0,
                estimate_method=METHOD
                if significant
                else METHOD + " (below significance)"
                if cpu
                else INPUT_METHOD,
                execution_id=ex.execution_id,
                node_id=first,
                evidence=(
                    ev("cpu_operators", "on the CPU", ", ".join(names), "text"),
                    ev(
                        "cpu_sources",
                        "input on the CPU",
                        ", ".join(sorted({graph.node(n).name for n in sources})) or "–",
                        "text",
                    ),
                    ev("n_cpu_operators", "", len(cpu), "count"),
                    ev("n_transitions", "row/columnar transitions", len(crossings), "count"),
                    time_ev,
                ),
            )
        )
    return findings
