"""Rule `no-partition-pruning`: a partitioned table was scanned with no partition filter,
though the query filtered or joined on one of its partition columns."""

from __future__ import annotations

import re

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import NodePicks, declares, metric
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.plan import PlanGraph
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


SCAN_OUTPUT = re.compile(r"^FileScan \S+ [^\[\s]*\[([^\]]*)\]")
"""The output list of a file scan's description: `FileScan parquet db.t[a#1,dt#3] Batched…`."""


def top_level_fields(read_schema: str) -> set[str]:
    """Return the top-level field names of a scan's `ReadSchema` (`struct<a:int,b:struct<…>>`).

    >>> sorted(top_level_fields("struct<a:int,m:map<string,int>,s:struct<x:int,y:int>>"))
    ['a', 'm', 's']
    """
    inner = read_schema.strip()
    if inner.startswith("struct<") and inner.endswith(">"):
        inner = inner[len("struct<") : -1]
    names, depth, start = set(), 0, 0
    for i, ch in enumerate(inner + ","):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            names.add(inner[start:i].split(":", 1)[0].strip().strip("`"))
            start = i + 1
    names.discard("")
    return names


def partition_columns(desc: str, metadata: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """Return a file scan's partition columns as `name#id`: Spark's file scans output every
    partition column of the table after the columns read (`FileSourceStrategy`), and
    `ReadSchema` lists only the columns read. Empty when the output list is cut short or the
    scan is not a file scan: then the table's partition columns are not known.

    >>> partition_columns("FileScan parquet [amount#5,dt#6] Batched: true",
    ...                   (("ReadSchema", "struct<amount:double>"),))
    ('dt#6',)
    """
    match = SCAN_OUTPUT.match(desc)
    schema = dict(metadata).get("ReadSchema")
    if match is None or schema is None or "more field" in match.group(1):
        return ()
    read = top_level_fields(schema)
    output = [c.strip() for c in match.group(1).split(",") if "#" in c]
    return tuple(c for c in output if c.split("#", 1)[0] not in read)


def filtered_or_joined_on(graph: PlanGraph, scan_id: int, columns: tuple[str, ...]) -> bool:
    """Return True if a Filter or a join of the plan, other than the scan itself, names one of
    `columns` (`name#id`, the scan's own attribute): a predicate a partition filter or dynamic
    partition pruning could have used."""
    pattern = re.compile("|".join(re.escape(c) + r"(?!\d)" for c in columns))
    for node in graph.nodes:
        if node.node_id == scan_id or not ("Filter" in node.name or "Join" in node.name):
            continue
        if pattern.search(node.desc):
            return True
    return False


def detect_no_partition_pruning(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report scans without PartitionFilters reading `pruning_min_partitions`+ partitions,
    when a Filter or a join of the query names one of the table's partition columns."""
    findings = []
    scans = NodePicks(lambda node: declares(node, "number of partitions read"))
    for ex in analysis.application.executions:
        stats = analysis.node_stats.get(ex.execution_id, {})
        for node in scans(ex.final_plan.graph):
            parts = metric(stats.get(node.node_id), "number of partitions read")
            if parts is None or parts.total < thresholds.pruning_min_partitions:
                continue
            if has_partition_filter(node.metadata):
                continue
            # Without a predicate on a partition column no filter and no dynamic partition
            # pruning could have skipped a partition: reading them all was the query's need.
            columns = partition_columns(node.desc, node.metadata)
            if not columns or not filtered_or_joined_on(ex.final_plan.graph, node.node_id, columns):
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
