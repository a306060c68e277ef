"""A wall-clock budget for one recall call, enforced inside SQLite and inside regex matching.

SQLite work is cut by a progress handler (the query fails with "interrupted"). Python's
regex engine checks for signals while it backtracks, so on the main thread a
catastrophic pattern is cut by an interval timer whose handler raises
:class:`DeadlineExceeded`; elsewhere the deadline is checked between rows.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from types import FrameType


class DeadlineExceeded(Exception):
    """The call ran out of time; callers stop and report a truncated result."""


class Deadline:
    """Milliseconds from now, with helpers to bound queries and regex matching."""

    def __init__(self, ms: int) -> None:
        self.ms = ms
        self.started = time.monotonic()
        self.ends = self.started + ms / 1000
        self.hit = False

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.ends - time.monotonic())

    def expired(self) -> bool:
        """True once the time is up (and remembers that it was hit)."""
        if time.monotonic() >= self.ends:
            self.hit = True
        return self.hit

    def elapsed_ms(self) -> int:
        """Milliseconds since the deadline was set."""
        return int((time.monotonic() - self.started) * 1000)

    @contextlib.contextmanager
    def bound_sqlite(self, conn: sqlite3.Connection) -> Iterator[None]:
        """Abort any statement on ``conn`` that runs past the deadline."""

        def check() -> int:
            return 1 if time.monotonic() >= self.ends else 0

        conn.set_progress_handler(check, 20_000)
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                self.hit = True
                raise DeadlineExceeded() from None
            raise
        finally:
            conn.set_progress_handler(None, 0)

    @contextlib.contextmanager
    def bound_python(self) -> Iterator[None]:
        """Interrupt long Python work (a runaway regex) when the deadline passes."""
        usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
        if not usable:
            yield
            return
        left = self.remaining()
        if left <= 0:
            self.hit = True
            raise DeadlineExceeded()

        def fire(signum: int, frame: FrameType | None) -> None:
            self.hit = True
            raise DeadlineExceeded()

        previous = signal.signal(signal.SIGALRM, fire)
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
