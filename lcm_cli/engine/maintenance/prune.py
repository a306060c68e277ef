"""Archiving whole conversations to a checksummed ``.jsonl.gz``, deleting them, restoring them.

Archive format (one gzip stream of JSON lines, chosen over ``.tar.zst`` because the
standard library reads and writes it and a single stream needs no tar index):

* line 1, the header: ``{"format": "lcm-prune-archive", "version": 1, "conversationIds": [...],
  "createdAt", "databasePath", "tables": [...]}``;
* per table, in restore order (parents before children): ``{"table": <name>, "columns":
  [...]}`` and then one JSON array per row, values in column order (bytes values are
  ``{"$b64": "..."}``);
* the trailer: ``{"trailer": true, "rows": {<table>: n}, "sha256": <hex of every line before it>}``.

Object lines start with ``{`` and row lines with ``[``, so verifying needs no JSON parse
per row: the trailer's sha256 covers every byte of every row.

A sidecar ``<archive>.manifest.json`` records the sha256 and size of the compressed file
and the row counts. :func:`verify_archive` re-reads both; a truncated or altered archive
fails before anything is deleted or restored.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import sqlite3
import zlib
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.files import atomic_write, hash_file, private_mode, remove_orphans
from lcm_cli.engine.core.held_files import open_input, open_input_text
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.core.outputs import MANIFEST_SUFFIX, OutputTarget, Protected, output_target
from lcm_cli.engine.db import steps
from lcm_cli.engine.db.store.messages import fts_message_text
from lcm_cli.engine.maintenance.backup.errors import os_error

FORMAT = "lcm-prune-archive"
VERSION = 1

#: Rows the first delete batch of a table takes; each next one is sized from the last one's time.
FIRST_BATCH_ROWS = 50

_OF_PRUNED_BATCHES = (
    " OR batch_id IN (SELECT batch_id FROM pending_compaction_batches WHERE conversation_id IN "
    "(SELECT id FROM temp.prune_conv))"
)

# (table, which rows belong to the pruned conversations), in restore order.
# ``conv``/``msgs``/``sums``/``briefs`` are temp tables of the ids being pruned.
ARCHIVED_TABLES: tuple[tuple[str, str], ...] = (
    ("conversations", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("messages", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("message_parts", "message_id IN (SELECT id FROM temp.prune_msgs)"),
    ("summaries", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    (
        "summary_messages",
        "summary_id IN (SELECT id FROM temp.prune_sums) OR message_id IN (SELECT id FROM temp.prune_msgs)",
    ),
    (
        "summary_parents",
        "summary_id IN (SELECT id FROM temp.prune_sums) OR parent_summary_id IN (SELECT id FROM temp.prune_sums)",
    ),
    (
        "context_items",
        "conversation_id IN (SELECT id FROM temp.prune_conv) OR message_id IN (SELECT id FROM temp.prune_msgs)"
        " OR summary_id IN (SELECT id FROM temp.prune_sums)",
    ),
    ("large_files", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("conversation_bootstrap_state", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("conversation_compaction_telemetry", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("conversation_compaction_maintenance", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("focus_briefs", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    (
        "focus_brief_sources",
        "brief_id IN (SELECT brief_id FROM focus_briefs WHERE conversation_id IN "
        "(SELECT id FROM temp.prune_conv))",
    ),
    # lossless-claw 1.0's durable-turn tables. The link tables have no conversation_id;
    # their RESTRICT references would be left dangling by a foreign-keys-off delete.
    (
        "message_transcript_anchor_trust",
        "conversation_id IN (SELECT id FROM temp.prune_conv) OR message_id IN (SELECT id FROM temp.prune_msgs)",
    ),
    ("conversation_transcript_epochs", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("pending_compaction_batches", "conversation_id IN (SELECT id FROM temp.prune_conv)"),
    ("pending_summary_nodes", "conversation_id IN (SELECT id FROM temp.prune_conv)" + _OF_PRUNED_BATCHES),
    (
        "pending_summary_node_messages",
        "node_id IN (SELECT node_id FROM pending_summary_nodes WHERE conversation_id IN "
        "(SELECT id FROM temp.prune_conv)"
        + _OF_PRUNED_BATCHES
        + ") OR message_id IN (SELECT id FROM temp.prune_msgs)",
    ),
    (
        "pending_summary_node_children",
        "node_id IN (SELECT node_id FROM pending_summary_nodes WHERE conversation_id IN "
        "(SELECT id FROM temp.prune_conv)" + _OF_PRUNED_BATCHES + ")"
        " OR child_summary_id IN (SELECT id FROM temp.prune_sums)",
    ),
    # The commitTurn ledger is keyed by session, not conversation: its rows go with the
    # last conversation of their session (another conversation of the session keeps them).
    (
        "turn_advancements",
        "session_id IN (SELECT session_id FROM conversations WHERE conversation_id IN "
        "(SELECT id FROM temp.prune_conv)) AND session_id NOT IN (SELECT session_id FROM conversations "
        "WHERE conversation_id NOT IN (SELECT id FROM temp.prune_conv))",
    ),
)
# Tables whose selection above reads another table: archived only when that one exists too.
_NEEDS: dict[str, set[str]] = {
    "focus_brief_sources": {"focus_briefs"},
    "pending_summary_nodes": {"pending_compaction_batches"},
    "pending_summary_node_messages": {"pending_summary_nodes", "pending_compaction_batches"},
    "pending_summary_node_children": {"pending_summary_nodes", "pending_compaction_batches"},
    "turn_advancements": {"conversations"},
}
_SUMMARY_FTS = ("summaries_fts", "summaries_fts_cjk")
_CONV_WHERE = "conversation_id IN (SELECT id FROM temp.prune_conv)"


def archived_tables(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """The known tables (restore order) present in this file, then any other table with a
    ``conversation_id`` column (a newer lossless-claw may add some): nothing is left behind."""
    present = _tables(conn)
    known = [(t, w) for t, w in ARCHIVED_TABLES if t in present and _NEEDS.get(t, set()) <= present]
    names = {t for t, _ in ARCHIVED_TABLES}
    virtual = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'")}
    shadow = {t for t in present for v in virtual if t.startswith(v + "_")}
    extra = []
    for table in sorted(present - names - virtual - shadow):
        if table.startswith("sqlite_"):
            continue
        columns = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
        if "conversation_id" in columns:
            extra.append((table, _CONV_WHERE))
    return known + extra


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def stage_ids(conn: sqlite3.Connection, conversation_ids: Sequence[int]) -> dict[str, int]:
    """Fill temp tables with the conversation, message and summary ids being pruned."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS prune_conv (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS prune_msgs (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS prune_sums (id TEXT PRIMARY KEY)")
    for table in ("prune_conv", "prune_msgs", "prune_sums"):
        conn.execute(f"DELETE FROM temp.{table}")
    conn.executemany(
        "INSERT OR IGNORE INTO temp.prune_conv (id) VALUES (?)", [(i,) for i in conversation_ids]
    )
    conn.execute(
        "INSERT INTO temp.prune_msgs (id) SELECT message_id FROM messages "
        "WHERE conversation_id IN (SELECT id FROM temp.prune_conv)"
    )
    conn.execute(
        "INSERT INTO temp.prune_sums (id) SELECT summary_id FROM summaries "
        "WHERE conversation_id IN (SELECT id FROM temp.prune_conv)"
    )
    return {
        table: int(conn.execute(f"SELECT COUNT(*) FROM temp.{table}").fetchone()[0])
        for table in ("prune_conv", "prune_msgs", "prune_sums")
    }


