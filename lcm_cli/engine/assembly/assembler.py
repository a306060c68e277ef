"""Context assembly: what the model sees this turn (docs/reference/engine.md §6.2–§6.8).

Summaries become XML-wrapped ``user`` messages marked ``trust="untrusted"``; raw
messages are rebuilt from their parts; the fresh tail is always kept; older items fill
the remaining budget newest first (or by prompt relevance with ``promptAwareEviction``);
tool calls and results are made consistent; a final clamp keeps the serialized estimate
within the budget.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import Any, NamedTuple

from lcm_cli.engine.assembly import tool_pairing as tp
from lcm_cli.engine.compaction import leaf_source as src
from lcm_cli.engine.compaction.context_items import tail_boundary
from lcm_cli.engine.config.view import EngineSettings
from lcm_cli.engine.core.jscompat import js_values, stringify
from lcm_cli.engine.core.tokens import estimate_tokens, serialized_tokens

DEFAULT_TOKEN_BUDGET = 128000
_TERM = re.compile(r"[a-z0-9]{2,}")


class Resolved(NamedTuple):
    """One context item turned into a model message, with its assembly token cost."""

    ordinal: int
    is_message: bool
    role: str  # stored role for messages, "summary" for summaries
    message: dict[str, Any]
    tokens: int
    # What prompt-aware eviction scores: a message's rebuilt content (its JSON when an
    # array), a summary's own text (not its XML wrapper), a stub's reference text.
    text: str


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def scored_text(content: Any) -> str:
    """A rebuilt message's content as the reference measures and scores it: the string, or its ``JSON.stringify``."""
    return content if isinstance(content, str) else stringify(js_values(content))


def _attr(value: Any) -> str:
    return str(value).replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def summary_xml(row: Mapping[str, Any], sources: Sequence[str], zone: tzinfo) -> str:
    """The ``<summary …>`` wrapper of §6.3 for one summary row."""
    head = (
        f'<summary id="{_attr(row["summary_id"])}" kind="{_attr(row["kind"])}" depth="{row["depth"]}"'
        f' descendant_count="{row["descendant_count"]}" trust="untrusted"'
    )
    earliest = src.xml_time(row["earliest_at"], zone)
    latest = src.xml_time(row["latest_at"], zone)
    if earliest:
        head += f' earliest_at="{earliest}"'
    if latest:
        head += f' latest_at="{latest}"'
    lines = [head + ">"]
    if row["kind"] == "condensed" and sources:
        lines.append("  <parents>")
        lines.extend(f'    <summary_ref id="{_attr(s)}" />' for s in sources)
        lines.append("  </parents>")
    lines += ["  <content>", _text(row["content"] or ""), "  </content>", "</summary>"]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Raw messages from parts (§6.4)
# --------------------------------------------------------------------------

_CALL_SHAPES = {"tool_use": "input", "toolUse": "input", "tool-use": "input"}
_RESULT_TYPES = frozenset({"tool_result", "toolResult", "function_call_output"})


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


_UNDEFINED: Any = object()


def _stored_value(text: Any) -> Any:
    """A stored JSON column as the reference reads it: absent or empty is undefined."""
    if not isinstance(text, str) or not text:
        return _UNDEFINED
    return _loads(text)


