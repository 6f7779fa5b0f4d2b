"""Why a stage spilled: for want of memory, or because a setting or the operator forced it.

Spark spills for two reasons. A task asks for more execution memory than the pool gives it
(`ExecutionMemoryPool` lets each of N running tasks reach between 1/2N and 1/N of the pool before
it must spill), or a count threshold tells a buffer to spill after so many records whatever
memory is free (`spark.shuffle.spill.numElementsForceSpillThreshold` in every sorter, the
`spark.sql.*.buffer.spill.threshold` settings in Window, sort-merge join, cartesian product and
session-window buffers). Memory advice fits only the first: with a forced spill, more memory or
smaller partitions change nothing, so the rules name the setting instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context, stage_operators
from analyzer.insights.finding import Evidence, ev
from analyzer.units import decimal_int, fmt_bytes

SPARK_INT_MAX = 2**31 - 1
"""Spark's default for every spill-forcing count (`Integer.MAX_VALUE`: never force a spill)."""

FORCING_SETTINGS: tuple[tuple[str, str], ...] = (
    ("spark.shuffle.spill.numElementsForceSpillThreshold", ""),
    ("spark.sql.windowExec.buffer.spill.threshold", "Window"),
    ("spark.sql.sortMergeJoinExec.buffer.spill.threshold", "SortMergeJoin"),
    ("spark.sql.cartesianProductExec.buffer.spill.threshold", "CartesianProduct"),
    ("spark.sql.sessionWindow.buffer.spill.threshold", "Session"),
)
"""Spark settings that make a buffer spill after a number of records, each with the part of the
plan node names it applies to ("": every sorter, shuffle writers included). Defaults are
`Integer.MAX_VALUE` since Spark 2.3 (`SQLConf`, `config/package.scala`)."""

DEFAULT_STORAGE_FRACTION = 0.5
"""`spark.memory.storageFraction`: the part of the pool cached blocks can keep from execution."""
FAR_BELOW = 0.5
"""A task's peak under this share of its guaranteed memory never had a request for memory
refused: its spill was not for want of memory."""


@dataclass(frozen=True)
class SpillCause:
    """Why a stage attempt's spill was not for want of memory."""

    forced_by: tuple[tuple[str, int], ...]
    """The spill-forcing settings the log sets below Spark's default that apply to the stage's
    operators, each with its record count."""
    max_peak_bytes: int
    """The most execution memory one of the stage's tasks held (`peakExecutionMemory`)."""
    guaranteed_bytes: int
    """The least execution memory Spark lets a task reach before spilling (0: not known)."""

    @property
    def settings_str(self) -> str:
        """The forcing settings as `key=value`, joined by `, `."""
        return ", ".join(f"{k}={v}" for k, v in self.forced_by)


def forcing_settings(
    props: dict[str, str], node_names: tuple[str, ...] | None
) -> tuple[tuple[str, int], ...]:
    """Return the spill-forcing settings set below `Integer.MAX_VALUE` that apply to an operator
    among `node_names` (None: the stage has no SQL plan, only the sorters' setting applies).

    >>> props = {"spark.shuffle.spill.numElementsForceSpillThreshold": "20000",
    ...          "spark.sql.windowExec.buffer.spill.threshold": "5000"}
    >>> forcing_settings(props, ("Sort", "HashAggregate"))
    (('spark.shuffle.spill.numElementsForceSpillThreshold', 20000),)
    >>> [k for k, _ in forcing_settings(props, ("Window", "Sort"))][1]
    'spark.sql.windowExec.buffer.spill.threshold'
    """
    out = []
    for key, applies_to in FORCING_SETTINGS:
        value = decimal_int(props.get(key, "").strip())
        if value is None or value >= SPARK_INT_MAX:
            continue
        if applies_to and not any(applies_to in name for name in node_names or ()):
            continue
        out.append((key, value))
    return tuple(out)


