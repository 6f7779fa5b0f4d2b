"""The versioned JSON document of an analysis (documented in docs/json-format.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any, TypeVar

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.attribution import NodeTime
from analyzer.aggregate.cost import CostFigures
from analyzer.aggregate.node_metrics import MetricStats, NodeStats
from analyzer.aggregate.stage_summary import StageTaskSummary
from analyzer.aggregate.stage_wall import PARTS, StageWall
from analyzer.insights import Finding
from analyzer.model.application import Execution
from analyzer.model.plan import PlanEdge, PlanNode
from analyzer.report.findings import evidence_str, kept_findings
from analyzer.report.options import ReportOptions
from analyzer.report.selection import select_executions
from analyzer.units import shown_path

FORMAT_VERSION = 1


def _metric(m: MetricStats) -> dict[str, Any]:
    at = m.max_at
    # The figures read from their one tuple at once (each property is a call).
    count, total, min_value, median, max_value, p25, p75, p95 = m.numbers
    return {
        "name": m.name,
        "type": m.metric_type,
        "accumulator_id": m.accumulator_id,
        "spark_ui": m.spark_ui,
        "total": total,
        "min": min_value,
        "p25": p25,
        "median": median,
        "p75": p75,
        "p95": p95,
        "max": max_value,
        "count": count,
        "skew": {"ratio": m.skew_ratio, "score_pct": round(m.skew_pct, 2)},
        "stage_ids": list(m.stage_ids),
        "driver_values": list(m.driver_values),
        "max_at": None
        if at is None
        else {
            "stage_id": at.stage_id,
            "stage_attempt_id": at.stage_attempt_id,
            "task_id": at.task_id,
            "partition_id": at.partition_id,
            "executor_id": at.executor_id,
            "host": at.host,
        },
    }


def _ms(value: float | None) -> int | None:
    """Round a derived time to whole ms for the document."""
    return None if value is None else round(value)


def _execution_time(analysis: Analysis, ex: Execution) -> dict[str, Any]:
    """The execution's task time and how it was attributed, stage by stage."""
    times = analysis.times.get(ex.execution_id)
    if times is None:
        return {}
    path = analysis.critical_path(ex.stage_ids, keep=False)  # asked once per execution
    return {
        "task_run_ms": times.task_run_ms,
        "failed_run_ms": times.failed_run_ms,
        "attributed_ms": _ms(times.attributed_ms),
        "outside_operators_ms": _ms(times.outside_ms),
        "driver_ms": _ms(times.driver_ms),
        "critical_path_stage_ids": [span.stage_id for span in path],
        "stages": [
            {
                "stage_id": st.stage_id,
                "run_ms": st.run_ms,
                "outside_operators_ms": _ms(st.outside_ms),
                "measured_ms": _ms(st.measured_ms),
                "estimated_ms": _ms(st.estimated_ms),
                "unattributed_ms": _ms(st.unattributed_ms),
            }
            for st in sorted(times.stages.values(), key=lambda st: st.stage_id)
        ],
    }


def _app_time(analysis: Analysis) -> dict[str, Any]:
    """The application's wall time cut into SQL, other jobs and the driver alone."""
    spent = analysis.time_spent
    return {
        "wall_ms": spent.wall_ms,
        "sql_ms": spent.sql_ms,
        "other_jobs_ms": spent.other_jobs_ms,
        "driver_only_ms": spent.driver_ms,
        "startup_ms": spent.startup_ms,
        "between_jobs_ms": spent.between_ms,
        "after_last_job_ms": spent.after_ms,
        "longest_gap_ms": spent.longest_gap_ms,
    }


def _what_if(
    analysis: Analysis, options: ReportOptions, selected_ids: frozenset[int]
) -> list[dict[str, Any]]:
    """The predicted walls per task slot count (`aggregate.what_if`), the run's own first."""
    figures = analysis.what_if(options.what_if_slots)
    return [
        {
            "task_slots": s.task_slots,
            "basis": s.basis,
            "app_wall_ms": s.app_wall_ms,
            "executions": (
                {"execution_id": execution_id, "wall_ms": wall_ms}
                for execution_id, wall_ms in zip(s.execution_ids, s.walls_ms, strict=True)
                if execution_id in selected_ids
            ),
        }
        for s in figures.scenarios
    ]