def _result_block(
    part: Mapping[str, Any], raw_type: Any, raw: dict[str, Any] | None, name: Any, cid: Any
) -> dict[str, Any]:
    """A tool result block rebuilt from its part, as the reference's assembler does.

    A result stored as a text block (e.g. an externalized ``[LCM Tool Output: ...]``
    placeholder) comes back as that text block; otherwise the output comes from the
    stored output, else the part's text, else the raw block.
    """
    text = part["text_content"]
    if (
        raw is not None
        and isinstance(raw.get("text"), str)
        and "output" not in raw
        and "content" not in raw
        and not part["tool_output"]
        and (text is None or text == raw["text"])
    ):
        return {"type": "text", "text": raw["text"]}
    kind = raw_type if raw_type in _RESULT_TYPES else "tool_result"
    block: dict[str, Any] = {"type": kind}
    if isinstance(name, str) and name:
        block["name"] = name
    output = _stored_value(part["tool_output"])
    if output is not _UNDEFINED:
        block["output"] = output
    elif isinstance(text, str):
        block["output"] = text
    elif raw is not None and "output" in raw:
        block["output"] = raw["output"]
    elif raw is not None and "content" in raw:
        block["content"] = raw["content"]
    else:
        block["output"] = ""
    if raw is not None and isinstance(raw.get("is_error"), bool):
        block["is_error"] = raw["is_error"]
    elif raw is not None and isinstance(raw.get("isError"), bool):
        block["isError"] = raw["isError"]
    if isinstance(cid, str) and cid:
        block["call_id" if kind == "function_call_output" else "tool_use_id"] = cid
    return block


# Part-metadata keys of an assistant's model identity, and the message fields they come
# back as. Ingest writes them on the first part only (transcript/message.py).
_IDENTITY_KEYS = (
    ("modelProvider", "provider"),
    ("modelApi", "api"),
    ("modelId", "model"),
    ("responseModelId", "responseModel"),
)
# The host's marker signature for reasoning_content-native endpoints: not issued by a provider.
_REASONING_SENTINEL = "reasoning_content"


def _model_identity(metas: Sequence[Mapping[str, Any]]) -> dict[str, str] | None:
    """The stored model identity of a message, as message fields (``provider``, ``api``,
    ``model``, ``responseModel`` when stored), or None.

    The first part whose metadata names provider, api and model (non-empty strings)
    gives it: the host replays a thinking block as the same model's only when all three
    match, so a partial identity counts as none.
    """
    for meta in metas:
        found = {
            field: value for key, field in _IDENTITY_KEYS if isinstance(value := meta.get(key), str) and value
        }
        if "provider" in found and "api" in found and "model" in found:
            return found
    return None


