"""A live writer in another process, as the agent host is: it commits every few ms and
times how long each ``BEGIN IMMEDIATE`` waited for the write lock.

Used by the tests that hold lcm to its rule (no command keeps the write lock more than
about 100 ms at a time): run the command while the probe writes, then read the probe's
longest wait. Real SQLite, real processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

_SCRIPT = r"""
import json, sqlite3, sys, threading, time
path, mode, interval, conversation = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
conn = sqlite3.connect(path, isolation_level=None, timeout=60)
conn.execute("PRAGMA busy_timeout = 60000")
conn.execute("PRAGMA journal_mode = WAL")
if mode == "table":
    conn.execute("CREATE TABLE IF NOT EXISTS probe_writes (id INTEGER PRIMARY KEY, at REAL)")
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
waits, errors, ids = [], [], []
seq = 10_000_000
print("ready", flush=True)
while not stop.is_set():
    started = time.perf_counter()
    try:
        conn.execute("BEGIN IMMEDIATE")
        waits.append(time.perf_counter() - started)
        if mode == "table":
            cur = conn.execute("INSERT INTO probe_writes (at) VALUES (?)", (time.time(),))
        else:
            seq += 1
            cur = conn.execute(
                "INSERT INTO messages (conversation_id, seq, role, content, token_count)"
                " VALUES (?, ?, 'user', 'probe', 1)",
                (conversation, seq),
            )
        conn.execute("COMMIT")
        ids.append(cur.lastrowid)
    except sqlite3.Error as exc:
        errors.append(str(exc))
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    time.sleep(interval)
conn.close()
print(json.dumps({"waits": waits, "errors": errors, "ids": ids}), flush=True)
"""


class WriterProbe:
    """Run a committing writer against ``path`` for the length of a ``with`` block.

    ``mode`` ``table`` inserts into its own ``probe_writes`` table; ``messages`` inserts a
    message into ``conversation`` (the live host's write, with every trigger firing).
    After the block: :attr:`waits` (seconds each BEGIN IMMEDIATE waited), :attr:`errors`,
    :attr:`ids` (rowids it committed).
    """

    def __init__(
        self, path: Path | str, *, mode: str = "table", interval: float = 0.005, conversation: int = 0
    ):
        self.argv = [sys.executable, "-c", _SCRIPT, str(path), mode, str(interval), str(conversation)]
        self.waits: list[float] = []
        self.errors: list[str] = []
        self.ids: list[int] = []
        self._proc: subprocess.Popen[str] | None = None
        self.elapsed = 0.0  # seconds the block ran

    def __enter__(self) -> WriterProbe:
        self._started = time.perf_counter()
        self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        assert self._proc.stdout.readline().strip() == "ready"
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        self.elapsed = time.perf_counter() - self._started
        self._proc.stdin.write("stop\n")
        self._proc.stdin.flush()
        out = self._proc.stdout.read()
        self._proc.wait(timeout=120)
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        self.waits, self.errors, self.ids = result["waits"], result["errors"], result["ids"]

    @property
    def longest_wait(self) -> float:
        """The longest time one BEGIN IMMEDIATE waited, in seconds."""
        return max(self.waits, default=0.0)

    @property
    def wait_bound(self) -> float:
        """The longest wait a bounded writer may cause on any machine: half a second (one
        bounded step plus a loaded scheduler's delay), or a quarter of the whole run when that
        is longer. A command that held the lock for its whole run fails either way."""
        return max(0.5, self.elapsed / 4)

    def never_waited_long(self) -> bool:
        """No error, and no wait past :attr:`wait_bound`."""
        return not self.errors and self.longest_wait < self.wait_bound

    def summary(self) -> str:
        """Commits, errors, longest and p99 wait, for an assertion message."""
        ordered = sorted(self.waits)
        p99 = ordered[int(len(ordered) * 0.99)] if ordered else 0.0
        return (
            f"{len(self.waits)} commits, {len(self.errors)} errors, longest wait "
            f"{self.longest_wait * 1000:.1f} ms (bound {self.wait_bound * 1000:.0f} ms over a "
            f"{self.elapsed:.1f} s run), p99 {p99 * 1000:.1f} ms"
        )
