"""Tool-call / tool-result consistency for an assembled context (docs/reference/engine.md §6.6).

Providers reject a prompt in which an assistant tool call has no result, or a result has
no call. After budget fill has dropped items, these functions drop unpaired calls,
normalize assistant content, drop empty messages, and move each call's results right
after it, synthesizing an error result for any call whose result is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CALL_TYPES = frozenset({"toolCall", "toolUse", "tool_use", "tool-use", "functionCall", "function_call"})
REASONING_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
MISSING_RESULT_TEXT = "[lossless-claw] missing tool result in session history; inserted synthetic error result for transcript repair."


def call_id(block: Any) -> str | None:
    """The id of a tool-call block, or None when ``block`` is not one."""
    if not isinstance(block, dict) or block.get("type") not in CALL_TYPES:
        return None
    value = block.get("id") or block.get("call_id") or block.get("toolCallId")
    return value if isinstance(value, str) and value else None


def calls_of(message: dict[str, Any]) -> list[str]:
    """Tool-call ids of an assistant message, in block order."""
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return []
    return [cid for cid in (call_id(b) for b in message["content"]) if cid]


def result_id(message: dict[str, Any]) -> str | None:
    """The call id a ``toolResult`` message answers."""
    if message.get("role") != "toolResult":
        return None
    value = message.get("toolCallId")
    return value if isinstance(value, str) and value else None


def drop_unpaired_calls(
    messages: Sequence[dict[str, Any]], in_tail: Sequence[bool], known_results: set[str]
) -> list[dict[str, Any]]:
    """Remove tool calls without a later selected result (step 1).

    Before the fresh tail every such call goes; inside the tail only calls whose result
    exists somewhere in the stored context (but was not selected after the call), since
    the host may still be waiting for a result of the newest calls.
    """
    later: set[str] = set()
    keep_flags: list[dict[str, Any] | None] = [None] * len(messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        rid = result_id(message)
        ids = calls_of(message)
        if ids:
            doomed = {cid for cid in ids if cid not in later and (not in_tail[index] or cid in known_results)}
            if doomed:
                content = [b for b in message["content"] if call_id(b) not in doomed]
                message = {**message, "content": content}
                if not content:
                    message = {}
        keep_flags[index] = message or None
        if rid:
            later.add(rid)
    return [m for m in keep_flags if m is not None]


def normalize(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Assistant string content → one text block; blank text blocks out; empty messages out."""
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") == "assistant":
            if isinstance(content, str):
                content = [{"type": "text", "text": content}] if content.strip() else []
            elif isinstance(content, list):
                content = [
                    b
                    for b in content
                    if not (
                        isinstance(b, dict)
                        and b.get("type") == "text"
                        and not str(b.get("text") or "").strip()
                    )
                ]
            message = {**message, "content": content}
        if _is_empty(message):
            continue
        out.append(message)
    return out


def _is_empty(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        if not content:
            return True
        if message.get("role") == "assistant":
            return all(isinstance(b, dict) and b.get("type") in REASONING_TYPES for b in content)
    return False


def sanitize_pairing(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results right after their call (call order), orphans out, missing ones synthesized (step 4)."""
    results: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        rid = result_id(message)
        if rid:
            results.setdefault(rid, []).append(message)
    seen_calls: set[str] = set()
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "toolResult":
            continue  # placed after its call below; orphans are dropped
        ids = calls_of(message)
        if not ids:
            out.append(message)
            continue
        if message.get("stopReason") in ("error", "aborted"):
            content = [b for b in message["content"] if call_id(b) is None]
            if content:
                out.append({**message, "content": content})
            continue
        content = []
        kept: list[tuple[str, str]] = []
        for block in message["content"]:
            cid = call_id(block)
            if cid is None:
                content.append(block)
            elif cid not in seen_calls:
                seen_calls.add(cid)
                content.append(block)
                kept.append((cid, str(block.get("name") or "unknown")))
        if not content:
            continue
        out.append({**message, "content": content})
        for cid, name in kept:
            found = results.get(cid)
            if found:
                out.append(found[0])
            else:
                out.append(
                    {
                        "role": "toolResult",
                        "toolCallId": cid,
                        "toolName": name,
                        "content": [{"type": "text", "text": MISSING_RESULT_TEXT}],
                        "isError": True,
                    }
                )
    return out
