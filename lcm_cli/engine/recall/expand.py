"""`lcm expand ID`: the raw messages a summary stands for, in order, within a token cap.

The walk goes from the summary down the DAG to its leaf summaries' source messages
(:mod:`lcm_cli.engine.recall.dag`). Messages are returned oldest-summarized first until
the next one would pass ``--max-tokens`` (default: the effective ``maxExpandTokens``);
the response says how many messages and tokens were left out and gives a cursor that
continues exactly there. A single message larger than the cap is cut mid-text, and the
cursor then continues inside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.params import MAX_TOKENS, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read import token_budget as tb
from lcm_cli.engine.recall.dag import message_contents, source_messages
from lcm_cli.engine.recall.scope import Scope, not_in_scope, resolve_scope, summary_not_found

if TYPE_CHECKING:
    from lcm_cli.engine.recall.records import ExpandedMessage, ExpandPage, ExpandSummary, Expansion

DEFAULT_MAX_EXPAND_TOKENS = 4000


def default_cap(ctx: Context) -> int:
    """The effective ``maxExpandTokens`` (4000 when unset or not a positive number)."""
    value = ctx.engine_settings.max_expand_tokens
    if isinstance(value, (int, float)) and value >= 1:
        return int(value)
    return DEFAULT_MAX_EXPAND_TOKENS


def find_summary(ctx: Context, summary_id: str, scope: Scope) -> Any:
    """The summary row, SUMMARY_NOT_FOUND, or NOT_IN_SCOPE."""
    row = ctx.query_one(
        """SELECT summary_id, conversation_id, kind, depth, token_count, earliest_at, latest_at,
                  source_message_token_count FROM summaries WHERE summary_id = ?""",
        (summary_id,),
    )
    if row is None:
        raise summary_not_found(summary_id)
    if not scope.allows(row["conversation_id"]):
        raise not_in_scope("summary", summary_id, scope)
    return row


def expand_messages(
    ctx: Context, summary_id: str, conversation_id: int, cap: int, offset: int = 0, char: int = 0
) -> tuple[ExpandPage, dict[str, Any]]:
    """The source messages of a summary from ``offset`` (``char`` into the first), within ``cap``,
    and the page's pagination."""
    everything = source_messages(ctx, summary_id, conversation_id)
    total_tokens = sum(m["tokenCount"] or 0 for m in everything)
    window = everything[offset:]
    contents = message_contents(ctx, [m["messageId"] for m in window[:500]])
    shown: list[ExpandedMessage] = []
    used = 0
    next_offset, next_char = offset + len(window), 0
    for index, message in enumerate(window):
        if index >= 500:  # contents were fetched for the first 500; plenty for any cap
            next_offset = offset + index
            break
        text = contents.get(message["messageId"], "")
        start = char if index == 0 else 0
        item: ExpandedMessage = {
            "messageId": message["messageId"],
            "seq": message["seq"],
            "role": message["role"],
            "tokenCount": message["tokenCount"],
            "createdAt": message["createdAt"],
            "leafSummaryId": message["leafSummaryId"],
            "content": text[start:],
        }
        if start:
            item["contentOffset"] = start
        cost = tb.json_tokens(item)
        if used + cost <= cap:
            shown.append(item)
            used += cost
            continue
        if not shown:
            # One message alone is over the cap: show what fits (at least a sentence: the
            # smallest useful page) and continue inside it.
            room = max(cap - tb.json_tokens({**item, "content": ""}) - 8, tb.MIN_TEXT_TOKENS)
            keep = tb.cut_text(item["content"], room)
            item["content"] = item["content"][:keep]
            item["contentOffset"] = start
            item["contentCut"] = True
            shown.append(item)
            used += tb.json_tokens(item)
            next_offset, next_char = offset + index, start + keep
        else:
            next_offset = offset + index
        break
    remaining = everything[next_offset:]
    omitted_tokens = sum(m["tokenCount"] or 0 for m in remaining)
    more = next_offset < len(everything)
    cursor = tb.encode_offset_cursor("expand", summary_id, next_offset, next_char) if more else None
    page: ExpandPage = {
        "messages": shown,
        "total": {"messages": len(everything), "tokens": total_tokens},
        "window": {"offset": offset, "returned": len(shown)},
        "budget": tb.budget_report(cap, used, {"messages": len(remaining), "tokens": omitted_tokens}),
    }
    return page, tb.token_page(len(shown), cursor)


@operation("expand")
def expand(ctx: Context, req: Request) -> Result:
    """The source messages of one summary, within ``--max-tokens``, with a cursor to continue."""
    summary_id = req.args[0].strip()
    scope = resolve_scope(ctx, req, required=False)
    cap = req[MAX_TOKENS] or default_cap(ctx)
    offset = char = 0
    if req.cursor:
        offset, char = tb.decode_offset_cursor(req.cursor, "expand", summary_id)
    row = find_summary(ctx, summary_id, scope)
    summary: ExpandSummary = {
        "summaryId": row["summary_id"],
        "conversationId": row["conversation_id"],
        "kind": row["kind"],
        "depth": row["depth"],
        "tokenCount": row["token_count"],
        "earliestAt": row["earliest_at"],
        "latestAt": row["latest_at"],
        "sourceMessageTokenCount": row["source_message_token_count"],
    }
    room = cap
    if req[MAX_TOKENS]:
        # --max-tokens caps everything printed: the messages get what the rest leaves.
        # (The configured maxExpandTokens budgets the messages alone, as in the reference.)
        # Too small a cap still gets the smallest useful page (one cut message), marked over budget.
        room = max(cap - tb.json_tokens({"summary": summary}) - tb.REPORT_TOKENS - 10, 60)  # 10: rounding
    body, pagination = expand_messages(ctx, summary_id, row["conversation_id"], room, offset, char)
    body["budget"]["maxTokens"] = cap
    data: Expansion = {"summary": summary, **body}
    return Result(data, pagination)
