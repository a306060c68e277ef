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


# Every summary beneath one (parameters: its id, the conversation, the depth limit), as
# rows walk(sid, path, level); path orders them depth-first by source ordinal.
_WALK = """WITH RECURSIVE walk(sid, path, level) AS (
             SELECT ?, '', 0
             UNION ALL
             SELECT sp.parent_summary_id, walk.path || printf('%06d.', sp.ordinal), walk.level + 1
             FROM walk JOIN summary_parents sp ON sp.summary_id = walk.sid
             JOIN summaries c ON c.summary_id = sp.parent_summary_id AND c.conversation_id = ?
             WHERE walk.level < ?)
           """


def subtree(ctx: Context, summary_id: str, conversation_id: int) -> list[Any]:
    """The summary and every summary beneath it: rows ``(summary_id, path, level)``, walk order."""
    return ctx.query(
        _WALK + "SELECT sid AS summary_id, path, level FROM walk ORDER BY path",
        (summary_id, conversation_id, MAX_DEPTH),
    )


def source_messages(ctx: Context, summary_id: str, conversation_id: int) -> list[dict[str, Any]]:
    """Every raw message under ``summary_id``, in summarized order, without content.

    Each item: ``messageId, seq, role, tokenCount, createdAt, leafSummaryId``. Two queries
    on purpose: joined in one, SQLite may build a Bloom filter over the whole messages
    table (a full scan) to serve a few hundred primary-key lookups.
    """
    links = ctx.query(
        _WALK
        + """SELECT sm.message_id, walk.sid FROM walk JOIN summary_messages sm ON sm.summary_id = walk.sid
           ORDER BY walk.path, sm.ordinal""",
        (summary_id, conversation_id, MAX_DEPTH),
    )
    order: list[tuple[int, str]] = []
    seen: set[int] = set()
    for message_id, leaf in links:
        if message_id not in seen:  # a message reached twice (abnormal data) is listed once
            seen.add(message_id)
            order.append((message_id, leaf))
    rows: dict[int, Any] = {}
    for start in range(0, len(order), 500):
        chunk = [mid for mid, _ in order[start : start + 500]]
        marks = ",".join("?" for _ in chunk)
        for r in ctx.query(
            f"""SELECT message_id, conversation_id, seq, role, token_count, created_at FROM messages
                WHERE message_id IN ({marks})""",
            chunk,
        ):
            rows[r[0]] = r
    out = []
    for message_id, leaf in order:
        found = rows.get(message_id)
        if found is None or found[1] != conversation_id:
            continue  # dangling or cross-conversation link
        r = found
        out.append(
            {
                "messageId": message_id,
                "seq": r[2],
                "role": r[3],
                "tokenCount": r[4],
                "createdAt": r[5],
                "leafSummaryId": leaf,
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
