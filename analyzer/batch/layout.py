"""Where a batch run writes: its own files at the top of OUTDIR, one directory per application
under `OUTDIR/apps/`, so no application id can ever name one of batch's own files.

Application directory names (`app keys`) come from application ids, which are read from logs and
so untrusted: a key is the id itself only when it is a short, plain name; otherwise a readable
prefix of it and a hash of the whole id. Keys are at most `MAX_KEY_BYTES` bytes (ASCII), never
start with `.` or `-`, and hold only letters, digits and `._~-`, which are also safe in URLs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

APPS_DIR = "apps"
INDEX_NAME = "index.html"
TABLES_DIR = "tables"
MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".batch.lock"
STAGING_PREFIX = ".staging-"
"""Spark executors write reports into `OUTDIR/.staging-<run>/` for the driver to move in place."""
DIFF_FILE = "diff-previous.html"
"""A regressed run's diff report against the previous run of its job, in the run's directory."""
OWN_NAMES = frozenset({APPS_DIR, INDEX_NAME, TABLES_DIR, MANIFEST_NAME, LOCK_NAME})
"""The entries batch writes at the top of OUTDIR; skipped when OUTDIR is the log directory."""

MAX_PLAIN_CHARS = 100
"""An application id longer than this is shortened to a prefix and a hash."""
PREFIX_CHARS = 60
"""Characters of the id kept before the hash when it is shortened or made safe."""
HASH_CHARS = 12
CLASH_CHARS = 8
MAX_KEY_BYTES = max(MAX_PLAIN_CHARS, PREFIX_CHARS + 1 + HASH_CHARS) + 1 + CLASH_CHARS
"""The longest key (109): the id or its prefix and hash, then `~` and a hash of the log name on a
clash; far below the 255 bytes a file name may have."""

_PLAIN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_PLAIN_CHARS - 1}}}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_KEY = re.compile(
    rf"(?:[A-Za-z0-9][A-Za-z0-9._-]{{0,{MAX_PLAIN_CHARS - 1}}}"
    rf"|[A-Za-z0-9][A-Za-z0-9._-]{{0,{PREFIX_CHARS - 1}}}~[0-9a-f]{{{HASH_CHARS}}})"
    rf"(?:~[0-9a-f]{{{CLASH_CHARS}}})?"
)


def _digest(text: str, n_chars: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n_chars]


def app_key(app_id: str | None, attempt_id: str | None, log_name: str) -> str:
    """Return the directory name of an application's reports under `OUTDIR/apps/`.

    `<app-id>[_<attempt>]` (the log name when the log holds no id) if that is a plain name of at
    most `MAX_PLAIN_CHARS` characters; otherwise its first characters made safe, `~` and a hash
    of the whole name, so different ids keep different keys.

    >>> app_key("application_1_0001", "2", "x")
    'application_1_0001_2'
    >>> app_key("a/b", None, "x")
    'a-b~c14cddc033f6'
    >>> app_key("..", None, "x")
    'app~5ec1f7e700f3'
    """
    base = app_id or log_name
    if attempt_id:
        base = f"{base}_{attempt_id}"
    if _PLAIN.fullmatch(base):
        return base
    prefix = _UNSAFE.sub("-", base)[:PREFIX_CHARS].lstrip("._-") or "app"
    return f"{prefix}~{_digest(base, HASH_CHARS)}"


def with_clash_suffix(key: str, log_name: str) -> str:
    """Return `key` made unique for `log_name`, for a second log of the same application."""
    return f"{key}~{_digest(log_name, CLASH_CHARS)}"


def is_app_key(name: str) -> bool:
    """True if `name` could have come from `app_key` (checks names read back from a manifest)."""
    return _KEY.fullmatch(name) is not None


@dataclass(frozen=True)
class OutputLayout:
    """The paths of one batch output directory."""

    root: Path

    @property
    def apps_dir(self) -> Path:
        """Parent of the per-application report directories."""
        return self.root / APPS_DIR

    @property
    def index_path(self) -> Path:
        """The index page."""
        return self.root / INDEX_NAME

    @property
    def tables_dir(self) -> Path:
        """The fleet tables, one Parquet file (local engine) or directory (Spark) per table."""
        return self.root / TABLES_DIR

    @property
    def manifest_path(self) -> Path:
        """What was analyzed from which version of each log."""
        return self.root / MANIFEST_NAME

    @property
    def lock_path(self) -> Path:
        """Held by the running batch; a second run on the same directory is refused."""
        return self.root / LOCK_NAME

    def app_dir(self, key: str) -> Path:
        """The report directory of the application with this key."""
        return self.apps_dir / key

    def app_href(self, key: str, file_name: str) -> str:
        """The URL of a report relative to the index page."""
        return f"{APPS_DIR}/{key}/{file_name}"
