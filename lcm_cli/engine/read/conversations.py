"""`lcm conversations list|show`: conversations with their message, summary and tail figures."""

from __future__ import annotations

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.cursor import decode_cursor, keyset_clause
from lcm_cli.engine.core.paging import paginate
from lcm_cli.engine.core.params import Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.read.conversation_rows import (
    conversation_stats,
    find_conversation,
    identity_columns,
    require_lcm_tables,
    summaries_by_id,
    summary_depths,
    totals_meta,
)

if TYPE_CHECKING:
    from typing import Any

    from lcm_cli.engine.read.records import ContextByType, ConversationDetail, FocusBriefs, LargeFileTotals


@operation("conversations.list")
def list_conversations(ctx: Context, req: Request) -> Result:
    """One keyset page of conversations ordered by ``updated_at`` DESC, id DESC."""
    require_lcm_tables(ctx)
    where = ""
    params: list[Any] = []
    if req.cursor:
        clause, params = keyset_clause(
            "c.updated_at", "c.conversation_id", decode_cursor(req.cursor, "conversations")
        )
        where = "WHERE " + clause
    rows = ctx.query(
        f"""SELECT {identity_columns(ctx)} FROM conversations c {where}
            ORDER BY julianday(c.updated_at) DESC, c.conversation_id DESC LIMIT ?""",
        params + [req.limit + 1],
    )
    page, pagination = paginate(
        rows, req.limit, "conversations", lambda r: (r["updated_at"], r["conversation_id"])
    )
    stale = totals_meta(ctx)
    return Result({"items": conversation_stats(ctx, page, fresh=stale is None)}, pagination, stale)


@operation("conversations.show")
def show_conversation(ctx: Context, req: Request) -> Result:
    """Everything known about one conversation, without transcript text."""
    assert req.selector is not None
    row = find_conversation(ctx, req.selector)
    cid = row["conversation_id"]
    stale = totals_meta(ctx)
    fresh = stale is None
    data: ConversationDetail = {
        "conversation": conversation_stats(ctx, [row], fresh=fresh)[0],
        "summaryDepths": summary_depths(ctx, cid, fresh=fresh),
        "context": _context_by_type(ctx, cid),
        "telemetry": _telemetry(ctx, cid),
        "maintenance": _maintenance(ctx, cid),
        "bootstrap": _bootstrap(ctx, cid),
        "focusBriefs": _focus_briefs(ctx, cid),
        "largeFiles": _large_files(ctx, cid),
    }
    return Result(data, meta=stale)


def _context_by_type(ctx: Context, cid: int) -> list[ContextByType]:
    # LEFT JOINs: a dangling reference is counted with 0 tokens.
    rows = ctx.query(
        f"""SELECT ci.item_type AS itemType, COUNT(*) AS count,
                  COALESCE(SUM(COALESCE(m.token_count, s.token_count, 0)), 0) AS tokens
           FROM context_items ci
           LEFT JOIN messages m ON m.message_id = ci.message_id
           LEFT JOIN {summaries_by_id(ctx)} ON s.summary_id = ci.summary_id
           WHERE ci.conversation_id = ? GROUP BY ci.item_type ORDER BY MIN(ci.ordinal)""",
        (cid,),
    )
    return [{"itemType": r["itemType"], "count": r["count"], "tokens": r["tokens"]} for r in rows]


def _optional_row(
    ctx: Context, table: str, columns: list[tuple[str, str]], cid: int
) -> dict[str, Any] | None:
    """One row of an optional per-conversation table, missing columns as null."""
    if not ctx.probe.has_table(table):
        return None
    select = ", ".join(ctx.probe.col(table, column, key) for key, column in columns)
    row = ctx.query_one(f"SELECT {select} FROM {table} WHERE conversation_id = ?", (cid,))
    return dict(row) if row is not None else None


