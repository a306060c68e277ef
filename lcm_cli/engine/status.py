"""`lcm status`: database-wide counts, token totals, time coverage and maintenance state."""

from __future__ import annotations

import os
from typing import Any

from lcm_cli import __version__
from lcm_cli.engine.context import Context
from lcm_cli.engine.conversation_rows import require_lcm_tables, summary_depths
from lcm_cli.engine.fresh_tail import tail_limits
from lcm_cli.engine.registry import Result, operation
from lcm_cli.engine.request import Request


@operation("status", summary="Database-wide counts, token totals, coverage and maintenance state.")
def status(ctx: Context, req: Request) -> Result:
    """Summarize the whole database in one read."""
    require_lcm_tables(ctx)
    size = os.stat(ctx.database_path).st_size
    _, max_tokens = tail_limits(ctx.effective)
    return Result(
        {
            "version": __version__,
            "databaseSizeBytes": size,
            "freshTail": {"count": ctx.effective.get("freshTailCount"), "maxTokens": max_tokens},
            "status": global_status(ctx),
        }
    )


def global_status(ctx: Context) -> dict[str, Any]:
    """The ``status`` object: conversations, messages, summaries, context, maintenance."""
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
          (SELECT COUNT(*) FROM messages) AS message_count,
          (SELECT COALESCE(SUM(token_count), 0) FROM messages) AS message_tokens,
          (SELECT MIN(created_at) FROM messages) AS message_earliest,
          (SELECT MAX(created_at) FROM messages) AS message_latest,
          (SELECT COUNT(*) FROM summaries) AS summary_count,
          (SELECT COALESCE(SUM(token_count), 0) FROM summaries) AS summary_tokens,
          (SELECT COALESCE(SUM(source_message_token_count), 0) FROM summaries) AS summary_sources,
          (SELECT MIN(COALESCE(earliest_at, created_at)) FROM summaries) AS summary_earliest,
          (SELECT MAX(COALESCE(latest_at, created_at)) FROM summaries) AS summary_latest,
          (SELECT COUNT(*) FROM context_items) AS context_items,
          (SELECT COALESCE(SUM(m.token_count), 0) FROM context_items ci
             JOIN messages m ON m.message_id = ci.message_id WHERE ci.item_type = 'message')
          + (SELECT COALESCE(SUM(s.token_count), 0) FROM context_items ci
             JOIN summaries s ON s.summary_id = ci.summary_id WHERE ci.item_type = 'summary')
            AS context_tokens
        """
    )
    assert row is not None
    maintenance = None
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
            "count": row["message_count"],
            "tokens": row["message_tokens"],
            "earliestAt": row["message_earliest"],
            "latestAt": row["message_latest"],
        },
        "summaries": {
            "count": row["summary_count"],
            "tokens": row["summary_tokens"],
            "sourceMessageTokens": row["summary_sources"],
            "earliestAt": row["summary_earliest"],
            "latestAt": row["summary_latest"],
            "byDepth": summary_depths(ctx),
        },
        "context": {"items": row["context_items"], "tokens": row["context_tokens"]},
        "maintenance": maintenance,
    }
