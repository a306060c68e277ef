"""Which stored fields a rebuilt message reads, and from which part.

Reference: lossless-claw src/assembler.ts. ``getOriginalRole``, ``pickToolCallId``,
``pickToolName``, ``pickToolIsError`` and ``pickTopLevelAssistantReasoning`` each take the
first part that has the field (the same in v0.15.3 and v1.0.0-beta.4); ``toRuntimeRole``
maps an unknown ``originalRole`` by the stored role. ``resolveMessageItem`` in
v1.0.0-beta.4 no longer puts the stored sender metadata on a user message as ``__openclaw``
nor counts it in the message's tokens (v0.15.3 did both).
"""

from __future__ import annotations

from datetime import timezone
from pathlib import Path
from typing import Any

from lcm_cli.engine.assembly.assembler import rebuild_message, resolve_items
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db.store import Store


def part(ordinal: int, metadata: str, **columns: Any) -> dict[str, Any]:
    return {
        "message_id": 1,
        "ordinal": ordinal,
        "part_type": columns.pop("part_type", "text"),
        "text_content": columns.pop("text_content", None),
        "tool_call_id": columns.pop("tool_call_id", None),
        "tool_name": columns.pop("tool_name", None),
        "tool_input": None,
        "tool_output": None,
        "metadata": metadata,
    }


def rebuilt(role: str, content: str, parts: list[dict[str, Any]]) -> tuple[dict[str, Any], int, str]:
    result = rebuild_message({"role": role, "content": content}, parts)
    assert result is not None
    return result


def test_a_user_message_carries_no_sender_metadata_and_pays_only_for_its_text(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store:
        cid = store.create_conversation("s1")
        sender = {"senderId": "42", "senderName": "Ada", "senderUsername": "ada"}
        store.add_messages(cid, [{"role": "user", "content": "read it", "sender_metadata": sender}])
        (item,) = resolve_items(store.conn, cid, timezone.utc)
    assert item.message == {"role": "user", "content": "read it"}
    assert item.tokens == estimate_tokens("read it")


def test_the_original_role_is_read_from_any_part() -> None:
    # Only the second part names the role: a stored "tool" row of a host toolResult.
    parts = [
        part(0, "{}", text_content="done", tool_call_id="call_1"),
        part(1, '{"originalRole":"toolResult"}', text_content="more"),
    ]
    message, _, _ = rebuilt("tool", "done", parts)
    assert message["role"] == "toolResult" and message["toolCallId"] == "call_1"
    # A stored user row whose second part says assistant is sent as the assistant's.
    parts = [part(0, "{}", text_content="hi"), part(1, '{"originalRole":"assistant"}', text_content="there")]
    assert rebuilt("user", "hi", parts)[0]["role"] == "assistant"


def test_an_unknown_original_role_falls_back_to_the_stored_role() -> None:
    parts = [part(0, '{"originalRole":"developer"}', text_content="ok")]
    message, _, _ = rebuilt("assistant", "ok", parts)
    assert message["role"] == "assistant" and "usage" in message
    assert rebuilt("user", "ok", parts)[0]["role"] == "user"
    # The first non-empty role wins, even one the host does not know.
    parts = [
        part(0, '{"originalRole":""}'),
        part(1, '{"originalRole":"developer"}'),
        part(2, '{"originalRole":"user"}'),
    ]
    assert rebuilt("tool", "x", parts)[0]["role"] == "assistant"  # toolResult without a call id


def test_a_tool_result_reads_its_call_name_and_error_flag_from_any_part() -> None:
    parts = [
        part(0, '{"originalRole":"toolResult"}', text_content="out"),
        part(1, '{"originalRole":"toolResult","toolCallId":"call_9","isError":true}', text_content="err"),
        part(2, '{"originalRole":"toolResult","raw":{"name":"grep"}}'),
    ]
    message, _, _ = rebuilt("tool", "out", parts)
    assert (message["toolCallId"], message["toolName"], message["isError"]) == ("call_9", "grep", True)
    # The raw block's snake-case id counts too; with no boolean isError anywhere there is none.
    parts = [part(0, '{"originalRole":"toolResult","raw":{"tool_call_id":"call_3"}}', text_content="x")]
    message, _, _ = rebuilt("tool", "x", parts)
    assert message["toolCallId"] == "call_3" and message["toolName"] == "unknown"
    assert "isError" not in message


def test_top_level_reasoning_is_read_from_any_part_that_names_its_field() -> None:
    field = '"topLevelReasoningField":"reasoning_content","topLevelReasoningContent":"why"'
    parts = [
        part(0, '{"originalRole":"assistant"}', text_content="answer"),
        part(1, '{"originalRole":"assistant",' + field + "}", text_content="more"),
    ]
    message, tokens, text = rebuilt("assistant", "answer", parts)
    assert message["reasoning_content"] == "why"
    assert tokens == estimate_tokens(text + "\nwhy")
    unnamed = [part(0, '{"originalRole":"assistant","topLevelReasoningContent":"why"}', text_content="a")]
    assert "reasoning_content" not in rebuilt("assistant", "a", unnamed)[0]
