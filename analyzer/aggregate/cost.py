"""What a run cost: cores and memory held by its executors against the task time that used them.

Core-hours allocated count every executor's cores from its registration to its removal (or the
application's end); core-hours used count the task slots its task attempts held, launch to
finish; the idle share is what was allocated and not used. Memory-hours count each executor's
container size (`spark.executor.memory` plus its overhead) over the same lifetime. With a price
(`Pricing`, from `--price-per-core-hour` or a price file matched on the log's properties) the
same figures are in money, and a wall time (a finding's estimated loss) can be priced at what the
cluster held while it passed. Formulas: docs/cost.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from analyzer.aggregate import ENGINE
from analyzer.aggregate.capacity import local_threads
from analyzer.aggregate.pricing import Pricing
from analyzer.aggregate.tables import TaskTable
from analyzer.model.application import DRIVER_ID, Application
from analyzer.units import decimal_int, fmt_bytes

MS_PER_HOUR = 3_600_000
GIB = 1 << 30
MIB = 1 << 20
DEFAULT_MEMORY_MIB = 1024
"""`spark.executor.memory` and `spark.driver.memory` by default (1g)."""
MIN_OVERHEAD_MIB = 384
"""Spark's least `spark.executor.memoryOverhead` (`MEMORY_OVERHEAD_MIN`)."""
DEFAULT_OVERHEAD_FACTOR = 0.10
"""`spark.executor.memoryOverheadFactor` by default."""


def _help(text: str) -> dict[str, str]:
    return {"help": text}


def parse_memory_mib(text: str | None) -> int | None:
    """Read a Spark memory setting in MiB: a number alone is MiB (`spark.executor.memory`'s
    unit), suffixes k, m, g, t (with or without a trailing b); None when unreadable.

    >>> [parse_memory_mib(v) for v in ("4g", "512m", "2048", "1536mb", "x", None)]
    [4096, 512, 2048, 1536, None, None]
    """
    raw = (text or "").strip().lower().removesuffix("b")
    if not raw:
        return None
    factors = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    unit = raw[-1]
    amount = decimal_int(raw[:-1] if unit in factors else raw)
    if amount is None:
        return None
    return int(amount * factors[unit]) if unit in factors else amount


def _mib(n_mib: int) -> str:
    return fmt_bytes(n_mib * MIB)


@dataclass(frozen=True)
class MemoryBasis:
    """The memory one executor holds, and from which settings it was worked out."""

    bytes_per_executor: int
    basis_str: str


def executor_memory(properties: Mapping[str, str], local: bool) -> MemoryBasis:
    """Return the memory one executor holds: `spark.driver.memory` in local mode, else
    `spark.executor.memory` plus `spark.executor.memoryOverhead` (default: the factor, 10 %,
    and at least 384 MiB), plus `spark.executor.pyspark.memory` and the off-heap size when set:
    what a cluster manager reserves for its container.

    >>> executor_memory({"spark.executor.memory": "4g"}, False).bytes_per_executor // (1 << 20)
    4505
    >>> executor_memory({}, True).basis_str
    'spark.driver.memory 1.0 GiB (default)'
    """
    if local:
        setting = parse_memory_mib(properties.get("spark.driver.memory"))
        mib = setting or DEFAULT_MEMORY_MIB
        note = "" if setting else " (default)"
        return MemoryBasis(mib * MIB, f"spark.driver.memory {_mib(mib)}{note}")
    setting = parse_memory_mib(properties.get("spark.executor.memory"))
    heap = setting or DEFAULT_MEMORY_MIB
    overhead = parse_memory_mib(properties.get("spark.executor.memoryOverhead"))
    parts = [f"spark.executor.memory {_mib(heap)}{'' if setting else ' (default)'}"]
    if overhead is None:
        factor_raw = properties.get("spark.executor.memoryOverheadFactor", "")
        try:
            factor = float(factor_raw) if factor_raw.strip() else DEFAULT_OVERHEAD_FACTOR
        except ValueError:
            factor = DEFAULT_OVERHEAD_FACTOR
        if not 0 <= factor <= 10:
            factor = DEFAULT_OVERHEAD_FACTOR
        overhead = max(MIN_OVERHEAD_MIB, int(heap * factor))
        parts.append(f"overhead {_mib(overhead)} (max(384 MiB, {factor:g} × memory))")
    else:
        parts.append(f"spark.executor.memoryOverhead {_mib(overhead)}")
    total = heap + overhead
    pyspark = parse_memory_mib(properties.get("spark.executor.pyspark.memory"))
    if pyspark:
        total += pyspark
        parts.append(f"spark.executor.pyspark.memory {_mib(pyspark)}")
    if properties.get("spark.memory.offHeap.enabled", "").strip().lower() == "true":
        # spark.memory.offHeap.size is in bytes when it has no unit (unlike the others).
        raw = properties.get("spark.memory.offHeap.size", "").strip()
        in_bytes = decimal_int(raw)
        off_heap = in_bytes // MIB if in_bytes is not None else (parse_memory_mib(raw) or 0)
        if off_heap:
            total += off_heap
            parts.append(f"spark.memory.offHeap.size {_mib(off_heap)}")
    return MemoryBasis(total * MIB, " + ".join(parts))


