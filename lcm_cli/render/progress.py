"""A rich progress bar on stderr for long operations, only when stderr is a terminal.

Operations report ``(stage, done, total)`` through ``Context.report_progress``; this is the
listener the CLI door attaches. Nothing is drawn for pipes or files, so stdout stays pure
JSON and logs stay clean.
"""

from __future__ import annotations

import sys
from typing import Any


class TerminalProgress:
    """Draws one bar, started on the first report and stopped on stage ``done``."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(stage, total=total)
        self._progress.update(self._task, description=stage, completed=done, total=total)
        if stage == "done":
            self.close()

    def close(self) -> None:
        """Stop drawing (idempotent)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def terminal_progress() -> TerminalProgress | None:
    """A progress listener when stderr is a terminal, else None."""
    return TerminalProgress() if sys.stderr.isatty() else None
