"""What the run cost, worded once for every format (figures from `aggregate.cost`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.cost import CostFigures
from analyzer.aggregate.pricing import PriceSpec
from analyzer.units import fmt_amount, fmt_bytes, fmt_money, fmt_pct, plural

COST_DOC = "docs/cost.md"


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class CostView:
    """The run's cores and memory held and used, and their price when one was given."""

    cores_str: str = field(
        metadata=_help(
            "`0.52 core-hours allocated (4 executors), 0.21 used by tasks: 59.6 % idle`."
        )
    )
    memory_str: str = field(
        metadata=_help("`1.9 GiB-hours of memory (4.4 GiB per executor: spark.executor.memory …)`.")
    )
    price_str: str = field(
        metadata=_help(
            "`$0.026 at $0.05 per core-hour (--price-per-core-hour), $0.016 of it idle`; empty "
            "without a price."
        )
    )
    summary_str: str = field(
        metadata=_help("One line: core-hours, idle share and the cost when priced.")
    )
    docs_anchor: str = field(metadata=_help("Where the formulas are: `docs/cost.md`."))


def build_cost_view(figures: CostFigures) -> CostView:
    """Word a run's cost figures."""
    idle = fmt_pct(figures.idle_share)
    who = (
        "the driver, local mode" if figures.local_mode else plural(figures.n_executors, "executor")
    )
    cores_str = (
        f"{fmt_amount(figures.core_hours_allocated)} core-hours allocated ({who}), "
        f"{fmt_amount(figures.core_hours_used)} used by tasks: {idle} idle"
    )
    memory_str = (
        f"{fmt_amount(figures.memory_gib_hours)} GiB-hours of memory "
        f"({fmt_bytes(figures.memory_bytes_per_executor)} per executor: "
        f"{figures.memory_basis_str})"
    )
    p = figures.pricing
    price_str = ""
    summary = (
        f"{fmt_amount(figures.core_hours_allocated)} core-hours, {idle} idle, "
        f"{fmt_amount(figures.memory_gib_hours)} GiB-hours"
    )
    if p is not None:
        rate = f"{fmt_money(p.core_hour, p.currency)} per core-hour"
        if p.gib_hour:
            rate += f" and {fmt_money(p.gib_hour, p.currency)} per GiB-hour"
        price_str = (
            f"{fmt_money(figures.cost_allocated, p.currency)} at {rate} ({p.source}), "
            f"{fmt_money(figures.cost_idle, p.currency)} of it for idle cores"
        )
        summary += f": {fmt_money(figures.cost_allocated, p.currency)}"
    return CostView(
        cores_str=cores_str,
        memory_str=memory_str,
        price_str=price_str,
        summary_str=summary,
        docs_anchor=COST_DOC,
    )


def cost_view(analysis: Analysis, prices: PriceSpec | None) -> CostView:
    """The cost view of an analysis, priced by `prices` when given."""
    return build_cost_view(analysis.cost(prices))
