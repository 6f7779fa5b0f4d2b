"""Every threshold the finding rules use, in one frozen dataclass, with `--threshold` parsing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from analyzer.errors import UsageError

MIB = 1024 * 1024
GIB = 1024 * MIB


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class Thresholds:
    """When each rule fires; defaults suit production clusters (docs/findings.md explains each).

    Change one from the command line with `--threshold name=value`, or in code with
    `Thresholds.with_overrides(["name=value"])` or `dataclasses.replace`.
    """

    critical_lost_ms: int = field(
        default=600_000,
        metadata=_help("A finding estimated to cost at least this much wall time is critical."),
    )
    skew_min_tasks: int = field(
        default=4, metadata=_help("Stages with fewer tasks are never called skewed.")
    )
    task_skew_ratio: float = field(
        default=5.0, metadata=_help("Slowest task / median task duration that counts as skew.")
    )
    task_skew_min_task_ms: int = field(
        default=5_000, metadata=_help("The slowest task must run at least this long (ms).")
    )
    data_skew_ratio: float = field(
        default=5.0, metadata=_help("Largest / median per-task rows or bytes of a plan node.")
    )
    data_skew_min_rows: int = field(
        default=10_000_000, metadata=_help("The largest task must handle at least this many rows.")
    )
    data_skew_min_bytes: int = field(
        default=256 * MIB, metadata=_help("… or at least this many bytes.")
    )
    spill_min_bytes: int = field(
        default=256 * MIB,
        metadata=_help("Bytes spilled (memory or disk) by a stage before spill is reported."),
    )
    spill_disk_bytes_per_s: int = field(
        default=200 * MIB,
        metadata=_help("Assumed local-disk throughput, to turn bytes spilled into time."),
    )
    gc_share: float = field(
        default=0.10,
        metadata=_help("GC time / task time (launch to finish) that counts as pressure."),
    )
    gc_min_ms: int = field(
        default=10_000, metadata=_help("Summed GC time of the stage must reach this (ms).")
    )
    tiny_task_ms: int = field(
        default=100, metadata=_help("A stage whose median task is shorter than this (ms) …")
    )
    tiny_tasks_min_tasks: int = field(
        default=500, metadata=_help("… and that has at least this many tasks has too many tasks.")
    )
    few_partitions_min_bytes: int = field(
        default=512 * MIB,
        metadata=_help("Median bytes read per task above which fewer tasks than cores is too few."),
    )
    huge_partition_bytes: int = field(
        default=2 * GIB, metadata=_help("A task reading more than this (input + shuffle) is huge.")
    )
    smj_small_side_bytes: int = field(
        default=64 * MIB,
        metadata=_help("A sort-merge join side this small (shuffled bytes) could be broadcast."),
    )
    broadcast_large_bytes: int = field(
        default=512 * MIB, metadata=_help("A broadcast larger than this is large.")
    )
    nested_loop_min_pairs: int = field(
        default=100_000_000,
        metadata=_help(
            "Left rows × right rows of a nested-loop or cartesian join worth reporting."
        ),
    )
    unsplit_skew_ratio: float = field(
        default=5.0,
        metadata=_help(
            "Largest / median shuffle read of a join task (Spark's skewedPartitionFactor)."
        ),
    )
    unsplit_skew_min_bytes: int = field(
        default=256 * MIB,
        metadata=_help("… and at least this many bytes (skewedPartitionThresholdInBytes)."),
    )
    small_files_min_files: int = field(
        default=1_000, metadata=_help("A scan reading at least this many files …")
    )
    small_file_bytes: int = field(
        default=16 * MIB, metadata=_help("… averaging less than this many bytes reads small files.")
    )
    small_file_overhead_ms: int = field(
        default=10, metadata=_help("Assumed task time to open one file (ms), for the estimate.")
    )
    pruning_min_partitions: int = field(
        default=100,
        metadata=_help(
            "A scan without partition filters reading this many partitions is reported."
        ),
    )
    large_result_bytes: int = field(
        default=512 * MIB,
        metadata=_help(
            "Bytes of task results sent to the driver by one stage that count as large."
        ),
    )
    idle_share: float = field(
        default=0.5,
        metadata=_help("Share of executor core time with no task running that is idle."),
    )
    idle_min_core_ms: int = field(
        default=3_600_000, metadata=_help("Idle core time must reach this (ms) to be reported.")
    )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Return every threshold name, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def help_of(cls, name: str) -> str:
        """Return the one-line description of threshold `name`."""
        for f in dataclasses.fields(cls):
            if f.name == name:
                return str(f.metadata["help"])
        raise KeyError(name)

    def with_overrides(self, assignments: Iterable[str]) -> Thresholds:
        """Return a copy with `name=value` assignments applied (as given to `--threshold`).

        Integers accept `_` separators; floats accept any Python float literal.

        >>> Thresholds().with_overrides(["task_skew_min_task_ms=500"]).task_skew_min_task_ms
        500

        Raises `UsageError` for a malformed assignment, an unknown name, or a bad value.
        """
        types = {f.name: f.type for f in dataclasses.fields(self)}
        changes: dict[str, int | float] = {}
        for assignment in assignments:
            name, sep, raw = assignment.partition("=")
            name = name.strip().replace("-", "_")
            raw = raw.strip()
            if not sep or not name or not raw:
                raise UsageError(
                    f"--threshold expects name=value, got {assignment!r}",
                    hint="see docs/findings.md for the names",
                )
            if name not in types:
                raise UsageError(
                    f"unknown threshold {name!r}",
                    hint="known: " + ", ".join(self.names()),
                )
            wanted = types[name]
            try:
                value: int | float = int(raw) if wanted in (int, "int") else float(raw)
            except ValueError:
                kind = "an integer" if wanted in (int, "int") else "a number"
                raise UsageError(f"threshold {name} must be {kind}, got {raw!r}") from None
            if value < 0 or value != value:  # NaN is never a sensible threshold
                raise UsageError(f"threshold {name} must be >= 0, got {raw!r}")
            changes[name] = value
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