def _cost(c: CostFigures) -> dict[str, Any]:
    """What the run held and used, priced when a price was given (docs/cost.md)."""
    p = c.pricing
    return {
        "wall_ms": c.wall_ms,
        "n_executors": c.n_executors,
        "local_mode": c.local_mode,
        "core_hours_allocated": c.core_hours_allocated,
        "core_hours_used": c.core_hours_used,
        "idle_share": c.idle_share,
        "memory_bytes_per_executor": c.memory_bytes_per_executor,
        "memory_basis": c.memory_basis_str,
        "memory_gib_hours": c.memory_gib_hours,
        "price": None
        if p is None
        else {
            "core_hour": p.core_hour,
            "gib_hour": p.gib_hour,
            "currency": p.currency,
            "source": p.source,
        },
        "cost_allocated": c.cost_allocated,
        "cost_idle": c.cost_idle,
    }


_WALL_PARTS = (*PARTS, "gc_ms", "fetch_wait_ms")
_wall_values = attrgetter(*_WALL_PARTS)


def _wall_parts(wall: StageWall | None) -> dict[str, int] | None:
    """A stage attempt's wall time taken apart (`aggregate.stage_wall`), or None."""
    if wall is None:
        return None
    return {
        "wall_ms": wall.wall_ms,
        **dict(zip(_WALL_PARTS, map(int, _wall_values(wall)), strict=True)),
        "slots": wall.slots,
    }


def _task_summary(summary: StageTaskSummary | None) -> dict[str, Any] | None:
    """Spark's task quantiles of a stage attempt, every metric by its field name (units in it),
    in the order of Spark's REST answer; each metric's values are a tuple, which JSON writes as
    a list."""
    if summary is None:
        return None
    return {
        "quantiles": summary.quantiles,
        "n_tasks": summary.n_tasks,
        "metrics": summary.by_field(),
    }


def _environment(analysis: Analysis) -> dict[str, Any]:
    """The driver's JVM and configuration, secrets redacted (see `model.config_secrets`)."""
    app = analysis.application
    env = app.environment
    return {
        "java_version": env.java_version,
        "java_home": env.java_home,
        "scala_version": env.scala_version,
        "spark_properties": dict(env.spark_properties or app.spark_properties),
        "system_properties": dict(env.system_properties),
    }


def _executors(analysis: Analysis) -> Iterator[dict[str, Any]]:
    """Every executor and the driver, as the History Server's `/allexecutors` lists them, one
    at a time (a log can register a million executors)."""
    for e, s in analysis.iter_executor_summaries():
        yield {
            "executor_id": s.executor_id,
            "host": e.host,
            "host_port": s.host_port,
            "is_active": s.is_active,
            "total_cores": s.total_cores,
            "max_tasks": s.max_tasks,
            "max_memory_bytes": s.max_memory_bytes,
            "add_time_ms": s.add_time_ms,
            "remove_time_ms": s.remove_time_ms,
            "remove_reason": s.remove_reason,
            "n_active_tasks": s.n_active_tasks,
            "n_completed_tasks": s.n_completed_tasks,
            "n_failed_tasks": s.n_failed_tasks,
            "n_total_tasks": s.n_total_tasks,
            "total_duration_ms": s.total_duration_ms,
            "total_gc_time_ms": s.total_gc_time_ms,
            "total_input_bytes": s.total_input_bytes,
            "total_shuffle_read_bytes": s.total_shuffle_read_bytes,
            "total_shuffle_write_bytes": s.total_shuffle_write_bytes,
        }


def _jobs(analysis: Analysis) -> Iterator[dict[str, Any]]:
    """Every job by id, with its SQL execution, description and call site, one at a time."""
    return (
        {
            "job_id": j.job_id,
            "execution_id": j.execution_id,
            "status": j.status,
            "submission_ms": j.submission_ms,
            "completion_ms": j.completion_ms,
            "stage_ids": list(j.stage_ids),
            "name": j.name,
            "description": j.description,
            "job_group": j.job_group,
            "job_tags": sorted(j.job_tags),
            "error_message": j.error_message,
        }
        for j in sorted(analysis.application.jobs, key=lambda j: j.job_id)
    )


