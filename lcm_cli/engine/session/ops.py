"""Session operations: ingest, bootstrap, ``/new``, ``/reset`` and session end.

The doors over :mod:`lcm_cli.engine.session.ingest`, :mod:`lcm_cli.engine.session.bootstrap` and the
lifecycle rules of docs/reference/engine.md §8. Each writes through the write store in one
``BEGIN IMMEDIATE`` transaction (the database is created with the full schema when it
is missing) and honours the ignore / stateless session patterns.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import invalid_argument
from lcm_cli.engine.core.params import (
    FILE,
    HOST_STORE,
    IS_HEARTBEAT,
    MESSAGE,
    MESSAGES,
    NEXT_SESSION_ID,
    NEXT_SESSION_KEY,
    REASON,
    SESSION_FILE,
    Request,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.pending_state import invalidate_open_batches
from lcm_cli.engine.db.sessions import find_active, queue_key, session_lock
from lcm_cli.engine.session.ingest import IngestSettings, ingest_messages
from lcm_cli.engine.session.inputs import read_input, request_session, session_id_for_key

# session_end reasons that change nothing (engine.md §8).
IGNORED_END_REASONS = frozenset({"", "new", "unknown", "restart", "shutdown"})


def open_store(ctx: Context) -> Any:
    """The context's write store (created and migrated when missing; closed with the context)."""
    return ctx.store()


# --- ingest -------------------------------------------------------------------------------


@operation("session.ingest")
def ingest(ctx: Context, req: Request) -> Result:
    """Ingest one message or a batch in one transaction; report each message."""
    session_id, key = request_session(req)
    messages, from_text = read_input(
        {"message": req[MESSAGE], "messages": req[MESSAGES], "file": req[FILE]}, ctx.stdin
    )
    settings = IngestSettings.from_config(ctx.effective)
    if session_id is None:
        session_id = session_id_for_key(ctx, key)
    # Nothing is written for a heartbeat or an excluded session: do not even open the file.
    quiet = req[IS_HEARTBEAT] or settings.policy.exclusion(session_id, key) is not None
    store = None if quiet or not messages else open_store(ctx)
    data = ingest_messages(
        store,
        settings,
        session_id,
        messages,
        session_key=key,
        is_heartbeat=req[IS_HEARTBEAT],
        require_role=from_text,
        # One --message is the reference's ``ingest``; anything else is its ``ingestBatch``.
        raw_id_filter=req[MESSAGE] is None,
    )
    return Result(data)


# --- bootstrap ----------------------------------------------------------------------------


@operation("session.bootstrap")
def bootstrap(ctx: Context, req: Request) -> Result:
    """First import bounded by ``bootstrapMaxTokens``; later, only what follows the anchor."""
    from lcm_cli.engine.assembly.fallback import bootstrap_budget
    from lcm_cli.engine.session.bootstrap import bootstrap_session

    session_id, key = request_session(req)
    session_file = req[SESSION_FILE]
    if not (session_file and os.path.isfile(session_file)) and session_id is not None:
        # A current host (2026.7.2+) keeps the session in its SQLite store, and names the
        # session (not a file) in sessionFile: import from the store on first sight.
        from lcm_cli.engine.session.turns import host_snapshot, import_host_history
        from lcm_cli.engine.transcript.host_store import parse_marker, store_for_session

        marker = parse_marker(session_file)  # the host's own sqlite:<agent>:<session>:<store>
        hint = req[HOST_STORE] or (marker[2] if marker is not None else None)
        host_store = store_for_session(ctx.state_dir, key, hint)
        if host_store is not None:
            store = open_store(ctx)
            found = find_active(store.conn, session_id, key)
            if found is not None:
                # Its turns arrive through commitTurn; the host retries any it missed.
                return Result(
                    {
                        "bootstrapped": False,
                        "importedMessages": 0,
                        "conversationId": int(found[0]),
                        "reason": "conversation exists; turns arrive through commitTurn",
                        "source": "sqlite",
                    }
                )
            settings = IngestSettings.from_config(ctx.effective)
            with host_snapshot(host_store, session_id, None) as taken:
                with session_lock(queue_key(session_id, key)), store.transaction():
                    if find_active(store.conn, session_id, key) is None:
                        outcome = import_host_history(
                            ctx, store, settings, session_id, key, host_store, taken
                        )
                    else:
                        outcome = {
                            "bootstrapped": False,
                            "importedMessages": 0,
                            "reason": "conversation exists",
                        }
            return Result({**outcome, "source": "sqlite", "hostStore": host_store})
    if not session_file:
        raise invalid_argument("Pass --session-file PATH: the session's transcript JSONL.")
    if session_id is None:
        from lcm_cli.engine.transcript.header import read_header

        session_id = read_header(session_file).session_id if os.path.exists(session_file) else None
    if session_id is None:
        raise invalid_argument("Pass --session-id ID.")
    effective = ctx.effective
    store = open_store(ctx)
    data = bootstrap_session(
        store,
        IngestSettings.from_config(effective),
        session_id,
        session_file,
        session_key=key,
        max_tokens=bootstrap_budget(effective),
    )
    if ctx.engine_settings.prune_heartbeat_ok is True and data.get("conversationId") is not None:
        # §3.1 steps 9 and 13: heartbeat turns go after the import, in their own transaction.
        from lcm_cli.engine.session.heartbeat import prune_heartbeat_turns

        with session_lock(queue_key(session_id, data.get("sessionKey"))):
            data["heartbeat"] = prune_heartbeat_turns(store, int(data["conversationId"]))
    return Result(data)


