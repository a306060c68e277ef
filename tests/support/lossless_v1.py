"""A real lcm.db in the shape lossless-claw 1.0 (v1.0.0-beta.4) leaves it, built by our code.

It is not a file lossless-claw wrote: our own 0.15 DDL (``m001_adopt_lossless_claw_schema``)
and ``DURABLE_TURN_DDL`` with 1.0's differences applied by hand. Those differences (read
from its ``src/db/migration.ts``): 1.0 no longer
creates ``conversation_bootstrap_state`` (its bootstrap reads the host's SQLite transcript)
nor ``messages.openclaw_sender_metadata``; it adds the durable-turn tables
(``turn_advancements``, the pending-summary staging tables, transcript epochs and anchor
trust) and never records our ``lcm_cli.*`` migration steps.

Rows, for one active conversation (session ``sess-v1``, 10 messages, entry ids
``entry-1``..``entry-10``):

* batch ``batch-published`` (``published``): leaf nodes over ordinals 0..3 and 4..5, both
  ``promoted`` to canonical summaries ``sum_v1leaf0000001``/``sum_v1leaf0000002`` (payloads
  cleared, as 1.0's ``clearPromotedPayloads`` does); the context is now those two
  summaries then messages 7..10;
* batch ``batch-ready`` (``ready``, last touched long ago): a ``ready`` leaf node over
  ordinals 2..3 (messages 7, 8) and a ``ready`` depth-1 condensed node over 0..3 whose
  children are the two canonical summaries and the leaf node;
* ``turn_advancements`` for two turns of ``sess-v1`` and one of ``sess-gone`` (a session
  with no conversation); an epoch whose frontier is ``entry-10``; anchor trust for every
  message.

An archived conversation (``sess-v1-old``) of the same key carries plain rows only.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from lcm_cli.engine.db import schema

SESSION_ID = "sess-v1"
SESSION_KEY = "agent:main:explicit:sess-v1"
CONVERSATION_ID = 1
ARCHIVED_ID = 2
SUMMARY_IDS = ("sum_v1leaf0000001", "sum_v1leaf0000002")
DURABLE_TABLES = (
    "turn_advancements",
    "pending_compaction_batches",
    "pending_summary_nodes",
    "pending_summary_node_messages",
    "pending_summary_node_children",
    "conversation_transcript_epochs",
    "message_transcript_anchor_trust",
)
OLD = "2026-08-20 10:00:00"


def _hex(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def make_v1_db(path: str | Path) -> Path:
    """Create ``path`` in lossless-claw 1.0's shape from our DDL (WAL, foreign keys on)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise FileExistsError(path)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN")
        schema.m001_adopt_lossless_claw_schema(conn)
        conn.execute("DROP TABLE conversation_bootstrap_state")
        conn.execute("ALTER TABLE messages DROP COLUMN openclaw_sender_metadata")
        for ddl in schema.DURABLE_TURN_DDL:
            conn.execute(ddl)
        _populate(conn)
        schema.m002_add_full_text_tables(conn)  # seeded from the rows above, as 1.0 does
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path


def _populate(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO conversations (conversation_id, session_id, session_key, active, archived_at, title,"
        " created_at, updated_at) VALUES (?, ?, ?, 0, '2026-08-19 09:00:00', 'old', '2026-08-18 09:00:00',"
        " '2026-08-19 09:00:00')",
        (ARCHIVED_ID, SESSION_ID + "-old", SESSION_KEY),
    )
    conn.execute(
        "INSERT INTO conversations (conversation_id, session_id, session_key, active, created_at, updated_at)"
        " VALUES (?, ?, ?, 1, '2026-08-20 09:00:00', ?)",
        (CONVERSATION_ID, SESSION_ID, SESSION_KEY, OLD),
    )
    conn.execute(
        "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count, created_at)"
        " VALUES (100, ?, 1, 'user', 'hello from an archived 1.0 conversation', 10, '2026-08-18 09:01:00')",
        (ARCHIVED_ID,),
    )
    for seq in range(1, 11):
        role = "user" if seq % 2 else "assistant"
        content = f"v1 message {seq} about the durable turn ledger"
        conn.execute(
            "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count,"
            " identity_hash, transcript_entry_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                seq,
                CONVERSATION_ID,
                seq,
                role,
                content,
                12,
                _hex(role, content),
                f"entry-{seq}",
                f"2026-08-20 09:{seq:02d}:00",
            ),
        )
        conn.execute(
            "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal, text_content)"
            " VALUES (?, ?, ?, 'text', 0, ?)",
            (f"part-{seq}", seq, SESSION_ID, content),
        )
        conn.execute(
            "INSERT INTO message_transcript_anchor_trust (message_id, conversation_id, transcript_entry_id,"
            " trust_state, source, verified_at) VALUES (?, ?, ?, 'verified', 'sqlite-transcript', ?)",
            (seq, CONVERSATION_ID, f"entry-{seq}", OLD),
        )
    for index, (summary_id, members) in enumerate(zip(SUMMARY_IDS, ((1, 2, 3, 4), (5, 6)), strict=True)):
        conn.execute(
            "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, earliest_at,"
            " latest_at, source_message_token_count, created_at, model) VALUES (?, ?, 'leaf', 0, ?, 20, ?, ?, ?,"
            " ?, 'stub/model')",
            (
                summary_id,
                CONVERSATION_ID,
                f"Published 1.0 leaf summary {index + 1} of the durable turn ledger.",
                f"2026-08-20T09:{members[0]:02d}:00.000Z",
                f"2026-08-20T09:{members[-1]:02d}:00.000Z",
                12 * len(members),
                "2026-08-20 09:30:00",
            ),
        )
        for ordinal, message_id in enumerate(members):
            conn.execute(
                "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
                (summary_id, message_id, ordinal),
            )
    context = [("summary", None, SUMMARY_IDS[0]), ("summary", None, SUMMARY_IDS[1])]
    context += [("message", m, None) for m in range(7, 11)]
    for ordinal, (kind, message_id, summary_id) in enumerate(context):
        conn.execute(
            "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id)"
            " VALUES (?, ?, ?, ?, ?)",
            (CONVERSATION_ID, ordinal, kind, message_id, summary_id),
        )
    _pending(conn)
    for key, session, terminal, count in (
        ("adv:sess-v1:turn-1", SESSION_ID, "entry-2", 2),
        ("adv:sess-v1:turn-5", SESSION_ID, "entry-10", 2),
        ("adv:sess-gone:turn-1", "sess-gone", "gone-2", 2),
    ):
        conn.execute(
            "INSERT INTO turn_advancements (advancement_key, payload_hash, session_id, session_key,"
            " admission_entry_id, terminal_entry_id, message_count, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, _hex("payload", key), session, None, f"{terminal}-admission", terminal, count, OLD),
        )
    conn.execute(
        "INSERT INTO conversation_transcript_epochs (conversation_id, session_id, session_key, frontier_entry_id,"
        " frontier_seq, frontier_created_at, migration_mode, metadata_json) VALUES (?, ?, ?, 'entry-10', 10, ?,"
        " 'verified', '{}')",
        (CONVERSATION_ID, SESSION_ID, SESSION_KEY, "2026-08-20 09:10:00"),
    )