def _finding(f: Finding) -> dict[str, Any]:
    """Return every field of a finding: its labelled evidence worded and raw, and every number."""
    return {
        "rule": f.rule,
        "severity": f.severity,
        "title": f.title,
        "suggestion": f.suggestion,
        "estimated_lost_ms": f.estimated_lost_ms,
        "estimated_lost_cost": f.estimated_lost_cost,
        "cost_currency": f.cost_currency,
        "estimate_method": f.estimate_method,
        "execution_id": f.execution_id,
        "node_id": f.node_id,
        "stage_id": f.stage_id,
        "stage_attempt_id": f.stage_attempt_id,
        "task_ids": list(f.task_ids),
        "evidence": [
            {
                "label": item.label,
                "value": evidence_str(item),
                "key": item.key,
                "raw": item.value,
                "unit": item.unit,
            }
            for item in f.evidence
            if item.label
        ],
        "numbers": f.numbers(),
        "advice": [
            {
                "setting": a.setting,
                "value": a.value,
                "current": a.current,
                "arithmetic": a.arithmetic,
                "kind": a.kind,
                "predicted_ms": a.predicted_ms,
                "measured_ms": a.measured_ms,
                "predicted_of": a.predicted_of,
            }
            for a in f.advice
        ],
    }


def build_json_view(
    analysis: Analysis, findings: Sequence[Finding], options: ReportOptions | None = None
) -> dict[str, Any]:
    """Return the JSON-ready document of an analysis: raw numbers in base units.

    `findings` are the analysis' findings, ranked; with `options.executions` or `options.top`
    only the chosen executions and their findings (and the application's) are kept. Raises
    `UsageError` for an execution id the log does not hold.
    """
    document: dict[str, Any] = _as_lists(build_json_stream(analysis, findings, options))
    return document


def build_json_stream(
    analysis: Analysis, findings: Sequence[Finding], options: ReportOptions | None = None
) -> dict[str, Any]:
    """`build_json_view`'s document with its long lists (executions, stage attempts, jobs,
    executors, the what-if's executions, the streaming batches) as iterators whose items are
    made as they are asked for (`render.json_render.render_json_chunks` writes them so).

    A log of thousands of executions makes a document of hundreds of MB; written a list item
    at a time, it never has to be in memory whole. Raises `UsageError` for an execution id the
    log does not hold.
    """
    app = analysis.application
    options = options if options is not None else ReportOptions(fmt="json")
    selection = select_executions(app, options)
    chosen = sorted(selection.executions, key=lambda e: e.execution_id)
    return _document(analysis, findings, options, selection.ids, chosen)


