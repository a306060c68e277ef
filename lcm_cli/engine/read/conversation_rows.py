"""Conversation rows: identity, selection by id or session key, and per-conversation stats.

Shared by `conversations`, `messages` and `summaries`. Columns that older databases lack
are probed and read as NULL.
"""

from __future__ import annotations

from collections.abc import Sequence

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import SQLITE_MAX_INT, Selector
from lcm_cli.engine.db import totals
from lcm_cli.engine.read.fresh_tail import select_tail, tail_limits

if TYPE_CHECKING:
    from typing import Any

    from lcm_cli.engine.read.records import ConversationIdentity, ConversationItem, SummaryDepth

CORE_TABLES = ("conversations", "messages", "summaries", "context_items")


def require_lcm_tables(ctx: Context) -> None:
    """Fail clearly when the file is SQLite but not an lcm.db."""
    missing = [t for t in CORE_TABLES if not ctx.probe.has_table(t)]
    if missing:
        raise LcmError(
            "DATABASE_QUERY_FAILED",
            f"Database query failed: {ctx.database_path} has no {', '.join(missing)} "
            "table; is --db pointing at an LCM database (lcm.db)? Point --db (or --openclaw-dir) "
            "at the agent's lcm.db.",
            {"databasePath": ctx.database_path, "reason": "not-lcm-database", "missingTables": missing},
        )


def identity_columns(ctx: Context, prefix: str = "c.") -> str:
    """SELECT list for the conversation identity, NULL for columns this file lacks."""
    probe = ctx.probe
    return ", ".join(
        [
            f"{prefix}conversation_id AS conversation_id",
            f"{prefix}session_id AS session_id",
            probe.col("conversations", "session_key", prefix=prefix),
            probe.col("conversations", "active", prefix=prefix),
            probe.col("conversations", "archived_at", prefix=prefix),
            f"{prefix}title AS title",
            probe.col("conversations", "bootstrapped_at", prefix=prefix),
            f"{prefix}created_at AS created_at",
            f"{prefix}updated_at AS updated_at",
        ]
    )


