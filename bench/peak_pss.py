"""Run a command and report its wall and CPU time and the peak PSS of its whole process tree.

PSS (proportional set size) counts a page shared by several processes once in all: forked
reading workers share the parent's pages, so summing their RSS would count those pages twice.
The tree's PSS is sampled every `--interval` seconds from /proc/PID/smaps_rollup (Linux); a peak
shorter than the interval can be missed.

usage:
  python bench/peak_pss.py [--interval S] [--json] -- COMMAND [ARG ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path


def children_by_parent() -> dict[int, list[int]]:
    """Every process's children, by parent pid."""
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        out.setdefault(ppid, []).append(int(entry.name))
    return out


def _pss_kb(pid: int) -> int:
    """The PSS of one process in KB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_kb(root: int) -> tuple[int, int]:
    """The PSS of `root` and all its descendants in KB, and how many processes that is."""
    children = children_by_parent()
    todo, total, n = [root], 0, 0
    while todo:
        pid = todo.pop()
        total += _pss_kb(pid)
        n += 1
        todo.extend(children.get(pid, ()))
    return total, n


class TreeSampler(threading.Thread):
    """Sample the PSS of a process tree in the background until stopped; keep the peak.

    `root` returns the pid of the tree's root, or None while it has not started yet (a server
    launched inside a `with` block): the sampler waits for it.
    """

    def __init__(self, root: Callable[[], int | None], interval_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self._root = root
        self._interval_s = interval_s
        self._stop_event = threading.Event()
        self.peak_kb = 0
        self.processes_at_peak = 0

    def run(self) -> None:
        """Sample until `stop`."""
        while not self._stop_event.is_set():
            pid = self._root()
            if pid is not None:
                kb, n = tree_pss_kb(pid)
                if kb > self.peak_kb:
                    self.peak_kb, self.processes_at_peak = kb, n
            self._stop_event.wait(self._interval_s)

    def stop(self) -> float:
        """Stop sampling; return the peak in MB."""
        self._stop_event.set()
        self.join()
        return round(self.peak_kb / 1024, 1)


def main() -> None:
    """Run the command, sample its tree's PSS, print the peak."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    start = time.perf_counter()
    proc = subprocess.Popen(command)
    peak_kb, peak_n = 0, 1
    while proc.poll() is None:
        kb, n = tree_pss_kb(proc.pid)
        if kb > peak_kb:
            peak_kb, peak_n = kb, n
        time.sleep(args.interval)
    wall_s = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = usage.ru_utime + usage.ru_stime
    result = {
        "command": command,
        "exit": proc.returncode,
        "wall_s": round(wall_s, 2),
        "cpu_s": round(cpu_s, 2),
        "peak_tree_pss_mb": round(peak_kb / 1024, 1),
        "processes_at_peak": peak_n,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"wall {wall_s:.2f} s, CPU {cpu_s:.2f} s, peak PSS of the process tree"
            f" {peak_kb / 1024:.0f} MB ({peak_n} processes at the peak), exit {proc.returncode}",
            file=sys.stderr,
        )
    sys.exit(proc.returncode)


if __name__ == "__main__":
    main()