def _encode_bytes(value: Any) -> Any:
    # json.dumps calls this only for values it cannot encode: BLOB columns come back as bytes.
    if isinstance(value, bytes):
        return {"$b64": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"cannot archive a {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$b64"}:
        return base64.b64decode(value["$b64"])
    return value


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_encode_bytes)


def _line(value: Any) -> bytes:
    return (_ENCODER.encode(value) + "\n").encode("utf-8")


def manifest_path_for(archive: str) -> str:
    """Where an archive's manifest lives."""
    return archive + MANIFEST_SUFFIX


def _archive_exists(path: str) -> LcmError:
    return LcmError(
        "BACKUP_TARGET_EXISTS", f"{path} already exists; choose another --out.", {"archivePath": path}
    )


def archive_target(path: str, protected: Protected) -> OutputTarget:
    """The checked archive path: a new file, not the database or config (``protected``), and
    without a manifest beside it that writing the archive's own would replace."""
    target = output_target(path, protected=protected, exists=_archive_exists)
    if os.path.lexists(manifest_path_for(target.path)):
        raise _archive_exists(target.path)
    return target


def write_archive(
    conn: sqlite3.Connection,
    conversation_ids: Sequence[int],
    target: OutputTarget,
    *,
    database_path: str,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write every row of the staged conversations to ``target`` (:func:`archive_target`;
    temp file, fsync, link) and its manifest. Call :func:`stage_ids` first, inside the
    transaction that will delete them, so the archive holds exactly what gets deleted."""
    path = target.path
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        raise LcmError(
            "BACKUP_TARGET_UNWRITABLE",
            f"Cannot write the archive in {directory}; pass --out in a writable directory.",
            {"directory": directory},
        )
    header = {
        "format": FORMAT,
        "version": VERSION,
        "createdAt": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "databasePath": database_path,
        "conversationIds": sorted(conversation_ids),
        "tables": [t for t, _ in archived_tables(conn)],
    }
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    encode = _ENCODER.encode
    # Private like the database it comes from (0600, or stricter when lcm.db is); written
    # exclusively under an unpredictable temp name, then linked to ``path`` (never over a file).
    mode = _derived_mode(database_path)
    remove_orphans(directory)
    try:
        with target.writer(mode=mode) as raw:
            # Level 1: several times faster than the default and within ~15% of its size on text.
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as out:

                def emit(chunk: bytes) -> None:
                    digest.update(chunk)
                    out.write(chunk)

                emit(_line(header))
                written = 0
                for table, where in archived_tables(conn):
                    cursor = conn.execute(f"SELECT * FROM {table} WHERE {where}")
                    emit(_line({"table": table, "columns": [d[0] for d in cursor.description]}))
                    while rows := cursor.fetchmany(2000):
                        emit(("\n".join(map(encode, rows)) + "\n").encode("utf-8"))
                        counts[table] = counts.get(table, 0) + len(rows)
                        written += len(rows)
                        if progress is not None:
                            progress(written)
                out.write(_line({"trailer": True, "rows": counts, "sha256": digest.hexdigest()}))
    except OSError as exc:  # a name too long for the temp sibling, a full disk: nothing was linked
        raise os_error(exc, directory, "writing the archive") from None
    size, sha = hash_file(path)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "archivePath": os.path.abspath(path),
        "bytes": size,
        "sha256": sha,
        "contentSha256": digest.hexdigest(),
        "rows": counts,
        "conversationIds": header["conversationIds"],
        "createdAt": header["createdAt"],
        "databasePath": database_path,
    }
    manifest_path = manifest_path_for(path)
    atomic_write(manifest_path, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"), mode=mode)
    return {"archivePath": os.path.abspath(path), "manifestPath": manifest_path, **manifest}


def _derived_mode(database_path: str) -> int:
    try:
        return private_mode(os.stat(database_path).st_mode)
    except OSError:
        return private_mode()


def _corrupt(path: str, why: str) -> LcmError:
    return LcmError(
        "ARCHIVE_CORRUPT",
        f"Archive {path} failed verification ({why}); it cannot be trusted. Nothing was changed.",
        {"archivePath": path, "reason": why},
    )


def read_archive(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(table, row)`` from a verified archive (call :func:`verify_archive` first).

    The checksums prove the file is whole, not well formed (a sha256 is no signature): a
    line of the wrong shape is ``ARCHIVE_CORRUPT`` here, before the restore writes it.
    """
    from lcm_cli.engine.maintenance.backup.change_file import sqlite_value

    with open_input(path) as compressed, gzip.GzipFile(fileobj=compressed, mode="rb") as handle:
        next(handle)  # header
        table: str = ""
        columns: list[str] = []
        for number, raw in enumerate(handle, start=2):
            try:
                entry = loads_bounded(raw)
                if isinstance(entry, list):
                    row = {c: _decode(v) for c, v in zip(columns, entry)}
                    if len(entry) != len(columns) or not all(map(sqlite_value, row.values())):
                        raise ValueError("a row that is not one SQLite value per column")
                    yield table, row
                    continue
                if entry.get("trailer"):
                    return
                table, columns = entry["table"], entry["columns"]
                if not isinstance(table, str) or not isinstance(columns, list):
                    raise ValueError("a table line without a name and columns")
                if not all(isinstance(c, str) for c in columns):
                    raise ValueError("a column name that is not text")
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise _corrupt(path, f"malformed line {number}: {exc}") from None


def verify_archive(path: str) -> dict[str, Any]:
    """Check an archive end to end: gzip CRC, header, trailer checksum and counts, manifest."""
    if not os.path.isfile(path):
        raise LcmError(
            "ARCHIVE_NOT_FOUND",
            f"No archive at {path}. Archives are written by `lcm prune --apply`.",
            {"archivePath": path},
        )
    from lcm_cli.engine.maintenance.backup.change_file import sniff_kind, wrong_kind

    kind = sniff_kind(path)
    if kind in ("changes", "full"):
        raise wrong_kind(path, kind, "prune-archive")  # not damaged: another kind of backup
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    header: dict[str, Any] | None = None
    trailer: dict[str, Any] | None = None
    table: str | None = None
    try:
        with open_input(path) as compressed, gzip.GzipFile(fileobj=compressed, mode="rb") as handle:
            for raw in handle:
                if trailer is not None:
                    raise _corrupt(path, "data after the trailer")
                if raw.startswith(b"[") and header is not None:
                    if table is None:
                        raise _corrupt(path, "a row before its table")
                    counts[table] = counts.get(table, 0) + 1
                    digest.update(raw)
                    continue
                entry = loads_bounded(raw)
                if header is None:
                    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
                        raise _corrupt(path, "not an lcm prune archive")
                    if entry.get("version") != VERSION:
                        raise _corrupt(path, f"unsupported version {entry.get('version')}")
                    header = entry
                elif entry.get("trailer"):
                    trailer = entry
                    continue
                else:
                    table = str(entry["table"])
                digest.update(raw)
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _corrupt(path, f"unreadable: {exc}") from None
    if header is None or trailer is None:
        raise _corrupt(path, "truncated (no trailer)")
    if trailer.get("sha256") != digest.hexdigest():
        raise _corrupt(path, "content checksum mismatch")
    if trailer.get("rows") != counts:
        raise _corrupt(path, "row counts differ from the trailer")
    manifest_path = manifest_path_for(path)
    manifest_checked = False
    if os.path.exists(manifest_path):
        try:
            with open_input_text(manifest_path) as handle:
                manifest = loads_bounded(handle.read())
        except (OSError, ValueError):
            raise _corrupt(path, "manifest unreadable") from None
        if not isinstance(manifest, dict):  # valid JSON of another shape: as damaged as bad JSON
            raise _corrupt(path, "manifest unreadable")
        size, sha = hash_file(path)
        if manifest.get("sha256") != sha or manifest.get("bytes") != size:
            raise _corrupt(path, "file checksum differs from its manifest")
        manifest_checked = True
    return {
        "archivePath": os.path.abspath(path),
        "ok": True,
        "manifestChecked": manifest_checked,
        "conversationIds": header["conversationIds"],
        "rows": counts,
        "createdAt": header.get("createdAt"),
    }


# A parent row is deleted only when no row references it any more: rows added after the
# snapshot (never archived, so never deleted) keep their parent. Each check is an index
# probe: (child table, its column, the parent's key column).
_PARENT_GUARDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "messages": (
        ("message_parts", "message_id", "message_id"),
        ("summary_messages", "message_id", "message_id"),
    ),
    "summaries": (
        ("summary_messages", "summary_id", "summary_id"),
        ("summary_parents", "summary_id", "summary_id"),
        ("summary_parents", "parent_summary_id", "summary_id"),
    ),
    "conversations": (
        ("messages", "conversation_id", "conversation_id"),
        ("summaries", "conversation_id", "conversation_id"),
        ("context_items", "conversation_id", "conversation_id"),
    ),
}
# The FTS rows that go with a base row, deleted in the same transaction as it.
_FTS_OF: dict[str, tuple[str, ...]] = {"messages": ("messages_fts",), "summaries": _SUMMARY_FTS}


