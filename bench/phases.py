"""Time one report phase by phase, with the memory after each, to see where a log's cost goes.

Prints, for `spark-explain report LOG -f FORMAT` done in-process the way the command does it:
the imports, reading and replaying the log (with the reading workers, as the command does),
aggregating, the what-if (before the findings, as the command makes it), the findings and
rendering; for each, wall and CPU seconds of this process (the workers' CPU is not in it) and
the RSS after it with the peak so far.

With `--sizes`, also the memory the parts of the analysis hold once the findings are found:
the deep size of the plan versions, the other execution fields, the stages, jobs and executors,
the per-node statistics, the self times and the rest of the derived figures (each Python object
counted once, in the first part that reaches it), and polars' estimate of the task, slot and
push-shuffle frames.

usage:
  python bench/phases.py LOG [--format json|html|text|markdown] [--workers N] [--sizes]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Iterable
from typing import Any

_START = time.perf_counter()


def _rss_mb() -> tuple[int, int]:
    """This process's resident set and its peak so far, in MB (Linux /proc)."""
    now = peak = 0
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                now = int(line.split()[1]) // 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) // 1024
    return now, peak


class _Phases:
    """Prints one line per phase: wall and CPU seconds since the last line, and memory."""

    def __init__(self) -> None:
        self.wall = _START
        self.cpu = 0.0

    def done(self, name: str, note: str = "") -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        now, peak = _rss_mb()
        print(
            f"{name:<10} {wall - self.wall:7.2f} s wall {cpu - self.cpu:7.2f} s CPU"
            f"   RSS {now:5d} MB (peak {peak:5d} MB) {note}",
            flush=True,
        )
        self.wall, self.cpu = wall, cpu


def _deep_mb(roots: Iterable[Any], seen: set[int]) -> float:
    """The bytes of every object reachable from `roots` not yet in `seen` (classes, modules and
    functions left out), in MB; marks them seen."""
    skip = (type, type(sys), type(_rss_mb), type(len))
    total = 0
    stack = [r for r in roots if id(r) not in seen]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        stack.extend(r for r in gc.get_referents(obj) if id(r) not in seen)
    return total / 1e6


def _print_sizes(analysis: Any) -> None:
    """Print what each part of the analysis holds, and per SQL execution."""
    app = analysis.application
    n_ex = max(len(app.executions), 1)
    n_versions = sum(len(e.plans) for e in app.executions)
    seen: set[int] = set()
    # Shared singletons (small ints, interned names, None) are not the parts' own.
    seen.update(id(o) for o in (None, True, False, ""))
    parts = [
        (f"plan versions ({n_versions:,})", [e.plans for e in app.executions]),
        ("metric catalogs", [e.metric_catalog for e in app.executions]),
        ("other execution fields", list(app.executions)),
        ("stages, jobs, executors", [app.stages, app.jobs, app.executors]),
        ("rest of the application", [app]),
        ("node statistics", [analysis.node_stats]),
        ("self times", [analysis._figures.get("times")]),
        ("other figures", [analysis._figures]),
    ]
    print(f"sizes      ({len(app.executions):,} executions)")
    for name, roots in parts:
        mb = _deep_mb([r for r in roots if r is not None], seen)
        print(f"  {name:<28} {mb:8.1f} MB  {mb * 1e3 / n_ex:7.1f} KB per execution")
    for name in ("tasks", "slots", "push_shuffle_tasks"):
        frame = getattr(analysis, name)
        frame = getattr(frame, "stored", frame)  # the task and slot tables as stored (narrow)
        mb = frame.estimated_size() / 1e6
        print(
            f"  {name + ' frame':<28} {mb:8.1f} MB  {mb * 1e3 / n_ex:7.1f} KB per execution"
            f"  ({frame.height:,} rows, {frame.width} columns)"
        )


def main() -> None:
    """Run the phases of one report and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("log")
    parser.add_argument("--format", default="json", choices=("json", "html", "text", "markdown"))
    parser.add_argument("--workers", type=int, default=None, help="reading workers (0: none)")
    parser.add_argument("--sizes", action="store_true", help="what each part of the analysis holds")
    args = parser.parse_args()
    phases = _Phases()

    from analyzer import api
    from analyzer.aggregate.allocator import release_free_memory
    from analyzer.aggregate.analysis import analyze_built, figures_made_aside
    from analyzer.errors import Strictness
    from analyzer.eventlog.source import resolve_log
    from analyzer.replay.parallel import replay_log
    from analyzer.report.options import ReportOptions

    phases.done("imports")
    source = resolve_log(args.log)
    # One pause of the cyclic collector over every phase, as the report command holds.
    with api.collector_paused():
        replayed = replay_log(
            source,
            Strictness.STRICT,
            None,
            n_workers=args.workers,
            seal=api._seal_task_column,  # as the report command keeps the task columns
        )
        phases.done("replay")
        analysis = analyze_built(source, replayed.built, replayed.read_stats, replayed.decode_stats)
        del replayed
        release_free_memory()  # as `api.analyze` does
        phases.done("aggregate")
        options = ReportOptions(fmt=args.format)
        # As the report command does: the task table's figures made in a second thread while
        # the what-if (first) and the rules run, and waited for before the report.
        with figures_made_aside(analysis, api._figures_aside(analysis, options)):
            api.make_what_if(analysis, options)
            phases.done("what-if")
            findings = api.find_issues(analysis)
        phases.done("findings")
        if args.sizes:
            _print_sizes(analysis)
            phases.done("sizes")
        out = api._render(analysis, options, findings, None)
        size = len(out) if isinstance(out, str) else sum(len(chunk) for chunk in out)
        phases.done("render", f"{args.format}, {size:,} characters or bytes")
        del analysis, findings, out  # inside the pause, as the report command drops it
    print(f"total      {time.perf_counter() - _START:7.2f} s wall")


if __name__ == "__main__":
    main()
