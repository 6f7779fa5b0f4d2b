"""The versioned JSON document of an analysis (documented in docs/json-format.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import MetricStats
from analyzer.insights import Finding
from analyzer.report.findings import evidence_str, kept_findings
from analyzer.report.options import ReportOptions
from analyzer.report.selection import select_executions

FORMAT_VERSION = 1


def _metric(m: MetricStats) -> dict[str, Any]:
    at = m.max_at
    return {
        "name": m.name,
        "type": m.metric_type,
        "accumulator_id": m.accumulator_id,
        "spark_ui": m.spark_ui,
        "total": m.total,
        "min": m.min_value,
        "p25": m.p25,
        "median": m.median,
        "p75": m.p75,
        "p95": m.p95,
        "max": m.max_value,
        "count": m.count,
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


def _finding(f: Finding) -> dict[str, Any]:
    """Return every field of a finding: its labelled evidence worded and raw, and every number."""
    return {
        "rule": f.rule,
        "severity": f.severity,
        "title": f.title,
        "suggestion": f.suggestion,
        "estimated_lost_ms": f.estimated_lost_ms,
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
    }


def build_json_view(
    analysis: Analysis, findings: Sequence[Finding], options: ReportOptions | None = None
) -> dict[str, Any]:
    """Return the JSON-ready document of an analysis: raw numbers in base units.

    `findings` are the analysis' findings, ranked; with `options.executions` or `options.top`
    only the chosen executions and their findings (and the application's) are kept. Raises
    `UsageError` for an execution id the log does not hold.
    """
    app = analysis.application
    options = options if options is not None else ReportOptions(fmt="json")
    selection = select_executions(app, options)
    executions = []
    for ex in sorted(selection.executions, key=lambda e: e.execution_id):
        graph = ex.final_plan.graph
        stats = analysis.node_stats.get(ex.execution_id, {})
        nodes = []
        for node in sorted(graph.nodes, key=lambda n: -n.node_id):
            ns = stats.get(node.node_id)
            nodes.append(
                {
                    "node_id": node.node_id,
                    "name": node.name,
                    "desc": node.desc,
                    "is_cluster": node.is_cluster,
                    "codegen_id": node.codegen_id,
                    "cluster_id": node.cluster_id,
                    "stage_ids": list(ns.stage_ids) if ns else [],
                    "metrics": [_metric(m) for m in ns.metrics] if ns else [],
                }
            )
        executions.append(
            {
                "execution_id": ex.execution_id,
                "root_execution_id": ex.root_execution_id,
                "description": ex.description,
                "status": ex.status,
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
                "edges": [{"from_id": e.from_id, "to_id": e.to_id} for e in graph.edges],
            }
        )
    rs = analysis.read_stats
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
        },
        "log": {
            "path": analysis.source.path,
            "layout": analysis.source.layout,
            "codec": analysis.source.codec,
            "size_bytes": analysis.source.size_bytes,
            "in_progress": analysis.source.in_progress,
            "n_lines": rs.n_lines,
            "truncated_tail": rs.truncated_tail,
            "n_malformed_skipped": rs.n_malformed_skipped,
        },
        "stages": [
            {
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
            }
            for s in app.stages
        ],
        "selection": {
            "execution_ids": sorted(options.executions) if options.executions else None,
            "top": options.top,
        },
        "executions": executions,
        "findings": [_finding(f) for f in kept_findings(findings, selection.ids)],
    }
