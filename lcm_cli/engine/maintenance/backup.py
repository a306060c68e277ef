"""Backups of lcm.db: online copy, manifest, list, verify, restore and retention.

How a backup is taken (:func:`create_backup`)
    SQLite's online backup API, from a read-only connection of our own (never the host's),
    copies the database in steps of ``pages_per_step`` pages into a hidden sibling temp
    file. When the source is in WAL mode (lossless-claw always uses WAL) that connection
    first opens one read transaction and holds it for the whole copy: in WAL mode a
    reader never blocks a writer, and the pinned snapshot keeps the backup from
    restarting each time the host commits (without it, every commit between two steps
    sends the copy back to page 1 and a busy host's database is never copied). The copy
    is then the database as of one instant; the host keeps writing to the WAL, which
    cannot be checkpointed past that instant until the copy ends. The backup then
    checkpoints what piled up itself, from a plain connection of its own (PASSIVE: it
    neither waits for nor blocks the host), so the host's next commit does not (it did
    before: the longest writer wait in benchmarks/bench_backup.py, about 70 ms, growing
    with write rate x copy time). A rollback-journal
    source is copied step by step with the lock released between steps (a writer waits
    at most one step); if it changes more than ``MAX_RESTARTS`` times mid-copy the
    backup gives up rather than lock writers out for the whole copy.

    The copy is switched to ``journal_mode=DELETE`` (a self-contained single file),
    checked with ``PRAGMA integrity_check`` (``quick_check`` when ``quick``), fsynced,
    hashed, and its manifest is written (atomically) before the backup itself is linked
    to its final name, so a file at a final name is always complete and has a manifest.
    A kill at any moment leaves at most a hidden ``.<name>.lcm-<pid>-<hex>.tmp`` file
    (:mod:`lcm_cli.engine.core.files`; the next backup removes it once its owner is dead)
    and, if it lands between the two renames, a manifest whose backup never appeared,
    which :func:`list_backups` ignores. Backups and manifests are 0600, or the source's
    mode where stricter. A source lcm may not write (0444, a read-only mount) is copied
    without crash recovery or checkpoint, both of which would write it.

Names (compat/operations.md §2.1)
    ``<db dir>/<db file name>.<label>-<stamp>-<rand>.bak`` with the label normalized,
    ``stamp`` like ``20260710T123456789Z`` and 6 base-36 random characters; the manifest
    is ``<backup>.manifest.json``. :func:`list_backups` also understands the plugin's
    rolling ``<db>.<label>-latest.bak`` and the importer's ``<db>.migrate-sessions-<stamp>.bak``.

"In use" (:func:`restore_backup`)
    On Linux and macOS the target is probed with ``fcntl(F_GETLK)`` (which only tests,
    never takes, a lock) on SQLite's own lock bytes: the shared/reserved/pending bytes of
    the database file and the WAL-index lock bytes of ``-shm``. In WAL mode every
    connection that has read the database holds a shared lock on both for as long as it
    stays open, so an idle host connection counts as "in use", not only an open
    transaction; the holder's pid is reported. In rollback-journal mode only a
    connection inside a transaction is visible. Locks held by this same process are
    invisible to the probe (POSIX semantics): do not restore over a database this
    process has open. At apply time the old file is also switched to
    ``journal_mode=DELETE`` and held under ``BEGIN EXCLUSIVE`` through the swap; that
    switch fails if any other connection has the file open, which catches a host that
    connected after the probe (and works where fcntl does not).

Error codes (``LcmError.code``) and when they are raised
    ``INVALID_ARGUMENT``          bad ``pages_per_step`` / ``sleep_ms`` / ``keep``; restore of
                                  a file onto itself or onto a path that is not a file.
    ``DATABASE_NOT_FOUND``        the source database (create) does not exist or is not a file.
    ``DATABASE_OPEN_FAILED``      the source is not an SQLite database or cannot be opened.
    ``DATABASE_BUSY``             the source stayed locked past the busy timeout.
    ``DATABASE_IN_USE``           restore target is open in another process (without ``force``).
    ``BACKUP_TARGET_EXISTS``      an explicit ``out`` already exists; it is left unchanged.
    ``BACKUP_TARGET_UNWRITABLE``  the destination directory is missing, not a directory,
                                  or refuses writes (permissions, read-only filesystem).
    ``BACKUP_NO_SPACE``           free space below the source size (+WAL) + 1 MiB before
                                  copying, or the disk filled while writing (SQLITE_FULL,
                                  ENOSPC, EDQUOT, EFBIG); the partial file is removed.
    ``BACKUP_FAILED``             the copy, its integrity check, or a file operation failed
                                  (a write I/O error, e.g. a ``ulimit -f`` size limit, names
                                  the directory), or a rollback-journal source kept
                                  changing; the partial file is removed.
    ``BACKUP_NOT_FOUND``          verify/restore of a backup file that does not exist.
    ``BACKUP_VERIFY_FAILED``      restore of a backup whose integrity check or manifest
                                  checks fail (a backup without a manifest is restorable
                                  when its integrity check passes).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import sqlite3
import stat
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from lcm_cli.engine.config.file import backup_stamp
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.files import (
    atomic_write,
    atomic_writer,
    create_temp,
    fsync_dir,
    hash_file,
    private_mode,
    publish,
    remove_orphans,
    remove_quietly,
)
from lcm_cli.engine.db.connection import (
    SQLITE_HEADER,
    busy_timeout_ms,
    database_uri,
    immutable_reason,
    require_sqlite_file,
    translate_sqlite_error,
)

MANIFEST_VERSION = 1
MANIFEST_SUFFIX = ".manifest.json"
DEFAULT_PAGES_PER_STEP = 256
#: A rollback-journal source that changes this many times during one copy is given up on.
MAX_RESTARTS = 5
#: Headroom over the source size required before a copy starts.
SPACE_MARGIN_BYTES = 1 << 20
_HASH_CHUNK = 1 << 20
#: Lock wait for the restore's exclusive hold on the old file: it is either free or in use.
_RESTORE_LOCK_TIMEOUT_S = 0.25

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_STAMP = r"\d{8}T\d{9}Z"
_TIMESTAMPED = re.compile(rf"^(?P<label>.+)-(?P<stamp>{_STAMP})-(?P<rand>[0-9a-z]{{6}})$")
_STAMPED = re.compile(rf"^(?P<label>.+)-(?P<stamp>{_STAMP})$")
_LATEST = re.compile(r"^(?P<label>.+)-latest$")
# Shadow tables of the virtual-table modules lcm.db may use (FTS5, FTS3/4, R*Tree).
_SHADOW_SUFFIXES = (
    "_data",
    "_idx",
    "_content",
    "_docsize",
    "_config",
    "_segments",
    "_segdir",
    "_stat",
    "_node",
    "_rowid",
    "_parent",
)

# SQLite's unix VFS lock layout (os_unix.c): byte ranges tested for foreign locks.
_PENDING_BYTE = 0x40000000
_DB_LOCK_RANGE = (_PENDING_BYTE, 2 + 510)  # pending, reserved, shared range
_SHM_LOCK_RANGE = (120, 9)  # WAL write/checkpoint/recover/read locks + dead-man switch

Progress = Callable[[int, int], None]


class _SourceKeptChanging(Exception):
    """Raised from the progress callback to abort a copy that keeps restarting."""


# --------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------


def normalize_label(label: str | None) -> str:
    """Trim, lowercase, runs of non ``[a-z0-9]`` → ``-``, strip ``-``; empty → ``backup``."""
    text = re.sub(r"[^a-z0-9]+", "-", (label or "").strip().lower()).strip("-")
    return text or "backup"


def _rand6() -> str:
    value = secrets.randbelow(36**6)
    chars = []
    for _ in range(6):
        value, digit = divmod(value, 36)
        chars.append(_BASE36[digit])
    return "".join(reversed(chars))


def _iso_ms(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def default_backup_path(db_path: str, label: str = "backup", now: datetime | None = None) -> str:
    """``<db dir>/<db file name>.<label>-<stamp>-<rand>.bak`` (compat/operations.md §2.1)."""
    db_abs = os.path.abspath(db_path)
    name = f"{os.path.basename(db_abs)}.{normalize_label(label)}-{backup_stamp(now)}-{_rand6()}.bak"
    return os.path.join(os.path.dirname(db_abs), name)


def manifest_path_for(backup_path: str) -> str:
    """The manifest that sits beside ``backup_path``."""
    return backup_path + MANIFEST_SUFFIX


# --------------------------------------------------------------------------------------
# Small file helpers
# --------------------------------------------------------------------------------------


def _size_or_zero(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _write_json_atomic(path: str, data: dict[str, Any], mode: int, *, replace: bool = True) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text.encode("utf-8"), mode=mode, replace=replace)


def _copy_file(source: str, dest: str, mode: int) -> tuple[int, str]:
    """Copy ``source`` to ``dest`` (exclusively, through a private temp file); return (size, sha256)."""
    digest = hashlib.sha256()
    size = 0
    with open(source, "rb") as src, atomic_writer(dest, mode=mode, replace=False) as dst:
        while chunk := src.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            dst.write(chunk)
    return size, digest.hexdigest()


def _copy_to_temp(source: str, final: str) -> tuple[str, str]:
    """Copy ``source`` into a fresh private temp sibling of ``final``, fsynced; (temp, sha256)."""
    digest = hashlib.sha256()
    fd, temp = create_temp(final)
    try:
        with open(source, "rb") as src, os.fdopen(fd, "wb") as dst:
            while chunk := src.read(_HASH_CHUNK):
                digest.update(chunk)
                dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
    except BaseException:
        remove_quietly(temp)
        raise
    return temp, digest.hexdigest()


def _sqlite_header(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_HEADER))
    except OSError:
        return None


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------

_NO_SPACE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_WRITE_IOERRS = {
    "SQLITE_IOERR_WRITE",
    "SQLITE_IOERR_FSYNC",
    "SQLITE_IOERR_TRUNCATE",
    "SQLITE_IOERR_DIR_FSYNC",
}
_UNWRITABLE_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.ENOENT}


def _no_space(directory: str, needed: int | None, free: int | None, cause: str) -> LcmError:
    return LcmError(
        "BACKUP_NO_SPACE",
        f"Not enough free space in {directory} for the backup ({cause}); nothing was kept. "
        "Free some space, or pass --out PATH on a disk with room.",
        {"directory": directory, "neededBytes": needed, "freeBytes": free},
    )


def _unwritable(directory: str, cause: str) -> LcmError:
    return LcmError(
        "BACKUP_TARGET_UNWRITABLE",
        f"Cannot write a backup in {directory} ({cause}). Create the directory or fix its "
        "permissions, or pass --out PATH somewhere writable.",
        {"directory": directory},
    )


def _failed(message: str, details: dict[str, Any]) -> LcmError:
    return LcmError("BACKUP_FAILED", message, details)


def _os_error(exc: OSError, directory: str, what: str) -> LcmError:
    cause = exc.strerror or str(exc)
    if exc.errno in _NO_SPACE_ERRNOS:
        return _no_space(directory, None, None, f"{what}: {cause}")
    if exc.errno in _UNWRITABLE_ERRNOS:
        return _unwritable(directory, f"{what}: {cause}")
    return _failed(
        f"Backup failed while {what} ({cause}); no partial file was kept. Retry, or check the disk.",
        {"directory": directory},
    )


def _sqlite_error(exc: sqlite3.Error, source: str, directory: str, timeout_ms: int) -> LcmError:
    name = str(getattr(exc, "sqlite_errorname", ""))
    text = str(exc)
    if name == "SQLITE_FULL" or "disk is full" in text:
        return _no_space(directory, None, None, f"SQLite: {text}")
    if name == "SQLITE_NOTADB" or "not a database" in text:
        return LcmError(
            "DATABASE_OPEN_FAILED",
            f"{source} is not an SQLite database ({text}). Check --db / LCM_DATABASE_PATH.",
            {"databasePath": source},
        )
    if "locked" in text or "busy" in text:
        return translate_sqlite_error(exc, source, timeout_ms)
    if name in _WRITE_IOERRS:
        return _failed(
            f"Writing the backup in {directory} failed ({text}): the disk may be full or failing, "
            "or a file-size limit (`ulimit -f`) was reached. No partial file was kept; free space "
            "or pass --out PATH on another disk.",
            {"databasePath": source, "directory": directory, "sqliteError": name},
        )
    return _failed(
        f"Backup of {source} failed ({text}); no partial file was kept. Retry; if it fails "
        "again run `lcm backup --quick` or check the source with `PRAGMA integrity_check`.",
        {"databasePath": source, "directory": directory},
    )


# --------------------------------------------------------------------------------------
# Database helpers
# --------------------------------------------------------------------------------------


def _check_source(db_path: str) -> tuple[str, os.stat_result]:
    source = os.path.abspath(db_path)
    return source, require_sqlite_file(source)


def _open_read_only(path: str, timeout_ms: int, *, immutable: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        database_uri(path, immutable=immutable), uri=True, timeout=timeout_ms / 1000, isolation_level=None
    )
    try:
        conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def counted_tables(conn: sqlite3.Connection) -> list[str]:
    """Ordinary tables whose rows a manifest counts: no virtual, shadow or ``sqlite_`` tables.

    Decided from the schema text and names only, so every SQLite build (with or without
    FTS5) picks the same set for the same file.
    """
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    virtual = [name for name, sql in rows if (sql or "").lstrip().upper().startswith("CREATE VIRTUAL")]
    tables = []
    for name, _sql in rows:
        if name.startswith("sqlite_") or name in virtual:
            continue
        if any(name.startswith(v + "_") and name[len(v) :] in _SHADOW_SUFFIXES for v in virtual):
            continue
        tables.append(name)
    return sorted(tables)


def row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """``{table: COUNT(*)}`` for :func:`counted_tables`."""
    return {
        name: int(conn.execute(f"SELECT COUNT(*) FROM {_quote_ident(name)}").fetchone()[0])
        for name in counted_tables(conn)
    }


def _integrity_problems(conn: sqlite3.Connection, check: str) -> list[str]:
    rows = [str(row[0]) for row in conn.execute(f"PRAGMA {check}").fetchall()]
    return [] if rows == ["ok"] else rows[:20]


# --------------------------------------------------------------------------------------
# create
# --------------------------------------------------------------------------------------


def _resolve_destination(source: str, out: str | None, label: str, now: datetime) -> str:
    if out is None:
        return default_backup_path(source, label, now)
    target = os.path.abspath(os.path.expanduser(out))
    if os.path.isdir(target):
        name = os.path.basename(default_backup_path(source, label, now))
        return os.path.join(target, name)
    if os.path.lexists(target):
        raise LcmError(
            "BACKUP_TARGET_EXISTS",
            f"{target} already exists; lcm never overwrites a backup. Pass another --out PATH, "
            "or omit --out for a timestamped name beside the database.",
            {"backupPath": target},
        )
    return target


def _check_directory(directory: str) -> None:
    if not os.path.isdir(directory):
        cause = "not a directory" if os.path.lexists(directory) else "no such directory"
        # A path under a regular file: some ancestor is not a directory.
        raise _unwritable(directory, cause)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _unwritable(directory, "permission denied")


def _check_space(directory: str, needed: int) -> None:
    import shutil  # only the write path needs it

    free = shutil.disk_usage(directory).free
    if free < needed:
        raise _no_space(
            directory,
            needed,
            free,
            f"{needed / 1048576:.1f} MiB needed, {free / 1048576:.1f} MiB free",
        )


class _Source:
    """How the source is read: its connection, journal mode, and whether lcm may write it."""

    def __init__(self, source: str, timeout_ms: int) -> None:
        self.path = source
        # A write-protected source (0444, a read-only mount) is never written: no crash
        # recovery and no checkpoint, which both write it.
        self.read_only = not os.access(source, os.W_OK)
        self.immutable = immutable_reason(source)
        self.notes: list[str] = []
        if self.read_only:
            self.notes.append("source is read-only: copied without recovery or checkpoint")
        if self.immutable:
            self.notes.append(f"read through SQLite's immutable URI: {self.immutable}")
        self.conn, self.journal_mode = self._open(timeout_ms)

    def _open(self, timeout_ms: int) -> tuple[sqlite3.Connection, str]:
        """A read-only connection and the journal mode, recovering a crashed writer first.

        After a writer was killed mid-transaction the file needs recovery (a hot rollback
        journal, or a WAL index to rebuild), which a read-only connection may not perform:
        SQLite reports "attempt to write a readonly database". Any writer would do that
        recovery on its next open, so one plain connection does it here, then the copy goes
        on read-only as usual; a source lcm may not write is left as it is.
        """
        src = _open_read_only(self.path, timeout_ms, immutable=self.immutable is not None)
        try:
            return src, str(src.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            src.close()
            if self.read_only or "readonly" not in str(exc).replace(" ", "").lower():
                raise
        recover = sqlite3.connect(self.path, timeout=timeout_ms / 1000, isolation_level=None)
        try:
            recover.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            recover.close()
        src = _open_read_only(self.path, timeout_ms)
        try:
            return src, str(src.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        except BaseException:
            src.close()
            raise


def _copy_database(
    source: str,
    temp: str,
    *,
    timeout_ms: int,
    pages_per_step: int,
    sleep_ms: float,
    progress: Progress | None,
) -> dict[str, Any]:
    """Online-copy ``source`` into the (existing, empty) ``temp`` file; return copy facts."""
    opened = _Source(source, timeout_ms)
    src, journal_mode = opened.conn, opened.journal_mode
    checkpointer: sqlite3.Connection | None = None
    try:
        pinned = journal_mode == "wal" and opened.immutable is None
        if pinned and not opened.read_only:
            # Opened now, so that the checkpoint can follow the snapshot's end at once.
            checkpointer = _open_checkpointer(source)
            # One read transaction for the whole copy: a fixed snapshot, no restarts.
            src.execute("BEGIN")
            src.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        dst = sqlite3.connect(temp, isolation_level=None, timeout=timeout_ms / 1000)
        try:
            state = {"last": -1, "restarts": 0}

            def on_step(status: int, remaining: int, total: int) -> None:
                if 0 <= state["last"] < remaining:
                    state["restarts"] += 1
                    if not pinned and state["restarts"] > MAX_RESTARTS:
                        raise _SourceKeptChanging
                state["last"] = remaining
                if progress is not None:
                    progress(total - remaining, total)
                if sleep_ms > 0 and remaining:
                    time.sleep(sleep_ms / 1000)

            try:
                src.backup(dst, pages=pages_per_step, progress=on_step, sleep=0.05)
            except _SourceKeptChanging:
                raise _failed(
                    f"{source} is not in WAL mode and changed {state['restarts']} times during the "
                    "copy, so no consistent snapshot could be taken without blocking its writers. "
                    "Retry when the agent host is idle.",
                    {"databasePath": source, "journalMode": journal_mode, "restarts": state["restarts"]},
                ) from None
            if pinned:
                if src.in_transaction:  # a read-only WAL source may have ended it already
                    src.execute("COMMIT")
                _checkpoint_held_frames(checkpointer)
            # A self-contained file: no -wal/-shm needed to open or restore it.
            dst.execute("PRAGMA journal_mode = DELETE").fetchone()
            return {
                "journalMode": journal_mode,
                "restarts": state["restarts"],
                "pageSize": int(dst.execute("PRAGMA page_size").fetchone()[0]),
                "pageCount": int(dst.execute("PRAGMA page_count").fetchone()[0]),
                "sourceReadOnly": opened.read_only,
                "note": "; ".join(opened.notes) or None,
                "conn": dst,
            }
        except BaseException:
            dst.close()
            raise
    finally:
        if checkpointer is not None:
            checkpointer.close()
        src.close()


def _open_checkpointer(source: str) -> sqlite3.Connection | None:
    """A plain connection for :func:`_checkpoint_held_frames`, or None where none opens."""
    try:
        return sqlite3.connect(source, isolation_level=None, timeout=0)
    except sqlite3.Error:
        return None


def _checkpoint_held_frames(conn: sqlite3.Connection | None) -> None:
    """Checkpoint the WAL frames a live writer added while the copy held its snapshot.

    No frame newer than the snapshot can be checkpointed while it is held, so on a busy
    host the WAL grows by tens of MiB during a long copy, and the writer's next commit
    would checkpoint all of it and wait (about 70 ms on the 834 MiB benchmark database).
    Done here instead, with PASSIVE: it never waits for or blocks a reader or writer, and
    a writer's own checkpoint meanwhile just skips. It changes no row. Best effort: where
    the database cannot be written, the writer checkpoints as it would have.
    """
    if conn is None:
        return
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:
        pass


def create_backup(
    db_path: str,
    *,
    out: str | None = None,
    label: str = "backup",
    quick: bool = False,
    pages_per_step: int = DEFAULT_PAGES_PER_STEP,
    sleep_ms: float = 0.0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Copy a live database consistently, check the copy, and write its manifest beside it.

    ``out``: the backup file (refused if it exists) or an existing directory to put a
    default-named backup in; default beside the database. ``pages_per_step``: pages per
    backup step (-1 = all at once). ``sleep_ms``: pause between steps. ``progress(done,
    total)`` is called after every step, in pages. Returns ``{backupPath, manifestPath}``
    plus every manifest field.
    """
    started = time.monotonic()
    if not isinstance(pages_per_step, int) or pages_per_step == 0 or pages_per_step < -1:
        raise invalid_argument(
            "pages_per_step must be a positive number of pages, or -1 for all at once.",
            {"pagesPerStep": pages_per_step},
        )
    if sleep_ms < 0:
        raise invalid_argument("sleep_ms must be 0 or more.", {"sleepMs": sleep_ms})
    now = datetime.now(timezone.utc)
    source, info = _check_source(db_path)
    final = _resolve_destination(source, out, label, now)
    directory = os.path.dirname(final)
    _check_directory(directory)
    wal_bytes = _size_or_zero(source + "-wal")
    _check_space(directory, info.st_size + wal_bytes + SPACE_MARGIN_BYTES)

    timeout_ms = busy_timeout_ms()
    # Private: 0600, or the source's mode where stricter (a 0400 source gives a 0400 copy).
    mode = private_mode(info.st_mode)
    check = "quick_check" if quick else "integrity_check"
    orphans = remove_orphans(directory)
    temp = ""
    manifest_path = manifest_path_for(final)
    manifest_written = False
    try:
        fd, temp = create_temp(final)
        os.close(fd)  # SQLite fills it by name; it stays 0600 until it is published
        facts = _copy_database(
            source,
            temp,
            timeout_ms=timeout_ms,
            pages_per_step=pages_per_step,
            sleep_ms=sleep_ms,
            progress=progress,
        )
        dst: sqlite3.Connection = facts.pop("conn")
        try:
            problems = _integrity_problems(dst, check)
            if problems:
                raise _failed(
                    f"The copy of {source} failed `PRAGMA {check}`; it was removed. The source may "
                    "be damaged: run `PRAGMA integrity_check` on it, then retry the backup.",
                    {"databasePath": source, "check": check, "problems": problems},
                )
            tables = row_counts(dst)
        finally:
            dst.close()
        size, sha256 = hash_file(temp, fsync=True)
        manifest: dict[str, Any] = {
            "version": MANIFEST_VERSION,
            "backupPath": final,
            "sourcePath": source,
            "createdAt": _iso_ms(now),
            "sizeBytes": size,
            "sha256": sha256,
            "pageSize": facts["pageSize"],
            "pageCount": facts["pageCount"],
            "integrity": "ok",
            "check": check,
            "tables": tables,
            "sqliteVersion": sqlite3.sqlite_version,
            "durationMs": 0,
        }
        if os.path.lexists(final):  # appeared while copying
            raise _resolve_destination_error(final)
        manifest["durationMs"] = int((time.monotonic() - started) * 1000)
        # Manifest first: a backup at its final name always has its manifest.
        _write_json_atomic(manifest_path, manifest, mode)
        manifest_written = True
        try:
            publish(temp, final, mode=mode, replace=False, sync=False)
        except FileExistsError:
            raise _resolve_destination_error(final) from None
    except BaseException as exc:
        if temp:
            remove_quietly(temp, temp + "-journal", temp + "-wal", temp + "-shm")
        if manifest_written and not os.path.lexists(final):
            remove_quietly(manifest_path)
        if isinstance(exc, LcmError):
            raise
        if isinstance(exc, sqlite3.Error):
            raise _sqlite_error(exc, source, directory, timeout_ms) from None
        if isinstance(exc, OSError):
            raise _os_error(exc, directory, "writing the backup") from None
        raise
    # Not manifest fields, and only present when they say something.
    manifest_extra: dict[str, Any] = {}
    if facts["sourceReadOnly"]:
        manifest_extra["sourceReadOnly"] = True
    if facts.get("note"):
        manifest_extra["note"] = facts["note"]
    if orphans:
        manifest_extra["orphansRemoved"] = orphans
    return {"backupPath": final, "manifestPath": manifest_path, **manifest, **manifest_extra}