# --- /new, /reset, session end --------------------------------------------------------------


def _excluded(ctx: Context, session_id: str | None, key: str | None) -> str | None:
    return ctx.engine_settings.session_policy().exclusion(session_id, key)


def _archive(conn: sqlite3.Connection, conversation_id: int, cause: str) -> None:
    conn.execute(
        "UPDATE conversations SET active = 0, archived_at = COALESCE(archived_at, datetime('now')),"
        " archive_cause = COALESCE(archive_cause, ?), updated_at = datetime('now') WHERE conversation_id = ?",
        (cause, conversation_id),
    )


def _create(conn: sqlite3.Connection, session_id: str, key: str | None) -> int:
    cursor = conn.execute(
        "INSERT INTO conversations (session_id, session_key) VALUES (?, ?)", (session_id, key)
    )
    return int(cursor.lastrowid or 0)


@operation("session.new")
def new_session(ctx: Context, req: Request) -> Result:
    """Delete message items and shallow summary items from the context; rows stay."""
    session_id, key = request_session(req)
    depth = int(ctx.engine_settings.new_session_retain_depth)
    data: dict[str, Any] = {"conversationId": None, "retainDepth": depth, "removedItems": 0, "keptItems": 0}
    exclusion = _excluded(ctx, session_id, key)
    if exclusion is not None:
        data["skipped"] = f"{exclusion}-session"
        return Result(data)
    store = open_store(ctx)
    with session_lock(queue_key(session_id, key)), store.transaction():
        conn = store.conn
        row = find_active(conn, session_id, key)
        if row is None:
            data["skipped"] = "no-conversation"
            return Result(data)
        cid = int(row[0])
        data["conversationId"] = cid
        if depth >= 0:
            invalidate_open_batches(conn, cid, "context pruned by lcm session.new")
            removed = conn.execute(
                "DELETE FROM context_items WHERE conversation_id = ? AND (item_type = 'message'"
                " OR summary_id IN (SELECT summary_id FROM summaries WHERE conversation_id = ? AND depth < ?))",
                (cid, cid, depth),
            ).rowcount
            data["removedItems"] = removed
        data["keptItems"] = conn.execute(
            "SELECT COUNT(*) FROM context_items WHERE conversation_id = ?", (cid,)
        ).fetchone()[0]
        conn.execute(
            "UPDATE conversation_bootstrap_state SET soft_reset_pruned_at = datetime('now'),"
            " updated_at = datetime('now') WHERE conversation_id = ?",
            (cid,),
        )
    return Result(data)


def _reset(conn: sqlite3.Connection, session_id: str | None, key: str | None, cause: str) -> dict[str, Any]:
    row = find_active(conn, session_id, key)
    if row is None:
        if session_id is None:
            return {"archivedConversationId": None, "conversationId": None, "changed": False}
        return {
            "archivedConversationId": None,
            "conversationId": _create(conn, session_id, key),
            "changed": True,
        }
    cid = int(row[0])
    fresh = conn.execute(
        "SELECT bootstrapped_at IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?)"
        " AND NOT EXISTS (SELECT 1 FROM context_items WHERE conversation_id = ?)"
        " FROM conversations WHERE conversation_id = ?",
        (cid, cid, cid),
    ).fetchone()[0]
    if fresh:
        return {"archivedConversationId": None, "conversationId": cid, "changed": False}
    _archive(conn, cid, cause)
    new_id = _create(conn, session_id or str(row[1]), key or row[2])
    return {"archivedConversationId": cid, "conversationId": new_id, "changed": True}


@operation("session.reset")
def reset_session(ctx: Context, req: Request) -> Result:
    """Archive (``manual-reset``) and create a new active row with the same session id and key."""
    session_id, key = request_session(req)
    exclusion = _excluded(ctx, session_id, key)
    if exclusion is not None:
        return Result({"changed": False, "skipped": f"{exclusion}-session"})
    store = open_store(ctx)
    with session_lock(queue_key(session_id, key)), store.transaction():
        data = _reset(store.conn, session_id, key, "manual-reset")
    return Result(data)


@operation("session.end")
def end_session(ctx: Context, req: Request) -> Result:
    """``deleted`` archives; ``reset`` archives and replaces; other non-ignored reasons roll over."""
    session_id, key = request_session(req)
    reason = (req[REASON] or "").strip()
    data: dict[str, Any] = {"reason": reason, "changed": False}
    if reason in IGNORED_END_REASONS:
        data["skipped"] = "ignored-reason"
        return Result(data)
    exclusion = _excluded(ctx, session_id, key or req[NEXT_SESSION_KEY])
    if exclusion is not None:
        data["skipped"] = f"{exclusion}-session"
        return Result(data)
    store = open_store(ctx)
    with session_lock(queue_key(session_id, key)), store.transaction():
        conn = store.conn
        if reason == "reset":
            data.update(_reset(conn, session_id, key, "manual-reset"))
            return Result(data)
        row = find_active(conn, session_id, key)
        if row is None:
            data["skipped"] = "no-conversation"
            return Result(data)
        cid = int(row[0])
        if reason == "deleted":
            _archive(conn, cid, "session-deleted")
            data.update(archivedConversationId=cid, conversationId=None, changed=True)
            return Result(data)
        _archive(conn, cid, "session-end")
        next_id = (req[NEXT_SESSION_ID] or "").strip() or str(row[1])
        next_key = (req[NEXT_SESSION_KEY] or "").strip() or row[2]
        data.update(archivedConversationId=cid, conversationId=_create(conn, next_id, next_key), changed=True)
    return Result(data)
