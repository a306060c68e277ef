"""Read-only connections to lcm.db.

A live agent host may be writing the same file, so readers open it with a read-only
URI (``mode=ro``, never ``immutable=1``, which would ignore the WAL), switch on
``query_only``, wait a bounded time for locks, and never create a missing file.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from urllib.parse import quote

from lcm_cli.engine.errors import LcmError

SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT_MS = 5000


def busy_timeout_ms(env: os._Environ[str] | dict[str, str] | None = None) -> int:
    """Bounded lock wait for readers: ``LCM_BUSY_TIMEOUT_MS`` or 5000 ms."""
    raw = (env if env is not None else os.environ).get("LCM_BUSY_TIMEOUT_MS", "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_BUSY_TIMEOUT_MS


def require_sqlite_file(path: str, *, not_a_database: str = "DATABASE_OPEN_FAILED") -> os.stat_result:
    """Check ``path`` is an existing regular file that SQLite can call a database.

    DATABASE_NOT_FOUND when it is missing or not a regular file; DATABASE_OPEN_FAILED when
    it cannot be read; ``not_a_database`` when it lacks the SQLite header (an empty file
    is an empty database).
    """
    details = {"databasePath": path}
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        raise LcmError(
            "DATABASE_NOT_FOUND",
            f"No LCM database at {path}. Pass --db PATH, set LCM_DATABASE_PATH, or point "
            "--openclaw-dir at the OpenClaw state dir that holds lcm.db.",
            details,
        )
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise LcmError(
            "DATABASE_OPEN_FAILED",
            f"Cannot read {path}: {exc.strerror or exc}. Check the file's permissions.",
            details,
        ) from None
    if header and header != SQLITE_HEADER:
        raise LcmError(
            not_a_database,
            f"{path} is not an SQLite database (file is not a database). Check --db / LCM_DATABASE_PATH.",
            details,
        )
    return info


def open_read_only(path: str, *, timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """Open an existing lcm.db read-only, or raise a structured error.

    DATABASE_NOT_FOUND when the path is missing or not a regular file; DATABASE_OPEN_FAILED
    when SQLite refuses to open it; DATABASE_QUERY_FAILED when it is not an SQLite database
    (as the reference, whose lazy open meets that at its first query).
    """
    require_sqlite_file(path, not_a_database="DATABASE_QUERY_FAILED")
    details = {"databasePath": path}
    # Percent-encode so '?', '#' and '%' in a path cannot be read as URI syntax.
    uri = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout_ms / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise LcmError("DATABASE_OPEN_FAILED", f"SQLite could not open {path}: {exc}.", details) from None
    try:
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        conn.close()
        raise LcmError("DATABASE_OPEN_FAILED", f"SQLite could not open {path}: {exc}.", details) from None
    return conn


def translate_sqlite_error(exc: sqlite3.Error, path: str, timeout_ms: int) -> LcmError:
    """Map an error raised while querying to DATABASE_BUSY or DATABASE_QUERY_FAILED."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return LcmError(
            "DATABASE_BUSY",
            f"{path} stayed locked by another writer for {timeout_ms} ms. Retry shortly, or "
            "raise LCM_BUSY_TIMEOUT_MS.",
            {"databasePath": path, "waitedMs": timeout_ms},
        )
    if "not a database" in text or "malformed" in text:
        return LcmError(
            "DATABASE_QUERY_FAILED",
            f"{path} is not a readable SQLite database ({text}). Check --db, or run "
            "`PRAGMA integrity_check` on a copy.",
            {"databasePath": path},
        )
    return LcmError(
        "DATABASE_QUERY_FAILED",
        f"Database query failed: {text}.",
        {"databasePath": path},
    )