def stage_rows(conn: sqlite3.Connection) -> dict[str, int]:
    """Record the rowid of every row :func:`write_archive` writes, and of their FTS rows.

    Call it after :func:`stage_ids`, in the same read snapshot as the archive, so the rows
    :func:`delete_staged` deletes are exactly the archived ones: a row added meanwhile
    has no staged rowid and is never deleted. Temp tables: ``prune_rows (tbl, rid)`` in
    deletion order (``ord``), ``prune_fts (fts, owner, rid)`` with the base row's rowid.
    """
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS prune_rows (ord INTEGER NOT NULL, tbl TEXT NOT NULL,"
        " rid INTEGER NOT NULL, PRIMARY KEY (ord, rid)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS prune_fts (fts TEXT NOT NULL, owner INTEGER NOT NULL,"
        " rid INTEGER NOT NULL, PRIMARY KEY (fts, owner, rid)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS prune_unstaged (ord INTEGER PRIMARY KEY, tbl TEXT NOT NULL)"
    )
    for table in ("prune_rows", "prune_fts", "prune_unstaged"):
        conn.execute(f"DELETE FROM temp.{table}")
    present = _tables(conn)
    counts: dict[str, int] = {}
    # Children first, as the rows are deleted: every commit leaves no reference dangling.
    for order, (table, where) in enumerate(reversed(archived_tables(conn))):
        try:
            cursor = conn.execute(
                f"INSERT INTO temp.prune_rows (ord, tbl, rid) SELECT ?, ?, rowid FROM {table} WHERE {where}",
                (order, table),
            )
        except sqlite3.OperationalError:
            # A WITHOUT ROWID table (a newer schema's): deleted by its selection, in one step.
            conn.execute("INSERT INTO temp.prune_unstaged (ord, tbl) VALUES (?, ?)", (order, table))
            continue
        counts[table] = cursor.rowcount
    if "messages_fts" in present:
        conn.execute(
            "INSERT INTO temp.prune_fts (fts, owner, rid) SELECT 'messages_fts', rowid, rowid FROM messages_fts"
            " WHERE rowid IN (SELECT id FROM temp.prune_msgs)"
        )
    for fts in _SUMMARY_FTS:
        if fts in present:
            conn.execute(
                f"""INSERT OR IGNORE INTO temp.prune_fts (fts, owner, rid)
                    SELECT ?, s.rowid, f.rowid FROM {fts} f JOIN summaries s ON s.summary_id = f.summary_id
                    WHERE f.summary_id IN (SELECT id FROM temp.prune_sums)""",
                (fts,),
            )
    return counts


