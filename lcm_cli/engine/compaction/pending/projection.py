"""The context as lossless-claw 1.0's pending coordinator sees it, and its fingerprints.

A batch records a fingerprint of the context range it was planned over; every node
records a hash of its own source items. Publication recomputes both from the live
context and refuses a batch whose source moved, so either engine can publish a batch the
other planned only if both derive the same digests from the same rows. The digests are
SHA-256 over a prefix and NUL-separated parts (UTF-8, a lone surrogate as U+FFFD, as Node
hashes a string); numbers are written as JavaScript writes them and timestamps as
``Date.toISOString()`` of the stored text read as UTC.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from lcm_cli.engine.core.jscompat import js_number_text, utf8_safe
from lcm_cli.engine.db.store.stamps import iso_timestamp, parse_timestamp


def digest_text(prefix: str, parts: Iterable[str]) -> str:
    """Hex SHA-256 of ``prefix`` then ``\\0part`` for each part."""
    h = hashlib.sha256(utf8_safe(prefix).encode("utf-8"))
    for part in parts:
        h.update(b"\0")
        h.update(utf8_safe(part).encode("utf-8"))
    return h.hexdigest()


def short_digest(prefix: str, parts: Iterable[str]) -> str:
    """The first 16 hex digits of :func:`digest_text`."""
    return digest_text(prefix, parts)[:16]


def js_text(value: object) -> str:
    """``String(value)`` for a stored number or text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number_text(float(value)) if isinstance(value, float) else str(value)
    if value is None:
        return "null"
    return str(value)


def iso_of(stored: str | None) -> str:
    """``parseUtcTimestamp(stored).toISOString()`` (1.0 would throw on unreadable text)."""
    moment = parse_timestamp(stored)
    return iso_timestamp(moment) if moment is not None else "Invalid Date"


def non_negative(value: object) -> int:
    """1.0's ``normalizeNonNegativeInteger``: a finite number >= 0, floored; else 0."""
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    ):
        return math.floor(value)
    return 0


class SnapshotItem(NamedTuple):
    """One context item with its 1.0 source fingerprint."""

    ordinal: int
    is_message: bool
    token_count: int
    fingerprint: str
    message_id: int | None = None
    role: str | None = None
    summary_id: str | None = None
    depth: int | None = None
    kind: str | None = None


class Snapshot(NamedTuple):
    """The projection 1.0 plans and validates against."""

    items: list[SnapshotItem]
    projection_fingerprint: str
    fresh_tail_start: int | None
    compactable_start: int | None
    compactable_end: int | None


_CONTEXT_SQL = """
SELECT ci.ordinal, ci.item_type, m.message_id, m.seq, m.role, m.token_count, m.created_at, m.content,
       s.summary_id, s.depth, s.token_count, s.created_at, s.content, s.kind
FROM context_items ci
LEFT JOIN messages m ON ci.item_type = 'message' AND m.message_id = ci.message_id
LEFT JOIN summaries s ON ci.item_type = 'summary' AND s.summary_id = ci.summary_id
WHERE ci.conversation_id = ?
ORDER BY ci.ordinal
"""


_LIGHT_SQL = """
SELECT ci.ordinal, ci.item_type, m.message_id, m.role, m.token_count, s.summary_id, s.depth, s.token_count, s.kind
FROM context_items ci
LEFT JOIN messages m ON ci.item_type = 'message' AND m.message_id = ci.message_id
LEFT JOIN summaries s ON ci.item_type = 'summary' AND s.summary_id = ci.summary_id
WHERE ci.conversation_id = ?
ORDER BY ci.ordinal
"""


def read_light_items(conn: sqlite3.Connection, conversation_id: int) -> list[SnapshotItem]:
    """The context items without fingerprints (no text read): enough to see whether a
    frontier could be published, not to validate one."""
    items: list[SnapshotItem] = []
    for r in conn.execute(_LIGHT_SQL, (conversation_id,)):
        if r[1] == "message" and r[2] is not None:
            items.append(SnapshotItem(int(r[0]), True, non_negative(r[4]), "", int(r[2]), str(r[3])))
        elif r[1] == "summary" and r[5] is not None:
            items.append(
                SnapshotItem(
                    int(r[0]), False, non_negative(r[7]), "", None, None, str(r[5]), int(r[6] or 0), r[8]
                )
            )
    return items


