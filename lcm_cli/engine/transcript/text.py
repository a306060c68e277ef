"""A message's text: the structured-text walk over content blocks and the stored
``content`` column (docs/reference/migrate-sessions.md §6.3).
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.core.jscompat import ABSENT as _ABSENT
from lcm_cli.engine.core.jscompat import JS_SPACE as _JS_SPACE
from lcm_cli.engine.core.jscompat import is_blank as _is_blank
from lcm_cli.engine.core.jscompat import stringify as _stringify
from lcm_cli.engine.core.jscompat import trim as _trim
from lcm_cli.engine.core.jscompat import try_parse as _try_parse

# (The identity canonicalization of user content lives in lcm_cli.engine.core.identity.)

_TOOL_CALL_TYPES = frozenset(
    {"tool_use", "toolUse", "tool-use", "toolCall", "tool_call", "functionCall", "function_call"}
)
_TOOL_RESULT_TYPES = frozenset({"function_call_output", "tool_result", "toolResult", "tool_use_result"})
_TOOL_TYPES = _TOOL_CALL_TYPES | _TOOL_RESULT_TYPES
_REASONING_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
_TEXT_KEYS = ("text", "transcript", "transcription", "message", "summary")
_ARRAY_KEYS = ("segments", "utterances", "paragraphs", "alternatives", "words", "items", "results")
_NESTED_KEYS = ("content", "output", "result", "payload", "data", "value")
_MAX_TEXT_DEPTH = 6


def _looks_like_json(text: str) -> bool:
    # Only a text that starts with a bracket or a space can trim to a bracketed one.
    if not text or not (text[0] == "{" or text[0] == "[" or text[0] in _JS_SPACE):
        return False
    trimmed = _trim(text)
    return bool(trimmed) and (
        (trimmed[0] == "{" and trimmed[-1] == "}") or (trimmed[0] == "[" and trimmed[-1] == "]")
    )


def structured_text(value: Any, depth: int = 0) -> str | None:
    """The text the reference reads from a content value (string, block list or object),
    or None when it has none; strings holding JSON are read as that JSON first."""
    if value is None or depth > _MAX_TEXT_DEPTH:
        return None
    if isinstance(value, str):
        return _string_text(value, depth)
    if isinstance(value, list):
        return _joined_texts(value, depth)
    if not isinstance(value, dict):
        return None
    return _object_text(value, depth)


def _string_text(value: str, depth: int) -> str:
    """A string's text: the text of the JSON it holds when that has any, else itself."""
    if _looks_like_json(value):
        parsed = _try_parse(_trim(value))
        if parsed is not _ABSENT:
            text = structured_text(parsed, depth + 1)
            if text:
                return text
    return value


def _object_text(value: dict[str, Any], depth: int) -> str | None:
    """An object's text: none for reasoning and tool blocks (unless the tool output was
    externalized), else the first non-blank text, array or nested member, in key order."""
    kind = value.get("type")
    if isinstance(kind, str):
        if kind in _REASONING_TYPES:
            return None
        if kind in _TOOL_TYPES:
            return _externalized_tool_text(value, depth)
    for key in _TEXT_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, str) and not _is_blank(candidate):
            return candidate
    for key in _ARRAY_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, list):
            text = _joined_texts(candidate, depth)
            if text is not None:
                return text
    for key in _NESTED_KEYS:
        text = structured_text(value.get(key), depth + 1)
        if text is not None and not _is_blank(text):
            return text
    return None


def _externalized_tool_text(value: dict[str, Any], depth: int) -> str | None:
    """A tool block's text: only an externalized output's first text member counts."""
    if value.get("toolOutputExternalized") is True:
        for key in ("output", "content", "result"):
            text = structured_text(value.get(key), depth + 1)
            if text is not None:
                return text if not _is_blank(text) else None
    return None


def _joined_texts(items: list[Any], depth: int) -> str | None:
    texts = []
    inner = depth + 1
    shortcut = inner <= _MAX_TEXT_DEPTH
    for item in items:
        if shortcut and type(item) is dict:
            # What structured_text gives for the usual blocks, without the general walk:
            # a text block's text, nothing for reasoning and (not externalized) tool blocks.
            kind = item.get("type")
            if kind == "text":
                text = item.get("text")
                if isinstance(text, str) and not _is_blank(text):
                    texts.append(text)
                    continue
            elif isinstance(kind, str) and (
                kind in _REASONING_TYPES
                or (kind in _TOOL_TYPES and item.get("toolOutputExternalized") is not True)
            ):
                continue
        text = structured_text(item, inner)
        if text is not None and not _is_blank(text):
            texts.append(text)
    return "\n".join(texts) if texts else None


def stored_content_text(content: Any) -> str:
    """The stored ``content`` column for a message's ``content`` value."""
    text = structured_text(content)
    if text is not None:
        return text
    if content is None:
        return ""
    if isinstance(content, list):
        if not content:
            return ""
        if all(
            isinstance(item, dict)
            and isinstance(item.get("type"), str)
            and (item["type"] in _TOOL_TYPES or item["type"] in _REASONING_TYPES)
            for item in content
        ):
            return ""
    return _stringify(content)
