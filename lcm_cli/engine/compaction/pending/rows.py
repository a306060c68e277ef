"""Reads and writes of lossless-claw 1.0's pending tables, statement for statement as its
pending-summary store writes them (same states, same stamps, same retry backoff), so a
batch either engine leaves behind reads the same to the other.

Every function runs on the caller's connection; the caller owns the transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

from lcm_cli.engine.db.pending_state import stale_batches
from lcm_cli.engine.db.store.stamps import iso_timestamp

#: Preparation attempts per node before the batch is given up (1.0's ``MAX_PENDING_NODE_RETRIES``).
MAX_NODE_RETRIES = 3
#: What 1.0 writes in ``prompt_version``.
PROMPT_VERSION = "pending-summary-dag:v1"
#: How long finished batches are kept (1.0: 7 days).
RETENTION = timedelta(days=7)


def retry_backoff(retry_count: int) -> timedelta:
    """1.0's backoff before a failed node may be claimed again: 1 min doubling, at most 15."""
    return timedelta(milliseconds=min(60_000 * 2 ** max(0, retry_count - 1), 900_000))


class Batch(NamedTuple):
    """A ``pending_compaction_batches`` row."""

    batch_id: str
    conversation_id: int
    session_key: str | None
    status: str
    source_projection_fingerprint: str
    compactable_start: int
    compactable_end: int
    planned_fresh_tail_start: int | None
    model: str


class Node(NamedTuple):
    """A ``pending_summary_nodes`` row (the columns publication and preparation use)."""

    node_id: str
    batch_id: str
    conversation_id: int
    kind: str
    depth: int
    status: str
    ordinal_start: int
    ordinal_end: int
    source_fingerprint: str
    source_context_hash: str | None
    content: str | None
    token_count: int | None
    model: str
    canonical_summary_id: str | None
    lease_owner: str | None
    lease_expires_at: str | None
    retry_count: int


_BATCH_COLS = (
    "batch_id, conversation_id, session_key, status, source_projection_fingerprint,"
    " compactable_start_ordinal, compactable_end_ordinal, planned_fresh_tail_start_ordinal, model"
)
_NODE_COLS = (
    "node_id, batch_id, conversation_id, kind, depth, status, ordinal_start, ordinal_end,"
    " source_fingerprint, source_context_hash, content, token_count, model, canonical_summary_id,"
    " lease_owner, lease_expires_at, retry_count"
)
_OPEN = "('planning', 'ready', 'publishing')"


def _batch(row: Any) -> Batch:
    return Batch(
        str(row[0]), int(row[1]), row[2], str(row[3]), str(row[4]), int(row[5]), int(row[6]),
        None if row[7] is None else int(row[7]), str(row[8]),
    )  # fmt: skip


def _node(row: Any) -> Node:
    return Node(
        str(row[0]), str(row[1]), int(row[2]), str(row[3]), int(row[4]), str(row[5]), int(row[6]),
        int(row[7]), str(row[8]), row[9], row[10], None if row[11] is None else int(row[11]),
        str(row[12]), row[13], row[14], row[15], int(row[16] or 0),
    )  # fmt: skip


def get_batch(conn: sqlite3.Connection, batch_id: str) -> Batch | None:
    """One batch by id."""
    row = conn.execute(
        f"SELECT {_BATCH_COLS} FROM pending_compaction_batches WHERE batch_id = ?", (batch_id,)
    )
    found = row.fetchone()
    return _batch(found) if found else None


def active_batch(conn: sqlite3.Connection, conversation_id: int) -> Batch | None:
    """The newest open batch of a conversation (1.0's ``getActiveBatchForConversation``)."""
    found = conn.execute(
        f"SELECT {_BATCH_COLS} FROM pending_compaction_batches WHERE conversation_id = ?"
        f" AND status IN {_OPEN} ORDER BY created_at DESC, batch_id DESC LIMIT 1",
        (conversation_id,),
    ).fetchone()
    return _batch(found) if found else None


def get_node(conn: sqlite3.Connection, node_id: str) -> Node | None:
    """One node by id."""
    found = conn.execute(
        f"SELECT {_NODE_COLS} FROM pending_summary_nodes WHERE node_id = ?", (node_id,)
    ).fetchone()
    return _node(found) if found else None


