"""The lifetime of a worker process, the same for every worker the analyzer starts.

Two kinds of worker exist: the forked readers of a large log (`workers.py`) and a batch run's
local workers, fresh interpreters (`batch/local_engine.py`); they start differently (see
docs/architecture.md, "Worker processes", for why), but live and end alike. A worker calls
`die_with_parent` first, so it never outlives the process that started it (it would go on
working, unseen and unlocked); the parent ends every worker with `end_process`, which gives it a
grace period to exit by itself, kills it after, and always reaps it, so no zombie is left.

This module sits in `eventlog`, the lowest layer that starts processes, so that both may use it;
it imports only the standard library, so a batch worker can call it before it imports anything
else (and limits its memory).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

PARENT_POLL_S = 1.0
"""How often a worker checks that its parent is alive where the kernel cannot tell it."""
REAP_POLL_S = 0.01
"""How often `end_process` looks whether a worker it gives time to has exited."""
_PR_SET_PDEATHSIG = 1


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent_pid:
            os._exit(1)


def die_with_parent(parent_pid: int) -> None:
    """Make this process die as soon as `parent_pid`, its parent, dies.

    On Linux the kernel sends SIGKILL on the parent's death (`PR_SET_PDEATHSIG`); everywhere a
    thread also checks the parent now and then. If the parent is already gone, exit now.
    """
    if sys.platform.startswith("linux"):
        import ctypes  # here: the CLI imports batch's limits for its defaults, at every start

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # it died before the request above took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()


def end_process(pid: int, grace_s: float = 0.0) -> int | None:
    """End child process `pid` and reap it: wait up to `grace_s` seconds for it to exit by
    itself, then SIGKILL it.

    Return its exit status as `subprocess` words it (negative: the signal that ended it), or
    None if it was reaped already.
    """
    deadline = time.monotonic() + grace_s
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            break
        time.sleep(REAP_POLL_S)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)
