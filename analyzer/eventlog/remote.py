"""How remote storage is reached: a time limit and storage options, turned into fsspec driver
options per scheme.

fsspec's drivers wait long on a storage that does not answer: s3fs retries a request five
times, and botocore under it five times more, each waiting up to 15 s for an answer, so one
look at an endpoint that accepts connections and never answers took about 7 minutes. Here every
request of the drivers we know gets a connect and a read timeout (`RemoteOptions.timeout_s`) and
at most `REMOTE_ATTEMPTS` tries, so a dead endpoint fails in bounded time. Options the user
gives (command line, config file) go to the driver as they are, and win over these.

`remote_error` words a driver's exception as the one line the user sees: what was being done,
and whether the storage denied access, did not answer in time or could not be reached.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzer.errors import AnalyzerError, LogNotFoundError, RemoteStorageError, UsageError
from analyzer.eventlog.config_file import (
    ConfigFileError,
    check_depth,
    parse_toml,
    read_settings_file,
)

DEFAULT_REMOTE_TIMEOUT_S = 60.0
"""How long a remote request may wait for a connection, and then for each answer, in seconds."""
MAX_REMOTE_TIMEOUT_S = 86_400.0
MAX_REMOTE_CONFIG_BYTES = 1 << 20
"""The largest remote-storage config file read (real ones are a few lines)."""
REMOTE_ATTEMPTS = 2
"""Tries of one request that fails in transit (a timeout, a cut connection): the first and one
more. So a storage that never answers fails one operation after about twice the timeout."""

FAMILIES: dict[str, str] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "abfs": "abfs",
    "abfss": "abfs",
    "az": "abfs",
    "ftp": "ftp",
}
"""URL scheme → the driver family whose options it takes (s3fs, gcsfs, adlfs, fsspec's ftp)."""

BUCKET_WORDS = {"s3": "bucket", "gcs": "bucket", "abfs": "container"}
"""Families whose first path component is a bucket (or container), and its name there."""

_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

StorageValue = str | int | float | bool | None | list[Any] | dict[str, Any]
"""A driver option's value, as JSON or TOML can spell it."""


def family_of(protocol: str) -> str:
    """Return the driver family of a URL scheme (the scheme itself when it has none)."""
    return FAMILIES.get(protocol.lower(), protocol.lower())


@dataclass(frozen=True)
class RemoteOptions:
    """How remote logs are reached: one validated object that every shell builds and passes on.

    Local paths ignore it. It is plain and picklable: batch sends it to its workers.
    """

    timeout_s: float = DEFAULT_REMOTE_TIMEOUT_S
    """Connect and read timeout of each request, seconds (`--remote-timeout`)."""
    endpoint_url: str | None = None
    """The storage's endpoint (`--endpoint-url`): S3-compatible servers, a GCS emulator."""
    profile: str | None = None
    """A named profile of the AWS configuration files (`--profile`; s3:// only)."""
    anonymous: bool = False
    """Unsigned requests, for public buckets (`--anonymous`)."""
    options_json: str = field(default="{}", repr=False)
    """Driver options as a JSON object: scheme family → {option: value} from the config file,
    and under "*" those of `--storage-option`, which go to the storage of the URL. Kept as
    text so the object stays hashable; not shown in `repr`: it may hold secrets."""

    def __post_init__(self) -> None:
        if not (isinstance(self.timeout_s, int | float) and math.isfinite(self.timeout_s)):
            raise UsageError(f"--remote-timeout must be a number of seconds, not {self.timeout_s}")
        if not 0 < self.timeout_s <= MAX_REMOTE_TIMEOUT_S:
            raise UsageError(
                f"--remote-timeout must be above 0 and at most {MAX_REMOTE_TIMEOUT_S:.0f} s "
                f"(got {self.timeout_s:g})"
            )

    def _options(self) -> dict[str, dict[str, StorageValue]]:
        loaded: dict[str, dict[str, StorageValue]] = json.loads(self.options_json)
        return loaded

    def driver_kwargs(self, protocol: str, *, holds_the_log: bool) -> dict[str, Any]:
        """Return the keyword arguments of the fsspec driver of `protocol`.

        `holds_the_log`: the scheme is the one that stores the log's bytes (the last of a
        chained URL such as `zip://x::s3://b/k`), which the command-line options are for.
        """
        family = family_of(protocol)
        kwargs: dict[str, Any] = _driver_defaults(family, self.timeout_s)
        options = self._options()
        kwargs.update(options.get(family, {}))
        if holds_the_log:
            kwargs.update(self._generic_kwargs(family, protocol))
            kwargs.update(options.get("*", {}))
        return kwargs

    def _generic_kwargs(self, family: str, protocol: str) -> dict[str, Any]:
        """`--endpoint-url`, `--profile` and `--anonymous` in the words of `family`'s driver."""
        out: dict[str, Any] = {}
        if self.endpoint_url is not None:
            if family not in ("s3", "gcs"):
                raise UsageError(
                    f"--endpoint-url applies to s3:// and gs:// URLs, not {protocol}://; "
                    "give the driver's own option with --storage-option (docs/cli.md)"
                )
            out["endpoint_url"] = self.endpoint_url
        if self.profile is not None:
            if family != "s3":
                raise UsageError(f"--profile applies to s3:// URLs, not {protocol}://")
            out["profile"] = self.profile
        if self.anonymous:
            if family == "s3" or family == "abfs":
                out["anon"] = True
            elif family == "gcs":
                out["token"] = "anon"
            else:
                raise UsageError(
                    f"--anonymous applies to s3://, gs:// and abfs:// URLs, not {protocol}://"
                )
        return out

    def attempts(self, protocol: str) -> int | None:
        """Tries per request to set on the driver of `protocol`, where it has such a setting."""
        return REMOTE_ATTEMPTS if family_of(protocol) == "s3" else None


def _driver_defaults(family: str, timeout_s: float) -> dict[str, Any]:
    """The driver options that bound each request of `family` by `timeout_s`, and turn off the
    cache of directory listings: a log directory changes between two runs of one process (a
    batch run again, a library user), and a cached listing would hide its new logs."""
    fresh = {"use_listings_cache": False}
    if family == "s3":
        # botocore's own retries off: s3fs retries (REMOTE_ATTEMPTS), so they do not multiply.
        config = {
            "connect_timeout": timeout_s,
            "read_timeout": timeout_s,
            "retries": {"total_max_attempts": 1},
        }
        return {"config_kwargs": config, **fresh}
    if family == "gcs":
        return {"requests_timeout": timeout_s, **fresh}
    if family == "abfs":
        whole = max(1, math.ceil(timeout_s))
        return {"connection_timeout": whole, "read_timeout": whole, **fresh}
    if family == "ftp":
        return {"timeout": timeout_s}
    return {}


def parse_storage_options(pairs: Iterable[str]) -> dict[str, StorageValue]:
    """Parse `--storage-option KEY=VALUE` items; a VALUE that is JSON (`true`, `8`, `{...}`) is
    taken as such, anything else as a string."""
    out: dict[str, StorageValue] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not _KEY_RE.match(key):
            raise UsageError(
                f"--storage-option takes KEY=VALUE with KEY a driver option name, not {pair!r}"
            )
        try:
            value: StorageValue = json.loads(text)
            check_depth(value)
        except (ValueError, RecursionError, ConfigFileError):
            value = text  # not JSON, or JSON nested too deep to be an option: the text itself
        out[key] = value
    return out


def load_remote_config(path: str) -> tuple[float | None, dict[str, dict[str, StorageValue]]]:
    """Read a remote-storage config file (TOML): its `timeout_s` and its driver options per
    scheme family (`[s3]`, `[gcs]`, `[abfs]`, ... tables)."""
    try:
        data = parse_toml(read_settings_file(path, MAX_REMOTE_CONFIG_BYTES))
    except OSError as error:
        raise UsageError(f"{path}: cannot read the remote config file: {error.strerror}") from None
    except ConfigFileError as error:
        raise UsageError(f"{path}: the remote config file is {error}") from None
    timeout = data.pop("timeout_s", None)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise UsageError(f"{path}: timeout_s must be a number of seconds")
    by_family: dict[str, dict[str, StorageValue]] = {}
    for name, table in data.items():
        if not isinstance(table, dict):
            raise UsageError(
                f"{path}: {name!r} is not a table; driver options go under [s3], [gcs], [abfs]..."
            )
        by_family.setdefault(family_of(name), {}).update(table)
    return (float(timeout) if timeout is not None else None), by_family


def make_remote_options(
    *,
    timeout_s: float | None = None,
    endpoint_url: str | None = None,
    profile: str | None = None,
    anonymous: bool = False,
    storage_options: Iterable[str] = (),
    config_path: str | None = None,
) -> RemoteOptions:
    """Build `RemoteOptions` from command-line values and an optional config file; the command
    line wins over the file, the file over the defaults."""
    file_timeout: float | None = None
    by_family: dict[str, dict[str, StorageValue]] = {}
    if config_path:
        file_timeout, by_family = load_remote_config(config_path)
    options: dict[str, Mapping[str, StorageValue]] = dict(by_family)
    given = parse_storage_options(storage_options)
    if given:
        options["*"] = given
    try:
        options_json = json.dumps(options, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise UsageError(f"storage options must be plain values: {error}") from None
    timeout = timeout_s if timeout_s is not None else file_timeout
    return RemoteOptions(
        timeout_s=timeout if timeout is not None else DEFAULT_REMOTE_TIMEOUT_S,
        endpoint_url=endpoint_url,
        profile=profile,
        anonymous=anonymous,
        options_json=options_json,
    )


_MAX_MESSAGE_CHARS = 300


def one_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name if it has none), at most
    `_MAX_MESSAGE_CHARS` long: a driver's message may be a page of XML."""
    text = str(error).strip().splitlines()
    line = text[0].strip() if text and text[0].strip() else type(error).__name__
    if len(line) > _MAX_MESSAGE_CHARS:
        line = line[: _MAX_MESSAGE_CHARS - 1] + "…"
    return line


def _kind_of(error: BaseException) -> str:
    """`timeout`, `connection`, `denied` or `other`, from the error and what it was raised from
    (drivers wrap aiohttp's and botocore's own types)."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    for e in seen:
        name = type(e).__name__
        if isinstance(e, TimeoutError) or "Timeout" in name:
            return "timeout"
    for e in seen:
        if isinstance(e, PermissionError) or type(e).__name__ == "NoCredentialsError":
            return "denied"
    for e in seen:
        name = type(e).__name__
        if isinstance(e, ConnectionError) or "Connect" in name or "Disconnect" in name:
            return "connection"
    return "other"


_KIND_WORDS = {"denied": "access denied", "connection": "cannot connect"}
"""What went wrong, by the kind `_kind_of` finds (a timeout's words name the time allowed)."""
_KIND_HINTS = {
    "timeout": "check the endpoint, or allow more time with --remote-timeout",
    "denied": "check the credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
    "--profile, or the storage's own login (docs/user-guide.md)",
    "connection": "check the endpoint and that the storage is up; the next run may pass",
}
"""What to do, by kind."""


def remote_error(
    action: str,
    path: str,
    error: BaseException,
    remote: RemoteOptions,
    *,
    offset: int | None = None,
) -> AnalyzerError:
    """Turn a driver's exception into the one-line error the user sees."""
    if isinstance(error, AnalyzerError):
        return error
    if isinstance(error, FileNotFoundError):
        if offset is not None:
            return LogNotFoundError("file disappeared while reading", path=path, offset=offset)
        return LogNotFoundError("no such file or directory", path=path)
    detail = one_line(error)
    kind = _kind_of(error)
    if kind in _KIND_HINTS:
        words = _KIND_WORDS.get(kind) or f"no answer within {remote.timeout_s:g} s"
        return RemoteStorageError(
            f"{action}: {words} ({detail})", path=path, offset=offset, hint=_KIND_HINTS[kind]
        )
    return RemoteStorageError(
        f"{action}: {type(error).__name__}: {detail}", path=path, offset=offset
    )
