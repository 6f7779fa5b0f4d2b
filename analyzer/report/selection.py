"""Which SQL executions a report shows, and in what order: one rule for every format."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.errors import UsageError
from analyzer.model.application import Application, Execution
from analyzer.report.options import ReportOptions
from analyzer.units import plural

_NO_START = 1 << 62


def by_start(executions: Sequence[Execution]) -> list[Execution]:
    """Order executions by start time (unknown starts last), then id."""
    return sorted(
        executions,
        key=lambda e: (e.start_ms if e.start_ms is not None else _NO_START, e.execution_id),
    )


def by_duration(executions: Sequence[Execution]) -> list[Execution]:
    """Order executions slowest first (running ones count as 0), then by id."""
    return sorted(executions, key=lambda e: (-(e.duration_ms or 0), e.execution_id))


@dataclass(frozen=True)
class Selection:
    """The executions a report shows, by start time, and why these."""

    executions: tuple[Execution, ...] = field(
        metadata={"help": "The chosen executions, sorted by start time."}
    )
    n_total: int = field(metadata={"help": "SQL executions in the log."})
    is_filtered: bool = field(metadata={"help": "True when --execution or --top narrowed it."})
    description_str: str = field(
        metadata={"help": "`3 of 25 SQL executions (the 3 slowest), by start time`."}
    )

    @property
    def ids(self) -> frozenset[int]:
        """The chosen execution ids."""
        return frozenset(e.execution_id for e in self.executions)


def _held(known: set[int]) -> str:
    """Which execution ids a log holds, for a usage error: `it holds 3 SQL executions: ids 0
    to 2`."""
    if not known:
        return "it holds no SQL execution"
    ids = f"id {min(known)}" if len(known) == 1 else f"ids {min(known)} to {max(known)}"
    return f"it holds {plural(len(known), 'SQL execution')}: {ids}"


def select_executions(app: Application, options: ReportOptions) -> Selection:
    """Return the executions to show: only `options.executions`, then the `options.top` slowest.

    Raises `UsageError` for an execution id the log does not hold.
    """
    chosen = list(app.executions)
    if options.executions:
        known = {e.execution_id for e in chosen}
        missing = sorted(set(options.executions) - known)
        if missing:
            raise UsageError(
                f"no SQL execution {', '.join(map(str, missing))} in this log ({_held(known)})"
            )
        wanted = set(options.executions)
        chosen = [e for e in chosen if e.execution_id in wanted]
    if options.top is not None:
        chosen = by_duration(chosen)[: options.top]
    reasons = []
    if options.executions:
        reasons.append("chosen by id")
    if options.top is not None:
        reasons.append(f"the {options.top} slowest")
    what = f"{len(chosen)} of {len(app.executions)} SQL executions"
    return Selection(
        executions=tuple(by_start(chosen)),
        n_total=len(app.executions),
        is_filtered=bool(options.executions) or options.top is not None,
        description_str=what + (f" ({', '.join(reasons)})" if reasons else "") + ", by start time",
    )
