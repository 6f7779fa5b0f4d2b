"""Limits of one batch worker: bounded memory, bounded time per log.

One log must not take a worker's memory or time without bound. (That a worker dies with the
driver is `eventlog/processes.py`'s, shared with the reading workers.)
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import threading
from collections.abc import Iterator
from types import FrameType

DEFAULT_MAX_MEMORY_MB = 4096
"""Per-worker data size limit: a 3.5 GB log peaks near 1.1 GB (docs/performance.md)."""
DEFAULT_TIMEOUT_S = 3600
"""Per-log time limit: far above what a large log takes, small enough for a nightly window."""
DEFAULT_REGRESSION_THRESHOLD = 1.5
"""A run regressed when it took at least this many times the median of the runs before it..."""
DEFAULT_REGRESSION_MIN_CHANGE_S = 30
"""...and at least this many seconds more, so that a short job's noise is not a regression."""


def set_memory_limit(max_memory_mb: int) -> None:
    """Limit this process's data size (heap and private mappings, RLIMIT_DATA) to `max_memory_mb`.

    RLIMIT_DATA rather than RLIMIT_AS: the address space of a process running polars is several
    times its memory use (thread stacks and allocator reservations), so an address-space limit
    would stop healthy logs. Python then raises `MemoryError`; native code may abort the process.
    0 means no limit.
    """
    if max_memory_mb <= 0:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = max_memory_mb << 20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


@contextlib.contextmanager
def memory_limit(max_memory_mb: int) -> Iterator[None]:
    """Lower the data-size limit for the duration of one job and restore it after."""
    if max_memory_mb <= 0:
        yield
        return
    before = resource.getrlimit(resource.RLIMIT_DATA)
    try:
        set_memory_limit(max_memory_mb)
    except (ValueError, OSError):  # a limit below what is already in use
        yield
        return
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, before)


class TimeLimitExceeded(BaseException):
    """Raised in the main thread when a job's time is up (a BaseException: not caught as a bug)."""


@contextlib.contextmanager
def time_limit(timeout_s: int) -> Iterator[None]:
    """Raise `TimeLimitExceeded` in this (main) thread after `timeout_s` seconds.

    Used where the process cannot be killed from outside (a Spark executor's Python worker);
    the signal is handled between Python bytecodes, so a long native call finishes first. Off
    the main thread, or with 0, there is no limit.
    """
    if timeout_s <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimitExceeded

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)
