"""Rule `data-skew`: one task of a plan node handled far more rows or bytes than the median task."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.node_metrics import MetricStats
from analyzer.aggregate.stage_stats import task_durations
from analyzer.insights._common import severity_for, stage_stats
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import Unit, fmt_bytes, fmt_count, fmt_factor

RULE = "data-skew"
METHOD = (
    "duration of the task holding the largest value minus the median task duration of its stage"
)
ROW_METRICS = frozenset({"number of output rows", "records read"})
"""Per-task row counts that show how data is spread over partitions."""
BYTE_METRICS = frozenset({"local bytes read", "remote bytes read", "size of files read"})
"""Per-task byte counts that show how data is spread over partitions."""


def _skewed(m: MetricStats, thresholds: Thresholds) -> bool:
    """Return True if one task's value is both large and far above the median task's."""
    if m.count < thresholds.skew_min_tasks or m.max_at is None or m.max_at.task_id is None:
        return False
    floor = (
        thresholds.data_skew_min_rows if m.name in ROW_METRICS else thresholds.data_skew_min_bytes
    )
    if m.max_value < floor:
        return False
    return m.median == 0 or m.max_value >= thresholds.data_skew_ratio * m.median


def detect_data_skew(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report plan nodes whose largest per-task rows or bytes is `data_skew_ratio` × the median.

    The largest value must reach `data_skew_min_rows` (row metrics) or `data_skew_min_bytes`
    (byte metrics). Nodes skewed in the same stage are reported once, on the node with the
    highest ratio (ties: the node nearest the plan's root), naming the others.

    Example (a join where one key holds 90 % of the rows): `Node 7 SortMergeJoin: one task had
    33.9× the median number of output rows (370,075 vs 10,902)`.
    """
    findings = []
    stats_by_stage = {key[0]: s for key, s in sorted(stage_stats(analysis).items())}
    for execution in analysis.application.executions:
        graph = execution.final_plan.graph
        per_stage: dict[int, list[tuple[float, int, MetricStats]]] = {}
        for node_id, ns in analysis.node_stats.get(execution.execution_id, {}).items():
            if graph.node(node_id).is_cluster:
                continue
            for m in ns.metrics:
                if m.name not in ROW_METRICS | BYTE_METRICS or not _skewed(m, thresholds):
                    continue
                assert m.max_at is not None and m.max_at.stage_id is not None
                ratio = m.max_value / m.median if m.median else float("inf")
                per_stage.setdefault(m.max_at.stage_id, []).append((ratio, node_id, m))
        for stage_id, hits in sorted(per_stage.items()):
            hits.sort(key=lambda h: (-h[0], h[1]))
            ratio, node_id, m = hits[0]
            assert m.max_at is not None and m.max_at.task_id is not None
            node = graph.node(node_id)
            s = stats_by_stage.get(stage_id)
            task_ms = task_durations(analysis.tasks, [m.max_at.task_id]).get(m.max_at.task_id, 0)
            median_ms = s.median_duration_ms if s is not None else 0
            lost_ms = max(0, task_ms - median_ms)
            fmt = fmt_count if m.name in ROW_METRICS else fmt_bytes
            unit: Unit = "count" if m.name in ROW_METRICS else "bytes"
            ratio_str = fmt_factor(ratio) if m.median else "∞ (median 0)"
            others = sorted({f"{graph.node(n).name} ({n})" for _, n, _ in hits[1:] if n != node_id})
            evidence = [
                ev("metric", "metric", m.name, "text"),
                ev(
                    "max_value",
                    "largest task",
                    m.max_value,
                    unit,
                    f" in task {m.max_at.task_id} (partition {m.max_at.partition_id})",
                ),
                ev("median_value", "median task", m.median, unit),
                # An infinite ratio (median 0) has no value: JSON has no infinity.
                ev(
                    "ratio",
                    "ratio",
                    ratio if m.median else None,
                    "ratio",
                    "" if m.median else ratio_str,
                ),
                ev("total_value", "total", m.total, unit),
                ev("max_task_duration_ms", "largest task duration", task_ms, "ms"),
                ev("median_task_duration_ms", "median task duration", median_ms, "ms"),
            ]
            if others:
                evidence.append(ev("also_skewed", "also skewed", ", ".join(others), "text"))
            findings.append(
                Finding(
                    rule=RULE,
                    severity=severity_for(lost_ms, thresholds),
                    title=(
                        f"Node {node_id} {node.name}: one task had {ratio_str} the median "
                        f"{m.name} ({fmt(m.max_value)} vs {fmt(m.median)})"
                    ),
                    suggestion=(
                        "Spread the hot key: for joins enable spark.sql.adaptive.skewJoin.enabled "
                        "(AQE), otherwise salt the key or aggregate it separately; check for "
                        "null or default keys."
                    ),
                    estimated_lost_ms=lost_ms,
                    estimate_method=METHOD,
                    execution_id=execution.execution_id,
                    node_id=node_id,
                    stage_id=stage_id,
                    stage_attempt_id=m.max_at.stage_attempt_id,
                    task_ids=(m.max_at.task_id,),
                    evidence=tuple(evidence),
                )
            )
    return findings
