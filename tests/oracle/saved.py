"""History Server answers saved as JSON beside event logs, read back like a running server.

Logs written by an older Spark version (`sample_eventlogs/spark-<X.Y>/`) are checked against that
version's own History Server. Running it needs that version's pyspark, so
`scripts/save_history_server_answers.py` runs it once and saves, for every log, the REST answers
the conformance tests compare with in `<dir>/.history-server/<log name>.json`. `SavedHistoryServer`
serves those answers through the methods of `HistoryServer` that the tests call, so the same
comparison runs against a live server or a saved one, without Java or a second pyspark.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAVED_FORMAT_VERSION = 1
"""Version of the saved-answers format; history: 1, the first."""

ANSWERS_DIR_NAME = ".history-server"
"""The hidden directory beside the logs that holds one JSON file of answers per log."""

SUMMARY_QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)
"""Quantiles of the stage task summaries: Spark's stage page (0, 0.25, 0.5, 0.75, 1) and the
REST default's tails (0.05, 0.95). Saved answers hold the summaries at exactly these."""


@dataclass(frozen=True)
class SavedLog:
    """One event-log entry, as `HistoryServer.unavailable` lists those it did not read."""

    source: Path


def answers_path(log: Path) -> Path:
    """Return where the saved answers of a log (file or rolling directory) belong."""
    return log.parent / ANSWERS_DIR_NAME / f"{log.name}.json"


class SavedHistoryServer:
    """The saved answers of one History Server version for the logs of one directory.

    Attributes:
        log_dir: the directory of the logs.
        spark_version: version of the History Server that gave the answers (one for all logs).
        unavailable: logs of the directory that have no saved answers.
    """

    def __init__(self, log_dir: Path) -> None:
        """Read every `<log_dir>/.history-server/*.json`.

        Raises:
            ValueError: a file has another format version, names a log that is missing, or the
                files come from History Servers of different versions.
        """
        self.log_dir = Path(log_dir)
        self._answers: dict[tuple[str, str | None], dict[str, Any]] = {}
        self._apps: list[dict[str, Any]] = []
        versions = set()
        for path in sorted((self.log_dir / ANSWERS_DIR_NAME).glob("*.json")):
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("format_version") != SAVED_FORMAT_VERSION:
                raise ValueError(f"{path}: format_version {saved.get('format_version')!r}")
            if tuple(saved["quantiles"]) != SUMMARY_QUANTILES:
                raise ValueError(f"{path}: task summaries at {saved['quantiles']}")
            if not (self.log_dir / saved["log"]).exists():
                raise ValueError(f"{path}: the log {saved['log']} is not in {self.log_dir}")
            app = saved["application"]
            for attempt in saved["attempts"]:
                self._answers[(app["id"], attempt["attempt_id"])] = {**attempt, "log": saved["log"]}
            self._apps.append(app)
            versions.add(saved["spark_version"])
        if len(versions) > 1:
            raise ValueError(f"{self.log_dir}: answers of History Servers {sorted(versions)}")
        self.spark_version = versions.pop() if versions else ""
        saved_logs = {answers["log"] for answers in self._answers.values()}
        self.unavailable = [
            SavedLog(source=p)
            for p in sorted(self.log_dir.iterdir())
            if not p.name.startswith(".") and p.name != "README.md" and p.name not in saved_logs
        ]

    def applications(self) -> list[dict[str, Any]]:
        """Return the application listing entries, each with its `attempts`."""
        return list(self._apps)

    def sql(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return the SQL executions (details=true, planDescription=false)."""
        executions: list[dict[str, Any]] = self._of(app_id, attempt_id)["sql"]
        return executions

    def stages(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return `/stages`: every stage attempt, newest first."""
        stages: list[dict[str, Any]] = self._of(app_id, attempt_id)["stages"]
        return stages

    def task_summary(
        self,
        app_id: str,
        stage_id: int,
        attempt: int,
        quantiles: Sequence[float],
        attempt_id: str | None = None,
    ) -> dict[str, Any] | None:
        """Return a stage attempt's saved `taskSummary`, or None where the server had none.

        Raises:
            ValueError: `quantiles` are not the saved ones.
        """
        if tuple(quantiles) != SUMMARY_QUANTILES:
            raise ValueError(f"task summaries are saved at {SUMMARY_QUANTILES}, not {quantiles}")
        for entry in self._of(app_id, attempt_id)["task_summaries"]:
            if (entry["stage_id"], entry["stage_attempt_id"]) == (stage_id, attempt):
                summary: dict[str, Any] | None = entry["summary"]
                return summary
        raise KeyError(f"{app_id}: no saved task summary of stage {stage_id}.{attempt}")

    def executors(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return `/allexecutors`."""
        executors: list[dict[str, Any]] = self._of(app_id, attempt_id)["executors"]
        return executors

    def jobs(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return `/jobs`: every job, newest first."""
        jobs: list[dict[str, Any]] = self._of(app_id, attempt_id)["jobs"]
        return jobs

    def log_path_of(self, app_id: str, attempt_id: str | None = None) -> Path:
        """Return the log the answers of an app attempt were given for."""
        return self.log_dir / str(self._of(app_id, attempt_id)["log"])

    def _of(self, app_id: str, attempt_id: str | None) -> dict[str, Any]:
        return self._answers[(app_id, attempt_id)]
