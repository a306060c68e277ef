"""A wall-clock budget for one recall call, enforced inside SQLite and inside regex matching.

SQLite work is cut by a progress handler (the query fails with "interrupted"), from
whichever thread runs it. Regex scans get the time left and are cut by
:mod:`lcm_cli.engine.recall.regex_worker` (in-process on the main thread, in a killable
helper process elsewhere); other loops check the deadline between rows.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator


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