def batch_nodes(conn: sqlite3.Connection, batch_id: str) -> list[Node]:
    """A batch's nodes in 1.0's order (ordinal start, depth, id)."""
    rows = conn.execute(
        f"SELECT {_NODE_COLS} FROM pending_summary_nodes WHERE batch_id = ? ORDER BY ordinal_start, depth, node_id",
        (batch_id,),
    )
    return [_node(r) for r in rows]


def node_messages(conn: sqlite3.Connection, node_id: str) -> list[int]:
    """A leaf node's message ids, in order."""
    rows = conn.execute(
        "SELECT message_id FROM pending_summary_node_messages WHERE node_id = ? ORDER BY ordinal", (node_id,)
    )
    return [int(r[0]) for r in rows]


def node_children(conn: sqlite3.Connection, node_id: str) -> list[tuple[str | None, str | None]]:
    """A condensed node's children as (child node id, child summary id), in order."""
    rows = conn.execute(
        "SELECT child_node_id, child_summary_id FROM pending_summary_node_children WHERE node_id = ? ORDER BY ordinal",
        (node_id,),
    )
    return [(r[0], r[1]) for r in rows]


def create_batch(
    conn: sqlite3.Connection,
    *,
    batch_id: str,
    conversation_id: int,
    session_key: str | None,
    fingerprint: str,
    start: int,
    end: int,
    fresh_tail_start: int | None,
    model: str,
) -> None:
    """Insert a ``planning`` batch."""
    conn.execute(
        "INSERT INTO pending_compaction_batches (batch_id, conversation_id, session_key, session_target_json,"
        " status, source_projection_fingerprint, compactable_start_ordinal, compactable_end_ordinal,"
        " planned_fresh_tail_start_ordinal, prompt_version, model) VALUES (?, ?, ?, '{}', 'planning', ?, ?, ?, ?, ?, ?)",
        (
            batch_id,
            conversation_id,
            session_key,
            fingerprint,
            start,
            end,
            fresh_tail_start,
            PROMPT_VERSION,
            model,
        ),
    )


def update_planning_target(
    conn: sqlite3.Connection,
    batch_id: str,
    *,
    fingerprint: str,
    start: int,
    end: int,
    fresh_tail_start: int | None,
) -> bool:
    """Widen an open batch's range (1.0's ``updateBatchPlanningTarget``)."""
    return (
        conn.execute(
            "UPDATE pending_compaction_batches SET source_projection_fingerprint = ?, compactable_start_ordinal = ?,"
            " compactable_end_ordinal = ?, planned_fresh_tail_start_ordinal = ?, updated_at = datetime('now')"
            " WHERE batch_id = ? AND status IN ('planning', 'ready')",
            (fingerprint, start, end, fresh_tail_start, batch_id),
        ).rowcount
        > 0
    )


def insert_node(
    conn: sqlite3.Connection,
    *,
    node_id: str,
    batch_id: str,
    conversation_id: int,
    kind: str,
    depth: int,
    start: int,
    end: int,
    source_fingerprint: str,
    context_hash: str,
    model: str,
    message_ids: Sequence[int] = (),
    children: Sequence[tuple[str | None, str | None]] = (),
) -> None:
    """Insert a ``planned`` node with its message links (leaf) or child links (condensed)."""
    conn.execute(
        "INSERT INTO pending_summary_nodes (node_id, batch_id, conversation_id, kind, depth, status,"
        " ordinal_start, ordinal_end, source_fingerprint, source_context_hash, content, token_count,"
        " prompt_version, model) VALUES (?, ?, ?, ?, ?, 'planned', ?, ?, ?, ?, NULL, NULL, ?, ?)",
        (node_id, batch_id, conversation_id, kind, depth, start, end, source_fingerprint, context_hash,
         PROMPT_VERSION, model),
    )  # fmt: skip
    if kind == "leaf":
        conn.executemany(
            "INSERT INTO pending_summary_node_messages (node_id, message_id, ordinal, transcript_entry_id,"
            " identity_hash) VALUES (?, ?, ?, NULL, NULL) ON CONFLICT (node_id, message_id) DO UPDATE SET"
            " ordinal = excluded.ordinal, transcript_entry_id = excluded.transcript_entry_id,"
            " identity_hash = excluded.identity_hash",
            [(node_id, mid, n) for n, mid in enumerate(message_ids)],
        )
        return
    conn.executemany(
        "INSERT INTO pending_summary_node_children (node_id, ordinal, child_node_id, child_summary_id)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (node_id, ordinal) DO UPDATE SET"
        " child_node_id = excluded.child_node_id, child_summary_id = excluded.child_summary_id",
        [(node_id, n, child, summary) for n, (child, summary) in enumerate(children)],
    )


