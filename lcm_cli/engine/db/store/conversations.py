"""The ``conversations`` table: one row per session's conversation."""

from __future__ import annotations

from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.stamps import sqlite_timestamp


class ConversationWrites(StoreBase):
    """Writes ``conversations`` rows."""

    def create_conversation(
        self,
        session_id: str,
        *,
        session_key: str | None = None,
        title: str | None = None,
        active: bool = True,
        archived_at: str | None = None,
        archive_cause: str | None = None,
        bootstrapped_at: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
    ) -> int:
        """Insert a conversation row and return its ``conversation_id``."""
        created_at = created_at or sqlite_timestamp()
        with self.transaction():
            cursor = self.conn.execute(
                "INSERT INTO conversations (session_id, session_key, active, archived_at,"
                " archive_cause, title, bootstrapped_at, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    session_key,
                    int(active),
                    archived_at,
                    archive_cause,
                    title,
                    bootstrapped_at,
                    created_at,
                    updated_at or created_at,
                ),
            )
            return int(cursor.lastrowid or 0)
