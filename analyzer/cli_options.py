"""The command line's shared options: one definition and one help text for each option that
several commands take, and what turns their values into the API's types."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from analyzer.errors import Strictness, UsageError

if TYPE_CHECKING:
    from analyzer.aggregate.pricing import PriceSpec
    from analyzer.eventlog.remote import RemoteOptions
    from analyzer.insights import Thresholds


def strictness_of(lenient: bool) -> Strictness:
    """`--lenient` as a strictness level."""
    return Strictness.LENIENT if lenient else Strictness.STRICT


def thresholds_of(overrides: list[str] | None) -> Thresholds:
    """`--threshold NAME=VALUE` options as thresholds (a bad one is a `UsageError`)."""
    from analyzer.insights import Thresholds

    return Thresholds().with_overrides(overrides or ())


# How remote logs are reached: the same options on every command that reads logs.
REMOTE_TIMEOUT_OPTION = typer.Option(
    None,
    "--remote-timeout",
    metavar="SECONDS",
    help="Connect and read timeout of each request to remote storage (default 60; a request "
    "is tried twice at most).",
)
ENDPOINT_URL_OPTION = typer.Option(
    None,
    "--endpoint-url",
    metavar="URL",
    help="Endpoint of the remote storage: an S3-compatible server, a GCS emulator.",
)
PROFILE_OPTION = typer.Option(None, "--profile", metavar="NAME", help="AWS profile for s3:// URLs.")
ANONYMOUS_OPTION = typer.Option(
    False, "--anonymous", help="Read remote storage without credentials (public buckets)."
)
STORAGE_OPTION = typer.Option(
    None,
    "--storage-option",
    metavar="KEY=VALUE",
    help="An option of the storage's fsspec driver (repeatable; VALUE as JSON if it parses).",
)
REMOTE_CONFIG_OPTION = typer.Option(
    None,
    "--remote-config",
    metavar="FILE",
    envvar="SPARK_EXPLAIN_REMOTE_CONFIG",
    help="A TOML file of remote-storage settings: timeout_s, and driver options under [s3], "
    "[gcs], [abfs]... (docs/cli.md).",
)


def remote_options_of(
    timeout_s: float | None,
    endpoint_url: str | None,
    profile: str | None,
    anonymous: bool,
    storage_options: list[str] | None,
    config_path: str | None,
) -> RemoteOptions:
    """The remote-storage options of a command (a bad one is a `UsageError`)."""
    from analyzer.eventlog.remote import make_remote_options

    return make_remote_options(
        timeout_s=timeout_s,
        endpoint_url=endpoint_url,
        profile=profile,
        anonymous=anonymous,
        storage_options=storage_options or (),
        config_path=config_path,
    )


# Options that `report` and `diff` share: one definition, the same help.
DIR_OPTION = typer.Option(
    None,
    "--dir",
    "-d",
    metavar="DIR",
    help="Find the logs named in this log directory: by application id or by the log's name.",
)
OUTPUT_OPTION = typer.Option(
    None,
    "-o",
    "--output",
    metavar="FILE",
    help="Write here (atomically) instead of standard output.",
)
FORMAT_OPTION = typer.Option(
    None,
    "--format",
    "-f",
    metavar="FORMAT",
    help="text, html, json or markdown; by default the output file's extension decides, else text.",
)
WIDTH_OPTION = typer.Option(
    None,
    "--width",
    metavar="COLUMNS",
    help="Columns the text output fits in (default: the terminal's width, 100 when not a "
    "terminal).",
)
LENIENT_OPTION = typer.Option(
    False, "--lenient", help="Skip malformed lines (and count them) instead of stopping."
)
NO_COLOR_OPTION = typer.Option(False, "--no-color", help="Never colour the text output.")
THRESHOLD_OPTION = typer.Option(
    None,
    "--threshold",
    metavar="NAME=VALUE",
    help="Tune a finding rule (repeatable; names in docs/findings.md).",
)
REDACT_OPTION = typer.Option(
    False,
    "--redact",
    help="Replace literals, paths, hosts and users with stable tokens, and secrets in free text "
    "with *********(redacted) (docs/redaction.md).",
)

PRICE_OPTION = typer.Option(
    None,
    "--price-per-core-hour",
    metavar="PRICE",
    help="Price of one core for one hour: the report shows the run's cost and each finding's "
    "time lost in money (docs/cost.md).",
)
PRICE_FILE_OPTION = typer.Option(
    None,
    "--price-file",
    metavar="FILE",
    envvar="SPARK_EXPLAIN_PRICE_FILE",
    help="A TOML file of prices per cluster or instance type, matched on the log's Spark "
    "properties (docs/cost.md); --price-per-core-hour wins over it.",
)


def prices_of(price_per_core_hour: str | None, price_file: str | None) -> PriceSpec | None:
    """The prices of a command's options (a price that is not a finite number ≥ 0 is a
    `UsageError`; a bad file a `PriceFileError`).

    The price is taken as the text given and parsed here, so that `abc` is one `usage` line like
    a negative price, not click's usage block."""
    if price_per_core_hour is None and price_file is None:
        return None
    from analyzer.aggregate.pricing import PriceSpec, read_price_table

    core_hour = None if price_per_core_hour is None else _price(price_per_core_hour)
    table = read_price_table(price_file) if price_file is not None else None
    return PriceSpec(core_hour=core_hour, table=table)


def _price(text: str) -> float:
    """Parse `--price-per-core-hour`: a finite number ≥ 0 (`0.05`, `1e-3`).

    >>> _price(" 0.25 ")
    0.25
    """
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise UsageError(
            f"--price-per-core-hour must be a number ≥ 0, not {text!r}",
            hint="give the price of one core for one hour, e.g. 0.05",
        )
    return value
