"""Every threshold the finding rules use, in one frozen dataclass, with `--threshold` parsing.

Most rules are scale-free: a time-cost finding fires when its estimated loss is a meaningful
share of its query's wall time (`min_query_share`), with a small absolute floor against noise
(`min_lost_ms`), so the same rule works on a two-minute job and a two-hour one. The absolute
thresholds left are sizes that are a risk by themselves (a huge partition, a broadcast the
driver must hold), and floors below which a measurement means nothing.
"""

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
    """When each rule fires (docs/findings.md explains each).

    Change one from the command line with `--threshold name=value`, or in code with
    `Thresholds.with_overrides(["name=value"])` or `dataclasses.replace`.
    """

    min_query_share: float = field(
        default=0.05,
        metadata=_help(
            "A time-cost finding needs an estimated loss of at least this share of its query's "
            "wall time (of the application's, for application-wide ones) …"
        ),
    )
    min_lost_ms: int = field(
        default=1_000, metadata=_help("… and at least this many ms (noise floor).")
    )
    critical_query_share: float = field(
        default=0.25,
        metadata=_help("A loss of at least this share of the query's wall time …"),
    )
    critical_min_ms: int = field(
        default=60_000, metadata=_help("… and at least this many ms is critical.")
    )
    skew_min_tasks: int = field(
        default=4, metadata=_help("Stages with fewer tasks are never called skewed.")
    )
    skew_ratio: float = field(
        default=4.0,
        metadata=_help("Largest / median task (time, rows or bytes) that counts as skew."),
    )
    skew_origin_share: float = field(
        default=0.5,
        metadata=_help(
            "Skew starts at an input when the hot task already held this share of the rows "
            "there that it held at the skewed node."
        ),
    )
    explosion_ratio: float = field(
        default=3.0, metadata=_help("A join whose output rows reach this × its input rows …")
    )
    explosion_min_rows: int = field(
        default=1_000_000, metadata=_help("… and at least this many rows, exploded.")
    )
    idle_cores_share: float = field(
        default=0.5,
        metadata=_help("A stage leaving at least this share of the cores idle underuses them …"),
    )
    idle_cores_min_ms: int = field(
        default=2_000,
        metadata=_help("… when the idle capacity costs at least this many ms of wall time."),
    )
    idle_cores_min_slot_records: int = field(
        default=1_000,
        metadata=_help(
            "A slot counts as usable (idle when unused) only for this many records the stage read …"
        ),
    )
    idle_cores_min_slot_bytes: int = field(
        default=64 * 1024,
        metadata=_help(
            "… and this many bytes: a tiny input spread over more tasks pays each task's "
            "start-up again and saves nothing."
        ),
    )
    stall_min_ms: int = field(
        default=2_000,
        metadata=_help(
            "Scheduler delay (the union over a query's stalled stages) reported only from this "
            "many ms (the wait before the application's first task is start-up, left out)."
        ),
    )
    spill_min_bytes: int = field(
        default=64 * MIB,
        metadata=_help("Bytes spilled (memory or disk) by a stage before spill is reported."),
    )
    spill_bytes_per_s: int = field(
        default=100 * MIB,
        metadata=_help(
            "Assumed speed of spilling (serializing, compressing, writing) and of reading back, "
            "per task, to turn bytes spilled into time."
        ),
    )
    gc_share: float = field(
        default=0.10,
        metadata=_help("GC time / task time (launch to finish) that counts as pressure."),
    )
    tiny_task_ms: int = field(
        default=100, metadata=_help("A stage whose median task is shorter than this (ms) …")
    )
    tiny_tasks_min_tasks: int = field(
        default=200, metadata=_help("… and that has at least this many tasks has too many tasks.")
    )
    small_partition_bytes: int = field(
        default=1 * MIB,
        metadata=_help(
            "A shuffle stage of several waves whose median task reads less than this has too "
            "many partitions."
        ),
    )
    huge_partition_bytes: int = field(
        default=2 * GIB, metadata=_help("A task reading more than this (input + shuffle) is huge.")
    )
    smj_small_side_bytes: int = field(
        default=64 * MIB,
        metadata=_help("A sort-merge join side this small (shuffled bytes) could be broadcast."),
    )
    broadcast_large_bytes: int = field(
        default=256 * MIB,
        metadata=_help("A broadcast this large is reported whatever it cost (driver memory)."),
    )
    nested_loop_min_pairs: int = field(
        default=10_000_000,
        metadata=_help("Left rows × right rows of a nested-loop or cartesian join worth a look."),
    )
    unsplit_skew_min_bytes: int = field(
        default=64 * MIB,
        metadata=_help("A skewed join partition AQE did not split, at least this large."),
    )
    small_files_min_files: int = field(
        default=500, metadata=_help("A scan reading at least this many files …")
    )
    small_file_bytes: int = field(
        default=16 * MIB, metadata=_help("… averaging less than this many bytes reads small files.")
    )
    pruning_min_partitions: int = field(
        default=100,
        metadata=_help(
            "A scan without partition filters reading this many partitions is reported."
        ),
    )
    large_result_bytes: int = field(
        default=256 * MIB,
        metadata=_help("Task results sent to the driver by one stage reported whatever the cost."),
    )
    idle_share: float = field(
        default=0.5,
        metadata=_help("Share of executor core time with no task running that is idle."),
    )
    idle_min_core_ms: int = field(
        default=600_000, metadata=_help("Idle core time must reach this (ms) to be reported.")
    )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Return every threshold name, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def with_overrides(self, assignments: Iterable[str]) -> Thresholds:
        """Return a copy with `name=value` assignments applied (as given to `--threshold`).

        Integers accept `_` separators; floats accept any Python float literal.

        >>> Thresholds().with_overrides(["min_lost_ms=200"]).min_lost_ms
        200

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
            except (ValueError, OverflowError):
                kind = "an integer" if wanted in (int, "int") else "a number"
                raise UsageError(f"threshold {name} must be {kind}, got {raw!r}") from None
            if value < 0 or value != value or value in (float("inf"),):
                raise UsageError(f"threshold {name} must be a finite number >= 0, got {raw!r}")
            changes[name] = value
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