def _openai_reasoning(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """The OpenAI reasoning item the host folds into a thinking block's signature, if any."""
    signature = raw.get("thinkingSignature")
    if raw.get("type") != "thinking" or not isinstance(signature, str) or not signature.startswith("{"):
        return None
    parsed = _loads(signature)
    if isinstance(parsed, dict) and parsed.get("type") == "reasoning" and isinstance(parsed.get("id"), str):
        return parsed
    return None


def _signed_thinking(raw: dict[str, Any], signature: str, has_identity: bool) -> dict[str, Any] | None:
    """A signed thinking block through the signature gate.

    With a stored model identity the block is kept as stored (the host then decides
    whether the same model may replay it). Without one (rows written before identity
    was stored), the host's sentinel block is dropped, since the host would turn it into
    visible text, and a provider's signature is removed so it cannot reach another
    provider.
    """
    if has_identity:
        return dict(raw)
    if signature == _REASONING_SENTINEL:
        return None
    return {key: value for key, value in raw.items() if key != "thinkingSignature"}


def _reasoning_block(part: Mapping[str, Any], raw_type: Any) -> dict[str, Any]:
    """A reasoning part stored without its raw block (older rows)."""
    text = part["text_content"]
    if raw_type == "thinking":
        return (
            {"type": "thinking", "thinking": text} if isinstance(text, str) and text else {"type": "thinking"}
        )
    return {"type": "reasoning", "text": text} if isinstance(text, str) and text else {"type": "reasoning"}


def _block_from_part(
    part: Mapping[str, Any], meta: Mapping[str, Any], role: str, has_identity: bool
) -> dict[str, Any] | None:
    raw = meta.get("raw")
    raw_type = meta.get("rawType") or (raw.get("type") if isinstance(raw, dict) else None)
    if isinstance(raw, dict):
        restored = _openai_reasoning(raw)
        if restored is not None:
            return restored
        signature = raw.get("thinkingSignature")
        gate_type = raw["type"] if isinstance(raw.get("type"), str) else meta.get("rawType")
        if gate_type == "thinking" and isinstance(signature, str):
            return _signed_thinking(raw, signature, has_identity)
    if part["part_type"] == "tool":
        name = part["tool_name"] or meta.get("toolName") or "unknown"
        cid = part["tool_call_id"] or meta.get("toolCallId")
        if raw_type in _RESULT_TYPES or (raw_type is None and role == "tool"):
            # The reference names the block only from the part (backfilled from raw).
            name = part["tool_name"]
            if isinstance(raw, dict):
                raw_id = raw.get("id") or raw.get("call_id")
                cid = part["tool_call_id"] or (raw_id if isinstance(raw_id, str) else None) or cid
                raw_name = raw.get("name")
                name = name or (raw_name if isinstance(raw_name, str) else None)
            return _result_block(part, raw_type, raw if isinstance(raw, dict) else None, name, cid)
        arguments = _loads(part["tool_input"])
        if raw_type == "function_call":
            return {"type": raw_type, "call_id": cid, "name": name, "arguments": arguments}
        key = _CALL_SHAPES.get(str(raw_type), "arguments")
        return {"type": raw_type or "toolCall", "id": cid, "name": name, key: arguments}
    if isinstance(raw, dict):
        return dict(raw)
    if part["part_type"] == "reasoning":
        return _reasoning_block(part, raw_type)
    if part["text_content"] is not None:
        return {"type": "text", "text": part["text_content"]}
    return None


# A stored ``originalRole`` the host knows; any other value falls back to the stored role.
_RUNTIME_ROLES = {"toolResult": "toolResult", "assistant": "assistant", "user": "user", "system": "user"}


def _first_of(metas: Sequence[Mapping[str, Any]], key: str) -> str | None:
    """The first non-empty string stored under ``key`` in the parts' metadata."""
    return next((v for m in metas if isinstance(v := m.get(key), str) and v), None)


def _tool_field(
    parts: Sequence[Mapping[str, Any]],
    metas: Sequence[Mapping[str, Any]],
    column: str,
    key: str,
    raw_keys: tuple[str, str],
) -> str | None:
    """A tool result's call id or name: per part, its column, then its metadata, then its raw block."""
    for part, meta in zip(parts, metas):
        raw = meta.get("raw")
        candidates = (part[column], meta.get(key), *(raw.get(k) for k in raw_keys if isinstance(raw, dict)))
        found = next((v for v in candidates if isinstance(v, str) and v), None)
        if found is not None:
            return found
    return None


def rebuild_message(
    row: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], int, str] | None:
    """A stored message as the model sees it, its resolved token estimate (§6.4) and its :func:`scored_text`."""
    stored = row["role"]
    content_text = row["content"] or ""
    metas = [_loads(p["metadata"]) for p in parts]
    metas = [m if isinstance(m, dict) else {} for m in metas]
    # Each field is read from the first part that has it, as both 0.15.3 and 1.0 do:
    # ingest writes them on every part, but a row another writer made may not.
    original = _first_of(metas, "originalRole")
    role = _RUNTIME_ROLES.get(original or "") or {"tool": "toolResult", "assistant": "assistant"}.get(
        stored, "user"
    )
    if stored == "assistant" and not content_text.strip() and not parts:
        return None
    call = None
    if role == "toolResult":
        call = _tool_field(parts, metas, "tool_call_id", "toolCallId", ("toolCallId", "tool_call_id"))
        if not call:
            role = "assistant"
    # The identity is decided for the whole message (it is stored on the first part only,
    # a signed thinking block may be any part) and gates every signed thinking block.
    identity = _model_identity(metas) if role == "assistant" else None
    has_identity = identity is not None
    blocks = [
        b
        for b in (
            _block_from_part(p, m, stored, has_identity)
            for p, m in zip(parts, metas)
            # A part standing only for a top-level reasoning_content is not content.
            if m.get("topLevelReasoningOnly") is not True
        )
        if b is not None
    ]
    content: Any
    if blocks:
        content = blocks
        if role == "user" and len(blocks) == 1 and blocks[0].get("type") == "text":
            content = blocks[0].get("text") or ""
    elif role == "user":
        content = content_text
    elif role == "toolResult":
        content = [{"type": "text", "text": content_text}]
    else:
        content = [{"type": "text", "text": content_text}] if content_text else []
    message: dict[str, Any] = {"role": role, "content": content}
    text = scored_text(content)
    pieces = [text]
    # A user message carries no sender metadata: lossless-claw 1.0 dropped the
    # ``__openclaw`` field (0.15.3 sent the stored one and counted its JSON).
    if role == "toolResult":
        name = _tool_field(parts, metas, "tool_name", "toolName", ("name", "toolName")) or "unknown"
        message.update({"toolCallId": call, "toolName": name})
        is_error = next((m["isError"] for m in metas if isinstance(m.get("isError"), bool)), None)
        if is_error is not None:
            message["isError"] = is_error
    elif role == "assistant":
        if identity is not None:
            message.update(identity)
        reasoning = next(
            (
                m["topLevelReasoningContent"]
                for m in metas
                if m.get("topLevelReasoningField") == "reasoning_content"
                and isinstance(m.get("topLevelReasoningContent"), str)
                and m["topLevelReasoningContent"]
            ),
            None,
        )
        if reasoning is not None:
            message["reasoning_content"] = reasoning
            pieces.append(reasoning)
    tokens = estimate_tokens("\n".join(piece for piece in pieces if piece))
    if role == "assistant":
        message["usage"] = {
            "input": 0,
            "output": tokens,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": tokens,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        }
    return message, tokens, text


# --------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------

_ITEMS = """
SELECT ci.ordinal, ci.item_type, ci.message_id, ci.summary_id,
       m.role, m.content AS m_content,
       s.kind, s.depth, s.content AS s_content, s.earliest_at, s.latest_at, s.descendant_count
FROM context_items ci
LEFT JOIN messages m ON m.message_id = ci.message_id
LEFT JOIN summaries s ON s.summary_id = ci.summary_id
WHERE ci.conversation_id = ? ORDER BY ci.ordinal
"""
_PARTS = """
SELECT p.message_id, p.part_type, p.text_content, p.tool_call_id, p.tool_name, p.tool_input,
       p.tool_output, p.metadata
FROM context_items ci CROSS JOIN message_parts p ON p.message_id = ci.message_id
WHERE ci.conversation_id = ? AND ci.item_type = 'message'
ORDER BY p.message_id, p.ordinal
"""
_SOURCES = """
SELECT sp.summary_id, sp.parent_summary_id
FROM context_items ci CROSS JOIN summary_parents sp ON sp.summary_id = ci.summary_id
WHERE ci.conversation_id = ? AND ci.item_type = 'summary'
ORDER BY sp.summary_id, sp.ordinal
"""
_PART_KEYS = (
    "message_id",
    "part_type",
    "text_content",
    "tool_call_id",
    "tool_name",
    "tool_input",
    "tool_output",
    "metadata",
)


# A warm `lcm serve` assembles the same conversation every turn: the rebuilt messages and
# summary wrappers are pure functions of their stored rows, so they are memoized by those
# rows (never by id alone: a repair may rewrite a summary under the same id). The cached
# messages are shared, so nothing downstream may mutate them; the assembler and pairing
# steps copy before they change a message.
_SUMMARY_KEYS = ("summary_id", "kind", "depth", "s_content", "earliest_at", "latest_at", "descendant_count")
_MEMO_SIZE = 8192


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _summary_message(values: tuple[Any, ...], sources: tuple[str, ...], zone: tzinfo) -> tuple[str, int]:
    """A summary's XML wrapper and its estimate: the wrapper is what the model sees and pays for."""
    row = dict(zip(_SUMMARY_KEYS, values))
    row["content"] = row["s_content"]
    xml = summary_xml(row, sources, zone)
    return xml, estimate_tokens(xml)


@functools.lru_cache(maxsize=_MEMO_SIZE)
def _rebuilt(
    role: str, content: str | None, parts: tuple[tuple[Any, ...], ...]
) -> tuple[dict[str, Any], int, str] | None:
    return rebuild_message({"role": role, "content": content}, [dict(zip(_PART_KEYS, p)) for p in parts])


def resolve_items(conn: sqlite3.Connection, conversation_id: int, zone: tzinfo) -> list[Resolved]:
    """Every context item as a model message; deleted rows are skipped."""
    cursor = conn.execute(_ITEMS, (conversation_id,))
    columns = [d[0] for d in cursor.description]
    rows = [dict(zip(columns, r)) for r in cursor.fetchall()]
    parts: dict[int, list[tuple[Any, ...]]] = {}
    sources: dict[str, list[str]] = {}
    if any(r["item_type"] == "message" for r in rows):
        for p in conn.execute(_PARTS, (conversation_id,)):
            parts.setdefault(p[0], []).append(tuple(p))
    if any(r["kind"] == "condensed" for r in rows):
        for sid, source in conn.execute(_SOURCES, (conversation_id,)):
            sources.setdefault(sid, []).append(source)
    out: list[Resolved] = []
    for r in rows:
        if r["item_type"] == "summary":
            if r["kind"] is None:
                continue
            xml, tokens = _summary_message(
                tuple(r[k] for k in _SUMMARY_KEYS), tuple(sources.get(r["summary_id"], ())), zone
            )
            text = r["s_content"] or ""
            out.append(
                Resolved(r["ordinal"], False, "summary", {"role": "user", "content": xml}, tokens, text)
            )
            continue
        if r["role"] is None:
            continue
        rebuilt = _rebuilt(r["role"], r["m_content"], tuple(parts.get(r["message_id"], ())))
        if rebuilt is None:
            continue
        message, tokens, text = rebuilt
        out.append(Resolved(r["ordinal"], True, r["role"], message, tokens, text))
    return out


_STORED_STUBS = """
SELECT ci.ordinal, lf.file_id, lf.byte_size, lf.exploration_summary
FROM context_items ci
JOIN messages m ON m.message_id = ci.message_id
JOIN large_files lf ON lf.file_id = m.large_content
WHERE ci.conversation_id = ? AND ci.item_type = 'message' AND m.role = 'tool'
  AND m.large_content IS NOT NULL
"""


def stub_stored_results(
    conn: sqlite3.Connection, conversation_id: int, items: Sequence[Resolved]
) -> list[Resolved]:
    """§6.2 step 3: evictable tool results whose ``large_content`` names a stored file become its reference.

    The content keeps its shape (a one-text-block array when it was an array) and the
    item is re-estimated. Files older than ``large_content`` or ``large_files`` are left as they are.
    """
    columns = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    has_files = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'large_files'"
    ).fetchone()
    if "large_content" not in columns or has_files is None:
        return list(items)
    from lcm_cli.engine.assembly.large_files import tool_output_reference

    stubs = {r[0]: r[1:] for r in conn.execute(_STORED_STUBS, (conversation_id,))}
    if not stubs:
        return list(items)
    out: list[Resolved] = []
    for item in items:
        found = stubs.get(item.ordinal)
        if found is None or item.message.get("role") != "toolResult":
            out.append(item)
            continue
        file_id, size, summary = found
        reference = tool_output_reference(
            file_id, str(item.message.get("toolName") or "tool"), int(size or 0), summary
        )
        content: Any = (
            [{"type": "text", "text": reference}]
            if isinstance(item.message.get("content"), list)
            else reference
        )
        message = {**item.message, "content": content}
        # The reference's stub cost is the reference text's estimate, whatever the content's shape.
        tokens = estimate_tokens(reference)
        out.append(item._replace(message=message, tokens=tokens, text=reference))
    return out


