"""Where the tests find real event logs: the public set, the generated samples, bad inputs."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import zstandard

REPO = Path(__file__).resolve().parent.parent
PUBLIC = Path(
    os.environ.get("PUBLIC_EVENTLOGS_DIR", str(REPO.parent / "shared" / "eventlogs" / "public"))
)
SAMPLES = Path(os.environ.get("SAMPLE_EVENTLOGS_DIR", str(REPO / "sample_eventlogs")))
BAD = REPO / "tests" / "bad_inputs"
PAIRS = SAMPLES / "pairs"
"""Run pairs: one log directory per pair (two runs of one job), not logs of the top directory."""
PUBLIC_CORPUS = SAMPLES / "public"
"""Public real-world logs copied into the repository (see its README), beside `PUBLIC`."""
SLOTS = SAMPLES / "slots"
"""The slot series: one job run with 1, 2, 4 and 8 task slots (tests/test_what_if.py)."""

needs_public = pytest.mark.skipif(
    not PUBLIC.is_dir(), reason=f"public event logs not found at {PUBLIC}"
)


def public(name: str) -> Path:
    """Return the path of a public log, skipping the test if the set is not present."""
    path = PUBLIC / name
    if not path.exists():
        pytest.skip(f"public event log {path} not present")
    return path


def sample(name: str) -> Path:
    """Return the path of a sample log, skipping the test if it is not present."""
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


VERSIONS_PREFIX = "spark-"
"""Logs written by an older Spark version are in `sample_eventlogs/spark-<X.Y>/`."""


def version_dirs() -> list[Path]:
    """Return the directories of sample logs written by older Spark versions (`spark-<X.Y>/`)."""
    if not SAMPLES.is_dir():
        return []
    return sorted(p for p in SAMPLES.glob(f"{VERSIONS_PREFIX}*") if p.is_dir())


def _logs_in(directory: Path) -> list[Path]:
    """Return the logs at the top of a samples directory (files and rolling directories)."""
    return sorted(
        p
        for p in directory.iterdir()
        if not p.name.startswith(".")
        and p.suffix not in (".md", ".py", ".txt", ".json")
        and p not in (PAIRS, PUBLIC_CORPUS, SLOTS)
        and not (p.is_dir() and p.name.startswith(VERSIONS_PREFIX))
    )


def sample_logs() -> list[Path]:
    """Return the generated sample logs: the top directory's, then each older version's.

    Hidden files (the manifests, the saved History Server answers), the READMEs and the `pairs/`,
    `public/` and `slots/` directories are left out.
    """
    if not SAMPLES.is_dir():
        return []
    return _logs_in(SAMPLES) + [log for d in version_dirs() for log in _logs_in(d)]


def sample_id(path: Path) -> str:
    """Return a log's name for test ids and gold files: `spark-3.5/<name>` for older versions."""
    if path.parent != SAMPLES and path.parent.parent == SAMPLES:
        return f"{path.parent.name}/{path.name}"
    return path.name


def sample_files(ext: str) -> list[Path]:
    """Return the generated sample logs (files, also inside rolling dirs) ending in `.ext`."""
    if not SAMPLES.is_dir():
        return []
    return sorted(
        p
        for p in SAMPLES.rglob(f"*.{ext}")
        if p.is_file()
        and not p.name.startswith(".")
        and p.stat().st_size > 0
        and PUBLIC_CORPUS not in p.parents
    )


def sample_file(ext: str) -> Path:
    """Return one generated `.ext` sample log, or skip: they come from scripts/ with pyspark."""
    files = sample_files(ext)
    if not files:
        pytest.skip(
            f"no *.{ext} event log under {SAMPLES}; they are written by the pyspark sample script"
        )
    return files[0]


def public_logs() -> list[Path]:
    """Return every public real-world log: the repository's corpus, then `PUBLIC` if present.

    Entries are files and log directories (rolling `eventlog_v2_*`, Databricks rollover).
    """
    found: list[Path] = []
    for folder in (PUBLIC_CORPUS, PUBLIC):
        if folder.is_dir():
            found += sorted(
                p
                for p in folder.iterdir()
                if not p.name.startswith(".") and p.suffix not in (".md", ".json")
            )
    return found


BIG_LOG_BYTES = 2 << 20
"""Logs larger than this on disk are marked `slow` when they are test parameters."""


def log_size(path: Path) -> int:
    """Bytes on disk of a log file, or of every file under a log directory."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def public_log_params() -> list[object]:
    """`public_logs()` as pytest parameters, the large ones marked `slow`; when neither public
    set is present, one case skipped with the paths looked for."""
    logs = public_logs()
    if not logs:
        reason = f"public event logs not found at {PUBLIC_CORPUS} or {PUBLIC}"
        return [pytest.param(PUBLIC, id="public", marks=pytest.mark.skip(reason=reason))]
    return [
        pytest.param(
            log,
            id=f"{log.parent.name}/{log.name}",
            marks=[pytest.mark.slow] if log_size(log) > BIG_LOG_BYTES else [],
        )
        for log in logs
    ]


def zstd_reference(path: Path) -> bytes:
    """Decompress a zstd log with zstandard's own multi-frame reader, as the expected text."""
    with path.open("rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
        return reader.read()


def as_stream(data: bytes) -> io.BytesIO:
    """Wrap bytes as the binary stream the decoders read."""
    return io.BytesIO(data)
