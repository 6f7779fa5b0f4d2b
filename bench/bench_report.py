"""Time `spark-explain report` end to end against Spark's History Server on the same big logs.

usage:
  python bench/bench_report.py            the four shapes at the 350 MB class, plain
  python bench/bench_report.py --large    also the 3.5 GB class (about 14 GB of disk, minutes)
  python bench/bench_report.py --shapes q72 --sizes small,350mb --codecs plain,zstd
  python bench/bench_report.py --sizes 350mb --codecs plain --repeat 3 --no-shs
  python bench/bench_report.py --shapes stream --sizes 350mb

Four shapes of log, built on demand into bench/logs/ (gitignored), copies made with
/work/shared/tools/scale_eventlog.py:
- `q72`: the public NDS q72 log (big plans, 13.5k tasks; `small` is it as it is, 48 MB), `350mb`
  7 copies, `3500mb` 72;
- `multi_sql`: the `sea-multi-sql` sample (9 short SQL executions, 0.9 MB), 400 and 4,000 copies:
  thousands of short executions;
- `giant_stage`: one stage of 100k tasks, written by a real PySpark application
  (bench/make_giant_stage_log.py, minutes); `3500mb` is 10 copies of it;
- `stream`: the `sea-stream-keeps-up` sample (one streaming query, 10 micro-batches of two
  executions each, 0.8 MB), its batches repeated 1,000 times as one run of the query
  (bench/scale_stream_log.py): 10,000 micro-batches, 20,000 executions, 686 MB (`350mb`),
  and 5,000 times, 100,000 executions, 3.4 GB (`3500mb`).
Each plain log has a zstd twin. For every log it measures, in separate processes:

- the floors: decompressing and splitting lines alone (`iter_lines`), and `orjson.loads` per line;
- `spark-explain report LOG -o out.json` and `-o out.html`: wall and CPU time (the reading
  workers' included, from `wait4`), the peak PSS of the process tree (the forked workers
  included, a shared page counted once; sampled every 50 ms by bench/peak_pss.py) and the largest
  process's peak RSS, and the report's size;
- Spark's History Server from the pyspark wheel (tests/oracle/history_server.py): wall time from
  launching it until `/api/v1/applications/<id>/sql` answers (its listing scan and the replay of
  the whole log included), the peak PSS of its process tree over that time (the launcher script
  and the JVM, sampled the same way), its tree's CPU time by then (from /proc: steadier than the
  wall time on a loaded machine) and the JVM's peak RSS (VmHWM).

Before the first run, the analyzer's modules are compiled to bytecode (`compileall`), as
installing the package compiles them: a run then does not compile its imports from source
(about 0.1 s where bytecode is not written, `PYTHONDONTWRITEBYTECODE`).

Ours and the History Server run alternately, `--repeat` times each (default 2), and the best of
each is kept: the machine is shared, and a burst of other work then hits both sides alike. The
load average is recorded beside each log's figures. MB are 10^6 bytes of decompressed JSON.
Results are printed as a table and saved as JSON in bench/out/bench_report.json.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
LOGS_DIR = BENCH_DIR / "logs"
OUT_DIR = BENCH_DIR / "out"
SHARED = BENCH_DIR.parent.parent / "shared"  # ../shared beside the repository
SCALE_TOOL = SHARED / "tools" / "scale_eventlog.py"
SEED_LOG = SHARED / "eventlogs" / "public" / "nds_q72_dataproc_2_2.zstd"
SIZES = {"small": 1, "350mb": 7, "3500mb": 72}
"""Size name → number of copies of the q72 seed log (48.3 MB, 13,504 task ends each)."""
SHAPE_COPIES = {
    "q72": SIZES,
    "multi_sql": {"small": 1, "350mb": 400, "3500mb": 4000},
    "giant_stage": {"small": 1, "350mb": 1, "3500mb": 10},
    "stream": {"small": 1, "350mb": 1000, "3500mb": 5000},
}
"""Shape → size name → copies of its seed log."""
SHAPES = tuple(SHAPE_COPIES)
MULTI_SQL_SAMPLE = REPO / "sample_eventlogs" / "local-1795320703822.lz4"
STREAM_SAMPLE = REPO / "sample_eventlogs" / "local-1795622139339.zstd"
"""`sea-stream-keeps-up`: one streaming query run of 10 micro-batches."""
STREAM_TOOL = BENCH_DIR / "scale_stream_log.py"
GIANT_STAGE_TASKS = {"small": 2000, "350mb": 100_000, "3500mb": 100_000}
LARGE = "3500mb"
CODECS = ("plain", "zstd")
FORMATS = ("json", "html")
TASK_END_PREFIX = b'{"Event":"SparkListenerTaskEnd"'
CLI = [str(Path(sys.executable).parent / "spark-explain")]

sys.path[:0] = [str(BENCH_DIR), str(REPO / "tests")]

from peak_pss import TreeSampler, children_by_parent  # noqa: E402 (bench/ is on the path now)

# ------------------------------------------------------------------------------ building logs


def _seed_plain() -> Path:
    """Decompress the public NDS q72 log once (all zstd frames) into bench/logs/."""
    import zstandard

    LOGS_DIR.mkdir(parents=True, exist_ok=True)
    seed = LOGS_DIR / "nds_q72_dataproc_2_2"
    if not seed.exists():
        tmp = seed.with_name(seed.name + ".tmp")
        with SEED_LOG.open("rb") as src, tmp.open("wb") as dst:
            reader = zstandard.ZstdDecompressor().stream_reader(src, read_across_frames=True)
            while chunk := reader.read(1 << 20):
                dst.write(chunk)
        tmp.replace(seed)
    return seed


def _seed_sample(sample: Path, name: str) -> Path:
    """Decompress a sample log once into bench/logs/."""
    from analyzer.eventlog.lines import ReadStats, iter_lines
    from analyzer.eventlog.source import resolve_log

    LOGS_DIR.mkdir(parents=True, exist_ok=True)
    seed = LOGS_DIR / name
    if not seed.exists():
        tmp = seed.with_name(seed.name + ".tmp")
        with tmp.open("wb") as dst:
            for line in iter_lines(resolve_log(str(sample)), ReadStats()):
                dst.write(line.data + b"\n")
        tmp.replace(seed)
    return seed


def _seed_multi_sql() -> Path:
    """Decompress the `sea-multi-sql` sample once into bench/logs/."""
    return _seed_sample(MULTI_SQL_SAMPLE, "multi_sql_seed")


def _seed_giant_stage(size: str) -> Path:
    """Write the giant-stage log with a real PySpark application (minutes), once."""
    n_tasks = GIANT_STAGE_TASKS[size]
    seed = LOGS_DIR / ("giant_2000_seed" if n_tasks == 2000 else f"giant_stage_{n_tasks // 1000}k")
    if not seed.exists():
        print(f"writing {seed.name} with PySpark ({n_tasks:,} tasks, minutes)...", flush=True)
        script = BENCH_DIR / "make_giant_stage_log.py"
        subprocess.run(
            [sys.executable, str(script), str(seed), "--tasks", str(n_tasks)], check=True
        )
    return seed


def build_log(size: str, codec: str, shape: str = "q72") -> Path:
    """Return the log of this shape, size and codec, building it (and its plain twin) if
    missing."""
    copies = SHAPE_COPIES[shape][size]
    if shape == "q72":
        seed = _seed_plain()
        stem = "nds_q72"
    elif shape == "multi_sql":
        seed = _seed_multi_sql()
        stem = "multi_sql"
    elif shape == "stream":
        seed = _seed_sample(STREAM_SAMPLE, "stream_seed")
        stem = "stream"
    else:
        seed = _seed_giant_stage(size)
        stem = seed.name
    plain = seed if copies == 1 else LOGS_DIR / f"{stem}_x{copies}"
    if not plain.exists():
        print(f"building {plain.name} ({copies} copies)...", flush=True)
        tmp = plain.with_name(plain.name + ".tmp")
        tool = STREAM_TOOL if shape == "stream" else SCALE_TOOL
        cmd = [sys.executable, str(tool), str(seed), str(tmp), "--copies", str(copies)]
        subprocess.run(cmd, check=True)
        tmp.replace(plain)
    if codec == "plain":
        return plain
    packed = plain.with_name(plain.name + ".zstd")
    if not packed.exists():
        import zstandard

        print(f"compressing {packed.name}...", flush=True)
        tmp = packed.with_name(packed.name + ".tmp")
        # Level 1, Spark's default spark.io.compression.zstd.level.
        with plain.open("rb") as src, tmp.open("wb") as dst:
            zstandard.ZstdCompressor(level=1).copy_stream(src, dst, read_size=1 << 20)
        tmp.replace(packed)
    return packed


def count_task_ends(plain: Path) -> int:
    """Count the task-end lines of a plain log (cached beside it)."""
    meta = plain.with_name(plain.name + ".meta.json")
    if meta.exists() and meta.stat().st_mtime >= plain.stat().st_mtime:
        return int(json.loads(meta.read_text())["n_task_ends"])
    n = 0
    with plain.open("rb") as handle:
        for line in handle:
            n += line.startswith(TASK_END_PREFIX)
    meta.write_text(json.dumps({"n_task_ends": n}))
    return n


# ------------------------------------------------------------------------------ measurements


class CommandFailed(Exception):
    """A measured command exited with an error."""


@dataclass
class Run:
    """One timed process."""

    seconds: float
    peak_rss_mb: float
    """The largest peak RSS of one process (ours: of the tree's processes; the History
    Server: its JVM's VmHWM)."""
    cpu_seconds: float = float("nan")
    """User + system CPU time: steadier than wall time on a loaded machine."""
    peak_pss_mb: float = float("nan")
    """Peak PSS of the whole process tree (workers and launchers included, shared pages
    counted once), sampled every 50 ms."""


@dataclass
class Result:
    """Everything measured for one log."""

    log: str
    codec: str
    shape: str
    size_on_disk_mb: float
    json_mb: float
    n_tasks: int
    floor_lines: Run | None = None
    floor_orjson: Run | None = None
    ours: dict[str, Run] = field(default_factory=dict)
    report_mb: dict[str, float] = field(default_factory=dict)
    shs: Run | None = None
    shs_replay_seconds: float | None = None
    notes: list[str] = field(default_factory=list)
    load_average: list[float] = field(default_factory=list)
    """1-minute load average before each round of runs."""
    runs: dict[str, list[Run]] = field(default_factory=dict)
    """Every run of ours per format and of the History Server (`shs`)."""
    replays: list[float] = field(default_factory=list)


def timed(cmd: list[str]) -> Run:
    """Run `cmd` in a child process; return its wall and CPU time (its own and that of the
    processes it waited for: the reading workers), the peak PSS of its process tree and its
    largest process's peak RSS."""
    began = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    sampler = TreeSampler(lambda: proc.pid)
    sampler.start()
    assert proc.stderr is not None
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    pss_mb = sampler.stop()
    if proc.returncode != 0:
        raise CommandFailed(f"{' '.join(cmd)} failed:\n{stderr.decode()[-2000:]}")
    return Run(
        seconds=round(elapsed, 2),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 2),
        peak_pss_mb=pss_mb,
    )


