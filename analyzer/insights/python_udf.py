"""Rule `python-udf`: a query spent much of its time evaluating Python code row by row."""

from __future__ import annotations

import dataclasses

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import is_python_operator
from analyzer.aggregate.stage_stats import cold_starts
from analyzer.insights._common import NodePicks, context, metric, node_self_wall_ms
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_duration_ms, fmt_pct

RULE = "python-udf"
METHOD = (
    "the wall-time share of the Python evaluation operator's self time in its stages, scaled "
    "to the UDF's part of that self time (Spark 4.1+: the workers' time processing rows; "
    "before: less what the stages' first tasks on each executor ran beyond their warm ones), "
    "or to the workers' start-up when that is larger"
)
ARROW_NAMES = ("Arrow", "Pandas", "InArrow")
FIRST_USE = (
    "These were the first Python tasks on their executors: each started a Python worker (the "
    "interpreter and its imports, about a second with pandas and pyarrow), so this time "
    "includes that start-up and no task ran warm to tell it apart; judge the UDF by a later "
    "run. "
)
CODE_METRIC = "time to execute Python code"
"""Spark 4.1+: task time the Python workers spent processing rows (`pythonProcessingTime`),
measured in the worker. It includes waiting for the input rows, so it bounds the UDF's own
time from above."""
RUN_METRIC = "time to run Python workers"
"""Spark 4.1+: task time from the task asking for a Python worker to the worker's end
(`pythonTotalTime`). Less the rows' processing, it is the worker's start-up and set-up for the
task (starting it, or reusing one; importing and unpickling the UDF; reading broadcasts).
`time to initialize Python workers` is not used: on a reused worker it runs from the previous
task's end, so it counts the worker's idle wait."""
STARTUP = (
    "Most of this operator's time was its Python workers' start-up, not the UDF's code: "
    "{startup} of task time starting and setting up workers against {code} processing rows. "
    "A worker starts once per executor and concurrent task while spark.python.worker.reuse "
    "stays true (the default); what the UDF imports and the broadcasts it reads are paid when "
    "a worker first runs it. Spark's built-in functions, where they can do the job, need no "
    "Python worker at all."
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
    python_stages = {s for *_, nt in candidates for s in nt.stage_ids}
    cold, excess = cold_starts(analysis.tasks, python_stages)
    python_ms: dict[tuple[int, int], float] = {}
    for ex, _, _, nt in candidates:
        for stage, ms in nt.by_stage:
            key = (ex.execution_id, stage)
            python_ms[key] = python_ms.get(key, 0.0) + ms
    for ex, times, node, nt in candidates:
        self_ms = nt.self_time_ms or 0.0
        stats = analysis.node_stats.get(ex.execution_id, {})
        run_ms = max(1, times.task_run_ms - times.failed_run_ms)
        self_wall_ms = node_self_wall_ms(analysis, ex, {node.node_id})
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
        code = metric(stats.get(node.node_id), CODE_METRIC)
        first_use = code is None and bool(nt.stage_ids) and set(nt.stage_ids) <= cold
        if code is not None:
            # Measured by Spark 4.1+: the rows' processing in the workers bounds what
            # rewriting the UDF could save; the estimated self time may also hold the workers'
            # start-up.
            udf_ms = min(self_ms, float(code.total))
            run = metric(stats.get(node.node_id), RUN_METRIC)
            startup_ms = max(0.0, float(run.total - code.total)) if run is not None else 0.0
            startup_ms = min(startup_ms, float(run_ms))
        else:
            # Not measured: the start-up is what the stages' first Python tasks on each
            # executor ran beyond their warm tasks (shared among the stage's Python operators
            # by their self time there), and the rest of the self time the UDF's.
            startup_ms = min(
                self_ms,
                sum(
                    excess.get(stage, 0) * ms / python_ms[(ex.execution_id, stage)]
                    for stage, ms in nt.by_stage
                    if ms > 0
                ),
            )
            udf_ms = self_ms - startup_ms
        startup_bound = startup_ms > udf_ms
        # The self time's charge to wall time, shared as the measured parts are.
        lost_ms = int(self_wall_ms * min(1.0, max(udf_ms, startup_ms) / self_ms))
        if startup_bound:
            suggestion = STARTUP.format(
                startup=fmt_duration_ms(startup_ms), code=fmt_duration_ms(udf_ms)
            )
        if first_use:
            suggestion = FIRST_USE + suggestion
        finding = ctx.finding(
            RULE,
            METHOD,
            thresholds,
            lost_ms,
            title=(
                f"Node {node.node_id} {node.name}: Python workers' start-up took "
                f"{fmt_pct(startup_ms / run_ms)} of the query's task time, processing rows "
                f"{fmt_pct(udf_ms / run_ms)}"
                if startup_bound
                else f"Node {node.node_id} {node.name}: Python UDFs took "
                f"{fmt_pct(udf_ms / run_ms)} of the query's task time"
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
                    udf_ms / run_ms,
                    "share",
                ),
                *(
                    ()
                    if code is None
                    else (
                        ev("python_code_ms", "time to execute Python code", udf_ms, "ms"),
                        ev(
                            "python_startup_ms",
                            "Python workers' start-up and set-up",
                            startup_ms,
                            "ms",
                        ),
                    )
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
        if finding is not None and (first_use or startup_bound):
            # Every task started its executor's Python worker (first_use: the time cannot be
            # told apart from that start-up), or Spark measured the start-up as most of it:
            # no UDF change removes it.
            finding = dataclasses.replace(finding, severity="info")
        if finding is not None:
            findings.append(finding)
    return findings
