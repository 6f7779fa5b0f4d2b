"""Run Spark's own History Server (SHS) over event-log directories and query its REST API.

The SHS is the oracle of the conformance tests: whatever its SQL REST API reports for a log is
what the analyzer has to reproduce. `HistoryServer` stages symlinks to every event-log entry of
the given directories in one private directory, starts the SHS from the installed pyspark wheel
on 127.0.0.1, waits until the application listing is complete, and stops the JVM on exit::

    with HistoryServer([Path("sample_eventlogs")], work_dir) as shs:
        for app in shs.applications():
            executions = shs.sql(app["id"])

Entries the SHS cannot read (a malformed line, a Databricks directory) never show up in its
listing; they end up in `HistoryServer.unavailable` instead of making the start-up hang.

Only the standard library is used, so the harness runs wherever pytest does, given Java and pyspark.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

SHS_MAIN_CLASS = "org.apache.spark.deploy.history.HistoryServer"

# The listing applies minDate=2010-01-01 by default; some logs carry older or fake timestamps.
_LISTING_QUERY = {"minDate": "1970-01-01"}
# The SQL endpoint pages with a default length of 20 in 3.1-3.5; ask for everything at once.
_SQL_PAGE_LENGTH = 100_000
_TASK_PAGE_LENGTH = 1_000_000

# Names in a log directory that are never event logs.
_DOC_SUFFIXES = (".md", ".rst", ".txt", ".html", ".csv", ".json", ".yaml", ".yml", ".toml")
_NON_LOG_SUFFIXES = (*_DOC_SUFFIXES, ".py", ".pyc", ".sh", ".crc", ".lock", ".log")
_NON_LOG_NAMES = frozenset({"README", "LICENSE", "__pycache__"})
ROLLING_DIR_PREFIX = "eventlog_v2_"
# Databricks keeps its live log as `eventlog` inside a per-cluster directory.
_DATABRICKS_LOG_NAME = "eventlog"
_INPROGRESS_SUFFIX = ".inprogress"

_STDERR_TAIL_LINES = 60
# What FsHistoryProvider logs around the listing parse of one log, and what ReplayListenerBus
# logs when a line of a log cannot be parsed.
_PARSE_EVENT = re.compile(
    r"(?P<kind>Finished parsing|Parsing|Exception parsing Spark event log:) (?P<location>\S+)"
)


class OracleError(RuntimeError):
    """The History Server failed to start or answered a request with an error."""


class OracleHTTPError(OracleError):
    """The History Server answered a request with an HTTP error status."""

    def __init__(self, url: str, status: int, body: str) -> None:
        super().__init__(f"GET {url} -> HTTP {status}: {body.strip()[:500]}")
        self.url = url
        self.status = status
        self.body = body


@dataclass(frozen=True)
class StagedLog:
    """One event-log entry (a file or a rolling-log directory) linked into the staging directory."""

    name: str
    """Name of the symlink in the staging directory; the SHS sees only this name."""
    source: Path
    """The original file or directory, resolved."""


def find_spark_home() -> Path:
    """Return the Spark distribution inside the installed pyspark wheel.

    Raises:
        OracleError: pyspark is not installed or has no `bin/spark-class`.
    """
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise OracleError("pyspark is not installed; the History Server ships in its wheel")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").is_file():
        raise OracleError(f"{home} has no bin/spark-class")
    return home


def find_java() -> Path:
    """Return the `java` executable the Spark scripts will use (JAVA_HOME first, then PATH).

    Raises:
        OracleError: no Java runtime is available.
    """
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return Path(java_home) / "bin" / "java"
    found = shutil.which("java")
    if found is None:
        raise OracleError("no java on PATH and no usable JAVA_HOME; the History Server needs Java")
    return Path(found)


def missing_requirement() -> str | None:
    """Say why the History Server cannot run here (no Java, no pyspark), or None if it can."""
    try:
        find_java()
        find_spark_home()
    except OracleError as exc:
        return str(exc)
    return None


def sanitize_app_id(app_id: str) -> str:
    """Return the file-name form Spark gives an app or attempt id (`Utils.sanitizeDirName`)."""
    return re.sub(r"[.${}'\"]", "_", re.sub(r"[ :/]", "-", app_id)).lower()


def is_event_log_entry(path: Path) -> bool:
    """Tell whether a directory entry looks like an event log worth handing to the SHS.

    Files are logs unless hidden or obviously something else (README.md, *.json, ...).
    Directories are logs if they are rolling logs (`eventlog_v2_*`) or Databricks cluster
    directories (they hold an `eventlog` file; the SHS cannot read those, so they become
    `unavailable`).
    """
    name = path.name
    if name.startswith((".", "_")) or name in _NON_LOG_NAMES:
        return False
    if path.is_dir():
        return name.startswith(ROLLING_DIR_PREFIX) or (path / _DATABRICKS_LOG_NAME).is_file()
    if not path.is_file():
        return False
    stem = name.split(".", 1)[0]
    return stem.upper() not in _NON_LOG_NAMES and not name.lower().endswith(_NON_LOG_SUFFIXES)


def shs_reads(entry: StagedLog) -> bool:
    """Tell whether the SHS will even try to parse a staged entry (files and rolling dirs)."""
    return entry.source.is_file() or entry.name.startswith(ROLLING_DIR_PREFIX)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _java_opt(value: str) -> str:
    # Spark's launcher splits SPARK_HISTORY_OPTS like a shell and honours double quotes.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _tail(path: Path, n_lines: int = _STDERR_TAIL_LINES) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n_lines:])


def _name_matches_app(staged_name: str, app_id: str, attempt_id: str | None) -> bool:
    """Tell whether Spark's default file name for this app attempt is `staged_name`."""
    name = staged_name.removeprefix(ROLLING_DIR_PREFIX).removesuffix(_INPROGRESS_SUFFIX)
    stem = name.rsplit(".", 1)[0]  # the codec is whatever follows the last dot
    expected = sanitize_app_id(app_id)
    if attempt_id is not None:
        expected += "_" + sanitize_app_id(attempt_id)
    return stem == expected