def latest_backup_path(db_path: str, label: str) -> str:
    """``<db dir>/<db file name>.<label>-latest.bak``: the rolling copy (compat/operations.md §2.1)."""
    db_abs = os.path.abspath(db_path)
    name = f"{os.path.basename(db_abs)}.{normalize_label(label)}-latest.bak"
    return os.path.join(os.path.dirname(db_abs), name)


def create_rolling_backup(db_path: str, *, label: str = "rotate", quick: bool = False) -> dict[str, Any]:
    """Replace the rolling ``<db>.<label>-latest.bak`` with a fresh, checked online copy.

    As the reference does, the copy is first made under a timestamped ``<label>-tmp``
    name (the full :func:`create_backup`: online copy, integrity check, manifest); then
    it takes the latest name in one ``rename`` (where the reference deletes the old latest
    first, so a crash there leaves none) and its manifest follows. A kill before the
    rename leaves the previous latest untouched plus a ``<label>-tmp`` backup; a kill
    between the two renames leaves the new latest with the old manifest, which
    ``lcm backup verify`` reports as a mismatch.
    """
    made = create_backup(db_path, label=f"{normalize_label(label)}-tmp", quick=quick)
    temp_path, temp_manifest = made["backupPath"], made["manifestPath"]
    final = latest_backup_path(db_path, label)
    extra = {key: made[key] for key in _RESULT_ONLY if key in made}
    manifest = {key: made[key] for key in made if key not in ("backupPath", "manifestPath", *_RESULT_ONLY)}
    manifest["backupPath"] = final
    mode = stat.S_IMODE(os.stat(temp_path).st_mode)
    try:
        publish(temp_path, final, replace=True, sync=False)
        _write_json_atomic(manifest_path_for(final), manifest, mode)
        remove_quietly(temp_manifest)
        fsync_dir(os.path.dirname(final))
    except OSError as exc:
        raise _os_error(exc, os.path.dirname(final), "replacing the rolling backup") from None
    return {"backupPath": final, "manifestPath": manifest_path_for(final), **manifest, **extra}


