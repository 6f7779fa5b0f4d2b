"""What a comparison of two runs finds: typed, frozen, worded only by the views (docs/diff.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.streaming import StreamingFigures
from analyzer.compare.advice_check import AdviceOutcome
from analyzer.compare.figures import ExecutionFigures, ExecutorFigures, NodeFigures
from analyzer.compare.matching import MatchTier
from analyzer.insights import Finding


def _help(text: str) -> dict[str, str]:
    return {"help": text}


Cause = Literal[
    "no-change",
    "unrelated",
    "incomplete",
    "faster",
    "failures",
    "more-input",
    "fewer-cores",
    "partitions",
    "plan-change",
    "skew",
    "spill",
    "slower-tasks",
    "outside-sql",
]
"""What a verdict can name (docs/diff.md#the-verdict)."""


@dataclass(frozen=True)
class NodeDelta:
    """One operator in both runs (or in one: added or removed)."""

    baseline: NodeFigures | None = field(metadata=_help("The baseline's operator, if any."))
    candidate: NodeFigures | None = field(metadata=_help("The candidate's operator, if any."))

    @property
    def change_ms(self) -> float:
        """Self time in the candidate minus in the baseline (a missing side counts 0)."""
        before = self.baseline.self_time_ms if self.baseline is not None else None
        after = self.candidate.self_time_ms if self.candidate is not None else None
        return (after or 0.0) - (before or 0.0)

    @property
    def status(self) -> Literal["same", "switched", "added", "removed"]:
        """`added`, `removed`, `switched` (another operator at its place) or `same`."""
        if self.baseline is None:
            return "added"
        if self.candidate is None:
            return "removed"
        return "same" if self.baseline.name == self.candidate.name else "switched"


@dataclass(frozen=True)
class OperatorSwitch:
    """An operator of the baseline replaced by another at the same place in the candidate."""

    baseline_node_id: int = field(metadata=_help("Node id in the baseline's final plan."))
    candidate_node_id: int = field(metadata=_help("Node id in the candidate's final plan."))
    baseline_name: str = field(metadata=_help("e.g. `BroadcastHashJoin`."))
    candidate_name: str = field(metadata=_help("e.g. `SortMergeJoin`."))
    is_join: bool = field(metadata=_help("Both are joins: the join strategy switched."))


@dataclass(frozen=True)
class PlanChanges:
    """How the final plans of one execution differ between the runs."""

    switches: tuple[OperatorSwitch, ...] = field(
        metadata=_help("Operators replaced at their place, joins first.")
    )
    added: tuple[tuple[str, int], ...] = field(
        metadata=_help("(operator name, how many) only in the candidate, by name.")
    )
    removed: tuple[tuple[str, int], ...] = field(
        metadata=_help("(operator name, how many) only in the baseline, by name.")
    )

    @property
    def changed(self) -> bool:
        """True when the operators differ at all."""
        return bool(self.switches or self.added or self.removed)

    @property
    def join_switches(self) -> tuple[OperatorSwitch, ...]:
        """The switches that changed a join strategy."""
        return tuple(s for s in self.switches if s.is_join)

    @property
    def moved(self) -> tuple[tuple[str, int], ...]:
        """(operator name, how many) both added and removed: the same operator at another place
        in the candidate's plan (a broadcast of a join's other side), by name."""
        removed = dict(self.removed)
        return tuple((name, min(n, removed[name])) for name, n in self.added if name in removed)

    def only_in(self, side: str) -> tuple[tuple[str, int], ...]:
        """(operator name, how many) of `added` (side `candidate`) or `removed` (`baseline`)
        that did not move, by name."""
        moved = dict(self.moved)
        listed = self.added if side == "candidate" else self.removed
        return tuple((name, n - moved.get(name, 0)) for name, n in listed if n > moved.get(name, 0))


@dataclass(frozen=True)
class ConfigChange:
    """One setting that differs between the runs."""

    key: str = field(metadata=_help("The property, e.g. `spark.sql.shuffle.partitions`."))
    baseline: str | None = field(metadata=_help("Its value in the baseline; None: not set."))
    candidate: str | None = field(metadata=_help("Its value in the candidate; None: not set."))


@dataclass(frozen=True)
class ExecutionDiff:
    """One query in both runs: its figures side by side, its operators paired, its plan change."""

    tier: MatchTier = field(metadata=_help("How the two executions were paired."))
    description: str = field(metadata=_help("The candidate's description (often SQL)."))
    baseline: ExecutionFigures = field(metadata=_help("The baseline's figures."))
    candidate: ExecutionFigures = field(metadata=_help("The candidate's figures."))
    nodes: tuple[NodeDelta, ...] = field(
        metadata=_help("Every operator of both final plans, largest self-time change first.")
    )
    plan: PlanChanges = field(metadata=_help("How the final plans differ."))
    config: tuple[ConfigChange, ...] = field(
        metadata=_help("SQL settings the session changed for it that differ, by key.")
    )

    @property
    def change_ms(self) -> int:
        """Wall time in the candidate minus in the baseline; 0 when either run's log has no
        end for it (its time is not known)."""
        if not (self.baseline.ended and self.candidate.ended):
            return 0
        return self.candidate.wall_ms - self.baseline.wall_ms


@dataclass(frozen=True)
class FindingChanges:
    """Findings of the candidate against the baseline's, paired by rule and place."""

    new: tuple[Finding, ...] = field(metadata=_help("Only in the candidate, by time lost."))
    resolved: tuple[Finding, ...] = field(metadata=_help("Only in the baseline, by time lost."))
    kept: tuple[tuple[Finding, Finding], ...] = field(
        metadata=_help("(baseline, candidate) found in both, by the candidate's time lost.")
    )
    crossed: tuple[Finding, ...] = field(
        default=(),
        metadata=_help(
            "Of `new` and `resolved`, those whose rule fires at the same place in the other run "
            "too, under its significance threshold there: the condition is in both runs, only "
            "its time crossed the threshold (the query's time changed)."
        ),
    )

    def only(self, findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
        """`findings` (`new` or `resolved`) without the ones that crossed a threshold."""
        return tuple(f for f in findings if not any(f is c for c in self.crossed))

    def crossed_of(self, findings: tuple[Finding, ...]) -> tuple[Finding, ...]:
        """`findings` (`new` or `resolved`) that crossed a threshold."""
        return tuple(f for f in findings if any(f is c for c in self.crossed))


@dataclass(frozen=True)
class ExecutionCause:
    """Why one execution's time changed, by the first verdict rule that fired for it."""

    baseline_id: int = field(metadata=_help("Its id in the baseline."))
    candidate_id: int = field(metadata=_help("Its id in the candidate."))
    change_ms: int = field(metadata=_help("Its wall-time change."))
    cause: Cause = field(metadata=_help("The rule that fired."))
    reason: str = field(metadata=_help("The rule's one-line reason, with its figures."))


@dataclass(frozen=True)
class CauseShare:
    """One cause and how much of the change it accounts for."""

    cause: Cause = field(metadata=_help("The cause."))
    change_ms: int = field(metadata=_help("Summed wall-time change of what it explains."))
    reasons: tuple[str, ...] = field(metadata=_help("Its reasons, largest change first."))


@dataclass(frozen=True)
class Verdict:
    """The short answer: how much the time changed and what explains most of it."""

    cause: Cause = field(metadata=_help("What explains most of the change."))
    reason: str = field(metadata=_help("Why, with the figures: the main reason of `cause`."))
    baseline_sql_ms: int = field(metadata=_help("SQL wall time of the baseline (all executions)."))
    candidate_sql_ms: int = field(metadata=_help("SQL wall time of the candidate."))
    baseline_app_ms: int | None = field(metadata=_help("The baseline's application wall time."))
    candidate_app_ms: int | None = field(metadata=_help("The candidate's application wall time."))
    shares: tuple[CauseShare, ...] = field(
        metadata=_help("Every cause that fired, largest share of the change first.")
    )
    executions: tuple[ExecutionCause, ...] = field(
        metadata=_help("The cause of each paired execution whose time changed significantly.")
    )
    notes: tuple[str, ...] = field(
        default=(),
        metadata=_help(
            "What weakens the comparison, said beside the verdict: a run whose main work "
            "failed (`compare.verdict.failed_main_work`)."
        ),
    )


@dataclass(frozen=True)
class StreamingQueryDiff:
    """One Structured Streaming query in both runs (or in one), paired by its name, else by its
    query id (kept across restarts from one checkpoint)."""

    label: str = field(metadata=_help("The query's name, or the start of its id."))
    baseline: StreamingFigures | None = field(metadata=_help("The baseline's run, if any."))
    candidate: StreamingFigures | None = field(metadata=_help("The candidate's run, if any."))


@dataclass(frozen=True)
class DiffResult:
    """Two runs compared (`api.diff`); `api.render_diff` words it in any format."""

    baseline: Analysis = field(metadata=_help("The earlier (reference) run."))
    candidate: Analysis = field(metadata=_help("The run being explained."))
    baseline_findings: tuple[Finding, ...] = field(metadata=_help("The baseline's findings."))
    candidate_findings: tuple[Finding, ...] = field(metadata=_help("The candidate's findings."))
    executions: tuple[ExecutionDiff, ...] = field(
        metadata=_help("Paired executions, largest wall-time change (either way) first.")
    )
    baseline_only: tuple[ExecutionFigures, ...] = field(
        metadata=_help("Executions of the baseline with no partner, by start.")
    )
    candidate_only: tuple[ExecutionFigures, ...] = field(
        metadata=_help("Executions of the candidate with no partner, by start.")
    )
    findings: FindingChanges = field(metadata=_help("New, resolved and kept findings."))
    config: tuple[ConfigChange, ...] = field(
        metadata=_help("Spark properties that differ, by key (per-run values left out).")
    )
    n_config_per_run: int = field(
        metadata=_help("Properties left out because they name the run (ids, ports, times).")
    )
    baseline_executors: ExecutorFigures = field(metadata=_help("The baseline's capacity."))
    candidate_executors: ExecutorFigures = field(metadata=_help("The candidate's capacity."))
    verdict: Verdict = field(metadata=_help("What explains most of the change."))
    advice: tuple[AdviceOutcome, ...] = field(
        default=(),
        metadata=_help(
            "Settings the baseline's findings advised that the candidate applied, with the "
            "predicted and the measured wall time."
        ),
    )
    streaming: tuple[StreamingQueryDiff, ...] = field(
        default=(),
        metadata=_help(
            "Streaming queries of either run, paired: the baseline's order, then the "
            "candidate's unpaired ones."
        ),
    )
