"""Restoring lcm.db from a backup, keeping the previous file.

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
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import sys
from typing import Any

from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.files import fsync_dir, private_mode, publish, remove_orphans, remove_quietly
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.db.connection import SQLITE_HEADER, connect
from lcm_cli.engine.maintenance.backup.create import create_backup
from lcm_cli.engine.maintenance.backup.errors import backup_failed, os_error
from lcm_cli.engine.maintenance.backup.files import (
    SPACE_MARGIN_BYTES,
    check_directory,
    check_space,
    copy_file,
    copy_to_temp,
    resolve_destination_error,
    size_or_zero,
    sqlite_header,
)
from lcm_cli.engine.maintenance.backup.names import default_backup_path
from lcm_cli.engine.maintenance.backup.verify import require_backup, verify_backup
from lcm_cli.engine.maintenance.replication import replication_active_error, replication_state

#: Lock wait for the restore's exclusive hold on the old file: it is either free or in use.
_RESTORE_LOCK_TIMEOUT_S = 0.25

# SQLite's unix VFS lock layout (os_unix.c): byte ranges tested for foreign locks.
_PENDING_BYTE = 0x40000000
_DB_LOCK_RANGE = (_PENDING_BYTE, 2 + 510)  # pending, reserved, shared range
_SHM_LOCK_RANGE = (120, 9)  # WAL write/checkpoint/recover/read locks + dead-man switch


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
    with open_input(path) as handle:
        answer = fcntl.fcntl(handle.fileno(), fcntl.F_GETLK, request)
    fields = struct.unpack(layout, answer)
    kind, pid = (fields[0], fields[4]) if layout.startswith("hh") else (fields[3], fields[2])
    return None if kind == fcntl.F_UNLCK else int(pid)


def in_use(db_path: str) -> dict[str, Any]:
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
    header = sqlite_header(db_path) if exists else None
    described: dict[str, Any] = {
        "path": db_path,
        "exists": exists,
        "sizeBytes": size_or_zero(db_path) if exists else None,
        "walBytes": size_or_zero(db_path + "-wal") if exists else None,
        "isSqlite": (header in (SQLITE_HEADER, b"")) if exists else None,
    }
    if exists:
        described.update(in_use(db_path))
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
    check_space(directory, size_or_zero(db_path) + size_or_zero(db_path + "-wal") + SPACE_MARGIN_BYTES)
    mode = private_mode(os.stat(db_path).st_mode)
    copied = []
    for source, dest in ((db_path + "-wal", final + "-wal"), (db_path, final)):
        if not os.path.exists(source):
            continue
        try:
            copy_file(source, dest, mode)
        except FileExistsError:
            raise resolve_destination_error(dest) from None
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
    conn = connect(db_path, timeout_ms=int(_RESTORE_LOCK_TIMEOUT_S * 1000))
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


def _plan(target: dict[str, Any], replicated: dict[str, Any] | None) -> list[str]:
    """The dry run's steps."""
    steps = ["verify the backup (done: see verification)"]
    if target["exists"]:
        steps.append("back up the current database as a pre-restore backup beside it")
    steps.append("copy the backup beside the database, fsync, and rename it over the database")
    if replicated is not None:
        steps.append(
            "Litestream's state is beside the database: refused while the file is open; with "
            "`litestream replicate` stopped, it writes the whole restored file as new LTX files when it starts"
        )
    return steps


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
    backup = require_backup(backup_path)
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
    replicated = replication_state(target_path) if target["exists"] else None
    if replicated is not None:
        result["replication"] = replicated
    if not apply:
        result["plan"] = _plan(target, replicated)
        return result
    if not restorable:
        raise LcmError(
            "BACKUP_VERIFY_FAILED",
            f"Backup {backup} failed verification ({', '.join(failed)}); nothing was changed. "
            "Pick another backup from `lcm backup list`.",
            {"backupPath": backup, "failedChecks": failed, "verification": verification},
        )
    command = f"lcm backup restore {backup} --apply"
    if replicated is not None and target["inUse"]:
        # --force would swap the inode under a running replicator: never (see replication.py).
        raise replication_active_error(target_path, replicated, target.get("holderPid"), command)
    if target["inUse"] and not force:
        raise _in_use_error(target_path, target)

    directory = os.path.dirname(target_path)
    check_directory(directory)
    old_bytes = (target["sizeBytes"] or 0) + (target["walBytes"] or 0) if target["exists"] else 0
    check_space(directory, verification["sizeBytes"] + old_bytes + SPACE_MARGIN_BYTES)
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
        temp, sha256 = copy_to_temp(backup, target_path)
        if sha256 != verification["sha256"]:
            raise backup_failed(
                f"The copy of {backup} did not match the verified file (it changed while being "
                "copied?); nothing was changed. Retry.",
                {"backupPath": backup},
            )
        if target["exists"] and target["isSqlite"]:
            guard = _hold_for_swap(target_path)
            if guard is None:
                if replicated is not None:
                    raise replication_active_error(target_path, replicated, target.get("holderPid"), command)
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
            raise os_error(exc, directory, "replacing the database") from None
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
