"""Change backups: the rows a command changes, as they were, captured while it writes.

A full copy of a 10 GB lcm.db takes minutes; the repairs, imports and rewrites lcm runs
change a few hundred rows. A change backup costs what the change costs.

Capture (:func:`capture_changes`)
    Around a command's writes, TEMP triggers on its own connection (other processes'
    writes never fire them) on every ordinary table of ``main`` record each INSERT (the
    new row), UPDATE (old and new row) and DELETE (the old row), with the table, the
    rowids and a sequence number, into ``lcm_change_log``. The record is written by the
    statement that makes the change, so it commits or rolls back with it: a kill at any
    instant never leaves a committed change without its record. Not captured: ``sqlite_*``
    tables, virtual tables and their shadow tables (the full-text indexes, derived: a
    restore re-syncs them), lcm's own ``lcm_*`` tables (the totals its triggers keep, this
    log) and ``WITHOUT ROWID`` tables (none in lossless-claw's schema). Schema changes
    are not rows: a command that migrates the schema takes a full copy instead.
    ``recursive_triggers`` is on while capturing, so a row ``INSERT OR REPLACE`` removes is
    recorded too.

Export (:func:`export_run`)
    When the command ends (success or error) the run's records go to
    ``<db>.<label>-<stamp>-<rand>.changes.jsonl.gz`` beside the database
    (:mod:`.change_file`), through the one file-writing routine, then are deleted
    from the log in transactions of about 25 ms each (:mod:`lcm_cli.engine.db.steps`).
    A run that changed nothing leaves no file. A run starts with a ``begin`` record (its
    header: pid, command, label, file name, the columns of every table); records a killed
    run left (its pid is gone) are exported by the next :func:`capture_changes`, or by
    ``lcm doctor apply --check storage.change-log --apply``, under the name the run chose.
    An export killed after its file was published finds the file complete the next time
    and only deletes the records.

The log also holds the database's identity (a random id, written once): a change backup
names it, and restoring it into another database is refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.files import pid_alive, private_mode, remove_orphans
from lcm_cli.engine.db import steps
from lcm_cli.engine.maintenance.backup.change_file import (
    FORMAT,
    VERSION,
    quote_ident,
    register_functions,
    sql_image,
    verify_change_file,
    write_change_file,
    write_manifest,
)
from lcm_cli.engine.maintenance.backup.manifest import counted_tables, manifest_path_for
from lcm_cli.engine.maintenance.backup.names import change_backup_path, iso_ms

LOG_TABLE = "lcm_change_log"
#: The backup modes of a write command (rotate also takes ``latest``).
MODES = ("changes", "full", "none")
_LOG_DDL = f"""CREATE TABLE IF NOT EXISTS {LOG_TABLE} (
  seq INTEGER PRIMARY KEY,
  run TEXT NOT NULL,
  op TEXT NOT NULL,
  tbl TEXT,
  old_rowid INTEGER,
  new_rowid INTEGER,
  old_row BLOB,
  new_row BLOB
)"""
# A change record, not an UPDATE that left the row as it was.
_CHANGED = "op IN ('I', 'D') OR (op = 'U' AND (old_row IS NOT new_row OR old_rowid IS NOT new_rowid))"
_FIRST_DELETE_ROWS = 200


def choose_mode(value: str | None, *, no_backup: bool = False, extra: tuple[str, ...] = ()) -> str:
    """The backup a write command takes: ``--backup`` (default ``changes``); ``--no-backup`` is ``none``."""
    allowed = ("changes", *extra, "full", "none")
    if no_backup:
        if value not in (None, "none"):
            raise invalid_argument(
                f"--no-backup and --backup {value} contradict each other; keep one.", {"value": value}
            )
        return "none"
    mode = value or "changes"
    if mode not in allowed:
        raise invalid_argument(
            f"Invalid --backup value {mode!r}: expected {', '.join(allowed)} (changes: the rows this "
            "command changes; full: a copy of the whole database).",
            {"value": mode, "allowed": list(allowed)},
        )
    return mode


# --- what is captured ------------------------------------------------------------------


def captured_tables(conn: sqlite3.Connection) -> tuple[dict[str, list[str]], list[str]]:
    """``({table: columns}, not captured)``: every ordinary table but lcm's own and WITHOUT ROWID ones."""
    tables: dict[str, list[str]] = {}
    skipped: list[str] = []
    for name in counted_tables(conn):
        if name.startswith("lcm_"):
            continue
        try:
            conn.execute(f"SELECT rowid FROM {quote_ident(name)} LIMIT 0")
        except sqlite3.OperationalError:
            skipped.append(name)  # WITHOUT ROWID: no rowid to name its rows by
            continue
        info = conn.execute(f"PRAGMA table_xinfo({quote_ident(name)})").fetchall()
        tables[name] = [str(r[1]) for r in info if int(r[6]) == 0]  # not generated or hidden
    return tables, skipped


