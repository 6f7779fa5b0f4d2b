"""Query families: the executions of one application that ran the same query, read as one.

An application that runs a query many times (the micro-batches of a streaming query, a notebook
cell re-run, a dashboard refresh in a loop) logs one SQL execution per run. Executions whose
initial plans have the same plan fingerprint (`aggregate.fingerprint`: operators and normalized
descriptions, Spark's per-run numbering left out, literals kept) and the same description (for
a micro-batch: the same streaming query run) are one family; a family of N executions is one
unit of the application's time, with the distribution and trend of its members' wall times.

Only root executions count (a sub-execution's time is inside its root's) and only finished ones
with a plan: a running execution has no wall time yet.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from analyzer.aggregate.fingerprint import canonical_tree, normalize_desc, plan_fingerprint
from analyzer.aggregate.time_spent import covered_ms
from analyzer.model.application import Application, Execution
from analyzer.model.plan import PlanEdge

MIN_FAMILY_EXECUTIONS = 2
"""A plan fingerprint shared by at least this many executions makes a family."""

COMMAND_TEXT_CHARS = 2_000
"""How much of a command's text plan tells two commands apart (a log's plan text is unbounded)."""

MIN_TREND_EXECUTIONS = 4
"""A family's trend is computed from this many members on (two per half)."""

TREND_RATIO = 1.25
"""A family whose second half's median is this many times its first half's (or less than its
inverse) gets `slower` (or `faster`) over the application; between the two it is `steady`."""

Trend = Literal["slower", "faster", "steady"]


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def nearest_rank(ordered: Sequence[int], q: float) -> int:
    """Return the `q` quantile of sorted values by nearest rank (an actual member's value).

    >>> nearest_rank([10, 20, 30, 40], 0.5), nearest_rank([10, 20, 30, 40], 0.9)
    (20, 40)
    >>> nearest_rank(list(range(1, 101)), 0.9)
    90
    """
    if not ordered:
        return 0
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, slots=True)
class QueryFamily:
    """The executions of one application that share a plan fingerprint, and their wall times."""

    fingerprint: str = field(metadata=_help("Plan fingerprint of the members' initial plans."))
    execution_ids: tuple[int, ...] = field(metadata=_help("The members, by start time (then id)."))
    description: str = field(
        metadata=_help("The description most members carry (the first member's on a tie).")
    )
    total_ms: int = field(metadata=_help("The members' wall times summed."))
    covered_ms: int = field(
        metadata=_help(
            "Wall time of the application covered by at least one member (members that ran "
            "at once count once): the family's share of the application."
        )
    )
    min_ms: int = field(metadata=_help("The shortest member's wall time."))
    median_ms: int = field(metadata=_help("Median member wall time (nearest rank)."))
    p90_ms: int = field(metadata=_help("90th percentile of the members' wall times."))
    max_ms: int = field(metadata=_help("The longest member's wall time."))
    slowest_execution_id: int = field(
        metadata=_help("The longest member (the first by start on a tie).")
    )
    first_half_median_ms: int | None = field(
        metadata=_help(
            "Median wall time of the first half of the members, by start; None "
            "with fewer than 4 members."
        )
    )
    second_half_median_ms: int | None = field(
        metadata=_help(
            "Median wall time of the second half (the middle member of an odd "
            "count left out); None with fewer than 4 members."
        )
    )
    n_failed: int = field(
        metadata=_help(
            "Members that failed (not those a streaming query's normal stop interrupted)."
        )
    )

    @property
    def n_executions(self) -> int:
        """How many executions ran the query."""
        return len(self.execution_ids)

    @property
    def trend_ratio(self) -> float | None:
        """Second-half median over first-half median: above 1 the query slows down over the
        application; None without a trend."""
        first, second = self.first_half_median_ms, self.second_half_median_ms
        if first is None or second is None or first <= 0:
            return None
        return second / first

    @property
    def trend(self) -> Trend | None:
        """Whether the query got `slower`, `faster` or stayed `steady` from the first half of
        its runs to the second (`TREND_RATIO`); None with fewer than 4 members.

        >>> f = QueryFamily("f", (1, 2, 3, 4), "", 0, 0, 0, 0, 0, 0, 1, 100, 160, 0)
        >>> f.trend, round(f.trend_ratio or 0, 2)
        ('slower', 1.6)
        """
        ratio = self.trend_ratio
        if ratio is None:
            return None
        if ratio >= TREND_RATIO:
            return "slower"
        if ratio <= 1 / TREND_RATIO:
            return "faster"
        return "steady"


def execution_fingerprint(execution: Execution) -> str | None:
    """Return the plan fingerprint of an execution's initial plan, None without a plan.

    The initial plan is what Spark planned before adaptive execution changed anything, the same
    for every run of one query (docs/diff.md#matching-executions). A command (its plan graph one
    `Execute …` node) is told apart by its text plan too: creating two views is not one query.
    """
    return PlanFingerprints().of(execution)


