"""Walking the summary DAG downwards: from a summary to the raw messages it stands for.

``summary_parents`` is named inverted (database.md §3.6): ``summary_id`` is the higher
node and ``parent_summary_id`` one of its sources. The walk follows sources in edge
ordinal order, depth first, so the messages come out in the order they were summarized.
Links into other conversations are ignored, and a message reached twice (abnormal data)
is listed once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context

if TYPE_CHECKING:
    from lcm_cli.engine.recall.records import DagMessage

MAX_DEPTH = 64  # far beyond any real DAG; stops a cycle in corrupt data
CHUNK = 500  # ids per IN (...) list


def _chunks(ids: list[Any]) -> list[list[Any]]:
    return [ids[start : start + CHUNK] for start in range(0, len(ids), CHUNK)]


def _marks(chunk: list[Any]) -> str:
    return ",".join("?" for _ in chunk)


def subtree(ctx: Context, summary_id: str, conversation_id: int) -> list[dict[str, Any]]:
    """The summary and every summary beneath it: ``{summary_id, path, level}``, walk order.

    ``path`` orders them depth first by source ordinal (``000003.000001.``); a summary
    reached by two routes is listed once per route, as far as :data:`MAX_DEPTH` levels.

    Walked one level at a time, each level one primary-key lookup per node, so the cost
    follows the subtree, not the table. (As one recursive query SQLite cannot tell how
    big the walk is, and may build a Bloom filter over every summary or link at each
    step: a scan of the whole table per level.)
    """
    rows: list[dict[str, Any]] = [{"summary_id": summary_id, "path": "", "level": 0}]
    frontier = rows
    for level in range(1, MAX_DEPTH + 1):
        sources = _sources_of(ctx, list(dict.fromkeys(r["summary_id"] for r in frontier)), conversation_id)
        frontier = [
            {"summary_id": child, "path": node["path"] + step, "level": level}
            for node in frontier
            for child, step in sources.get(node["summary_id"], ())
        ]
        if not frontier:
            break
        rows += frontier
    rows.sort(key=lambda r: str(r["path"]))  # stable: routes to the same path keep walk order
    return rows


def _sources_of(
    ctx: Context, summary_ids: list[str], conversation_id: int
) -> dict[str, list[tuple[str, str]]]:
    """summary id -> its source summaries of the same conversation, ``(id, path step)`` by ordinal."""
    out: dict[str, list[tuple[str, str]]] = {}
    for chunk in _chunks(summary_ids):
        for higher, source, step in ctx.query(
            f"""SELECT sp.summary_id, sp.parent_summary_id, printf('%06d.', sp.ordinal)
                FROM summary_parents sp CROSS JOIN summaries c ON c.summary_id = sp.parent_summary_id
                WHERE sp.summary_id IN ({_marks(chunk)}) AND c.conversation_id = ?
                ORDER BY sp.summary_id, sp.ordinal, sp.parent_summary_id""",
            (*chunk, conversation_id),
        ):
            out.setdefault(higher, []).append((source, step))
    return out


def source_messages(
    ctx: Context, summary_id: str, conversation_id: int, walk: list[dict[str, Any]] | None = None
) -> list[DagMessage]:
    """Every raw message under ``summary_id``, in summarized order, without content.

    Each item: ``messageId, seq, role, tokenCount, createdAt, leafSummaryId``. ``walk`` is
    the summary's :func:`subtree` when the caller has it. Links, then messages, are read
    by id in separate queries: joined in one, SQLite may build a Bloom filter over the
    whole messages table (a full scan) to serve a few hundred primary-key lookups.
    """
    if walk is None:
        walk = subtree(ctx, summary_id, conversation_id)
    leaf_messages: dict[str, list[int]] = {}
    for chunk in _chunks(list(dict.fromkeys(r["summary_id"] for r in walk))):
        for leaf, message_id in ctx.query(
            f"""SELECT summary_id, message_id FROM summary_messages WHERE summary_id IN ({_marks(chunk)})
                ORDER BY summary_id, ordinal, message_id""",
            chunk,
        ):
            leaf_messages.setdefault(leaf, []).append(message_id)
    links = [
        (message_id, r["summary_id"]) for r in walk for message_id in leaf_messages.get(r["summary_id"], ())
    ]
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
    out: list[DagMessage] = []
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
