"""Focus briefs and their summary sources."""

from __future__ import annotations

from collections.abc import Sequence

from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.ids import new_focus_brief_id
from lcm_cli.engine.db.store.stamps import sqlite_timestamp


class FocusBriefWrites(StoreBase):
    """Writes ``focus_briefs`` and ``focus_brief_sources`` rows."""

    def add_focus_brief(
        self,
        conversation_id: int,
        prompt: str,
        content: str,
        *,
        status: str = "active",
        brief_id: str | None = None,
        session_key: str | None = None,
        token_count: int | None = None,
        target_tokens: int = 0,
        covered_latest_at: str | None = None,
        covered_message_seq: int | None = None,
        source_context_hash: str = "",
        generator_run_id: str | None = None,
        generator_session_key: str | None = None,
        raw_result_json: str | None = None,
        error: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
        superseded_at: str | None = None,
        sources: Sequence[tuple[str, str]] = (),
    ) -> str:
        """Insert a focus brief (and its ``(summary_id, role)`` sources); return its id."""
        brief_id = brief_id or new_focus_brief_id()
        created_at = created_at or sqlite_timestamp()
        with self.transaction():
            self.conn.execute(
                "INSERT INTO focus_briefs (brief_id, conversation_id, session_key, prompt,"
                " content, status, token_count, target_tokens, covered_latest_at,"
                " covered_message_seq, source_context_hash, generator_run_id,"
                " generator_session_key, raw_result_json, error, created_at, updated_at,"
                " superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    brief_id,
                    conversation_id,
                    session_key,
                    prompt,
                    content,
                    status,
                    estimate_tokens(content) if token_count is None else token_count,
                    target_tokens,
                    covered_latest_at,
                    covered_message_seq,
                    source_context_hash,
                    generator_run_id,
                    generator_session_key,
                    raw_result_json,
                    error,
                    created_at,
                    updated_at or created_at,
                    superseded_at,
                ),
            )
            self.conn.executemany(
                "INSERT INTO focus_brief_sources (brief_id, summary_id, ordinal, role, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    (brief_id, summary, ordinal, role, created_at)
                    for ordinal, (summary, role) in enumerate(sources)
                ),
            )
        return brief_id