@dataclass(frozen=True)
class Holding:
    """One executor's lifetime and what it held meanwhile."""

    start_ms: int
    end_ms: int
    n_cores: int


@dataclass(frozen=True)
class CostFigures:
    """The application's resources held and used, and their price when one is given.

    Hours are core-hours (cores × hours) and GiB-hours; money figures are None without a price.
    """

    wall_ms: int = field(metadata=_help("First executor registration to the end, ms."))
    n_executors: int = field(metadata=_help("Executors counted (the driver alone in local mode)."))
    local_mode: bool = field(metadata=_help("The driver ran the tasks (its cores counted)."))
    core_ms_allocated: int = field(metadata=_help("Σ executor cores × its lifetime, core-ms."))
    core_ms_used: int = field(
        metadata=_help("Σ task attempts' launch-to-finish time × spark.task.cpus, core-ms.")
    )
    memory_bytes_per_executor: int = field(metadata=_help("Memory one executor holds, bytes."))
    memory_basis_str: str = field(metadata=_help("Which settings gave that memory, in words."))
    executor_ms: int = field(metadata=_help("Σ executor lifetimes, ms."))
    pricing: Pricing | None = field(metadata=_help("The price applied, if any."))
    holdings: tuple[Holding, ...] = field(
        default=(), repr=False, metadata=_help("Each executor's lifetime and cores.")
    )

    @property
    def core_hours_allocated(self) -> float:
        """Core-hours the executors held."""
        return self.core_ms_allocated / MS_PER_HOUR

    @property
    def core_hours_used(self) -> float:
        """Core-hours task attempts held."""
        return self.core_ms_used / MS_PER_HOUR

    @property
    def idle_share(self) -> float | None:
        """Share of the allocated core time no task used (None when nothing was allocated)."""
        if self.core_ms_allocated <= 0:
            return None
        return max(0.0, 1 - self.core_ms_used / self.core_ms_allocated)

    @property
    def memory_gib_hours(self) -> float:
        """GiB-hours of executor memory held."""
        return self.memory_bytes_per_executor / GIB * self.executor_ms / MS_PER_HOUR

    @property
    def cost_allocated(self) -> float | None:
        """Money of the cores and memory held (None without a price)."""
        p = self.pricing
        if p is None:
            return None
        return self.core_hours_allocated * p.core_hour + self.memory_gib_hours * p.gib_hour

    @property
    def cost_idle(self) -> float | None:
        """Money of the cores held and not used (None without a price)."""
        p = self.pricing
        if p is None:
            return None
        return max(0, self.core_ms_allocated - self.core_ms_used) / MS_PER_HOUR * p.core_hour

    def cost_of_wall_ms(
        self, wall_ms: int, start_ms: int | None, end_ms: int | None
    ) -> float | None:
        """Price `wall_ms` of wall time at what the executors held on average over
        [start_ms, end_ms] (the whole run when None): cores × core price plus memory × memory
        price, per hour. None without a price."""
        p = self.pricing
        if p is None or wall_ms <= 0:
            return None if p is None else 0.0
        lo = (
            start_ms
            if start_ms is not None
            else min((h.start_ms for h in self.holdings), default=0)
        )
        hi = end_ms if end_ms is not None else max((h.end_ms for h in self.holdings), default=0)
        span = hi - lo
        if span <= 0:
            return 0.0
        core_ms = 0
        executor_ms = 0
        for h in self.holdings:
            overlap = min(h.end_ms, hi) - max(h.start_ms, lo)
            if overlap > 0:
                core_ms += overlap * h.n_cores
                executor_ms += overlap
        per_hour = (
            core_ms / span * p.core_hour
            + executor_ms / span * self.memory_bytes_per_executor / GIB * p.gib_hour
        )
        return per_hour * wall_ms / MS_PER_HOUR


