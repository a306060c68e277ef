"""What a warm `lcm serve` acknowledges stays in lcm.db, whoever else opens the file.

SQLite's locks are POSIX locks: one descriptor closed anywhere in the server process drops
them all, and the next process that opens the file then thinks it is the last user,
checkpoints and deletes the ``-wal`` under the server (every later commit lands in an
unlinked file). So every operation of the registry (the parity suite's cases, plus
requests that name lcm.db itself as an input file) runs through one server, and after
each one:

- another process opens lcm.db read-write and closes it (the ``sqlite3`` shell, a backup
  script; in the slow variants a second `lcm serve`, or `lcm backup`);
- the server acknowledges a marker message, the neighbour opens and closes the file again,
  and every marker acknowledged so far must be readable from outside, once;
- the server must still hold its SQLite lock on lcm.db (``/proc/locks``).

After the server exits, every marker is in the file exactly once and the file is sound.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.commands.test_doors import LCM, Client
from tests.commands.test_parity import CASES, EXAMPLE, _hook_params, _prepare

pytestmark = pytest.mark.slow  # neighbour processes against a serving file

MARKER_KEY = "agent:main:marker"


def _neighbour_sqlite(db: Path) -> None:
    """Another process opens lcm.db read-write, reads, and closes it."""
    code = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\n"
        "c.execute('SELECT COUNT(*) FROM messages').fetchone()\n"
        "c.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _neighbour_serve(db: Path) -> None:
    """A second `lcm serve` reads, writes a message of its own, and exits."""
    requests = [
        {"id": 1, "method": "status", "params": {}},
        {
            "id": 2,
            "method": "session.ingest",
            "params": {
                "sessionId": "s-neighbour",
                "sessionKey": "agent:main:neighbour",
                "messages": [{"role": "user", "content": "from the second server"}],
            },
        },
    ]
    done = subprocess.run(
        [*LCM, "--db", str(db), "serve", "--stdio"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert all("result" in a for a in answers), answers


def _neighbour_backup(db: Path) -> None:
    """`lcm backup` copies the live file (and checkpoints what it can)."""
    out = db.parent / "neighbour-backups" / f"b{len(list(db.parent.glob('neighbour-backups/*.db')))}.db"
    out.parent.mkdir(exist_ok=True)
    done = subprocess.run(
        [*LCM, "--db", str(db), "backup", "--out", str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def lock_count(pid: int, path: Path) -> int:
    """POSIX locks process PID holds on PATH's file (``/proc/locks``: device and inode, as
    an inode number alone may name a file on another file system)."""
    info = os.stat(path)
    wanted = (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    count = 0
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  READ 1234 fd:01:5678 1073741826 1073742335" (a "->" may lead);
        # the device is MAJOR:MINOR in hex, the inode decimal.
        fields = [f for f in fields if f != "->"]
        if len(fields) >= 6 and fields[1] == "POSIX" and int(fields[4]) == pid:
            major, minor, inode = fields[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == wanted:
                count += 1
    return count


def stored_markers(db: Path) -> list[str]:
    """The marker messages lcm.db holds, read from this (another) process."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT m.content FROM messages m JOIN conversations c USING (conversation_id)"
            " WHERE c.session_key = ? ORDER BY m.message_id",
            (MARKER_KEY,),
        ).fetchall()
    return [str(r[0]) for r in rows]


def requests(root: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every case of every operation, then requests that name lcm.db itself as an input."""
    for name, cases in CASES.items():
        for case in cases:
            yield name, _hook_params(case, root)
    db = str(root / "lcm.db")
    yield "session.ingest", {"sessionId": "s-hostile", "file": [db]}
    yield "session.bootstrap", {"sessionId": "s-hostile", "sessionFile": db}
    yield (
        "session.after_turn",
        {"sessionId": "s-hostile", "sessionFile": db, "messages": [], "prePromptMessageCount": 0},
    )
    yield "backup.verify", {"path": db}
    yield "prune.restore", {"archive": db}
    yield "migrate.sessions", {"file": [db]}
    yield "rotate", {"sessionKey": "agent:main:main", "sessionFile": db}


def run_with_neighbour(tmp_path: Path, neighbour: Callable[[Path], None]) -> None:
    root = tmp_path / "state"
    shutil.copytree(EXAMPLE, root)
    _prepare(root)
    db = root / "lcm.db"
    client = Client(root)
    acknowledged: list[str] = []
    try:
        for n, (method, params) in enumerate(requests(root), start=1):
            client.ask(f"op-{n}", method, params)  # success or a clean error: both are fine
            neighbour(db)
            marker = f"marker {n} after {method}"
            answer = client.ask(
                f"marker-{n}",
                "session.ingest",
                {
                    "sessionId": "s-marker",
                    "sessionKey": MARKER_KEY,
                    "messages": [{"role": "user", "content": marker}],
                },
            )
            assert answer.get("result", {}).get("ok"), (method, answer)
            acknowledged.append(marker)
            neighbour(db)
            assert lock_count(client.proc.pid, db) > 0, f"lcm serve lost its locks on lcm.db after {method}"
            assert stored_markers(db) == acknowledged, f"an acknowledged marker is missing after {method}"
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    assert stored_markers(db) == acknowledged
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_a_neighbour_opening_lcm_db_loses_nothing_serve_acknowledged(tmp_path: Path) -> None:
    run_with_neighbour(tmp_path, _neighbour_sqlite)


def test_a_second_lcm_serve_and_lcm_backup_beside_serve_lose_nothing_soak(tmp_path: Path) -> None:
    """The neighbours take turns: a second `lcm serve`, then `lcm backup`, then again."""
    count = [0]

    def serve_or_backup(db: Path) -> None:
        count[0] += 1
        (_neighbour_serve if count[0] % 2 else _neighbour_backup)(db)

    run_with_neighbour(tmp_path, serve_or_backup)


def _ingest(client: Client, request_id: str, text: str) -> dict[str, Any]:
    return client.ask(
        request_id,
        "session.ingest",
        {"sessionId": "s-marker", "sessionKey": MARKER_KEY, "messages": [{"role": "user", "content": text}]},
    )


def test_a_file_replaced_under_serve_is_reopened_never_written_blind(tmp_path: Path) -> None:
    """Another process copies a file over lcm.db (as a forced restore does), or deletes its
    -wal: serve never acknowledges a write that went to the unlinked file, and writes to
    the file at the path from then on."""
    root = tmp_path / "state"
    shutil.copytree(EXAMPLE, root)
    db = root / "lcm.db"
    client = Client(root)
    try:
        assert _ingest(client, "1", "before the copy")["result"]["ok"]
        replacement = tmp_path / "replacement.db"
        with (
            contextlib.closing(sqlite3.connect(db)) as source,
            contextlib.closing(sqlite3.connect(replacement)) as target,
        ):
            source.backup(target)
        os.replace(replacement, db)  # the old inode stays open in serve
        assert _ingest(client, "2", "after the copy")["result"]["ok"]
        assert stored_markers(db) == ["before the copy", "after the copy"]

        os.unlink(str(db) + "-wal")  # a careless cleanup: serve's commits now go nowhere
        lost = _ingest(client, "3", "into a deleted WAL")
        assert lost["error"]["code"] == "DATABASE_REPLACED", lost
        retried = _ingest(client, "4", "retried")
        assert retried["result"]["ok"], retried
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    assert stored_markers(db) == ["before the copy", "after the copy", "retried"]
