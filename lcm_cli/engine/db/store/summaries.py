"""Summaries, their DAG links and their FTS rows (database.md §8).

Summary metadata (depth, covered time range, descendant and token totals) is derived
from the sources; links carry 0-based ordinals.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.ids import new_summary_id
from lcm_cli.engine.db.store.stamps import sqlite_timestamp, time_range


class SummaryWrites(StoreBase):
    """Writes ``summaries``, ``summary_messages``, ``summary_parents`` and the summary FTS rows."""

    def add_leaf_summary(
        self,
        conversation_id: int,
        message_ids: Sequence[int],
        content: str,
        *,
        summary_id: str | None = None,
        created_at: str | None = None,
        model: str = "unknown",
        file_ids: Sequence[str] | None = None,
        token_count: int | None = None,
        source_message_token_count: int | None = None,
    ) -> str:
        """Insert a leaf summary of ``message_ids`` (in source order); return its id.

        Computes depth 0, the covered time range, and the source message token
        total (unless given: compaction counts speaker lines too); links the
        messages with ordinals 0..n-1. The context is left alone: call
        :meth:`replace_context_with_summary` to compact.
        """
        ids = list(message_ids)
        if not ids:
            raise ValueError("a leaf summary needs at least one source message")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate message ids in a leaf summary's sources")
        with self.transaction():
            found = {
                row[0]: row
                for row in self.conn.execute(
                    "SELECT message_id, conversation_id, created_at, token_count FROM messages"
                    " WHERE message_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                )
            }
            self._check_sources("message", ids, found, conversation_id)
            earliest, latest = time_range(found[i][2] for i in ids)
            summary_id = self._insert_summary(
                conversation_id,
                kind="leaf",
                depth=0,
                content=content,
                summary_id=summary_id,
                created_at=created_at,
                model=model,
                file_ids=file_ids,
                token_count=token_count,
                earliest_at=earliest,
                latest_at=latest,
                descendant_count=0,
                descendant_token_count=0,
                source_message_token_count=sum(found[i][3] for i in ids)
                if source_message_token_count is None
                else source_message_token_count,
            )
            self.conn.executemany(
                "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
                ((summary_id, mid, ordinal) for ordinal, mid in enumerate(ids)),
            )
            return summary_id

    def add_condensed_summary(
        self,
        conversation_id: int,
        source_summary_ids: Sequence[str],
        content: str,
        *,
        summary_id: str | None = None,
        created_at: str | None = None,
        model: str = "unknown",
        file_ids: Sequence[str] | None = None,
        token_count: int | None = None,
    ) -> str:
        """Insert a condensed summary of lower-depth summaries (in source order); return its id.

        depth = 1 + the deepest source; time range, descendant counts and source
        message tokens are aggregated from the sources (database.md §8). Links go
        in ``summary_parents`` with the NEW summary in ``summary_id`` and each
        source in ``parent_summary_id`` (the table's naming is inverted).
        """
        ids = list(source_summary_ids)
        if not ids:
            raise ValueError("a condensed summary needs at least one source summary")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate summary ids in a condensed summary's sources")
        with self.transaction():
            found = {
                row[0]: row
                for row in self.conn.execute(
                    "SELECT summary_id, conversation_id, depth, token_count, earliest_at,"
                    " latest_at, created_at, descendant_count, descendant_token_count,"
                    " source_message_token_count FROM summaries"
                    " WHERE summary_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                )
            }
            self._check_sources("summary", ids, found, conversation_id)
            sources = [found[i] for i in ids]
            # A source without its own range falls back to its creation time.
            earliest, _ = time_range(s[4] or s[6] for s in sources)
            _, latest = time_range(s[5] or s[6] for s in sources)
            summary_id = self._insert_summary(
                conversation_id,
                kind="condensed",
                depth=max(s[2] for s in sources) + 1,
                content=content,
                summary_id=summary_id,
                created_at=created_at,
                model=model,
                file_ids=file_ids,
                token_count=token_count,
                earliest_at=earliest,
                latest_at=latest,
                descendant_count=sum(s[7] + 1 for s in sources),
                descendant_token_count=sum(s[3] + s[8] for s in sources),
                source_message_token_count=sum(s[9] for s in sources),
            )
            self.conn.executemany(
                "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)",
                ((summary_id, source, ordinal) for ordinal, source in enumerate(ids)),
            )
            return summary_id

    def _insert_summary(
        self,
        conversation_id: int,
        *,
        kind: str,
        depth: int,
        content: str,
        summary_id: str | None,
        created_at: str | None,
        model: str,
        file_ids: Sequence[str] | None,
        token_count: int | None,
        earliest_at: str | None,
        latest_at: str | None,
        descendant_count: int,
        descendant_token_count: int,
        source_message_token_count: int,
    ) -> str:
        summary_id = summary_id or new_summary_id(content)
        # file_ids is an ordered, de-duplicated JSON array.
        files = json.dumps(list(dict.fromkeys(file_ids or ())), separators=(",", ":"))
        self.conn.execute(
            "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content,"
            " token_count, earliest_at, latest_at, descendant_count, descendant_token_count,"
            " source_message_token_count, created_at, file_ids, model)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                summary_id,
                conversation_id,
                kind,
                depth,
                content,
                estimate_tokens(content) if token_count is None else token_count,
                earliest_at,
                latest_at,
                descendant_count,
                descendant_token_count,
                source_message_token_count,
                created_at or sqlite_timestamp(),
                files,
                model,
            ),
        )
        if self.has_summaries_fts:
            self.conn.execute(
                "INSERT INTO summaries_fts (summary_id, content) VALUES (?, ?)",
                (summary_id, content),
            )
        if self.has_summaries_fts_cjk:
            self.conn.execute(
                "INSERT INTO summaries_fts_cjk (summary_id, content) VALUES (?, ?)",
                (summary_id, content),
            )
        return summary_id

    @staticmethod
    def _check_sources(
        what: str,
        ids: Sequence[Any],
        found: Mapping[Any, Sequence[Any]],
        conversation_id: int,
    ) -> None:
        missing = [i for i in ids if i not in found]
        if missing:
            raise ValueError(f"unknown source {what} ids: {missing}")
        foreign = [i for i in ids if found[i][1] != conversation_id]
        if foreign:
            raise ValueError(
                f"source {what} ids {foreign} belong to another conversation than {conversation_id}"
            )
