"""Findings priced: each finding's estimated time lost in money (docs/cost.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.pricing import PriceSpec
from analyzer.insights.finding import Finding


def price_findings(
    analysis: Analysis, findings: Sequence[Finding], prices: PriceSpec | None
) -> list[Finding]:
    """Return the findings with `estimated_lost_cost` set: the wall time each is estimated to
    have lost, priced at the cores and memory the executors held on average during its SQL
    execution (during the whole run for an application-level finding).

    Without a price for this log (`prices` None, or a price file with no matching entry) the
    findings are returned as they are.
    """
    cost = analysis.cost(prices)
    if cost.pricing is None:
        return list(findings)
    executions = analysis.executions_by_id
    out = []
    for f in findings:
        ex = executions.get(f.execution_id) if f.execution_id is not None else None
        start, end = (ex.start_ms, ex.end_ms) if ex is not None else (None, None)
        money = cost.cost_of_wall_ms(f.estimated_lost_ms, start, end)
        out.append(
            dataclasses.replace(f, estimated_lost_cost=money, cost_currency=cost.pricing.currency)
        )
    return out
