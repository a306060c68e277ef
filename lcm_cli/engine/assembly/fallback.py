"""Live-message fallbacks of `assemble` (docs/reference/engine.md §6.1 steps 1, 8-10, 12, 13, 15).

When the stored context cannot (or should not) be used, the host's own live messages
are returned instead, bounded by the same serialized estimate as the assembled context:
the newest suffix that fits, never an unbounded list once a conversation exists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from lcm_cli.engine.assembly import tool_pairing as tp
from lcm_cli.engine.assembly.assembler import clamp, message_tokens, strip_trailing_assistants


def strip_prefill(messages: Sequence[dict[str, Any]], host_delivers_turn: bool) -> list[dict[str, Any]]:
    """Step 1: trailing assistant messages (prefill) are stripped from a live fallback.

    When the host delivers the current turn separately (``prompt`` given and
    ``availableTools`` passed), stripping stops at an assistant with substantive content:
    it is a real reply and stays.
    """
    return strip_trailing_assistants(messages, host_delivers_turn)


def total_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """The serialized estimate of a whole message list (§6.8 ``estimatedTokens``)."""
    return sum(message_tokens(m) for m in messages)


def bounded_live(
    messages: Sequence[dict[str, Any]], budget: int, preserve_assistant_tail: bool = False
) -> list[dict[str, Any]]:
    """The bounded live fallback: live messages through the final serialized clamp (§6.7)."""
    return clamp(list(messages), budget, preserve_assistant_tail=preserve_assistant_tail)


def _suffix_within(messages: Sequence[dict[str, Any]], room: int) -> list[dict[str, Any]]:
    """The newest suffix whose serialized estimate fits ``room``; at least the last message."""
    if not messages:
        return []
    start = len(messages) - 1
    used = message_tokens(messages[start])
    while start > 0:
        cost = message_tokens(messages[start - 1])
        if used + cost > room:
            break
        start -= 1
        used += cost
    return list(messages[start:])


def degraded(messages: Sequence[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """Step 8's degraded result: leading system/developer messages, then the newest suffix that fits."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    head = list(messages[:lead])
    room = max(0, budget - total_tokens(head))
    return head + _suffix_within(messages[lead:], room)


def fork_suffix(live: Sequence[dict[str, Any]], source_count: int) -> list[dict[str, Any]]:
    """The child's live messages after the copied parent prefix (§3.4)."""
    return list(live[max(0, source_count) :])


def append_fork_suffix(
    assembled: Sequence[dict[str, Any]], suffix: Sequence[dict[str, Any]], budget: int
) -> list[dict[str, Any]]:
    """Step 12: the live suffix after the assembled parent context, within the budget.

    Oldest assembled messages are evicted first, then oldest suffix messages; the newest
    suffix message always stays.
    """
    head = list(assembled)
    tail = list(suffix)
    head_costs = [message_tokens(m) for m in head]
    tail_costs = [message_tokens(m) for m in tail]
    total = sum(head_costs) + sum(tail_costs)
    while total > budget and head:
        total -= head_costs.pop(0)
        head.pop(0)
    while total > budget and len(tail) > 1:
        total -= tail_costs.pop(0)
        tail.pop(0)
    return head + tail


def has_user(messages: Sequence[dict[str, Any]]) -> bool:
    """True when some message has the ``user`` role."""
    return any(m.get("role") == "user" for m in messages)


# --------------------------------------------------------------------------
# Volatile live inputs (§6.7): turns the host never stores but the model must see
# --------------------------------------------------------------------------

RETRY_MARKER = "[Retry after the previous model attempt failed or timed out]"
INTERNAL_BEGIN = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
INTERNAL_END = "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
INTER_SESSION = "[inter-session message]"
TASK_COMPLETION = "[internal task completion event]"


