"""Helpers for tests that kill or orphan processes, or run one beside lcm."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


def process_gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return any(line.startswith("State:") and "Z" in line for line in status)
    except OSError:
        return True


@contextlib.contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Another process holds an exclusive lock on ``path``, switched to a rollback journal
    first so that the lock blocks readers too, until the block ends."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    code = (
        "import sqlite3, time\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "time.sleep(30)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()
