"""Publishing a ready pending frontier into the summary DAG, with no model call.

As lossless-claw 1.0's publisher does, in one ``BEGIN IMMEDIATE`` transaction:

1. every frontier node and every pending node below it (children first) becomes a
   canonical summary: id ``sum_`` + the first 16 hex digits of SHA-256 of
   ``batch_id NUL node_id NUL source_fingerprint`` (or the id a node already carries),
   inserted unless it exists, with 1.0's coverage metadata (a leaf's time range and
   message tokens from its messages; a condensed node's from its parent summaries),
   ``summaries.model`` = the node's model, FTS rows, and its ``summary_messages`` or
   ``summary_parents`` links (existing links kept);
2. the node is marked ``promoted`` with that id;
3. each frontier node's ordinal range in ``context_items`` is replaced by one summary
   item at its start ordinal, and the ordinals are renumbered 0..N-1;
4. the batch is marked ``published`` and the promoted nodes' text is dropped.

A kill at any instant leaves the state before or after. A batch already published
returns the ids it published. Revalidation against the live context (has the source
moved since planning?) is :func:`lcm_cli.engine.compaction.pending.coordinator.stale_reason`,
run by the caller inside the same transaction.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

from lcm_cli.engine.compaction.pending import rows
from lcm_cli.engine.compaction.pending.rows import Node
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.db.store.stamps import iso_timestamp, parse_timestamp, sqlite_timestamp


class PublishError(Exception):
    """The frontier cannot be published as asked (missing, foreign or unready node)."""


class Published(NamedTuple):
    """What one publication made canonical."""

    batch_id: str
    summary_ids: list[str]  # every promoted node, children first
    frontier_summary_ids: list[str]


def canonical_summary_id(node: Node) -> str:
    """The summary id 1.0 gives a promoted node."""
    key = f"{node.batch_id}\0{node.node_id}\0{node.source_fingerprint}".encode()
    return "sum_" + hashlib.sha256(key).hexdigest()[:16]


def _require_ready(node: Node) -> None:
    if node.status not in ("ready", "promoted"):
        raise PublishError(f"Pending summary node {node.node_id} is not ready for publish")
    if node.status == "ready" and (node.content is None or node.token_count is None):
        raise PublishError(f"Pending summary node {node.node_id} is ready without summary content")


def _ancestors(conn: sqlite3.Connection, frontier: Sequence[Node]) -> list[Node]:
    """The frontier and every pending node below it, each after its children (1.0's order)."""
    seen: set[str] = set()
    ordered: list[Node] = []

    def visit(node: Node) -> None:
        if node.node_id in seen:
            return
        seen.add(node.node_id)
        _require_ready(node)
        for child_id, _ in rows.node_children(conn, node.node_id):
            if child_id is None:
                continue
            child = rows.get_node(conn, child_id)
            if child is None:
                raise PublishError(f"Pending child summary node {child_id} was not found")
            visit(child)
        ordered.append(node)

    for node in frontier:
        visit(node)
    return ordered


def _range(stamps: Sequence[str | None]) -> tuple[str | None, str | None]:
    moments = [m for m in (parse_timestamp(s) for s in stamps) if m is not None]
    if not moments:
        return None, None
    return iso_timestamp(min(moments)), iso_timestamp(max(moments))


def _floor0(value: Any) -> int:
    return max(0, math.floor(value)) if isinstance(value, (int, float)) and math.isfinite(value) else 0


def _insert_summary(
    store: Store, node: Node, summary_id: str, coverage: tuple[str | None, str | None, int, int, int]
) -> None:
    earliest, latest, descendants, descendant_tokens, source_tokens = coverage
    content = node.content or ""
    store.conn.execute(
        "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, file_ids,"
        " earliest_at, latest_at, descendant_count, descendant_token_count, source_message_token_count,"
        " model, created_at) VALUES (?, ?, ?, ?, ?, ?, '[]', ?, ?, ?, ?, ?, ?, ?)",
        (summary_id, node.conversation_id, node.kind, max(0, node.depth), content, node.token_count or 0,
         earliest, latest, descendants, descendant_tokens, source_tokens, node.model or "unknown",
         sqlite_timestamp()),
    )  # fmt: skip
    for table, present in (
        ("summaries_fts", store.has_summaries_fts),
        ("summaries_fts_cjk", store.has_summaries_fts_cjk),
    ):
        if present:
            store.conn.execute(
                f"INSERT INTO {table} (summary_id, content) VALUES (?, ?)", (summary_id, content)
            )


def _promote(store: Store, node: Node, summary_id: str, ids: dict[str, str]) -> None:
    conn = store.conn
    exists = (
        conn.execute("SELECT 1 FROM summaries WHERE summary_id = ?", (summary_id,)).fetchone() is not None
    )
    if node.kind == "leaf":
        message_ids = rows.node_messages(conn, node.node_id)
        if not exists:
            found = conn.execute(
                "SELECT created_at, token_count FROM messages WHERE message_id IN (SELECT value FROM json_each(?))",
                (json.dumps(message_ids),),
            ).fetchall()
            earliest, latest = _range([r[0] for r in found])
            _insert_summary(
                store, node, summary_id, (earliest, latest, 0, 0, sum(_floor0(r[1]) for r in found))
            )
        conn.executemany(
            "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)"
            " ON CONFLICT (summary_id, message_id) DO NOTHING",
            [(summary_id, mid, n) for n, mid in enumerate(message_ids)],
        )
        return
    parents: list[str] = []
    for child_id, child_summary in rows.node_children(conn, node.node_id):
        if child_id is not None:
            if child_id not in ids:
                raise PublishError(f"Missing canonical id for pending child node {child_id}")
            parents.append(ids[child_id])
        elif child_summary is not None:
            parents.append(child_summary)
    if not exists:
        by_id = {
            r[0]: r
            for r in conn.execute(
                "SELECT summary_id, earliest_at, latest_at, created_at, descendant_count, token_count,"
                " descendant_token_count, source_message_token_count FROM summaries"
                " WHERE summary_id IN (SELECT value FROM json_each(?))",
                (json.dumps(parents),),
            )
        }
        sources = [by_id[p] for p in parents if p in by_id]
        stamps: list[str | None] = []
        for s in sources:
            stamps += [s[1] or s[3], s[2] or s[3]]
        earliest, latest = _range(stamps)
        coverage = (
            earliest,
            latest,
            sum(_floor0(s[4]) + 1 for s in sources),
            sum(_floor0(s[5]) + _floor0(s[6]) for s in sources),
            sum(_floor0(s[7]) for s in sources),
        )
        _insert_summary(store, node, summary_id, coverage)
    conn.executemany(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)"
        " ON CONFLICT (summary_id, parent_summary_id) DO NOTHING",
        [(summary_id, parent, n) for n, parent in enumerate(parents)],
    )