#: Keys of :func:`create_backup`'s result that are not manifest fields.
_RESULT_ONLY = ("sourceReadOnly", "orphansRemoved", "note")


def _resolve_destination_error(final: str) -> LcmError:
    return LcmError(
        "BACKUP_TARGET_EXISTS",
        f"{final} appeared while the backup was being made; it was left unchanged. Retry with "
        "another --out PATH.",
        {"backupPath": final},
    )


# --------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------


def _stamp_to_iso(stamp: str) -> str:
    # 20260710T123456789Z -> 2026-07-10T12:34:56.789Z
    return (
        f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}.{stamp[15:18]}Z"
    )


def _parse_name(middle: str) -> tuple[str, str, str | None]:
    """(label, kind, stamp) from the part of a backup name between ``<db>.`` and ``.bak``."""
    match = _TIMESTAMPED.match(middle) or _STAMPED.match(middle)
    if match:
        return match["label"], "timestamped", match["stamp"]
    match = _LATEST.match(middle)
    if match:
        return match["label"], "latest", None
    return middle, "other", None


def _read_manifest(backup_path: str) -> tuple[dict[str, Any] | None, str]:
    """(manifest, state) where state is ``present``, ``missing`` or ``unreadable: why``."""
    try:
        with open(manifest_path_for(backup_path), encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None, "missing"
    except (OSError, ValueError) as exc:
        return None, f"unreadable: {exc}"
    if not isinstance(data, dict):
        return None, "unreadable: not a JSON object"
    return data, "present"


def list_backups(db_path: str) -> list[dict[str, Any]]:
    """Backups beside the database (``<db name>.*.bak``), newest first.

    Each: ``{path, name, label, kind, sizeBytes, createdAt, hasManifest,
    verifiedAtCreation, sizeMatchesManifest}``. ``kind`` is ``timestamped``, ``latest``
    (a rolling copy) or ``other``; ``createdAt`` comes from the manifest, else the name's
    stamp, else the file's mtime. No file is hashed: use :func:`verify_backup` for that.
    """
    db_abs = os.path.abspath(db_path)
    directory, db_name = os.path.split(db_abs)
    prefix = db_name + "."
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found: list[dict[str, Any]] = []
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".bak")) or len(name) <= len(prefix) + 4:
            continue
        path = os.path.join(directory, name)
        try:
            info = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        label, kind, stamp = _parse_name(name[len(prefix) : -len(".bak")])
        manifest, _state = _read_manifest(path)
        created = manifest.get("createdAt") if manifest else None
        if not isinstance(created, str):
            created = (
                _stamp_to_iso(stamp)
                if stamp
                else _iso_ms(datetime.fromtimestamp(info.st_mtime, timezone.utc))
            )
        found.append(
            {
                "path": path,
                "name": name,
                "label": label,
                "kind": kind,
                "sizeBytes": info.st_size,
                "createdAt": created,
                "hasManifest": manifest is not None,
                "verifiedAtCreation": (manifest.get("integrity") == "ok") if manifest else None,
                "sizeMatchesManifest": (manifest.get("sizeBytes") == info.st_size) if manifest else None,
            }
        )
    found.sort(key=lambda item: (item["createdAt"], item["name"]), reverse=True)
    return found


