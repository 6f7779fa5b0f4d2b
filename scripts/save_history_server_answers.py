"""Save what an older Spark version's History Server answers for that version's sample logs.

The logs in `sample_eventlogs/spark-<X.Y>/` were written by PySpark X.Y; the conformance tests
check our report of each against X.Y's own History Server. This script installs that PySpark
release in a venv of its own (`scripts/pyspark_releases.py`), starts its History Server on
127.0.0.1 over the directory, and writes, per log, the REST answers the tests compare with to
`<dir>/.history-server/<log name>.json` (read back by `tests/oracle/saved.py`): the application,
its SQL executions (details=true, planDescription=false), stage attempts, each stage attempt's
task summary at the tests' quantiles, all executors and all jobs. Rerun it whenever the logs change:

    .venv/bin/python scripts/save_history_server_answers.py --spark-version 3.5
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))

from oracle import HistoryServer, OracleError  # noqa: E402
from oracle.saved import (  # noqa: E402
    ANSWERS_DIR_NAME,
    SAVED_FORMAT_VERSION,
    SUMMARY_QUANTILES,
    answers_path,
)
from pyspark_releases import VERSIONS_DIR_PREFIX, check_version, spark_home  # noqa: E402

DROPPED_STAGE_FIELDS = ("details",)
"""Left out of the saved stages: the call site's stack trace, long and never compared."""

_NUMBER_LIST = re.compile(r"\[\s*((?:-?[\d.eE+-]+|NaN)(?:,\s*(?:-?[\d.eE+-]+|NaN))*)\s*\]")


def to_json(answers: dict[str, Any]) -> str:
    """Return the answers as indented JSON with every list of numbers on one line."""
    text = json.dumps(answers, indent=1)
    return _NUMBER_LIST.sub(
        lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text
    )


def answers_of(server: HistoryServer, app: dict[str, Any]) -> dict[str, Any]:
    """Return every saved answer of one application, attempt by attempt."""
    attempts = []
    for attempt in app.get("attempts", []):
        attempt_id = attempt.get("attemptId")
        stages = [
            {k: v for k, v in stage.items() if k not in DROPPED_STAGE_FIELDS}
            for stage in server.stages(app["id"], attempt_id)
        ]
        summaries = [
            {
                "stage_id": stage["stageId"],
                "stage_attempt_id": stage["attemptId"],
                "summary": server.task_summary(
                    app["id"], stage["stageId"], stage["attemptId"], SUMMARY_QUANTILES, attempt_id
                ),
            }
            for stage in stages
        ]
        attempts.append(
            {
                "attempt_id": attempt_id,
                "sql": server.sql(app["id"], attempt_id),
                "stages": stages,
                "task_summaries": summaries,
                "executors": server.executors(app["id"], attempt_id),
                "jobs": server.jobs(app["id"], attempt_id),
            }
        )
    return {
        "format_version": SAVED_FORMAT_VERSION,
        "spark_version": server.spark_version,
        "quantiles": list(SUMMARY_QUANTILES),
        "application": app,
        "attempts": attempts,
    }


def save(server: HistoryServer, log_dir: Path) -> int:
    """Write the answers of every listed application beside its log; return how many failed."""
    out = log_dir / ANSWERS_DIR_NAME
    out.mkdir(exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    failures = 0
    for app in server.applications():
        log = server.log_path_of(app["id"], app["attempts"][0].get("attemptId"))
        try:
            answers = answers_of(server, app)
        except OracleError as exc:
            print(f"FAILED  {app['id']} ({log.name}): {exc}", file=sys.stderr)
            failures += 1
            continue
        answers["log"] = log.name
        target = answers_path(log_dir / log.name)
        target.write_text(to_json(answers) + "\n", encoding="utf-8")
        n_sql = sum(len(a["sql"]) for a in answers["attempts"])
        print(f"{n_sql:3d} executions  {target.relative_to(REPO_ROOT)}  <- {log.name}")
    return failures


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the version's History Server, save its answers; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark-version", required=True, help="3.3, 3.4, 3.5 or 4.0")
    parser.add_argument(
        "--log-dir",
        type=Path,
        help="the logs (default: sample_eventlogs/spark-<version>)",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        help="keep the staged links, config and History Server logs here (default: temporary)",
    )
    args = parser.parse_args(argv)
    version = args.spark_version
    check_version(version)
    default_dir = REPO_ROOT / "sample_eventlogs" / f"{VERSIONS_DIR_PREFIX}{version}"
    log_dir: Path = args.log_dir or default_dir
    if not log_dir.is_dir():
        raise SystemExit(f"{log_dir}: no such directory; write the logs first")
    home = spark_home(version)
    with tempfile.TemporaryDirectory(prefix="shs-") as tmp:
        work_dir = args.work_dir or Path(tmp)
        with HistoryServer([log_dir.resolve()], work_dir, spark_home=home) as server:
            print(
                f"History Server {server.spark_version} at {server.base_url}: "
                f"{len(server.app_ids())} apps listed in {server.startup_seconds:.1f} s"
            )
            if server.spark_version.rsplit(".", 1)[0] != version:
                raise SystemExit(f"{home} runs Spark {server.spark_version}, not {version}")
            failures = save(server, log_dir.resolve())
            for entry in server.unavailable:
                print(f"not listed by the History Server: {entry.source}", file=sys.stderr)
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