def log_exists(conn: sqlite3.Connection) -> bool:
    """True when the file has a change log (a change backup was taken on it once)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (LOG_TABLE,))
    return found.fetchone() is not None


def database_identity(conn: sqlite3.Connection) -> str | None:
    """The database's identity (written with its first change backup), or None."""
    if not log_exists(conn):
        return None
    row = conn.execute(
        f"SELECT new_row FROM {LOG_TABLE} WHERE op = 'identity' ORDER BY seq LIMIT 1"
    ).fetchone()
    return None if row is None else str(row[0])


def _ensure_log(conn: sqlite3.Connection) -> str:
    """Create the log and the identity if missing (caller's transaction); the identity."""
    import uuid

    conn.execute(_LOG_DDL)
    identity = database_identity(conn)
    if identity is None:
        identity = uuid.uuid4().hex
        conn.execute(
            f"INSERT INTO {LOG_TABLE} (run, op, new_row) VALUES ('identity', 'identity', ?)", (identity,)
        )
    return identity


def leftover_runs(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Runs whose process is gone with records still in the log: ``{seq, header, changes}`` each."""
    if not log_exists(conn):
        return []
    found = []
    for seq, raw in conn.execute(
        f"SELECT seq, new_row FROM {LOG_TABLE} WHERE op = 'begin' ORDER BY seq"
    ).fetchall():
        try:
            header = json.loads(raw)
            pid = int(header["pid"])
        except (TypeError, ValueError, KeyError):
            continue
        if pid == os.getpid() or pid_alive(pid):
            continue
        changes = conn.execute(
            f"SELECT COUNT(*) FROM {LOG_TABLE} WHERE seq > ? AND run = ? AND ({_CHANGED})",
            (seq, header["run"]),
        ).fetchone()[0]
        found.append({"seq": int(seq), "header": header, "changes": int(changes)})
    return found


# --- capture --------------------------------------------------------------------------------


class ChangeCapture:
    """The change backup of one command's writes on one connection (see the module docstring)."""

    def __init__(self, conn: sqlite3.Connection, database_path: str, *, label: str, command: str) -> None:
        self.conn = conn
        self.database_path = os.path.abspath(database_path)
        self.label = label
        self.command = command
        self.begin_seq: int | None = None
        self.header: dict[str, Any] = {}
        self.triggers: list[str] = []
        self.recursive: int | None = None
        self.leftovers: list[dict[str, Any]] = []
        #: What :meth:`finish` exported: the backup's descriptor, or None when nothing changed.
        self.result: dict[str, Any] | None = None

    def start(self) -> None:
        """Record the run, export what killed runs left, and install the triggers."""
        conn = self.conn
        encoding = str(conn.execute("PRAGMA encoding").fetchone()[0]).upper()
        if encoding != "UTF-8":
            raise LcmError(
                "BACKUP_FAILED",
                f"A change backup needs a UTF-8 database; {self.database_path} is {encoding}. Nothing was "
                "written: pass --backup full.",
                {"databasePath": self.database_path, "encoding": encoding},
            )
        register_functions(conn)
        tables, skipped = captured_tables(conn)
        now = datetime.now(timezone.utc)
        path = change_backup_path(self.database_path, self.label, now)
        run = os.path.basename(path)[
            len(os.path.basename(self.database_path)) + 1 : -len(".changes.jsonl.gz")
        ]
        self.header = {
            "run": run,
            "pid": os.getpid(),
            "command": self.command,
            "label": self.label,
            "path": path,
            "databasePath": self.database_path,
            "startedAt": iso_ms(now),
            "tables": tables,
            "notCaptured": skipped,
        }
        conn.execute("BEGIN IMMEDIATE")
        try:
            self.header["databaseIdentity"] = _ensure_log(conn)
            cursor = conn.execute(
                f"INSERT INTO {LOG_TABLE} (run, op, new_row) VALUES (?, 'begin', ?)",
                (run, json.dumps(self.header)),
            )
            self.begin_seq = int(cursor.lastrowid or 0)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.leftovers = export_leftovers(conn, self.database_path)
        self.recursive = int(conn.execute("PRAGMA recursive_triggers").fetchone()[0])
        conn.execute("PRAGMA recursive_triggers = ON")
        literal = "'" + run.replace("'", "''") + "'"
        for number, (table, columns) in enumerate(tables.items()):
            name = quote_ident(table)
            text = "'" + table.replace("'", "''") + "'"
            new, old = sql_image("NEW", columns), sql_image("OLD", columns)
            bodies = {
                "i": (
                    "INSERT",
                    f"(run, op, tbl, new_rowid, new_row) VALUES ({literal}, 'I', {text}, NEW.rowid, {new})",
                ),
                "u": (
                    "UPDATE",
                    f"(run, op, tbl, old_rowid, new_rowid, old_row, new_row) VALUES ({literal}, 'U', {text},"
                    f" OLD.rowid, NEW.rowid, {old}, {new})",
                ),
                "d": (
                    "DELETE",
                    f"(run, op, tbl, old_rowid, old_row) VALUES ({literal}, 'D', {text}, OLD.rowid, {old})",
                ),
            }
            for suffix, (event, values) in bodies.items():
                trigger = f"lcm_capture_{number}_{suffix}"
                conn.execute(
                    f"CREATE TEMP TRIGGER {trigger} AFTER {event} ON main.{name}"
                    f" BEGIN INSERT INTO {LOG_TABLE} {values}; END"
                )
                self.triggers.append(trigger)

    def stop(self) -> None:
        """Remove the triggers (nothing more is captured); idempotent."""
        conn = self.conn
        if conn.in_transaction:
            conn.execute("ROLLBACK")  # a command that ends leaves nothing to commit
        for trigger in self.triggers:
            conn.execute(f"DROP TRIGGER IF EXISTS temp.{trigger}")
        self.triggers = []
        if self.recursive is not None:
            conn.execute(f"PRAGMA recursive_triggers = {self.recursive}")
            self.recursive = None

    def finish(self) -> dict[str, Any] | None:
        """Stop capturing and export the run's records; the backup's descriptor, or None."""
        self.stop()
        if self.begin_seq is None:
            return None
        made = export_run(self.conn, self.database_path, self.begin_seq, self.header)
        self.begin_seq = None
        if made is not None and self.leftovers:
            made["exportedLeftovers"] = [item["backupPath"] for item in self.leftovers]
        self.result = made
        return made


@contextmanager
def capture_changes(
    conn: sqlite3.Connection, database_path: str, *, label: str, command: str
) -> Iterator[ChangeCapture]:
    """Capture the writes made on ``conn`` inside the block; export them when it ends.

    ``capture.result`` is then the backup's descriptor (``kind``, ``backupPath``,
    ``manifestPath``, ``rows``, ``tables``, ``sizeBytes``, ``sha256``), or None when
    nothing changed. An error raised in the block still exports what was committed, and
    an ``LcmError``'s details name the backup. An export that fails after a successful
    block is reported in ``result`` (``error``): the records stay in the log for the next
    run, and ``lcm doctor`` reports them.
    """
    capture = ChangeCapture(conn, database_path, label=label, command=command)
    try:
        capture.start()
    except BaseException:
        capture.stop()
        raise
    try:
        yield capture
    except BaseException as exc:
        try:
            capture.finish()
        except (LcmError, OSError, sqlite3.Error):
            capture.stop()  # the records stay in the log: the next run exports them
        if isinstance(exc, LcmError) and isinstance(exc.details, dict) and capture.result is not None:
            exc.details.setdefault("backupPath", capture.result["backupPath"])
        raise
    try:
        capture.finish()
    except (LcmError, OSError, sqlite3.Error) as exc:
        capture.stop()
        error = exc.to_dict() if isinstance(exc, LcmError) else {"code": "BACKUP_FAILED", "message": str(exc)}
        capture.result = {
            "kind": "changes",
            "backupPath": None,
            "pending": True,
            "error": error,
            "hint": "The changes are kept in lcm.db's change log: the next command that takes a change "
            "backup writes them out, or `lcm doctor apply --check storage.change-log --apply`.",
        }


# --- export -----------------------------------------------------------------------------


def _derived_mode(database_path: str) -> int:
    try:
        return private_mode(os.stat(database_path).st_mode)
    except OSError:
        return private_mode()


def export_run(
    conn: sqlite3.Connection, database_path: str, begin_seq: int, header: dict[str, Any]
) -> dict[str, Any] | None:
    """Write one run's records as its change backup, then delete them from the log.

    Idempotent: a file already published for this run (an export killed before it
    deleted the records) is verified and kept. None when the run changed nothing.
    """
    run = str(header["run"])
    changed = conn.execute(
        f"SELECT COUNT(*) FROM {LOG_TABLE} WHERE seq > ? AND run = ? AND ({_CHANGED})", (begin_seq, run)
    ).fetchone()[0]
    made: dict[str, Any] | None = None
    if changed:
        made = _write(conn, database_path, begin_seq, header)
    _delete_records(conn, run, begin_seq)
    return made


def _write(
    conn: sqlite3.Connection, database_path: str, begin_seq: int, header: dict[str, Any]
) -> dict[str, Any]:
    run = str(header["run"])
    path = str(header.get("path") or change_backup_path(database_path, str(header.get("label") or "changes")))
    existing = _already_written(path, run)
    if existing is not None:
        return existing
    if os.path.lexists(path):
        path = change_backup_path(database_path, str(header.get("label") or "changes"))
    directory = os.path.dirname(path)
    remove_orphans(directory)
    columns: dict[str, list[str]] = dict(header.get("tables") or {})
    file_header = {
        "format": FORMAT,
        "version": VERSION,
        **{
            k: header.get(k)
            for k in ("run", "command", "label", "databasePath", "databaseIdentity", "startedAt")
        },
        "createdAt": iso_ms(datetime.now(timezone.utc)),
        "lcmVersion": _version(),
    }

    def records() -> Iterator[tuple[int, str, str, Any, Any, bytes | None, bytes | None]]:
        cursor = conn.execute(
            f"""SELECT seq, op, tbl, old_rowid, new_rowid, old_row, new_row FROM {LOG_TABLE}
                WHERE seq > ? AND run = ? AND ({_CHANGED}) ORDER BY seq""",
            (begin_seq, run),
        )
        while chunk := cursor.fetchmany(500):
            for seq, op, table, old_rowid, new_rowid, old, new in chunk:
                yield int(seq), str(op), str(table), old_rowid, new_rowid, old, new

    mode = _derived_mode(database_path)
    write_change_file(path, file_header, records(), lambda t: columns[t], mode=mode)
    # Read back before it counts: the file on disk holds every record, checksum and counts.
    manifest = write_manifest(verify_change_file(path), mode=mode)
    return _descriptor(path, manifest)


def _descriptor(path: str, manifest: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "changes",
        "backupPath": path,
        "manifestPath": manifest_path_for(path),
        "rows": manifest.get("changes"),
        "tables": manifest.get("tables"),
        "sizeBytes": manifest.get("sizeBytes"),
        "sha256": manifest.get("sha256"),
    }


def _already_written(path: str, run: str) -> dict[str, Any] | None:
    """The descriptor of ``path`` when it is this run's complete change backup, else None."""
    if not os.path.isfile(path):
        return None
    try:
        verified = verify_change_file(path)
    except LcmError:
        return None
    if verified["header"].get("run") != run:
        return None
    return _descriptor(path, write_manifest(verified, mode=_derived_mode(path)))


def _version() -> str:
    from lcm_cli import __version__

    return __version__


def _delete_records(conn: sqlite3.Connection, run: str, begin_seq: int) -> None:
    """Delete a run's records, then its ``begin`` record, in transactions of about 25 ms."""
    size = _FIRST_DELETE_ROWS
    last = begin_seq
    while True:
        with steps.step(conn) as lock:
            bound = conn.execute(
                f"SELECT seq FROM {LOG_TABLE} WHERE seq > ? AND run = ? ORDER BY seq LIMIT 1 OFFSET ?",
                (last, run, size - 1),
            ).fetchone()
            if bound is None:  # the last step: the rest, then the run's begin record
                conn.execute(f"DELETE FROM {LOG_TABLE} WHERE seq > ? AND run = ?", (last, run))
                conn.execute(f"DELETE FROM {LOG_TABLE} WHERE seq = ?", (begin_seq,))
            else:
                conn.execute(
                    f"DELETE FROM {LOG_TABLE} WHERE seq > ? AND seq <= ? AND run = ?", (last, bound[0], run)
                )
        if bound is None:
            return
        last = int(bound[0])
        steps.yield_to_writers(lock.seconds)
        size = steps.next_step_size(size, lock.seconds, floor=50, ceiling=50_000)


def export_leftovers(conn: sqlite3.Connection, database_path: str) -> list[dict[str, Any]]:
    """Export the records every killed run left (see :func:`leftover_runs`); their descriptors."""
    made = []
    for item in leftover_runs(conn):
        done = export_run(conn, database_path, item["seq"], item["header"])
        if done is not None:
            made.append(done)
    return made
