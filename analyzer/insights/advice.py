"""Advice with numbers: the value of each setting a rule advises, worked out from the run.

Each helper returns an `Advice` whose `arithmetic` shows the figures and the formula, or one
with no value and the reason none can be computed (docs/findings.md#advice-with-numbers). A
wrong confident value is worse than none: where the run does not measure what a value needs,
the helpers say so instead of guessing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from analyzer.aggregate.analysis import Analysis
from analyzer.aggregate.cost import parse_memory_mib
from analyzer.insights._common import (
    ROW_GROUP_BYTES,
    adaptive_enabled,
    context,
    parse_bytes,
    user_repartition,
)
from analyzer.insights.finding import Advice, Finding
from analyzer.insights.spill_cause import spill_cause
from analyzer.units import decimal_int, fmt_bytes, fmt_count, fmt_duration_ms, parse_seconds

MIB = 1 << 20
ADVISORY_KEY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
ADVISORY_DEFAULT_BYTES = 64 << 20
"""Spark's default advisory partition size (AQE's target for a shuffle partition)."""
SHUFFLE_PARTITIONS_KEY = "spark.sql.shuffle.partitions"
MAX_PARTITION_BYTES_KEY = "spark.sql.files.maxPartitionBytes"
OWN_PARTITIONING = "the shuffle has a partitioning of its own (its query ran without AQE)"
"""Why a stage of a query run without AQE ran fewer tasks than the partitions set."""
RESERVED_MIB = 300
"""Memory Spark reserves in each executor before `spark.memory.fraction` applies."""
DEFAULT_MEMORY_FRACTION = 0.6
SPARK_1_MEMORY_FRACTION = 0.75
"""`spark.memory.fraction`'s default in Spark 1.6, whose unified memory manager introduced it;
Spark 2.0 lowered it to 0.6."""
MEMORY_STEP_MIB = 512
"""Executor memory advice is rounded up to this step."""
BROADCAST_HEADROOM = 1.25
"""A broadcast threshold is advised this much above the observed build side."""


def current(props: Mapping[str, str], key: str, default: str) -> str:
    """The setting as the log sets it, else Spark's default marked so.

    >>> current({}, "spark.sql.shuffle.partitions", "200")
    '200 (default)'
    """
    value = props.get(key)
    return value if value is not None else f"{default} (default)"


def target_partition_bytes(props: Mapping[str, str]) -> tuple[int, str]:
    """The size a shuffle partition should be: AQE's advisory size, as set or by default."""
    raw = props.get(ADVISORY_KEY)
    size = parse_bytes(raw, ADVISORY_DEFAULT_BYTES)
    where = ADVISORY_KEY + (" as set" if raw is not None else ", its default")
    return max(size, 1), f"{fmt_bytes(size)} target ({where})"


def shuffle_partitions_for_size(props: Mapping[str, str], bytes_read: int, slots: int) -> Advice:
    """`spark.sql.shuffle.partitions` for `bytes_read` shuffled: one partition per target size,
    at least one per task slot (fewer would leave cores idle).

    >>> a = shuffle_partitions_for_size({}, 10 << 30, 8)
    >>> a.value, a.arithmetic.split(" target")[0]
    ('160', '⌈10.0 GiB shuffled / 64.0 MiB')
    """
    target, target_str = target_partition_bytes(props)
    by_size = math.ceil(bytes_read / target)
    value = max(by_size, slots, 1)
    return Advice(
        setting=SHUFFLE_PARTITIONS_KEY,
        value=str(value),
        current=current(props, SHUFFLE_PARTITIONS_KEY, "200"),
        arithmetic=(
            f"⌈{fmt_bytes(bytes_read)} shuffled / {target_str}⌉ = {fmt_count(by_size)}; "
            f"at least one per task slot ({fmt_count(slots)}) → {fmt_count(value)}"
        ),
        kind="count",
    )


