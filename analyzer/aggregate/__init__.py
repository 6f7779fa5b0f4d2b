"""The only polars code: task tables and per-node metric statistics."""

import os
from typing import Final, Literal

# polars allocates through its own jemalloc, which keeps freed pages for 10 s by default: a
# report runs for seconds, so every group-by's and join's scratch memory stayed resident and
# added up to the peak. Give pages back as they are freed (measured: no CPU cost, about 35 MB
# less peak RSS on a 94.5k-task log). It only takes effect if polars was not imported yet, and
# a value the user set is kept.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")

ENGINE: Final[Literal["in-memory"]] = "in-memory"
"""The polars engine every query of the aggregation runs on. polars' default ("auto") chose its
streaming engine for some of them, which on a million task rows took two to four times the
scratch memory of the in-memory engine (sorting every task by executor, launch and index: +60
against +21 MB), for no gain in time on two cores."""
