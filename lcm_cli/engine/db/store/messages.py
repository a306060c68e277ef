"""Messages, their parts and their ``messages_fts`` text (database.md §8).

A message write also appends the new messages to the context unless told not to, and
records each one stored with a transcript entry id as a verified anchor, as lossless-claw
1.0's ingest does (:mod:`lcm_cli.engine.db.store.anchor_trust`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store.anchor_trust import IMPORTED_REASON, TRANSCRIPT_IMPORT, trust_verified
from lcm_cli.engine.db.store.base import StoreBase
from lcm_cli.engine.db.store.context_items import INSERT_CONTEXT
from lcm_cli.engine.db.store.ids import message_identity_hash
from lcm_cli.engine.db.store.stamps import iso_timestamp, sqlite_timestamp


def fts_message_text(content: str) -> str | None:
    """The text lossless-claw indexes in ``messages_fts`` for ``content``, or None to skip.

    Blank content is not indexed. An externalized-payload reference (content
    starting ``[LCM File:`` or ``[LCM Tool Output:``) is indexed as its header
    line plus its exploration-summary lines, so the stub's boilerplate does not
    match unrelated searches.
    """
    trimmed = content.strip()
    if not trimmed:
        return None
    if not trimmed.startswith(("[LCM File:", "[LCM Tool Output:")):
        return content
    lines = [line.strip() for line in trimmed.splitlines()]
    lines = [line for line in lines if line]
    kept = [lines[0]]
    in_summary = False
    for line in lines[1:]:
        if line == "Exploration Summary:":
            in_summary = True
        elif line.startswith(("Use lcm_describe", "Call lcm_describe")):
            continue
        elif in_summary:
            kept.append(line)
    return "\n".join(kept)


def _json_text(value: Any) -> str | None:
    # Structured values are stored as compact JSON, like JSON.stringify writes
    # them (no spaces, non-ASCII kept as is); text is stored verbatim.
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_MESSAGE_ROW_KEYS = frozenset(
    {
        "role",
        "content",
        "token_count",
        "created_at",
        "seq",
        "parts",
        "identity_hash",
        "transcript_entry_id",
        "large_content",
        "sender_metadata",
        "stable_event_key",
    }
)

_PART_KEYS = frozenset(
    {
        "part_type",
        "text_content",
        "tool_call_id",
        "tool_name",
        "tool_input",
        "tool_output",
        "metadata",
    }
)

_INSERT_MESSAGE = (
    "INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count,"
    " identity_hash, openclaw_sender_metadata, transcript_entry_id, created_at,"
    " large_content, stable_event_key)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_PART = (
    "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal,"
    " text_content, tool_call_id, tool_name, tool_input, tool_output, metadata)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class MessageWrites(StoreBase):
    """Writes ``messages``, ``message_parts``, ``messages_fts`` and anchor-trust rows."""

    def add_message(
        self,
        conversation_id: int,
        role: str,
        content: str,
        *,
        token_count: int | None = None,
        created_at: str | None = None,
        seq: int | None = None,
        parts: Sequence[Mapping[str, Any]] | None = None,
        identity_hash: str | None = None,
        transcript_entry_id: str | None = None,
        large_content: str | None = None,
        sender_metadata: Mapping[str, Any] | str | None = None,
        stable_event_key: str | None = None,
        in_context: bool = True,
        trust_anchors: bool = True,
    ) -> int:
        """Insert one message (plus parts, FTS row, context item); return its ``message_id``.

        Defaults: ``token_count`` = :func:`estimate_tokens` of content, ``seq`` =
        MAX(seq)+1, ``identity_hash`` = :func:`message_identity_hash`,
        ``created_at`` = now. Each part is a mapping with ``part_type``
        (default ``text``), ``text_content``, ``tool_call_id``, ``tool_name``,
        ``tool_input``, ``tool_output`` and ``metadata`` (JSON-encoded unless text).
        """
        row: dict[str, Any] = {
            "role": role,
            "content": content,
            "token_count": token_count,
            "created_at": created_at,
            "seq": seq,
            "parts": parts,
            "identity_hash": identity_hash,
            "transcript_entry_id": transcript_entry_id,
            "large_content": large_content,
            "sender_metadata": sender_metadata,
            "stable_event_key": stable_event_key,
        }
        ids = self.add_messages(conversation_id, [row], in_context=in_context, trust_anchors=trust_anchors)
        return ids[0]

    def add_messages(
        self,
        conversation_id: int,
        rows: Iterable[Mapping[str, Any]],
        *,
        in_context: bool = True,
        trust_anchors: bool = True,
    ) -> list[int]:
        """Insert many messages at once (same keys and defaults as :meth:`add_message`).

        Each row needs ``role`` and ``content``; other keys are the keyword
        arguments of :meth:`add_message`. Returns the new ids in row order. With
        ``trust_anchors`` (and the anchor-trust table), a row with a ``transcript_entry_id``
        gets 1.0's ``verified`` / ``transcript-import`` anchor-trust row. A part is a
        mapping as for :meth:`add_message`, or already the tuple of its column values
        ``(part_type, text_content, tool_call_id, tool_name, tool_input, tool_output,
        metadata)``, each a string or None (stored as given).
        """
        rows = list(rows)
        if not rows:
            return []
        for row in rows:
            unknown = row.keys() - _MESSAGE_ROW_KEYS
            if unknown:
                raise ValueError(f"unknown message fields: {sorted(unknown)}")
        now = sqlite_timestamp()
        with self.transaction():
            session_id = self._session_id(conversation_id)
            # Ids are assigned here rather than read back one by one so the
            # whole batch can go through executemany. Safe because we hold the
            # write lock; explicit ids above sqlite_sequence advance it too.
            next_id = self.next_message_id()
            next_seq = self._scalar(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?",
                (conversation_id,),
            )
            message_rows: list[tuple[Any, ...]] = []
            part_rows: list[tuple[Any, ...]] = []
            fts_rows: list[tuple[int, str]] = []
            anchors: list[tuple[int, str]] = []
            ids: list[int] = []
            for row in rows:
                role = row["role"]
                content = row["content"]
                seq = row.get("seq")
                if seq is None:
                    seq = next_seq
                next_seq = max(next_seq, seq + 1)
                token_count = row.get("token_count")
                identity_hash = row.get("identity_hash")
                message_id = next_id
                next_id += 1
                ids.append(message_id)
                entry_id = row.get("transcript_entry_id")
                if entry_id:
                    anchors.append((message_id, entry_id))
                message_rows.append(
                    (
                        message_id,
                        conversation_id,
                        seq,
                        role,
                        content,
                        estimate_tokens(content) if token_count is None else token_count,
                        identity_hash or message_identity_hash(role, content),
                        _json_text(row.get("sender_metadata")),
                        entry_id,
                        row.get("created_at") or now,
                        row.get("large_content"),
                        row.get("stable_event_key"),
                    )
                )
                for ordinal, part in enumerate(row.get("parts") or ()):
                    if type(part) is tuple:
                        # Already the columns (part_type, text_content, tool_call_id,
                        # tool_name, tool_input, tool_output, metadata), each str or None
                        # (the importer's readers send parts so, to spare this loop).
                        part_rows.append(
                            (self.part_ids.next(), message_id, session_id, part[0], ordinal, *part[1:])
                        )
                    else:
                        part_rows.append(self._part_row(part, message_id, session_id, ordinal))
                if self.has_messages_fts:
                    text = fts_message_text(content)
                    if text is not None:
                        fts_rows.append((message_id, text))
            self.conn.executemany(_INSERT_MESSAGE, message_rows)
            if anchors and trust_anchors and self.has_anchor_trust:
                trust_verified(
                    self.conn,
                    conversation_id,
                    anchors,
                    source=TRANSCRIPT_IMPORT,
                    reason=IMPORTED_REASON,
                    verified_at=iso_timestamp(),
                )
            if part_rows:
                self.conn.executemany(_INSERT_PART, part_rows)
            if fts_rows:
                self.conn.executemany("INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", fts_rows)
            if in_context:
                ordinal = self._next_ordinal(conversation_id)
                self.conn.executemany(
                    INSERT_CONTEXT,
                    ((conversation_id, ordinal + i, "message", mid, None, now) for i, mid in enumerate(ids)),
                )
            return ids

    def trust_anchor(
        self, conversation_id: int, message_id: int, entry_id: str, *, source: str, reason: str
    ) -> None:
        """Record ``entry_id`` on ``message_id`` as a verified anchor (upsert); nothing without the table."""
        if self.has_anchor_trust:
            trust_verified(
                self.conn,
                conversation_id,
                [(message_id, entry_id)],
                source=source,
                reason=reason,
                verified_at=iso_timestamp(),
            )

    def _part_row(
        self, part: Mapping[str, Any], message_id: int, session_id: str, ordinal: int
    ) -> tuple[Any, ...]:
        unknown = part.keys() - _PART_KEYS
        if unknown:
            raise ValueError(f"unknown message part fields: {sorted(unknown)}")
        return (
            self.part_ids.next(),
            message_id,
            session_id,
            part.get("part_type", "text"),
            ordinal,
            part.get("text_content"),
            part.get("tool_call_id"),
            part.get("tool_name"),
            _json_text(part.get("tool_input")),
            _json_text(part.get("tool_output")),
            _json_text(part.get("metadata")),
        )
