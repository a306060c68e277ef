"""Read-only connections to lcm.db.

A live agent host may be writing the same file, so readers open it with a read-only
URI (``mode=ro``), switch on ``query_only``, wait a bounded time for locks, and never
create a missing file.

``immutable=1`` (which ignores the WAL and all locking) is used in one case only: a WAL
database that was cleanly closed (no ``-wal`` file, or an empty one) whose ``-shm`` WAL
index this process cannot create (the directory refuses writes, or something that is not
a file holds the name). SQLite cannot read such a file through ``mode=ro`` at all; with
no WAL content there is nothing immutable would ignore. :func:`immutable_reason` decides,
and the envelope's ``meta.databaseAccess`` says so.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from functools import partial

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.held_files import hold, is_held, open_input

if TYPE_CHECKING:
    from typing import Literal

    from lcm_cli.engine.core.held_files import Hold

SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT_MS = 5000


#: The ``text_factory`` of every lcm.db connection: a TEXT value that is not valid UTF-8
#: (written by another tool, or damaged) decodes with U+FFFD instead of failing the whole
#: query, so one bad row never blocks a conversation. `lcm doctor` reports such rows
#: (``storage.undecodable-text``) and `doctor apply` re-encodes them. ``partial(str, …)``
#: keeps the decode in C (about 0.2 µs more per value than the default).
decode_text = partial(str, encoding="utf-8", errors="replace")


def _null(value: None) -> None:
    return None


def bind_none_directly() -> None:
    """Let the sqlite3 module bind ``None`` without first searching for an adapter.

    Python 3.11's module binds int, float, str and bytes as they are, but for ``None`` it
    asks the adapter protocol, whose failed attribute lookup formats an AttributeError
    each time: about a third of an insert's cost when half its values are NULL (the
    importer's staged rows). A registered adapter answers at once; it returns ``None``,
    which is bound as NULL as before. Process-wide and idempotent.
    """
    sqlite3.register_adapter(type(None), _null)


class HeldConnection(sqlite3.Connection):
    """An SQLite connection that registers the file it holds for its lifetime.

    While it is open, :func:`lcm_cli.engine.core.held_files.open_input` never closes a
    descriptor on that file (which would drop this connection's POSIX locks).
    """

    _hold: Hold | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._hold is not None:
                self._hold.release()
                self._hold = None

    def __del__(self) -> None:
        # A connection dropped without close() is closed by SQLite when it is freed; its
        # claim goes with it (after the file's descriptors: SQLite closes them first).
        if self._hold is not None:
            self._hold.release_from_finalizer()


def connect(
    path: str,
    *,
    uri: str | None = None,
    timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    isolation_level: Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None = None,
) -> HeldConnection:
    """Every SQLite connection lcm opens on a file (``uri``: the URI to open ``path`` by).

    The one connection path: the file is registered as held (see
    :mod:`lcm_cli.engine.core.held_files`) before SQLite can take a lock on it.
    """
    claim = hold(path)
    try:
        conn = sqlite3.connect(
            uri if uri is not None else path,
            uri=uri is not None,
            timeout=timeout_ms / 1000,
            isolation_level=isolation_level,
            factory=HeldConnection,
        )
    except BaseException:
        claim.release()
        raise
    conn._hold = claim
    return conn


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
    if "\x00" in path:  # a config's dbPath can hold one; os.stat would raise ValueError
        raise LcmError(
            "DATABASE_NOT_FOUND",
            f"The database path {path!r} holds a NUL character, which no file name can. Fix dbPath "
            "(or databasePath) in the config, or pass --db PATH.",
            details,
        )
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
    if is_held(path):
        return info  # this process has a connection on it: an SQLite file, not to be reopened
    try:
        with open_input(path) as handle:
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
            {**details, "reason": "not-sqlite"},
        )
    return info


def immutable_reason(path: str) -> str | None:
    """Why ``path`` must be read through ``immutable=1``, or None when ``mode=ro`` works.

    Only a cleanly closed WAL database (WAL in its header, no ``-wal`` or an empty one)
    whose ``-shm`` cannot be created by this process qualifies: it is a regular file
    already (None), a non-file holds its name, or the directory refuses writes.
    """
    shm = path + "-shm"
    try:
        shm_info: os.stat_result | None = os.lstat(shm)
    except OSError:
        shm_info = None
    if shm_info is not None and stat.S_ISREG(shm_info.st_mode):
        return None
    try:
        wal_size = os.stat(path + "-wal").st_size
    except FileNotFoundError:
        wal_size = 0
    except OSError:
        return None
    if wal_size:
        return None  # committed frames in the WAL: immutable would not see them
    try:
        with open_input(path) as handle:
            header = handle.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[18] != 2:  # file format read version 2 = WAL
        return None
    if shm_info is not None:
        return f"{shm} exists and is not a file, so SQLite cannot keep its WAL index there"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{directory} is not writable, so SQLite cannot create the WAL index {shm}"
    return None


def database_uri(path: str, *, immutable: bool = False) -> str:
    """The read-only URI of ``path``, percent-encoded so '?', '#' and '%' stay path characters."""
    return "file:" + _uri_path(os.path.abspath(path)) + "?mode=ro" + ("&immutable=1" if immutable else "")


def _uri_path(path: str) -> str:
    """``path`` for an SQLite URI: every character but ``A-Za-z0-9/_.-~`` as UTF-8 ``%XX``.

    What ``urllib.parse.quote`` gives, without importing urllib (about 2 ms of every read
    command's start-up); SQLite decodes the escapes back into the path's bytes.
    """
    return "".join(
        chr(b) if chr(b) in _URI_SAFE else f"%{b:02X}" for b in path.encode("utf-8", "surrogateescape")
    )


_URI_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_.-~")


def open_read_only(path: str, *, timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """Open an existing lcm.db read-only, or raise a structured error.

    DATABASE_NOT_FOUND when the path is missing or not a regular file; DATABASE_OPEN_FAILED
    when SQLite refuses to open it; DATABASE_QUERY_FAILED when it is not an SQLite database
    (as the reference, whose lazy open meets that at its first query).
    """
    return open_read_only_access(path, timeout_ms=timeout_ms)[0]


def open_read_only_access(
    path: str, *, timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
) -> tuple[sqlite3.Connection, dict[str, str] | None]:
    """:func:`open_read_only`, plus ``{mode: "immutable", reason}`` when it had to use immutable."""
    require_sqlite_file(path, not_a_database="DATABASE_QUERY_FAILED")
    details = {"databasePath": path}
    reason = immutable_reason(path)
    access = {"mode": "immutable", "reason": reason} if reason else None
    uri = database_uri(path, immutable=reason is not None)
    try:
        conn = connect(path, uri=uri, timeout_ms=timeout_ms)
    except sqlite3.Error as exc:
        raise LcmError("DATABASE_OPEN_FAILED", f"SQLite could not open {path}: {exc}.", details) from None
    conn.text_factory = decode_text
    try:
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        conn.close()
        raise LcmError("DATABASE_OPEN_FAILED", f"SQLite could not open {path}: {exc}.", details) from None
    return conn, access


#: What SQLite says when the file's pages or schema are damaged.
_CORRUPTION_MARKERS = ("malformed", "not a database", "corrupt")


def _sqlite_text(exc: BaseException) -> str | None:
    """SQLite's message in ``exc``; also from the UnicodeDecodeError Python raises when the
    message itself quotes damaged schema bytes (``near "CRE\xbeTE": syntax error``).

    Python 3.10 raises a bare ``DatabaseError()`` instead when it cannot decode the message:
    only a message quoting the file's own damaged bytes does that.
    """
    if isinstance(exc, sqlite3.Error):
        text = str(exc)
        if not text and type(exc) is sqlite3.DatabaseError:
            return "malformed database schema (SQLite's message quotes bytes that are not UTF-8)"
        return text
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


def _unwritable(path: str) -> bool:
    """True when this process may not write the database or create its -wal/-shm beside it."""
    directory = os.path.dirname(os.path.abspath(path))
    return not (os.access(path, os.W_OK) and os.access(directory, os.W_OK | os.X_OK))


def translate_sqlite_error(exc: sqlite3.Error, path: str, timeout_ms: int) -> LcmError:
    """Map an error raised while querying to DATABASE_BUSY, DATABASE_CORRUPT or DATABASE_QUERY_FAILED."""
    text = _sqlite_text(exc) or ""
    if "locked" in text or "busy" in text:
        return LcmError(
            "DATABASE_BUSY",
            f"{path} stayed locked by another writer for {timeout_ms} ms. Retry shortly, or "
            "raise LCM_BUSY_TIMEOUT_MS.",
            {"databasePath": path, "waitedMs": timeout_ms},
        )
    if any(m in text for m in _CORRUPTION_MARKERS):
        # The file has SQLite's header (checked on open), so this is damage, not a wrong file.
        return corrupt_database_error(path, text)
    if "readonly" in text or "read-only" in text or ("unable to open" in text and _unwritable(path)):
        # The user's file, not a bug: the file, its folder or the file system refuses writes.
        return LcmError(
            "DATABASE_QUERY_FAILED",
            f"Database query failed: {text}. {path} cannot be written by this process: make the "
            "file and its folder writable (SQLite writes its -wal and -shm beside it), or run a "
            "read-only command on it.",
            {"databasePath": path, "reason": "read-only"},
        )
    return LcmError(
        "DATABASE_QUERY_FAILED",
        f"Database query failed: {text}.",
        {"databasePath": path, "reason": "sqlite-error"},
    )
