"""The versioned JSON document of a comparison of two runs (docs/diff.md#json)."""

from __future__ import annotations

from typing import Any

from analyzer.aggregate.streaming import StreamingFigures
from analyzer.compare.figures import AqeSummary, ExecutionFigures, ExecutorFigures, NodeFigures
from analyzer.compare.result import DiffResult, ExecutionDiff, NodeDelta
from analyzer.insights import Finding
from analyzer.report.diff import MAX_NODES_HTML
from analyzer.report.header import app_status
from analyzer.units import shown_path

DIFF_FORMAT_VERSION = 1


def _ms(value: float | None) -> int | None:
    return None if value is None else round(value)


def _ratio(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before <= 0:
        return None
    return round(after / before, 4)


def _aqe(a: AqeSummary) -> dict[str, Any]:
    return {
        "adaptive": a.adaptive,
        "n_replans": a.n_replans,
        "n_coalesced_reads": a.n_coalesced_reads,
        "partitions_before_coalescing": a.partitions_before,
        "partitions_after_coalescing": a.partitions_after,
        "skewed_partitions": a.skewed_partitions,
        "skew_splits": a.skew_splits,
        "n_local_reads": a.n_local_reads,
        "runtime_join_switches": list(a.runtime_joins),
    }


def _figures(f: ExecutionFigures) -> dict[str, Any]:
    s = f.straggler
    return {
        "execution_id": f.execution_id,
        "status": f.status,
        "wall_ms": f.wall_ms,
        "ended": f.ended,
        "nested": f.nested,
        "task_run_ms": f.task_run_ms,
        "failed_run_ms": f.failed_run_ms,
        "n_tasks": f.n_tasks,
        "n_failed_tasks": f.n_failed_tasks,
        "n_stage_retries": f.n_stage_retries,
        "input_rows": f.input_rows,
        "input_bytes": f.input_bytes,
        "files_read": f.files_read,
        "partitions_read": f.partitions_read,
        "shuffle_partitions": f.shuffle_partitions,
        "shuffle_bytes": f.shuffle_bytes,
        "spill_bytes": f.spill_bytes,
        "disk_spill_bytes": f.disk_spill_bytes,
        "straggler_ms": f.straggler_ms,
        "straggler": None
        if s is None
        else {
            "stage_id": s.stage_id,
            "max_task_ms": s.max_task_ms,
            "median_task_ms": s.median_task_ms,
            "read_max_bytes": s.read_max_bytes,
            "read_median_bytes": s.read_median_bytes,
        },
        "aqe": _aqe(f.aqe),
    }


def _node(n: NodeFigures | None) -> dict[str, Any] | None:
    if n is None:
        return None
    return {
        "node_id": n.node_id,
        "name": n.name,
        "self_time_ms": _ms(n.self_time_ms),
        "rows": n.rows,
        "bytes": n.bytes,
        "spill_bytes": n.spill_bytes,
    }


def _node_delta(d: NodeDelta) -> dict[str, Any]:
    before = d.baseline.self_time_ms if d.baseline else None
    after = d.candidate.self_time_ms if d.candidate else None
    return {
        "status": d.status,
        "self_time_change_ms": _ms(d.change_ms),
        "self_time_ratio": _ratio(before, after),
        "baseline": _node(d.baseline),
        "candidate": _node(d.candidate),
    }


def _execution(e: ExecutionDiff, cause: tuple[str, str] | None) -> dict[str, Any]:
    changed = [d for d in e.nodes if d.status != "same" or round(d.change_ms) != 0]
    return {
        "baseline_execution_id": e.baseline.execution_id,
        "candidate_execution_id": e.candidate.execution_id,
        "paired_by": e.tier,
        "description": e.description,
        "wall_change_ms": e.change_ms,
        "wall_ratio": _ratio(e.baseline.wall_ms, e.candidate.wall_ms)
        if e.baseline.ended and e.candidate.ended
        else None,
        "cause": cause[0] if cause else None,
        "reason": cause[1] if cause else None,
        "baseline": _figures(e.baseline),
        "candidate": _figures(e.candidate),
        "plan_changes": {
            "switches": [
                {
                    "baseline_node_id": s.baseline_node_id,
                    "candidate_node_id": s.candidate_node_id,
                    "baseline_name": s.baseline_name,
                    "candidate_name": s.candidate_name,
                    "is_join": s.is_join,
                }
                for s in e.plan.switches
            ],
            "added": {name: n for name, n in e.plan.added},
            "removed": {name: n for name, n in e.plan.removed},
        },
        "settings": [
            {"key": c.key, "baseline": c.baseline, "candidate": c.candidate} for c in e.config
        ],
        "nodes": [_node_delta(d) for d in changed[:MAX_NODES_HTML]],
        "n_nodes_changed": len(changed),
    }


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity,
        "title": f.title,
        "estimated_lost_ms": f.estimated_lost_ms,
        "execution_id": f.execution_id,
        "node_id": f.node_id,
        "stage_id": f.stage_id,
    }