# --------------------------------------------------------------------------
# Budget fill (§6.5), clamp (§6.7)
# --------------------------------------------------------------------------


def prompt_terms(prompt: str | None) -> list[str]:
    """Unique lowercase ``[a-z0-9]`` runs longer than one character, in order."""
    return list(dict.fromkeys(_TERM.findall((prompt or "").lower())))


def _score(text: str, terms: Sequence[str]) -> float:
    words = _TERM.findall(text.lower())
    if not words:
        return 0.0
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return sum(counts.get(t, 0) / len(words) for t in terms)


def select_evictable(items: Sequence[Resolved], room: int, terms: Sequence[str]) -> list[Resolved]:
    """Evictable items that fit in ``room``: chronological, or by prompt relevance with terms."""
    if sum(i.tokens for i in items) <= room:
        return list(items)
    if terms:
        ranked = sorted(range(len(items)), key=lambda k: (-_score(items[k].text, terms), -k))
        kept: list[int] = []
        used = 0
        for k in ranked:
            if used + items[k].tokens <= room:
                kept.append(k)
                used += items[k].tokens
        return [items[k] for k in sorted(kept)]
    picked: list[Resolved] = []
    used = 0
    for item in reversed(items):
        if used + item.tokens > room:
            break
        picked.append(item)
        used += item.tokens
    picked.reverse()
    return picked


