"""lcm never closes a descriptor on a file it holds an SQLite connection on.

Closing any descriptor on a database file drops every POSIX lock the process holds on it;
``open_input`` keeps such a descriptor open until the last connection is gone, and every
SQLite connection lcm opens goes through ``engine/db/connection.py``.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from lcm_cli.engine.core import held_files
from lcm_cli.engine.core.held_files import is_held, open_input, open_input_text
from lcm_cli.engine.db.connection import connect, require_sqlite_file
from tests.test_neighbours import lock_count

PACKAGE = Path(__file__).resolve().parents[3] / "lcm_cli"


def _wal_db(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_reading_a_held_database_keeps_the_connections_locks(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    _wal_db(db)
    conn = connect(str(db))
    conn.execute("SELECT COUNT(*) FROM t").fetchone()  # WAL mode: a shared lock for the connection's life
    held = lock_count(os.getpid(), db)
    assert held > 0 and is_held(str(db)) and is_held(str(db) + "-wal")
    for _ in range(3):
        with open_input(str(db)) as handle:
            assert handle.read(16) == b"SQLite format 3\x00"
        require_sqlite_file(str(db))
        # Closing a descriptor on the file would drop every lock the process holds on it.
        assert lock_count(os.getpid(), db) >= held
    fds = _open_fds()
    for _ in range(5):  # later reads share the one parked descriptor
        with open_input(str(db)) as handle:
            handle.seek(16)
            assert len(handle.read(2)) == 2
    assert _open_fds() == fds
    conn.close()
    assert not is_held(str(db))
    assert _open_fds() < fds  # the parked descriptor went with the last connection
    assert not held_files._parked


def test_a_connection_dropped_without_close_releases_its_claim(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    _wal_db(db)
    conn = connect(str(db))
    assert is_held(str(db))
    del conn
    gc.collect()  # the connection and its statement cache form a cycle
    assert not is_held(str(db))


def test_a_connection_the_collector_frees_while_this_thread_holds_the_lock_does_not_deadlock(
    tmp_path: Path,
) -> None:
    """The garbage collector runs finalizers wherever it is triggered, also inside this module
    with the lock taken (it hung a backup test that way): the dropped claim waits for the
    holder, which releases it before letting go. In a child process, so a hang is a failure."""
    db = tmp_path / "lcm.db"
    _wal_db(db)
    script = (
        "import gc, sys\n"
        "from lcm_cli.engine.core import held_files\n"
        "from lcm_cli.engine.db.connection import connect\n"
        "conn = connect(sys.argv[1])\n"
        "with held_files._locked:\n"
        "    del conn\n"
        "    gc.collect()  # the connection's finalizer runs here, the lock taken\n"
        "    assert held_files._deferred, 'the claim should wait for the holder'\n"
        "assert not held_files._deferred and not held_files.is_held(sys.argv[1])\n"
        "print('released')\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(db)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "released", out.stderr


def test_open_input_reads_like_open(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    text.write_bytes("one\r\ntwo\nthré\n".encode())
    with open_input(str(text)) as handle:
        assert handle.readline() == b"one\r\n"
        assert handle.read() == "two\nthré\n".encode()
        handle.seek(0)
        assert list(handle) == [b"one\r\n", b"two\n", "thré\n".encode()]
    with open_input_text(str(text)) as handle:
        assert handle.read() == "one\ntwo\nthré\n"
    for missing, error in ((tmp_path / "nope", FileNotFoundError), (tmp_path, IsADirectoryError)):
        try:
            open_input(str(missing))
        except error:
            pass
        else:
            raise AssertionError(f"{missing} opened")


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return ""


def test_lcm_opens_files_for_reading_and_sqlite_files_through_one_path() -> None:
    """No builtin ``open``/``gzip.open`` outside ``held_files``; ``sqlite3.connect`` on a file
    only in ``engine/db/connection.py`` (in-memory databases aside)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        for call in _calls(ast.parse(path.read_text(), relative)):
            name = _name(call)
            where = f"{relative}:{call.lineno} {name}"
            if name in ("open", "io.open", "gzip.open") and relative != "engine/core/held_files.py":
                found.append(where)
            if name == "sqlite3.connect" and relative != "engine/db/connection.py":
                first = call.args[0] if call.args else None
                if not (isinstance(first, ast.Constant) and "memory" in str(first.value)):
                    found.append(where)
    assert not found, (
        "open files for reading with open_input, SQLite files with connection.connect: " + ", ".join(found)
    )