def shuffle_partitions_for_memory(
    props: Mapping[str, str],
    n_tasks: int,
    max_peak_bytes: int,
    max_need_bytes: int,
    aqe: bool = True,
) -> Advice:
    """`spark.sql.shuffle.partitions` that would let the stage's largest task fit in the memory
    it had: the partition count times (needed / held), when the run logged both. `aqe`: the
    stage's query ran under AQE, which may have coalesced its partitions.

    >>> shuffle_partitions_for_memory({}, 200, 100 << 20, 450 << 20).value
    '900'
    >>> shuffle_partitions_for_memory({}, 13, 100 << 20, 450 << 20).value is None
    True
    >>> "coalesced" in shuffle_partitions_for_memory({}, 13, 1, 2, aqe=False).arithmetic
    False
    """
    key = SHUFFLE_PARTITIONS_KEY
    now = current(props, key, "200")
    configured = decimal_int(props.get(key, "200").strip())
    # First whether the setting sized the stage at all, then whether the log tells by how much.
    if configured is not None and n_tasks < configured:
        why = (
            "AQE coalesced them (by its advisory size or, with "
            "coalescePartitions.parallelismFirst, by the default parallelism) or the shuffle "
            "has a partitioning of its own"
            if aqe
            else OWN_PARTITIONING
        )
        return Advice(
            key,
            None,
            now,
            (
                f"no value: the stage ran {fmt_count(n_tasks)} tasks, not the {configured} "
                f"partitions set: {why}, so this setting does not size them"
            ),
            "count",
        )
    if max_peak_bytes <= 0:
        return Advice(
            key,
            None,
            now,
            "no value: the tasks' peak execution memory was not logged (only what they "
            "spilled), so what a partition held cannot be compared with what it needed",
            "count",
        )
    if max_need_bytes <= max_peak_bytes:
        return Advice(
            key,
            None,
            now,
            "no value: the largest task needed no more memory than it held",
            "count",
        )
    factor = max_need_bytes / max_peak_bytes
    value = math.ceil(n_tasks * factor)
    return Advice(
        key,
        str(value),
        now,
        (
            f"the largest task needed {fmt_bytes(max_need_bytes)} (peak execution memory plus "
            f"its spill's in-memory size) and held {fmt_bytes(max_peak_bytes)}: "
            f"{fmt_count(n_tasks)} partitions × {factor:.2f} → {fmt_count(value)}, each "
            "partition that much smaller (assumes the data spreads evenly over them)"
        ),
        "count",
    )


def executor_memory_for_need(
    props: Mapping[str, str],
    max_need_bytes: int,
    cores_per_executor: int,
    local: bool,
    spark_major: int | None = None,
) -> Advice | None:
    """`spark.executor.memory` (`spark.driver.memory` in local mode) that gives every one of
    an executor's concurrent tasks the memory the largest task needed:
    need × tasks at once / `spark.memory.fraction` + 300 MiB reserved, rounded up to 512 MiB.
    None when the run already had that much.

    >>> executor_memory_for_need({}, 200 << 20, 4, False).value
    '2048m'
    >>> executor_memory_for_need({}, 200 << 20, 4, False, spark_major=1).value
    '1536m'
    """
    key = "spark.driver.memory" if local else "spark.executor.memory"
    now_mib = parse_memory_mib(props.get(key)) or 1024
    default = SPARK_1_MEMORY_FRACTION if spark_major == 1 else DEFAULT_MEMORY_FRACTION
    try:
        fraction = float(props.get("spark.memory.fraction", default))
    except ValueError:
        fraction = default
    if not 0 < fraction <= 1:
        fraction = default
    cores = max(cores_per_executor, 1)
    need_mib = max_need_bytes / MIB * cores / fraction + RESERVED_MIB
    value_mib = math.ceil(need_mib / MEMORY_STEP_MIB) * MEMORY_STEP_MIB
    if value_mib <= now_mib:
        return None
    return Advice(
        key,
        f"{value_mib}m",
        current(props, key, "1g"),
        (
            f"the largest task needed {fmt_bytes(max_need_bytes)} × {cores} tasks at once "
            f"per executor / spark.memory.fraction {fraction:g} + {RESERVED_MIB} MiB reserved "
            f"= {need_mib:,.0f} MiB → {value_mib} MiB (rounded up to {MEMORY_STEP_MIB} MiB)"
        ),
        "memory",
    )


