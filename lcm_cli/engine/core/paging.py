"""Keyset pages: fetch ``limit + 1`` rows, trim, and point the cursor at the last row shown."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.cursor import encode_cursor

if TYPE_CHECKING:
    from typing import Any


def paginate(
    rows: Sequence[Any], limit: int, resource: str, position: Callable[[Any], tuple[str, Any]]
) -> tuple[Sequence[Any], dict[str, Any]]:
    """Split fetched rows into the page and its pagination object.

    ``position(row)`` gives the (sort timestamp as stored, id) the cursor is built from.
    """
    has_more = len(rows) > limit
    page = rows[:limit]
    next_cursor = None
    if has_more and page:
        timestamp, row_id = position(page[-1])
        next_cursor = encode_cursor(resource, timestamp, row_id)
    return page, {"limit": limit, "returned": len(page), "hasMore": has_more, "nextCursor": next_cursor}
