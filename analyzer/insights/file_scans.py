"""Rule `small-files`: a file scan opened many files averaging only a few megabytes each."""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import NodePicks, context, declares, metric, node_self_wall_ms
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.units import fmt_bytes, fmt_count

RULE = "small-files"
METHOD = (
    "files read × 10 ms (task time to open a file and read its footer), divided by the "
    "application's executor cores, at most the scan's own wall-time share"
)
FILE_OPEN_MS = 10
"""Assumed task time to open one file and read its metadata (ms)."""


def detect_small_files(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report scans of `small_files_min_files`+ files averaging under `small_file_bytes`, when
    opening them cost a meaningful share of the query's wall time."""
    ctx = context(analysis)
    findings = []
    cores = ctx.cores
    scans = NodePicks(lambda node: declares(node, "number of files read", "size of files read"))
    for ex in analysis.application.executions:
        stats = analysis.node_stats.get(ex.execution_id, {})
        for node in scans(ex.final_plan.graph):
            ns = stats.get(node.node_id)
            files = metric(ns, "number of files read")
            size = metric(ns, "size of files read")
            if files is None or size is None or files.total == 0:
                continue
            mean = size.total // files.total
            if (
                files.total < thresholds.small_files_min_files
                or mean >= thresholds.small_file_bytes
            ):
                continue
            lost_ms = min(
                files.total * FILE_OPEN_MS // cores,
                node_self_wall_ms(analysis, ex, {node.node_id}),
            )
            finding = ctx.finding(
                RULE,
                METHOD,
                thresholds,
                lost_ms,
                title=(
                    f"Node {node.node_id} {node.name}: {fmt_count(files.total)} files of "
                    f"{fmt_bytes(mean)} on average"
                ),
                suggestion=(
                    "Compact the table into files of 128 MiB–1 GiB (OPTIMIZE, or rewrite "
                    "with fewer partitions); when writing, repartition by the partition "
                    "columns so each task writes few, large files."
                ),
                execution_id=ex.execution_id,
                node_id=node.node_id,
                evidence=(
                    ev("n_files", "files read", files.total, "count"),
                    ev("size_bytes", "bytes read", size.total, "bytes"),
                    ev("mean_file_bytes", "mean file size", mean, "bytes"),
                    ev("open_cost_ms", "estimated open cost", lost_ms, "ms"),
                ),
            )
            if finding is not None:
                findings.append(finding)
    return findings