def max_partition_bytes_to_spread(
    props: Mapping[str, str], input_bytes: int, max_task_input_bytes: int, slots: int
) -> Advice:
    """`spark.sql.files.maxPartitionBytes` small enough to give every task slot a split of
    the input, or no value when the input cannot be split further (a task read at most a
    couple of row groups, or one unsplittable file).

    >>> big = {"spark.sql.files.maxPartitionBytes": "1g"}
    >>> max_partition_bytes_to_spread(big, 2 << 30, 1 << 30, 8).value
    '256m'
    >>> max_partition_bytes_to_spread({}, 200 << 20, 100 << 20, 8).value is None
    True
    """
    key = MAX_PARTITION_BYTES_KEY
    now_bytes = parse_bytes(props.get(key), 128 << 20)
    now = current(props, key, "128m")
    per_slot = math.ceil(input_bytes / max(slots, 1))
    value_mib = max(1, math.ceil(per_slot / MIB))
    splittable = 2 * ROW_GROUP_BYTES <= max_task_input_bytes <= now_bytes + now_bytes // 10
    if not splittable or value_mib * MIB >= now_bytes:
        return Advice(
            key,
            None,
            now,
            (
                f"cannot split: the largest task read {fmt_bytes(max_task_input_bytes)}, at "
                f"most a couple of {fmt_bytes(ROW_GROUP_BYTES)} row groups or one "
                "unsplittable file, so smaller splits would not divide it; rewrite the input "
                "with smaller row groups or more, smaller files, or repartition() after the scan"
            ),
            "bytes",
        )
    return Advice(
        key,
        f"{value_mib}m",
        now,
        (
            f"⌈{fmt_bytes(input_bytes)} read / {fmt_count(slots)} task slots⌉ = "
            f"{fmt_bytes(per_slot)} → {value_mib} MiB, one split per slot (a columnar file "
            f"splits only between row groups, {fmt_bytes(ROW_GROUP_BYTES)} by default)"
        ),
        "bytes",
    )


def broadcast_threshold_above(props: Mapping[str, str], build_bytes: int, aqe: bool) -> Advice:
    """The broadcast threshold that would broadcast a join side of `build_bytes`, with
    headroom: AQE's (`spark.sql.adaptive.autoBroadcastJoinThreshold`, compared with the size
    measured at run time) when the query ran under AQE, else the static one, which the
    optimizer compares with its own size estimate.

    >>> broadcast_threshold_above({}, 7 << 20, True).value
    '9m'
    """
    key = (
        "spark.sql.adaptive.autoBroadcastJoinThreshold"
        if aqe
        else "spark.sql.autoBroadcastJoinThreshold"
    )
    now = props.get(key) or props.get("spark.sql.autoBroadcastJoinThreshold")
    value_mib = max(1, math.ceil(build_bytes * BROADCAST_HEADROOM / MIB))
    note = (
        "AQE compares it with the size the shuffle measured"
        if aqe
        else "the optimizer compares it with its estimate of the side, which can be larger "
        "than the size measured here"
    )
    return Advice(
        key,
        f"{value_mib}m",
        now if now is not None else "10m (default)",
        (
            f"small side {fmt_bytes(build_bytes)} (its shuffle's data size) × "
            f"{BROADCAST_HEADROOM:g} headroom → {value_mib} MiB; {note}"
        ),
        "bytes",
    )


