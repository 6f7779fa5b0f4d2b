"""Time short `spark-explain` commands as whole processes: start-up, listing, a tiny report, errors.

Each command runs `--repeat` times in rounds, the code trees given alternating within a round (a
tree is a directory holding an `analyzer` package, put first on PYTHONPATH; `.` is this
checkout), and the best wall time, the best CPU time (user + system, from `wait4`) and the
lowest peak RSS of each are kept. Whether polars and pydantic were imported is read from
`python -X importtime` once per command and tree.

usage:
  python bench/bench_start.py [--repeat N] [--apps-links N] [TREE ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_eventlogs"
TINY_LOG = SAMPLES / "local-1795320174558.zstd"
CLI = str(Path(sys.executable).parent / "spark-explain")
HEAVY = ("polars", "pydantic")


def _apps_dir(root: Path, n_links: int) -> Path:
    """A directory of `n_links` symbolic links to the zstd sample logs."""
    logs = sorted(p for p in SAMPLES.glob("*.zstd") if p.is_file())
    out = root / "apps"
    out.mkdir()
    for i in range(n_links):
        log = logs[i % len(logs)]
        (out / f"app-{i:05d}-{log.name}").symlink_to(log)
    return out


def _run(cmd: list[str], tree: Path) -> tuple[float, float, float]:
    """Run one command with `tree` first on PYTHONPATH: (wall s, CPU s, peak RSS MB)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _heavy_imports(cmd: list[str], tree: Path) -> str:
    """Which of polars and pydantic the command imports."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = f"import sys; sys.argv = {cmd!r}; from analyzer.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=env,
        cwd=tree,  # `-c` puts the working directory first on the path
        capture_output=True,
        text=True,
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    return ", ".join(name for name in HEAVY if name in names) or "neither"


def main() -> None:
    """Measure every command on every tree; print one row each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("trees", nargs="*", type=Path, default=[REPO])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--apps-links", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        apps = _apps_dir(Path(tmp), args.apps_links)
        not_a_log = Path(tmp) / "notes.json"
        not_a_log.write_text('{"a": 1}\n')
        commands = {
            "--version": ["--version"],
            "report tiny log (text)": ["report", str(TINY_LOG)],
            f"apps ({args.apps_links} logs)": ["apps", str(apps)],
            "report: no such file": ["report", str(Path(tmp) / "missing")],
            "report: not an event log": ["report", str(not_a_log)],
        }
        trees = [t.resolve() for t in args.trees]
        print(f"load average {os.getloadavg()[0]:.1f}")
        for name, argv in commands.items():
            cmd = [CLI, *argv]
            best: dict[Path, list[float]] = {}
            for tree in trees:
                _run(cmd, tree)  # compile and cache the modules
            for _ in range(args.repeat):
                for tree in trees:
                    got = _run(cmd, tree)
                    old = best.get(tree)
                    best[tree] = (
                        list(got)
                        if old is None
                        else [min(a, b) for a, b in zip(old, got, strict=True)]
                    )
            for tree in trees:
                wall, cpu, rss = best[tree]
                heavy = _heavy_imports(["spark-explain", *argv], tree)
                print(
                    f"{name:28} {tree.name:16} wall {wall:5.2f} s  CPU {cpu:5.2f} s"
                    f"  peak RSS {rss:5.0f} MB  imports: {heavy}"
                )
        print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
