"""Walking the summary DAG downwards: from a summary to the raw messages it stands for.

``summary_parents`` is named inverted (database.md §3.6): ``summary_id`` is the higher
node and ``parent_summary_id`` one of its sources. The walk follows sources in edge
ordinal order, depth first, so the messages come out in the order they were summarized.
Links into other conversations are ignored, and a message reached twice (abnormal data)
is listed once.
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.context import Context

MAX_DEPTH = 64  # far beyond any real DAG; stops a cycle in corrupt data


def subtree(ctx: Context, summary_id: str, conversation_id: int) -> list[Any]:
    """The summary and every summary beneath it: rows ``(summary_id, path, level)``, walk order."""
    return ctx.query(
        """WITH RECURSIVE walk(sid, path, level) AS (
             SELECT ?, '', 0
             UNION ALL
             SELECT sp.parent_summary_id, walk.path || printf('%06d.', sp.ordinal), walk.level + 1
             FROM walk JOIN summary_parents sp ON sp.summary_id = walk.sid
             JOIN summaries c ON c.summary_id = sp.parent_summary_id AND c.conversation_id = ?
             WHERE walk.level < ?)
           SELECT sid AS summary_id, path, level FROM walk ORDER BY path""",
        (summary_id, conversation_id, MAX_DEPTH),
    )


def source_messages(ctx: Context, summary_id: str, conversation_id: int) -> list[dict[str, Any]]:
    """Every raw message under ``summary_id``, in summarized order, without content.

    Each item: ``messageId, seq, role, tokenCount, createdAt, leafSummaryId``.
    """
    rows = ctx.query(
        """WITH RECURSIVE walk(sid, path, level) AS (
             SELECT ?, '', 0
             UNION ALL
             SELECT sp.parent_summary_id, walk.path || printf('%06d.', sp.ordinal), walk.level + 1
             FROM walk JOIN summary_parents sp ON sp.summary_id = walk.sid
             JOIN summaries c ON c.summary_id = sp.parent_summary_id AND c.conversation_id = ?
             WHERE walk.level < ?)
           SELECT m.message_id, m.seq, m.role, m.token_count, m.created_at, walk.sid
           FROM walk JOIN summary_messages sm ON sm.summary_id = walk.sid
           CROSS JOIN messages m ON m.message_id = sm.message_id
           WHERE m.conversation_id = ?
           ORDER BY walk.path, sm.ordinal""",
        (summary_id, conversation_id, MAX_DEPTH, conversation_id),
    )
    seen: set[int] = set()
    out = []
    for r in rows:
        if r[0] in seen:
            continue
        seen.add(r[0])
        out.append(
            {
                "messageId": r[0],
                "seq": r[1],
                "role": r[2],
                "tokenCount": r[3],
                "createdAt": r[4],
                "leafSummaryId": r[5],
            }
        )
    return out


def message_contents(ctx: Context, message_ids: list[int]) -> dict[int, str]:
    """Content of the given messages, by id."""
    if not message_ids:
        return {}
    marks = ",".join("?" for _ in message_ids)
    rows = ctx.query(f"SELECT message_id, content FROM messages WHERE message_id IN ({marks})", message_ids)
    return {r[0]: r[1] for r in rows}
