"""The progress of a batch run on a terminal: applications done of the total, and failures."""

from __future__ import annotations

import sys
from typing import Any


class Progress:
    """Applications done / total and failures, drawn with rich on a terminal, else silent."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.failed = 0
        self._bar: Any = None
        self._task: Any = None
        if total and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("analyzing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]} failed"),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._bar.add_task("batch", total=total, failed=0)
            self._bar.start()

    def count_failure(self) -> None:
        """Note one more failed application."""
        self.failed += 1
        if self._bar is not None:
            self._bar.update(self._task, failed=self.failed)

    def advance(self, n_done: int) -> None:
        """Show `n_done` applications finished (an engine's `on_progress`)."""
        if self._bar is not None:
            self._bar.update(self._task, completed=min(n_done, self.total))

    def close(self) -> None:
        """Erase the bar."""
        if self._bar is not None:
            self._bar.stop()