_TOOL_CALL_TYPES = frozenset(
    {"tool_use", "toolUse", "tool-use", "toolCall", "tool_call", "functionCall", "function_call"}
)
_NESTED_KEYS = ("content", "output", "result", "payload", "data", "value")
_ARRAY_KEYS = ("segments", "utterances", "paragraphs", "alternatives", "words", "items", "results")


def _has_tool_call_block(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_tool_call_block(v) for v in value)
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if not isinstance(kind, str):
        kind = value.get("rawType")
    if isinstance(kind, str) and kind in _TOOL_CALL_TYPES:
        return True
    return any(_has_tool_call_block(value.get(k)) for k in (*_NESTED_KEYS, *_ARRAY_KEYS))


def substantive_assistant(message: Mapping[str, Any]) -> bool:
    """An assistant message with visible text or a replayable tool call (the reference's rule)."""
    from lcm_cli.engine.core.jscompat import trim
    from lcm_cli.engine.transcript.text import structured_text

    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        return True
    content = message.get("content")
    text = structured_text(content)
    return bool(text and trim(text)) or _has_tool_call_block(content)


def strip_trailing_assistants(
    messages: Sequence[dict[str, Any]], preserve_substantive: bool = False
) -> list[dict[str, Any]]:
    """Drop trailing assistant messages (a prefill seed).

    With ``preserve_substantive`` (the host delivers the current turn separately: it
    passed ``prompt`` and ``availableTools``) stripping stops at an assistant that says
    something: that is the completed previous reply.
    """
    out = list(messages)
    while out and out[-1].get("role") == "assistant":
        if preserve_substantive and substantive_assistant(out[-1]):
            break
        out.pop()
    return out


