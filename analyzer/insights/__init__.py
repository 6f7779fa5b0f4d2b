"""Findings: why a query was slow, each from one small pure rule over an `Analysis`.

`detect_all(analysis, thresholds)` is the single entry point the reports use: it runs every rule
in `RULES` (`rules.py`), keeps one finding per place (`data-skew` says more than `task-skew` about
the same stage), groups a rule that fired on many stages of one query into one finding, and
returns them ranked by estimated time lost. See docs/findings.md.

The rules read the aggregation's polars tables, so `RULES`, `Rule` and `detect_all` are imported
on first use: a command that only needs `Finding` or `Thresholds` (options, an error before the
log is read) does not load polars.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from analyzer.insights.finding import SEVERITIES, Finding, Severity
from analyzer.insights.thresholds import Thresholds

if TYPE_CHECKING:
    from analyzer.insights.rules import RULES, Rule, detect_all

_FROM_RULES = frozenset({"RULES", "Rule", "detect_all"})


def __getattr__(name: str) -> Any:
    """Import the rules on first use of `RULES`, `Rule` or `detect_all`."""
    if name in _FROM_RULES:
        from analyzer.insights import rules

        return getattr(rules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["RULES", "SEVERITIES", "Finding", "Rule", "Severity", "Thresholds", "detect_all"]
