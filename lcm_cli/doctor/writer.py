"""The write side shared by doctor apply, doctor clean and prune: a writer connection with
a bounded busy wait, one ``BEGIN IMMEDIATE`` per unit, and the backup taken first."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db.connection import connect, decode_text, require_sqlite_file, translate_sqlite_error


def open_writer(path: str, timeout_ms: int) -> sqlite3.Connection:
    """A writable connection with the writer pragmas lossless-claw uses and our busy timeout."""
    require_sqlite_file(path)
    conn = connect(path, timeout_ms=timeout_ms)
    conn.text_factory = decode_text
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Temporary tables and sorts spill to disk: memory stays bounded on a 10 GB file.
        conn.execute("PRAGMA temp_store = FILE")
    except sqlite3.Error as exc:
        conn.close()
        raise translate_sqlite_error(exc, path, timeout_ms) from None
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def unit_of_work(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` ... ``COMMIT``; anything raised rolls the whole unit back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def is_busy(exc: BaseException) -> bool:
    """True for SQLite's "database is locked/busy" (another writer held the lock too long)."""
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def backup_first(database_path: str, label: str) -> dict[str, Any]:
    """An online backup (``<db>.<label>-<stamp>-<rand>.bak`` + manifest) before any write."""
    from lcm_cli.engine.maintenance.backup.create import create_backup

    result = create_backup(database_path, label=label, quick=True)
    return {"backupPath": result["backupPath"], "manifestPath": result["manifestPath"]}


def busy_error(path: str, timeout_ms: int, done: list[Any]) -> LcmError:
    """DATABASE_BUSY after the bounded wait, saying which units were already committed."""
    err = translate_sqlite_error(sqlite3.OperationalError("database is locked"), path, timeout_ms)
    details = dict(err.details) if isinstance(err.details, dict) else {}
    details["committedUnits"] = done
    return LcmError(err.code, err.message + " Units listed in details were already committed.", details)