# A tool result's cost at the model boundary (lossless-claw 1.0's estimate-tokens.ts): tool
# output and JSON tokenize denser than prose, and every message and block has framing.
_TOOL_RESULT_CHARS_PER_TOKEN = 2
_JSON_CHARS_PER_TOKEN = 3
_MESSAGE_OVERHEAD_TOKENS = 12
_BLOCK_OVERHEAD_TOKENS = 6
_BOUNDARY_SAFETY_MARGIN = 1.2


def _boundary_text(text: str, chars_per_token: int) -> int:
    return math.ceil(estimate_tokens(text) * (4 / chars_per_token))


def _boundary_json(value: Any, chars_per_token: int) -> int:
    if value is None:
        return 0
    return _boundary_text(stringify(value), chars_per_token)


def _tool_result_block(block: Any) -> int:
    if isinstance(block, str):
        return _boundary_text(block, _TOOL_RESULT_CHARS_PER_TOKEN)
    if not isinstance(block, dict):
        return _boundary_json(block, _TOOL_RESULT_CHARS_PER_TOKEN)
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return _BLOCK_OVERHEAD_TOKENS + _boundary_text(block["text"], _TOOL_RESULT_CHARS_PER_TOKEN)
    return _BLOCK_OVERHEAD_TOKENS + _boundary_json(block, _TOOL_RESULT_CHARS_PER_TOKEN)


