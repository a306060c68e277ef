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
from lcm_cli.engine.core.files import atomic_write, atomic_writer, hash_file, private_mode, remove_orphans
from lcm_cli.engine.core.held_files import open_input, open_input_text
from lcm_cli.engine.db.store.messages import fts_message_text

FORMAT = "lcm-prune-archive"
VERSION = 1

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
    return archive + ".manifest.json"


def write_archive(
    conn: sqlite3.Connection,
    conversation_ids: Sequence[int],
    path: str,
    *,
    database_path: str,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write every row of the staged conversations to ``path`` (temp file, fsync, rename) and
    its manifest. Call :func:`stage_ids` first, inside the transaction that will delete them,
    so the archive holds exactly what gets deleted."""
    if os.path.lexists(path):
        raise LcmError(
            "BACKUP_TARGET_EXISTS", f"{path} already exists; choose another --out.", {"archivePath": path}
        )
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
        with atomic_writer(path, mode=mode, replace=False) as raw:
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
    except FileExistsError:
        raise LcmError(
            "BACKUP_TARGET_EXISTS", f"{path} already exists; choose another --out.", {"archivePath": path}
        ) from None
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
    """Yield ``(table, row)`` from a verified archive (call :func:`verify_archive` first)."""
    with open_input(path) as compressed, gzip.GzipFile(fileobj=compressed, mode="rb") as handle:
        next(handle)  # header
        table: str = ""
        columns: list[str] = []
        for raw in handle:
            if raw.startswith(b"["):
                yield table, {c: _decode(v) for c, v in zip(columns, json.loads(raw))}
                continue
            entry = json.loads(raw)
            if entry.get("trailer"):
                return
            table, columns = entry["table"], entry["columns"]


def verify_archive(path: str) -> dict[str, Any]:
    """Check an archive end to end: gzip CRC, header, trailer checksum and counts, manifest."""
    if not os.path.isfile(path):
        raise LcmError(
            "ARCHIVE_NOT_FOUND",
            f"No archive at {path}. Archives are written by `lcm prune --apply`.",
            {"archivePath": path},
        )
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
                entry = json.loads(raw)
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
                manifest = json.load(handle)
        except (OSError, ValueError):
            raise _corrupt(path, "manifest unreadable") from None
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


def delete_staged(conn: sqlite3.Connection) -> dict[str, int]:
    """Delete the staged conversations and every row that hangs off them (caller's transaction).

    Every table is deleted from explicitly, children first, so the result does not depend
    on ``foreign_keys`` being on. Callers turn foreign keys off for the transaction:
    ``context_items.message_id`` has no index, so with enforcement on each deleted message
    would scan the whole context table (minutes for a large prune).
    """
    present = _tables(conn)
    deleted: dict[str, int] = {}
    if "messages_fts" in present:
        deleted["messages_fts"] = conn.execute(
            "DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM temp.prune_msgs)"
        ).rowcount
    for table in _SUMMARY_FTS:
        if table in present:
            deleted[table] = conn.execute(
                f"DELETE FROM {table} WHERE summary_id IN (SELECT id FROM temp.prune_sums)"
            ).rowcount
    for table, where in reversed(archived_tables(conn)):
        if table in present:
            deleted[table] = conn.execute(f"DELETE FROM {table} WHERE {where}").rowcount
    deleted["messages"] = deleted.get("messages", 0)
    deleted["summaries"] = deleted.get("summaries", 0)
    return deleted


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