_CLAIMABLE = f"""
  AND (
    pending_summary_nodes.status = 'planned'
    OR (pending_summary_nodes.status = 'running' AND lease_expires_at IS NOT NULL AND lease_expires_at <= :now)
    OR (pending_summary_nodes.status = 'failed' AND retry_count < {MAX_NODE_RETRIES}
        AND (next_attempt_after IS NULL OR next_attempt_after <= :now))
  )
  AND NOT EXISTS (
    SELECT 1 FROM pending_summary_node_children pc
    JOIN pending_summary_nodes child ON child.node_id = pc.child_node_id
    WHERE pc.node_id = pending_summary_nodes.node_id AND child.status NOT IN ('ready', 'promoted')
  )
"""


def claim_next(
    conn: sqlite3.Connection,
    conversation_id: int,
    lease_owner: str,
    lease_ms: int,
    now: datetime | None = None,
) -> Node | None:
    """Lease the first claimable node (1.0's ``claimNextPlannedNode``); caller's transaction."""
    moment = now or datetime.now(timezone.utc)
    now_iso = iso_timestamp(moment)
    expires = iso_timestamp(moment + timedelta(milliseconds=lease_ms))
    found = conn.execute(
        "SELECT pending_summary_nodes.node_id FROM pending_summary_nodes JOIN pending_compaction_batches"
        " ON pending_compaction_batches.batch_id = pending_summary_nodes.batch_id"
        " WHERE pending_summary_nodes.conversation_id = :cid"
        f" AND pending_compaction_batches.status IN {_OPEN}" + _CLAIMABLE + " ORDER BY"
        " pending_summary_nodes.ordinal_start, pending_summary_nodes.depth, pending_summary_nodes.node_id LIMIT 1",
        {"cid": conversation_id, "now": now_iso},
    ).fetchone()
    if found is None:
        return None
    changed = conn.execute(
        "UPDATE pending_summary_nodes SET status = 'running', lease_owner = :owner, lease_expires_at = :expires,"
        " failure_summary = NULL, updated_at = datetime('now') WHERE node_id = :node AND EXISTS (SELECT 1 FROM"
        " pending_compaction_batches WHERE pending_compaction_batches.batch_id = pending_summary_nodes.batch_id"
        f" AND pending_compaction_batches.status IN {_OPEN})" + _CLAIMABLE,
        {"owner": lease_owner, "expires": expires, "node": found[0], "now": now_iso},
    ).rowcount
    return get_node(conn, str(found[0])) if changed else None


def mark_ready(
    conn: sqlite3.Connection, node: Node, owner: str, content: str, tokens: int, now: datetime
) -> bool:
    """Store a prepared node's text, if its lease is still ours (1.0's ``markNodeReady``)."""
    return (
        conn.execute(
            "UPDATE pending_summary_nodes SET status = 'ready', content = ?, token_count = ?, lease_owner = NULL,"
            " lease_expires_at = NULL, failure_summary = NULL, retry_count = 0, next_attempt_after = NULL,"
            " ready_at = COALESCE(?, datetime('now')), updated_at = datetime('now')"
            " WHERE node_id = ? AND status = 'running' AND lease_owner = ? AND lease_expires_at = ?",
            (content, max(0, tokens), iso_timestamp(now), node.node_id, owner, node.lease_expires_at),
        ).rowcount
        > 0
    )


def release_claim(conn: sqlite3.Connection, node: Node, owner: str) -> bool:
    """Give a leased node back unharmed (1.0's ``releaseNodeClaim``: spend guard refused)."""
    return (
        conn.execute(
            "UPDATE pending_summary_nodes SET status = 'planned', lease_owner = NULL, lease_expires_at = NULL,"
            " updated_at = datetime('now') WHERE node_id = ? AND status = 'running' AND lease_owner = ?"
            " AND lease_expires_at = ?",
            (node.node_id, owner, node.lease_expires_at),
        ).rowcount
        > 0
    )


