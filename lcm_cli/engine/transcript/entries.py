"""What one parsed line carries: a message (bare or in an entry envelope), or the reason
it is not one (docs/reference/migrate-sessions.md §3).
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.core.jscompat import ABSENT as _ABSENT


def is_message_shaped(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("role"), str)
        and ("content" in value or ("command" in value and "output" in value))
    )


def message_of(entry: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """(the message an entry carries, whether it came in an envelope)."""
    if is_message_shaped(entry):
        return entry, False
    if "message" in entry:
        if "type" in entry and entry["type"] != "message":
            return None, False
        inner = entry["message"]
        if is_message_shaped(inner):
            return inner, True
    return None, False


def why_not_message(entry: dict[str, Any]) -> str:
    """Reason for an object line that carries no message (and is not structural)."""
    kind = entry.get("type", _ABSENT)
    if "message" in entry:
        if kind is not _ABSENT and kind != "message":
            return "wrong_type" if not isinstance(kind, str) else "unknown_entry_type"
        inner = entry["message"]
        if not isinstance(inner, dict):
            return "wrong_type"
        return why_not_message_shaped(inner)
    if kind is not _ABSENT:
        if not isinstance(kind, str):
            return "wrong_type"
        if kind != "message":
            return "unknown_entry_type"
        return "missing_fields"
    return why_not_message_shaped(entry)


def why_not_message_shaped(value: dict[str, Any]) -> str:
    if "role" in value and not isinstance(value["role"], str):
        return "wrong_type"
    return "missing_fields"
