"""Findings: why a query was slow, each from one small pure rule over an `Analysis`.

`detect_all(analysis, thresholds)` is the single entry point the reports use: it runs every rule
in `RULES` and returns the findings ranked by estimated time lost. See docs/findings.md.
"""

from __future__ import annotations

from collections.abc import Callable

from analyzer.aggregate.analysis import Analysis
from analyzer.insights.broadcast import detect_large_broadcast
from analyzer.insights.data_skew import detect_data_skew
from analyzer.insights.failed_queries import detect_failed_queries
from analyzer.insights.file_scans import detect_small_files
from analyzer.insights.finding import SEVERITIES, Finding, Severity
from analyzer.insights.gc_pressure import detect_gc_pressure
from analyzer.insights.idle_executors import detect_idle_executors
from analyzer.insights.large_results import detect_large_results
from analyzer.insights.lost_executors import detect_lost_executors
from analyzer.insights.nested_loop_join import detect_nested_loop_join
from analyzer.insights.partition_pruning import detect_no_partition_pruning
from analyzer.insights.partition_sizes import detect_partition_sizes
from analyzer.insights.sort_merge_join import detect_small_side_sort_merge_join
from analyzer.insights.speculation import detect_speculation
from analyzer.insights.spill import detect_spill
from analyzer.insights.stage_retries import detect_stage_retries
from analyzer.insights.task_failures import detect_task_failures
from analyzer.insights.task_skew import detect_task_skew
from analyzer.insights.thresholds import Thresholds
from analyzer.insights.tiny_tasks import detect_tiny_tasks
from analyzer.insights.unsplit_skew import detect_unsplit_skew

Rule = Callable[[Analysis, Thresholds], list[Finding]]

RULES: tuple[Rule, ...] = (
    detect_failed_queries,
    detect_task_failures,
    detect_stage_retries,
    detect_lost_executors,
    detect_speculation,
    detect_task_skew,
    detect_data_skew,
    detect_unsplit_skew,
    detect_spill,
    detect_gc_pressure,
    detect_tiny_tasks,
    detect_partition_sizes,
    detect_small_side_sort_merge_join,
    detect_large_broadcast,
    detect_nested_loop_join,
    detect_small_files,
    detect_no_partition_pruning,
    detect_large_results,
    detect_idle_executors,
)
"""Every rule, in the order ties in `detect_all` keep."""

__all__ = ["RULES", "SEVERITIES", "Finding", "Rule", "Severity", "Thresholds", "detect_all"]


def _rank_key(finding: Finding) -> tuple[int, int]:
    return (-finding.estimated_lost_ms, -SEVERITIES.index(finding.severity))


def detect_all(analysis: Analysis, thresholds: Thresholds | None = None) -> list[Finding]:
    """Run every rule in `RULES` and return the findings, largest estimated time lost first.

    Findings with equal estimates (often 0: not a time cost) are ordered by severity, then by
    the order of `RULES`. `thresholds` defaults to `Thresholds()`, sized for production
    clusters; pass smaller ones for small test data.
    """
    chosen = thresholds if thresholds is not None else Thresholds()
    found = [finding for rule in RULES for finding in rule(analysis, chosen)]
    return sorted(found, key=_rank_key)
