"""Taking a backup of lcm.db: online copy, integrity check, manifest.

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
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.files import (
    create_temp,
    fsync_dir,
    hash_file,
    private_mode,
    publish,
    remove_orphans,
    remove_quietly,
)
from lcm_cli.engine.core.outputs import Protected, output_target, protected_files
from lcm_cli.engine.db.connection import busy_timeout_ms, connect, immutable_reason
from lcm_cli.engine.maintenance.backup.errors import backup_failed, os_error, sqlite_error
from lcm_cli.engine.maintenance.backup.files import (
    SPACE_MARGIN_BYTES,
    check_directory,
    check_source,
    check_space,
    integrity_problems,
    open_read_only,
    resolve_destination_error,
    size_or_zero,
    write_json_atomic,
)
from lcm_cli.engine.maintenance.backup.manifest import MANIFEST_VERSION, manifest_path_for, row_counts
from lcm_cli.engine.maintenance.backup.names import (
    default_backup_path,
    iso_ms,
    latest_backup_path,
    normalize_label,
)

DEFAULT_PAGES_PER_STEP = 256
#: A rollback-journal source that changes this many times during one copy is given up on.
MAX_RESTARTS = 5

Progress = Callable[[int, int], None]


class _SourceKeptChanging(Exception):
    """Raised from the progress callback to abort a copy that keeps restarting."""


def _resolve_destination(
    source: str, out: str | None, label: str, now: datetime, protected: Protected = ()
) -> str:
    """The backup's final path: ``out`` (a new file, or a folder for the default name) or beside
    ``source``; never the database, its companions, the config (``protected``) or a manifest."""
    if not out:  # an empty --out is an omitted one, as for every other writer (not the cwd)
        return default_backup_path(source, label, now)
    target = os.path.abspath(os.path.expanduser(out))
    if os.path.isdir(target):
        target = os.path.join(target, os.path.basename(default_backup_path(source, label, now)))

    def exists(path: str) -> LcmError:
        return LcmError(
            "BACKUP_TARGET_EXISTS",
            f"{path} already exists; lcm never overwrites a backup. Pass another --out PATH, "
            "or omit --out for a timestamped name beside the database.",
            {"backupPath": path},
        )

    final = output_target(target, protected=[*protected_files(source, ""), *protected], exists=exists).path
    if os.path.lexists(manifest_path_for(final)):  # its manifest would replace another backup's
        raise exists(final)
    return final


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
        src = open_read_only(self.path, timeout_ms, immutable=self.immutable is not None)
        try:
            return src, str(src.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            src.close()
            if self.read_only or "readonly" not in str(exc).replace(" ", "").lower():
                raise
        recover = connect(self.path, timeout_ms=timeout_ms)
        try:
            recover.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        finally:
            recover.close()
        src = open_read_only(self.path, timeout_ms)
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
        dst = connect(temp, timeout_ms=timeout_ms)
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
                raise backup_failed(
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
        return connect(source, timeout_ms=0)
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
    protected: Protected = (),
) -> dict[str, Any]:
    """Copy a live database consistently, check the copy, and write its manifest beside it.

    ``out``: the backup file (refused if it exists) or an existing directory to put a
    default-named backup in; default beside the database. ``protected``: files ``out``
    must not name besides the database (``Context.protected_files``: the config). ``pages_per_step``: pages per
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
    source, info = check_source(db_path)
    final = _resolve_destination(source, out, label, now, protected)
    directory = os.path.dirname(final)
    check_directory(directory)
    wal_bytes = size_or_zero(source + "-wal")
    check_space(directory, info.st_size + wal_bytes + SPACE_MARGIN_BYTES)

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
            problems = integrity_problems(dst, check)
            if problems:
                raise backup_failed(
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
            "createdAt": iso_ms(now),
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
            raise resolve_destination_error(final)
        manifest["durationMs"] = int((time.monotonic() - started) * 1000)
        # Manifest first: a backup at its final name always has its manifest.
        write_json_atomic(manifest_path, manifest, mode)
        manifest_written = True
        try:
            publish(temp, final, mode=mode, replace=False, sync=False)
        except FileExistsError:
            raise resolve_destination_error(final) from None
    except BaseException as exc:
        if temp:
            remove_quietly(temp, temp + "-journal", temp + "-wal", temp + "-shm")
        if manifest_written and not os.path.lexists(final):
            remove_quietly(manifest_path)
        if isinstance(exc, LcmError):
            raise
        if isinstance(exc, sqlite3.Error):
            raise sqlite_error(exc, source, directory, timeout_ms) from None
        if isinstance(exc, OSError):
            raise os_error(exc, directory, "writing the backup") from None
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
        write_json_atomic(manifest_path_for(final), manifest, mode)
        remove_quietly(temp_manifest)
        fsync_dir(os.path.dirname(final))
    except OSError as exc:
        raise os_error(exc, os.path.dirname(final), "replacing the rolling backup") from None
    return {"backupPath": final, "manifestPath": manifest_path_for(final), **manifest, **extra}


#: Keys of :func:`create_backup`'s result that are not manifest fields.
_RESULT_ONLY = ("sourceReadOnly", "orphansRemoved", "note")
