"""A conversation's context items as compaction sees them, and the runtime fresh-tail rule.

Compaction reads the context once per pass as light rows (no message text unless the
stored token count is unusable), finds the protected fresh tail with the runtime rule of
docs/reference/engine.md §4.3 (which differs from the CLI's ``messages tail`` rule in
:mod:`lcm_cli.engine.read.fresh_tail`), and writes a pass back by replacing one inclusive
ordinal range with a summary item (§4.10).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from lcm_cli.engine.core.jscompat import stringify, trim
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.pending_state import STALE_BY_COMPACTION, invalidate_open_batches


class Item(NamedTuple):
    """One context item with what compaction needs to plan a pass."""

    ordinal: int
    is_message: bool
    message_id: int | None
    summary_id: str | None
    role: str | None  # stored message role
    tokens: int  # leaf-source tokens (messages) or summary tokens (§4.1)
    depth: int | None  # summaries only
    created_at: str | None
    stored: int = 0  # the stored token_count (NULL as 0), what the threshold counts (§1.5)


_ITEMS_SQL = """
SELECT ci.ordinal, ci.item_type, ci.message_id, ci.summary_id,
       m.role, m.token_count AS m_tokens, m.created_at AS m_created,
       CASE WHEN m.token_count > 0 THEN NULL ELSE m.content END AS m_content,
       CASE WHEN m.role = 'user' THEN m.openclaw_sender_metadata ELSE NULL END AS sender,
       s.depth, s.token_count AS s_tokens,
       CASE WHEN s.token_count > 0 THEN NULL ELSE s.content END AS s_content,
       s.created_at AS s_created
