"""`lcm messages list|tail`: a conversation's stored messages, and its fresh tail."""

from __future__ import annotations

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.cursor import decode_cursor, keyset_clause
from lcm_cli.engine.core.paging import paginate
from lcm_cli.engine.core.params import MAX_TOKENS, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db import totals as db_totals
from lcm_cli.engine.read.conversation_rows import find_conversation, identity_of, totals_meta
from lcm_cli.engine.read.fresh_tail import select_tail, tail_candidates_sql, tail_limits
from lcm_cli.engine.read.preview import PREVIEW_SOURCE_CHARS, make_preview

if TYPE_CHECKING:
    from typing import Any

    from lcm_cli.engine.read.records import MessageItem, MessagePage, MessageTail


def message_item(row: Any, *, include_content: bool) -> MessageItem:
    """A message row as a list item; ``content`` only when asked for."""
    item: MessageItem = {
        "messageId": row["message_id"],
        "conversationId": row["conversation_id"],
        "seq": row["seq"],
        "role": row["role"],
        "tokenCount": row["token_count"],
        "createdAt": row["created_at"],
        "largeContent": row["large_content"],
        "preview": make_preview(row["content"]),
    }
    if include_content:
        item["content"] = row["content"]
    return item


@operation("messages.list")
def list_messages(ctx: Context, req: Request) -> Result:
    """One keyset page of messages ordered by ``created_at`` DESC, id DESC."""
    assert req.selector is not None
    conversation = find_conversation(ctx, req.selector)
    where = ["m.conversation_id = ?"]
    params: list[Any] = [conversation["conversation_id"]]
    if req.roles:
        where.append(f"m.role IN ({','.join('?' for _ in req.roles)})")
        params.extend(req.roles)
    if req.time.after:
        where.append("julianday(m.created_at) >= julianday(?)")
        params.append(req.time.after)
    if req.time.before:
        where.append("julianday(m.created_at) < julianday(?)")
        params.append(req.time.before)
    if req.cursor:
        clause, values = keyset_clause("m.created_at", "m.message_id", decode_cursor(req.cursor, "messages"))
        where.append(clause)
        params.extend(values)
    content = "m.content" if req.include_content else f"substr(m.content, 1, {PREVIEW_SOURCE_CHARS})"
    rows = ctx.query(
        f"""SELECT m.message_id, m.conversation_id, m.seq, m.role, m.token_count, m.created_at,
                   {ctx.probe.col("messages", "large_content", prefix="m.")}, {content} AS content
            FROM messages m WHERE {" AND ".join(where)}
            ORDER BY julianday(m.created_at) DESC, m.message_id DESC LIMIT ?""",
        params + [req.limit + 1],
    )
    page, pagination = paginate(rows, req.limit, "messages", lambda r: (r["created_at"], r["message_id"]))
    items = [message_item(r, include_content=req.include_content) for r in page]
    data: MessagePage = {"conversation": identity_of(conversation), "items": items}
    max_tokens = req[MAX_TOKENS]
    if max_tokens:
        from lcm_cli.engine.read.token_budget import REPORT_TOKENS, fit_page, json_tokens

        room = max(1, max_tokens - json_tokens({**data, "items": []}) - REPORT_TOKENS)
        data["items"], data["budget"] = fit_page(
            items, page, pagination, room, "messages", lambda r: (r["created_at"], r["message_id"])
        )
        data["budget"]["maxTokens"] = max_tokens
    return Result(data, pagination)


@operation("messages.tail")
def tail_messages(ctx: Context, req: Request) -> Result:
    """The fresh tail with full content, oldest first, and the conversation's totals."""
    assert req.selector is not None
    conversation = find_conversation(ctx, req.selector)
    cid = conversation["conversation_id"]
    count, max_tokens = tail_limits(ctx.engine_settings, req.tail_count)
    sql = tail_candidates_sql(ctx.probe.col("messages", "large_content", prefix="m."), with_content=True)
    picked = select_tail(ctx.query(sql, (cid, count)), count, max_tokens) if count else []
    stale = totals_meta(ctx)
    totals: Any
    if stale is None:
        row = ctx.query_one(
            f"""SELECT message_count AS n, message_tokens AS tokens FROM {db_totals.CONVERSATION_TOTALS}
                WHERE conversation_id = ?""",
            (cid,),
        )
        totals = row if row is not None else {"n": 0, "tokens": 0}
    else:
        totals = ctx.query_one(
            "SELECT COUNT(*) AS n, COALESCE(SUM(token_count), 0) AS tokens FROM messages WHERE conversation_id = ?",
            (cid,),
        )
    assert totals is not None
    data: MessageTail = {
        "conversationIdentity": identity_of(conversation),
        "limits": {"count": count, "maxTokens": max_tokens},
        "selected": {
            "messages": len(picked),
            "tokens": sum(r["token_count"] or 0 for r in picked),
            "firstSeq": picked[0]["seq"] if picked else None,
            "lastSeq": picked[-1]["seq"] if picked else None,
        },
        "conversation": {"messages": totals["n"], "tokens": totals["tokens"]},
        "messages": [message_item(r, include_content=True) for r in picked],
    }
    return Result(data, meta=stale)
