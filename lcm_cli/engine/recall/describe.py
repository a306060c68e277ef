"""`lcm describe ID`: everything known about one summary (``sum_…``) or large file (``file_…``).

A summary comes with its metadata, time range, DAG neighbours (labelled as `lcm summaries
show` labels them: ``parents`` consume it, ``children`` are its sources), the raw message
ids beneath it and its file ids. A file comes with its metadata, exploration summary and
its text content, capped by ``--max-bytes`` and cut at a UTF-8 boundary; binary payloads
are described, never printed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.held_files import open_input
from lcm_cli.engine.core.params import MAX_BYTES, MAX_TOKENS, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read import token_budget as tb
from lcm_cli.engine.read.summaries import _summary_columns, summary_items
from lcm_cli.engine.recall.dag import source_messages, subtree
from lcm_cli.engine.recall.files import is_text_mime, resolve_inside
from lcm_cli.engine.recall.scope import Scope, not_in_scope, resolve_scope, summary_not_found

if TYPE_CHECKING:
    from lcm_cli.engine.read.records import SummaryItem
    from lcm_cli.engine.recall.records import FileDescription, SummaryDescription, SummaryLink

DEFAULT_MAX_BYTES = 32_768
# A copied reference such as "[LCM File: file_ab12 | report.txt | text/plain | 1,024 bytes]".
_REFERENCE = re.compile(r"^\[LCM (?:Tool Output|File|Raw Payload):\s*([^\s|\]]+)")


def parse_item_id(text: str) -> str:
    """The id in ``text``: a bare id, or the leading id of a copied ``[LCM …: id | …]`` reference."""
    raw = text.strip()
    match = _REFERENCE.match(raw)
    if match:
        return match.group(1)
    if not raw or any(ch.isspace() for ch in raw):
        raise invalid_argument(
            f"{text!r} is not one id. Pass a single summary id (sum_…) or file id (file_…), "
            "as printed by `lcm grep` or `lcm summaries list`.",
            {"value": text},
        )
    return raw


@operation("describe")
def describe(ctx: Context, req: Request) -> Result:
    """Describe the summary or file named by the positional id."""
    item_id = parse_item_id(req.args[0])
    scope = resolve_scope(ctx, req, required=False)
    max_tokens = req[MAX_TOKENS]
    offset = 0
    if req.cursor:
        offset, _ = tb.decode_offset_cursor(req.cursor, "describe", item_id)
    data: SummaryDescription | FileDescription
    if item_id.startswith("file_"):
        try:
            data = _describe_file(ctx, item_id, scope, req[MAX_BYTES] or DEFAULT_MAX_BYTES)
        except LcmError as exc:
            # Summary ids are opaque text: one may start with "file_" too.
            known = ctx.query_one("SELECT 1 FROM summaries WHERE summary_id = ?", (item_id,))
            if exc.code != "FILE_NOT_FOUND" or known is None:
                raise
            data = _describe_summary(ctx, item_id, scope)
    else:
        data = _describe_summary(ctx, item_id, scope)
    if offset or max_tokens:
        return Result(data, _fit_content(data, item_id, offset, max_tokens))
    return Result(data)


def _fit_content(
    data: SummaryDescription | FileDescription, item_id: str, offset: int, max_tokens: int | None
) -> dict[str, Any]:
    """Show ``content`` from ``offset``, cut to what ``max_tokens`` leaves after the rest; the
    pagination (``returned``: characters shown; ``nextCursor``: where the text continues)."""
    holder: SummaryItem | FileDescription = data["summary"] if data["type"] == "summary" else data
    content = holder.get("content") or ""
    rest = content[offset:]
    holder["content"] = ""
    if max_tokens is None:
        holder["content"] = rest
        data["contentWindow"] = {"offset": offset, "chars": len(rest), "totalChars": len(content)}
        return tb.token_page(len(rest), None)
    # A deep summary can stand for thousands of messages: keep the id list to half the
    # budget (the rest is one `lcm expand` away) so the content still gets room.
    omitted_ids = 0
    ids = data["sourceMessageIds"] if data["type"] == "summary" else None
    if data["type"] == "summary" and ids and tb.json_tokens(data) > max_tokens // 2:
        data["sourceMessageIds"] = []
        kept, _ = tb.fit_items(ids, max(0, max_tokens // 2 - tb.json_tokens(data)))
        data["sourceMessageIds"] = ids[:kept]
        omitted_ids = len(ids) - kept
    # Reserve room for the window, budget and pagination objects added below, at their largest.
    data["contentWindow"] = {"offset": offset, "chars": len(rest), "totalChars": len(content)}
    data["budget"] = tb.budget_report(
        max_tokens, max_tokens, {"contentChars": len(content), "sourceMessageIds": omitted_ids}
    )
    largest_page = tb.token_page(len(content), tb.encode_offset_cursor("describe", item_id, len(content)))
    room = max_tokens - tb.json_tokens(data) - tb.json_tokens({"pagination": largest_page}) - 2
    shown = tb.cut_text(rest, max(room, tb.MIN_TEXT_TOKENS))  # the smallest useful page, over the cap
    holder["content"] = rest[:shown]
    end = offset + shown
    cursor = tb.encode_offset_cursor("describe", item_id, end) if end < len(content) else None
    data["contentWindow"] = {"offset": offset, "chars": shown, "totalChars": len(content)}
    omitted: dict[str, int] = {"contentChars": len(content) - end}
    if ids is not None:
        omitted["sourceMessageIds"] = omitted_ids
    data["budget"] = tb.budget_report(max_tokens, 0, omitted)
    pagination = tb.token_page(shown, cursor)
    data["budget"]["usedTokens"] = tb.json_tokens(data) + tb.json_tokens({"pagination": pagination})
    return pagination


def _describe_summary(ctx: Context, summary_id: str, scope: Scope) -> SummaryDescription:
    columns = _summary_columns(ctx, include_content=True)
    row = ctx.query_one(f"SELECT {columns} FROM summaries s WHERE s.summary_id = ?", (summary_id,))
    if row is None:
        raise summary_not_found(summary_id)
    cid = row["conversation_id"]
    if not scope.allows(cid):
        raise not_in_scope("summary", summary_id, scope)
    summary = summary_items(ctx, [row], include_content=True)[0]
    link = "s.summary_id, s.kind, s.depth, s.token_count"
    # CROSS JOIN: start from the summary's own links. Left to choose, without statistics
    # SQLite may start from the conversation's summaries (every one of them) instead.
    parents = ctx.query(
        f"""SELECT {link} FROM summary_parents sp CROSS JOIN summaries s ON s.summary_id = sp.summary_id
            WHERE sp.parent_summary_id = ? AND s.conversation_id = ? ORDER BY s.depth, s.summary_id""",
        (summary_id, cid),
    )
    children = ctx.query(
        f"""SELECT {link} FROM summary_parents sp CROSS JOIN summaries s ON s.summary_id = sp.parent_summary_id
            WHERE sp.summary_id = ? AND s.conversation_id = ? ORDER BY sp.ordinal""",
        (summary_id, cid),
    )
    nodes = subtree(ctx, summary_id, cid)
    messages = source_messages(ctx, summary_id, cid, nodes)
    own = summary["tokenCount"] + summary["descendantTokenCount"]
    return {
        "type": "summary",
        "summary": summary,
        "timeRange": {"earliestAt": summary["earliestAt"], "latestAt": summary["latestAt"]},
        "descendantCount": summary["descendantCount"],
        "parents": [_link(r) for r in parents],
        "children": [_link(r) for r in children],
        "subtree": {
            "summaries": len(nodes),
            "maxLevel": max((n["level"] for n in nodes), default=0),
            "sourceMessages": len(messages),
            "summaryTokens": own,
            "withMessagesTokens": own + summary["sourceMessageTokenCount"],
        },
        "sourceMessageIds": [m["messageId"] for m in messages],
        "fileIds": summary["fileIds"],
    }


def _link(row: Any) -> SummaryLink:
    return {"summaryId": row[0], "kind": row[1], "depth": row[2], "tokenCount": row[3]}


def _describe_file(ctx: Context, file_id: str, scope: Scope, max_bytes: int) -> FileDescription:
    if not ctx.probe.has_table("large_files"):
        raise LcmError("FILE_NOT_FOUND", "This database has no large_files table.", {"fileId": file_id})
    probe = ctx.probe
    row = ctx.query_one(
        f"""SELECT file_id, conversation_id, file_name, mime_type, byte_size,
                   {probe.col("large_files", "line_count")}, storage_uri, exploration_summary, created_at
            FROM large_files WHERE file_id = ?""",
        (file_id,),
    )
    if row is None:
        raise LcmError(
            "FILE_NOT_FOUND",
            f"No large file with id {file_id}. Find ids with `lcm conversations show` or "
            "`lcm grep --scope files`.",
            {"fileId": file_id},
        )
    if not scope.allows(row["conversation_id"]):
        raise not_in_scope("file", file_id, scope)
    content, source, note, cut = _file_content(ctx, row, max_bytes)
    return {
        "type": "file",
        "file": {
            "fileId": row["file_id"],
            "conversationId": row["conversation_id"],
            "fileName": row["file_name"],
            "mimeType": row["mime_type"],
            "byteSize": row["byte_size"],
            "lineCount": row["line_count"],
            "storageUri": row["storage_uri"],
            "createdAt": row["created_at"],
            "explorationSummary": row["exploration_summary"],
        },
        "content": content,
        "contentSource": source,
        "contentCut": cut,
        "maxBytes": max_bytes,
        "note": note,
    }


def _file_content(ctx: Context, row: Any, max_bytes: int) -> tuple[str | None, str | None, str | None, bool]:
    """(content, where it came from, a note when not shown, whether --max-bytes cut it)."""
    if not is_text_mime(row["mime_type"]):
        return None, None, f"Binary payload ({row['mime_type']}); content is not printed.", False
    root = str(ctx.engine_settings.large_files_dir or "")
    path = resolve_inside(row["storage_uri"], root) if root else None
    data: bytes | None = None
    if path is not None:
        try:
            with open_input(path) as handle:
                data = handle.read(max_bytes + 1)
        except OSError:
            data = None
    if data is not None:
        if b"\x00" in data:
            return None, None, "The file holds binary data; content is not printed.", False
        cut = len(data) > max_bytes
        return data[:max_bytes].decode("utf-8", errors="ignore"), "file", None, cut
    if ctx.probe.has_column("messages", "large_content"):
        fallback = ctx.query_one(
            "SELECT content FROM messages WHERE large_content = ? ORDER BY message_id LIMIT 1",
            (row["file_id"],),
        )
        if fallback is not None:
            raw = fallback[0].encode("utf-8")
            cut = len(raw) > max_bytes
            return raw[:max_bytes].decode("utf-8", errors="ignore"), "message", None, cut
    where = "outside largeFilesDir" if path is None else "missing or unreadable"
    return None, None, f"Content unavailable: the stored file is {where}.", False