def _executors(x: ExecutorFigures) -> dict[str, Any]:
    return {
        "n_executors": x.n_executors,
        "peak_cores": x.peak_cores,
        "total_cores": x.total_cores,
        "n_removed": x.n_removed,
    }


def _run(result: DiffResult, side: str) -> dict[str, Any]:
    analysis = result.baseline if side == "baseline" else result.candidate
    app = analysis.application
    return {
        "log": shown_path(analysis.source.path),
        "app_id": app.app_id,
        "attempt_id": app.attempt_id,
        "name": app.name,
        "spark_version": app.spark_version,
        "status": app_status(analysis),
        "start_ms": app.start_ms,
        "duration_ms": app.duration_ms,
        "n_executions": len(app.executions),
        "executors": _executors(
            result.baseline_executors if side == "baseline" else result.candidate_executors
        ),
    }


def _streaming(fig: StreamingFigures | None) -> dict[str, Any] | None:
    """A streaming query run's batch and rate figures, or None for a run without the query."""
    if fig is None:
        return None
    q = fig.query
    return {
        "name": q.name,
        "id": q.query_id,
        "run_id": q.run_id,
        "status": q.status,
        "trigger_interval_ms": fig.trigger_interval_ms,
        "n_batches": fig.n_batches,
        "median_trigger_execution_ms": fig.median_trigger_ms,
        "max_trigger_execution_ms": fig.max_trigger_ms,
        "n_late_batches": fig.n_late_batches,
        "late_ms": fig.late_ms,
        "mean_input_rows_per_s": fig.mean_input_rows_per_s,
        "mean_processed_rows_per_s": fig.mean_processed_rows_per_s,
        "input_rows": fig.n_input_rows,
        "trigger_execution_ms": list(fig.trigger_ms),
    }


def build_diff_document(result: DiffResult) -> dict[str, Any]:
    """Return the JSON document of a comparison: runs, verdict, executions, findings, settings."""
    v = result.verdict
    causes = {(c.baseline_id, c.candidate_id): (c.cause, c.reason) for c in v.executions}
    return {
        "format_version": DIFF_FORMAT_VERSION,
        "kind": "diff",
        "baseline": _run(result, "baseline"),
        "candidate": _run(result, "candidate"),
        "verdict": {
            "cause": v.cause,
            "reason": v.reason,
            "notes": list(v.notes),
            "baseline_sql_ms": v.baseline_sql_ms,
            "candidate_sql_ms": v.candidate_sql_ms,
            "baseline_app_ms": v.baseline_app_ms,
            "candidate_app_ms": v.candidate_app_ms,
            "causes": [
                {"cause": s.cause, "change_ms": s.change_ms, "reasons": list(s.reasons)}
                for s in v.shares
            ],
        },
        "executions": [
            _execution(e, causes.get((e.baseline.execution_id, e.candidate.execution_id)))
            for e in result.executions
        ],
        "streaming": [
            {
                "label": d.label,
                "baseline": _streaming(d.baseline),
                "candidate": _streaming(d.candidate),
            }
            for d in result.streaming
        ],
        "unpaired": {
            "baseline": [_figures(f) for f in result.baseline_only],
            "candidate": [_figures(f) for f in result.candidate_only],
        },
        "findings": {
            "new": [_finding(f) for f in result.findings.only(result.findings.new)],
            "resolved": [_finding(f) for f in result.findings.only(result.findings.resolved)],
            "n_kept": len(result.findings.kept),
            "crossed_threshold": [
                {**_finding(f), "over_in": run}
                for run, changed in (
                    ("candidate", result.findings.new),
                    ("baseline", result.findings.resolved),
                )
                for f in result.findings.crossed_of(changed)
            ],
        },
        "advice_applied": [
            {
                "rule": o.rule,
                "setting": o.setting,
                "advised": o.advised,
                "before": o.before,
                "after": o.after,
                "status": o.status,
                "target_before": o.target_before,
                "target_after": o.target_after,
                "before_ms": o.before_ms,
                "predicted_ms": o.predicted_ms,
                "after_ms": o.after_ms,
            }
            for o in result.advice
        ],
        "settings": {
            "changed": [
                {"key": c.key, "baseline": c.baseline, "candidate": c.candidate}
                for c in result.config
            ],
            "n_per_run_left_out": result.n_config_per_run,
        },
    }
