"""Older PySpark releases, each installed in its own virtual environment under a cache directory.

The sample logs of older Spark versions (`sample_eventlogs/spark-<X.Y>/`) are written by that
version's PySpark, and their History Server answers are saved by that version's History Server.
Neither may be the pyspark of the project's own environment (it is the newest release), so each
older release gets a venv of its own, made on first use with the standard library's `venv` and
pip from the ordinary package index:

    ~/.cache/spark-explain/pyspark-3.5/   (or $SEA_PYSPARK_CACHE/pyspark-3.5/)

The Spark Connect sample's Python client needs `pyspark[connect]` (pandas, pyarrow, grpcio, ...),
which the project's environment does not have; it gets a venv of its own the same way, with the
project's own PySpark release:

    ~/.cache/spark-explain/pyspark-connect-4.3.0/
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

OLDER_RELEASES = {"3.3": "3.3.4", "3.4": "3.4.4", "3.5": "3.5.9", "4.0": "4.0.5"}
"""Spark minor version -> the PySpark release its sample logs are written with."""

VERSIONS_DIR_PREFIX = "spark-"
"""Sample logs of an older version live in `sample_eventlogs/spark-<X.Y>/`."""

_CACHE_ENV = "SEA_PYSPARK_CACHE"


def cache_dir() -> Path:
    """Return the directory that holds the per-release venvs."""
    configured = os.environ.get(_CACHE_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spark-explain"


def check_version(version: str) -> str:
    """Return the pinned PySpark release of a Spark minor version (`3.5` -> `3.5.9`).

    Raises:
        SystemExit: the version is not one of `OLDER_RELEASES`.
    """
    release = OLDER_RELEASES.get(version)
    if release is None:
        known = ", ".join(sorted(OLDER_RELEASES))
        raise SystemExit(f"unknown Spark version {version!r}; older versions known: {known}")
    return release


def venv_python(version: str) -> Path:
    """Return the Python of the venv that has this version's PySpark, making it if needed.

    The venv is `<cache>/pyspark-<X.Y>`; pip installs the pinned release into it once.
    """
    release = check_version(version)
    return ensure_venv(cache_dir() / f"pyspark-{version}", f"pyspark=={release}", release)


CONNECT_CLIENT_MODULE = "pyspark.sql.connect.session"
"""Importing it checks every dependency of the Spark Connect client (pandas, pyarrow, grpc, ...)."""


def connect_client_python(release: str) -> Path:
    """Return the Python of a venv with the Spark Connect client of a PySpark release, making it
    if needed.

    The venv is `<cache>/pyspark-connect-<release>`; pip installs `pyspark[connect]==<release>`
    into it once.
    """
    return ensure_venv(
        cache_dir() / f"pyspark-connect-{release}",
        f"pyspark[connect]=={release}",
        release,
        CONNECT_CLIENT_MODULE,
    )


def ensure_venv(venv: Path, requirement: str, release: str, module: str = "") -> Path:
    """Return the Python of `venv`, making the venv and pip-installing `requirement` into it
    unless it already has pyspark `release` (and can import `module`, if one is named)."""
    python = venv / "bin" / "python"
    if installed_release(python, module) == release:
        return python
    print(f"installing {requirement} into {venv} (a few minutes, once)", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", requirement], check=True)
    found = installed_release(python, module)
    if found != release:
        raise SystemExit(f"{venv}: pyspark {found or 'missing'} after installing {requirement}")
    return python


def installed_release(python: Path, module: str = "") -> str | None:
    """Return the pyspark version importable by `python` (None if it is not, or if `module`
    is named and cannot be imported)."""
    if not python.exists():
        return None
    probe = "import pyspark; print(pyspark.__version__)"
    if module:
        probe = f"import {module}; {probe}"
    proc = subprocess.run(
        [str(python), "-W", "ignore", "-c", probe],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def spark_home(version: str) -> Path:
    """Return the Spark distribution (bin/, jars/) inside this version's pyspark package."""
    python = venv_python(version)
    proc = subprocess.run(
        [str(python), "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(proc.stdout.strip())
