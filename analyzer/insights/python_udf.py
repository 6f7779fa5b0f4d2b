"""Rule `python-udf`: a query spent much of its time evaluating Python code row by row."""

from __future__ import annotations

import dataclasses

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import is_python_operator
from analyzer.aggregate.stage_stats import first_use_stages
from analyzer.insights._common import NodePicks, context, metric, node_self_wall_ms
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_pct

RULE = "python-udf"
METHOD = "the wall-time share of the Python evaluation operator's self time in its stages"
ARROW_NAMES = ("Arrow", "Pandas", "InArrow")
FIRST_USE = (
    "These were the first Python tasks on their executors: each started a Python worker (the "
    "interpreter and its imports, about a second with pandas and pyarrow), so this time "
    "includes that start-up and no task ran warm to tell it apart; judge the UDF by a later "
    "run. "
)


def detect_python_udf(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report Python evaluation operators (BatchEvalPython, ArrowEvalPython, *InPandas, …) whose
    self time cost a meaningful share of the query's wall time.

    Python runs in a separate worker process: rows are serialized to it and back, and a
    row-at-a-time UDF runs the interpreter once per row, far slower than Spark's generated code.
    """
    ctx = context(analysis)
    findings = []
    python = NodePicks(lambda node: not node.is_cluster and is_python_operator(node.name))
    candidates = []
    for ex in analysis.application.executions:
        times = analysis.times.get(ex.execution_id)
        if times is None:
            continue
        for node in python(ex.final_plan.graph):
            nt = times.nodes.get(node.node_id)
            if nt is not None and nt.self_time_ms:
                candidates.append((ex, times, node, nt))
    cold = first_use_stages(analysis.tasks, (s for *_, nt in candidates for s in nt.stage_ids))
    for ex, times, node, nt in candidates:
        self_ms = nt.self_time_ms or 0.0
        stats = analysis.node_stats.get(ex.execution_id, {})
        run_ms = max(1, times.task_run_ms - times.failed_run_ms)
        lost_ms = node_self_wall_ms(analysis, ex, {node.node_id})
        rows = metric(stats.get(node.node_id), "number of output rows")
        vectorized = any(part in node.name for part in ARROW_NAMES)
        suggestion = (
            "Use Spark's built-in functions where they can do the job (they run in the JVM's "
            "generated code); otherwise keep the Python but batch it: a pandas UDF "
            "(@pandas_udf) handles Arrow batches instead of one row at a time."
            if not vectorized
            else "Use Spark's built-in functions where they can do the job; otherwise speed "
            "up the Python itself (vectorized NumPy/pandas operations on the whole batch) "
            "and tune spark.sql.execution.arrow.maxRecordsPerBatch."
        )
        first_use = bool(nt.stage_ids) and set(nt.stage_ids) <= cold
        if first_use:
            suggestion = FIRST_USE + suggestion
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=(
                f"Node {node.node_id} {node.name}: Python UDFs took "
                f"{fmt_pct(self_ms / run_ms)} of the query's task time"
                + (", its workers' start-up included" if first_use else "")
            ),
            suggestion=suggestion,
            execution_id=ex.execution_id,
            node_id=node.node_id,
            stage_id=nt.stage_ids[0] if nt.stage_ids else None,
            evidence=(
                ev("self_time_ms", "its self time", self_ms, "ms"),
                ev(
                    "task_time_share",
                    "share of the query's task time",
                    self_ms / run_ms,
                    "share",
                ),
                ev("rows", "rows through Python", rows.total if rows else None, "count"),
                ev(
                    "vectorized",
                    "vectorized (Arrow)",
                    "yes" if vectorized else "no",
                    "text",
                ),
            ),
        )
        if finding is not None and first_use:
            # Every task started its executor's Python worker: the time cannot be told
            # apart from that start-up, which no UDF change removes.
            finding = dataclasses.replace(finding, severity="info")
        if finding is not None:
            findings.append(finding)
    return findings
