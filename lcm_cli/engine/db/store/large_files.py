"""The ``large_files`` table: externalized payloads."""

from __future__ import annotations

from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.ids import new_file_id
from lcm_cli.engine.db.store.stamps import sqlite_timestamp


class LargeFileWrites(StoreBase):
    """Writes ``large_files`` rows."""

    def add_large_file(
        self,
        conversation_id: int,
        storage_uri: str,
        *,
        file_id: str | None = None,
        file_name: str | None = None,
        mime_type: str | None = None,
        byte_size: int | None = None,
        line_count: int | None = None,
        exploration_summary: str | None = None,
        created_at: str | None = None,
    ) -> str:
        """Record an externalized payload in ``large_files``; return its ``file_`` id."""
        file_id = file_id or new_file_id()
        with self.transaction():
            self.conn.execute(
                "INSERT INTO large_files (file_id, conversation_id, file_name, mime_type,"
                " byte_size, line_count, storage_uri, exploration_summary, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    file_id,
                    conversation_id,
                    file_name,
                    mime_type,
                    byte_size,
                    line_count,
                    storage_uri,
                    exploration_summary,
                    created_at or sqlite_timestamp(),
                ),
            )
        return file_id
