"""`lcm status`: database-wide counts, token totals, time coverage and maintenance state."""

from __future__ import annotations

import os

from lcm_cli import TYPE_CHECKING, __version__
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.params import Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db import totals as db_totals
from lcm_cli.engine.read.conversation_rows import (
    MESSAGE_STATS_INDEX,
    require_lcm_tables,
    summaries_by_id,
    totals_meta,
)
from lcm_cli.engine.read.fresh_tail import tail_limits

if TYPE_CHECKING:
    from typing import Any

    from lcm_cli.engine.read.records import GlobalStatus, MaintenanceCounts, StatusData


@operation("status")
def status(ctx: Context, req: Request) -> Result:
    """Summarize the whole database in one read."""
    require_lcm_tables(ctx)
    size = os.stat(ctx.database_path).st_size
    settings = ctx.engine_settings
    _, max_tokens = tail_limits(settings)
    stale = totals_meta(ctx)
    data: StatusData = {
        "version": __version__,
        "databaseSizeBytes": size,
        "freshTail": {"count": settings.fresh_tail_count, "maxTokens": max_tokens},
        "status": global_status(ctx, stale is None),
    }
    return Result(data, meta=stale)


def _min(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _max(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _message_totals(ctx: Context, fresh: bool) -> Any:
    """Count, tokens and raw-text time range of all messages.

    Fresh trigger-maintained totals answer from one row per conversation. Else one pass
    either way: with lcm's covering index the pass reads the index, and the time range comes from
    per-conversation index seeks; without it, one scan of the table answers everything.
    """
    if fresh:
        return ctx.query_one(
            f"""SELECT COALESCE(SUM(message_count), 0) AS n, COALESCE(SUM(message_tokens), 0) AS tokens,
                       MIN(earliest_at) AS earliest, MAX(latest_at) AS latest
                FROM {db_totals.CONVERSATION_TOTALS}"""
        )
    if ctx.probe.has_index(MESSAGE_STATS_INDEX):
        return ctx.query_one(
            """SELECT COUNT(*) AS n, COALESCE(SUM(token_count), 0) AS tokens,
                 (SELECT MIN((SELECT MIN(created_at) FROM messages m WHERE m.conversation_id = c.conversation_id))
                    FROM conversations c) AS earliest,
                 (SELECT MAX((SELECT MAX(created_at) FROM messages m WHERE m.conversation_id = c.conversation_id))
                    FROM conversations c) AS latest
               FROM messages"""
        )
    return ctx.query_one(
        """SELECT COUNT(*) AS n, COALESCE(SUM(token_count), 0) AS tokens,
                  MIN(created_at) AS earliest, MAX(created_at) AS latest FROM messages"""
    )


def global_status(ctx: Context, fresh: bool = False) -> GlobalStatus:
    """The ``status`` object: conversations, messages, summaries, context, maintenance.

    Earliest/latest are raw text MIN/MAX, as the reference reports them. ``fresh``: the
    message and summary figures come from the trigger-maintained totals (no scan);
    otherwise each table is read once.
    """
    probe = ctx.probe
    active = (
        "(SELECT COUNT(*) FROM conversations WHERE active = 1)"
        if probe.has_column("conversations", "active")
        # Databases older than the archive feature have only live conversations.
        else "(SELECT COUNT(*) FROM conversations)"
    )
    row = ctx.query_one(
        f"""
        SELECT
          (SELECT COUNT(*) FROM conversations) AS conversations,
          {active} AS active,
          (SELECT COUNT(*) FROM context_items) AS context_items,
          (SELECT COALESCE(SUM(m.token_count), 0) FROM context_items ci
             JOIN messages m ON m.message_id = ci.message_id WHERE ci.item_type = 'message')
          + (SELECT COALESCE(SUM(s.token_count), 0) FROM context_items ci
             JOIN {summaries_by_id(ctx)} ON s.summary_id = ci.summary_id WHERE ci.item_type = 'summary')
            AS context_tokens
        """
    )
    assert row is not None
    messages = _message_totals(ctx, fresh)
    # Per (kind, depth) groups, totals summed from the groups: from the totals, or one
    # pass over summaries.
    groups = ctx.query(
        f"""SELECT kind, depth, SUM(summary_count) AS count, SUM(summary_tokens) AS tokens,
                  SUM(source_tokens) AS sources, MIN(earliest_at) AS earliest, MAX(latest_at) AS latest
           FROM {db_totals.SUMMARY_TOTALS} WHERE summary_count > 0
           GROUP BY kind, depth ORDER BY depth ASC, kind ASC"""
        if fresh
        else """SELECT kind, depth, COUNT(*) AS count, COALESCE(SUM(token_count), 0) AS tokens,
                  COALESCE(SUM(source_message_token_count), 0) AS sources,
                  MIN(COALESCE(earliest_at, created_at)) AS earliest,
                  MAX(COALESCE(latest_at, created_at)) AS latest
           FROM summaries GROUP BY kind, depth ORDER BY depth ASC, kind ASC"""
    )
    maintenance: MaintenanceCounts | None = None
    if probe.has_table("conversation_compaction_maintenance"):
        m = ctx.query_one(
            """
            SELECT COALESCE(SUM(pending = 1), 0) AS pending, COALESCE(SUM(running = 1), 0) AS running,
                   COALESCE(SUM(last_failure_summary IS NOT NULL
                                AND TRIM(last_failure_summary) <> ''), 0) AS failed
            FROM conversation_compaction_maintenance
            """
        )
        assert m is not None
        maintenance = {"pending": m["pending"], "running": m["running"], "failed": m["failed"]}
    return {
        "conversations": {"total": row["conversations"], "active": row["active"]},
        "messages": {
            "count": messages["n"],
            "tokens": messages["tokens"],
            "earliestAt": messages["earliest"],
            "latestAt": messages["latest"],
        },
        "summaries": {
            "count": sum(g["count"] for g in groups),
            "tokens": sum(g["tokens"] for g in groups),
            "sourceMessageTokens": sum(g["sources"] for g in groups),
            "earliestAt": _min([g["earliest"] for g in groups]),
            "latestAt": _max([g["latest"] for g in groups]),
            "byDepth": [
                {"kind": g["kind"], "depth": g["depth"], "count": g["count"], "tokens": g["tokens"]}
                for g in groups
            ],
        },
        "context": {"items": row["context_items"], "tokens": row["context_tokens"]},
        "maintenance": maintenance,
    }