def guaranteed_task_bytes(analysis: Analysis) -> int:
    """Return the least execution memory Spark lets a task reach before it must spill, on the
    smallest executor: its unified pool (the block manager's `Maximum Memory`) less what cached
    blocks may keep (`spark.memory.storageFraction`), over 2 × the tasks it runs at once; 0 when
    the log did not record the pool."""
    props = analysis.properties
    try:
        storage = float(props.get("spark.memory.storageFraction", DEFAULT_STORAGE_FRACTION))
    except ValueError:
        storage = DEFAULT_STORAGE_FRACTION
    if not 0 <= storage < 1:
        storage = DEFAULT_STORAGE_FRACTION
    shares = [
        int(e.max_memory_bytes * (1 - storage) / (2 * e.max_tasks))
        for e in analysis.application.executors
        if e.max_memory_bytes > 0 and e.max_tasks > 0
    ]
    return min(shares, default=0)


def spill_cause(analysis: Analysis, key: tuple[int, int]) -> SpillCause | None:
    """Return why a stage attempt's spill was not for want of memory, or None when it may well
    have been (or the stage did not spill).

    Not for want of memory: a spill-forcing setting applies to the stage's operators and one of
    its tasks handled at least that many records, or its largest task's peak execution memory
    stayed under `FAR_BELOW` of what Spark guarantees a task.
    """
    ctx = context(analysis)
    s = ctx.stage_stats.get(key)
    if s is None or max(s.memory_bytes_spilled, s.disk_bytes_spilled) == 0:
        return None
    names: tuple[str, ...] | None = None
    execution_id = ctx.stage_execution(s.stage_id)
    if execution_id is not None:
        names = tuple(n.name for n in stage_operators(analysis, execution_id, key[0]))
    need = analysis.memory_needs.get(key)
    # A count forces a spill only in a task that reached it.
    most_records = need.max_records if need is not None else 0
    forced = tuple(
        (setting, count)
        for setting, count in forcing_settings(ctx.properties, names)
        if most_records >= count
    )
    peak = need.max_peak_bytes if need is not None else 0
    guaranteed = guaranteed_task_bytes(analysis)
    starved = peak <= 0 or guaranteed <= 0 or peak >= guaranteed * FAR_BELOW
    if not forced and starved:
        return None
    return SpillCause(forced, peak, guaranteed)


def cause_evidence(cause: SpillCause) -> list[Evidence]:
    """The evidence items that show why a spill was not for want of memory."""
    items = [ev("spill_forced_by", "spill forced by", cause.settings_str, "text")]
    if not cause.forced_by:
        items = []
    items.append(
        ev(
            "max_task_peak_execution_bytes",
            "largest task peak execution memory",
            cause.max_peak_bytes,
            "bytes",
        )
    )
    if cause.guaranteed_bytes > 0:
        items.append(
            ev(
                "guaranteed_task_bytes",
                "execution memory Spark guarantees a task",
                cause.guaranteed_bytes,
                "bytes",
            )
        )
    return items


def cause_text(cause: SpillCause) -> str:
    """Say why the spill was not for want of memory and what to change, for a suggestion."""
    if cause.forced_by:
        one = len(cause.forced_by) == 1
        return (
            "The spill was forced by a record count, not by a lack of memory: "
            f"{cause.settings_str} {'makes' if one else 'make'} Spark spill after that many "
            "records whatever memory is free, so more memory or smaller partitions would not "
            f"stop it. Raise {'it' if one else 'them'} or unset {'it' if one else 'them'} "
            "(Spark's default spills only when memory runs out)."
        )
    return (
        "The spill was not for want of memory: the largest task held at most "
        f"{fmt_bytes(cause.max_peak_bytes)} of execution memory, under half of the "
        f"{fmt_bytes(cause.guaranteed_bytes)} Spark guarantees each task, so more memory or "
        "smaller partitions would not stop it; look for what makes the operator spill by record "
        "count."
    )