def best(runs: list[Run]) -> Run:
    """The fastest run, with the lowest peak RSS seen."""
    fastest = min(runs, key=lambda r: r.seconds)
    return Run(
        fastest.seconds,
        min(r.peak_rss_mb for r in runs),
        min(r.cpu_seconds for r in runs),
        min(r.peak_pss_mb for r in runs),
    )


def floor_command(log: Path, mode: str) -> list[str]:
    """The command that times one reading floor (bench_read.py's `measure`) in its own process."""
    return [sys.executable, str(Path(__file__).resolve()), "--floor", mode, str(log)]


def run_floor(log: Path, mode: str) -> None:
    """Child side of `floor_command`: print bench_read's measurement as JSON."""
    from bench_read import measure

    print(json.dumps(measure(str(log), mode)))


def html_available() -> bool:
    """Whether the HTML renderer exists yet."""
    return importlib.util.find_spec("analyzer.render.html") is not None


def measure_ours(log: Path, result: Result, repeat: int, formats: list[str]) -> None:
    """Time the CLI report for each format, `repeat` times each; keep the best."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        if fmt == "html" and not html_available():
            result.notes.append("html pending: analyzer/render/html.py does not exist yet")
            continue
        out = OUT_DIR / f"{log.name}.{fmt}"
        runs = result.runs.setdefault(fmt, [])
        try:
            runs += [timed([*CLI, "report", str(log), "-o", str(out)]) for _ in range(repeat)]
        except CommandFailed as exc:
            if fmt != "html":
                raise
            last = str(exc).strip().splitlines()[-1]
            result.notes.append(f"html pending: the renderer failed ({last[:120]})")
            continue
        result.ours[fmt] = best(runs)
        result.report_mb[fmt] = round(out.stat().st_size / 1e6, 2)


def measure_floors(log: Path, result: Result, repeat: int) -> None:
    """Time the reading floors, best of `repeat`."""
    for mode in ("lines", "orjson"):
        runs = []
        for _ in range(repeat):
            began = time.perf_counter()
            done = subprocess.run(floor_command(log, mode), capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"floor {mode} of {log} failed:\n{done.stderr[-2000:]}")
            elapsed = time.perf_counter() - began
            got = json.loads(done.stdout.strip().splitlines()[-1])
            runs.append(Run(float(got.get("seconds", elapsed)), float(got["peak_rss_mb"])))
        setattr(result, f"floor_{mode}", best(runs))


def _vm_hwm_mb(pid: int) -> float:
    """Peak RSS (VmHWM) of a live process, from /proc (0 if it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _server_pid(server: object) -> int | None:
    """The pid of the History Server's launched process, None before it is launched."""
    proc = getattr(server, "_proc", None)
    return proc.pid if proc is not None else None


def _tree_cpu_seconds(root: int) -> float:
    """User + system CPU time of a live process tree so far (children it waited for included),
    from /proc/PID/stat."""
    children = children_by_parent()
    ticks = os.sysconf("SC_CLK_TCK")
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        # utime, stime, cutime, cstime: fields 14 to 17 of stat(5), 12 to 15 after the name.
        total += sum(int(v) for v in fields[11:15])
        todo.extend(children.get(pid, ()))
    return total / ticks


def _jvm_hwm_mb(root: int) -> float:
    """The largest VmHWM in the process tree of `root` (the launcher execs the JVM)."""
    children = children_by_parent()
    todo, peak = [root], 0.0
    while todo:
        pid = todo.pop()
        peak = max(peak, _vm_hwm_mb(pid))
        todo.extend(children.get(pid, ()))
    return peak


def measure_shs(log: Path, result: Result, repeat: int, heap: str) -> None:
    """Time Spark's History Server from launch until the SQL endpoint of the log's app answers."""
    from oracle import HistoryServer, missing_requirement

    reason = missing_requirement()
    if reason is not None:
        result.notes.append(f"History Server skipped: {reason}")
        return
    runs, replays = result.runs.setdefault("shs", []), result.replays
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-shs-") as tmp:
            log_dir = Path(tmp) / "logs"
            log_dir.mkdir()
            (log_dir / log.name).symlink_to(log.resolve())
            server = HistoryServer(
                [log_dir], Path(tmp) / "work", startup_timeout_s=3600, daemon_memory=heap
            )

            root = partial(_server_pid, server)
            sampler = TreeSampler(root)
            sampler.start()
            began = time.perf_counter()
            try:
                with server as shs:
                    app_id = shs.app_ids()[0]
                    asked = time.perf_counter()
                    shs.sql(app_id)
                    done = time.perf_counter()
                    pid = root()
                    rss = _jvm_hwm_mb(pid) if pid is not None else float("nan")
                    cpu = _tree_cpu_seconds(pid) if pid is not None else float("nan")
                    pss = sampler.stop()
            finally:
                sampler.stop()
        runs.append(Run(round(done - began, 2), rss, round(cpu, 2), pss))
        replays.append(round(done - asked, 2))
    result.shs = best(runs)
    result.shs_replay_seconds = min(replays)


# ------------------------------------------------------------------------------ reporting


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def _load_range(loads: list[float]) -> str:
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"


def print_table(results: list[Result]) -> None:
    """Print one row per log, then the ratios to the History Server."""
    head = (
        f"{'log':20} {'codec':5} {'JSON MB':>8} {'tasks':>8} │ {'lines s':>7} {'orjson s':>8} │"
        f" {'json s':>7} {'CPU s':>6} {'PSS MB':>7} {'RSS MB':>7}"
        f" {'html s':>7} {'PSS MB':>7} {'html MB':>7} │"
        f" {'SHS s':>7} {'CPU s':>6} {'replay':>7} {'PSS MB':>7} {'RSS MB':>7} │"
        f" {'speed-up':>8} {'vs launch':>9} {'PSS ×':>6} {'load':>9}"
    )
    print(head)
    print("─" * len(head))
    for r in results:
        js, html = r.ours.get("json"), r.ours.get("html")
        shs = r.shs
        print(
            f"{r.log:20} {r.codec:5} {r.json_mb:8.0f} {r.n_tasks:8,} │"
            f" {r.floor_lines.seconds if r.floor_lines else '-':>7}"
            f" {r.floor_orjson.seconds if r.floor_orjson else '-':>8} │"
            f" {js.seconds if js else '-':>7} {js.cpu_seconds if js else '-':>6}"
            f" {js.peak_pss_mb if js else '-':>7} {js.peak_rss_mb if js else '-':>7}"
            f" {html.seconds if html else '-':>7} {html.peak_pss_mb if html else '-':>7}"
            f" {r.report_mb.get('html', '-'):>7} │"
            f" {shs.seconds if shs else '-':>7} {shs.cpu_seconds if shs else '-':>6}"
            f" {r.shs_replay_seconds or '-':>7}"
            f" {shs.peak_pss_mb if shs else '-':>7} {shs.peak_rss_mb if shs else '-':>7} │"
            f" {_ratio(r.shs_replay_seconds, js.seconds if js else None):>8}"
            f" {_ratio(shs.seconds if shs else None, js.seconds if js else None):>9}"
            f" {_ratio(js.peak_pss_mb if js else None, shs.peak_pss_mb if shs else None):>6}"
            f" {_load_range(r.load_average):>9}"
        )
        for note in r.notes:
            print(f"    note: {note}")
    print(
        "SHS s: launch until the SQL endpoint answers (CPU s: its process tree's CPU time by\n"
        "then); replay: its first SQL request alone.\n"
        "PSS: peak PSS of the process tree (workers, launcher included); RSS: largest process.\n"
        "speed-up: the History Server's replay / ours end to end (JSON report); vs launch: its\n"
        "launch-to-answer / ours; PSS ×: ours (JSON report) / the History Server's, lower is\n"
        "better. load: lowest and highest 1-minute load average before the rounds (2 cores)."
    )
    by_codec: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        by_codec.setdefault((r.shape, r.codec), []).append(r)
    for (_, codec), rows in by_codec.items():
        rows = sorted((r for r in rows if "json" in r.ours), key=lambda r: r.json_mb)
        if len(rows) < 2:
            continue
        base = rows[0]
        growth = ", ".join(
            f"{r.log}: ×{r.json_mb / base.json_mb:.1f} bytes → ×"
            f"{r.ours['json'].seconds / base.ours['json'].seconds:.1f} time, ×"
            f"{r.ours['json'].peak_pss_mb / base.ours['json'].peak_pss_mb:.1f} PSS"
            for r in rows[1:]
        )
        print(f"growth over {base.log} ({codec}): {growth}")


def main() -> None:
    """Build the logs asked for, measure them, print the table and save the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--shapes", default=",".join(SHAPES), help=f"comma list of {', '.join(SHAPES)}"
    )
    parser.add_argument("--sizes", default="350mb", help=f"comma list of {', '.join(SIZES)}")
    parser.add_argument("--large", action="store_true", help=f"also the {LARGE} log")
    parser.add_argument("--codecs", default="plain", help="comma list of plain, zstd")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma list of json, html")
    parser.add_argument(
        "--repeat", type=int, default=2, help="rounds per log: ours, then the History Server"
    )
    parser.add_argument("--shs-heap", default="2g", help="History Server heap (3500mb: 8g)")
    parser.add_argument("--no-shs", action="store_true", help="skip the History Server")
    parser.add_argument("--no-floors", action="store_true", help="skip the reading floors")
    parser.add_argument("--floor", nargs=2, metavar=("MODE", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        run_floor(Path(args.floor[1]), args.floor[0])
        return
    sizes = [s for s in args.sizes.split(",") if s]
    if args.large and LARGE not in sizes:
        sizes.append(LARGE)
    codecs = [c for c in args.codecs.split(",") if c]
    formats = [f for f in args.formats.split(",") if f]
    shapes = [s for s in args.shapes.split(",") if s]
    checks = (("size", SIZES, sizes), ("codec", CODECS, codecs), ("shape", SHAPES, shapes))
    for name, allowed, got in checks:
        bad = [g for g in got if g not in allowed]
        if bad:
            parser.error(f"unknown {name} {bad[0]!r}")
    compileall.compile_dir(REPO / "analyzer", quiet=1)
    results = []
    for shape in shapes:
        for size in sizes:
            if size not in SHAPE_COPIES[shape]:
                print(f"no {size} log of shape {shape}", flush=True)
                continue
            for codec in codecs:
                log = build_log(size, codec, shape)
                plain = build_log(size, "plain", shape)
                result = Result(
                    log=plain.name,
                    codec=codec,
                    shape=shape,
                    size_on_disk_mb=round(log.stat().st_size / 1e6, 1),
                    json_mb=round(plain.stat().st_size / 1e6, 1),
                    n_tasks=count_task_ends(plain),
                )
                print(f"measuring {log.name} ({result.size_on_disk_mb} MB on disk)...", flush=True)
                if not args.no_floors:
                    measure_floors(log, result, args.repeat)
                heap = "8g" if size == LARGE and args.shs_heap == "2g" else args.shs_heap
                for _ in range(args.repeat):
                    # Alternate: a burst of other work on the machine hits both sides.
                    result.load_average.append(round(os.getloadavg()[0], 2))
                    measure_ours(log, result, 1, formats)
                    if not args.no_shs:
                        measure_shs(log, result, 1, heap)
                results.append(result)
    print()
    print_table(results)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    saved = OUT_DIR / "bench_report.json"
    saved.write_text(json.dumps([asdict(r) for r in results], indent=2))
    print(f"saved {saved.relative_to(REPO)}; peak RSS of this driver {_self_rss_mb()} MB")


def _self_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