# --------------------------------------------------------------------------------------
# verify
# --------------------------------------------------------------------------------------


def _check(name: str, ok: bool, expected: Any, actual: Any) -> dict[str, Any]:
    return {"name": name, "ok": ok, "expected": expected, "actual": actual}


def _require_backup(path: str) -> str:
    backup = os.path.abspath(path)
    if not os.path.isfile(backup):
        raise LcmError(
            "BACKUP_NOT_FOUND",
            f"No backup file at {backup}. Run `lcm backup list` to see the backups beside the database.",
            {"backupPath": backup},
        )
    return backup


def verify_backup(path: str) -> dict[str, Any]:
    """Re-check a backup against its manifest: size, sha256, integrity_check, pages, row counts.

    Returns ``{backupPath, manifestPath, ok, checks: [{name, ok, expected, actual}]}``;
    a missing manifest or any mismatch makes ``ok`` false (it is not raised). Raises
    BACKUP_NOT_FOUND when the file does not exist.
    """
    backup = _require_backup(path)
    manifest_path = manifest_path_for(backup)
    manifest, state = _read_manifest(backup)
    checks = [_check("manifest", manifest is not None, "present", state)]
    size, sha256 = hash_file(backup, fsync=False)
    if manifest is not None:
        checks.append(_check("size", manifest.get("sizeBytes") == size, manifest.get("sizeBytes"), size))
        checks.append(_check("sha256", manifest.get("sha256") == sha256, manifest.get("sha256"), sha256))
    try:
        # Nobody writes a backup: open it immutable (no -shm created beside it) unless a
        # -wal sibling holds part of it.
        conn = _open_read_only(backup, busy_timeout_ms(), immutable=not os.path.exists(backup + "-wal"))
        try:
            problems = _integrity_problems(conn, "integrity_check")
            checks.append(_check("integrity", not problems, "ok", problems[0] if problems else "ok"))
            if manifest is not None:
                pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
                expected_pages = manifest.get("pageCount")
                checks.append(_check("pageCount", expected_pages == pages, expected_pages, pages))
                counts = row_counts(conn)
                expected_counts = manifest.get("tables")
                checks.append(_check("rowCounts", expected_counts == counts, expected_counts, counts))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        checks.append(_check("integrity", False, "ok", f"not a readable SQLite database: {exc}"))
    return {
        "backupPath": backup,
        "manifestPath": manifest_path,
        "ok": all(item["ok"] for item in checks),
        "sizeBytes": size,
        "sha256": sha256,
        "checks": checks,
    }


