"""Remote-storage options: what each fsspec driver is given, and how bad values are refused."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from analyzer.errors import UsageError
from analyzer.eventlog.remote import (
    DEFAULT_REMOTE_TIMEOUT_S,
    REMOTE_ATTEMPTS,
    RemoteOptions,
    make_remote_options,
    parse_storage_options,
)


def test_every_s3_request_is_bounded_by_default() -> None:
    kwargs = RemoteOptions().driver_kwargs("s3", holds_the_log=True)
    assert DEFAULT_REMOTE_TIMEOUT_S == 60
    assert kwargs["config_kwargs"] == {
        "connect_timeout": 60,
        "read_timeout": 60,
        "retries": {"total_max_attempts": 1},
    }
    assert kwargs["use_listings_cache"] is False
    assert RemoteOptions().attempts("s3a") == REMOTE_ATTEMPTS == 2


def test_generic_options_in_each_drivers_words() -> None:
    options = RemoteOptions(timeout_s=7.5, endpoint_url="http://127.0.0.1:9000", anonymous=True)
    s3 = options.driver_kwargs("s3", holds_the_log=True)
    assert s3["endpoint_url"] == "http://127.0.0.1:9000"
    assert s3["anon"] is True
    gcs = options.driver_kwargs("gs", holds_the_log=True)
    assert gcs["requests_timeout"] == 7.5
    assert gcs["token"] == "anon"
    assert gcs["endpoint_url"] == "http://127.0.0.1:9000"
    abfs = RemoteOptions(timeout_s=7.5, anonymous=True).driver_kwargs("abfs", holds_the_log=True)
    assert abfs == {
        "connection_timeout": 8,
        "read_timeout": 8,
        "use_listings_cache": False,
        "anon": True,
    }
    assert RemoteOptions(timeout_s=3).driver_kwargs("ftp", holds_the_log=True) == {"timeout": 3}
    profiled = RemoteOptions(profile="analytics").driver_kwargs("s3", holds_the_log=True)
    assert profiled["profile"] == "analytics"


def test_command_line_options_go_to_the_storage_that_holds_the_log() -> None:
    options = make_remote_options(
        endpoint_url="http://127.0.0.1:9000", storage_options=["default_block_size=65536"]
    )
    outer = options.driver_kwargs("zip", holds_the_log=False)
    assert outer == {}
    inner = options.driver_kwargs("s3", holds_the_log=True)
    assert inner["endpoint_url"] == "http://127.0.0.1:9000"
    assert inner["default_block_size"] == 65536


def test_storage_option_values_are_json_when_they_parse() -> None:
    assert parse_storage_options(
        ["anon=true", "block=8", "region=eu-west-1", 'cfg={"a": 1}', "empty="]
    ) == {"anon": True, "block": 8, "region": "eu-west-1", "cfg": {"a": 1}, "empty": ""}
    for bad in ("novalue", "=x", "a b=1", "x.y=1"):
        with pytest.raises(UsageError):
            parse_storage_options([bad])


def test_config_file_per_scheme_and_command_line_wins(tmp_path: Path) -> None:
    config = tmp_path / "remote.toml"
    config.write_text(
        "timeout_s = 12\n"
        '[s3]\nendpoint_url = "http://127.0.0.1:1"\nprofile = "from-file"\n'
        '[gs]\ntoken = "anon"\n'
        '[abfs]\naccount_name = "logs"\n'
    )
    options = make_remote_options(config_path=str(config))
    assert options.timeout_s == 12
    s3 = options.driver_kwargs("s3", holds_the_log=True)
    assert (s3["endpoint_url"], s3["profile"]) == ("http://127.0.0.1:1", "from-file")
    assert options.driver_kwargs("gcs", holds_the_log=False)["token"] == "anon"
    assert options.driver_kwargs("az", holds_the_log=True)["account_name"] == "logs"
    overridden = make_remote_options(
        config_path=str(config), timeout_s=3, endpoint_url="http://127.0.0.1:2", profile="cli"
    )
    assert overridden.timeout_s == 3
    s3 = overridden.driver_kwargs("s3", holds_the_log=True)
    assert (s3["endpoint_url"], s3["profile"]) == ("http://127.0.0.1:2", "cli")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("timeout_s = 'soon'", "timeout_s must be a number"),
        ("s3 = 1", "is not a table"),
        ("[s3", "not valid TOML"),
        ("timeout_s = -1", "--remote-timeout must be above 0"),
    ],
)
def test_bad_config_files_are_usage_errors(tmp_path: Path, text: str, says: str) -> None:
    config = tmp_path / "remote.toml"
    config.write_text(text)
    with pytest.raises(UsageError, match=says):
        make_remote_options(config_path=str(config))


@pytest.mark.parametrize("timeout_s", [0, -1, float("nan"), float("inf"), 10**6])
def test_timeouts_out_of_range_are_refused(timeout_s: float) -> None:
    with pytest.raises(UsageError):
        RemoteOptions(timeout_s=timeout_s)


def test_options_fit_in_a_batch_job_and_keep_secrets_out_of_repr() -> None:
    options = make_remote_options(storage_options=["secret=hunter2"])
    assert pickle.loads(pickle.dumps(options)) == options
    assert hash(options) == hash(pickle.loads(pickle.dumps(options)))
    assert "hunter2" not in repr(options)


def test_generic_options_refused_where_they_mean_nothing() -> None:
    with pytest.raises(UsageError, match="--profile applies to s3://"):
        RemoteOptions(profile="p").driver_kwargs("gs", holds_the_log=True)
    with pytest.raises(UsageError, match="--endpoint-url applies to"):
        RemoteOptions(endpoint_url="http://x").driver_kwargs("hdfs", holds_the_log=True)
    with pytest.raises(UsageError, match="--anonymous applies to"):
        RemoteOptions(anonymous=True).driver_kwargs("ftp", holds_the_log=True)
