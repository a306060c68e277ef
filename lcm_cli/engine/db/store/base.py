"""The store's connection: opening and creating the file, pragmas, transactions, shared lookups.

:class:`StoreBase` is what every table family's writer builds on; the assembled
:class:`lcm_cli.engine.db.store.Store` adds the writers.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.db import schema, totals
from lcm_cli.engine.db.connection import bind_none_directly, connect, decode_text
from lcm_cli.engine.db.store import anchor_trust
from lcm_cli.engine.db.store.ids import PartIds

_StoreT = TypeVar("_StoreT", bound="StoreBase")

# Opening creates the file, switches it to WAL and runs migrations: threads of one process
# (the workers of `lcm serve`) do that one at a time, so two first requests cannot race
# on a brand-new file. Other processes are kept apart by SQLite's own locks.
_OPEN_LOCK = threading.Lock()


class StoreBase:
    """A writable lcm.db connection: migrated, WAL, foreign keys on, explicit transactions."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        """Wrap an open, migrated connection; prefer :meth:`Store.open`."""
        self.conn = conn
        self.path = path
        self._depth = 0
        self._savepoints = 0
        self.part_ids = PartIds()
        #: Why this open rebuilt the trigger-maintained totals (None: they were fresh).
        self.totals_rebuilt: str | None = None
        #: The files this connection writes: lcm.db as opened, and its WAL once committed to.
        self._identity = _file_identity(str(path))
        self._wal_identity: tuple[int, int] | None = None
        #: Set when the file at ``path`` is no longer the one this connection writes.
        self.replaced = False
        self._wal_mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
        usable = schema.fts5_available(conn)
        trigram = usable and schema.trigram_available(conn)
        # Only write FTS rows when the table exists AND this build can use it:
        # a file made by a richer SQLite build may hold tables we cannot touch.
        self.has_messages_fts = usable and schema.table_exists(conn, "messages_fts")
        self.has_summaries_fts = usable and schema.table_exists(conn, "summaries_fts")
        self.has_summaries_fts_cjk = trigram and schema.table_exists(conn, "summaries_fts_cjk")
        #: Whether message writes record anchor trust (:mod:`lcm_cli.engine.db.store.anchor_trust`).
        self.has_anchor_trust = schema.table_exists(conn, anchor_trust.TABLE)

    @classmethod
    def open(cls: type[_StoreT], path: str | Path) -> _StoreT:
        """Open (creating file and parent directory if missing) and migrate ``path``."""
        path = Path(path)
        with _OPEN_LOCK:
            return cls._open(path)

    @classmethod
    def _open(cls: type[_StoreT], path: Path) -> _StoreT:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            links = path.stat().st_nlink
        except FileNotFoundError:
            _create_complete(path)
        else:
            if links > 1:
                # A creator killed after publishing the file left its sibling name linked.
                _remove_stale_creators(path)
        conn = cls._connect(path)
        try:
            schema.migrate(conn)
            # Stale totals (triggers dropped by a table rebuild, rows written without
            # them) are rebuilt by the first writer that notices: a cheap check.
            rebuilt = totals.ensure_fresh(conn)
            store = cls(conn, path)
            store.totals_rebuilt = rebuilt
            return store
        except BaseException:
            conn.close()
            raise

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        # isolation_level=None: the sqlite3 module never opens transactions on
        # its own; this class issues BEGIN IMMEDIATE / COMMIT itself.
        bind_none_directly()
        conn = connect(str(path), timeout_ms=30000)
        conn.text_factory = decode_text  # an undecodable stored value reads with U+FFFD
        try:
            # The same pragmas lossless-claw sets on its writer connections.
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA cache_size = -65536")
            conn.execute("PRAGMA temp_store = MEMORY")
            return conn
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        """Close the connection (rolling back anything left open)."""
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        # An optimisation hint, as lossless-claw gives on close, bounded (see
        # refresh_statistics); never a reason to fail closing.
        with contextlib.suppress(sqlite3.Error):
            refresh_statistics(self.conn)
        self.conn.close()

    def __enter__(self: _StoreT) -> _StoreT:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` unit of work; nested calls join the outer one.

        A nested block runs in a savepoint, so if it raises only its own writes
        are undone and the outer transaction can carry on (or fail) as it likes.
        """
        if self._depth:
            self._savepoints += 1
            name = f"lcm_store_{self._savepoints}"
            self.conn.execute(f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                self.conn.execute(f"RELEASE SAVEPOINT {name}")
                raise
            else:
                self.conn.execute(f"RELEASE SAVEPOINT {name}")
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._check_file_is_ours(committed=False)
        self._depth = 1
        try:
            yield self.conn
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")
            self._check_file_is_ours(committed=True)
        finally:
            self._depth = 0
            self._savepoints = 0

    def still_current(self) -> bool:
        """False when the file at ``path`` is no longer the one this connection has open."""
        return not self.replaced and _file_identity(str(self.path)) == self._identity

    def _check_file_is_ours(self, *, committed: bool) -> None:
        """Raise DATABASE_REPLACED when lcm.db or its ``-wal`` is no longer what this connection writes.

        While this connection is open SQLite keeps lcm.db and its ``-wal`` in place (the WAL
        is only truncated, never deleted, while a connection holds its lock). Another process
        that replaces, moves or deletes either (a forced restore, a copy over the file, a
        cleanup of ``-wal`` files) leaves this connection writing to an unlinked file. Checked
        when a transaction starts (it is then rolled back: nothing written anywhere) and
        again after the commit (a replacement in between: the commit is reported failed,
        never acknowledged). Either way the store must be reopened.
        """
        path = str(self.path)
        moved = None
        if _file_identity(path) != self._identity:
            moved = path
        elif self._wal_mode:
            wal = _file_identity(path + "-wal")
            if wal is None or (self._wal_identity is not None and wal != self._wal_identity):
                moved = path + "-wal"
            self._wal_identity = wal
        if moved is None:
            return
        from lcm_cli.engine.core.errors import LcmError

        self.replaced = True
        if not committed and self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        what = "the last write may not have reached it" if committed else "nothing was written"
        raise LcmError(
            "DATABASE_REPLACED",
            f"{moved} was replaced, moved or deleted by another process while lcm had it open; "
            f"{what}. Retry: lcm reopens the file.",
            {"databasePath": path, "file": moved},
        )

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def _session_id(self, conversation_id: int) -> str:
        session_id = self._scalar(
            "SELECT session_id FROM conversations WHERE conversation_id = ?",
            (conversation_id,),
        )
        if session_id is None:
            raise ValueError(f"conversation {conversation_id} does not exist")
        return str(session_id)

    def next_message_id(self) -> int:
        """The id the next inserted message gets (call it inside the write transaction)."""
        # AUTOINCREMENT never reuses an id, even of a deleted last row, so the
        # high-water mark in sqlite_sequence counts as well as MAX(message_id).
        return int(
            self._scalar(
                "SELECT MAX("
                " COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0),"
                " COALESCE((SELECT MAX(message_id) FROM messages), 0)) + 1"
            )
        )

    def _next_ordinal(self, conversation_id: int) -> int:
        return int(
            self._scalar(
                "SELECT COALESCE(MAX(ordinal), -1) + 1 FROM context_items WHERE conversation_id = ?",
                (conversation_id,),
            )
        )


#: Rows ANALYZE reads per index (SQLite's recommendation with ``PRAGMA optimize``): a few
#: milliseconds at any size, where an unbounded ANALYZE of ``messages`` reads every row.
ANALYSIS_LIMIT = 400
#: How long closing waits for the write lock to store statistics; they can wait for the
#: next close, the live writer should not wait for them.
_STATISTICS_BUSY_MS = 100


def refresh_statistics(conn: sqlite3.Connection) -> None:
    """``PRAGMA optimize`` at a bounded cost, with statistics that do not flip query plans.

    Three things make the plain pragma (what lossless-claw runs on close) a full ANALYZE
    of ``messages`` under the write lock, at every close, on a large file: no
    ``analysis_limit``; an index with no ``sqlite_stat1`` row, which makes ``optimize``
    analyze its table every time, and an EMPTY partial index (``messages_stable_event_key_unique``
    or ``messages_conv_entry_unique_idx`` on files whose rows never set the key) never
    gets one, since ANALYZE writes no row for an empty index; and plans that depend on
    whether a table (``summaries``) happened to be analyzed by the last program that
    closed the file. So, before ``optimize``:

    - a table with indexes and rows but no statistics at all is analyzed (bounded);
    - an empty index of an analyzed table gets the row ANALYZE would write for one entry
      (``1 1 …``), so ``optimize`` leaves that table alone until it grows 25-fold;

    and ``analysis_limit`` bounds whatever ``optimize`` still analyzes. Statistics an
    unbounded ANALYZE wrote (lossless-claw's) are kept, not replaced by estimates.
    """
    conn.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
    conn.execute(f"PRAGMA busy_timeout = {_STATISTICS_BUSY_MS}")
    has_stat1 = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'"
    ).fetchone()
    unanalyzed = _unanalyzed_tables(conn, bool(has_stat1))
    if unanalyzed:
        for table in unanalyzed:
            conn.execute(f'ANALYZE "{table}"')
        has_stat1 = (1,)
    pins = _empty_index_pins(conn) if has_stat1 else []
    if pins:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", pins)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    if unanalyzed or pins:
        conn.execute("ANALYZE sqlite_master")  # load what was written into this connection
    conn.execute("PRAGMA optimize")


