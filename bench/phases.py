"""Time one report phase by phase, with the memory after each, to see where a log's cost goes.

Prints, for `spark-explain report LOG -f FORMAT` done in-process the way the command does it:
the imports, reading and replaying the log (with the reading workers, as the command does),
aggregating, the findings and rendering; for each, wall and CPU seconds of this process (the
workers' CPU is not in it) and the RSS after it with the peak so far.

usage:
  python bench/phases.py LOG [--format json|html|text|markdown] [--workers N]
"""

from __future__ import annotations

import argparse
import time

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


def main() -> None:
    """Run the phases of one report and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("log")
    parser.add_argument("--format", default="json", choices=("json", "html", "text", "markdown"))
    parser.add_argument("--workers", type=int, default=None, help="reading workers (0: none)")
    args = parser.parse_args()
    phases = _Phases()

    from analyzer import api
    from analyzer.aggregate.analysis import analyze_built
    from analyzer.errors import Strictness
    from analyzer.eventlog.source import resolve_log
    from analyzer.replay.parallel import replay_log
    from analyzer.report.options import ReportOptions

    phases.done("imports")
    source = resolve_log(args.log)
    replayed = replay_log(source, Strictness.STRICT, None, n_workers=args.workers)
    phases.done("replay")
    with api._collector_paused():
        analysis = analyze_built(source, replayed.built, replayed.read_stats, replayed.decode_stats)
    del replayed
    phases.done("aggregate")
    findings = api.find_issues(analysis)
    phases.done("findings")
    with api._collector_paused():
        out = api._render(analysis, ReportOptions(fmt=args.format), findings, None)
        size = len(out) if isinstance(out, str) else sum(len(chunk) for chunk in out)
    phases.done("render", f"{args.format}, {size:,} characters or bytes")
    print(f"total      {time.perf_counter() - _START:7.2f} s wall")


if __name__ == "__main__":
    main()
