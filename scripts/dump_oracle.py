"""Dump what Spark's History Server reports for event logs, to debug conformance differences.

Starts the History Server of the installed pyspark over the given directories and writes, for
every application it lists, the SQL REST output (details=true, planDescription=false) to
`<out>/<app_id>.json` (`<app_id>_<attempt>.json` for apps with attempt ids). Prints where each
came from and which logs the History Server could not read.

    .venv/bin/python scripts/dump_oracle.py --out out/oracle sample_eventlogs \
        ../shared/eventlogs/public
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from oracle import HistoryServer, OracleError


def dump_name(app_id: str, attempt_id: str | None) -> str:
    """Return the output file name of one app attempt."""
    return f"{app_id}.json" if attempt_id is None else f"{app_id}_{attempt_id}.json"


def dump(server: HistoryServer, out: Path, only: set[str]) -> int:
    """Write the SQL output of every listed app attempt; return how many failed."""
    failures = 0
    for app in server.applications():
        if only and app["id"] not in only:
            continue
        for attempt in app.get("attempts", []):
            attempt_id = attempt.get("attemptId")
            target = out / dump_name(app["id"], attempt_id)
            source = server.log_path_of(app["id"], attempt_id)
            try:
                executions = server.sql(app["id"], attempt_id)
            except OracleError as exc:
                print(f"FAILED  {app['id']} ({source}): {exc}", file=sys.stderr)
                failures += 1
                continue
            target.write_text(json.dumps(executions, indent=2) + "\n", encoding="utf-8")
            print(f"{len(executions):5d} executions  {target}  <- {source}")
    return failures


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the History Server, dump its output; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log_dirs", nargs="+", type=Path, help="directories of event logs")
    parser.add_argument("--out", type=Path, required=True, help="where to write <app_id>.json")
    parser.add_argument(
        "--app", action="append", default=[], help="dump only this app id (repeatable)"
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        help="keep the staged links, config and SHS logs here (default: a temporary directory)",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="shs-") as tmp:
        work_dir = args.work_dir or Path(tmp)
        with HistoryServer(args.log_dirs, work_dir) as server:
            print(
                f"History Server {server.spark_version} at {server.base_url}: "
                f"{len(server.app_ids())} apps listed in {server.startup_seconds:.1f} s"
            )
            failures = dump(server, args.out, set(args.app))
            for entry in server.unavailable:
                print(f"unavailable (not listed by the SHS): {entry.source}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