_TELEMETRY = [
    ("lastObservedCacheRead", "last_observed_cache_read"),
    ("lastObservedCacheWrite", "last_observed_cache_write"),
    ("lastObservedPromptTokenCount", "last_observed_prompt_token_count"),
    ("lastObservedCacheHitAt", "last_observed_cache_hit_at"),
    ("lastObservedCacheBreakAt", "last_observed_cache_break_at"),
    ("cacheState", "cache_state"),
    ("consecutiveColdObservations", "consecutive_cold_observations"),
    ("retention", "retention"),
    ("lastLeafCompactionAt", "last_leaf_compaction_at"),
    ("turnsSinceLeafCompaction", "turns_since_leaf_compaction"),
    ("tokensAccumulatedSinceLeafCompaction", "tokens_accumulated_since_leaf_compaction"),
    ("lastActivityBand", "last_activity_band"),
    ("lastApiCallAt", "last_api_call_at"),
    ("lastCacheTouchAt", "last_cache_touch_at"),
    ("provider", "provider"),
    ("model", "model"),
    ("updatedAt", "updated_at"),
]
_MAINTENANCE = [
    ("pending", "pending"),
    ("requestedAt", "requested_at"),
    ("reason", "reason"),
    ("running", "running"),
    ("lastStartedAt", "last_started_at"),
    ("lastFinishedAt", "last_finished_at"),
    ("lastFailureSummary", "last_failure_summary"),
    ("tokenBudget", "token_budget"),
    ("currentTokenCount", "current_token_count"),
    ("projectedTokenCount", "projected_token_count"),
    ("rawTokensOutsideTail", "raw_tokens_outside_tail"),
    ("contextThreshold", "context_threshold"),
    ("contextThresholdSource", "context_threshold_source"),
    ("retryAttempts", "retry_attempts"),
    ("nextAttemptAfter", "next_attempt_after"),
    ("updatedAt", "updated_at"),
]
_BOOTSTRAP = [
    ("sessionFilePath", "session_file_path"),
    ("lastSeenSize", "last_seen_size"),
    ("lastSeenMtimeMs", "last_seen_mtime_ms"),
    ("lastProcessedOffset", "last_processed_offset"),
    ("lastProcessedEntryHash", "last_processed_entry_hash"),
    ("sessionHeaderId", "session_header_id"),
    ("lastProcessedEntryId", "last_processed_entry_id"),
    ("forkBounded", "fork_bounded"),
    ("forkSourceMessageCount", "fork_source_message_count"),
    ("updatedAt", "updated_at"),
]
_BRIEF = [
    ("briefId", "brief_id"),
    ("prompt", "prompt"),
    ("tokenCount", "token_count"),
    ("targetTokens", "target_tokens"),
    ("coveredLatestAt", "covered_latest_at"),
    ("coveredMessageSeq", "covered_message_seq"),
    ("generatorRunId", "generator_run_id"),
    ("generatorSessionKey", "generator_session_key"),
    ("createdAt", "created_at"),
    ("updatedAt", "updated_at"),
]


def _as_bool(value: Any) -> Any:
    return None if value is None else value == 1


def _telemetry(ctx: Context, cid: int) -> dict[str, Any] | None:
    return _optional_row(ctx, "conversation_compaction_telemetry", _TELEMETRY, cid)


def _maintenance(ctx: Context, cid: int) -> dict[str, Any] | None:
    row = _optional_row(ctx, "conversation_compaction_maintenance", _MAINTENANCE, cid)
    if row is not None:
        row["pending"] = _as_bool(row["pending"])
        row["running"] = _as_bool(row["running"])
    return row


def _bootstrap(ctx: Context, cid: int) -> dict[str, Any] | None:
    row = _optional_row(ctx, "conversation_bootstrap_state", _BOOTSTRAP, cid)
    if row is not None:
        row["forkBounded"] = _as_bool(row["forkBounded"])
    return row


def _focus_briefs(ctx: Context, cid: int) -> FocusBriefs | None:
    if not ctx.probe.has_table("focus_briefs"):
        return None
    count = ctx.query_one("SELECT COUNT(*) AS n FROM focus_briefs WHERE conversation_id = ?", (cid,))
    select = ", ".join(ctx.probe.col("focus_briefs", column, key) for key, column in _BRIEF)
    active = ctx.query_one(
        f"""SELECT {select} FROM focus_briefs WHERE conversation_id = ? AND status = 'active'
            ORDER BY julianday(created_at) DESC, brief_id DESC LIMIT 1""",
        (cid,),
    )
    return {"count": count["n"] if count else 0, "activeBrief": dict(active) if active else None}


def _large_files(ctx: Context, cid: int) -> LargeFileTotals | None:
    if not ctx.probe.has_table("large_files"):
        return None
    row = ctx.query_one(
        """SELECT COUNT(*) AS count, COALESCE(SUM(byte_size), 0) AS bytes, MAX(created_at) AS latestAt
           FROM large_files WHERE conversation_id = ?""",
        (cid,),
    )
    return {"count": row["count"], "bytes": row["bytes"], "latestAt": row["latestAt"]} if row else None
