"""`lcm doctor clean`: remove junk conversations by class (docs/reference/operations.md §6).

Scan output per class: matched conversations and messages, and up to 3 examples. With
``--apply``: every matched conversation with everything that hangs off it is deleted in
batches of about 25 ms of write lock each (as prune does; the live agent keeps writing, a
rerun finishes an interrupted clean), under a ``doctor-cleaners`` change backup of the
deleted rows (``--backup full``: a copy of the whole database first); ``--vacuum`` then
gives the space back in bounded steps when the file has incremental auto-vacuum.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

from lcm_cli.doctor.writer import backup_first, is_busy, open_writer
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import invalid_argument
from lcm_cli.engine.core.params import APPLY, BACKUP, CONVERSATION_CLASS, NO_BACKUP, VACUUM, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.connection import translate_sqlite_error
from lcm_cli.engine.maintenance import prune
from lcm_cli.engine.maintenance.backup.changes import capture_changes, choose_mode
from lcm_cli.engine.maintenance.findings import Scope
from lcm_cli.engine.maintenance.junk import CLASSES, CLEAN_CLASSES, class_conversations, scan_input
from lcm_cli.engine.maintenance.vacuum import give_back_space
from lcm_cli.engine.read.conversation_rows import require_lcm_tables

_PREVIEW = 120


def _preview(text: str | None) -> str | None:
    if text is None:
        return None
    collapsed = " ".join(text.split())
    return collapsed if len(collapsed) <= _PREVIEW else collapsed[: _PREVIEW - 3] + "..."


def _examples(ctx: Context, ids: list[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    key = ctx.probe.col("conversations", "session_key", prefix="c.")
    rows = ctx.query(
        f"""SELECT c.conversation_id, {key},
                   (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS n,
                   (SELECT substr(m.content, 1, 400) FROM messages m WHERE m.conversation_id = c.conversation_id
                    ORDER BY m.seq, m.created_at, m.message_id LIMIT 1) AS first
            FROM conversations c WHERE c.conversation_id IN (SELECT value FROM json_each(?))
            ORDER BY n DESC, c.created_at DESC, c.conversation_id DESC LIMIT 3""",
        (str(ids).replace(" ", ""),),
    )
    return [
        {"conversationId": r[0], "sessionKey": r[1], "messageCount": r[2], "firstMessage": _preview(r[3])}
        for r in rows
    ]


@operation("doctor.clean")
def clean(ctx: Context, req: Request) -> Result:
    """Report (and with ``--apply`` delete) the conversations of each junk class."""
    classes = list(req[CONVERSATION_CLASS] or CLEAN_CLASSES)
    for name in classes:
        if name not in CLEAN_CLASSES:
            hint = (
                " (orphaned conversations go through `lcm prune --class orphaned`)"
                if name == "orphaned"
                else ""
            )
            raise invalid_argument(
                f"Invalid --class value {name!r}: expected one of {', '.join(CLEAN_CLASSES)}{hint}.",
                {"value": name},
            )
    mode = choose_mode(req[BACKUP], no_backup=req[NO_BACKUP])
    require_lcm_tables(ctx)
    source = scan_input(ctx, Scope())
    filters = []
    matched: set[int] = set()
    for name in classes:
        ids = class_conversations(source, name)
        matched.update(ids)
        messages = ctx.query_one(
            "SELECT COUNT(*) FROM messages WHERE conversation_id IN (SELECT value FROM json_each(?))",
            (str(ids).replace(" ", ""),),
        )
        filters.append(
            {
                "class": name,
                "label": CLASSES[name]["label"],
                "description": CLASSES[name]["description"],
                "conversationCount": len(ids),
                "messageCount": messages[0] if messages else 0,
                "examples": _examples(ctx, ids),
                "conversationIds": ids,
            }
        )
    total_messages = ctx.query_one(
        "SELECT COUNT(*) FROM messages WHERE conversation_id IN (SELECT value FROM json_each(?))",
        (str(sorted(matched)).replace(" ", ""),),
    )
    data: dict[str, Any] = {
        "applied": False,
        "agentIds": source.agent_ids,
        "filters": filters,
        "totalConversations": len(matched),
        "totalMessages": total_messages[0] if total_messages else 0,
    }
    if not req[APPLY]:
        data["message"] = "Dry run: nothing was deleted. Re-run with --apply (backup first) to delete these."
        return Result(data)
    data.update(
        applied=True, backup=None, backupKind=None, deletedConversations=0, deletedMessages=0, vacuum=None
    )
    if not matched:
        return Result(data)
    ctx.close()
    if mode == "full":
        data["backup"] = {**backup_first(ctx.database_path, "doctor-cleaners"), "kind": "full"}
        data["backupKind"] = "full"
    try:
        conn = open_writer(ctx.database_path, ctx.timeout_ms)
        try:
            conn.execute("PRAGMA temp_store = FILE")  # the staged rowids: on disk, memory bounded
            conn.execute("BEGIN")  # one read snapshot: the rows to delete
            try:
                prune.stage_ids(conn, sorted(matched))
                prune.stage_rows(conn)
                conn.execute("COMMIT")  # a read of the database; it keeps the temp tables staged
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            conn.execute("PRAGMA foreign_keys = OFF")  # explicit deletes; see prune.delete_staged
            protect = (
                capture_changes(conn, ctx.database_path, label="doctor-cleaners", command="doctor clean")
                if mode == "changes"
                else contextlib.nullcontext()
            )
            with protect as taken:
                try:
                    deleted = prune.delete_in_batches(
                        conn, progress=lambda done, total: ctx.report_progress("deleting", done, total)
                    )
                except prune.BatchError as exc:
                    raise exc.error from None
            if taken is not None and taken.result is not None:
                data["backup"], data["backupKind"] = taken.result, "changes"
            conn.execute("PRAGMA foreign_keys = ON")
            deleted.pop("kept", None)  # rows written meanwhile stay (a rerun finds them)
            data["deletedConversations"] = deleted.get("conversations", 0)
            data["deletedMessages"] = deleted["messages"]
            data["deleted"] = deleted
            if req[VACUUM]:
                data["vacuum"] = give_back_space(
                    conn,
                    ctx.database_path,
                    progress=lambda done, total: ctx.report_progress("vacuum", done, total),
                )
            data["quickCheck"] = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        if is_busy(exc):
            raise translate_sqlite_error(exc, ctx.database_path, ctx.timeout_ms) from None
        raise
    return Result(data)