def identity_of(row: Any) -> ConversationIdentity:
    """Map a conversation row to the identity object (``active`` as a boolean)."""
    active = row["active"]
    return {
        "conversationId": row["conversation_id"],
        "sessionId": row["session_id"],
        "sessionKey": row["session_key"],
        # No `active` column means a database older than archiving: every row is live.
        "active": True if active is None else active == 1,
        "archivedAt": row["archived_at"],
        "title": row["title"],
        "bootstrappedAt": row["bootstrapped_at"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def find_conversation(ctx: Context, selector: Selector) -> Any:
    """The conversation row a selector names, or CONVERSATION_NOT_FOUND.

    A session key picks the active row first, then the newest ``created_at``.
    """
    require_lcm_tables(ctx)
    columns = identity_columns(ctx)
    if selector.kind == "conversationId":
        # An id past SQLite's integer range names no row (and cannot be bound).
        row = (
            ctx.query_one(
                f"SELECT {columns} FROM conversations c WHERE c.conversation_id = ?", (selector.value,)
            )
            if int(selector.value) <= SQLITE_MAX_INT
            else None
        )
    elif ctx.probe.has_column("conversations", "session_key"):
        order = "c.active DESC, " if ctx.probe.has_column("conversations", "active") else ""
        row = ctx.query_one(
            f"""SELECT {columns} FROM conversations c WHERE c.session_key = ?
                ORDER BY {order}julianday(c.created_at) DESC, c.conversation_id DESC LIMIT 1""",
            (selector.value,),
        )
    else:
        row = None  # too old to have session keys: nothing can match one
    if row is None:
        what = "id" if selector.kind == "conversationId" else "session key"
        raise LcmError(
            "CONVERSATION_NOT_FOUND",
            f"No conversation matched {what} {selector.value}. List them with `lcm conversations list`.",
            selector.to_dict(),
        )
    return row


def totals_meta(ctx: Context) -> dict[str, Any] | None:
    """None when the trigger-maintained totals can be read; else the envelope meta saying why not.

    A read opens the file read-only, so it cannot rebuild stale totals: it scans for this
    call instead, and the next lcm writer (any write command, or `lcm doctor --apply`)
    rebuilds them.
    """
    reason = totals.staleness(ctx.db)
    if reason is None:
        return None
    return {"totals": {"source": "scan", "reason": reason, "rebuiltBy": "the next lcm write"}}


def summary_depths(
    ctx: Context, conversation_id: int | None = None, *, fresh: bool = False
) -> list[SummaryDepth]:
    """Summary count and tokens per (kind, depth), ordered depth then kind.

    ``fresh``: read them from the trigger-maintained totals (see :func:`totals_meta`).
    """
    where = "" if conversation_id is None else "WHERE conversation_id = ?"
    params = () if conversation_id is None else (conversation_id,)
    if fresh:
        where = "WHERE summary_count > 0" + ("" if conversation_id is None else " AND conversation_id = ?")
        rows = ctx.query(
            f"""SELECT kind, depth, SUM(summary_count) AS count, SUM(summary_tokens) AS tokens
                FROM {totals.SUMMARY_TOTALS} {where} GROUP BY kind, depth ORDER BY depth ASC, kind ASC""",
            params,
        )
    else:
        rows = ctx.query(
            f"""SELECT kind, depth, COUNT(*) AS count, COALESCE(SUM(token_count), 0) AS tokens
                FROM summaries {where} GROUP BY kind, depth ORDER BY depth ASC, kind ASC""",
            params,
        )
    return [
        {"kind": r["kind"], "depth": r["depth"], "count": r["count"], "tokens": r["tokens"]} for r in rows
    ]


def _in_clause(ids: Sequence[int]) -> str:
    return ",".join("?" for _ in ids)


# lcm's covering index on messages (conversation_id, created_at, token_count); files
# written only by lossless-claw lack it.
MESSAGE_STATS_INDEX = "lcm_messages_conv_time_tokens_idx"
#: lossless-claw's own (conversation_id, seq) index: every file it wrote has it.
SEQ_INDEX = "messages_conv_seq_idx"
# schema.SUMMARY_TOKENS_INDEX (m006), spelled here so reads need not import the schema.
SUMMARY_TOKENS_INDEX = "lcm_summaries_tokens_idx"


def summaries_by_id(ctx: Context, alias: str = "s") -> str:
    """``summaries <alias>`` for a join on ``summary_id`` that reads only ``token_count``.

    With lcm's covering index the join reads index pages alone (the planner prefers the
    unique id index, which then needs each summary's row, so it is named); a file without
    it joins as before.
    """
    if ctx.probe.has_index(SUMMARY_TOKENS_INDEX):
        return f"summaries {alias} INDEXED BY {SUMMARY_TOKENS_INDEX}"
    return f"summaries {alias}"


def _message_stats(ctx: Context, ids: list[int], fresh: bool) -> list[Any]:
    """Message count, tokens and time range per conversation, shaped for what the file has.

    Fresh totals: one primary-key lookup per conversation. Else, with lcm's covering
    index: counts and sums from the index, the time range by two index seeks per
    conversation. Without it: one grouped pass, the cheapest plan there.
    """
    marks = _in_clause(ids)
    if fresh:
        return ctx.query(
            f"""SELECT conversation_id, message_count AS n, message_tokens AS tokens,
                       earliest_at AS earliest, latest_at AS latest
                FROM {totals.CONVERSATION_TOTALS} WHERE conversation_id IN ({marks}) AND message_count > 0""",
            ids,
        )
    if not ctx.probe.has_index(MESSAGE_STATS_INDEX):
        # In (conversation_id, seq) order the rows come in about the order they were written,
        # so the table is read nearly sequentially; left to choose, SQLite may take the
        # identity-hash index and read the same rows in random order (2x slower at 1M).
        hint = f"INDEXED BY {SEQ_INDEX}" if ctx.probe.has_index(SEQ_INDEX) else ""
        return ctx.query(
            f"""SELECT conversation_id, COUNT(*) AS n, COALESCE(SUM(token_count), 0) AS tokens,
                       MIN(created_at) AS earliest, MAX(created_at) AS latest
                FROM messages {hint} WHERE conversation_id IN ({marks}) GROUP BY conversation_id""",
            ids,
        )
    return ctx.query(
        f"""SELECT conversation_id, COUNT(*) AS n, COALESCE(SUM(token_count), 0) AS tokens,
                   (SELECT MIN(created_at) FROM messages e WHERE e.conversation_id = m.conversation_id) AS earliest,
                   (SELECT MAX(created_at) FROM messages l WHERE l.conversation_id = m.conversation_id) AS latest
            FROM messages m WHERE conversation_id IN ({marks}) GROUP BY conversation_id""",
        ids,
    )


_SUMMARY_STATS_SCAN = """SELECT conversation_id, COUNT(*) AS n, COALESCE(SUM(token_count), 0) AS tokens,
       COALESCE(SUM(source_message_token_count), 0) AS sources,
       MIN(COALESCE(earliest_at, created_at)) AS earliest,
       MAX(COALESCE(latest_at, created_at)) AS latest, MAX(depth) AS max_depth
FROM summaries WHERE conversation_id IN ({marks}) GROUP BY conversation_id"""

_SUMMARY_STATS_TOTALS = f"""SELECT conversation_id, SUM(summary_count) AS n, SUM(summary_tokens) AS tokens,
       SUM(source_tokens) AS sources, MIN(earliest_at) AS earliest, MAX(latest_at) AS latest,
       MAX(depth) AS max_depth
FROM {totals.SUMMARY_TOTALS} WHERE conversation_id IN ({{marks}}) AND summary_count > 0
GROUP BY conversation_id"""


def conversation_stats(ctx: Context, rows: Sequence[Any], *, fresh: bool = False) -> list[ConversationItem]:
    """List items (identity + message/summary/context/fresh-tail figures) for ``rows``.

    ``fresh``: message and summary figures come from the trigger-maintained totals.
    """
    ids = [row["conversation_id"] for row in rows]
    if not ids:
        return []
    marks = _in_clause(ids)
    messages = {r["conversation_id"]: r for r in _message_stats(ctx, ids, fresh)}
    summary_sql = _SUMMARY_STATS_TOTALS if fresh else _SUMMARY_STATS_SCAN
    summaries = {r["conversation_id"]: r for r in ctx.query(summary_sql.format(marks=marks), ids)}
    # One pass over the page's message context items, newest first per conversation,
    # gives both the context figures and each fresh tail (no query per row). Inner
    # joins: a context item whose message or summary is gone is not counted here.
    message_items: dict[int, list[Any]] = {cid: [] for cid in ids}
    for r in ctx.query(
        f"""SELECT ci.conversation_id AS conversation_id, m.token_count AS token_count
            FROM context_items ci JOIN messages m ON m.message_id = ci.message_id
            WHERE ci.item_type = 'message' AND ci.conversation_id IN ({marks})
            ORDER BY ci.conversation_id, ci.ordinal DESC""",
        ids,
    ):
        message_items[r["conversation_id"]].append(r)
    summary_items = {
        r["conversation_id"]: r
        for r in ctx.query(
            f"""SELECT ci.conversation_id AS conversation_id, COUNT(*) AS n,
                       COALESCE(SUM(s.token_count), 0) AS tokens
                FROM context_items ci JOIN {summaries_by_id(ctx)} ON s.summary_id = ci.summary_id
                WHERE ci.item_type = 'summary' AND ci.conversation_id IN ({marks})
                GROUP BY ci.conversation_id""",
            ids,
        )
    }
    count, max_tokens = tail_limits(ctx.engine_settings)
    items: list[ConversationItem] = []
    for row in rows:
        cid = row["conversation_id"]
        m = messages.get(cid)
        s = summaries.get(cid)
        own = message_items[cid]
        c = summary_items.get(cid)
        tail = select_tail(own, count, max_tokens) if count else []
        item: ConversationItem = {
            **identity_of(row),
            "messageCount": m["n"] if m else 0,
            "messageTokens": m["tokens"] if m else 0,
            "earliestMessageAt": m["earliest"] if m else None,
            "latestMessageAt": m["latest"] if m else None,
            "summaryCount": s["n"] if s else 0,
            "summaryTokens": s["tokens"] if s else 0,
            "summarizedSourceTokens": s["sources"] if s else 0,
            "earliestSummaryAt": s["earliest"] if s else None,
            "latestSummaryAt": s["latest"] if s else None,
            "maxSummaryDepth": s["max_depth"] if s else None,
            "contextItems": len(own) + (c["n"] if c else 0),
            "contextTokens": sum(r["token_count"] or 0 for r in own) + (c["tokens"] if c else 0),
            "freshTailMessages": len(tail),
            "freshTailTokens": sum(t["token_count"] or 0 for t in tail),
        }
        items.append(item)
    return items