def read_items(conn: sqlite3.Connection, conversation_id: int) -> list[SnapshotItem]:
    """Every context item whose row exists, in ordinal order, fingerprinted as 1.0 does."""
    items: list[SnapshotItem] = []
    for row in conn.execute(_CONTEXT_SQL, (conversation_id,)):
        ordinal, item_type = int(row[0]), row[1]
        if item_type == "message" and row[2] is not None:
            mid, seq, role, tokens, created, content = row[2], row[3], row[4], row[5], row[6], row[7]
            fingerprint = digest_text(
                "pending-message-item",
                [
                    str(ordinal),
                    str(mid),
                    js_text(seq),
                    str(role),
                    js_text(tokens),
                    iso_of(created),
                    digest_text("message-content", [str(content if content is not None else "")]),
                ],
            )
            items.append(SnapshotItem(ordinal, True, non_negative(tokens), fingerprint, int(mid), str(role)))
        elif item_type == "summary" and row[8] is not None:
            sid, depth, tokens, created, content, kind = row[8], row[9], row[10], row[11], row[12], row[13]
            fingerprint = digest_text(
                "pending-summary-item",
                [
                    str(ordinal),
                    str(sid),
                    js_text(depth),
                    js_text(tokens),
                    iso_of(created),
                    digest_text("summary-content", [str(content if content is not None else "")]),
                ],
            )
            items.append(
                SnapshotItem(
                    ordinal,
                    False,
                    non_negative(tokens),
                    fingerprint,
                    None,
                    None,
                    str(sid),
                    int(depth or 0),
                    kind,
                )
            )
    return items


def fresh_tail_start(
    items: Sequence[SnapshotItem], fresh_tail_count: int, fresh_tail_max_tokens: int | None
) -> float:
    """1.0's ``resolvePendingFreshTailOrdinal``: where the protected tail begins (inf: none).

    Messages are counted back from the newest up to ``fresh_tail_count`` (a token cap may
    stop it earlier, never before the newest message), and always far enough back to keep
    the latest user message.
    """
    count = non_negative(fresh_tail_count)
    if count <= 0:
        return math.inf
    cap = max(0, math.floor(fresh_tail_max_tokens)) if fresh_tail_max_tokens is not None else None
    messages = [i for i in items if i.is_message]
    latest_user = next((i.ordinal for i in reversed(messages) if i.role == "user"), None)
    protected = protected_tokens = 0
    start: float = math.inf
    for item in reversed(messages):
        user_kept = latest_user is None or start <= latest_user
        if user_kept and protected >= count:
            break
        tokens = non_negative(item.token_count)
        if user_kept and protected > 0 and cap is not None and protected_tokens + tokens > cap:
            break
        protected += 1
        protected_tokens += tokens
        start = item.ordinal
    return start


def snapshot(
    conn: sqlite3.Connection,
    conversation_id: int,
    *,
    fresh_tail_count: int,
    fresh_tail_max_tokens: int | None,
) -> Snapshot:
    """The projection of one conversation: items, compactable range, projection fingerprint."""
    items = read_items(conn, conversation_id)
    tail = fresh_tail_start(items, fresh_tail_count, fresh_tail_max_tokens)
    compactable = [i for i in items if i.ordinal < tail]
    fingerprint = digest_text(
        "pending-projection",
        [str(conversation_id), _js_ordinal(tail), *(f"{i.ordinal}:{i.fingerprint}" for i in compactable)],
    )
    return Snapshot(
        items,
        fingerprint,
        None if math.isinf(tail) else int(tail),
        min(i.ordinal for i in compactable) if compactable else None,
        max(i.ordinal for i in compactable) if compactable else None,
    )


def _js_ordinal(value: float) -> str:
    return "Infinity" if math.isinf(value) else str(int(value))


def batch_fingerprint(conversation_id: int, items: Sequence[SnapshotItem], start: int, end: int) -> str:
    """1.0's ``buildBatchSourceFingerprint`` over the items in ``start..end``."""
    inside = sorted((i for i in items if start <= i.ordinal <= end), key=lambda i: i.ordinal)
    return digest_text(
        "pending-projection-range",
        [str(conversation_id), str(start), str(end), *(f"{i.ordinal}:{i.fingerprint}" for i in inside)],
    )


def node_source_fingerprint(fingerprints: Sequence[str]) -> str:
    """A node's ``source_fingerprint``."""
    return digest_text("pending-node-source", fingerprints)


def node_context_hash(start: int, end: int, fingerprints: Sequence[str]) -> str:
    """A node's ``source_context_hash``."""
    return digest_text("pending-node-context", [str(start), str(end), *fingerprints])
