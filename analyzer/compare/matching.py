"""Pair the SQL executions of two runs: the same query in each, whatever ids Spark gave them.

Tiers, strictest first (docs/diff.md#matching-executions); an execution paired in one tier is not
looked at again, and several executions with the same key pair up in start order:

1. `plan and description`: the same plan fingerprint and the same description;
2. `plan`: the same plan fingerprint (a description with a date in it changed);
3. `shape and description`: the same plan shape and the same description, digits folded
   (a literal changed, a join strategy switched, the input grew);
4. `description`: the same description (digits kept: `query9` is not `query72`) that no other
   unpaired execution of either run has, with plans that share at least half their operators
   (a filter or a join was added);
5. `shape`: the only unpaired execution of each run with that plan shape.

Fingerprints are taken on the initial plan (`plans[0]`): what Spark planned before AQE changed
anything at run time, so a join AQE switched in one run and not in the other still matches.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from analyzer.aggregate.fingerprint import (
    canonical_tree,
    family,
    normalize_description,
    plan_fingerprint,
    shape_fingerprint,
)
from analyzer.model.application import Execution

MatchTier = Literal["plan and description", "plan", "shape and description", "description", "shape"]
MATCH_TIERS: tuple[MatchTier, ...] = (
    "plan and description",
    "plan",
    "shape and description",
    "description",
    "shape",
)
MIN_SHARED_OPERATORS = 0.5
"""Tier `description` pairs two plans only if this share of their operators is common to both."""

_NO_START = 1 << 62


@dataclass(frozen=True)
class ExecutionKeys:
    """What one execution is matched by."""

    execution_id: int
    start_ms: int
    plan: str
    shape: str
    description: str
    folded_description: str
    operators: Counter[str]
    """Operator families of its initial plan, counted."""


def execution_keys(execution: Execution) -> ExecutionKeys:
    """Fingerprint one execution's initial plan and fold its description."""
    tree = canonical_tree(execution.plans[0].graph) if execution.plans else ()
    return ExecutionKeys(
        execution_id=execution.execution_id,
        start_ms=execution.start_ms if execution.start_ms is not None else _NO_START,
        plan=plan_fingerprint(tree),
        shape=shape_fingerprint(tree),
        description=execution.shown_description,
        folded_description=normalize_description(execution.shown_description),
        operators=Counter(family(n.name) for n in tree if not n.is_reference),
    )


def shared_share(a: Counter[str], b: Counter[str]) -> float:
    """Return the share of two operator multisets common to both (Dice's coefficient).

    >>> shared_share(Counter({"Join": 1, "Filter": 1}), Counter({"Join": 1, "Project": 1}))
    0.5
    """
    total = sum(a.values()) + sum(b.values())
    return 2 * sum((a & b).values()) / total if total else 1.0


@dataclass(frozen=True)
class ExecutionPairing:
    """Which execution of the candidate is which of the baseline's, and what is left over."""

    pairs: tuple[tuple[int, int, MatchTier], ...]
    """(baseline id, candidate id, tier), in the candidate's start order."""
    baseline_only: tuple[int, ...]
    """Baseline executions with no partner, by start."""
    candidate_only: tuple[int, ...]
    """Candidate executions with no partner, by start."""


def pair_executions(
    baseline: Sequence[Execution], candidate: Sequence[Execution]
) -> ExecutionPairing:
    """Pair the executions of two runs tier by tier (see the module's docstring)."""
    keys_b = sorted(
        (execution_keys(e) for e in baseline), key=lambda k: (k.start_ms, k.execution_id)
    )
    keys_c = sorted(
        (execution_keys(e) for e in candidate), key=lambda k: (k.start_ms, k.execution_id)
    )
    left_b = {k.execution_id: k for k in keys_b}
    left_c = {k.execution_id: k for k in keys_c}
    pairs: list[tuple[int, int, MatchTier]] = []

    def run_tier(
        tier: MatchTier,
        key: Callable[[ExecutionKeys], Hashable],
        unique: bool = False,
        accept: Callable[[ExecutionKeys, ExecutionKeys], bool] | None = None,
    ) -> None:
        groups_b: dict[Hashable, list[ExecutionKeys]] = defaultdict(list)
        for k in left_b.values():
            groups_b[key(k)].append(k)
        groups_c: dict[Hashable, list[ExecutionKeys]] = defaultdict(list)
        for k in left_c.values():
            groups_c[key(k)].append(k)
        for value, group_c in groups_c.items():
            group_b = groups_b.get(value, [])
            if unique and (len(group_b) != 1 or len(group_c) != 1):
                continue
            for kb, kc in zip(group_b, group_c, strict=False):
                if accept is not None and not accept(kb, kc):
                    continue
                pairs.append((kb.execution_id, kc.execution_id, tier))
                del left_b[kb.execution_id]
                del left_c[kc.execution_id]

    run_tier("plan and description", lambda k: (k.plan, k.description))
    run_tier("plan", lambda k: k.plan)
    run_tier("shape and description", lambda k: (k.shape, k.folded_description))
    run_tier(
        "description",
        lambda k: k.description,
        unique=True,
        accept=lambda b, c: (
            bool(c.description.strip())
            and shared_share(b.operators, c.operators) >= MIN_SHARED_OPERATORS
        ),
    )
    run_tier("shape", lambda k: k.shape, unique=True)
    start_c = {k.execution_id: (k.start_ms, k.execution_id) for k in keys_c}
    return ExecutionPairing(
        pairs=tuple(sorted(pairs, key=lambda p: start_c[p[1]])),
        baseline_only=tuple(left_b),
        candidate_only=tuple(left_c),
    )
