"""Anchor-trust rows for the entries `lcm migrate-sessions` stores.

lossless-claw 1.0 relies on a message's ``transcript_entry_id`` only when
``message_transcript_anchor_trust`` holds a ``verified`` (or ``repaired``) row for it;
an anchor without a row counts as an unproven legacy anchor, which its reconciliation
audits and repairs later. Its importer therefore records each entry it inserts with an
entry id as verified (compat/engine.md, "Anchors"), and so do we, with the same source,
reason and timestamp shapes. A database without the table (made before 1.0, and not
migrated by lcm since) gets no rows: there is nothing there to read them.
"""

from __future__ import annotations

import sqlite3

from lcm_cli.engine.db.schema import table_exists
from lcm_cli.engine.db.store.stamps import iso_timestamp

TABLE = "message_transcript_anchor_trust"
SOURCE = "migrate-sessions"
#: The reason 1.0's importer gives for an entry it inserted.
IMPORTED_REASON = "message imported from transcript entry"
#: The reason 1.0 gives a stored row whose entry id it checked by role and content; our
#: importer's adoption (stamping an unstamped identical row) checks that and the identity hash.
ADOPTED_REASON = "entry id matches role and content"

# The same upsert as 1.0's store: a second write for a message replaces the classification
# and bumps updated_at, keeping created_at.
_UPSERT = """
    ON CONFLICT (message_id) DO UPDATE SET
      conversation_id = excluded.conversation_id,
      transcript_entry_id = excluded.transcript_entry_id,
      trust_state = excluded.trust_state,
      source = excluded.source,
      reason = excluded.reason,
      verified_at = excluded.verified_at,
      updated_at = datetime('now')"""


def trust_stamp(conn: sqlite3.Connection) -> str | None:
    """``verified_at`` for the rows of one import (JavaScript ISO text), or None without the table."""
    return iso_timestamp() if table_exists(conn, TABLE) else None


def trust_inserted(conn: sqlite3.Connection, conversation_id: int, after_seq: int, verified_at: str) -> int:
    """Mark verified every message with an entry id inserted after ``after_seq``; return how many."""
    cursor = conn.execute(
        f"""INSERT INTO {TABLE} (message_id, conversation_id, transcript_entry_id, trust_state,
                source, reason, verified_at)
            SELECT message_id, conversation_id, transcript_entry_id, 'verified', ?, ?, ?
            FROM messages
            WHERE conversation_id = ? AND seq > ? AND transcript_entry_id IS NOT NULL
            ORDER BY seq{_UPSERT}""",
        (SOURCE, IMPORTED_REASON, verified_at, conversation_id, after_seq),
    )
    return int(cursor.rowcount)


def trust_adopted(
    conn: sqlite3.Connection, message_id: int, conversation_id: int, entry_id: str, verified_at: str
) -> None:
    """Mark verified the entry id the importer just stamped on an existing row."""
    conn.execute(
        f"""INSERT INTO {TABLE} (message_id, conversation_id, transcript_entry_id, trust_state,
                source, reason, verified_at)
            VALUES (?, ?, ?, 'verified', ?, ?, ?){_UPSERT}""",
        (message_id, conversation_id, entry_id, SOURCE, ADOPTED_REASON, verified_at),
    )
