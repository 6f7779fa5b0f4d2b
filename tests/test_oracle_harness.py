"""The History Server oracle: it starts, lists the public logs, and answers the SQL REST API."""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle import HistoryServer, OracleError
from oracle.history_server import is_event_log_entry, sanitize_app_id
from oracle.locations import PUBLIC_EVENTLOGS

# Public log entry -> the application id the History Server lists for it.
PUBLIC_APPS = {
    "aqeshuffle_eventlog.zstd": "local-1651694304852",
    "eventlog_v2_local-1623876083964": "local-1623876083964",
    "gpu_oom_eventlog.zstd": "app-20250305192829-0000",
    "join_missing_sql_end": "local-1622561780883",
    "local-1596020211915": "local-1596020211915",
    "local-1642039451826": "local-1642039451826",
    "nds_q72_dataproc_2_2.zstd": "application_1751493828576_0001",
    "python_udf_eventlog": "local-1774375206936",
    "spark2-eventlog.zstd": "local-1634253215009",
    "truncated_eventlog": "local-1622043423018",
}
# Public entries the History Server cannot read: a bad line mid-log, and a Databricks layout.
PUBLIC_UNREADABLE = ("db_sim_eventlog", "malformed_json_eventlog.zstd")

needs_public = pytest.mark.skipif(
    not PUBLIC_EVENTLOGS.is_dir(), reason=f"public event logs not found at {PUBLIC_EVENTLOGS}"
)


def present_public_apps() -> dict[Path, str]:
    """Return the public entries of PUBLIC_APPS that exist here, by resolved path."""
    return {
        (PUBLIC_EVENTLOGS / name).resolve(): app_id
        for name, app_id in PUBLIC_APPS.items()
        if (PUBLIC_EVENTLOGS / name).exists()
    }


@pytest.mark.spark
@pytest.mark.slow
@needs_public
def test_lists_every_readable_public_log(history_server: HistoryServer) -> None:
    listed = {app["id"] for app in history_server.applications()}
    for path, app_id in present_public_apps().items():
        assert app_id in listed
        assert history_server.log_path_of(app_id) == path


@pytest.mark.spark
@pytest.mark.slow
@needs_public
def test_unreadable_public_logs_are_unavailable(history_server: HistoryServer) -> None:
    unavailable = {entry.source for entry in history_server.unavailable}
    for name in PUBLIC_UNREADABLE:
        if (PUBLIC_EVENTLOGS / name).exists():
            assert (PUBLIC_EVENTLOGS / name).resolve() in unavailable
    readable = set(present_public_apps())
    assert not readable & unavailable


@pytest.mark.spark
@pytest.mark.slow
def test_history_server_is_the_pinned_spark(history_server: HistoryServer) -> None:
    assert history_server.spark_version.startswith(("3.", "4."))
    assert history_server.base_url.startswith("http://127.0.0.1:")


@pytest.mark.spark
@pytest.mark.slow
@needs_public
def test_sql_returns_plan_graph_and_metric_strings(history_server: HistoryServer) -> None:
    if not (PUBLIC_EVENTLOGS / "local-1642039451826").exists():
        pytest.skip("local-1642039451826 is not in the public set")
    executions = history_server.sql("local-1642039451826")
    assert [execution["id"] for execution in executions] == [0, 1]
    for execution in executions:
        assert execution["status"] == "COMPLETED"
        assert execution["nodes"] and execution["edges"]
        node_ids = [node["nodeId"] for node in execution["nodes"]]
        assert node_ids == sorted(node_ids, reverse=True)
        for edge in execution["edges"]:
            assert {edge["fromId"], edge["toId"]} <= set(node_ids)
        metrics = [metric for node in execution["nodes"] for metric in node["metrics"]]
        assert metrics
        assert all(set(metric) == {"name", "value"} for metric in metrics)
        assert all(isinstance(metric["value"], str) for metric in metrics)
    # Size and timing metrics come with per-task statistics and the stage/task of the maximum.
    values = [m["value"] for e in executions for n in e["nodes"] for m in n["metrics"]]
    assert any(value.startswith("total (min, med, max (stageId: taskId))\n") for value in values)


@pytest.mark.spark
@pytest.mark.slow
@needs_public
def test_stage_tasks_lists_the_tasks_of_a_stage(history_server: HistoryServer) -> None:
    if not (PUBLIC_EVENTLOGS / "local-1642039451826").exists():
        pytest.skip("local-1642039451826 is not in the public set")
    tasks = history_server.stage_tasks("local-1642039451826", stage_id=0, attempt=0)
    assert len(tasks) == 8
    assert all(task["status"] == "SUCCESS" for task in tasks)


@pytest.mark.spark
@pytest.mark.slow
def test_unknown_app_is_a_value_error(history_server: HistoryServer) -> None:
    with pytest.raises(ValueError, match="not listed"):
        history_server.sql("local-0")


def test_missing_log_dir_fails_before_launch(tmp_path: Path) -> None:
    with (
        pytest.raises(OracleError, match="does not exist"),
        HistoryServer([tmp_path / "nowhere"], tmp_path / "work"),
    ):
        pass


def test_only_event_logs_are_staged(tmp_path: Path) -> None:
    for name in ("README.md", "notes.txt", ".hidden", "local-1.inprogress", "app-1.zstd"):
        (tmp_path / name).write_text("")
    (tmp_path / "eventlog_v2_local-1").mkdir()
    (tmp_path / "expected").mkdir()
    staged = sorted(path.name for path in tmp_path.iterdir() if is_event_log_entry(path))
    assert staged == ["app-1.zstd", "eventlog_v2_local-1", "local-1.inprogress"]


def test_sanitize_app_id_follows_spark() -> None:
    assert sanitize_app_id("application_1516285256255_0012") == "application_1516285256255_0012"
    assert sanitize_app_id("My App: v1.0/x") == "my-app--v1_0-x"
