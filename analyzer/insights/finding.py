"""What a rule reports: one problem, where it is, the evidence, and what it probably cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")
"""From least to most severe."""


@dataclass(frozen=True)
class Finding:
    """One reason a query was slow (or wasteful), found by one rule, with its evidence."""

    rule: str = field(metadata={"help": "Rule id, e.g. `task-skew`; anchors in docs/findings.md."})
    severity: Severity = field(metadata={"help": "`info`, `warning` or `critical`."})
    title: str = field(metadata={"help": "One line naming the problem and where it is."})
    suggestion: str = field(
        metadata={"help": "A short, concrete fix: a Spark setting or a query change."}
    )
    estimated_lost_ms: int = field(
        metadata={"help": "Wall-clock time the problem probably cost, in ms (0: not a time cost)."}
    )
    estimate_method: str = field(
        metadata={"help": "How `estimated_lost_ms` was computed, in one sentence."}
    )
    execution_id: int | None = field(
        default=None, metadata={"help": "SQL execution the finding points at, if any."}
    )
    node_id: int | None = field(
        default=None, metadata={"help": "Plan node (in the execution's final plan), if any."}
    )
    stage_id: int | None = field(default=None, metadata={"help": "Stage, if any."})
    stage_attempt_id: int | None = field(
        default=None, metadata={"help": "Attempt of `stage_id`, if the finding is about one."}
    )
    task_ids: tuple[int, ...] = field(
        default=(), metadata={"help": "Task attempts the finding points at (at most a few)."}
    )
    evidence: tuple[tuple[str, str], ...] = field(
        default=(), metadata={"help": "(label, formatted value) pairs, in reading order."}
    )
    numbers: tuple[tuple[str, float], ...] = field(
        default=(),
        metadata={"help": "The raw numbers behind the evidence: (name with unit, value)."},
    )

    def number(self, name: str) -> float:
        """Return the raw number called `name` (KeyError if the finding has none)."""
        for key, value in self.numbers:
            if key == name:
                return value
        raise KeyError(name)