def message_text(message: dict[str, Any]) -> str:
    """A message's text: the string content, or its text blocks joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text")) for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    return ""


def is_volatile(message: dict[str, Any]) -> bool:
    """A live user/system message with a retry marker line or a complete internal-context block.

    The block counts when the text starts with an inter-session message header, or starts
    with the block itself and carries a task-completion event.
    """
    if message.get("role") not in ("user", "system"):
        return False
    text = message_text(message).lstrip()
    if not text.strip():
        return False
    if any(line.strip() == RETRY_MARKER for line in text.splitlines()):
        return True
    begin = text.find(INTERNAL_BEGIN)
    if begin < 0 or text.find(INTERNAL_END, begin + len(INTERNAL_BEGIN)) < 0:
        return False
    normalized = " ".join(text.split()).lower()
    if normalized.startswith(INTER_SESSION):
        return True
    return text.startswith(INTERNAL_BEGIN) and TASK_COMPLETION in normalized


def uncovered_volatile(
    live: Sequence[dict[str, Any]], assembled: Sequence[dict[str, Any]]
) -> list[tuple[int, dict[str, Any]]]:
    """Volatile live inputs that no assembled message already shows word for word, with
    their live positions, in live order.

    A summary never covers one: it summarizes a past occurrence, not this turn's input.
    """
    shown: dict[str, int] = {}
    for message in assembled:
        text = message_text(message)
        shown[text] = shown.get(text, 0) + 1
    out: list[tuple[int, dict[str, Any]]] = []
    for index, message in enumerate(live):
        if not is_volatile(message):
            continue
        text = message_text(message)
        if shown.get(text, 0) > 0:
            shown[text] -= 1
            continue
        out.append((index, {**message, "role": "user"} if message.get("role") == "system" else message))
    return out


def _signature(message: dict[str, Any]) -> tuple[Any, ...]:
    # What makes an assembled message the same as a live one: role, text, tool-call ids.
    role = message.get("role")
    role = "toolResult" if role == "tool" else role
    return (role, message_text(message), tuple(tp.calls_of(message)), tp.result_id(message))


def merge_volatile(
    assembled: Sequence[dict[str, Any]],
    live: Sequence[dict[str, Any]],
    entries: Sequence[tuple[int, dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The assembled messages with the uncovered volatile inputs placed as the reference
    places them: each goes right before the first assembled message that is a later live
    message (matched newest first, one live message per assembled one); the rest at the end.
    """
    if not entries:
        return list(assembled)
    by_signature: dict[tuple[Any, ...], list[int]] = {}
    for index, message in enumerate(assembled):
        by_signature.setdefault(_signature(message), []).append(index)
    live_position: dict[int, int] = {}
    for live_index in range(len(live) - 1, -1, -1):
        candidates = by_signature.get(_signature(live[live_index]))
        if candidates:
            live_position[candidates.pop()] = live_index
    ordered = sorted(entries, key=lambda entry: entry[0])
    out: list[dict[str, Any]] = []
    cursor = 0
    for index, message in enumerate(assembled):
        position = live_position.get(index)
        while position is not None and cursor < len(ordered) and ordered[cursor][0] < position:
            out.append(ordered[cursor][1])
            cursor += 1
        out.append(message)
    interleaved = cursor > 0
    out.extend(message for _, message in ordered[cursor:])
    # An input placed between a tool call and its result must not split the pair.
    return tp.sanitize_pairing(out) if interleaved else out


def bootstrap_budget(effective: dict[str, Any]) -> int:
    """``bootstrapMaxTokens``, else ``max(6000, floor(leafChunkTokens × 0.3))``.

    The reference's own rule here (compat engine.md §3.4), not the declared defaults: the
    resolver does not range-check, so a value that is not a positive integer is replaced
    at use, and ``leafChunkTokens`` then falls back to 40000 (its declared default is 20000).
    """
    from lcm_cli.engine.config.view import EngineSettings

    settings = EngineSettings(effective)
    value = settings.bootstrap_max_tokens
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    configured = settings.leaf_chunk_tokens
    chunk = configured if isinstance(configured, int) and configured > 0 else 40000
    return max(6000, math.floor(chunk * 0.3))
