"""Anchor-trust rows for the entries `lcm migrate-sessions` stores.

lossless-claw 1.0 relies on a message's ``transcript_entry_id`` only when
``message_transcript_anchor_trust`` holds a ``verified`` (or ``repaired``) row for it
(:mod:`lcm_cli.engine.db.store.anchor_trust`). Its importer records each entry it inserts
with an entry id as verified under its own source (docs/reference/engine.md, "Anchors"), and so do
we, with the same source, reason and timestamp shapes: the importer's inserts skip the
engine's ``transcript-import`` rows and get these instead. A database without the table
(made before 1.0, and not migrated by lcm since) gets no rows: there is nothing there to
read them.
"""

from __future__ import annotations

import sqlite3

from lcm_cli.engine.db.schema import table_exists
from lcm_cli.engine.db.store.anchor_trust import (
    IMPORTED_REASON,
    INSERT,
    MATCHED_REASON,
    ON_CONFLICT,
    TABLE,
    trust_verified,
)
from lcm_cli.engine.db.store.stamps import iso_timestamp

SOURCE = "migrate-sessions"
#: The reason 1.0 gives a stored row whose entry id it checked by role and content; our
#: importer's adoption (stamping an unstamped identical row) checks that and the identity hash.
ADOPTED_REASON = MATCHED_REASON


def trust_stamp(conn: sqlite3.Connection) -> str | None:
    """``verified_at`` for the rows of one import (JavaScript ISO text), or None without the table."""
    return iso_timestamp() if table_exists(conn, TABLE) else None


def trust_inserted(conn: sqlite3.Connection, conversation_id: int, after_seq: int, verified_at: str) -> int:
    """Mark verified every message with an entry id inserted after ``after_seq``; return how many."""
    cursor = conn.execute(
        f"""{INSERT}
            SELECT message_id, conversation_id, transcript_entry_id, 'verified', ?, ?, ?
            FROM messages
            WHERE conversation_id = ? AND seq > ? AND transcript_entry_id IS NOT NULL
            ORDER BY seq{ON_CONFLICT}""",
        (SOURCE, IMPORTED_REASON, verified_at, conversation_id, after_seq),
    )
    return int(cursor.rowcount)


def trust_adopted(
    conn: sqlite3.Connection, message_id: int, conversation_id: int, entry_id: str, verified_at: str
) -> None:
    """Mark verified the entry id the importer just stamped on an existing row."""
    trust_verified(
        conn,
        conversation_id,
        [(message_id, entry_id)],
        source=SOURCE,
        reason=ADOPTED_REASON,
        verified_at=verified_at,
    )