# --------------------------------------------------------------------------------------
# restore
# --------------------------------------------------------------------------------------


def _lock_holder(path: str, start: int, length: int) -> int | None:
    """Pid of a process holding a lock that overlaps ``[start, start+length)`` of ``path``.

    0 when a lock is held but the pid is unknown; None when no lock is held. Raises
    OSError when the platform or file does not allow the probe.
    """
    import fcntl  # POSIX only
    import struct

    if sys.platform.startswith("linux"):
        layout = "hhqqi4x"
        request = struct.pack(layout, fcntl.F_WRLCK, os.SEEK_SET, start, length, 0)
    elif sys.platform == "darwin":
        layout = "qqihh"
        request = struct.pack(layout, start, length, 0, fcntl.F_WRLCK, os.SEEK_SET)
    else:
        raise OSError(errno.ENOTSUP, "lock probe not supported on this platform")
    fd = os.open(path, os.O_RDONLY)
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, request)
    finally:
        os.close(fd)
    fields = struct.unpack(layout, answer)
    kind, pid = (fields[0], fields[4]) if layout.startswith("hh") else (fields[3], fields[2])
    return None if kind == fcntl.F_UNLCK else int(pid)


def _in_use(db_path: str) -> dict[str, Any]:
    """``{inUse, holderPid, detection}`` for the restore target, from SQLite's lock bytes."""
    probes = [(db_path, *_DB_LOCK_RANGE, "database lock")]
    if os.path.exists(db_path + "-shm"):
        probes.append((db_path + "-shm", *_SHM_LOCK_RANGE, "WAL-index lock"))
    try:
        for path, start, length, what in probes:
            pid = _lock_holder(path, start, length)
            if pid is not None:
                return {"inUse": True, "holderPid": pid or None, "detection": f"fcntl: {what} held"}
    except (OSError, ImportError) as exc:
        return {"inUse": None, "holderPid": None, "detection": f"unavailable: {exc}"}
    return {"inUse": False, "holderPid": None, "detection": "fcntl: no foreign lock"}


