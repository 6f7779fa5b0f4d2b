"""Make the C allocator give large freed blocks back to the system at once."""

from __future__ import annotations

import ctypes
import os
import sys

_M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameter number for the size above which a block gets its own mapping."""
_MMAP_THRESHOLD_BYTES = 128 * 1024
"""glibc's default threshold; setting it explicitly turns off its dynamic growth."""

_tuned = False


def return_large_blocks_to_os() -> None:
    """Keep blocks over 128 KiB in their own mappings, so freeing one lowers the RSS at once.

    The task columns are arrays of several MB that grow while a log is read and are freed as
    they move into polars. glibc raises its mapping threshold each time such a block is freed,
    after which the next large blocks come from the heap, whose free space is rarely given back:
    the peak RSS of a report kept the freed columns (measured: 234 MB against 197 MB on a
    94.5k-task log, same time). Only glibc has this knob; elsewhere, and when the user set
    `MALLOC_MMAP_THRESHOLD_` themselves, nothing changes. Idempotent.
    """
    global _tuned
    if _tuned:
        return
    _tuned = True
    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
