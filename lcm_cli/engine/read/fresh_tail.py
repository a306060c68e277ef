"""The fresh tail: the newest raw messages in a conversation's context.

Rule (the reference CLI's, which differs from its runtime): walk the conversation's
message context items newest first (summary items are skipped, not boundaries), take at
most ``count``, keep accumulating ``token_count`` while the total stays within
``max_tokens`` (the newest row is always kept), then return them oldest first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from lcm_cli.engine.config.view import EngineSettings


#: The largest integer SQLite binds; any larger count means "all of them".
SQL_MAX_INT = 2**63 - 1


def tail_limits(settings: EngineSettings, count_override: int | None = None) -> tuple[int, int | None]:
    """``(count, max_tokens)`` from the config, ``--count`` replacing the count."""
    if count_override is not None:
        count = count_override
    else:
        raw = _finite(settings.fresh_tail_count)
        count = max(0, math.floor(raw)) if raw is not None else 0
    cap = _finite(settings.fresh_tail_max_tokens)
    max_tokens = math.floor(cap) if cap is not None and cap >= 0 else None
    # A stored 1e300 is a valid number meaning "every message": SQLite's LIMIT takes 64 bits.
    count = min(count, SQL_MAX_INT)
    return count, max_tokens


def _finite(value: Any) -> float | None:
    """``value`` when it is a finite number (not a bool), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def select_tail(rows_newest_first: Iterable[Any], count: int, max_tokens: int | None) -> list[Any]:
    """Apply the tail rule to rows given newest first; returns them oldest first."""
    picked: list[Any] = []
    total = 0
    for row in rows_newest_first:
        if len(picked) >= count:
            break
        tokens = row["token_count"] or 0
        if picked and max_tokens is not None and total + tokens > max_tokens:
            break
        picked.append(row)
        total += tokens
    picked.reverse()
    return picked


def tail_candidates_sql(large_content_column: str, *, with_content: bool) -> str:
    """SQL for one conversation's tail candidates, newest first; binds (conversation_id, count).

    ``large_content_column`` is the probed SELECT expression for ``m.large_content``.
    """
    content = "m.content" if with_content else "NULL AS content"
    return f"""
SELECT ci.ordinal AS ordinal, m.message_id, m.conversation_id, m.seq, m.role, m.token_count,
       m.created_at, {large_content_column}, {content}
FROM context_items ci JOIN messages m ON m.message_id = ci.message_id
WHERE ci.conversation_id = ? AND ci.item_type = 'message'
ORDER BY ci.ordinal DESC
LIMIT ?
"""
