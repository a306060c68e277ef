"""The context frontier: ``context_items`` and their per-conversation ordinals."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lcm_cli.engine.db.pending_state import STALE_BY_COMPACTION, invalidate_open_batches
from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.stamps import sqlite_timestamp

#: Insert one context item: (conversation_id, ordinal, item_type, message_id, summary_id, created_at).
INSERT_CONTEXT = (
    "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id,"
    " created_at) VALUES (?, ?, ?, ?, ?, ?)"
)


class ContextWrites(StoreBase):
    """Appends to and compacts a conversation's ``context_items``."""

    def append_context_item(
        self,
        conversation_id: int,
        *,
        message_id: int | None = None,
        summary_id: str | None = None,
        created_at: str | None = None,
    ) -> int:
        """Append a message or summary (exactly one) to the context; return its ordinal."""
        if (message_id is None) == (summary_id is None):
            raise ValueError("pass exactly one of message_id or summary_id")
        item_type = "message" if message_id is not None else "summary"
        with self.transaction():
            ordinal = self._next_ordinal(conversation_id)
            self.conn.execute(
                INSERT_CONTEXT,
                (
                    conversation_id,
                    ordinal,
                    item_type,
                    message_id,
                    summary_id,
                    created_at or sqlite_timestamp(),
                ),
            )
            return ordinal

    def replace_context_with_summary(
        self,
        conversation_id: int,
        summary_id: str,
        ordinals: Iterable[int] | None = None,
    ) -> int:
        """Replace a contiguous run of context items by one summary item, as compaction does.

        The run is given by its current ``ordinals``, or by default is every
        context item the summary covers (its source messages for a leaf, its
        source summaries for a condensed node). Afterwards the conversation's
        ordinals are renumbered 0..N-1. Returns the new item's ordinal.
        """
        with self.transaction():
            kind = self._scalar(
                "SELECT kind FROM summaries WHERE summary_id = ? AND conversation_id = ?",
                (summary_id, conversation_id),
            )
            if kind is None:
                raise ValueError(f"summary {summary_id!r} does not exist in conversation {conversation_id}")
            items = self.conn.execute(
                "SELECT ordinal, message_id, summary_id FROM context_items"
                " WHERE conversation_id = ? ORDER BY ordinal",
                (conversation_id,),
            ).fetchall()
            if ordinals is None:
                positions = self._covered_positions(summary_id, kind, items)
            else:
                wanted = set(ordinals)
                positions = [i for i, item in enumerate(items) if item[0] in wanted]
                if len(positions) != len(wanted):
                    present = {item[0] for item in items}
                    raise ValueError(f"no context items at ordinals {sorted(wanted - present)}")
            if not positions:
                raise ValueError(f"no context items to replace with summary {summary_id!r}")
            first, last = positions[0], positions[-1]
            if last - first + 1 != len(positions):
                raise ValueError("the context items to replace are not one contiguous run")
            start, end = items[first][0], items[last][0]
            invalidate_open_batches(self.conn, conversation_id, STALE_BY_COMPACTION)
            self.conn.execute(
                "DELETE FROM context_items WHERE conversation_id = ? AND ordinal BETWEEN ? AND ?",
                (conversation_id, start, end),
            )
            self.conn.execute(
                INSERT_CONTEXT,
                (
                    conversation_id,
                    start,
                    "summary",
                    None,
                    summary_id,
                    sqlite_timestamp(),
                ),
            )
            self._resequence_context(conversation_id)
            return first

    def _covered_positions(self, summary_id: str, kind: str, items: Sequence[Sequence[Any]]) -> list[int]:
        if kind == "leaf":
            covered = {
                row[0]
                for row in self.conn.execute(
                    "SELECT message_id FROM summary_messages WHERE summary_id = ?",
                    (summary_id,),
                )
            }
            return [i for i, item in enumerate(items) if item[1] in covered]
        covered_ids = {
            row[0]
            for row in self.conn.execute(
                "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ?",
                (summary_id,),
            )
        }
        return [i for i, item in enumerate(items) if item[2] in covered_ids]

    def _resequence_context(self, conversation_id: int) -> None:
        ordinals = [
            row[0]
            for row in self.conn.execute(
                "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
                (conversation_id,),
            )
        ]
        if ordinals == list(range(len(ordinals))):
            return
        # Two passes through negative temporaries: renumbering in place could
        # collide with a not-yet-moved row on the (conversation_id, ordinal) key.
        update = "UPDATE context_items SET ordinal = ? WHERE conversation_id = ? AND ordinal = ?"
        self.conn.executemany(update, ((-(i + 1), conversation_id, old) for i, old in enumerate(ordinals)))
        self.conn.executemany(update, ((i, conversation_id, -(i + 1)) for i in range(len(ordinals))))