def _describe_target(db_path: str) -> dict[str, Any]:
    exists = os.path.isfile(db_path)
    header = _sqlite_header(db_path) if exists else None
    described: dict[str, Any] = {
        "path": db_path,
        "exists": exists,
        "sizeBytes": _size_or_zero(db_path) if exists else None,
        "walBytes": _size_or_zero(db_path + "-wal") if exists else None,
        "isSqlite": (header in (SQLITE_HEADER, b"")) if exists else None,
    }
    if exists:
        described.update(_in_use(db_path))
    else:
        described.update({"inUse": False, "holderPid": None, "detection": "no file"})
    return described


def _restorable(verification: dict[str, Any]) -> tuple[bool, list[str]]:
    """Restorable when every check that ran passed, a missing manifest aside."""
    failed = [
        c["name"]
        for c in verification["checks"]
        if not c["ok"] and not (c["name"] == "manifest" and c["actual"] == "missing")
    ]
    return not failed, failed


def _in_use_error(db_path: str, target: dict[str, Any]) -> LcmError:
    holder = f" (process {target['holderPid']})" if target.get("holderPid") else ""
    return LcmError(
        "DATABASE_IN_USE",
        f"{db_path} is open in another process{holder}. Stop the agent host (OpenClaw gateway) "
        "first, or pass --force to replace it anyway (the running host must then be restarted; "
        "what it writes meanwhile is lost).",
        {"databasePath": db_path, "holderPid": target.get("holderPid"), "detection": target.get("detection")},
    )