def _end_ms(app: Application, tasks: TaskTable) -> int | None:
    """The application's end, else the last task's finish (a log still being written)."""
    if app.end_ms is not None:
        return app.end_ms
    if tasks.is_empty():
        return app.start_ms
    last = tasks.lazy().select(pl.col("finish_ms").max()).collect(engine=ENGINE).item()
    return int(last) if isinstance(last, int) else app.start_ms


def compute_cost(
    app: Application,
    tasks: TaskTable,
    task_cpus: int,
    observed_peak: int,
    pricing: Pricing | None,
) -> CostFigures:
    """Work out what the run held and used (`CostFigures`), priced by `pricing` when given.

    The executors counted are those `aggregate.capacity` counts: the workers, or the driver
    in local mode (its cores from the log, else `local[N]`, else `observed_peak`).
    """
    props = dict(app.spark_properties)
    master = props.get("spark.master", "")
    workers = [e for e in app.executors if e.executor_id != DRIVER_ID]
    local = (master.startswith("local") and not master.startswith("local-cluster")) or not workers
    chosen = [e for e in app.executors if e.executor_id == DRIVER_ID] if local else workers
    if local and not chosen:
        chosen = list(app.executors)
    start = app.start_ms
    end = _end_ms(app, tasks)
    holdings: list[Holding] = []
    for e in chosen:
        n = e.n_cores
        if local and n <= 0:
            n = local_threads(master) or max(observed_peak, 1)
        lo = e.added_ms if e.added_ms is not None else start
        hi = e.removed_ms if e.removed_ms is not None else end
        if lo is None or hi is None or hi <= lo or n <= 0:
            continue
        holdings.append(Holding(lo, hi, n))
    holdings.sort(key=lambda h: h.start_ms)
    used = 0
    if not tasks.is_empty():
        span = (pl.col("finish_ms") - pl.col("launch_ms")).clip(lower_bound=0)
        total = (
            tasks.lazy()
            .filter(pl.col("finish_ms") > 0)
            .select(span.sum())
            .collect(engine=ENGINE)
            .item()
        )
        used = int(total or 0) * max(task_cpus, 1)
    memory = executor_memory(props, local)
    first = holdings[0].start_ms if holdings else (start or 0)
    last = max((h.end_ms for h in holdings), default=end or first)
    return CostFigures(
        wall_ms=max(0, last - first),
        n_executors=len(holdings),
        local_mode=local,
        core_ms_allocated=sum((h.end_ms - h.start_ms) * h.n_cores for h in holdings),
        core_ms_used=used,
        memory_bytes_per_executor=memory.bytes_per_executor,
        memory_basis_str=memory.basis_str,
        executor_ms=sum(h.end_ms - h.start_ms for h in holdings),
        pricing=pricing,
        holdings=tuple(holdings),
    )