def staged_row_count(conn: sqlite3.Connection) -> int:
    """Rows :func:`delete_staged` has still to go through."""
    return int(conn.execute("SELECT COUNT(*) FROM temp.prune_rows").fetchone()[0])


def delete_staged(conn: sqlite3.Connection, limit: int | None = None) -> dict[str, int]:
    """Delete staged rows in the caller's transaction: all of them, or (``limit``) the next
    ``limit`` rows of one table (rows of different tables cost very different times, so
    a bounded batch never mixes them).

    Rows go in the order :func:`stage_rows` recorded (children before the rows they
    reference, a table at a time), each base row with its FTS rows, so any commit between
    two calls leaves the database consistent: a kill loses nothing the archive lacks and
    leaves no reference dangling; the rows not yet deleted are still whole conversations'
    remains, which a new prune selects again. A staged row is deleted only while it still
    belongs to the pruned conversations and, for a parent, while nothing references it.
    Every table is deleted from explicitly, so the result does not depend on
    ``foreign_keys``; callers turn foreign keys off for the transaction:
    ``context_items.message_id`` has no index, so with enforcement on each deleted message
    would scan the whole context table. Returns ``{table: rows deleted}`` plus ``kept``:
    staged rows left in place because they changed meanwhile.
    """
    deleted: dict[str, int] = {}
    where_of = dict(archived_tables(conn))
    present = _tables(conn)
    while True:
        head = conn.execute("SELECT ord, tbl FROM temp.prune_rows ORDER BY ord, rid LIMIT 1").fetchone()
        if head is None:
            break
        order, table = int(head[0]), str(head[1])
        for unstaged_order, unstaged in conn.execute(
            "SELECT ord, tbl FROM temp.prune_unstaged WHERE ord < ? ORDER BY ord", (order,)
        ).fetchall():
            deleted[unstaged] = deleted.get(unstaged, 0) + _delete_unstaged(conn, unstaged, where_of)
            conn.execute("DELETE FROM temp.prune_unstaged WHERE ord = ?", (unstaged_order,))
        take = -1 if limit is None else max(1, limit)
        bounds = conn.execute(
            "SELECT MIN(rid), MAX(rid), COUNT(*) FROM (SELECT rid FROM temp.prune_rows WHERE ord = ?"
            " ORDER BY rid LIMIT ?)",
            (order, take),
        ).fetchone()
        low, high, count = int(bounds[0]), int(bounds[1]), int(bounds[2])
        guards = "".join(
            f" AND NOT EXISTS (SELECT 1 FROM {child} c WHERE c.{column} = {table}.{key})"
            for child, column, key in _PARENT_GUARDS.get(table, ())
            if child in present
        )
        staged = "SELECT rid FROM temp.prune_rows WHERE ord = ? AND rid BETWEEN ? AND ?"
        gone = conn.execute(
            f"DELETE FROM {table} WHERE rowid IN ({staged}) AND ({where_of.get(table, '1')}){guards}",
            (order, low, high),
        ).rowcount
        deleted[table] = deleted.get(table, 0) + gone
        for fts in _FTS_OF.get(table, ()):
            if fts in present:
                # Only the FTS rows whose base row is gone: a kept row keeps its text indexed.
                deleted[fts] = (
                    deleted.get(fts, 0)
                    + conn.execute(
                        f"""DELETE FROM {fts} WHERE rowid IN (SELECT rid FROM temp.prune_fts
                              WHERE fts = ? AND owner BETWEEN ? AND ?
                                AND NOT EXISTS (SELECT 1 FROM {table} WHERE rowid = owner))""",
                        (fts, low, high),
                    ).rowcount
                )
        if gone < count:
            kept = conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE rowid IN ({staged})", (order, low, high)
            ).fetchone()[0]
            if kept:
                deleted["kept"] = deleted.get("kept", 0) + int(kept)
        conn.execute("DELETE FROM temp.prune_rows WHERE ord = ? AND rid BETWEEN ? AND ?", (order, low, high))
        if limit is not None:
            return deleted
    if limit is None or not conn.execute("SELECT 1 FROM temp.prune_rows LIMIT 1").fetchone():
        for unstaged_order, unstaged in conn.execute(
            "SELECT ord, tbl FROM temp.prune_unstaged ORDER BY ord"
        ).fetchall():
            deleted[unstaged] = deleted.get(unstaged, 0) + _delete_unstaged(conn, unstaged, where_of)
            conn.execute("DELETE FROM temp.prune_unstaged WHERE ord = ?", (unstaged_order,))
    return deleted