class PlanFingerprints:
    """Plan fingerprints of many executions (`execution_fingerprint`), each plan shape worked out
    once: the runs of a repeated query and the micro-batches of a stream have the same graph and,
    once normalized, the same descriptions, and differ only in what normalizing leaves out."""

    def __init__(self) -> None:
        self._descs: dict[str, str] = {}
        self._edges: dict[int, tuple[object, tuple[int, ...]]] = {}
        self._shapes: dict[tuple[object, ...], tuple[str, bool]] = {}

    def _normalized(self, desc: str) -> str:
        out = self._descs.get(desc)
        if out is None:
            out = self._descs[desc] = normalize_desc(desc)
        return out

    def _edge_ids(self, edges: tuple[PlanEdge, ...]) -> tuple[int, ...]:
        # Equal edge lists are one tuple (the replay shares them); the tuple is held, so its id
        # is not reused while it is a key here.
        held = self._edges.get(id(edges))
        if held is None:
            flat = tuple(i for e in edges for i in (e.from_id, e.to_id))
            held = self._edges[id(edges)] = (edges, flat)
        return held[1]

    def of(self, execution: Execution) -> str | None:
        """Return the plan fingerprint of `execution` (see `execution_fingerprint`)."""
        if not execution.plans:
            return None
        plan = execution.plans[0]
        graph = plan.graph
        # Everything `canonical_tree` reads: the edges, and each node's id, name, cluster flag
        # and normalized description.
        shape = (
            self._edge_ids(graph.edges),
            *((n.node_id, n.name, n.is_cluster, self._normalized(n.desc)) for n in graph.nodes),
        )
        known = self._shapes.get(shape)
        if known is None:
            tree = canonical_tree(graph)
            is_command = len(tree) == 1 and tree[0].name.startswith("Execute ")
            known = self._shapes[shape] = (plan_fingerprint(tree), is_command)
        fingerprint, is_command = known
        if is_command:
            # A command's graph is one node named after the command (`Execute
            # CreateViewCommand`): what it acts on (the view, the table) is only in the text plan.
            text = normalize_desc(plan.physical_plan_description[:COMMAND_TEXT_CHARS])
            fingerprint = hashlib.sha256(f"{fingerprint}\n{text}".encode()).hexdigest()[:16]
        return fingerprint


def _family(fingerprint: str, members: list[Execution], interrupted: frozenset[int]) -> QueryFamily:
    durations = [e.duration_ms or 0 for e in members]
    ordered = sorted(durations)
    slowest = max(range(len(members)), key=lambda i: (durations[i], -i))
    half = len(members) // 2
    trend = len(members) >= MIN_TREND_EXECUTIONS
    shown = [e.shown_description for e in members]
    descriptions = Counter(shown)
    top_count = max(descriptions.values())
    description = next(d for d in shown if descriptions[d] == top_count)
    return QueryFamily(
        fingerprint=fingerprint,
        execution_ids=tuple(e.execution_id for e in members),
        description=description,
        total_ms=sum(durations),
        covered_ms=covered_ms((e.start_ms or 0, e.end_ms or 0) for e in members),
        min_ms=ordered[0],
        median_ms=nearest_rank(ordered, 0.5),
        p90_ms=nearest_rank(ordered, 0.9),
        max_ms=ordered[-1],
        slowest_execution_id=members[slowest].execution_id,
        first_half_median_ms=nearest_rank(sorted(durations[:half]), 0.5) if trend else None,
        second_half_median_ms=nearest_rank(sorted(durations[-half:]), 0.5) if trend else None,
        n_failed=sum(
            1 for e in members if e.status == "FAILED" and e.execution_id not in interrupted
        ),
    )


def query_families(app: Application) -> tuple[QueryFamily, ...]:
    """Group the application's finished root executions by plan fingerprint and description (a
    streaming query's micro-batches by query run alone: their descriptions number their batch,
    and their plans differ from batch to batch where they name what the batch read, such as the
    files of a file source); return the groups of at least `MIN_FAMILY_EXECUTIONS`, the most
    wall time covered first. A micro-batches' family carries its first member's fingerprint.

    The description is part of the key because a plan graph does not show every expression: a
    query and the same query with one more output column computed in its aggregate draw the same
    graph, and the code that ran them (the call site Spark uses as the description) tells them
    apart.
    """
    run_of = {
        execution_id: query.run_id
        for query in app.streaming
        for batch in (
            *((b.batch_id, b.execution_ids) for b in query.batches),
            *query.unfinished_batches,
        )
        for execution_id in batch[1]
    }
    groups: dict[tuple[str, str], tuple[str, list[Execution]]] = {}
    fingerprints = PlanFingerprints()
    for execution in app.executions:
        if execution.duration_ms is None or app.parent_of(execution) is not None:
            continue
        fingerprint = fingerprints.of(execution)
        if fingerprint is not None:
            run = run_of.get(execution.execution_id)
            key = ("", f"run {run}") if run else (fingerprint, execution.shown_description)
            groups.setdefault(key, (fingerprint, []))[1].append(execution)
    families = [
        _family(
            fp,
            sorted(members, key=lambda e: (e.start_ms or 0, e.execution_id)),
            app.interrupted_execution_ids,
        )
        for fp, members in groups.values()
        if len(members) >= MIN_FAMILY_EXECUTIONS
    ]
    families.sort(key=lambda f: (-f.covered_ms, f.execution_ids[0]))
    return tuple(families)