def mark_failed(conn: sqlite3.Connection, node: Node, owner: str, failure: str, now: datetime) -> bool:
    """Record a failed attempt with its backoff (1.0's ``markNodeFailed``)."""
    current = get_node(conn, node.node_id)
    if current is None:
        return False
    retries = current.retry_count + 1
    return (
        conn.execute(
            "UPDATE pending_summary_nodes SET status = 'failed', lease_owner = NULL, lease_expires_at = NULL,"
            " failure_summary = ?, retry_count = ?, next_attempt_after = ?, updated_at = datetime('now')"
            " WHERE node_id = ? AND status = 'running' AND lease_owner = ? AND lease_expires_at = ?",
            (failure, retries, iso_timestamp(now + retry_backoff(retries)), node.node_id, owner,
             node.lease_expires_at),
        ).rowcount
        > 0
    )  # fmt: skip


def mark_stale(conn: sqlite3.Connection, batch_id: str, reason: str) -> None:
    """1.0's ``markBatchStale``."""
    stale_batches(conn, [batch_id], reason)


def mark_promoted(conn: sqlite3.Connection, node_id: str, summary_id: str) -> None:
    """Record the canonical summary a node became."""
    conn.execute(
        "UPDATE pending_summary_nodes SET status = 'promoted', canonical_summary_id = ?, lease_owner = NULL,"
        " lease_expires_at = NULL, failure_summary = NULL, promoted_at = COALESCE(NULL, datetime('now')),"
        " updated_at = datetime('now') WHERE node_id = ?",
        (summary_id, node_id),
    )


def mark_published(conn: sqlite3.Connection, batch_id: str) -> None:
    """Close a batch as published."""
    conn.execute(
        "UPDATE pending_compaction_batches SET status = 'published', failure_summary = NULL,"
        " published_at = COALESCE(NULL, datetime('now')), updated_at = datetime('now') WHERE batch_id = ?",
        (batch_id,),
    )


def prune_superseded(conn: sqlite3.Connection, batch_id: str) -> int:
    """Drop ready condensed nodes a wider ready sibling makes useless (1.0's ``pruneSupersededNodes``)."""
    return int(
        conn.execute(
            "DELETE FROM pending_summary_nodes WHERE batch_id = ? AND kind = 'condensed' AND status = 'ready'"
            " AND EXISTS (SELECT 1 FROM pending_summary_nodes wider WHERE wider.batch_id ="
            " pending_summary_nodes.batch_id AND wider.node_id != pending_summary_nodes.node_id AND wider.status"
            " IN ('ready', 'promoted') AND wider.depth = pending_summary_nodes.depth AND wider.ordinal_start ="
            " pending_summary_nodes.ordinal_start AND wider.ordinal_end > pending_summary_nodes.ordinal_end)"
            " AND NOT EXISTS (SELECT 1 FROM pending_summary_node_children pc JOIN pending_summary_nodes parent"
            " ON parent.node_id = pc.node_id WHERE pc.child_node_id = pending_summary_nodes.node_id"
            " AND parent.status NOT IN ('stale', 'failed'))",
            (batch_id,),
        ).rowcount
    )


def clear_promoted_payloads(conn: sqlite3.Connection, batch_id: str) -> int:
    """Drop the text of promoted nodes after publication (the canonical row holds it)."""
    return int(
        conn.execute(
            "UPDATE pending_summary_nodes SET content = NULL, updated_at = datetime('now')"
            " WHERE batch_id = ? AND status = 'promoted' AND content IS NOT NULL",
            (batch_id,),
        ).rowcount
    )


def delete_finished(conn: sqlite3.Connection, conversation_id: int, now: datetime | None = None) -> int:
    """Delete finished batches past retention (nodes and links follow by cascade)."""
    cutoff = ((now or datetime.now(timezone.utc)) - RETENTION).strftime("%Y-%m-%d %H:%M:%S")
    return int(
        conn.execute(
            "DELETE FROM pending_compaction_batches WHERE conversation_id = ?"
            " AND status IN ('stale', 'failed', 'published') AND updated_at <= ?",
            (conversation_id, cutoff),
        ).rowcount
    )