def _delete_unstaged(conn: sqlite3.Connection, table: str, where_of: dict[str, str]) -> int:
    return int(conn.execute(f"DELETE FROM {table} WHERE {where_of[table]}").rowcount)


def delete_in_batches(
    conn: sqlite3.Connection,
    *,
    step_seconds: float = steps.STEP_SECONDS,
    progress: Callable[[int, int], None] | None = None,
    on_batch: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, int]:
    """Delete every staged row in bounded ``BEGIN IMMEDIATE`` transactions (see :func:`delete_staged`).

    Each transaction is sized from the last one's time to hold the write lock about
    ``step_seconds`` and followed by a pause as long (``steps``), so the live writer
    waits at most one batch. ``progress(done, total)``
    after each batch. Raises what SQLite raises (busy after the busy timeout); the rows
    deleted until then are in :attr:`BatchError.deleted`.
    """
    total = staged_row_count(conn)
    rows = FIRST_BATCH_ROWS
    table = _next_table(conn)
    deleted: dict[str, int] = {}
    # Checkpoints run between batches, not inside a COMMIT: the time measured is the lock's.
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        while True:
            try:
                with steps.step(conn) as lock:
                    batch = delete_staged(conn, rows)
                held = lock.seconds
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as exc:
                raise BatchError(exc, deleted) from exc
            for name, n in batch.items():
                deleted[name] = deleted.get(name, 0) + n
            remaining = staged_row_count(conn)
            if on_batch is not None:
                on_batch({"table": table, "rows": rows, "seconds": held, "remaining": remaining})
            if progress is not None:
                progress(total - remaining, total)
            if remaining == 0 and not conn.execute("SELECT 1 FROM temp.prune_unstaged LIMIT 1").fetchone():
                break
            steps.yield_to_writers(held)
            upcoming = _next_table(conn)
            # Rows of another table cost something else: start that table small again.
            same = upcoming == table
            rows = (
                steps.next_step_size(rows, held, step_seconds, floor=10, ceiling=20_000)
                if same
                else FIRST_BATCH_ROWS
            )
            table = upcoming
    finally:
        conn.execute("PRAGMA wal_autocheckpoint = 1000")
    return _every_table(conn, deleted)


