"""Restoring a change backup: undo exactly the rows a command changed, while the host writes.

Unlike a full restore, the database is not replaced and the agent host need not stop.

Plan (the dry run is this, and ``--apply`` starts with it)
    The file is verified and must be this database's (its identity, see
    :mod:`.changes`). Its changes become *steps*, in order: an insert empties a
    slot (table, rowid) into a row, a delete empties it, an update changes it (one that
    moved the rowid is a delete at the old rowid and an insert at the new one). Each slot
    then has an initial state (before its first step) and the state the command left
    (after its last). Reading the slot now says what to do: the state the command left
    means *pending* (to delete, put back or reset), the initial state means already
    restored, anything else is a *conflict*: someone changed that row since, and it is
    never overwritten. A row to delete that another row references (a declared foreign
    key; rows this restore deletes too do not count) is a conflict as well. Conflicts
    refuse the whole restore (RESTORE_CONFLICT) unless ``force``, which restores the rest.

Apply
    The steps are undone newest first, as the command made them, in ``BEGIN IMMEDIATE``
    transactions sized to hold the write lock about 25 ms, each followed by a pause as
    long (:mod:`lcm_cli.engine.db.steps`). Every step checks the row still holds what the
    step left (a writer may have come in since the plan), and the full-text rows of the
    messages and summaries it touched are re-synced in the same transaction. Foreign keys
    are off: each row is put back as it was, nothing cascades. The restore is itself
    captured as a change backup (``<db>.pre-restore-…changes.jsonl.gz``), so it can be
    undone. A progress mark in ``lcm_change_log``, written with each transaction, lets the
    same command finish a restore that was killed; run again after it finished, it finds
    every row restored and changes nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db import schema, steps
from lcm_cli.engine.db.connection import connect, database_uri, decode_text, require_sqlite_file
from lcm_cli.engine.db.store.messages import fts_message_text
from lcm_cli.engine.maintenance.backup.change_file import (
    RawText,
    decode_image,
    encode_image,
    quote_ident,
    read_changes,
    register_functions,
    sql_image,
    verify_change_file,
)
from lcm_cli.engine.maintenance.backup.changes import (
    LOG_TABLE,
    capture_changes,
    database_identity,
    log_exists,
)

FIRST_BATCH_STEPS = 50
MAX_LISTED_CONFLICTS = 100
_CHUNK = 500
_SUMMARY_FTS = ("summaries_fts", "summaries_fts_cjk")

Progress = Callable[[int, int], None]


def _open(path: str, timeout_ms: int, *, write: bool) -> sqlite3.Connection:
    """The restore's connection: read-only for a dry run (its plan lives in temp tables)."""
    require_sqlite_file(path)
    conn = connect(path, timeout_ms=timeout_ms, uri=None if write else database_uri(path))
    conn.text_factory = decode_text
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
        conn.execute("PRAGMA foreign_keys = OFF")  # rows go back as they were: nothing cascades
        if write:
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = FILE")  # the steps and slots: on disk, memory bounded
        register_functions(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _rowid_alias(conn: sqlite3.Connection, table: str) -> str | None:
    """The column that is ``table``'s rowid (an INTEGER PRIMARY KEY), or None."""
    info = conn.execute(f"PRAGMA table_info({quote_ident(table)})").fetchall()
    keys = [r for r in info if int(r[5]) > 0]
    if len(keys) == 1 and str(keys[0][2]).upper() == "INTEGER":
        return str(keys[0][1])
    return None


class _Table:
    """What a step needs of one table: its recorded columns, the SQL to read and write a row."""

    def __init__(self, conn: sqlite3.Connection, name: str, columns: list[str]) -> None:
        self.name = name
        self.columns = columns
        self.ident = quote_ident(name)
        present = {str(r[1]) for r in conn.execute(f"PRAGMA table_xinfo({self.ident})").fetchall()}
        #: Why no row of it can be restored (the table or a recorded column is gone), or None.
        self.missing = (
            "table-missing" if not present else "column-missing" if not set(columns) <= present else None
        )
        self.alias = _rowid_alias(conn, name) if present else None
        self.read = f"SELECT {sql_image(self.ident, columns)} FROM {self.ident} WHERE rowid = ?"
        self.read_many = (
            f"SELECT rowid, {sql_image(self.ident, columns)} FROM {self.ident}"
            " WHERE rowid IN (SELECT value FROM json_each(?))"
        )

    def current(self, conn: sqlite3.Connection, rid: int) -> bytes | None:
        row = conn.execute(self.read, (rid,)).fetchone()
        return None if row is None else bytes(row[0])

    def write(self, conn: sqlite3.Connection, rid: int, before: bytes | None, after: bytes | None) -> None:
        """Put slot ``rid`` back in the ``before`` state (None: no row) from the ``after`` state."""
        if before is None:
            conn.execute(f"DELETE FROM {self.ident} WHERE rowid = ?", (rid,))
            return
        values = decode_image(before)
        marks = ["CAST(? AS TEXT)" if isinstance(v, RawText) else "?" for v in values]
        params = [bytes(v) if isinstance(v, RawText) else v for v in values]
        names = [quote_ident(c) for c in self.columns]
        if after is None:
            if self.alias is None:
                names, marks, params = ["rowid", *names], ["?", *marks], [rid, *params]
            conn.execute(f"INSERT INTO {self.ident} ({', '.join(names)}) VALUES ({', '.join(marks)})", params)
            return
        sets = ", ".join(f"{n} = {m}" for n, m in zip(names, marks))
        conn.execute(f"UPDATE {self.ident} SET {sets} WHERE rowid = ?", [*params, rid])


def _conflict(path: str, conflicts: list[dict[str, Any]], count: int, extra: dict[str, Any]) -> LcmError:
    shown = ", ".join(f"{c['table']} rowid {c['rowid']}" for c in conflicts[:5])
    more = f" and {count - 5} more" if count > 5 else ""
    return LcmError(
        "RESTORE_CONFLICT",
        f"{count} rows of {path} were changed since the backup ({shown}{more}); they are never "
        "overwritten. Nothing of them was restored. Review `data.conflicts` of the dry run, then "
        "pass --force to restore every other row.",
        {"backupPath": path, "conflictCount": count, "conflicts": conflicts[:MAX_LISTED_CONFLICTS], **extra},
    )


class _Plan:
    """The steps of one change backup, loaded into temp tables, and what each slot needs."""

    def __init__(self, conn: sqlite3.Connection, path: str, verified: dict[str, Any]) -> None:
        self.conn = conn
        self.path = path
        self.key = "undo:" + str(verified["contentSha256"])
        self.tables: dict[str, _Table] = {}
        for name in ("undo_steps", "undo_slots", "undo_sfts"):
            conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
        conn.execute(
            "CREATE TEMP TABLE undo_steps (ord INTEGER PRIMARY KEY, seq INTEGER, tbl TEXT, rid INTEGER,"
            " before BLOB, after BLOB)"
        )
        conn.execute(
            "CREATE TEMP TABLE undo_slots (id INTEGER PRIMARY KEY, tbl TEXT, rid INTEGER, first_ord INTEGER,"
            " last_ord INTEGER, status TEXT, kind TEXT, reason TEXT, UNIQUE (tbl, rid))"
        )
        self.total = self._load()
        #: Where a killed restore of this file stopped: the log row (its seq) and the step.
        self.mark_seq: int | None = None
        self.mark = self._read_mark()
        self.resumed = self.mark is not None
        below = self.total if self.mark is None else self.mark
        conn.execute(
            """INSERT INTO temp.undo_slots (tbl, rid, first_ord, last_ord)
               SELECT tbl, rid, MIN(ord), MAX(CASE WHEN ord < ? THEN ord END) FROM temp.undo_steps
               GROUP BY tbl, rid ORDER BY tbl, rid""",
            (below,),
        )
        self._classify()
        self._guard_references()

    def _load(self) -> int:
        """Turn the file's changes into steps (ord = their order); the number of steps."""
        conn, count = self.conn, 0
        rows: list[tuple[int, int, str, int, bytes | None, bytes | None]] = []
        for columns, (seq, op, table, old_rowid, new_rowid, old, new) in read_changes(self.path):
            if table not in self.tables:
                self.tables[table] = _Table(conn, table, columns)
            before = None if old is None else encode_image(old)
            after = None if new is None else encode_image(new)
            if op == "update" and old_rowid != new_rowid:
                rows.append((count, seq, table, int(old_rowid), before, None))
                rows.append((count + 1, seq, table, int(new_rowid), None, after))
                count += 2
            else:
                rid = int(new_rowid if op == "insert" else old_rowid)
                rows.append((count, seq, table, rid, before, after))
                count += 1
            if len(rows) >= _CHUNK:
                conn.executemany("INSERT INTO temp.undo_steps VALUES (?, ?, ?, ?, ?, ?)", rows)
                rows = []
        conn.executemany("INSERT INTO temp.undo_steps VALUES (?, ?, ?, ?, ?, ?)", rows)
        return count

    def _read_mark(self) -> int | None:
        if not log_exists(self.conn):
            return None
        row = self.conn.execute(
            f"SELECT seq, new_rowid FROM {LOG_TABLE} WHERE op = 'undo' AND run = ?", (self.key,)
        ).fetchone()
        if row is None:
            return None
        self.mark_seq = int(row[0])
        return int(row[1])

    def _classify(self) -> None:
        """Status of every slot: pending (with its kind), done, none (nothing to do) or conflict."""
        conn, last = self.conn, 0
        while True:
            batch = conn.execute(
                """SELECT l.id, l.tbl, l.rid, l.last_ord, f.before, e.after FROM temp.undo_slots l
                   JOIN temp.undo_steps f ON f.ord = l.first_ord LEFT JOIN temp.undo_steps e ON e.ord = l.last_ord
                   WHERE l.id > ? ORDER BY l.id LIMIT ?""",
                (last, _CHUNK),
            ).fetchall()
            if not batch:
                return
            last = batch[-1][0]
            by_table: dict[str, list[Any]] = {}
            for row in batch:
                by_table.setdefault(str(row[1]), []).append(row)
            updates: list[tuple[str, str | None, str | None, Any]] = []
            for name, slots in by_table.items():
                table = self.tables[name]
                current: dict[int, bytes] = {}
                if table.missing is None:
                    found = conn.execute(
                        table.read_many, (json.dumps([int(s[2]) for s in slots]),)
                    ).fetchall()
                    current = {int(r[0]): bytes(r[1]) for r in found}
                for slot_id, _tbl, rid, last_ord, initial, after in slots:
                    expected = initial if last_ord is None else after
                    now = current.get(int(rid))
                    if expected == initial:
                        updates.append(("none", None, None, slot_id))
                    elif table.missing is not None:
                        updates.append(("conflict", None, table.missing, slot_id))
                    elif now == expected:
                        kind = "delete" if initial is None else "putBack" if expected is None else "reset"
                        updates.append(("pending", kind, None, slot_id))
                    elif now == initial:
                        updates.append(("done", None, None, slot_id))
                    else:
                        updates.append(("conflict", None, "changed", slot_id))
            conn.executemany(
                "UPDATE temp.undo_slots SET status = ?, kind = ?, reason = ? WHERE id = ?", updates
            )

    def _guard_references(self) -> None:
        """A row to delete that a row this restore leaves alone references (a declared foreign
        key) is a conflict. A referencing row the restore puts back or deletes does not count:
        as it was before the command it cannot have named a row the command inserted."""
        conn = self.conn
        parents = {
            str(r[0])
            for r in conn.execute(
                "SELECT DISTINCT tbl FROM temp.undo_slots WHERE status = 'pending' AND kind = 'delete'"
            )
        }
        if not parents:
            return
        refs: dict[str, list[tuple[str, str, str | None]]] = {}
        for (child,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        ):
            keys = conn.execute(f"PRAGMA foreign_key_list({quote_ident(str(child))})").fetchall()
            single = [k for k in keys if sum(1 for j in keys if j[0] == k[0]) == 1]
            for key in single:
                if str(key[2]) in parents:
                    refs.setdefault(str(key[2]), []).append((str(child), str(key[3]), key[4]))
        for parent, children in refs.items():
            table = self.tables[parent]
            last = 0
            while True:
                slots = conn.execute(
                    """SELECT l.id, l.rid, e.after FROM temp.undo_slots l JOIN temp.undo_steps e ON e.ord = l.last_ord
                       WHERE l.tbl = ? AND l.status = 'pending' AND l.kind = 'delete' AND l.id > ?
                       ORDER BY l.id LIMIT ?""",
                    (parent, last, _CHUNK),
                ).fetchall()
                if not slots:
                    break
                last = slots[-1][0]
                referenced: set[int] = set()
                for child, column, target in children:
                    by_key: dict[Any, int] = {}
                    for slot_id, rid, after in slots:
                        if target is None or target == table.alias:
                            by_key[int(rid)] = slot_id
                        elif target in table.columns:
                            value = decode_image(after)[table.columns.index(target)]
                            if isinstance(value, (int, str)):
                                by_key[value] = slot_id
                    if not by_key:
                        continue
                    found = conn.execute(
                        f"""SELECT DISTINCT c.{quote_ident(column)} FROM {quote_ident(child)} c
                            WHERE c.{quote_ident(column)} IN (SELECT value FROM json_each(?))
                              AND c.rowid NOT IN (SELECT rid FROM temp.undo_slots
                                                  WHERE tbl = ? AND status = 'pending')""",
                        (json.dumps(list(by_key)), child),
                    ).fetchall()
                    referenced.update(by_key[r[0]] for r in found if r[0] in by_key)
                conn.executemany(
                    "UPDATE temp.undo_slots SET status = 'conflict', reason = 'referenced' WHERE id = ?",
                    [(i,) for i in referenced],
                )

    def report(self) -> dict[str, Any]:
        """Per table: rows to delete, put back, reset, already restored, in conflict; and the conflicts."""
        tables: dict[str, dict[str, int]] = {}
        for name, status, kind, count in self.conn.execute(
            "SELECT tbl, status, kind, COUNT(*) FROM temp.undo_slots GROUP BY tbl, status, kind"
        ):
            entry = tables.setdefault(
                str(name), {"delete": 0, "putBack": 0, "reset": 0, "alreadyRestored": 0, "conflicts": 0}
            )
            if status == "pending":
                entry[str(kind)] += int(count)
            elif status == "done":
                entry["alreadyRestored"] += int(count)
            elif status == "conflict":
                entry["conflicts"] += int(count)
        totals = {
            k: sum(t[k] for t in tables.values()) for k in ("delete", "putBack", "reset", "alreadyRestored")
        }
        return {
            "tables": tables,
            "totals": totals,
            "conflictCount": self.conflict_count(),
            "conflicts": self.conflicts(),
            "resumed": self.resumed,
        }

    def conflict_count(self) -> int:
        return int(
            self.conn.execute("SELECT COUNT(*) FROM temp.undo_slots WHERE status = 'conflict'").fetchone()[0]
        )

    def conflicts(self) -> list[dict[str, Any]]:
        return [
            {"table": r[0], "rowid": r[1], "reason": r[2]}
            for r in self.conn.execute(
                "SELECT tbl, rid, reason FROM temp.undo_slots WHERE status = 'conflict' ORDER BY tbl, rid LIMIT ?",
                (MAX_LISTED_CONFLICTS,),
            )
        ]

    def pending(self) -> int:
        """Steps still to undo (of pending slots)."""
        below = self.total if self.mark is None else self.mark
        return int(
            self.conn.execute(
                """SELECT COUNT(*) FROM temp.undo_steps s JOIN temp.undo_slots l ON l.tbl = s.tbl AND l.rid = s.rid
                   WHERE s.ord < ? AND l.status = 'pending'""",
                (below,),
            ).fetchone()[0]
        )


class _Fts:
    """The full-text rows of the messages and summaries a restore touches, re-synced as it goes."""

    def __init__(self, conn: sqlite3.Connection, plan: _Plan) -> None:
        self.conn = conn
        usable = schema.fts5_available(conn)
        trigram = usable and schema.trigram_available(conn)
        self.messages = usable and schema.table_exists(conn, "messages_fts")
        self.summaries = [
            t
            for t in _SUMMARY_FTS
            if (trigram if t.endswith("cjk") else usable) and schema.table_exists(conn, t)
        ]
        table = plan.tables.get("summaries")
        self.sid_at = table.columns.index("summary_id") if table and "summary_id" in table.columns else None
        conn.execute("DROP TABLE IF EXISTS temp.undo_sfts")
        conn.execute("CREATE TEMP TABLE undo_sfts (fts TEXT, sid TEXT, rid INTEGER)")
        if self.sid_at is None or not self.summaries:
            return
        ids = set()
        for before, after in conn.execute(
            "SELECT before, after FROM temp.undo_steps WHERE tbl = 'summaries'"
        ).fetchall():
            for image in (before, after):
                if image is not None:
                    ids.add(decode_image(bytes(image))[self.sid_at])
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS undo_sids (sid TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM temp.undo_sids")
        conn.executemany(
            "INSERT OR IGNORE INTO temp.undo_sids VALUES (?)", [(i,) for i in ids if isinstance(i, str)]
        )
        for fts in self.summaries:
            # One read of the index (outside the write lock): where each touched summary's rows are.
            shadow = f"{fts}_content"
            source = (
                f"SELECT id, c0 FROM {shadow} WHERE c0 IN (SELECT sid FROM temp.undo_sids)"
                if schema.table_exists(conn, shadow)
                else f"SELECT rowid, summary_id FROM {fts} WHERE summary_id IN (SELECT sid FROM temp.undo_sids)"
            )
            conn.executemany(
                "INSERT INTO temp.undo_sfts VALUES (?, ?, ?)",
                [(fts, r[1], r[0]) for r in conn.execute(source)],
            )

    def sync(self, messages: set[int], summaries: set[str]) -> None:
        """Re-index these messages and summaries from what they hold now (caller's transaction)."""
        conn = self.conn
        if self.messages:
            for message_id in sorted(messages):
                conn.execute("DELETE FROM messages_fts WHERE rowid = ?", (message_id,))
                row = conn.execute(
                    "SELECT content FROM messages WHERE message_id = ?", (message_id,)
                ).fetchone()
                text = fts_message_text(str(row[0] or "")) if row is not None else None
                if text is not None:
                    conn.execute(
                        "INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", (message_id, text)
                    )
        for fts in self.summaries:
            for sid in sorted(summaries):
                for (rid,) in conn.execute(
                    "SELECT rid FROM temp.undo_sfts WHERE fts = ? AND sid = ?", (fts, sid)
                ).fetchall():
                    conn.execute(f"DELETE FROM {fts} WHERE rowid = ?", (rid,))
                conn.execute("DELETE FROM temp.undo_sfts WHERE fts = ? AND sid = ?", (fts, sid))
                row = conn.execute("SELECT content FROM summaries WHERE summary_id = ?", (sid,)).fetchone()
                if row is not None:
                    cursor = conn.execute(
                        f"INSERT INTO {fts} (summary_id, content) VALUES (?, ?)", (sid, row[0])
                    )
                    conn.execute("INSERT INTO temp.undo_sfts VALUES (?, ?, ?)", (fts, sid, cursor.lastrowid))


def _set_mark(conn: sqlite3.Connection, plan: _Plan, mark: int | None) -> None:
    """Record how far the undo went (caller's transaction), by the mark's seq: the log also
    holds this restore's own change records, which a search by run would read every time."""
    if plan.mark_seq is not None:
        if mark is None:
            conn.execute(f"DELETE FROM {LOG_TABLE} WHERE seq = ?", (plan.mark_seq,))
            plan.mark_seq = None
        else:
            conn.execute(f"UPDATE {LOG_TABLE} SET new_rowid = ? WHERE seq = ?", (mark, plan.mark_seq))
    elif mark is not None:
        cursor = conn.execute(
            f"INSERT INTO {LOG_TABLE} (run, op, new_rowid) VALUES (?, 'undo', ?)", (plan.key, mark)
        )
        plan.mark_seq = int(cursor.lastrowid or 0)


def _replay(
    conn: sqlite3.Connection, plan: _Plan, *, force: bool, progress: Progress | None
) -> dict[str, Any]:
    """Undo the pending steps newest first, in bounded transactions (see the module docstring)."""
    fts = _Fts(conn, plan)
    total = plan.pending()
    mark = plan.total if plan.mark is None else plan.mark
    size, done, batches = FIRST_BATCH_STEPS, 0, []
    skipped: list[dict[str, Any]] = []
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # checkpoints between batches, not inside a COMMIT
    try:
        while mark > 0:
            with steps.step(conn) as lock:
                # CROSS JOIN: the steps drive (by ord, a range of the key), never a scan of the slots.
                rows = conn.execute(
                    """SELECT s.ord, s.tbl, s.rid, s.before, s.after, l.id, l.status FROM temp.undo_steps s
                       CROSS JOIN temp.undo_slots l ON l.tbl = s.tbl AND l.rid = s.rid
                       WHERE s.ord < ? ORDER BY s.ord DESC LIMIT ?""",
                    (mark, size),
                ).fetchall()
                messages: set[int] = set()
                summaries: set[str] = set()
                for _ord, name, rid, before, after, slot_id, status in rows:
                    if status != "pending":
                        continue
                    table = plan.tables[str(name)]
                    before = None if before is None else bytes(before)
                    after = None if after is None else bytes(after)
                    reason = None
                    if table.current(conn, int(rid)) != after:
                        reason = "changed"
                    else:
                        try:
                            table.write(conn, int(rid), before, after)
                        except sqlite3.IntegrityError:
                            reason = "constraint"
                    if reason is not None:
                        if not force:
                            raise _conflict(
                                plan.path,
                                [{"table": name, "rowid": rid, "reason": reason}],
                                1,
                                {"changedDuringRestore": True, "rerun": "run the same restore again"},
                            )
                        conn.execute(
                            "UPDATE temp.undo_slots SET status = 'conflict', reason = ? WHERE id = ?",
                            (reason, slot_id),
                        )
                        skipped.append({"table": name, "rowid": rid, "reason": reason})
                        continue
                    done += 1
                    if name == "messages":
                        messages.add(int(rid))
                    elif name == "summaries" and fts.sid_at is not None:
                        for image in (before, after):
                            if image is not None:
                                summaries.add(str(decode_image(image)[fts.sid_at]))
                fts.sync(messages, summaries)
                mark = int(rows[-1][0]) if rows else 0
                _set_mark(conn, plan, mark)
            held = lock.seconds
            batches.append(held)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            if progress is not None:
                progress(done, total)
            if mark == 0:
                break
            steps.yield_to_writers(held)
            size = steps.next_step_size(size, held, floor=10, ceiling=20_000)
        conn.execute("BEGIN IMMEDIATE")
        _set_mark(conn, plan, None)
        conn.execute("COMMIT")
    finally:
        conn.execute("PRAGMA wal_autocheckpoint = 1000")
    return {
        "undoneSteps": done,
        "batches": len(batches),
        "longestBatchMs": round(max(batches, default=0.0) * 1000, 1),
        "skipped": skipped[:MAX_LISTED_CONFLICTS],
        "skippedCount": len(skipped),
    }


def restore_changes(
    path: str,
    database_path: str,
    *,
    apply: bool = False,
    force: bool = False,
    timeout_ms: int = 30000,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Dry run (default) or undo a change backup in ``database_path`` (see the module docstring)."""
    backup = os.path.abspath(path)
    verified = verify_change_file(backup)
    header = verified["header"]
    started = time.perf_counter()
    conn = _open(database_path, timeout_ms, write=apply)
    try:
        identity = database_identity(conn)
        if identity is None or identity != header.get("databaseIdentity"):
            raise LcmError(
                "BACKUP_WRONG_DATABASE",
                f"{backup} is a change backup of another database ({header.get('databasePath')}); "
                f"{database_path} is not that database (or a copy of it). Nothing was changed: pass the "
                "database it was taken of with --db.",
                {
                    "backupPath": backup,
                    "databasePath": os.path.abspath(database_path),
                    "backupDatabasePath": header.get("databasePath"),
                },
            )
        plan = _Plan(conn, backup, verified)
        data: dict[str, Any] = {
            "backupPath": backup,
            "databasePath": os.path.abspath(database_path),
            "kind": "changes",
            "applied": False,
            "verification": {k: verified[k] for k in ("ok", "sizeBytes", "sha256", "changes", "checks")},
            "backup": {
                k: header.get(k) for k in ("command", "label", "startedAt", "createdAt", "lcmVersion")
            },
            **plan.report(),
            "forced": False,
        }
        pending = plan.pending()
        data["restorable"] = data["conflictCount"] == 0 or force
        data["alreadyRestored"] = pending == 0 and data["totals"]["alreadyRestored"] > 0 and not plan.resumed
        if not apply:
            data["plan"] = [
                "verify the backup (done: see verification)",
                "check every row it names against the database now (done: see tables and conflicts)",
                "undo the changes newest first in transactions of about 25 ms, re-syncing full-text rows,"
                " under a change backup of its own",
            ]
            return data
        if data["conflictCount"] and not force:
            raise _conflict(backup, plan.conflicts(), data["conflictCount"], {"tables": data["tables"]})
        data.update(applied=True, forced=bool(data["conflictCount"]) and force, preRestoreBackup=None)
        if pending == 0 and not plan.resumed:
            data["undoneSteps"] = 0
            return data
        with capture_changes(conn, database_path, label="pre-restore", command="backup restore") as capture:
            data.update(_replay(conn, plan, force=force, progress=progress))
        data["preRestoreBackup"] = capture.result
        data["conflictCount"] = plan.conflict_count()
        data["conflicts"] = plan.conflicts()
        data["elapsedMs"] = int((time.perf_counter() - started) * 1000)
        return data
    finally:
        conn.close()
