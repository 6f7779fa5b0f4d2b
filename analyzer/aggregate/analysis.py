"""The result of analyzing one event log: domain model, task frames and per-node statistics."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import polars as pl

from analyzer.aggregate.allocator import release_free_memory
from analyzer.aggregate.attribution import ExecutionTime, attribute_time
from analyzer.aggregate.node_metrics import NodeStats, aggregate_node_metrics
from analyzer.aggregate.tables import PUSH_SHUFFLE_SCHEMA, slot_frame, task_frames
from analyzer.eventlog.events import DecodeStats
from analyzer.eventlog.lines import ReadStats
from analyzer.eventlog.source import LogSource
from analyzer.model.application import Application
from analyzer.replay.application import BuiltApplication


@dataclass(frozen=True)
class Analysis:
    """Everything known about one application; the input of every report."""

    source: LogSource
    application: Application
    tasks: pl.DataFrame
    """One row per task attempt (see `aggregate.tables.task_frame`)."""
    slots: pl.DataFrame
    """The values Spark's SQL tab aggregates (see `aggregate.tables.slot_frame`)."""
    node_stats: dict[int, dict[int, NodeStats]]
    """Per execution id, per plan node id: metric statistics and stages."""
    read_stats: ReadStats
    decode_stats: DecodeStats
    push_shuffle_tasks: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=PUSH_SHUFFLE_SCHEMA)
    )
    """Push-based shuffle read metrics of the task rows that have any (see
    `aggregate.tables.TaskFrames`); empty for most logs."""

    @cached_property
    def times(self) -> dict[int, ExecutionTime]:
        """Per execution id: every node's self time and driver time (`aggregate.attribution`),
        worked out once, on first use."""
        return attribute_time(self.application, self.node_stats, self.slots, self.tasks)


def analyze_built(
    source: LogSource, built: BuiltApplication, read_stats: ReadStats, decode_stats: DecodeStats
) -> Analysis:
    """Turn a built application into an `Analysis` (frames and per-node statistics)."""
    frames = task_frames(built.tasks)
    tasks = frames.tasks
    slots = slot_frame(built.frozen)
    release_free_memory()  # the task arrays and the frozen slot arrays, now in polars
    return Analysis(
        source=source,
        application=built.application,
        tasks=tasks,
        slots=slots,
        node_stats=aggregate_node_metrics(built, slots, tasks),
        read_stats=read_stats,
        decode_stats=decode_stats,
        push_shuffle_tasks=frames.push_shuffle,
    )