def replace_ranges(
    conn: sqlite3.Connection, conversation_id: int, replacements: Sequence[tuple[int, int, str]]
) -> None:
    """Swap each inclusive ordinal range for one summary item, then renumber 0..N-1 (1.0's order)."""
    ordered = sorted(replacements)
    previous = -1
    for start, end, _ in ordered:
        if start < 0 or end < start:
            raise PublishError(f"Invalid context replacement range {start}-{end}")
        if start <= previous:
            raise PublishError("Context replacement ranges must not overlap")
        previous = end
    for start, end, _ in ordered:
        conn.execute(
            "DELETE FROM context_items WHERE conversation_id = ? AND ordinal >= ? AND ordinal <= ?",
            (conversation_id, start, end),
        )
    conn.executemany(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, summary_id) VALUES (?, ?, 'summary', ?)",
        [(conversation_id, start, summary_id) for start, _, summary_id in ordered],
    )
    ordinals = [
        int(r[0])
        for r in conn.execute(
            "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal", (conversation_id,)
        )
    ]
    if any(o != n for n, o in enumerate(ordinals)):
        conn.executemany(
            "UPDATE context_items SET ordinal = ? WHERE conversation_id = ? AND ordinal = ?",
            [(-(n + 1), conversation_id, o) for n, o in enumerate(ordinals)],
        )
        conn.executemany(
            "UPDATE context_items SET ordinal = ? WHERE conversation_id = ? AND ordinal = ?",
            [(n, conversation_id, -(n + 1)) for n in range(len(ordinals))],
        )


def _published_result(conn: sqlite3.Connection, batch_id: str, frontier_ids: Sequence[str]) -> Published:
    frontier: list[Node] = []
    for node_id in frontier_ids:
        node = rows.get_node(conn, node_id)
        if node is None or not node.canonical_summary_id:
            raise PublishError(f"Published frontier node {node_id} has no canonical summary id")
        frontier.append(node)
    ordered = _ancestors(conn, frontier)
    return Published(
        batch_id,
        [n.canonical_summary_id for n in ordered if n.canonical_summary_id],
        [n.canonical_summary_id or "" for n in frontier],
    )


def publish_in_transaction(store: Store, batch_id: str, frontier_ids: Sequence[str]) -> Published:
    """Steps 1-4 on the caller's open transaction (the caller has revalidated the batch)."""
    if not frontier_ids:
        raise PublishError("Cannot publish an empty pending summary frontier")
    conn = store.conn
    batch = rows.get_batch(conn, batch_id)
    if batch is None:
        raise PublishError(f"Pending compaction batch {batch_id} was not found")
    if batch.status == "published":
        return _published_result(conn, batch_id, frontier_ids)
    frontier: list[Node] = []
    for node_id in frontier_ids:
        node = rows.get_node(conn, node_id)
        if node is None:
            raise PublishError(f"Pending summary frontier node {node_id} was not found")
        if node.batch_id != batch_id:
            raise PublishError(f"Pending summary frontier node {node_id} belongs to another batch")
        _require_ready(node)
        frontier.append(node)
    ordered = _ancestors(conn, frontier)
    ids = {n.node_id: n.canonical_summary_id or canonical_summary_id(n) for n in ordered}
    for node in ordered:
        _promote(store, node, ids[node.node_id], ids)
        rows.mark_promoted(conn, node.node_id, ids[node.node_id])
    frontier_summary_ids = [ids[n.node_id] for n in frontier]
    replace_ranges(
        conn,
        batch.conversation_id,
        [
            (n.ordinal_start, n.ordinal_end, sid)
            for n, sid in zip(frontier, frontier_summary_ids, strict=True)
        ],
    )
    rows.mark_published(conn, batch_id)
    rows.clear_promoted_payloads(conn, batch_id)
    return Published(batch_id, [ids[n.node_id] for n in ordered], frontier_summary_ids)