def _unanalyzed_tables(conn: sqlite3.Connection, has_stat1: bool) -> list[str]:
    """Tables with an index and at least one row, and not one ``sqlite_stat1`` row."""
    analyzed = "AND NOT EXISTS (SELECT 1 FROM sqlite_stat1 s WHERE s.tbl = t.name)" if has_stat1 else ""
    names = [
        row[0]
        for row in conn.execute(
            f"""SELECT t.name FROM sqlite_master t
                WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite_%' AND t.sql NOT LIKE 'CREATE VIRTUAL%'
                  AND EXISTS (SELECT 1 FROM sqlite_master i WHERE i.type = 'index' AND i.tbl_name = t.name)
                  {analyzed}"""
        )
    ]
    return [name for name in names if conn.execute(f'SELECT 1 FROM "{name}" LIMIT 1').fetchone()]


def _empty_index_pins(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """The one-entry statistics row for each empty index of an analyzed table that has none."""
    rows = conn.execute(
        """SELECT i.name, i.tbl_name, i.sql FROM sqlite_master i
           WHERE i.type = 'index' AND i.sql IS NOT NULL
             AND EXISTS (SELECT 1 FROM sqlite_stat1 s WHERE s.tbl = i.tbl_name)
             AND NOT EXISTS (SELECT 1 FROM sqlite_stat1 s WHERE s.idx = i.name)"""
    ).fetchall()
    pins = []
    for name, table, sql in rows:
        where = sql.upper().rfind(" WHERE ")
        condition = sql[where + 7 :] if where >= 0 else "1"
        if conn.execute(f'SELECT 1 FROM "{table}" WHERE {condition} LIMIT 1').fetchone():
            continue  # not empty: optimize analyzes it (bounded)
        columns = len(conn.execute(f'PRAGMA index_info("{name}")').fetchall())
        pins.append((table, name, " ".join(["1"] * (columns + 1))))
    return pins


def _file_identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


# The sibling a creator builds the schema in: ``.<name>.creating-<pid>-<thread>``.
def _creating_prefix(path: Path) -> str:
    return f".{path.name}.creating-"


def _remove_stale_creators(path: Path) -> None:
    """Remove the siblings (and their -wal/-shm) that killed creators of ``path`` left."""
    from lcm_cli.engine.core.files import pid_alive

    prefix = _creating_prefix(path)
    for stale in path.parent.glob(prefix + "*"):
        pid = stale.name[len(prefix) :].split("-", 1)[0].split(".", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            with contextlib.suppress(OSError):
                stale.unlink()


def _create_complete(path: Path) -> None:
    """Create ``path`` with its whole schema, so no reader ever sees a file without tables.

    The schema is built in a sibling file that only this process names, made durable,
    then hard-linked into place (which fails if another process created ``path`` first:
    theirs is kept). A kill at any instant leaves either no ``path`` or a complete one;
    the sibling a killed creator left is removed by the next open (before or after
    publishing: then it is a second link to ``path``).
    """
    from lcm_cli.engine.core.files import fsync_dir

    _remove_stale_creators(path)
    staging = path.with_name(f"{_creating_prefix(path)}{os.getpid()}-{threading.get_ident()}")
    for leftover in (staging, Path(str(staging) + "-wal"), Path(str(staging) + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    conn = StoreBase._connect(staging)
    try:
        schema.migrate(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    try:
        with open_input(str(staging)) as handle:
            os.fsync(handle.fileno())
        try:
            os.link(staging, path)
        except FileExistsError:
            pass  # another process created it meanwhile: theirs is complete too
        fsync_dir(str(path.parent))
    finally:
        for leftover in (staging, Path(str(staging) + "-wal"), Path(str(staging) + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
