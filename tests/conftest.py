"""Shared fixtures of the test suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from oracle import HistoryServer, missing_requirement
from oracle.locations import PUBLIC_CORPUS, PUBLIC_EVENTLOGS, SAMPLE_EVENTLOGS
from s3_server import BUCKET, S3Server
from typer.testing import CliRunner


@pytest.fixture
def runner() -> CliRunner:
    """A typer test runner for the command line (`runner.invoke(app, [...])`)."""
    return CliRunner()


@pytest.fixture(scope="session")
def history_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HistoryServer]:
    """One Spark History Server for the whole run, over sample_eventlogs/ and both public sets.

    Tests that use it must be marked `spark`. Skips when Java or pyspark is missing.
    """
    reason = missing_requirement()
    if reason is not None:
        pytest.skip(reason)
    # ../shared's public logs first: where a corpus log has the same application id, the
    # server reads the shared one (HistoryServer.shadowed lists the others).
    log_dirs = [d for d in (PUBLIC_EVENTLOGS, SAMPLE_EVENTLOGS, PUBLIC_CORPUS) if d.is_dir()]
    with HistoryServer(log_dirs, tmp_path_factory.mktemp("history_server")) as server:
        yield server


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A real S3 server for the whole run: moto's server mode in a child process on 127.0.0.1 and
    a free port, with an empty bucket `s3_server.BUCKET`, then IAM authentication turned on
    (`S3Server.credentials` and `S3Server.env()` hold the one accepted key).

    Skips when moto or s3fs is missing (both are in the `dev` extra).
    """
    pytest.importorskip("moto")
    pytest.importorskip("s3fs")
    server = S3Server()
    try:
        server.client().create_bucket(Bucket=BUCKET)
        server.enable_auth()
        yield server
    finally:
        server.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n`), run every test that needs a JVM in one worker: the History
    Server and the Spark session are started once per run, as without workers."""
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("jvm"))
