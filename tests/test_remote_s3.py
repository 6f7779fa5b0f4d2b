"""Remote logs read from a real S3 server on this machine (moto's server mode on 127.0.0.1).

Every command runs as a user would run it: `spark-explain` in a child process, credentials from
AWS's environment variables, the endpoint from `--endpoint-url` (or `AWS_ENDPOINT_URL`, or a
config file). What is read from S3 must equal what is read from local disk, and every failure
(a missing key or bucket, wrong credentials, a storage that goes away mid-read or never answers,
a file system that cannot be made) is one line on stderr with its slug, in bounded time.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from oracle.locations import PUBLIC_EVENTLOGS, SAMPLE_EVENTLOGS
from s3_server import (
    BUCKET,
    S3Server,
    SilentServer,
    VanishingRelay,
    clean_aws_env,
    running,
)
from typer.testing import CliRunner

from analyzer.cli import app

SINGLE = SAMPLE_EVENTLOGS / "local-1795320174558.zstd"
ROLLING = SAMPLE_EVENTLOGS / "eventlog_v2_local-1795320584980"
PLAIN = SAMPLE_EVENTLOGS / "local-1795320224872"
LARGE_PLAIN = PUBLIC_EVENTLOGS / "join_missing_sql_end"
"""A 1.6 MB uncompressed public log: read in several ranged requests, so a storage that goes
away can go away in the middle of it."""
PREFIX_LOGS = (SINGLE, ROLLING, PLAIN)
"""The logs of the `spark-events/` prefix that `apps` and `batch` read."""

COMMAND_BOUND_S = 60
"""No command here may take longer, whatever the storage does."""

SERVER_AND_CHILD = pytest.mark.slow
"""Tests that run `spark-explain` in a child process against a storage server on this machine
(moto's S3 server, or one that never answers): seconds each, left out of the quick loop like the
History Server tests."""


@pytest.fixture(scope="module")
def s3(s3_server: S3Server) -> S3Server:
    """The session's S3 server, with the sample logs this module reads uploaded."""
    s3_server.upload(SINGLE, f"single/{SINGLE.name}")
    s3_server.upload(ROLLING, f"rolling/{ROLLING.name}")
    for log in PREFIX_LOGS:
        s3_server.upload(log, f"spark-events/{log.name}")
    return s3_server


def run(
    *args: str, env: dict[str, str], timeout_s: float = COMMAND_BOUND_S
) -> subprocess.CompletedProcess[str]:
    """Run `spark-explain ARGS` in a child process with `env`."""
    return subprocess.run(
        [sys.executable, "-c", "from analyzer.cli import main; main()", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def one_error_line(result: subprocess.CompletedProcess[str], slug: str) -> str:
    """The single stderr line of a failed command, checked: exit 1, no traceback, the slug."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert lines[0].endswith(f"[{slug}]"), lines[0]
    return lines[0]


@functools.cache
def local_report(path: Path, *args: str) -> str:
    """The report of a local log, made in this process (what the S3 one must equal)."""
    result = CliRunner().invoke(app, ["report", str(path), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def without_log_path(json_text: str) -> dict[str, object]:
    doc = json.loads(json_text)
    doc["log"].pop("path")
    return doc  # type: ignore[no-any-return]


@SERVER_AND_CHILD
def test_single_file_reads_as_the_local_file(s3: S3Server) -> None:
    url = f"s3://{BUCKET}/single/{SINGLE.name}"
    for fmt in ("text", "json"):
        result = run("report", url, "-f", fmt, "--endpoint-url", s3.endpoint, env=s3.env())
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        if fmt == "text":
            assert result.stdout == local_report(SINGLE)
        else:
            assert without_log_path(result.stdout) == without_log_path(
                local_report(SINGLE, "-f", "json")
            )


@SERVER_AND_CHILD
def test_rolling_directory_reads_as_the_local_one(s3: S3Server) -> None:
    url = f"s3://{BUCKET}/rolling/{ROLLING.name}"
    result = run("report", url, "--endpoint-url", s3.endpoint, env=s3.env())
    assert result.returncode == 0, result.stderr
    assert result.stdout == local_report(ROLLING)


@SERVER_AND_CHILD
def test_endpoint_from_aws_environment_variable(s3: S3Server) -> None:
    url = f"s3://{BUCKET}/single/{SINGLE.name}"
    result = run("report", url, env=s3.env(AWS_ENDPOINT_URL=s3.endpoint))
    assert result.returncode == 0, result.stderr
    assert result.stdout == local_report(SINGLE)


@SERVER_AND_CHILD
def test_endpoint_and_timeout_from_a_config_file(s3: S3Server, tmp_path: Path) -> None:
    config = tmp_path / "remote.toml"
    config.write_text(f'timeout_s = 20\n\n[s3]\nendpoint_url = "{s3.endpoint}"\n')
    url = f"s3://{BUCKET}/single/{SINGLE.name}"
    result = run("report", url, "--remote-config", str(config), env=s3.env())
    assert result.returncode == 0, result.stderr
    assert result.stdout == local_report(SINGLE)
    by_env = run("report", url, env=s3.env(SPARK_EXPLAIN_REMOTE_CONFIG=str(config)))
    assert by_env.returncode == 0, by_env.stderr
    assert by_env.stdout == result.stdout


@SERVER_AND_CHILD
def test_apps_over_a_prefix_lists_what_the_local_directory_holds(
    s3: S3Server, tmp_path: Path
) -> None:
    local_dir = tmp_path / "spark-events"
    local_dir.mkdir()
    for log in PREFIX_LOGS:
        if log.is_dir():
            shutil.copytree(log, local_dir / log.name)
        else:
            shutil.copy(log, local_dir / log.name)
    url = f"s3://{BUCKET}/spark-events"
    result = run("apps", url, "--json", "--endpoint-url", s3.endpoint, env=s3.env())
    assert result.returncode == 0, result.stderr
    local = run("apps", str(local_dir), "--json", env=clean_aws_env())
    assert local.returncode == 0, local.stderr

    def comparable(text: str, root: str) -> list[dict[str, object]]:
        apps = json.loads(text)
        for listed in apps:
            assert listed["path"].startswith(root)
            listed["path"] = listed["path"][len(root) :]
        return apps  # type: ignore[no-any-return]

    remote_apps = comparable(result.stdout, url)
    assert remote_apps == comparable(local.stdout, str(local_dir))
    assert [a["completed"] for a in remote_apps] == [True] * 3
    assert {a["layout"] for a in remote_apps} == {"single", "rolling"}


@pytest.mark.slow
def test_batch_over_a_prefix_and_its_incremental_rerun(s3: S3Server, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    url = f"s3://{BUCKET}/batch-events"
    for log in PREFIX_LOGS[:2]:
        s3.upload(log, f"batch-events/{log.name}")
    args = ("batch", url, "-o", str(out), "-j", "1", "--endpoint-url", s3.endpoint)
    first = run(*args, env=s3.env())
    assert first.returncode == 0, first.stderr
    assert "2 of 2 logs selected: 2 analyzed, 0 unchanged, 0 failed" in first.stdout
    assert len(list((out / "apps").glob("*/report.json"))) == 2
    again = run(*args, env=s3.env())
    assert again.returncode == 0, again.stderr
    assert "2 of 2 logs selected: 0 analyzed, 2 unchanged, 0 failed" in again.stdout
    s3.upload(PREFIX_LOGS[2], f"batch-events/{PREFIX_LOGS[2].name}")
    third = run(*args, env=s3.env())
    assert third.returncode == 0, third.stderr
    assert "3 of 3 logs selected: 1 analyzed, 2 unchanged, 0 failed" in third.stdout
    assert len(list((out / "apps").glob("*/report.json"))) == 3


@SERVER_AND_CHILD
def test_missing_key_is_one_line(s3: S3Server) -> None:
    url = f"s3://{BUCKET}/single/nothing-here.zstd"
    result = run("report", url, "--endpoint-url", s3.endpoint, env=s3.env())
    line = one_error_line(result, "not-found")
    assert url in line
    assert "no such file or directory" in line


@SERVER_AND_CHILD
def test_missing_bucket_is_one_line_naming_the_bucket(s3: S3Server) -> None:
    url = "s3://no-such-bucket/spark-events/app-1.zstd"
    for command in ("report", "apps"):
        result = run(command, url, "--endpoint-url", s3.endpoint, env=s3.env())
        line = one_error_line(result, "not-found")
        assert "no such bucket 'no-such-bucket'" in line


@SERVER_AND_CHILD
@pytest.mark.parametrize("wrong", ["secret", "key"])
def test_bad_credentials_are_one_line(s3: S3Server, wrong: str) -> None:
    env = s3.env()
    if wrong == "secret":
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    else:
        env["AWS_ACCESS_KEY_ID"] = "AKIAIOSFODNN7EXAMPLE"
    url = f"s3://{BUCKET}/single/{SINGLE.name}"
    for command, target in (("report", url), ("apps", f"s3://{BUCKET}/spark-events")):
        result = run(command, target, "--endpoint-url", s3.endpoint, env=env)
        line = one_error_line(result, "remote-storage")
        assert "access denied" in line
        assert "credentials" in line


@SERVER_AND_CHILD
def test_storage_that_goes_away_mid_read_is_one_line(s3: S3Server) -> None:
    url = s3.upload(LARGE_PLAIN, f"vanishing/{LARGE_PLAIN.name}")
    size = LARGE_PLAIN.stat().st_size
    relay = VanishingRelay(s3.port, 1 << 20, size)
    with running(relay):
        started = time.monotonic()
        result = run(
            "report",
            url,
            "--endpoint-url",
            relay.endpoint,
            "--storage-option",
            "default_block_size=65536",
            env=s3.env(),
        )
        elapsed_s = time.monotonic() - started
    assert relay.gone.is_set()
    line = one_error_line(result, "remote-storage")
    assert f"{url} (byte " in line
    assert "read failed" in line
    assert result.stdout == ""
    assert elapsed_s < COMMAND_BOUND_S


@pytest.mark.slow
def test_batch_records_a_storage_that_goes_away_per_log_and_goes_on(
    s3: S3Server, tmp_path: Path
) -> None:
    prefix = "vanishing-batch"
    s3.upload(LARGE_PLAIN, f"{prefix}/{LARGE_PLAIN.name}")
    s3.upload(SINGLE, f"{prefix}/{SINGLE.name}")
    url = f"s3://{BUCKET}/{prefix}"
    out = tmp_path / "reports"
    size = LARGE_PLAIN.stat().st_size
    # Listing and fingerprints read only the ends of each log: the relay goes away when the
    # worker reads the middle of the large one.
    relay = VanishingRelay(s3.port, 1 << 20, size - (64 << 10))
    common = ("-o", str(out), "-j", "1", "--storage-option", "default_block_size=65536")
    with running(relay):
        result = run("batch", url, *common, "--endpoint-url", relay.endpoint, env=s3.env())
    assert relay.gone.is_set()
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "internal error" not in result.stdout + result.stderr
    assert "2 of 2 logs selected" in result.stdout
    index = (out / "index.html").read_text()
    assert "[remote-storage]" in index
    assert "read failed" in index
    # A storage that went away is not the log's fault: the next run reads the log again.
    again = run("batch", url, *common, "--endpoint-url", s3.endpoint, env=s3.env())
    assert again.returncode == 0, again.stderr
    assert "0 failed" in again.stdout
    assert len(list((out / "apps").glob("*/report.json"))) == 2


@SERVER_AND_CHILD
@pytest.mark.parametrize("command", ["report", "batch"])
def test_endpoint_that_never_answers_fails_within_the_timeout(command: str, tmp_path: Path) -> None:
    silent = SilentServer()
    env = clean_aws_env(AWS_ACCESS_KEY_ID="AKIAIOSFODNN7EXAMPLE", AWS_SECRET_ACCESS_KEY="x")
    target = f"s3://{BUCKET}/spark-events"
    extra = ("-o", str(tmp_path / "out")) if command == "batch" else ()
    with running(silent):
        started = time.monotonic()
        result = run(
            command, target, *extra, "--endpoint-url", silent.endpoint, "--remote-timeout", "2",
            env=env,
        )  # fmt: skip
        elapsed_s = time.monotonic() - started
    line = one_error_line(result, "remote-storage")
    assert "no answer within 2 s" in line
    assert "--remote-timeout" in line
    # Two tries of the first request, each up to the timeout (4 s), plus start-up: far from the
    # 422 s a hung endpoint took before the timeout existed.
    assert elapsed_s < 25, elapsed_s


@SERVER_AND_CHILD
@pytest.mark.parametrize(
    ("url", "slug", "says"),
    [
        # A closed port: the FTP file system connects when it is made.
        ("ftp://127.0.0.1:1/spark-events/app-1", "remote-storage", "cannot connect"),
        # The zip file system opens its archive, on S3, when it is made.
        (f"zip://app-1::s3://{BUCKET}/single/missing.zip", "not-found", "no such file"),
        # No HDFS driver here (pyarrow), or a name node that is not there.
        ("hdfs://127.0.0.1:1/spark-events/app-1", "remote-storage", "hdfs://"),
    ],
)
def test_file_system_that_cannot_be_made_is_one_line(
    s3: S3Server, url: str, slug: str, says: str
) -> None:
    env = s3.env(AWS_ENDPOINT_URL=s3.endpoint)
    result = run("report", url, "--remote-timeout", "5", env=env)
    line = one_error_line(result, slug)
    assert url in line
    assert says in line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--remote-timeout", "0"), "--remote-timeout must be above 0"),
        (("--profile", "analytics"), "--profile applies to s3:// URLs, not gs://"),
        (("--storage-option", "no-equals-sign"), "--storage-option takes KEY=VALUE"),
        (("--remote-config", "/nonexistent/remote.toml"), "cannot read the remote config file"),
    ],
)
def test_bad_remote_options_are_usage_errors(
    runner: CliRunner, args: tuple[str, ...], says: str
) -> None:
    result = runner.invoke(app, ["report", "gs://bucket/app-1.zstd", *args])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert says in result.stderr