def _every_table(conn: sqlite3.Connection, deleted: dict[str, int]) -> dict[str, int]:
    """``deleted`` with a count for every table a prune deletes from, in deletion order."""
    present = _tables(conn)
    names = [t for t in ("messages_fts", *_SUMMARY_FTS) if t in present]
    names += [t for t, _ in reversed(archived_tables(conn))]
    out = {name: deleted.get(name, 0) for name in names}
    out.update({k: v for k, v in deleted.items() if k not in out})
    out.setdefault("messages", 0)
    out.setdefault("summaries", 0)
    return out


def _next_table(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT tbl FROM temp.prune_rows ORDER BY ord, rid LIMIT 1").fetchone()
    return None if row is None else str(row[0])


class BatchError(Exception):
    """An SQLite error part-way through :func:`delete_in_batches`, with what was deleted before it."""

    def __init__(self, error: sqlite3.Error, deleted: dict[str, int]) -> None:
        super().__init__(str(error))
        self.error = error
        self.deleted = dict(deleted)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}


def restore_rows(conn: sqlite3.Connection, path: str) -> dict[str, Any]:
    """Insert an archive's rows that are not already present (caller's transaction).

    Idempotent: rows already in the database are left alone (``INSERT OR IGNORE``) and
    only the rows actually inserted are added to the FTS tables. A restored conversation
    whose session key now has another active conversation comes back archived, so the
    one-active-row-per-key rule holds.
    """
    present = _tables(conn)
    columns: dict[str, set[str]] = {}
    inserted: dict[str, int] = {}
    skipped: dict[str, int] = {}
    demoted: list[int] = []
    dropped_columns: dict[str, list[str]] = {}
    fts_messages = "messages_fts" in present
    fts_summaries = [t for t in _SUMMARY_FTS if t in present]
    for table, row in read_archive(path):
        if table not in present:
            skipped[table] = skipped.get(table, 0) + 1
            continue
        if table not in columns:
            columns[table] = _columns(conn, table)
        known = {k: v for k, v in row.items() if k in columns[table]}
        extra = sorted(set(row) - columns[table])
        if extra:
            dropped_columns[table] = extra
        if table == "conversations" and known.get("active") == 1 and known.get("session_key") is not None:
            exists = conn.execute(
                "SELECT 1 FROM conversations WHERE conversation_id = ?", (known["conversation_id"],)
            ).fetchone()
            clash = conn.execute(
                "SELECT 1 FROM conversations WHERE session_key = ? AND active = 1 AND conversation_id != ?",
                (known["session_key"], known["conversation_id"]),
            ).fetchone()
            if clash and not exists:
                known["active"] = 0
                if "archived_at" in columns[table] and not known.get("archived_at"):
                    known["archived_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                demoted.append(int(known["conversation_id"]))
        names = list(known)
        sql = f"INSERT OR IGNORE INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
        if conn.execute(sql, [known[n] for n in names]).rowcount == 1:
            inserted[table] = inserted.get(table, 0) + 1
            if table == "messages" and fts_messages:
                text = fts_message_text(str(known.get("content") or ""))
                if text is not None:
                    conn.execute(
                        "INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", (known["message_id"], text)
                    )
            elif table == "summaries":
                for fts in fts_summaries:
                    conn.execute(
                        f"INSERT INTO {fts} (summary_id, content) VALUES (?, ?)",
                        (known["summary_id"], known.get("content")),
                    )
        else:
            skipped[table] = skipped.get(table, 0) + 1
    return {
        "inserted": inserted,
        "alreadyPresent": skipped,
        "restoredArchived": demoted,
        "droppedColumns": dropped_columns,
    }


def used_bytes(conn: sqlite3.Connection) -> int:
    """Bytes of pages in use (file pages minus the free list)."""
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    return (pages - free) * page_size
