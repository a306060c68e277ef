"""Fitting output into a token budget (``--max-tokens``), and offset cursors to continue.

Agents pay for every token they read, so these commands can cut their output to an
estimated budget. A cost is the lossless-claw estimate of the compact JSON an item is
printed as; what does not fit is counted, never silently dropped, and a cursor says
where to continue.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.core.cursor import open_cursor, seal
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.tokens import estimate_tokens

if TYPE_CHECKING:
    from typing import Literal

    from lcm_cli.engine.read.records import MessageItem, SummaryDetail

    DetailList = Literal["children", "sourceMessages", "parents"]

#: What a budget report with its continuation cursors costs, at most: reserved up front so
#: that --max-tokens caps everything printed, not only the items.
REPORT_TOKENS = 70
# The least text a capped page shows (about a sentence) when the cap leaves no room at all:
# the smallest useful page, marked over budget, rather than an error.
MIN_TEXT_TOKENS = 20


def json_tokens(value: Any) -> int:
    """Estimated tokens of ``value`` printed as compact JSON."""
    return estimate_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def fit_items(items: Sequence[Any], budget: int) -> tuple[int, int]:
    """How many leading ``items`` fit in ``budget`` tokens, and the tokens they use."""
    used = 0
    for index, item in enumerate(items):
        cost = json_tokens(item)
        if used + cost > budget:
            return index, used
        used += cost
    return len(items), used


def cut_text(text: str, budget: int) -> int:
    """The longest prefix length of ``text`` whose cost as a JSON string fits ``budget``.

    Measured as printed (escapes such as ``\\n`` included), since that is what is read.
    """
    if budget <= 0:
        return 0
    if json_tokens(text) <= budget:
        return len(text)
    low, high = 0, len(text)
    while low < high:  # binary search: estimates grow with the prefix
        middle = (low + high + 1) // 2
        if json_tokens(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def budget_report(max_tokens: int, used: int, omitted: dict[str, int]) -> dict[str, Any]:
    """The ``budget`` object: the cap, what was used, what was left out.

    Where to continue is the envelope's ``pagination`` (see :func:`token_page`), as for
    every command that can continue.
    """
    return {
        "maxTokens": max_tokens,
        "usedTokens": used,
        "truncated": any(omitted.values()),
        "omitted": omitted,
    }


def token_page(returned: int, next_cursor: str | None) -> dict[str, Any]:
    """The ``pagination`` of a page cut by ``--max-tokens`` rather than ``--limit`` (limit null)."""
    return {
        "limit": None,
        "returned": returned,
        "hasMore": next_cursor is not None,
        "nextCursor": next_cursor,
    }


def encode_offset_cursor(resource: str, item_id: str, offset: int, char: int = 0) -> str:
    """An opaque cursor: continue ``resource`` ``item_id`` at item ``offset`` (and character
    ``char`` inside that item, when one item alone was larger than the budget)."""
    return seal(resource, id=item_id, offset=offset, **({"char": char} if char else {}))


def decode_offset_cursor(text: str, resource: str, item_id: str) -> tuple[int, int]:
    """(offset, char) from a cursor made by :func:`encode_offset_cursor` for the same item."""
    invalid = LcmError(
        "INVALID_CURSOR",
        f"Invalid --cursor for `lcm {resource}` of {item_id}: pass the nextCursor printed for "
        "the same id unchanged, or omit --cursor to start at the beginning.",
    )
    payload = open_cursor(text, resource, invalid)
    if (
        payload.get("id") != item_id
        or not isinstance(payload.get("offset"), int)
        or isinstance(payload.get("offset"), bool)
        or payload["offset"] < 0
        or not isinstance(payload.get("char", 0), int)
        or payload.get("char", 0) < 0
    ):
        raise invalid
    return int(payload["offset"]), int(payload.get("char", 0))


def fit_page(
    items: list[MessageItem],
    rows: Sequence[Any],
    pagination: dict[str, Any],
    max_tokens: int,
    resource: str,
    position: Callable[[Any], tuple[str, Any]],
) -> tuple[list[MessageItem], dict[str, Any]]:
    """Cut a keyset page to ``max_tokens``: keep the leading items that fit (at least one),
    and point ``pagination.nextCursor`` at the last item kept, so the next page starts
    with the first item left out. Updates ``pagination`` in place."""
    from lcm_cli.engine.core.cursor import encode_cursor

    kept, used = fit_items(items, max_tokens)
    kept = max(kept, 1) if items else 0  # never an empty page that cannot make progress
    cut_chars = 0
    first = items[0] if items else None
    if first is not None and json_tokens(first) > max_tokens and isinstance(first.get("content"), str):
        # One item alone is over the cap: its text is cut (a hard cap), and said so.
        content = first["content"]
        first["content"] = ""
        shown = cut_text(content, max_tokens - json_tokens(first) - 20)
        first["content"] = content[:shown]
        first["contentTruncated"] = {"chars": shown, "totalChars": len(content)}
        cut_chars = len(content) - shown
    used = sum(json_tokens(item) for item in items[:kept])
    omitted = len(items) - kept
    if omitted:
        timestamp, row_id = position(rows[kept - 1])
        pagination.update(
            {"returned": kept, "hasMore": True, "nextCursor": encode_cursor(resource, timestamp, row_id)}
        )
    left_out = {"items": omitted, **({"contentChars": cut_chars} if cut_chars else {})}
    report = budget_report(max_tokens, used, left_out)
    report["overBudget"] = used > max_tokens
    return items[:kept], report


def fit_sections(
    data: SummaryDetail, sections: Sequence[DetailList], max_tokens: int, summary_id: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cut the list ``sections`` of ``data`` (in that priority order) to what ``max_tokens``
    leaves after everything else; returns the budget report and the pagination. Source
    messages left out continue with `lcm expand ID --cursor`, the pagination's cursor; a
    cut summary text is read whole with `lcm describe ID`."""
    lists = {name: data[name] for name in sections}
    for name in sections:
        data[name] = []
    omitted: dict[str, int] = {}
    summary = data.get("summary")
    if isinstance(summary, dict) and isinstance(summary.get("content"), str):
        # The summary's own text is cut too: --max-tokens is a hard cap on what is printed,
        # and the rest of the text is one `lcm describe` away.
        content = summary["content"]
        summary["content"] = ""
        shown = cut_text(content, max_tokens - json_tokens(data) - REPORT_TOKENS)
        summary["content"] = content[:shown]
        if shown < len(content):
            omitted["contentChars"] = len(content) - shown
    used = json_tokens(data) + REPORT_TOKENS
    cursor = None
    shown_sources = len(lists.get("sourceMessages", []))
    for name in sections:
        kept, cost = fit_items(lists[name], max(0, max_tokens - used))
        data[name] = lists[name][:kept]
        used += cost
        omitted[name] = len(lists[name]) - kept
        if name == "sourceMessages":
            shown_sources = kept
            if omitted[name]:
                cursor = encode_offset_cursor("expand", summary_id, kept)
    return budget_report(max_tokens, used, omitted), token_page(shown_sources, cursor)