FROM context_items ci
LEFT JOIN messages m ON m.message_id = ci.message_id
LEFT JOIN summaries s ON s.summary_id = ci.summary_id
WHERE ci.conversation_id = ? AND ci.ordinal > ? AND ci.ordinal < ?
ORDER BY ci.ordinal {order}
LIMIT ?
"""
_NO_LIMIT = -1
_PAGE = 512
_FAR = 1 << 62


def speaker_line(sender_metadata: str | None) -> str:
    """The leaf-source header suffix for a user row with sender metadata ('' without)."""
    if not sender_metadata:
        return ""
    try:
        parsed = json.loads(sender_metadata)
    except ValueError:
        return ""
    if not isinstance(parsed, dict):
        return ""
    fields = {
        k: parsed[k]
        for k in ("senderId", "senderName", "senderUsername")
        if isinstance(parsed.get(k), str) and trim(parsed[k])
    }
    if not fields:
        return ""
    return " | " + sender_label(fields)


def sender_label(fields: dict[str, Any]) -> str:
    """``speaker (untrusted metadata): {...}``, the part of the header a leaf source costs."""
    return "speaker (untrusted metadata): " + stringify(fields)


def _item(row: Sequence[Any]) -> Item | None:
    (ordinal, kind, mid, sid, role, m_tokens, m_created, m_content, sender) = row[:9]
    depth, s_tokens, s_content, s_created = row[9:]
    if kind == "message":
        if role is None:
            return None
        tokens = m_tokens if m_tokens and m_tokens > 0 else estimate_tokens(m_content or "")
        if sender and role == "user":
            line = speaker_line(sender)
            if line:
                # The leaf source costs the speaker label only, not the " | " joining it.
                tokens += estimate_tokens(line[3:])
        return Item(
            ordinal, True, mid, None, role, tokens, None, m_created, m_tokens if m_tokens is not None else 0
        )
    if depth is None:
        return None
    tokens = s_tokens if s_tokens and s_tokens > 0 else estimate_tokens(s_content or "")
    return Item(
        ordinal, False, None, sid, None, tokens, depth, s_created, s_tokens if s_tokens is not None else 0
    )


def _query(
    conn: sqlite3.Connection, conversation_id: int, after: int, before: int, limit: int, *, newest_first: bool
) -> list[Item]:
    sql = _ITEMS_SQL.format(order="DESC" if newest_first else "ASC")
    rows = conn.execute(sql, (conversation_id, after, before, limit)).fetchall()
    return [item for item in map(_item, rows) if item is not None]


def load_items(
    conn: sqlite3.Connection, conversation_id: int, *, after: int = -1, before: int | None = None
) -> list[Item]:
    """Context items with ``after < ordinal < before``, in ordinal order; dangling references skipped."""
    return _query(
        conn, conversation_id, after, _FAR if before is None else before, _NO_LIMIT, newest_first=False
    )


def iter_items(
    conn: sqlite3.Connection, conversation_id: int, *, after: int = -1, before: int | None = None
) -> Iterator[Item]:
    """Like :func:`load_items`, read a page at a time so a caller that stops early reads little.

    Each page is fetched whole: no statement stays open across the caller's writes.
    """
    end = _FAR if before is None else before
    while True:
        rows = conn.execute(_ITEMS_SQL.format(order="ASC"), (conversation_id, after, end, _PAGE)).fetchall()
        for row in rows:
            item = _item(row)
            if item is not None:
                yield item
        if len(rows) < _PAGE:
            return
        after = rows[-1][0]


def find_boundary(conn: sqlite3.Connection, conversation_id: int, count: int, max_tokens: int | None) -> int:
    """The fresh-tail boundary read newest first, a page at a time (same rule as :func:`tail_boundary`)."""
    newest: list[Item] = []
    before = _FAR
    while True:
        page = _query(conn, conversation_id, -1, before, _PAGE, newest_first=True)
        if not page:
            break
        newest.extend(page)
        before = page[-1].ordinal
        if len(page) < _PAGE:
            break
        # Enough read once the newest user message and `count` messages after it are in.
        raw = [i for i in newest if i.is_message]
        users = [i for i in raw if i.role == "user"]
        if users and len(raw) >= count + 1 and raw.index(users[0]) + count < len(raw):
            break
    newest.reverse()
    return tail_boundary(newest, count, max_tokens)


def tail_boundary(
    items: Sequence[Any],
    count: int,
    max_tokens: int | None,
    *,
    is_message: Callable[[Any], bool] = lambda i: i.is_message,
    ordinal: Callable[[Any], int] = lambda i: i.ordinal,
    role: Callable[[Any], str | None] = lambda i: i.role,
    tokens: Callable[[Any], int] = lambda i: i.tokens,
) -> int:
    """The fresh-tail boundary ordinal (items at or after it are protected), §4.3.

    Raw messages only, newest first. Until the newest ``user`` message is inside, the
    count and the token cap are ignored; the newest message is always protected. With
    no tail the boundary lies past the last item.
    """
    end = (ordinal(items[-1]) + 1) if items else 0
    raw = [i for i in items if is_message(i)]
    if count <= 0 or not raw:
        return end
    newest_user = next((ordinal(i) for i in reversed(raw) if role(i) == "user"), None)
    boundary = end
    protected = 0
    total = 0
    for item in reversed(raw):
        user_protected = newest_user is None or boundary <= newest_user
        if user_protected and protected >= count:
            break
        cost = tokens(item)
        if user_protected and protected > 0 and max_tokens is not None and total + cost > max_tokens:
            break
        boundary = ordinal(item)
        protected += 1
        total += cost
    return boundary


def stored_context_tokens(items: Sequence[Item]) -> int:
    """Σ stored ``token_count`` of the context's messages and summaries (§1.5).

    No estimates and no sender lines: the reference sums the columns as stored.
    """
    return sum(i.stored for i in items)


def chunk_is_intact(conn: sqlite3.Connection, conversation_id: int, chunk: Sequence[Item]) -> bool:
    """True when the chunk's ordinal range still holds exactly the chunk's items.

    Checked inside the write transaction: another writer may have compacted or pruned
    the conversation while the summarizer was running.
    """
    low, high = chunk[0].ordinal, chunk[-1].ordinal
    rows = conn.execute(
        "SELECT ordinal, message_id, summary_id FROM context_items"
        " WHERE conversation_id = ? AND ordinal BETWEEN ? AND ? ORDER BY ordinal",
        (conversation_id, low, high),
    ).fetchall()
    expected = [(i.ordinal, i.message_id, i.summary_id) for i in chunk]
    return [tuple(r) for r in rows] == expected


def replace_range(
    conn: sqlite3.Connection, conversation_id: int, low: int, high: int, summary_id: str
) -> None:
    """Replace every item in the inclusive ordinal range by one summary item; renumber (§4.10).

    Runs inside the caller's transaction. When the ordinals were 0..N-1 before (the usual
    case) the items after the range move down in two set-based updates; otherwise (gaps
    left by `/new` pruning) every item is renumbered in order.
    """
    invalidate_open_batches(conn, conversation_id, STALE_BY_COMPACTION)
    conn.execute(
        "DELETE FROM context_items WHERE conversation_id = ? AND ordinal BETWEEN ? AND ?",
        (conversation_id, low, high),
    )
    conn.execute(
        "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id, created_at)"
        " VALUES (?, ?, 'summary', NULL, ?, datetime('now'))",
        (conversation_id, low, summary_id),
    )
    count, top = conn.execute(
        "SELECT COUNT(*), COALESCE(MAX(ordinal), -1) FROM context_items WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    if count == top + 1:
        return
    shift = high - low
    below = conn.execute(
        "SELECT COUNT(*) FROM context_items WHERE conversation_id = ? AND ordinal <= ?",
        (conversation_id, low),
    ).fetchone()[0]
    if below == low + 1 and count == top + 1 - shift:
        try:
            # SQLite walks the primary-key index upward, so each row moves into a slot
            # already freed; one statement, half the index work of two.
            conn.execute(
                "UPDATE context_items SET ordinal = ordinal - ? WHERE conversation_id = ? AND ordinal > ?",
                (shift, conversation_id, low),
            )
            return
        except sqlite3.IntegrityError:
            # Another visiting order collided: the failed statement alone was undone.
            # Negative temporaries first, then back.
            conn.execute(
                "UPDATE context_items SET ordinal = -(ordinal - ?) - 1 WHERE conversation_id = ? AND ordinal > ?",
                (shift, conversation_id, low),
            )
    else:
        ordinals = [
            r[0]
            for r in conn.execute(
                "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
                (conversation_id,),
            )
        ]
        conn.executemany(
            "UPDATE context_items SET ordinal = ? WHERE conversation_id = ? AND ordinal = ?",
            ((-(i + 1), conversation_id, old) for i, old in enumerate(ordinals)),
        )
    conn.execute(
        "UPDATE context_items SET ordinal = -ordinal - 1 WHERE conversation_id = ? AND ordinal < 0",
        (conversation_id,),
    )