def broadcast_threshold_below(props: Mapping[str, str], build_bytes: int) -> Advice:
    """The static broadcast threshold just under a broadcast of `build_bytes`, or no value
    when it is already under it (a hint or an estimate below the real size chose the broadcast,
    and a lower threshold changes nothing).

    >>> broadcast_threshold_below({}, 40 << 20).value is None
    True
    >>> broadcast_threshold_below({"spark.sql.autoBroadcastJoinThreshold": "100m"}, 40 << 20).value
    '39m'
    """
    key = "spark.sql.autoBroadcastJoinThreshold"
    raw = props.get(key)
    now_bytes = parse_bytes(raw, 10 << 20)
    now = raw if raw is not None else "10m (default)"
    if now_bytes < build_bytes:
        return Advice(
            key,
            None,
            now,
            (
                f"no value: the threshold ({fmt_bytes(now_bytes)}) is already below the "
                f"{fmt_bytes(build_bytes)} broadcast, so a broadcast() hint or a size estimate "
                "below the real size chose it; drop the hint, or filter the side first"
            ),
            "bytes",
        )
    value_mib = max(1, (build_bytes - 1) // MIB)
    return Advice(
        key,
        f"{value_mib}m",
        now,
        (
            f"just under the {fmt_bytes(build_bytes)} broadcast → {value_mib} MiB: this side "
            "is shuffled, smaller ones are still broadcast (the optimizer compares its own size "
            "estimate, which can be below the size measured here); no time predicted: the "
            "shuffle join that replaces the broadcast costs what this run did not measure"
        ),
        "bytes",
    )


def min_executors_for_waits(
    props: Mapping[str, str], peak_running_tasks: int, slots_per_executor: int
) -> Advice:
    """`spark.dynamicAllocation.minExecutors` that would have had the waiting stages' slots
    alive when they were submitted: the task slots they needed at once between them
    (`executor_wait.overlapping_peak`), in executors, at most `maxExecutors`.

    >>> min_executors_for_waits({}, 10, 4).value
    '3'
    """
    key = "spark.dynamicAllocation.minExecutors"
    per = max(slots_per_executor, 1)
    value = max(1, math.ceil(peak_running_tasks / per))
    cap_raw = props.get("spark.dynamicAllocation.maxExecutors", "")
    capped = ""
    cap = decimal_int(cap_raw.strip())
    if cap is not None and value > cap:
        value = cap
        capped = f", at most spark.dynamicAllocation.maxExecutors {cap_raw}"
    return Advice(
        key,
        str(value),
        current(props, key, "0"),
        (
            f"the waiting stages needed up to {fmt_count(peak_running_tasks)} task slots at "
            "once (the most tasks each ran at once, summed over the stages that overlapped), "
            f"{fmt_count(per)} per executor → ⌈{peak_running_tasks} / {per}⌉ = {value}"
            f"{capped}"
        ),
        "count",
    )


MAX_IDLE_TIMEOUT_MS = 60_000
"""The longest idle stretch an advised executor idle timeout is sized to outlive: Spark's
default timeout. A longer timeout keeps every idle executor of the application that long;
keeping a few (`minExecutors`) costs less."""


def idle_timeout_above_idle(props: Mapping[str, str], idle_ms: int | None) -> Advice | None:
    """`spark.dynamicAllocation.executorIdleTimeout` above how long the released executors had
    been idle when the stage came (rounded up to the next 30 s), so one would have outlived
    the stretch; None without one, when the run's timeout was already that long (the release
    had another reason), or when the stretch is longer than `MAX_IDLE_TIMEOUT_MS` (only
    `minExecutors` would have kept them).

    >>> ten = {"spark.dynamicAllocation.executorIdleTimeout": "10s"}
    >>> idle_timeout_above_idle(ten, 15_200).value
    '30s'
    >>> idle_timeout_above_idle({}, 68_000) is None
    True
    """
    if idle_ms is None or idle_ms <= 0 or idle_ms > MAX_IDLE_TIMEOUT_MS:
        return None
    key = "spark.dynamicAllocation.executorIdleTimeout"
    value_s = math.ceil((idle_ms / 1000 + 1) / 30) * 30
    if value_s <= parse_seconds(props.get(key), 60):
        return None  # executors already outlived the stretch: not why they were gone
    return Advice(
        key,
        f"{value_s}s",
        current(props, key, "60s"),
        (
            f"the released executors had been idle {fmt_duration_ms(idle_ms)} when the stage "
            f"was submitted → {value_s} s (the next 30 s above it)"
        ),
        "duration",
    )


def flag(props: Mapping[str, str], key: str, value: str, default: str, why: str) -> Advice:
    """A boolean setting to turn on or off.

    >>> flag({}, "spark.speculation", "true", "false", "x").current
    'false (default)'
    """
    return Advice(key, value, current(props, key, default), why, "flag")


def no_value(props: Mapping[str, str], key: str, default: str, why: str, kind: str) -> Advice:
    """A setting the finding names whose value the run cannot give: `why` says so."""
    assert kind in ("count", "bytes", "memory", "duration", "flag")
    return Advice(key, None, current(props, key, default), why, kind)  # type: ignore[arg-type]


def not_sized_by_setting(props: Mapping[str, str], asked: int) -> Advice:
    """`spark.sql.shuffle.partitions` for a stage that reads the query's `repartition(asked)`:
    no value, since neither the setting nor AQE sizes such a shuffle (`user_repartition`)."""
    return no_value(
        props,
        SHUFFLE_PARTITIONS_KEY,
        "200",
        f"no value: the stage reads a repartition({fmt_count(asked)}) of the query, which this "
        "setting does not size",
        "count",
    )


def under_aqe(analysis: Analysis, execution_id: int | None) -> bool:
    """Whether the SQL execution of this id ran under AQE (False for a stage outside SQL, or
    one whose jobs name an execution the log never started, as Spark 1.x's do)."""
    execution = context(analysis).executions.get(execution_id) if execution_id is not None else None
    return execution is not None and adaptive_enabled(analysis, execution)


def memory_advice(analysis: Analysis, key: tuple[int, int]) -> tuple[Advice, ...]:
    """The memory advice of a stage attempt whose tasks ran short of execution memory: more
    shuffle partitions (when it read a shuffle) and more executor memory, each from its largest
    task's peak execution memory and spill (`Analysis.memory_needs`). None when the spill was
    not for want of memory (`spill_cause`): a forced spill says nothing of the memory a task
    needs, and more memory would not stop it."""
    ctx = context(analysis)
    s = ctx.stage_stats.get(key)
    need = analysis.memory_needs.get(key)
    if s is None or need is None or spill_cause(analysis, key) is not None:
        return ()
    out: list[Advice] = []
    if s.shuffle_read_max_bytes > 0:
        execution_id = ctx.stage_execution(key[0])
        asked = (
            user_repartition(analysis, execution_id, key[0]) if execution_id is not None else None
        )
        out.append(
            not_sized_by_setting(ctx.properties, asked)
            if asked is not None
            else shuffle_partitions_for_memory(
                ctx.properties,
                s.n_successful,
                need.max_peak_bytes,
                need.max_need_bytes,
                under_aqe(analysis, execution_id),
            )
        )
    local = ctx.capacity.local_mode
    per_executor = ctx.cores if local else ctx.slots_per_executor
    memory = executor_memory_for_need(
        ctx.properties,
        need.max_need_bytes,
        per_executor,
        local,
        analysis.application.spark_major,
    )
    if memory is not None:
        out.append(memory)
    return tuple(out)


def advice_text(advice: tuple[Advice, ...]) -> str:
    """The advised settings as a suggestion words them: `set a=1; set b=2` (the arithmetic
    is shown with each advice, see `report.findings`).

    >>> advice_text((Advice("a", "1", "0", "why", "count"),))
    'set a=1'
    """
    return "; ".join(f"set {a.setting}={a.value}" for a in advice if a.value)


def _already(advice: Advice) -> bool:
    """The run already had the advised value: nothing to change."""
    return advice.value is not None and advice.value == advice.current.removesuffix(" (default)")


def prediction_target(finding: Finding) -> tuple[str, int] | None:
    """What a finding's advice predicts the wall time of: its stage (`("stage", id)`) when it
    points at one stage, else its SQL execution (`("execution", id)`), else None."""
    grouped = any(e.key == "stage_ids" for e in finding.evidence)
    if finding.stage_id is not None and not grouped:
        return ("stage", finding.stage_id)
    if finding.execution_id is not None:
        return ("execution", finding.execution_id)
    return None


def target_wall_ms(analysis: Analysis, target: tuple[str, int]) -> int | None:
    """The wall time of a prediction target: a stage's attempts summed, or an execution's."""
    kind, ident = target
    if kind == "stage":
        walls = [w.wall_ms for (sid, _), w in analysis.stage_walls.items() if sid == ident]
        return sum(walls) if walls else None
    ex = analysis.executions_by_id.get(ident)
    return ex.duration_ms if ex is not None else None


UNPREDICTED_RULES = frozenset({"large-broadcast"})
"""Rules whose advice swaps the cost they measured for one the run did not measure (a lower
broadcast threshold shuffles both sides of the join instead): no wall time is predicted."""


def predict(analysis: Analysis, finding: Finding) -> Finding:
    """Set each advised value's predicted wall time: what the finding points at (its stage,
    else its query) minus the time the finding is estimated to have lost."""
    kept = tuple(a for a in finding.advice if not _already(a))
    if len(kept) != len(finding.advice):
        finding = dataclasses.replace(finding, advice=kept)
    if not finding.advice or finding.estimated_lost_ms <= 0 or finding.rule in UNPREDICTED_RULES:
        return finding
    target = prediction_target(finding)
    wall = target_wall_ms(analysis, target) if target is not None else None
    if wall is None:
        return finding
    predicted = max(0, wall - finding.estimated_lost_ms)
    assert target is not None
    of = f"stage {target[1]}" if target[0] == "stage" else f"SQL execution {target[1]}"
    return dataclasses.replace(
        finding,
        advice=tuple(
            dataclasses.replace(a, predicted_ms=predicted, measured_ms=wall, predicted_of=of)
            if a.value is not None
            else a
            for a in finding.advice
        ),
    )
