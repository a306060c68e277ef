"""`lcm summaries list|show`: the summary DAG, listed or one node with its neighbours."""

from __future__ import annotations

import json

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.cursor import decode_cursor, keyset_clause
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.paging import paginate
from lcm_cli.engine.core.params import MAX_TOKENS, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables
from lcm_cli.engine.read.preview import PREVIEW_SOURCE_CHARS, make_preview

if TYPE_CHECKING:
    from typing import Any

    from lcm_cli.engine.read.records import SummaryDetail, SummaryItem, SummaryPage

COVERAGE = "COALESCE(s.latest_at, s.created_at)"


def _summary_columns(ctx: Context, *, include_content: bool) -> str:
    content = "s.content" if include_content else f"substr(s.content, 1, {PREVIEW_SOURCE_CHARS})"
    probe = ctx.probe
    return f"""s.summary_id, s.conversation_id, s.kind, s.depth, {content} AS content,
        s.token_count, s.earliest_at, s.latest_at, {COVERAGE} AS coverage_at,
        s.descendant_count, s.descendant_token_count, s.source_message_token_count,
        s.created_at, {probe.col("summaries", "file_ids", prefix="s.")},
        {probe.col("summaries", "model", prefix="s.")}"""


def _link_counts(ctx: Context, summary_ids: list[str]) -> dict[str, tuple[int, int, int]]:
    """(parentCount, childCount, sourceMessageCount) per summary, same-conversation links only.

    CROSS JOIN fixes the join order: start from the summary's own links, never from a scan
    of the conversation's messages (which the planner may otherwise pick).
    """
    if not summary_ids:
        return {}
    marks = ",".join("?" for _ in summary_ids)
    rows = ctx.query(
        f"""SELECT s.summary_id,
              (SELECT COUNT(*) FROM summary_parents sp JOIN summaries up ON up.summary_id = sp.summary_id
                WHERE sp.parent_summary_id = s.summary_id AND up.conversation_id = s.conversation_id),
              (SELECT COUNT(*) FROM summary_parents sp JOIN summaries dn ON dn.summary_id = sp.parent_summary_id
                WHERE sp.summary_id = s.summary_id AND dn.conversation_id = s.conversation_id),
              (SELECT COUNT(*) FROM summary_messages sm CROSS JOIN messages m ON m.message_id = sm.message_id
                WHERE sm.summary_id = s.summary_id AND m.conversation_id = s.conversation_id)
            FROM summaries s WHERE s.summary_id IN ({marks})""",
        summary_ids,
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def _file_ids(raw: Any) -> list[str]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return []
    return [x for x in parsed if isinstance(x, str)] if isinstance(parsed, list) else []


def summary_items(ctx: Context, rows: list[Any], *, include_content: bool) -> list[SummaryItem]:
    """Summary rows as list items with link counts and previews."""
    counts = _link_counts(ctx, [r["summary_id"] for r in rows])
    items: list[SummaryItem] = []
    for r in rows:
        parents, children, sources = counts.get(r["summary_id"], (0, 0, 0))
        item: SummaryItem = {
            "summaryId": r["summary_id"],
            "conversationId": r["conversation_id"],
            "kind": r["kind"],
            "depth": r["depth"],
            "tokenCount": r["token_count"],
            "earliestAt": r["earliest_at"],
            "latestAt": r["latest_at"],
            "coverageAt": r["coverage_at"],
            "descendantCount": r["descendant_count"],
            "descendantTokenCount": r["descendant_token_count"],
            "sourceMessageTokenCount": r["source_message_token_count"],
            "createdAt": r["created_at"],
            "fileIds": _file_ids(r["file_ids"]),
            "model": r["model"],
            "parentCount": parents,
            "childCount": children,
            "sourceMessageCount": sources,
            "preview": make_preview(r["content"]),
        }
        if include_content:
            item["content"] = r["content"]
        items.append(item)
    return items


@operation("summaries.list")
def list_summaries(ctx: Context, req: Request) -> Result:
    """One keyset page ordered by coverage time (``latest_at`` or ``created_at``) DESC, id DESC."""
    require_lcm_tables(ctx)
    conversation_id = None
    where: list[str] = []
    params: list[Any] = []
    if req.selector is not None:
        conversation_id = find_conversation(ctx, req.selector)["conversation_id"]
        where.append("s.conversation_id = ?")
        params.append(conversation_id)
    if req.depth is not None:
        where.append("s.depth = ?")
        params.append(req.depth)
    if req.kind is not None:
        where.append("s.kind = ?")
        params.append(req.kind)
    if req.time.after:
        where.append(f"julianday({COVERAGE}) >= julianday(?)")
        params.append(req.time.after)
    if req.time.before:
        where.append(f"julianday({COVERAGE}) < julianday(?)")
        params.append(req.time.before)
    if req.cursor:
        clause, values = keyset_clause(COVERAGE, "s.summary_id", decode_cursor(req.cursor, "summaries"))
        where.append(clause)
        params.extend(values)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    rows = ctx.query(
        f"""SELECT {_summary_columns(ctx, include_content=req.include_content)} FROM summaries s
            {clause} ORDER BY julianday({COVERAGE}) DESC, s.summary_id DESC LIMIT ?""",
        params + [req.limit + 1],
    )
    page, pagination = paginate(rows, req.limit, "summaries", lambda r: (r["coverage_at"], r["summary_id"]))
    items = summary_items(ctx, list(page), include_content=req.include_content)
    data: SummaryPage = {"conversationId": conversation_id, "items": items}
    return Result(data, pagination)


@operation("summaries.show")
def show_summary(ctx: Context, req: Request) -> Result:
    """A summary node and its neighbours in the DAG (same conversation only)."""
    require_lcm_tables(ctx)
    (summary_id,) = req.args
    columns = _summary_columns(ctx, include_content=True)
    row = ctx.query_one(f"SELECT {columns} FROM summaries s WHERE s.summary_id = ?", (summary_id,))
    if row is None:
        raise LcmError(
            "SUMMARY_NOT_FOUND",
            f"No summary matched id {summary_id}. Find ids with `lcm summaries list`.",
            {"summaryId": summary_id},
        )
    cid = row["conversation_id"]
    # summary_parents is named inverted: summary_id is the higher node, parent_summary_id its source.
    parents = ctx.query(
        f"""SELECT {columns} FROM summary_parents sp JOIN summaries s ON s.summary_id = sp.summary_id
            WHERE sp.parent_summary_id = ? AND s.conversation_id = ?
            ORDER BY s.depth ASC, s.summary_id ASC""",
        (summary_id, cid),
    )
    children = ctx.query(
        f"""SELECT {columns} FROM summary_parents sp JOIN summaries s ON s.summary_id = sp.parent_summary_id
            WHERE sp.summary_id = ? AND s.conversation_id = ? ORDER BY sp.ordinal ASC""",
        (summary_id, cid),
    )
    sources = ctx.query(
        """SELECT m.message_id AS messageId, m.seq, m.role, m.token_count AS tokenCount,
                  m.created_at AS createdAt, m.content
           FROM summary_messages sm CROSS JOIN messages m ON m.message_id = sm.message_id
           WHERE sm.summary_id = ? AND m.conversation_id = ? ORDER BY sm.ordinal ASC""",
        (summary_id, cid),
    )
    data: SummaryDetail = {
        "summary": summary_items(ctx, [row], include_content=True)[0],
        "parents": summary_items(ctx, list(parents), include_content=True),
        "children": summary_items(ctx, list(children), include_content=True),
        "sourceMessages": [
            {
                "messageId": r["messageId"],
                "seq": r["seq"],
                "role": r["role"],
                "tokenCount": r["tokenCount"],
                "createdAt": r["createdAt"],
                "content": r["content"],
            }
            for r in sources
        ],
    }
    max_tokens = req[MAX_TOKENS]
    if max_tokens:
        from lcm_cli.engine.read.token_budget import fit_sections

        data["budget"], pagination = fit_sections(
            data, ("children", "sourceMessages", "parents"), max_tokens, summary_id
        )
        return Result(data, pagination)
    return Result(data)