def _tool_result_boundary(message: Mapping[str, Any]) -> int:
    if message.get("role") not in ("tool", "toolResult") and message.get("type") != "toolResult":
        return 0
    content = message.get("content")
    if isinstance(content, str):
        tokens = _boundary_text(content, _TOOL_RESULT_CHARS_PER_TOKEN)
    elif isinstance(content, list):
        tokens = sum(_tool_result_block(block) for block in content)
    else:
        tokens = _boundary_json(content, _TOOL_RESULT_CHARS_PER_TOKEN)
    name = message.get("toolName", message.get("tool_name"))
    tokens += _MESSAGE_OVERHEAD_TOKENS + _boundary_json(name, _JSON_CHARS_PER_TOKEN)
    return math.ceil(tokens * _BOUNDARY_SAFETY_MARGIN)


def message_tokens(message: Mapping[str, Any]) -> int:
    """A message's cost at the model boundary, as lossless-claw 1.0 weighs it (§6.7).

    The serialized estimate, or for a tool result at least its boundary estimate (text at
    two characters a token, the tool name as JSON at three, 12 tokens a message and 6 a
    block, plus 20%): 1.0 raised tool results' cost so the final clamp leaves them room;
    0.15.3 used the serialized estimate alone.
    """
    return max(serialized_tokens(message), _tool_result_boundary(message))


def clamp_target(budget: int) -> int:
    """The serialized estimate the final clamp keeps an assembly under: 90% of the budget."""
    return max(1, math.floor(budget * 0.9))


def clamp(
    messages: list[dict[str, Any]],
    budget: int,
    costs: list[int] | None = None,
    *,
    preserve_assistant_tail: bool = False,
) -> list[dict[str, Any]]:
    """Keep the newest suffix within 90% of the budget when the total exceeds 90% (§6.7).

    As lossless-claw 1.0: the clamp starts at its target, so a context between 90% and
    100% of the budget is clamped too and the host keeps headroom for its own framing
    (0.15.3 clamped only over the whole budget). Leading orphaned tool results go, the
    newest evicted user turn comes back if none is left, and trailing assistants are
    stripped as :func:`strip_trailing_assistants` does; without
    ``preserve_assistant_tail`` a suffix of assistants only is kept unstripped.
    """
    if costs is None:
        costs = [message_tokens(m) for m in messages]
    target = clamp_target(budget)
    if sum(costs) <= target or not messages:
        return messages
    start = len(messages) - 1
    used = costs[start]
    while start > 0 and used + costs[start - 1] <= target:
        start -= 1
        used += costs[start]
    kept = messages[start:]
    evicted = messages[:start]
    while len(kept) > 1 and kept[0].get("role") == "toolResult":
        kept = kept[1:]
    if not any(m.get("role") == "user" for m in kept):
        latest_user = next((m for m in reversed(evicted) if m.get("role") == "user"), None)
        if latest_user is not None:
            kept = [latest_user, *kept]
    stripped = strip_trailing_assistants(kept, preserve_assistant_tail)
    return stripped if stripped or preserve_assistant_tail else kept


