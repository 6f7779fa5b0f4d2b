"""Rule `no-partition-pruning`: a partitioned table was scanned with no partition filter."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import metric
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_count

RULE = "no-partition-pruning"
METHOD = "not estimated: the cost depends on how many partitions a filter would have skipped"


def has_partition_filter(metadata: tuple[tuple[str, str], ...]) -> bool:
    """Return True if a scan's metadata lists a non-empty `PartitionFilters`.

    >>> has_partition_filter((("PartitionFilters", "[isnotnull(dt#3), (dt#3 = 2024-01-01)]"),))
    True
    >>> has_partition_filter((("PartitionFilters", "[]"),))
    False
    """
    for key, value in metadata:
        if key == "PartitionFilters":
            return value.strip() not in ("", "[]")
    return False


def detect_no_partition_pruning(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report scans without PartitionFilters reading `pruning_min_partitions`+ partitions."""
    findings = []
    for ex in analysis.application.executions:
        stats = analysis.node_stats.get(ex.execution_id, {})
        for node in ex.final_plan.graph.nodes:
            parts = metric(stats.get(node.node_id), "number of partitions read")
            if parts is None or parts.total < thresholds.pruning_min_partitions:
                continue
            if has_partition_filter(node.metadata):
                continue
            size = metric(stats.get(node.node_id), "size of files read")
            findings.append(
                Finding(
                    rule=RULE,
                    severity="info",
                    title=(
                        f"Node {node.node_id} {node.name}: read {fmt_count(parts.total)} "
                        "partitions without a partition filter"
                    ),
                    suggestion=(
                        "Filter on the table's partition columns (with literal values, not "
                        "expressions over them) so Spark prunes partitions; check that "
                        "spark.sql.optimizer.dynamicPartitionPruning.enabled=true (the "
                        "default) for joins."
                    ),
                    estimated_lost_ms=0,
                    estimate_method=METHOD,
                    execution_id=ex.execution_id,
                    node_id=node.node_id,
                    evidence=(
                        ev("n_partitions", "partitions read", parts.total, "count"),
                        ev(
                            "size_bytes",
                            "size of files read",
                            size.total if size else None,
                            "bytes",
                        ),
                        ev(
                            "partition_filters",
                            "PartitionFilters",
                            dict(node.metadata).get("PartitionFilters", "–"),
                            "text",
                        ),
                    ),
                )
            )
    return findings