def _keep_previous(db_path: str, target: dict[str, Any]) -> dict[str, Any]:
    """Back up the file about to be replaced: online when it is SQLite, else a byte copy."""
    if target["isSqlite"]:
        try:
            made = create_backup(db_path, label="pre-restore")
            return {"path": made["backupPath"], "method": "online", "manifestPath": made["manifestPath"]}
        except LcmError as exc:
            if exc.code not in ("BACKUP_FAILED", "DATABASE_OPEN_FAILED"):
                raise
    # Not readable SQLite: keep its bytes (and its -wal, named so SQLite finds it).
    directory = os.path.dirname(db_path)
    final = default_backup_path(db_path, "pre-restore")
    _check_space(directory, _size_or_zero(db_path) + _size_or_zero(db_path + "-wal") + SPACE_MARGIN_BYTES)
    mode = private_mode(os.stat(db_path).st_mode)
    copied = []
    for source, dest in ((db_path + "-wal", final + "-wal"), (db_path, final)):
        if not os.path.exists(source):
            continue
        try:
            _copy_file(source, dest, mode)
        except FileExistsError:
            raise _resolve_destination_error(dest) from None
        copied.append(dest)
    fsync_dir(directory)
    return {"path": final, "method": "copy", "files": copied}


def _hold_for_swap(db_path: str) -> sqlite3.Connection | None:
    """Fold the old file's WAL into it and lock it exclusively, or None if someone has it open.

    Leaving WAL mode checkpoints every committed frame into the main file and deletes
    ``-wal``/``-shm``; SQLite refuses it while any other connection is open, so this is
    also the last in-use check. The exclusive lock then keeps anyone from writing the old
    file until it has been replaced.
    """
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=_RESTORE_LOCK_TIMEOUT_S)
    try:
        mode = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        if mode != "delete":
            conn.close()
            return None
        conn.execute("BEGIN EXCLUSIVE")
    except sqlite3.Error as exc:
        conn.close()
        if "locked" in str(exc) or "busy" in str(exc):
            return None
        raise
    return conn


