"""File, connection and destination helpers shared by backup create and restore."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.files import atomic_write, atomic_writer, create_temp, remove_quietly
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.db.connection import SQLITE_HEADER, connect, database_uri, require_sqlite_file
from lcm_cli.engine.maintenance.backup.errors import no_space_error, unwritable_error

#: Headroom over the source size required before a copy starts.
SPACE_MARGIN_BYTES = 1 << 20
_HASH_CHUNK = 1 << 20


def size_or_zero(path: str) -> int:
    """The size of ``path`` in bytes, 0 when it cannot be read."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def write_json_atomic(path: str, data: dict[str, Any], mode: int, *, replace: bool = True) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically, with file mode ``mode``."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text.encode("utf-8"), mode=mode, replace=replace)


def copy_file(source: str, dest: str, mode: int) -> tuple[int, str]:
    """Copy ``source`` to ``dest`` (exclusively, through a private temp file); return (size, sha256)."""
    digest = hashlib.sha256()
    size = 0
    with open_input(source) as src, atomic_writer(dest, mode=mode, replace=False) as dst:
        while chunk := src.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    return size, digest.hexdigest()


def copy_to_temp(source: str, final: str) -> tuple[str, str]:
    """Copy ``source`` into a fresh private temp sibling of ``final``, fsynced; (temp, sha256)."""
    digest = hashlib.sha256()
    fd, temp = create_temp(final)
    try:
        with open_input(source) as src, os.fdopen(fd, "wb") as dst:
            while chunk := src.read(_HASH_CHUNK):
                digest.update(chunk)
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
    except BaseException:
        remove_quietly(temp)
        raise
    return temp, digest.hexdigest()


def sqlite_header(path: str) -> bytes | None:
    """The first bytes of ``path`` (as long as the SQLite header), None when unreadable."""
    try:
        with open_input(path) as handle:
            return handle.read(len(SQLITE_HEADER))
    except OSError:
        return None


def check_source(db_path: str) -> tuple[str, os.stat_result]:
    """The absolute path of ``db_path`` and its stat, once it is known to be an SQLite file."""
    source = os.path.abspath(db_path)
    return source, require_sqlite_file(source)


def open_read_only(path: str, timeout_ms: int, *, immutable: bool = False) -> sqlite3.Connection:
    """A ``query_only`` connection to ``path`` (``immutable``: no locks, no WAL)."""
    conn = connect(path, uri=database_uri(path, immutable=immutable), timeout_ms=timeout_ms)
    try:
        conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def integrity_problems(conn: sqlite3.Connection, check: str) -> list[str]:
    """The first 20 rows of ``PRAGMA <check>`` that are not ``ok`` (empty: the file is sound)."""
    rows = [str(row[0]) for row in conn.execute(f"PRAGMA {check}").fetchall()]
    return [] if rows == ["ok"] else rows[:20]


def check_directory(directory: str) -> None:
    """Raise BACKUP_TARGET_UNWRITABLE unless ``directory`` is a directory lcm can write in."""
    if not os.path.isdir(directory):
        cause = "not a directory" if os.path.lexists(directory) else "no such directory"
        # A path under a regular file: some ancestor is not a directory.
        raise unwritable_error(directory, cause)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise unwritable_error(directory, "permission denied")


def check_space(directory: str, needed: int) -> None:
    """Raise BACKUP_NO_SPACE when ``directory``'s filesystem has less than ``needed`` bytes free."""
    import shutil  # only the write path needs it

    free = shutil.disk_usage(directory).free
    if free < needed:
        raise no_space_error(
            directory,
            needed,
            free,
            f"{needed / 1048576:.1f} MiB needed, {free / 1048576:.1f} MiB free",
        )


def resolve_destination_error(final: str) -> LcmError:
    """The BACKUP_TARGET_EXISTS error for a final name taken while the backup was made."""
    return LcmError(
        "BACKUP_TARGET_EXISTS",
        f"{final} appeared while the backup was being made; it was left unchanged. Retry with "
        "another --out PATH.",
        {"backupPath": final},
    )
