"""Heartbeat-turn pruning: remove stored HEARTBEAT_OK turn cycles (``pruneHeartbeatOk``).

docs/reference/engine.md §2.7 step 8, §3.1 step 13, config.md ``pruneHeartbeatOk``. A host's
heartbeat asks the agent to read ``HEARTBEAT.md`` and the agent answers
``HEARTBEAT_OK`` when there is nothing to do; those turns carry no conversation and
would otherwise crowd the context and the summaries.

A turn is a user message and the non-user messages after it, up to the next user
message. It is a heartbeat turn when some message of it mentions ``heartbeat.md`` and
an assistant message of it says exactly ``HEARTBEAT_OK`` (case-insensitive, trimmed),
the rule :func:`lcm_cli.engine.session.after_turn.is_heartbeat_ack` applies to a live batch.
A heartbeat turn with any message a summary covers is kept (summaries are immutable and
their sources must stay, database.md §8). Everything else is never touched.

Pruning is one transaction: the turns' context items, FTS rows and messages (their
parts follow by cascade) go together or not at all. ``seq`` and context ordinals keep
their gaps, as after the reference's pruning.
"""

from __future__ import annotations

from typing import Any

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.db.pending_state import invalidate_open_batches, release_messages

if TYPE_CHECKING:
    from lcm_cli.engine.db.store import Store

HEARTBEAT_FILE = "heartbeat.md"
HEARTBEAT_OK = "HEARTBEAT_OK"


def heartbeat_turn_indexes(rows: list[tuple[str, str]]) -> set[int]:
    """Indexes of ``(role, content)`` rows that form whole heartbeat turns.

    Only turns that start with a user row inside ``rows`` count (a turn cut by the
    start of ``rows`` is left alone); a turn runs to the row before the next user row.
    """
    out: set[int] = set()
    starts = [i for i, (role, _) in enumerate(rows) if role == "user"]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(rows)
        turn = [(i, rows[i][0], rows[i][1]) for i in range(start, end)]
        if _is_heartbeat_turn(turn):
            out.update(range(start, end))
    return out


def _is_heartbeat_turn(rows: list[tuple[int, str, str]]) -> bool:
    mentions = any(HEARTBEAT_FILE in content.lower() for _, _, content in rows)
    acked = any(role == "assistant" and content.strip().upper() == HEARTBEAT_OK for _, role, content in rows)
    return mentions and acked


def heartbeat_turns(conn: Any, conversation_id: int) -> list[list[int]]:
    """The message ids of each prunable heartbeat turn of a conversation, oldest first.

    Only turns whose messages mention the heartbeat file are read in full: the scan
    first finds the candidate rows by a ``LIKE`` over the conversation's messages.
    """
    hits = conn.execute(
        "SELECT seq FROM messages WHERE conversation_id = ? AND content LIKE '%heartbeat.md%' ORDER BY seq",
        (conversation_id,),
    ).fetchall()
    turns: list[list[int]] = []
    seen_starts: set[int] = set()
    for (seq,) in hits:
        # The turn holding this row: from the newest user row at or before it ...
        start = conn.execute(
            "SELECT MAX(seq) FROM messages WHERE conversation_id = ? AND role = 'user' AND seq <= ?",
            (conversation_id, seq),
        ).fetchone()[0]
        if start is None or start in seen_starts:
            continue
        seen_starts.add(start)
        # ... to the row before the next user row.
        end = conn.execute(
            "SELECT MIN(seq) FROM messages WHERE conversation_id = ? AND role = 'user' AND seq > ?",
            (conversation_id, start),
        ).fetchone()[0]
        rows = conn.execute(
            "SELECT message_id, role, content FROM messages WHERE conversation_id = ? AND seq >= ?"
            " AND (? IS NULL OR seq < ?) ORDER BY seq",
            (conversation_id, start, end, end),
        ).fetchall()
        if not _is_heartbeat_turn(rows):
            continue
        ids = [int(r[0]) for r in rows]
        covered = conn.execute(
            "SELECT 1 FROM summary_messages WHERE message_id IN (SELECT value FROM json_each(?)) LIMIT 1",
            (_json(ids),),
        ).fetchone()
        if covered is None:
            turns.append(ids)
    return turns


def _json(ids: list[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


def prune_heartbeat_turns(store: Store, conversation_id: int) -> dict[str, Any]:
    """Delete the conversation's heartbeat turns in one transaction; report what went.

    Returns ``{"prunedTurns": n, "prunedMessages": m}``. A summary-covered turn is kept.
    """
    with store.transaction():
        conn = store.conn
        turns = heartbeat_turns(conn, conversation_id)
        ids = [i for turn in turns for i in turn]
        if ids:
            listed = _json(ids)
            invalidate_open_batches(conn, conversation_id, "context rewritten by lcm heartbeat pruning")
            release_messages(conn, ids, "source messages deleted by lcm heartbeat pruning")
            conn.execute(
                "DELETE FROM context_items WHERE conversation_id = ? AND item_type = 'message'"
                " AND message_id IN (SELECT value FROM json_each(?))",
                (conversation_id, listed),
            )
            if getattr(store, "has_messages_fts", False):
                conn.execute(
                    "DELETE FROM messages_fts WHERE rowid IN (SELECT value FROM json_each(?))", (listed,)
                )
            conn.execute(
                "DELETE FROM messages WHERE message_id IN (SELECT value FROM json_each(?))", (listed,)
            )
    return {"prunedTurns": len(turns), "prunedMessages": len(ids)}
