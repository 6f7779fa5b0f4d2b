"""Which recurring job an application is a run of: its job key.

Nightly jobs are usually submitted under a name that carries the night (`etl-orders-2024-01-15`,
`report 20240115 0200`) or a generated id; the default key is the application name with such
parts replaced by placeholders, so every night's run gets the same key. `--job-key` replaces the
default by a regular expression on the name or by the value of a Spark property. The rules are
documented with examples in docs/batch.md (Job history).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from analyzer.aggregate.fingerprint import UUID_TEXT
from analyzer.errors import UsageError

MAX_KEY_CHARS = 200
"""A longer key (names and property values are read from logs) is cut to this many characters."""
MAX_INPUT_CHARS = 1000
"""Only this many characters of a name or property value are looked at: a log may hold a name of
megabytes, and the rules must stay fast."""
SPARK_PREFIX = "spark:"
"""`--job-key spark:<property>` takes the key from a Spark property."""

_DIGITS_BEFORE = r"(?<![0-9])"
_DIGITS_AFTER = r"(?![0-9])"
_ALNUM_BEFORE = r"(?<![0-9A-Za-z])"
_ALNUM_AFTER = r"(?![0-9A-Za-z])"
_SEP = r"[-_./]?"
_YEAR = r"(?:19|20)[0-9]{2}"
_MONTH = r"(?:0[1-9]|1[0-2])"
_DAY = r"(?:0[1-9]|[12][0-9]|3[01])"
_HMS = r"(?:[01][0-9]|2[0-3])[:_.-]?[0-5][0-9](?:[:_.-]?[0-5][0-9](?:[.,][0-9]+)?)?"
_ZONE = r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?"

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # Spark and YARN application ids name one run, never the job.
    (
        re.compile(
            rf"{_ALNUM_BEFORE}(?:application_[0-9]+_[0-9]+|app-[0-9]{{14}}-[0-9]{{4}}"
            rf"|local-[0-9]{{10,}}){_ALNUM_AFTER}"
        ),
        "<id>",
    ),
    # UUIDs.
    (re.compile(UUID_TEXT), "<id>"),
    # A date with a time of day: 2024-01-15T02:00:00Z, 20240115_0200, 2024-01-15 02:00.
    (
        re.compile(
            rf"{_DIGITS_BEFORE}{_YEAR}{_SEP}{_MONTH}{_SEP}{_DAY}[T _.-]?{_HMS}{_ZONE}"
            rf"{_DIGITS_AFTER}"
        ),
        "<ts>",
    ),
    # A date: 2024-01-15, 2024/01/15, 2024_01_15, 20240115, 15-01-2024, 01/15/2024.
    (re.compile(rf"{_DIGITS_BEFORE}{_YEAR}{_SEP}{_MONTH}{_SEP}{_DAY}{_DIGITS_AFTER}"), "<date>"),
    (
        re.compile(
            rf"{_DIGITS_BEFORE}(?:{_DAY}[-./]{_MONTH}|{_MONTH}[-./]{_DAY})[-./]{_YEAR}{_DIGITS_AFTER}"
        ),
        "<date>",
    ),
    # Epoch timestamps in seconds or milliseconds (2001 to 2286).
    (re.compile(rf"{_DIGITS_BEFORE}1[0-9]{{9}}(?:[0-9]{{3}})?{_DIGITS_AFTER}"), "<ts>"),
    # A time of day alone: 02:00, 02:00:00.
    (
        re.compile(
            rf"{_DIGITS_BEFORE}(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9])?{_DIGITS_AFTER}"
        ),
        "<time>",
    ),
    # Hexadecimal ids of 8 or more characters holding a digit and a letter (git shas, run ids).
    (
        re.compile(
            rf"{_ALNUM_BEFORE}(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{{8,}}"
            rf"{_ALNUM_AFTER}"
        ),
        "<id>",
    ),
    # Any other run of 5 or more digits: a counter or an id (short numbers such as a step
    # number or a version are kept: they usually tell jobs apart).
    (re.compile(rf"{_DIGITS_BEFORE}[0-9]{{5,}}{_DIGITS_AFTER}"), "<n>"),
)
_SPACES = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def normalize_app_name(name: str) -> str:
    """Return the default job key of an application name: dates, times and ids replaced.

    >>> normalize_app_name("etl-orders-2024-01-15")
    'etl-orders-<date>'
    >>> normalize_app_name("daily report 20240115")
    'daily report <date>'
    >>> normalize_app_name("load_2024-01-15T02:00:00Z")
    'load_<ts>'
    >>> normalize_app_name("ingest-1705286400123")
    'ingest-<ts>'
    >>> normalize_app_name("export 15.01.2024 02:00")
    'export <date> <time>'
    >>> normalize_app_name("export 01/15/2024")
    'export <date>'
    >>> normalize_app_name("job-3f2a9c1e-7b4d-4e5f-9a0b-1c2d3e4f5a6b")
    'job-<id>'
    >>> normalize_app_name("build 9fceb02d0ae5 run 48213")
    'build <id> run <n>'
    >>> normalize_app_name("Spark shell application_1603128018386_7759")
    'Spark shell <id>'
    >>> normalize_app_name("  sea-nightly-orders  ")
    'sea-nightly-orders'
    >>> normalize_app_name("etl step 2 v3")
    'etl step 2 v3'
    """
    key = _CONTROL.sub(" ", name[:MAX_INPUT_CHARS])
    for pattern, placeholder in _RULES:
        key = pattern.sub(placeholder, key)
    return _SPACES.sub(" ", key).strip()[:MAX_KEY_CHARS] or "(no name)"


@dataclass(frozen=True)
class JobKeyRule:
    """How applications are grouped into jobs (`--job-key`), validated when built.

    `spec` None: the normalized application name. `spark:<property>`: the value of that Spark
    property (from the environment update). Otherwise a regular expression searched in the name:
    its first group, or the whole match if it has no group. An application the rule does not
    apply to (no match, property not set) gets the default key.
    """

    spec: str | None = None

    def __post_init__(self) -> None:
        if self.spec is None:
            return
        if self.spec.startswith(SPARK_PREFIX):
            if not self.spec[len(SPARK_PREFIX) :].strip():
                raise UsageError("--job-key spark: needs a property name: spark:spark.app.name")
            return
        if not self.spec:
            raise UsageError("--job-key needs a regular expression or spark:<property>")
        try:
            _compiled(self.spec)
        except (re.error, OverflowError, RecursionError) as error:
            raise UsageError(f"--job-key is not a valid regular expression: {error}") from None

    @property
    def spark_property(self) -> str | None:
        """The Spark property the key is read from, if the rule names one."""
        if self.spec is not None and self.spec.startswith(SPARK_PREFIX):
            return self.spec[len(SPARK_PREFIX) :].strip()
        return None

    def key(self, name: str | None, spark_properties: Mapping[str, str]) -> str:
        """Return the job key of an application with this name and these Spark properties.

        >>> JobKeyRule().key("etl-2024-01-15", {})
        'etl-<date>'
        >>> JobKeyRule(r"^(\\w+)-").key("orders-eu-7", {})
        'orders'
        >>> JobKeyRule(r"nightly").key("my nightly run", {})
        'nightly'
        >>> JobKeyRule("spark:spark.job.id").key("x-2024-01-15", {"spark.job.id": "orders"})
        'orders'
        >>> JobKeyRule("spark:spark.job.id").key("x-2024-01-15", {})
        'x-<date>'
        """
        if self.spec is not None:
            prop = self.spark_property
            value: str | None
            if prop is not None:
                value = spark_properties.get(prop)
            else:
                found = _compiled(self.spec).search((name or "")[:MAX_INPUT_CHARS])
                value = None
                if found is not None:
                    value = found.group(1) if found.re.groups else found.group(0)
            if value is not None:
                cleaned = _SPACES.sub(" ", _CONTROL.sub(" ", value[:MAX_INPUT_CHARS]))
                cleaned = cleaned.strip()[:MAX_KEY_CHARS]
                if cleaned:
                    return cleaned
        return normalize_app_name(name or "")


@lru_cache(maxsize=8)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)
