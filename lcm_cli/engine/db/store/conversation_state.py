"""One-row-per-conversation state: the transcript checkpoint and compaction maintenance and telemetry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lcm_cli.engine.db import schema
from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.stamps import sqlite_timestamp


def _flag(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


class ConversationStateWrites(StoreBase):
    """Upserts ``conversation_bootstrap_state``, ``..._compaction_maintenance`` and ``..._telemetry``."""

    def upsert_bootstrap_state(
        self,
        conversation_id: int,
        session_file_path: str,
        *,
        last_seen_size: int = 0,
        last_seen_mtime_ms: int = 0,
        last_processed_offset: int | None = None,
        last_processed_entry_hash: str | None = None,
        session_header_id: str | None = None,
        last_processed_entry_id: str | None = None,
        fork_bounded: bool = False,
        fork_source_message_count: int = 0,
        soft_reset_pruned_at: str | None = None,
        updated_at: str | None = None,
    ) -> None:
        """Write the conversation's transcript checkpoint, replacing every field.

        ``last_processed_offset`` defaults to ``last_seen_size`` (fully processed).
        """
        values = (
            conversation_id,
            session_file_path,
            last_seen_size,
            last_seen_mtime_ms,
            last_seen_size if last_processed_offset is None else last_processed_offset,
            last_processed_entry_hash,
            session_header_id,
            last_processed_entry_id,
            int(fork_bounded),
            fork_source_message_count,
            soft_reset_pruned_at,
            updated_at or sqlite_timestamp(),
        )
        columns = (
            "conversation_id, session_file_path, last_seen_size, last_seen_mtime_ms,"
            " last_processed_offset, last_processed_entry_hash, session_header_id,"
            " last_processed_entry_id, fork_bounded, fork_source_message_count,"
            " soft_reset_pruned_at, updated_at"
        )
        updates = ", ".join(f"{name.strip()} = excluded.{name.strip()}" for name in columns.split(",")[1:])
        with self.transaction():
            self.conn.execute(
                f"INSERT INTO conversation_bootstrap_state ({columns})"
                f" VALUES ({', '.join('?' * len(values))})"
                f" ON CONFLICT (conversation_id) DO UPDATE SET {updates}",
                values,
            )

    def set_maintenance(self, conversation_id: int, **fields: Any) -> None:
        """Insert or update the conversation's ``conversation_compaction_maintenance`` row.

        Keyword names are column names (``pending=True``, ``reason="threshold"``,
        ``requested_at=iso_timestamp()``, ...); unnamed columns keep their value
        (or default). ``updated_at`` defaults to now, and ``maintenance_revision``
        goes up by one on every update unless given.
        """
        bump = "maintenance_revision" not in fields
        self._upsert_row(
            "conversation_compaction_maintenance",
            conversation_id,
            fields,
            extra_update="maintenance_revision = maintenance_revision + 1" if bump else None,
        )

    def set_telemetry(self, conversation_id: int, **fields: Any) -> None:
        """Insert or update the conversation's ``conversation_compaction_telemetry`` row.

        Keyword names are column names (``cache_state="hot"``, ``provider=...``);
        unnamed columns keep their value (or default). ``updated_at`` defaults to now.
        """
        self._upsert_row("conversation_compaction_telemetry", conversation_id, fields)

    def _upsert_row(
        self,
        table: str,
        conversation_id: int,
        fields: Mapping[str, Any],
        extra_update: str | None = None,
    ) -> None:
        with self.transaction():
            allowed = schema.column_names(self.conn, table) - {"conversation_id"}
            unknown = set(fields) - allowed
            if unknown:
                raise ValueError(f"unknown {table} columns: {sorted(unknown)}")
            values = {name: _flag(value) for name, value in fields.items()}
            values.setdefault("updated_at", sqlite_timestamp())
            names = list(values)
            assignments = [f"{name} = excluded.{name}" for name in names]
            if extra_update:
                assignments.append(extra_update)
            self.conn.execute(
                f"INSERT INTO {table} (conversation_id, {', '.join(names)})"
                f" VALUES (?, {', '.join('?' * len(names))})"
                f" ON CONFLICT (conversation_id) DO UPDATE SET {', '.join(assignments)}",
                (conversation_id, *values.values()),
            )
