"""Keep lossless-claw 1.0's durable-turn rows consistent with what our writers change.

lossless-claw 1.0 stages compaction in ``pending_compaction_batches`` /
``pending_summary_nodes`` (+ their message and child links) before publishing it, and
records transcript epochs and per-message anchor trust. lcm prepares and publishes pending
batches itself (:mod:`lcm_cli.engine.compaction.pending`), and a database that 1.0 wrote
has its own; every other writer of ours must keep them consistent:

* **Context rewrites** (compaction, ``/new``, reset, doctor context repairs, heartbeat
  pruning) change the prompt prefix an open batch was planned over. 1.0 re-derives the
  batch's range fingerprint from the live context before it publishes and marks the batch
  ``stale`` when it differs, but that check runs outside its publish transaction.
  :func:`invalidate_open_batches` marks the open batches ``stale`` inside *our*
  transaction, exactly as 1.0's own ``markBatchStale`` does (batch ``stale``; nodes in
  ``planned``/``running``/``ready``/``failed`` ``stale``, leases cleared), so either
  engine's publisher refuses them (a ``stale`` node is not publishable) and retention deletes them
  later. ``stale`` is terminal in 1.0.
* **Message deletes** (heartbeat pruning): ``pending_summary_node_messages.message_id`` is
  ``ON DELETE RESTRICT``; :func:`release_messages` invalidates the batches that planned
  over those messages and drops the links and anchor-trust rows first.

Every function probes for the tables: an older database simply has nothing to do.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

BATCHES = "pending_compaction_batches"
NODES = "pending_summary_nodes"
NODE_MESSAGES = "pending_summary_node_messages"
NODE_CHILDREN = "pending_summary_node_children"
EPOCHS = "conversation_transcript_epochs"
ANCHOR_TRUST = "message_transcript_anchor_trust"
TURNS = "turn_advancements"

#: Batch states 1.0 still works on (its ``getActiveBatchForConversation``).
OPEN_BATCH_STATES = ("planning", "ready", "publishing")
#: Batch states 1.0 treats as finished (its retention deletes them after 7 days).
FINISHED_BATCH_STATES = ("published", "stale", "failed")
#: Node states 1.0's ``markBatchStale`` moves to ``stale``.
STALEABLE_NODE_STATES = ("planned", "running", "ready", "failed")

#: The ``failure_summary`` our compaction leaves on a 1.0 batch it invalidated.
STALE_BY_COMPACTION = "context rewritten by lcm compaction"

_OPEN = "('planning', 'ready', 'publishing')"
_STALEABLE = "('planned', 'running', 'ready', 'failed')"


def has_table(conn: sqlite3.Connection, table: str) -> bool:
    """True when ``table`` exists in the main schema."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return row is not None


def _ids(values: Iterable[object]) -> str:
    return json.dumps(sorted(set(values), key=str))


def stale_batches(conn: sqlite3.Connection, batch_ids: Iterable[str], reason: str) -> int:
    """Mark these batches and their unfinished nodes ``stale`` (1.0's ``markBatchStale``)."""
    listed = _ids(batch_ids)
    if listed == "[]" or not has_table(conn, BATCHES):
        return 0
    changed = conn.execute(
        f"UPDATE {BATCHES} SET status = 'stale', failure_summary = ?, updated_at = datetime('now')"
        f" WHERE batch_id IN (SELECT value FROM json_each(?)) AND status IN {_OPEN}",
        (reason, listed),
    ).rowcount
    if has_table(conn, NODES):
        conn.execute(
            f"UPDATE {NODES} SET status = 'stale', lease_owner = NULL, lease_expires_at = NULL,"
            " failure_summary = ?, updated_at = datetime('now')"
            f" WHERE batch_id IN (SELECT value FROM json_each(?)) AND status IN {_STALEABLE}",
            (reason, listed),
        )
    return int(changed)


def invalidate_open_batches(conn: sqlite3.Connection, conversation_id: int, reason: str) -> int:
    """Mark every open pending batch of one conversation ``stale``; return how many (caller's transaction)."""
    if not has_table(conn, BATCHES):
        return 0
    batch_ids = [
        str(r[0])
        for r in conn.execute(
            f"SELECT batch_id FROM {BATCHES} WHERE conversation_id = ? AND status IN {_OPEN}",
            (conversation_id,),
        )
    ]
    return stale_batches(conn, batch_ids, reason)


def release_messages(conn: sqlite3.Connection, message_ids: Iterable[int], reason: str) -> dict[str, int]:
    """Before deleting these messages: stale the batches planned over them, drop their pending links
    and anchor-trust rows. Works with ``foreign_keys`` on or off (caller's transaction)."""
    listed = _ids(int(i) for i in message_ids)
    report = {"staleBatches": 0, "nodeMessageLinks": 0, "anchorTrust": 0}
    if listed == "[]":
        return report
    if has_table(conn, NODE_MESSAGES) and has_table(conn, NODES):
        batch_ids = [
            str(r[0])
            for r in conn.execute(
                f"SELECT DISTINCT n.batch_id FROM {NODE_MESSAGES} m JOIN {NODES} n ON n.node_id = m.node_id"
                " WHERE m.message_id IN (SELECT value FROM json_each(?))",
                (listed,),
            )
        ]
        report["staleBatches"] = stale_batches(conn, batch_ids, reason)
        report["nodeMessageLinks"] = conn.execute(
            f"DELETE FROM {NODE_MESSAGES} WHERE message_id IN (SELECT value FROM json_each(?))", (listed,)
        ).rowcount
    if has_table(conn, ANCHOR_TRUST):
        report["anchorTrust"] = conn.execute(
            f"DELETE FROM {ANCHOR_TRUST} WHERE message_id IN (SELECT value FROM json_each(?))", (listed,)
        ).rowcount
    return report