def _as_lists(value: Any) -> Any:
    """`value` with every iterator in it, at any depth, made a list."""
    if isinstance(value, dict):
        return {key: _as_lists(item) for key, item in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [_as_lists(item) for item in value]
    return value


class _SharedParts:
    """The parts of execution documents that runs of one plan share: a node with no metric
    values and no time of its own (its statistics and times are then one object for every run,
    see `aggregate.shared`), and a plan shape's edges. Made once and written for every run; a
    few thousand of each at most are kept, so a log of distinct plans does not keep its
    document. Keyed by the ids of the analysis's objects, which it holds while its report is
    written."""

    MAX_KEPT = 4096

    def __init__(self) -> None:
        self._nodes: dict[tuple[int, int, int], dict[str, Any]] = {}
        self._edges: dict[int, list[dict[str, int]]] = {}

    def node(self, node: PlanNode, ns: NodeStats | None, nt: NodeTime | None) -> dict[str, Any]:
        """The document of a node (see `_node`), made once for a node without values or time."""
        if (ns is not None and ns.metrics) or (nt is not None and nt.self_time_ms is not None):
            return _node(node, ns, nt)
        return _kept(self._nodes, (id(node), id(ns), id(nt)), lambda: _node(node, ns, nt))

    def edges(self, edges: tuple[PlanEdge, ...]) -> list[dict[str, int]]:
        """The documents of a plan's edges."""
        return _kept(
            self._edges,
            id(edges),
            lambda: [{"from_id": e.from_id, "to_id": e.to_id} for e in edges],
        )


_K = TypeVar("_K")
_V = TypeVar("_V")


def _kept(table: dict[_K, _V], key: _K, make: Callable[[], _V]) -> _V:
    """`table`'s value of `key`, made and kept the first time; the table is emptied when it
    holds `_SharedParts.MAX_KEPT`."""
    found = table.get(key)
    if found is None:
        if len(table) >= _SharedParts.MAX_KEPT:
            table.clear()
        found = table[key] = make()
    return found


def _node(node: PlanNode, ns: NodeStats | None, nt: NodeTime | None) -> dict[str, Any]:
    """A plan node's document: its operator, metric statistics and times."""
    return {
        "node_id": node.node_id,
        "name": node.name,
        "desc": node.desc,
        "is_cluster": node.is_cluster,
        "codegen_id": node.codegen_id,
        "cluster_id": node.cluster_id,
        "stage_ids": list(ns.stage_ids) if ns else [],
        "metrics": [_metric(m) for m in ns.metrics] if ns else [],
        "self_time_ms": _ms(nt.self_time_ms) if nt else None,
        "measured_time_ms": _ms(nt.measured_ms) if nt else 0,
        "driver_time_ms": _ms(nt.driver_time_ms) if nt else 0,
    }


def _execution(analysis: Analysis, ex: Execution, shared: _SharedParts) -> dict[str, Any]:
    graph = ex.final_plan.graph
    stats = analysis.node_stats.get(ex.execution_id, {})
    times = analysis.times.get(ex.execution_id)
    node_times = times.nodes if times is not None else {}
    nodes = [
        shared.node(node, stats.get(node.node_id), node_times.get(node.node_id))
        for node in sorted(graph.nodes, key=lambda n: -n.node_id)
    ]
    return {
        "execution_id": ex.execution_id,
        "root_execution_id": ex.root_execution_id,
        "description": ex.description,
        "shown_description": ex.shown_description,
        "status": ex.status,
        "interrupted": ex.execution_id in analysis.application.interrupted_execution_ids,
        "ended": ex.ended,
        "error_message": ex.error_message,
        "start_ms": ex.start_ms,
        "end_ms": ex.end_ms,
        "duration_ms": ex.duration_ms,
        "job_ids": sorted(ex.job_ids),
        "stage_ids": sorted(ex.stage_ids),
        "n_plan_versions": len(ex.plans),
        "physical_plan_description": ex.final_plan.physical_plan_description,
        "nodes": nodes,
        "edges": shared.edges(graph.edges),
        "time": _execution_time(analysis, ex),
    }


def _stages(analysis: Analysis) -> Iterator[dict[str, Any]]:
    """Every stage attempt with its task quantiles and wall time taken apart, one at a time."""
    summaries = analysis.stage_summaries
    walls = analysis.stage_walls
    for s in analysis.application.stages:
        key = (s.stage_id, s.attempt_id)
        yield {
            "stage_id": s.stage_id,
            "attempt_id": s.attempt_id,
            "name": s.name,
            "status": s.status,
            "n_tasks": s.n_tasks,
            "n_task_attempts": s.n_task_attempts,
            "n_failed_attempts": s.n_failed_attempts,
            "submission_ms": s.submission_ms,
            "completion_ms": s.completion_ms,
            "failure_reason": s.failure_reason,
            "job_ids": list(s.job_ids),
            "task_summary": _task_summary(summaries.get(key)),
            "wall_parts": _wall_parts(walls.get(key)),
        }


def _streaming(analysis: Analysis) -> dict[str, Any]:
    """Every streaming query run with its batches (docs/json-format.md#streaming)."""
    queries = []
    for fig in analysis.streaming:
        q = fig.query
        queries.append(
            {
                "name": q.name,
                "id": q.query_id,
                "run_id": q.run_id,
                "status": q.status,
                "exception": q.exception,
                "error_class": q.error_class,
                "start_ms": q.start_ms,
                "end_ms": q.end_ms,
                "trigger_interval_ms": fig.trigger_interval_ms,
                "sources": list(q.sources),
                "sink": q.sink,
                "state_operators": list(q.state_operators),
                "n_batches": fig.n_batches,
                "n_late_batches": fig.n_late_batches,
                "first_late_batch_id": fig.first_late_batch_id,
                "late_ms": fig.late_ms,
                # Unknown, not 0 ms, when no batch ran.
                "median_trigger_execution_ms": fig.median_trigger_ms if fig.n_batches else None,
                "max_trigger_execution_ms": fig.max_trigger_ms if fig.n_batches else None,
                "mean_input_rows_per_s": fig.mean_input_rows_per_s,
                "mean_processed_rows_per_s": fig.mean_processed_rows_per_s,
                "phase_totals_ms": dict(fig.phase_totals_ms),
                "unfinished_batches": [
                    {"batch_id": batch_id, "execution_ids": list(ids)}
                    for batch_id, ids in q.unfinished_batches
                ],
                "idle_reports": q.idle_reports,
                "last_idle_ms": q.last_idle_ms,
                "batches": (
                    {
                        "batch_id": b.batch_id,
                        "timestamp_ms": b.timestamp_ms,
                        "execution_ids": list(b.execution_ids),
                        "trigger_execution_ms": b.trigger_execution_ms,
                        "durations_ms": dict(b.durations_ms),
                        "input_rows": b.n_input_rows,
                        "input_rows_per_s": b.input_rows_per_s,
                        "processed_rows_per_s": b.processed_rows_per_s,
                        "output_rows": b.n_output_rows,
                        "state_rows_total": b.state_rows_total,
                        "state_rows_updated": b.state_rows_updated,
                        "state_rows_dropped_by_watermark": b.state_rows_dropped_by_watermark,
                        "state_memory_bytes": b.state_memory_bytes,
                        "watermark_ms": b.watermark_ms,
                    }
                    for b in q.batches
                ),
            }
        )
    return {"queries": queries}


def _query_families(analysis: Analysis) -> list[dict[str, Any]]:
    """The queries the application ran more than once (`aggregate.families`), the most wall
    time first."""
    return [
        {
            "fingerprint": f.fingerprint,
            "n_executions": f.n_executions,
            "execution_ids": list(f.execution_ids),
            "description": f.description,
            "wall_ms": f.covered_ms,
            "total_ms": f.total_ms,
            "min_ms": f.min_ms,
            "median_ms": f.median_ms,
            "p90_ms": f.p90_ms,
            "max_ms": f.max_ms,
            "slowest_execution_id": f.slowest_execution_id,
            "first_half_median_ms": f.first_half_median_ms,
            "second_half_median_ms": f.second_half_median_ms,
            "trend": f.trend,
            "n_failed": f.n_failed,
        }
        for f in analysis.query_families
    ]


def _document(
    analysis: Analysis,
    findings: Sequence[Finding],
    options: ReportOptions,
    selected_ids: frozenset[int],
    chosen: Sequence[Execution],
) -> dict[str, Any]:
    app = analysis.application
    rs = analysis.read_stats
    shared = _SharedParts()
    return {
        "format_version": FORMAT_VERSION,
        "application": {
            "id": app.app_id,
            "attempt_id": app.attempt_id,
            "name": app.name,
            "spark_version": app.spark_version,
            "user": app.user,
            "start_ms": app.start_ms,
            "end_ms": app.end_ms,
            "completed": app.completed,
            "time_spent": _app_time(analysis),
        },
        "cost": _cost(analysis.cost(options.prices)),
        "environment": _environment(analysis),
        "executors": _executors(analysis),
        "jobs": _jobs(analysis),
        "log": {
            "path": shown_path(analysis.source.path),
            "layout": analysis.source.layout,
            "codec": analysis.source.codec,
            "size_bytes": analysis.source.size_bytes,
            "in_progress": analysis.source.in_progress,
            "n_lines": rs.n_lines,
            "truncated_tail": rs.truncated_tail,
            "n_malformed_skipped": rs.n_malformed_skipped,
            "truncated_parts": list(rs.truncated_parts),
            # Only when there is something to say: the keys are new, and most logs have none.
            **(
                {"codec_notes": notes}
                if (notes := [p.codec_note for p in analysis.source.parts if p.codec_note])
                else {}
            ),
            **(
                {"inverted_intervals": dict(app.inverted_intervals)}
                if app.inverted_intervals
                else {}
            ),
            **(
                {
                    "outside_run": {
                        kind: {"count": n, "farthest_ms": ms}
                        for kind, n, ms in analysis.outside_run
                    }
                }
                if analysis.outside_run
                else {}
            ),
        },
        "stages": _stages(analysis),
        "selection": {
            "execution_ids": sorted(options.executions) if options.executions else None,
            "top": options.top,
        },
        "streaming": _streaming(analysis),
        "what_if": _what_if(analysis, options, selected_ids),
        "query_families": _query_families(analysis),
        "executions": (_execution(analysis, ex, shared) for ex in chosen),
        "findings": [_finding(f) for f in kept_findings(findings, selected_ids)],
    }