def restore_backup(
    backup_path: str,
    db_path: str,
    *,
    apply: bool = False,
    force: bool = False,
) -> dict[str, Any]:
    """Replace ``db_path`` with a verified backup; a dry run unless ``apply``.

    The dry run verifies the backup and describes the target (size, WAL, in use).
    ``apply`` refuses an unverifiable backup and a target in use (unless ``force``),
    keeps the replaced file as a ``pre-restore`` backup, then swaps the copy in
    atomically with no stale ``-wal``/``-shm`` left to be replayed onto it.
    """
    backup = _require_backup(backup_path)
    target_path = os.path.abspath(db_path)
    if os.path.lexists(target_path) and not os.path.isfile(target_path):
        raise invalid_argument(
            f"{target_path} exists and is not a regular file; pass the database file with --db.",
            {"databasePath": target_path},
        )
    if os.path.exists(target_path) and os.path.samefile(backup, target_path):
        raise invalid_argument(
            "The backup and the database are the same file; pass the backup to restore from.",
            {"backupPath": backup, "databasePath": target_path},
        )
    verification = verify_backup(backup)
    restorable, failed = _restorable(verification)
    target = _describe_target(target_path)
    result: dict[str, Any] = {
        "backupPath": backup,
        "databasePath": target_path,
        "applied": False,
        "restorable": restorable,
        "failedChecks": failed,
        "verification": verification,
        "target": target,
        "forced": False,
    }
    if not apply:
        steps = ["verify the backup (done: see verification)"]
        if target["exists"]:
            steps.append("back up the current database as a pre-restore backup beside it")
        steps.append("copy the backup beside the database, fsync, and rename it over the database")
        result["plan"] = steps
        return result
    if not restorable:
        raise LcmError(
            "BACKUP_VERIFY_FAILED",
            f"Backup {backup} failed verification ({', '.join(failed)}); nothing was changed. "
            "Pick another backup from `lcm backup list`.",
            {"backupPath": backup, "failedChecks": failed, "verification": verification},
        )
    if target["inUse"] and not force:
        raise _in_use_error(target_path, target)

    directory = os.path.dirname(target_path)
    _check_directory(directory)
    old_bytes = (target["sizeBytes"] or 0) + (target["walBytes"] or 0) if target["exists"] else 0
    _check_space(directory, verification["sizeBytes"] + old_bytes + SPACE_MARGIN_BYTES)
    previous = _keep_previous(target_path, target) if target["exists"] else None
    result["preRestoreBackup"] = previous

    # The restored file is the live database again: it takes the mode of the file it replaces.
    mode = stat.S_IMODE(os.stat(target_path if target["exists"] else backup).st_mode) & 0o666 or 0o600
    remove_orphans(directory)
    temp = ""
    guard: sqlite3.Connection | None = None
    forced = bool(target["inUse"])
    removed: list[str] = []
    try:
        temp, sha256 = _copy_to_temp(backup, target_path)
        if sha256 != verification["sha256"]:
            raise _failed(
                f"The copy of {backup} did not match the verified file (it changed while being "
                "copied?); nothing was changed. Retry.",
                {"backupPath": backup},
            )
        if target["exists"] and target["isSqlite"]:
            guard = _hold_for_swap(target_path)
            if guard is None:
                if not force:
                    detection = "leaving WAL mode was refused: another connection has the file open"
                    raise _in_use_error(target_path, {**target, "detection": detection})
                forced = True
        if guard is None:
            # Forced, or not SQLite: the old -wal/-shm must not be replayed onto the new file.
            for suffix in ("-wal", "-shm", "-journal"):
                if os.path.exists(target_path + suffix):
                    os.unlink(target_path + suffix)
                    removed.append(target_path + suffix)
        publish(temp, target_path, mode=mode, replace=True, sync=False)
    except BaseException as exc:
        if temp:
            remove_quietly(temp)
        if isinstance(exc, OSError):
            raise _os_error(exc, directory, "replacing the database") from None
        raise
    finally:
        if guard is not None:
            guard.close()
    result.update(
        {
            "applied": True,
            "forced": forced,
            "removedFiles": removed,
            "sizeBytes": verification["sizeBytes"],
        }
    )
    return result


# --------------------------------------------------------------------------------------
# prune
# --------------------------------------------------------------------------------------


def prune_backups(db_path: str, keep: int, *, label: str | None = None) -> list[str]:
    """Keep the newest ``keep`` backups (of ``label``, or of every label); delete the rest.

    Rolling ``-latest`` copies are never pruned. Each deleted backup's manifest (and a
    ``-wal`` kept beside a byte-copied one) goes with it. Returns the deleted backup paths.
    """
    if not isinstance(keep, int) or keep < 0:
        raise invalid_argument("--keep must be 0 or more.", {"keep": keep})
    wanted = normalize_label(label) if label is not None else None
    candidates = [
        item
        for item in list_backups(db_path)
        if item["kind"] != "latest" and (wanted is None or item["label"] == wanted)
    ]
    deleted: list[str] = []
    for item in candidates[keep:]:
        path = item["path"]
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _failed(
                f"Could not delete {path} ({exc.strerror or exc}); {len(deleted)} older backups were "
                "deleted before it. Check the directory's permissions.",
                {"path": path, "deleted": deleted},
            ) from None
        remove_quietly(manifest_path_for(path), path + "-wal")
        deleted.append(path)
    if deleted:
        fsync_dir(os.path.dirname(os.path.abspath(db_path)))
    return deleted