# --------------------------------------------------------------------------
# The assembler
# --------------------------------------------------------------------------


def resolve_budget(effective: Mapping[str, Any], token_budget: int | None) -> int:
    """A positive ``token_budget``, else 128000, capped by ``maxAssemblyTokenBudget`` (§1.5)."""
    budget = token_budget if token_budget and token_budget > 0 else DEFAULT_TOKEN_BUDGET
    cap = EngineSettings(effective).max_assembly_token_budget
    if isinstance(cap, (int, float)) and not isinstance(cap, bool) and cap > 0:
        budget = min(budget, math.floor(cap))
    return budget


def assemble(
    conn: sqlite3.Connection,
    conversation_id: int,
    effective: Mapping[str, Any],
    *,
    token_budget: int | None = None,
    prompt: str | None = None,
    fresh_tail_count: int | None = None,
    stub_large_tool_payloads: bool | None = None,
    preserve_assistant_tail: bool = False,
    final_clamp: bool = True,
) -> dict[str, Any]:
    """Assemble a conversation's context within the token budget.

    Returns ``{messages, estimatedTokens, systemPromptAddition, details}``; ``details``
    (our addition) counts the items kept and dropped and the fresh-tail size. With
    ``final_clamp`` off the messages are left unclamped for a caller that adds to them
    and clamps once at the end, as the reference's engine does (the cue goes first there).
    """
    settings = EngineSettings(effective)
    budget = resolve_budget(effective, token_budget)
    zone = src.zone_of(settings.timezone)  # an empty TZ reads as UTC there
    items = resolve_items(conn, conversation_id, zone)
    count = fresh_tail_count if fresh_tail_count is not None else int(settings.fresh_tail_count)
    max_tail = settings.fresh_tail_max_tokens
    max_tail_tokens = math.floor(max_tail) if isinstance(max_tail, (int, float)) and max_tail >= 0 else None
    edge = tail_boundary(items, count, max_tail_tokens)
    evictable = [i for i in items if i.ordinal < edge]
    tail = [i for i in items if i.ordinal >= edge]
    if stub_large_tool_payloads is None:
        stub_large_tool_payloads = settings.stub_large_tool_payloads is True
    if stub_large_tool_payloads and evictable:
        evictable = stub_stored_results(conn, conversation_id, evictable)
    tail_tokens = sum(i.tokens for i in tail)
    room = max(0, budget - tail_tokens)
    terms = prompt_terms(prompt) if settings.prompt_aware_eviction is True else []
    chosen = select_evictable(evictable, room, terms)
    selected = chosen + tail
    estimated_pre = sum(i.tokens for i in selected)
    known_results = {rid for rid in (tp.result_id(i.message) for i in items) if rid}
    messages = tp.drop_unpaired_calls(
        [i.message for i in selected], [i.ordinal >= edge for i in selected], known_results
    )
    messages = tp.normalize(messages)
    messages = tp.sanitize_pairing(messages)
    costs = [message_tokens(m) for m in messages]
    clamped = (
        clamp(messages, budget, costs, preserve_assistant_tail=preserve_assistant_tail)
        if final_clamp
        else messages
    )
    if clamped is messages:
        estimated = sum(costs)
    else:
        estimated = sum(message_tokens(m) for m in clamped)
    messages = clamped
    return {
        "messages": messages,
        "estimatedTokens": estimated,
        "systemPromptAddition": None,
        "details": {
            "tokenBudget": budget,
            "contextItems": len(items),
            "freshTailItems": len(tail),
            "freshTailTokens": tail_tokens,
            "evictableItems": len(evictable),
            "keptEvictableItems": len(chosen),
            "droppedItems": len(evictable) - len(chosen),
            "summaryItems": sum(1 for i in selected if not i.is_message),
            "storedSummaryItems": sum(1 for i in items if not i.is_message),
            "resolvedTokens": estimated_pre,
            "promptAware": bool(terms),
        },
    }
