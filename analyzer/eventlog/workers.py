"""Run one function over many items in forked worker processes, and get the results in order.

Reading a large log is CPU-bound Python work (decoding JSON lines), so the only way to use more
than one core is more than one process. Workers are forked (they inherit the imported decoders,
nothing is pickled on the way in), take the next item from a shared pipe of item numbers (so a
worker slowed down by a busy machine takes fewer), and send each result back pickled through its
own pipe; the caller gets them in item order as soon as each is ready. Item numbers are handed
out only a few ahead of the item the caller is at, so that results waiting for a slow caller do
not pile up in memory.

Linux only (fork); `can_fork()` says whether it applies. A worker never outlives its parent, and
is killed and reaped once its results are no longer wanted (`processes.py`, shared with batch's
workers).
"""

from __future__ import annotations

import os
import pickle
import selectors
import struct
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from analyzer.eventlog.processes import die_with_parent, end_process

T = TypeVar("T")
R = TypeVar("R")

_TOKEN = struct.Struct("<I")
_HEADER = struct.Struct("<IQ")
"""A result message: the item number and the length of the pickled result that follows."""
_AHEAD = 2
"""Items handed out per worker beyond the one the caller waits for."""
_FAILED = "failed"


class WorkerError(Exception):
    """A worker raised, died, or could not be started; `reason` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def can_fork() -> bool:
    """Whether worker processes can be used here (Linux, with `os.fork`)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def usable_cpus() -> int:
    """The cores this process may run on (its CPU affinity, else every core)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _widen(fd: int) -> None:
    """Let a result pipe hold 1 MiB (Linux's limit for an unprivileged process) instead of
    64 KiB: a result of several MB then takes a few reads and wake-ups, not a hundred."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass  # a lower limit: the pipe keeps its size


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _worker_main(
    fn: Callable[[Any], Any], items: Sequence[Any], tokens_fd: int, out_fd: int, parent: int
) -> None:
    """Child side: take item numbers until the pipe is empty, send each result back."""
    die_with_parent(parent)
    while True:
        # Every token is written in one 4-byte write and read in one 4-byte read, so a read
        # returns a whole token, or nothing once the parent closed the pipe.
        token = os.read(tokens_fd, _TOKEN.size)
        if len(token) < _TOKEN.size:
            return
        (index,) = _TOKEN.unpack(token)
        try:
            payload = pickle.dumps(fn(items[index]), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # sent to the parent, which decides what it means
            payload = pickle.dumps((_FAILED, f"{type(error).__name__}: {error}"))
            _write_all(out_fd, _HEADER.pack(index, len(payload)) + payload)
            return
        _write_all(out_fd, _HEADER.pack(index, len(payload)))
        _write_all(out_fd, payload)


def run_in_workers(
    fn: Callable[[T], R], items: Sequence[T], n_workers: int
) -> Iterator[tuple[T, R]]:
    """Yield `(item, fn(item))` for every item, in order, computed by `n_workers` processes.

    `fn` runs in forked children and must return something picklable. Raises `WorkerError` if
    a worker raises (the message names the exception) or dies; the other workers are killed.
    Closing the iterator early kills them too.
    """
    with workers_started(fn, items, n_workers) as results:
        yield from results


@contextmanager
def workers_started(
    fn: Callable[[T], R], items: Sequence[T], n_workers: int
) -> Iterator[Iterator[tuple[T, R]]]:
    """Fork `n_workers` processes that start on the items at once, and give the iterator of
    their results (as `run_in_workers` yields them), so that the caller can do other work while
    they compute. The workers still running when the block ends are killed.
    """
    if not can_fork():
        raise WorkerError("worker processes need Linux")
    n_workers = max(1, min(n_workers, len(items)))
    tokens_read, tokens_write = os.pipe()
    tokens = _Tokens(tokens_write)
    parent = os.getpid()
    children: dict[int, int] = {}  # result pipe fd → pid
    try:
        for _ in range(n_workers):
            out_read, out_write = os.pipe()
            _widen(out_write)
            with warnings.catch_warnings():
                # Python 3.12+ warns that fork in a process with threads (polars' pool) may
                # deadlock; the child runs no code that takes their locks.
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's coverage is not collected
                code = 0
                try:
                    os.close(out_read)
                    os.close(tokens_write)
                    for fd in children:
                        os.close(fd)
                    _worker_main(fn, items, tokens_read, out_write, parent)
                except BaseException:
                    code = 1
                finally:
                    os._exit(code)
            os.close(out_write)
            children[out_read] = pid
        os.close(tokens_read)
        tokens_read = -1
        window = n_workers * (1 + _AHEAD)
        tokens.hand_out(window, len(items))
        yield _gather(children, items, tokens, window)
    finally:
        if tokens_read >= 0:
            os.close(tokens_read)
        tokens.close()
        for fd, pid in children.items():
            os.close(fd)
            end_process(pid)


class _Tokens:
    """The write end of the pipe of item numbers: handed out in order, closed once (workers
    then see its end)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.n_handed = 0

    def hand_out(self, end: int, n_items: int) -> None:
        """Hand out the item numbers below `end`; close the pipe once all `n_items` are out."""
        while self.n_handed < min(end, n_items):
            _write_all(self.fd, _TOKEN.pack(self.n_handed))
            self.n_handed += 1
        if self.n_handed >= n_items:
            self.close()

    def close(self) -> None:
        """Close the pipe (once)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _gather(
    children: dict[int, int], items: Sequence[T], tokens: _Tokens, window: int
) -> Iterator[tuple[T, Any]]:
    """Read the workers' result pipes, yield the results in item order, and hand out item
    numbers up to `window` beyond the next one to yield (the first `window` are out)."""
    receivers = {fd: _Receiver(fd) for fd in children}
    ready: dict[int, bytearray] = {}
    next_index = 0
    open_fds = set(children)
    with selectors.DefaultSelector() as selector:
        for fd in children:
            selector.register(fd, selectors.EVENT_READ)
        while next_index < len(items):
            while next_index in ready:
                result = pickle.loads(ready.pop(next_index))
                if isinstance(result, tuple) and len(result) == 2 and result[0] == _FAILED:
                    raise WorkerError(str(result[1]))
                yield items[next_index], result
                next_index += 1
                tokens.hand_out(next_index + window, len(items))
            if next_index >= len(items):
                break
            if not open_fds:
                raise WorkerError("a worker process died")
            for key, _ in selector.select():
                fd = int(key.fd)
                receiver = receivers[fd]
                if not receiver.read():
                    selector.unregister(fd)
                    open_fds.discard(fd)
                    continue
                if receiver.message is not None:
                    index, payload = receiver.message
                    ready[index] = payload
                    receiver.message = None


class _Receiver:
    """The reading end of one worker's result pipe.

    A message's header is read on its own; its payload then goes straight into a buffer of its
    size, so a result of many MB is not copied again on its way to `pickle.loads` (gathering it
    in a growing buffer and slicing it out cost a second of a 686 MB log's replay).
    """

    __slots__ = ("_file", "_filled", "_header", "_index", "_payload", "message")

    def __init__(self, fd: int) -> None:
        self._file = open(fd, "rb", buffering=0, closefd=False)  # noqa: SIM115 - closed by fd
        self._header = b""
        self._index = 0
        self._payload: memoryview | None = None
        self._filled = 0
        self.message: tuple[int, bytearray] | None = None
        """(item number, pickled result) once a whole message has arrived."""

    def read(self) -> bool:
        """Read what the pipe holds (call when it is readable); False at its end."""
        payload = self._payload
        if payload is None:
            data = self._file.read(_HEADER.size - len(self._header))
            if not data:
                return False
            self._header += data
            if len(self._header) == _HEADER.size:
                self._index, length = _HEADER.unpack(self._header)
                self._header = b""
                self._payload = memoryview(bytearray(length))
                self._filled = 0
                self._finish_if_full()
            return True
        n_read = self._file.readinto(payload[self._filled :])
        if not n_read:
            return False
        self._filled += n_read
        self._finish_if_full()
        return True

    def _finish_if_full(self) -> None:
        payload = self._payload
        if payload is not None and self._filled == len(payload):
            self.message = (self._index, payload.obj)  # type: ignore[assignment]
            payload.release()
            self._payload = None
