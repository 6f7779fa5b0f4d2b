"""What a rule reports: one problem, where it is, the typed evidence, and what it probably cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from analyzer.units import Unit

Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")
"""From least to most severe."""


@dataclass(frozen=True)
class Evidence:
    """One fact behind a finding: a raw value with its unit, worded only by the views.

    `key` names the value for programs (JSON `numbers`, tests) with its unit in the name
    (`max_task_duration_ms`); `label` is the human label, empty for a value kept for programs
    only; `note` is text printed after the formatted value (`in task 11 (partition 1)`), or
    instead of it when the value is None.
    """

    key: str = field(metadata={"help": "Machine name with unit, e.g. `max_task_duration_ms`."})
    label: str = field(metadata={"help": "Human label; empty: not listed in reports."})
    value: int | float | str | None = field(metadata={"help": "The raw value, in base units."})
    unit: Unit = field(metadata={"help": "How views format `value` (see `analyzer.units`)."})
    note: str = field(default="", metadata={"help": "Text after the formatted value, or empty."})


def ev(
    key: str, label: str, value: int | float | str | None, unit: Unit, note: str = ""
) -> Evidence:
    """Return one `Evidence` item (a short spelling for the rules' evidence tuples).

    >>> ev("n_tasks", "tasks", 12, "count").value
    12
    """
    return Evidence(key=key, label=label, value=value, unit=unit, note=note)


AdviceKind = Literal["count", "bytes", "memory", "duration", "flag"]
"""How a setting's value reads: a count, a size in bytes (`128m`; a bare number is bytes), an
executor memory size (a bare number is MiB), a duration (`60s`; a bare number is seconds), or
`true`/`false`."""


@dataclass(frozen=True)
class Advice:
    """A setting a finding advises, with the value computed from the run and the arithmetic.

    `value` is None when no value can be computed from what the run measured; `arithmetic`
    then says why (docs/findings.md#advice-with-numbers).
    """

    setting: str = field(
        metadata={"help": "The Spark property, e.g. `spark.sql.shuffle.partitions`."}
    )
    value: str | None = field(
        metadata={
            "help": "The value to set, as Spark reads it (`200`, `256m`); None: none computed."
        }
    )
    current: str = field(
        metadata={
            "help": "Its value in the run: as the log sets it, or Spark's default (`(default)`)."
        }
    )
    arithmetic: str = field(metadata={"help": "How the value was worked out, with the figures."})
    kind: AdviceKind = field(metadata={"help": "How the value reads (compared in a later run)."})
    predicted_ms: int | None = field(
        default=None,
        metadata={
            "help": "The wall time of what the finding points at (its stage, else its query) "
            "predicted with the value set: now minus the estimated time lost; None: no prediction."
        },
    )
    measured_ms: int | None = field(
        default=None, metadata={"help": "That wall time as measured in this run, ms."}
    )
    predicted_of: str = field(
        default="", metadata={"help": "What the prediction is of: `stage 9`, `SQL execution 3`."}
    )


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
    evidence: tuple[Evidence, ...] = field(
        default=(), metadata={"help": "Typed facts behind the finding, in reading order."}
    )
    estimated_lost_cost: float | None = field(
        default=None,
        metadata={
            "help": "`estimated_lost_ms` priced at what the executors held meanwhile "
            "(docs/cost.md); None without a price."
        },
    )
    advice: tuple[Advice, ...] = field(
        default=(),
        metadata={"help": "The settings it advises, each with a computed value and arithmetic."},
    )
    cost_currency: str = field(
        default="", metadata={"help": "Currency of `estimated_lost_cost`, empty without one."}
    )

    def number(self, key: str) -> float:
        """Return the raw numeric value of evidence `key` (KeyError if there is none)."""
        for item in self.evidence:
            if item.key == key and isinstance(item.value, int | float):
                return item.value
        raise KeyError(key)

    def numbers(self) -> dict[str, int | float]:
        """Return every numeric evidence value by key, in evidence order."""
        return {
            item.key: item.value
            for item in self.evidence
            if isinstance(item.value, int | float) and not isinstance(item.value, bool)
        }
