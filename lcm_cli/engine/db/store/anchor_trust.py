"""Anchor-trust rows: which stored transcript entry ids lossless-claw 1.0 may rely on.

1.0 trusts a message's ``transcript_entry_id`` only when ``message_transcript_anchor_trust``
holds a ``verified`` (or ``repaired``) row for it; an anchor without one is an unproven
legacy anchor that its reconciliation audits before using (docs/reference/engine.md, "Anchors").
Every message 1.0's engine stores with a transcript entry id gets a ``verified`` row with
source ``transcript-import`` in the same transaction (bootstrap, reconcile, ``afterTurn``,
``commitTurn``: all go through one ingest), so the message store writes them here for every
engine path; ``lcm migrate-sessions`` writes its importer's source instead
(:mod:`lcm_cli.migrate.anchors`). A database without the table (made before 1.0 and not
migrated by lcm since) gets no rows: there is nothing there to read them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

TABLE = "message_transcript_anchor_trust"
#: The source 1.0's engine gives a message it stored from a transcript entry.
TRANSCRIPT_IMPORT = "transcript-import"
#: The reason 1.0 gives a message it stored from a transcript entry (engine and importer alike).
IMPORTED_REASON = "message imported from transcript entry"
#: The source 1.0 gives an anchor its transcript reconcile confirmed or adopted.
PROJECTION_RECONCILE = "projection-reconcile"
#: The reason 1.0 gives a stored entry id it checked by role and content.
MATCHED_REASON = "entry id matches role and content"

# 1.0's upsert: a second write for a message replaces its classification and bumps
# updated_at, keeping created_at (both default to datetime('now') on the first write).
INSERT = f"""INSERT INTO {TABLE} (message_id, conversation_id, transcript_entry_id, trust_state,
        source, reason, verified_at)"""
ON_CONFLICT = """
    ON CONFLICT (message_id) DO UPDATE SET
      conversation_id = excluded.conversation_id,
      transcript_entry_id = excluded.transcript_entry_id,
      trust_state = excluded.trust_state,
      source = excluded.source,
      reason = excluded.reason,
      verified_at = excluded.verified_at,
      updated_at = datetime('now')"""
_UPSERT_VALUES = INSERT + " VALUES (?, ?, ?, ?, ?, ?, ?)" + ON_CONFLICT


def trust_verified(
    conn: sqlite3.Connection,
    conversation_id: int,
    anchors: Iterable[tuple[int, str]],
    *,
    source: str,
    reason: str,
    verified_at: str,
) -> None:
    """Upsert a ``verified`` row for each (message_id, entry id); the caller checked the table exists."""
    conn.executemany(
        _UPSERT_VALUES,
        (
            (message_id, conversation_id, entry_id, "verified", source, reason, verified_at)
            for message_id, entry_id in anchors
        ),
    )