@dataclass
class _ParseProgress:
    started: bool = False
    """The SHS has begun to parse at least one staged entry."""
    in_flight: set[str] = field(default_factory=set)
    """Staged names whose listing parse has begun but not finished."""
    failed: set[str] = field(default_factory=set)
    """Staged names the SHS could not parse."""


class HistoryServer:
    """A running Spark History Server over symlinks to the event logs of some directories.

    Use it as a context manager: entering stages the logs, starts the JVM and waits for the
    listing; leaving (also on an exception) stops the JVM and its whole process group.

    Attributes set on entry:
        base_url: `http://127.0.0.1:<port>`.
        spark_version: version of the SHS itself (the one whose rules the oracle applies).
        staged: every staged entry, by staged name.
        shadowed: logs left out because an earlier log directory's log has the same
            application id and attempt: the History Server would keep only one of them, chosen
            by file times, so the harness chooses instead (the first in `log_dirs` order).
        unavailable: staged entries no listed application attempt was read from, i.e. logs
            the SHS could not parse or ignores (sorted by source path).
        listening_seconds: wall time from `start()` until the REST API first answered.
        startup_seconds: wall time from `start()` until the listing was complete.
    """

    def __init__(
        self,
        log_dirs: Sequence[Path],
        work_dir: Path,
        *,
        spark_home: Path | None = None,
        startup_timeout_s: float = 180.0,
        settle_s: float = 5.0,
        request_timeout_s: float = 600.0,
        daemon_memory: str = "2g",
    ) -> None:
        """Prepare (but do not start) a History Server.

        Args:
            log_dirs: directories whose event-log entries are served; missing ones are an error.
            work_dir: private directory for the staged links, configuration, temp files and the
                SHS's stdout/stderr (`shs-<n>.stdout.log`, `shs-<n>.stderr.log`).
            spark_home: Spark distribution to run; default the installed pyspark wheel.
            startup_timeout_s: give up if the listing is not complete after this long.
            settle_s: the listing counts as complete once it has not changed for this long
                (or at once, when every staged log is listed).
            request_timeout_s: socket timeout of REST requests; the first request for an app
                replays its whole log.
            daemon_memory: heap of the SHS JVM (`SPARK_DAEMON_MEMORY`).
        """
        self.log_dirs = [Path(d) for d in log_dirs]
        self.work_dir = Path(work_dir)
        self.spark_home = spark_home
        self.startup_timeout_s = startup_timeout_s
        self.settle_s = settle_s
        self.request_timeout_s = request_timeout_s
        self.daemon_memory = daemon_memory

        self.base_url = ""
        self.spark_version = ""
        self.staged: dict[str, StagedLog] = {}
        self.shadowed: list[StagedLog] = []
        self.unavailable: list[StagedLog] = []
        self.startup_seconds = 0.0
        self.listening_seconds = 0.0

        self._proc: subprocess.Popen[bytes] | None = None
        self._log_files: list[IO[bytes]] = []
        self._stderr_path: Path | None = None
        self._apps: list[dict[str, Any]] = []
        self._log_of_attempt: dict[tuple[str, str | None], StagedLog] = {}
        # Never route 127.0.0.1 through an http_proxy from the environment.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self, *, max_launches: int = 3) -> None:
        """Stage the logs, launch the SHS and wait for its listing; prefer the context manager.

        A launch whose port was taken in the meantime is retried on another port.

        Raises:
            OracleError: the SHS exited, did not answer in time, or Java/pyspark is missing.
        """
        began = time.monotonic()
        self._stage()
        spark_home = self.spark_home or find_spark_home()
        find_java()
        for launch in range(1, max_launches + 1):
            port = _free_port()
            self._launch(spark_home, port, launch)
            try:
                self._wait_until_listed(began)
                break
            except OracleError:
                stderr = _tail(self._stderr_path) if self._stderr_path else ""
                self._terminate()
                if launch < max_launches and "BindException" in stderr:
                    continue
                raise
        self.startup_seconds = time.monotonic() - began
        self.spark_version = str(self._get_json("/version").get("spark", ""))
        self._map_logs()

    def stop(self) -> None:
        """Stop the JVM (SIGTERM to its process group, SIGKILL after 20 s) and close log files."""
        self._terminate()

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        try:
            if proc is not None:
                _stop_process_group(proc)
        finally:
            for handle in self._log_files:
                handle.close()
            self._log_files = []

    # ---------------------------------------------------------------- staging and launch

    def _stage(self) -> None:
        stage_dir = self.work_dir / "eventlogs"
        stage_dir.mkdir(parents=True, exist_ok=True)
        for old in stage_dir.iterdir():
            if not old.is_symlink():
                raise OracleError(f"{stage_dir} holds {old.name}, not a link of this harness")
            old.unlink()
        self.staged = {}
        self.shadowed = []
        attempts = _attempts_by_path(self.log_dirs)
        seen: set[tuple[str, str | None]] = set()
        for entry in _event_log_entries(self.log_dirs):
            if entry.name in self.staged:
                raise OracleError(
                    f"two event logs are both named {entry.name!r}: "
                    f"{self.staged[entry.name].source} and {entry.source}"
                )
            attempt = attempts.get(entry.source) if shs_reads(entry) else None
            if attempt is not None and attempt in seen:
                self.shadowed.append(entry)
                continue
            if attempt is not None:
                seen.add(attempt)
            link = stage_dir / entry.name
            link.symlink_to(entry.source, target_is_directory=entry.source.is_dir())
            self.staged[entry.name] = entry

    def _launch(self, spark_home: Path, port: int, launch: int) -> None:
        conf_dir = self.work_dir / "conf"
        tmp_dir = self.work_dir / "tmp"
        conf_dir.mkdir(parents=True, exist_ok=True)
        tmp_dir.mkdir(parents=True, exist_ok=True)
        settings = {
            "spark.history.fs.logDirectory": (self.work_dir / "eventlogs").resolve().as_uri(),
            "spark.history.ui.port": str(port),
            # Fail instead of silently moving to the next port; start() retries on a new one.
            "spark.port.maxRetries": "0",
            "spark.history.fs.update.interval": "1s",
            "spark.history.retainedApplications": "1000",
            "spark.history.fs.cleaner.enabled": "false",
            "spark.ui.retainedJobs": "1000000",
            "spark.ui.retainedStages": "1000000",
            "spark.ui.retainedTasks": "100000000",
            "spark.ui.retainedDeadExecutors": "100000",
            "spark.sql.ui.retainedExecutions": "100000",
            # spark.history.store.path stays unset: the app stores live in memory only.
        }
        # A file keeps paths with spaces intact; the SHS reads it from SPARK_CONF_DIR.
        (conf_dir / "spark-defaults.conf").write_text(
            "".join(f"{key} {value}\n" for key, value in settings.items()), encoding="utf-8"
        )
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("SPARK_", "PYSPARK_"))
            and key not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")
        }
        env.update(
            SPARK_HOME=str(spark_home),
            SPARK_CONF_DIR=str(conf_dir),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_PUBLIC_DNS="127.0.0.1",
            SPARK_LOG_DIR=str(self.work_dir),
            SPARK_PID_DIR=str(self.work_dir),
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            SPARK_HISTORY_OPTS=" ".join(
                _java_opt(opt)
                for opt in (f"-Djava.io.tmpdir={tmp_dir}", f"-Dspark.history.ui.port={port}")
            ),
        )
        stdout_path = self.work_dir / f"shs-{launch}.stdout.log"
        self._stderr_path = self.work_dir / f"shs-{launch}.stderr.log"
        stdout = stdout_path.open("wb")
        self._log_files.append(stdout)
        stderr = self._stderr_path.open("wb")
        self._log_files.append(stderr)
        self._proc = subprocess.Popen(
            [str(spark_home / "bin" / "spark-class"), SHS_MAIN_CLASS],
            cwd=self.work_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # own process group: stop() kills the launcher and the JVM
        )
        self.base_url = f"http://127.0.0.1:{port}"

    def _startup_failure(self, reason: str) -> OracleError:
        stderr = _tail(self._stderr_path) if self._stderr_path else ""
        return OracleError(
            f"History Server {reason} (work dir {self.work_dir}); "
            f"last lines of its stderr:\n{stderr}"
        )

    def _wait_until_listed(self, began: float) -> None:
        """Poll the listing until it holds every log or has not changed for `settle_s`."""
        expected = sum(1 for entry in self.staged.values() if shs_reads(entry))
        deadline = began + self.startup_timeout_s
        last_keys: frozenset[tuple[str, str | None]] | None = None
        last_change = 0.0
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise self._startup_failure(f"exited with status {self._proc.returncode}")
            now = time.monotonic()
            if now > deadline:
                raise self._startup_failure(
                    f"did not finish listing within {self.startup_timeout_s:.0f} s"
                )
            try:
                apps = self._get_json("/applications", _LISTING_QUERY, timeout=5.0)
            except (OSError, OracleError, ValueError):
                # Not listening yet, or the REST servlet is not attached yet (an HTML page).
                apps = None
            if isinstance(apps, list):
                if self.listening_seconds == 0.0:
                    self.listening_seconds = now - began
                keys = frozenset(
                    (app["id"], attempt.get("attemptId"))
                    for app in apps
                    for attempt in app.get("attempts", [])
                )
                if keys != last_keys:
                    last_keys, last_change = keys, now
                self._apps = apps
                progress = self._parse_progress()
                if len(keys) + len(progress.failed) >= expected:
                    return
                stable_s = now - last_change
                quiet = (bool(keys) or progress.started) and not progress.in_flight
                if stable_s >= self.settle_s and (quiet or stable_s >= 6 * self.settle_s):
                    return
            time.sleep(0.25)

    def _parse_progress(self) -> _ParseProgress:
        """Read from the SHS log which staged entries it is parsing or failed to parse.

        Best effort, only to decide sooner: if these INFO/ERROR messages change in some Spark
        version, the listing still counts as complete once it has not changed for a while.
        """
        progress = _ParseProgress()
        if self._stderr_path is None:
            return progress
        try:
            text = self._stderr_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return progress
        stage_path = (self.work_dir / "eventlogs").resolve().as_posix().rstrip("/") + "/"
        pending: dict[str, int] = {}
        for match in _PARSE_EVENT.finditer(text):
            kind, location = match.group("kind"), match.group("location")
            # Hadoop prints file:/path; accept file:///path too.
            location = re.sub(r"^file:(//)?", "", location)
            if not location.startswith(stage_path):
                continue
            name = location.removeprefix(stage_path).split("/", 1)[0]
            progress.started = True
            if kind == "Parsing":
                pending[name] = pending.get(name, 0) + 1
            elif kind == "Finished parsing":
                pending[name] = pending.get(name, 0) - 1
            else:
                progress.failed.add(name)
        progress.failed &= self.staged.keys()
        progress.in_flight = {n for n, count in pending.items() if count > 0} - progress.failed
        return progress

    def _map_logs(self) -> None:
        """Find the staged entry behind every listed attempt; the rest is `unavailable`."""
        self._log_of_attempt = {}
        for app in self._apps:
            for attempt in app.get("attempts", []):
                key = (app["id"], attempt.get("attemptId"))
                entry = next(
                    (e for e in self.staged.values() if _name_matches_app(e.name, *key)), None
                )
                if entry is None:
                    entry = self._entry_from_logs_zip(*key)
                if entry is not None:
                    self._log_of_attempt[key] = entry
        used = {entry.name for entry in self._log_of_attempt.values()}
        self.unavailable = sorted(
            (entry for name, entry in self.staged.items() if name not in used),
            key=lambda entry: str(entry.source),
        )

    def _entry_from_logs_zip(self, app_id: str, attempt_id: str | None) -> StagedLog | None:
        # The `logs` endpoint zips the attempt's log under its name in the log directory.
        data = self._get_bytes(self._app_path(app_id, attempt_id, resolve=False) + "/logs")
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            tops = {name.split("/", 1)[0] for name in archive.namelist()}
        matches = [self.staged[name] for name in sorted(tops) if name in self.staged]
        return matches[0] if len(matches) == 1 else None

    # ---------------------------------------------------------------- REST API

    def applications(self) -> list[dict[str, Any]]:
        """Return `/applications?minDate=1970-01-01`: every app with its `attempts`."""
        apps: list[dict[str, Any]] = self._get_json("/applications", _LISTING_QUERY)
        return apps

    def app_ids(self) -> list[str]:
        """Return the ids of the apps listed at start-up, in the SHS's order."""
        return [app["id"] for app in self._apps]

    def sql(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return every SQL execution of an app attempt (details=true, planDescription=false).

        `attempt_id=None` picks the only attempt; apps with several attempts need one.
        The first request for an app makes the SHS replay its whole log.

        Raises:
            OracleHTTPError: the SHS could not load the app (e.g. a bad line mid-log).
            ValueError: the app is not listed, or has several attempts and none was given.
        """
        base = self._app_path(app_id, attempt_id) + "/sql"
        executions: list[dict[str, Any]] = []
        offset = 0
        while True:
            page = self._get_json(
                base,
                {
                    "details": "true",
                    "planDescription": "false",
                    "offset": str(offset),
                    "length": str(_SQL_PAGE_LENGTH),
                },
            )
            executions.extend(page)
            if len(page) < _SQL_PAGE_LENGTH:
                return executions
            offset += len(page)

    def sql_execution(
        self, app_id: str, execution_id: int, attempt_id: str | None = None
    ) -> dict[str, Any]:
        """Return one SQL execution, with its plan description (for debugging)."""
        path = self._app_path(app_id, attempt_id) + f"/sql/{execution_id}"
        execution: dict[str, Any] = self._get_json(
            path, {"details": "true", "planDescription": "true"}
        )
        return execution

    def stage_tasks(
        self, app_id: str, stage_id: int, attempt: int, attempt_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Return the taskList of one stage attempt, with `accumulatorUpdates` (for debugging).

        `attempt` is the stage attempt; `attempt_id` the application attempt, as for `sql`.
        """
        path = self._app_path(app_id, attempt_id) + f"/stages/{stage_id}/{attempt}/taskList"
        tasks: list[dict[str, Any]] = self._get_json(
            path, {"offset": "0", "length": str(_TASK_PAGE_LENGTH)}
        )
        return tasks

    def stages(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return `/stages`: every stage attempt the SHS knows, newest first."""
        stages: list[dict[str, Any]] = self._get_json(
            self._app_path(app_id, attempt_id) + "/stages"
        )
        return stages

    def task_summary(
        self,
        app_id: str,
        stage_id: int,
        attempt: int,
        quantiles: Sequence[float],
        attempt_id: str | None = None,
    ) -> dict[str, Any] | None:
        """Return a stage attempt's `taskSummary` at the given quantiles, or None on a 404
        (Spark's "no tasks reported metrics"). Values Spark cannot give are NaN floats."""
        path = self._app_path(app_id, attempt_id) + f"/stages/{stage_id}/{attempt}/taskSummary"
        try:
            summary: dict[str, Any] = self._get_json(
                path, {"quantiles": ",".join(repr(float(q)) for q in quantiles)}
            )
        except OracleHTTPError as err:
            if err.status == 404:
                return None
            raise
        return summary

    def executors(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return `/allexecutors`: every executor and the driver, removed ones included."""
        path = self._app_path(app_id, attempt_id) + "/allexecutors"
        executors: list[dict[str, Any]] = self._get_json(path)
        return executors

    def jobs(self, app_id: str, attempt_id: str | None = None) -> list[dict[str, Any]]:
        """Return `/jobs`: every job, newest first."""
        jobs: list[dict[str, Any]] = self._get_json(self._app_path(app_id, attempt_id) + "/jobs")
        return jobs

    def log_path_of(self, app_id: str, attempt_id: str | None = None) -> Path:
        """Return the original log file or directory the SHS read an app attempt from.

        Raises:
            KeyError: the attempt is not listed or its log could not be identified.
            ValueError: the app has several attempts and none was given.
        """
        attempt_id = self._resolve_attempt(app_id, attempt_id)
        return self._log_of_attempt[(app_id, attempt_id)].source

    def get_json(self, path: str, params: dict[str, str] | None = None) -> Any:
        """GET `/api/v1<path>` and decode it (any endpoint, for debugging)."""
        return self._get_json(path, params)

    def _resolve_attempt(self, app_id: str, attempt_id: str | None) -> str | None:
        app = next((a for a in self._apps if a["id"] == app_id), None)
        if app is None:
            raise ValueError(f"{app_id} is not listed by the History Server")
        if attempt_id is not None:
            return attempt_id
        attempt_ids: list[str | None] = [a.get("attemptId") for a in app.get("attempts", [])]
        if len(attempt_ids) == 1:
            return attempt_ids[0]
        raise ValueError(f"{app_id} has attempts {attempt_ids}; say which one")

    def _app_path(self, app_id: str, attempt_id: str | None, *, resolve: bool = True) -> str:
        if resolve:
            attempt_id = self._resolve_attempt(app_id, attempt_id)
        path = "/applications/" + urllib.parse.quote(app_id, safe="")
        if attempt_id is not None:
            path += "/" + urllib.parse.quote(attempt_id, safe="")
        return path

    def _get_json(
        self, path: str, params: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> Any:
        return json.loads(self._get_bytes(path, params, timeout=timeout))

    def _get_bytes(
        self, path: str, params: dict[str, str] | None = None, *, timeout: float | None = None
    ) -> bytes:
        if not self.base_url:
            raise OracleError("the History Server is not running")
        url = f"{self.base_url}/api/v1{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with self._opener.open(url, timeout=timeout or self.request_timeout_s) as response:
                body: bytes = response.read()
                return body
        except urllib.error.HTTPError as err:
            with contextlib.closing(err):
                text = err.read().decode("utf-8", errors="replace")
            raise OracleHTTPError(url, err.code, text) from None


def _attempts_by_path(log_dirs: Iterable[Path]) -> dict[Path, tuple[str, str | None]]:
    """The (application id, attempt id) each readable log of `log_dirs` names in its head, by
    resolved path; logs whose head cannot be read are left out (the SHS decides on them)."""
    from analyzer.eventlog.discover import discover_applications

    out: dict[Path, tuple[str, str | None]] = {}
    for log_dir in log_dirs:
        if not log_dir.is_dir():
            continue  # `_event_log_entries` says so
        for info in discover_applications(str(log_dir)):
            if info.app_id is not None and info.error is None:
                out[Path(info.path).resolve()] = (info.app_id, info.attempt_id)
    return out


def _event_log_entries(log_dirs: Iterable[Path]) -> list[StagedLog]:
    entries = []
    for log_dir in log_dirs:
        if not log_dir.is_dir():
            raise OracleError(f"event-log directory {log_dir} does not exist")
        for path in sorted(log_dir.iterdir()):
            if is_event_log_entry(path):
                entries.append(StagedLog(name=path.name, source=path.resolve()))
    return entries


def _stop_process_group(proc: subprocess.Popen[bytes], grace_s: float = 20.0) -> None:
    """SIGTERM the process group of `proc`, SIGKILL it if needed, and reap `proc`.

    spark-class runs a short-lived launcher JVM, then execs the SHS JVM in its own place, so the
    group leader `proc` is the SHS itself and nothing else is left once it has exited.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace_s)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        proc.wait()