def _pending(conn: sqlite3.Connection) -> None:
    batch = (
        "INSERT INTO pending_compaction_batches (batch_id, conversation_id, session_key, status,"
        " source_projection_fingerprint, compactable_start_ordinal, compactable_end_ordinal,"
        " planned_fresh_tail_start_ordinal, prompt_version, model, created_at, updated_at, published_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending-summary-dag:v1', 'stub/model', ?, ?, ?)"
    )
    conn.execute(
        batch,
        ("batch-published", CONVERSATION_ID, SESSION_KEY, "published", _hex("p1"), 0, 5, 6, OLD, OLD, OLD),
    )
    conn.execute(
        batch, ("batch-ready", CONVERSATION_ID, SESSION_KEY, "ready", _hex("p2"), 0, 3, 4, OLD, OLD, None)
    )
    node = (
        "INSERT INTO pending_summary_nodes (node_id, batch_id, conversation_id, kind, depth, status,"
        " ordinal_start, ordinal_end, source_fingerprint, source_context_hash, content, token_count,"
        " prompt_version, model, canonical_summary_id, created_at, updated_at, ready_at, promoted_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending-summary-dag:v1', 'stub/model', ?, ?, ?, ?, ?)"
    )
    for node_id, start, end, summary_id in (
        ("node-pub-1", 0, 3, SUMMARY_IDS[0]),
        ("node-pub-2", 4, 5, SUMMARY_IDS[1]),
    ):
        conn.execute(
            node,
            (node_id, "batch-published", CONVERSATION_ID, "leaf", 0, "promoted", start, end, _hex(node_id),
             _hex("ctx", node_id), None, None, summary_id, OLD, OLD, OLD, OLD),
        )  # fmt: skip
    conn.execute(
        node,
        ("node-ready-leaf", "batch-ready", CONVERSATION_ID, "leaf", 0, "ready", 2, 3, _hex("l"), _hex("lc"),
         "Ready but unpublished leaf over messages 7 and 8.", 11, None, OLD, OLD, OLD, None),
    )  # fmt: skip
    conn.execute(
        node,
        ("node-ready-cond", "batch-ready", CONVERSATION_ID, "condensed", 1, "ready", 0, 3, _hex("c"), None,
         "Ready but unpublished condensed node.", 7, None, OLD, OLD, OLD, None),
    )  # fmt: skip
    link = (
        "INSERT INTO pending_summary_node_messages (node_id, message_id, ordinal, transcript_entry_id,"
        " identity_hash) VALUES (?, ?, ?, ?, ?)"
    )
    for node_id, members in (
        ("node-pub-1", (1, 2, 3, 4)),
        ("node-pub-2", (5, 6)),
        ("node-ready-leaf", (7, 8)),
    ):
        for ordinal, message_id in enumerate(members):
            conn.execute(link, (node_id, message_id, ordinal, f"entry-{message_id}", None))
    child = (
        "INSERT INTO pending_summary_node_children (node_id, ordinal, child_node_id, child_summary_id)"
        " VALUES (?, ?, ?, ?)"
    )
    conn.execute(child, ("node-ready-cond", 0, None, SUMMARY_IDS[0]))
    conn.execute(child, ("node-ready-cond", 1, None, SUMMARY_IDS[1]))
    conn.execute(child, ("node-ready-cond", 2, "node-ready-leaf", None))


def durable_rows(path: str | Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the durable-turn tables, sorted, for before/after comparisons."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in DURABLE_TABLES
        }
    finally:
        conn.close()
