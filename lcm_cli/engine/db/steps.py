"""Long work in bounded write transactions, as the live agent needs it.

The rule (docs/architecture.md, "How lcm keeps the live agent from waiting"): no lcm
command holds the write lock more than about 100 ms at a time. Work that touches many
rows (counting the totals, prune's deletes, giving free pages back) runs as steps, each
one ``BEGIN IMMEDIATE`` sized from the time the last one held the lock, and after each
step pauses about as long as it held the lock. The pause matters as much as the size: a
writer that found the lock taken sleeps in SQLite's busy handler (1, 2, 5, 10, 15, 20,
25 ms and longer), so back-to-back steps with no gap could keep it out for seconds.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: What one step aims to hold the write lock for. Cost per row varies a lot (the page
#: cache, FTS5 merging its segments at commit), so the aim leaves room under 100 ms.
STEP_SECONDS = 0.025
#: The pause after a step: at least this, at most ``MAX_PAUSE_SECONDS``.
MIN_PAUSE_SECONDS = 0.005
MAX_PAUSE_SECONDS = 0.1


def next_step_size(size: int, held: float, target: float = STEP_SECONDS, *, floor: int, ceiling: int) -> int:
    """The next step's size: scaled so it holds about ``target`` seconds, growing at most 1.5×."""
    grown = size + size // 2
    if held <= 0:
        return max(floor, min(ceiling, grown))
    scaled = int(size * target / held)
    return max(floor, min(ceiling, grown, scaled))


def yield_to_writers(held: float) -> None:
    """Pause after a step that held the write lock ``held`` seconds, so waiting writers get it."""
    time.sleep(min(MAX_PAUSE_SECONDS, max(MIN_PAUSE_SECONDS, held)))


class Held:
    """How long one step held the write lock (``seconds``, set when its COMMIT is done)."""

    seconds: float = 0.0


@contextmanager
def step(conn: sqlite3.Connection) -> Iterator[Held]:
    """One step: ``BEGIN IMMEDIATE``, the block, ``COMMIT``; any error rolls it back.

    The lock is timed from ``BEGIN IMMEDIATE`` to the end of ``COMMIT``; the caller sizes
    the next step from it (:func:`next_step_size`) and pauses (:func:`yield_to_writers`).
    """
    held = Held()
    conn.execute("BEGIN IMMEDIATE")
    started = time.perf_counter()  # the lock is held from here
    try:
        yield held
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    held.seconds = time.perf_counter() - started
