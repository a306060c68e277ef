"""Read-only connections to lcm.db.

A live agent host may be writing the same file, so readers open it with a read-only
URI (``mode=ro``, never ``immutable=1``, which would ignore the WAL), switch on
``query_only``, wait a bounded time for locks, and never create a missing file.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from functools import partial
from urllib.parse import quote

from lcm_cli.engine.errors import LcmError

SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT_MS = 5000


#: The ``text_factory`` of every lcm.db connection: a TEXT value that is not valid UTF-8
#: (written by another tool, or damaged) decodes with U+FFFD instead of failing the whole
#: query, so one bad row never blocks a conversation. `lcm doctor` reports such rows
#: (``storage.undecodable-text``) and `doctor apply` re-encodes them. ``partial(str, …)``
#: keeps the decode in C (about 0.2 µs more per value than the default).
decode_text = partial(str, encoding="utf-8", errors="replace")


def busy_timeout_ms(env: os._Environ[str] | dict[str, str] | None = None) -> int:
    """Bounded lock wait for readers: ``LCM_BUSY_TIMEOUT_MS`` or 5000 ms."""
    raw = (env if env is not None else os.environ).get("LCM_BUSY_TIMEOUT_MS", "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_BUSY_TIMEOUT_MS


def require_sqlite_file(path: str) -> os.stat_result:
    """Check ``path`` is an existing regular file that SQLite can call a database.

    DATABASE_NOT_FOUND when it is missing or not a regular file; DATABASE_OPEN_FAILED when
    it cannot be read or lacks the SQLite header (an empty file is an empty database).
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
            "DATABASE_OPEN_FAILED",
            f"{path} is not an SQLite database. Check --db / LCM_DATABASE_PATH.",
            details,
        )
    return info


def open_read_only(path: str, *, timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """Open an existing lcm.db read-only, or raise a structured error.

    DATABASE_NOT_FOUND when the path is missing or not a regular file; DATABASE_OPEN_FAILED
    when it is not an SQLite database or SQLite refuses to open it.
    """
    require_sqlite_file(path)
    details = {"databasePath": path}
    # Percent-encode so '?', '#' and '%' in a path cannot be read as URI syntax.
    uri = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout_ms / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise LcmError("DATABASE_OPEN_FAILED", f"SQLite could not open {path}: {exc}.", details) from None
    conn.text_factory = decode_text
    try:
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        conn.close()
        raise LcmError("DATABASE_OPEN_FAILED", f"SQLite could not open {path}: {exc}.", details) from None
    return conn


#: What SQLite says when the file's pages or schema are damaged.
_CORRUPTION_MARKERS = ("malformed", "not a database", "corrupt")


def _sqlite_text(exc: BaseException) -> str | None:
    """SQLite's message in ``exc``; also from the UnicodeDecodeError Python raises when the
    message itself quotes damaged schema bytes (``near "CRE\xbeTE": syntax error``)."""
    if isinstance(exc, sqlite3.Error):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, bytes):
        text = decode_text(exc.object)
        return text if text.startswith(("malformed database schema", "database disk image")) else None
    return None


def is_corruption(exc: BaseException) -> bool:
    """True for a SQLite error (or its translation) that means the file itself is damaged."""
    if isinstance(exc, LcmError):
        return exc.code == "DATABASE_CORRUPT"
    text = _sqlite_text(exc)
    return text is not None and any(m in text for m in _CORRUPTION_MARKERS)


def translate_database_failure(exc: BaseException, path: str, timeout_ms: int) -> LcmError | None:
    """:func:`translate_sqlite_error` for any exception a query raised; None when it is not
    SQLite's (a UnicodeDecodeError that does not carry a SQLite message is a bug, not a file)."""
    if isinstance(exc, sqlite3.Error):
        return translate_sqlite_error(exc, path, timeout_ms)
    text = _sqlite_text(exc)
    return corrupt_database_error(path, text) if text is not None and is_corruption(exc) else None


def corrupt_database_error(path: str, text: str) -> LcmError:
    """``DATABASE_CORRUPT``: what SQLite said, and the two commands that help."""
    return LcmError(
        "DATABASE_CORRUPT",
        f"{path} is damaged ({text}). Run `lcm doctor` to see what it can still read, then "
        "`lcm backup list` and `lcm backup restore PATH --apply` to go back to a good backup.",
        {"databasePath": path, "sqliteError": text},
    )


def translate_sqlite_error(exc: sqlite3.Error, path: str, timeout_ms: int) -> LcmError:
    """Map an error raised while querying to DATABASE_BUSY, DATABASE_CORRUPT or DATABASE_QUERY_FAILED."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return LcmError(
            "DATABASE_BUSY",
            f"{path} stayed locked by another writer for {timeout_ms} ms. Retry shortly, or "
            "raise LCM_BUSY_TIMEOUT_MS.",
            {"databasePath": path, "waitedMs": timeout_ms},
        )
    if any(m in text for m in _CORRUPTION_MARKERS):
        return corrupt_database_error(path, text)
    return LcmError(
        "DATABASE_QUERY_FAILED",
        f"Database query failed: {text}.",
        {"databasePath": path},
    )
