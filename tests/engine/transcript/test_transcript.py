"""The transcript reader: parsing, leaf-path choice, row values, bad input, memory.

Expected values are computed here independently (hashlib, json, the token rule by
hand) rather than through the module under test.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.identity import canonical_identity_content
from lcm_cli.engine.transcript import json_array, reader
from lcm_cli.engine.transcript.header import read_header, read_session_header
from lcm_cli.engine.transcript.reader import scan_transcript
from lcm_cli.engine.transcript.records import TranscriptMessage
from tests.support.transcripts import (
    ALL_BLOCK_TYPES,
    ENTRY_KINDS,
    GARBAGE,
    MESSAGE_KINDS,
    all_blocks,
    append_garbage,
    append_lines,
    append_truncated,
    conversation_info,
    sender_info,
    write_json_array_transcript,
    write_lines,
    write_sessions_index,
    write_transcript,
)

TS = "2026-06-10T00:00:00.000Z"


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def quarter_tokens(text: str) -> int:
    """The token rule (database.md §7) for text without CJK or astral characters."""
    assert all(ord(ch) < 0x3000 for ch in text)
    return math.ceil(len(text) / 4)


def identity(role: str, content: str) -> str:
    return hashlib.sha256(role.encode() + b"\x00" + content.encode()).hexdigest()


def entry_hash(role: str, content: str) -> str:
    text = json.dumps({"role": role, "content": content}, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def js(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def entry(entry_id: str | None, parent: str | None, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"type": "message"}
    if entry_id is not None:
        line["id"] = entry_id
        line["parentId"] = parent
    line["timestamp"] = TS
    line["message"] = message
    line.update(extra)
    return line


def header(session_id: str = "sess-1") -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": TS}


def read_one(tmp_path: Path, message: dict[str, Any], **extra: Any) -> TranscriptMessage:
    path = write_lines(tmp_path / "one.jsonl", [header(), entry("m1", None, message, **extra)])
    messages = list(scan_transcript(path).iter_messages())
    assert len(messages) == 1
    return messages[0]


def read_all(path: Path) -> list[TranscriptMessage]:
    return list(scan_transcript(path).iter_messages())


def reasons(scan: reader.Transcript) -> list[tuple[int, str]]:
    return [(s.line, s.reason) for s in scan.skipped]


# --------------------------------------------------------------------------
# Roles, content projection, parts and tokens
# --------------------------------------------------------------------------


def test_user_string_message_row_values(tmp_path: Path) -> None:
    msg = read_one(tmp_path, {"role": "user", "content": "hello from history", "timestamp": 1781049600000})
    assert msg.entry_id == "m1"
    assert msg.role == "user"
    assert msg.content == "hello from history"
    assert msg.token_count == quarter_tokens("hello from history")
    assert msg.created_at == "2026-06-10 00:00:00"
    assert msg.identity_hash == identity("user", "hello from history")
    assert msg.entry_hash == entry_hash("user", "hello from history")
    assert msg.sender_metadata is None
    assert msg.parts == [
        {
            "part_type": "text",
            "text_content": "hello from history",
            "tool_call_id": None,
            "tool_name": None,
            "tool_input": None,
            "tool_output": None,
            "metadata": '{"originalRole":"user"}',
        }
    ]
    assert msg.line == 2
    assert msg.byte_size == len(
        js(
            entry("m1", None, {"role": "user", "content": "hello from history", "timestamp": 1781049600000})
        ).encode()
    )


def test_plain_assistant_string_is_measured_as_a_text_block(tmp_path: Path) -> None:
    msg = read_one(tmp_path, {"role": "assistant", "content": "saved reply"})
    assert msg.content == "saved reply"
    assert msg.token_count == quarter_tokens('[{"type":"text","text":"saved reply"}]')
    assert msg.as_row()["transcript_entry_id"] == "m1"


def test_assistant_thinking_text_and_tool_call(tmp_path: Path) -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"}
    text = {"type": "text", "text": "running it"}
    call = {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls", "n": 2}}
    message = {
        "role": "assistant",
        "content": [thinking, text, call],
        "provider": "anthropic",
        "api": "anthropic-messages",
        "model": "claude",
    }
    msg = read_one(tmp_path, message)
    assert msg.content == "running it"
    assert [p["part_type"] for p in msg.parts] == ["reasoning", "text", "tool"]
    assert msg.parts[0]["text_content"] == "hmm"
    assert msg.parts[0]["metadata"] == (
        '{"originalRole":"assistant","modelProvider":"anthropic","modelApi":"anthropic-messages",'
        '"modelId":"claude","rawType":"thinking","raw":' + js(thinking) + "}"
    )
    # Model identity is only on the first part.
    assert msg.parts[1]["metadata"] == '{"originalRole":"assistant","rawType":"text","raw":' + js(text) + "}"
    assert msg.parts[2]["tool_call_id"] == "call_1"
    assert msg.parts[2]["tool_name"] == "bash"
    assert msg.parts[2]["tool_input"] == '{"command":"ls","n":2}'
    # With a full model identity the signature is replayed, so it counts.
    rebuilt = [
        thinking,
        text,
        {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": call["arguments"]},
    ]
    assert msg.token_count == quarter_tokens(js(rebuilt))


def test_thinking_signature_without_model_identity(tmp_path: Path) -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"}
    text = {"type": "text", "text": "ok"}
    msg = read_one(tmp_path, {"role": "assistant", "content": [thinking, text], "provider": "p"})
    assert msg.token_count == quarter_tokens(js([{"type": "thinking", "thinking": "hmm"}, text]))
    sentinel = {"type": "thinking", "thinking": "x", "thinkingSignature": "reasoning_content"}
    msg = read_one(tmp_path, {"role": "assistant", "content": [sentinel, text]})
    assert msg.token_count == quarter_tokens(js([text]))  # the sentinel block is dropped


def test_top_level_reasoning_content(tmp_path: Path) -> None:
    message = {"role": "assistant", "content": "answer", "reasoning_content": "because"}
    msg = read_one(tmp_path, message)
    assert msg.token_count == quarter_tokens('[{"type":"text","text":"answer"}]') + quarter_tokens("because")
    assert json.loads(msg.parts[0]["metadata"]) == {
        "originalRole": "assistant",
        "topLevelReasoningField": "reasoning_content",
        "topLevelReasoningContent": "because",
    }
    only = read_one(tmp_path, {"role": "assistant", "content": [], "reasoning_content": "because"})
    assert only.content == ""
    assert [p["part_type"] for p in only.parts] == ["reasoning"]
    assert only.parts[0]["metadata"] == (
        '{"originalRole":"assistant","rawType":"reasoning_content","topLevelReasoningField":"reasoning_content",'
        '"topLevelReasoningContent":"because","topLevelReasoningOnly":true}'
    )
    assert only.token_count == quarter_tokens('[{"type":"reasoning"}]') + quarter_tokens("because")


def test_tool_result_becomes_tool_role(tmp_path: Path) -> None:
    block = {"type": "text", "text": "total 0"}
    message = {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "bash",
        "content": [block],
        "isError": False,
    }
    msg = read_one(tmp_path, message)
    assert msg.role == "tool"
    assert msg.content == "total 0"
    assert msg.parts == [
        {
            "part_type": "text",
            "text_content": "total 0",
            "tool_call_id": "call_1",
            "tool_name": "bash",
            "tool_input": None,
            "tool_output": None,
            "metadata": '{"originalRole":"toolResult","toolCallId":"call_1","toolName":"bash","isError":false,'
            '"rawType":"text","raw":{"type":"text","text":"total 0"}}',
        }
    ]
    assert msg.token_count == quarter_tokens(js([block]))
    assert msg.identity_hash == identity("tool", "total 0")


def test_system_message(tmp_path: Path) -> None:
    msg = read_one(tmp_path, {"role": "system", "content": "be brief"})
    assert (msg.role, msg.content, msg.token_count) == ("system", "be brief", quarter_tokens("be brief"))


def test_every_block_type_maps_to_its_part_type(tmp_path: Path) -> None:
    blocks = all_blocks("visible text")
    assert [b["type"] for b in blocks] == list(ALL_BLOCK_TYPES)
    msg = read_one(tmp_path, {"role": "assistant", "content": blocks})
    expected = {
        "text": "text",
        "thinking": "reasoning",
        "redacted_thinking": "reasoning",
        "reasoning": "reasoning",
        "toolCall": "tool",
        "tool_use": "tool",
        "toolUse": "tool",
        "tool-use": "tool",
        "tool_call": "agent",  # the reference's part-type table lacks it
        "functionCall": "tool",
        "function_call": "tool",
        "tool_result": "tool",
        "toolResult": "tool",
        "tool_use_result": "agent",  # likewise
        "function_call_output": "tool",
        "image": "file",
        "file": "file",
        "patch": "patch",
        "subtask": "subtask",
        "compaction": "compaction",
        "step_start": "step_start",
        "step-start": "step_start",
        "step_finish": "step_finish",
        "step-finish": "step_finish",
        "snapshot": "snapshot",
        "retry": "retry",
        "agent": "agent",
        "mystery_block": "agent",
    }
    assert [p["part_type"] for p in msg.parts] == [expected[t] for t in ALL_BLOCK_TYPES]
    by_type = dict(zip(ALL_BLOCK_TYPES, msg.parts))
    assert by_type["reasoning"]["text_content"] == "step one\nstep two"
    assert by_type["function_call"]["tool_call_id"] == "fc_g"
    assert by_type["tool_use"]["tool_input"] == '{"path":"/tmp/x"}'
    assert by_type["toolResult"]["tool_output"] == '{"stdout":"a\\nb"}'
    assert by_type["patch"]["text_content"] == "--- a\n+++ b\n"
    for ordinal, part in enumerate(msg.parts):
        meta = json.loads(part["metadata"])
        assert meta["rawType"] == ALL_BLOCK_TYPES[ordinal]
        assert meta["raw"] == blocks[ordinal]
    # The projection keeps texts, skips tool and reasoning blocks, and (as the
    # reference does) reaches nested text such as image data and payload values.
    lines = msg.content.split("\n")
    assert lines[0] == "visible text"
    assert "pondering" not in msg.content and "ls" not in lines
    assert "iVBORw0KGgoAAAANSUhEUg" in lines and "surprise" in lines


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"text":"hi"}', "hi"),
        ('  ["a", {"text": "b"}]  ', "a\nb"),
        ("{not json}", "{not json}"),
        ([], ""),
        (None, ""),
        ([{"type": "toolCall", "id": "x"}, {"type": "thinking", "thinking": "t"}], ""),
        ([{"type": "text", "text": ""}], '[{"type":"text","text":""}]'),
        ({"transcript": "spoken"}, "spoken"),
        ({"segments": [{"text": "one"}, {"text": "two"}]}, "one\ntwo"),
        ({"payload": {"data": {"value": "deep"}}}, "deep"),
        ({"kind": "opaque", "n": 1}, '{"kind":"opaque","n":1}'),
        (5, "5"),
        (True, "true"),
        ([{"type": "tool_result", "toolOutputExternalized": True, "output": "stub"}], "stub"),
    ],
)
def test_content_projection(tmp_path: Path, content: Any, expected: str) -> None:
    msg = read_one(tmp_path, {"role": "user", "content": content})
    assert msg.content == expected
    assert msg.identity_hash == identity("user", expected)


def test_non_array_object_content_is_one_agent_part(tmp_path: Path) -> None:
    msg = read_one(tmp_path, {"role": "user", "content": {"transcript": "spoken"}})
    assert msg.parts == [
        {
            "part_type": "agent",
            "text_content": "spoken",
            "tool_call_id": None,
            "tool_name": None,
            "tool_input": None,
            "tool_output": None,
            "metadata": '{"originalRole":"user","source":"non-array-content","raw":{"transcript":"spoken"}}',
        }
    ]


def test_command_output_message(tmp_path: Path) -> None:
    msg = read_one(tmp_path, {"role": "user", "command": "git status", "output": "clean"})
    assert msg.content == "$ git status\nclean"
    assert msg.token_count == quarter_tokens("$ git status\nclean")
    assert msg.parts[0]["part_type"] == "text"
    assert json.loads(msg.parts[0]["metadata"]) == {
        "originalRole": "user",
        "source": "bash-exec",
        "command": "git status",
    }


def test_sender_metadata_is_allowlisted_and_user_only(tmp_path: Path) -> None:
    envelope = {"senderId": "user-42", "senderName": "Ada", "senderUsername": "  ", "senderIsOwner": True}
    msg = read_one(tmp_path, {"role": "user", "content": "hi", "__openclaw": envelope})
    assert msg.sender_metadata == '{"senderId":"user-42","senderName":"Ada"}'
    msg = read_one(tmp_path, {"role": "assistant", "content": "hi", "__openclaw": envelope})
    assert msg.sender_metadata is None


def test_javascript_number_spelling_and_key_order(tmp_path: Path) -> None:
    # Raw JSON text: Python's json would spell these numbers differently.
    arguments = '{"b":1.0,"2":1e-7,"1":0.00002,"big":12345678901234567890,"f":0.5}'
    line = (
        '{"type":"message","id":"m1","parentId":null,"timestamp":"' + TS + '","message":'
        '{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"x","arguments":'
        + arguments
        + "}]}}"
    )
    path = write_lines(tmp_path / "numbers.jsonl", [js(header()), line])
    (msg,) = read_all(path)
    assert msg.parts[0]["tool_input"] == '{"1":0.00002,"2":1e-7,"b":1,"big":12345678901234567000,"f":0.5}'


# --------------------------------------------------------------------------
# Timestamps
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "envelope", "expected"),
    [
        ({"timestamp": 1781049600999}, TS, "2026-06-10 00:00:00"),
        ({"timestamp": "2026-01-15T10:00:00.750Z"}, TS, "2026-01-15 10:00:00"),
        ({"timestamp": "2026-01-15T10:00:00+02:00"}, TS, "2026-01-15 08:00:00"),
        ({"timestamp": "2026-01-15 10:00:00"}, TS, "2026-01-15 10:00:00"),
        ({"timestamp": "2026-01-15"}, TS, "2026-01-15 00:00:00"),
        ({"timestamp": "2026-02-30T10:00:00Z"}, TS, "2026-03-02 10:00:00"),
        ({"timestamp": "2026-01-15T24:00:00Z"}, TS, "2026-01-16 00:00:00"),
        ({"createdAt": "2026-01-15T10:00:00Z"}, TS, "2026-01-15 10:00:00"),
        ({"timestamp": None, "created_at": 0}, TS, "1970-01-01 00:00:00"),
        ({}, "2026-05-01T12:34:56.000Z", "2026-05-01 12:34:56"),
        ({"timestamp": "  "}, "2026-05-01T12:34:56.000Z", "2026-05-01 12:34:56"),
        ({"timestamp": "not a date"}, TS, None),  # a non-blank inner value wins, even unreadable
        ({"timestamp": 9e15}, TS, None),
        ({}, "garbage", None),
    ],
)
def test_created_at(tmp_path: Path, fields: dict[str, Any], envelope: str, expected: str | None) -> None:
    line = {"type": "message", "id": "m1", "parentId": None, "timestamp": envelope}
    line["message"] = {"role": "user", "content": "x", **fields}
    path = write_lines(tmp_path / "ts.jsonl", [header(), line])
    (msg,) = read_all(path)
    assert msg.created_at == expected


# --------------------------------------------------------------------------
# Identity and entry hashes (database.md §5)
# --------------------------------------------------------------------------


def test_inbound_metadata_is_canonicalized_for_identity(tmp_path: Path) -> None:
    first = f"{conversation_info('1001', '2026-06-10T00:00:00Z')}\n\n{sender_info()}\n\nplease deploy"
    second = f"{conversation_info('2002', '2026-06-11T09:30:00Z')}\n\n{sender_info()}\n\nplease deploy"
    path = write_lines(
        tmp_path / "inbound.jsonl",
        [
            header(),
            entry("m1", None, {"role": "user", "content": first}),
            entry("m2", "m1", {"role": "user", "content": second}),
            entry("m3", "m2", {"role": "assistant", "content": first}),
        ],
    )
    one, two, three = read_all(path)
    canonical = (
        "Conversation info (untrusted metadata):\n```json\n"
        '{"conversation_label":"Ops room","group_subject":"ops","sender":"Ada","sender_id":"42"}'
        "\n```\n\nSender (untrusted metadata):\n```json\n"
        '{"id":"42","label":"Ada (42)","name":"Ada","username":"ada"}'
        "\n```\n\nplease deploy"
    )
    assert one.content == first  # the stored content is untouched
    assert one.identity_hash == two.identity_hash == identity("user", canonical)
    assert one.entry_hash == two.entry_hash == entry_hash("user", canonical)
    assert three.identity_hash == identity("assistant", first)  # only user content changes


def test_history_recap_and_delivery_prelude() -> None:
    info = conversation_info("1", "t", history=2)
    recap = (
        'Chat history since last reply (untrusted, for context):\n```json\n[{"sender":"Bo","body":"x"}]\n```'
    )
    content = f"Delivery: dm\n\n{info}\n\n{recap}\n\nthe ask"
    assert canonical_identity_content("user", content) == (
        "Delivery: dm\n\nConversation info (untrusted metadata):\n```json\n"
        '{"conversation_label":"Ops room","group_subject":"ops","sender":"Ada","sender_id":"42"}'
        "\n```\n\nthe ask"
    )
    # A body that is only metadata, quoted prose, or a non-user role hashes verbatim.
    only_meta = conversation_info("1", "t")
    assert canonical_identity_content("user", only_meta) == only_meta
    prose = "Conversation info (untrusted metadata): I typed this myself"
    assert canonical_identity_content("user", prose) == prose
    assert canonical_identity_content("assistant", content) == content


def test_keys_sort_as_javascript_locale_compare() -> None:
    body = json.dumps({"Zeta": 1, "alpha": 2, "_x": 3, "a_b": 4, "ab": 5, "10": 6, "2": 7, "sender": "s"})
    content = f"Conversation info (untrusted metadata):\n```json\n{body}\n```\n\nhi"
    result = canonical_identity_content("user", content)
    assert '{"2":7,"10":6,"_x":3,"a_b":4,"ab":5,"alpha":2,"sender":"s","Zeta":1}' in result


# --------------------------------------------------------------------------
# The active leaf path (§3.4)
# --------------------------------------------------------------------------


def msg_entry(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    return entry(entry_id, parent, {"role": "user", "content": text})


def test_abandoned_branch_is_skipped(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "branch.jsonl",
        [
            header(),
            msg_entry("root", None, "root"),
            msg_entry("abandoned", "root", "abandoned"),
            msg_entry("active", "root", "active"),
            msg_entry("leaf", "active", "leaf"),
        ],
    )
    scan = scan_transcript(path)
    assert scan.leaf_path and scan.all_ids and scan.flatten_reason is None
    assert [m.content for m in scan.iter_messages()] == ["root", "active", "leaf"]
    assert reasons(scan) == [(3, "abandoned_branch")]
    assert scan.candidate_count == 3


def test_mid_file_null_parent_is_a_new_root(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "reset.jsonl",
        [
            header(),
            msg_entry("a", None, "a"),
            msg_entry("b", "a", "b"),
            msg_entry("c", None, "c"),
            msg_entry("d", "c", "d"),
        ],
    )
    scan = scan_transcript(path)
    assert [m.entry_id for m in scan.iter_messages()] == ["c", "d"]
    assert reasons(scan) == [(2, "abandoned_branch"), (3, "abandoned_branch")]


def test_path_order_is_root_to_leaf_even_against_file_order(tmp_path: Path) -> None:
    # b names a parent that only appears later in the file.
    path = write_lines(
        tmp_path / "forward.jsonl",
        [header(), msg_entry("b", "a", "b"), msg_entry("a", None, "a"), msg_entry("c", "b", "c")],
    )
    scan = scan_transcript(path)
    assert scan.leaf_path
    assert [(m.content, m.line) for m in scan.iter_messages()] == [("a", 3), ("b", 2), ("c", 4)]


def test_structural_entries_link_the_chain(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "linked.jsonl",
        [
            header(),
            msg_entry("a", None, "a"),
            {"type": "model_change", "id": "mc", "parentId": "a", "provider": "p", "modelId": "m"},
            msg_entry("b", "mc", "b"),
            {"type": "custom", "id": "cu", "parentId": "b", "customType": "x", "data": {}},
        ],
    )
    scan = scan_transcript(path)
    assert scan.leaf_path
    assert [m.entry_id for m in scan.iter_messages()] == ["a", "b"]
    assert scan.structural == {"session": 1, "model_change": 1, "custom": 1}
    assert scan.skipped == []


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        ([msg_entry("a", None, "a"), msg_entry("b", "missing", "b")], "dangling_parent"),
        ([msg_entry("a", "b", "a"), msg_entry("b", "a", "b")], "cycle"),
        (
            [msg_entry("a", None, "a"), {"role": "user", "content": "bare"}, msg_entry("b", "a", "b")],
            "missing_ids",
        ),
    ],
)
def test_broken_chains_flatten_in_file_order(tmp_path: Path, lines: list[Any], why: str) -> None:
    path = write_lines(tmp_path / "flat.jsonl", [header(), *lines])
    scan = scan_transcript(path)
    assert not scan.leaf_path
    assert scan.flatten_reason == why
    assert scan.all_ids == (why != "missing_ids")
    got = list(scan.iter_messages())
    assert [m.content for m in got] == [
        line["message"]["content"] if "message" in line else line["content"] for line in lines
    ]
    if why == "missing_ids":
        assert got[1].entry_id is None  # a bare message has no transcript entry id


def test_bare_message_ids_count_for_the_tree_but_are_not_entry_ids(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "bare.jsonl",
        [
            header(),
            {"id": "b1", "parentId": None, "role": "user", "content": "bare"},
            msg_entry("m2", "b1", "x"),
        ],
    )
    scan = scan_transcript(path)
    assert scan.leaf_path
    assert [m.entry_id for m in scan.iter_messages()] == [None, "m2"]


def test_duplicate_ids(tmp_path: Path) -> None:
    # Full ids: the last occurrence of an id is the one on the path.
    path = write_lines(
        tmp_path / "dup.jsonl",
        [
            header(),
            msg_entry("a", None, "first a"),
            msg_entry("a", None, "second a"),
            msg_entry("b", "a", "b"),
        ],
    )
    scan = scan_transcript(path)
    assert [m.content for m in scan.iter_messages()] == ["second a", "b"]
    assert reasons(scan) == [(2, "duplicate_entry_id")]
    # Flattened (a dangling parent): the first occurrence is kept, as the importer does.
    path = write_lines(
        tmp_path / "dupflat.jsonl",
        [
            header(),
            msg_entry("a", None, "first a"),
            msg_entry("a", "zz", "second a"),
            msg_entry("b", "a", "b"),
        ],
    )
    scan = scan_transcript(path)
    assert scan.flatten_reason == "dangling_parent"
    assert [m.content for m in scan.iter_messages()] == ["first a", "b"]
    assert reasons(scan) == [(3, "duplicate_entry_id")]


def test_generated_transcript_with_branches(tmp_path: Path) -> None:
    generated = write_transcript(
        tmp_path / "gen.jsonl", session_id="gen", messages=120, branches=True, seed=3
    )
    scan = scan_transcript(generated.path)
    messages = list(scan.iter_messages())
    assert scan.session_id == "gen" and scan.header_id == "gen"
    assert [m.entry_id for m in messages] == generated.expected_ids
    assert [m.role for m in messages] == generated.expected_roles
    assert scan.candidate_count == generated.message_count
    assert scan.structural == generated.structural
    assert set(ENTRY_KINDS) <= set(scan.structural)
    assert set(MESSAGE_KINDS) <= generated.kinds_written
    skipped = Counter(s.reason for s in scan.skipped)
    assert skipped == {
        "abandoned_branch": len(generated.abandoned_ids),
        "unsupported_role": len(generated.unsupported_lines),
    }
    assert (
        sorted(s.line for s in scan.skipped if s.reason == "unsupported_role") == generated.unsupported_lines
    )
    assert {m.role for m in messages} == {"user", "assistant", "tool", "system"}
    assert any(m.sender_metadata for m in messages)


def test_generated_legacy_transcripts_flatten(tmp_path: Path) -> None:
    for style, with_ids in (("envelope", False), ("bare", True)):
        generated = write_transcript(
            tmp_path / f"{style}.jsonl", session_id="old", messages=40, with_ids=with_ids, style=style
        )
        scan = scan_transcript(generated.path)
        assert scan.flatten_reason == "missing_ids"
        messages = list(scan.iter_messages())
        assert [m.entry_id for m in messages] == generated.expected_ids == [None] * generated.message_count


def test_generator_is_deterministic(tmp_path: Path) -> None:
    a = write_transcript(tmp_path / "a.jsonl", session_id="s", messages=60, seed=9, branches=True)
    b = write_transcript(tmp_path / "b.jsonl", session_id="s", messages=60, seed=9, branches=True)
    c = write_transcript(tmp_path / "c.jsonl", session_id="s", messages=60, seed=10, branches=True)
    assert a.path.read_bytes() == b.path.read_bytes() != c.path.read_bytes()


# --------------------------------------------------------------------------
# Session id and header
# --------------------------------------------------------------------------


def test_session_id_from_header_or_file_name(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "file-stem.jsonl", [header("  hdr-1  "), msg_entry("a", None, "a")])
    assert tuple(read_header(path)) == ("hdr-1", "hdr-1")
    path = write_lines(tmp_path / "no-header.jsonl", [msg_entry("a", None, "a")])
    assert tuple(read_header(path)) == ("no-header", None)
    scan = scan_transcript(path)
    assert (scan.session_id, scan.header_id) == ("no-header", None)
    # A session line that is not the first non-blank line is not the header.
    path = write_lines(tmp_path / "late.jsonl", ["", "  ", msg_entry("a", None, "a"), header("late")])
    assert read_header(path).header_id is None
    assert scan_transcript(path).session_id == "late" and scan_transcript(path).structural == {"session": 1}
    path = write_lines(tmp_path / "blank-id.jsonl", [header("  ")])
    assert tuple(read_header(path)) == ("blank-id", None)


def test_empty_and_header_only_files(tmp_path: Path) -> None:
    for name, lines in (("empty", []), ("blank", ["", "   ", "\t"]), ("header", [header("h")])):
        path = tmp_path / f"{name}.jsonl"
        if lines:
            write_lines(path, lines)
        else:
            path.write_bytes(b"")
        scan = scan_transcript(path)
        assert scan.candidate_count == 0
        assert scan.skipped == []
        assert list(scan.iter_messages()) == []
        assert scan.flatten_reason == "no_records"
    assert scan.header_id == "h" and scan.structural == {"session": 1}


# --------------------------------------------------------------------------
# JSON-array files (§3.1)
# --------------------------------------------------------------------------


def test_json_array_file(tmp_path: Path) -> None:
    path = write_json_array_transcript(
        tmp_path / "legacy.jsonl",
        [
            {"role": "user", "content": "hi", "timestamp": 1781049600000},
            {"type": "message", "id": "x", "message": {"role": "user", "content": "enveloped"}},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
            {"role": "bashExecution", "command": "ls", "output": ""},
            42,
        ],
    )
    scan = scan_transcript(path)
    assert scan.mode == "json-array"
    assert scan.header_id is None and scan.session_id == "legacy"
    messages = list(scan.iter_messages())
    assert [(m.role, m.content, m.entry_id) for m in messages] == [
        ("user", "hi", None),
        ("assistant", "yo", None),
    ]
    assert messages[0].created_at == "2026-06-10 00:00:00"
    assert [r for _, r in reasons(scan)] == ["array_envelope_entry", "unsupported_role", "not_an_object"]


def test_json_array_that_does_not_parse_imports_nothing(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(
        '[\n{"role": "user", "content": "a"},\n{"role": "user", "content": "b"},\n{"role": oops}\n]\n'
    )
    scan = scan_transcript(path)
    assert scan.candidate_count == 0 and list(scan.iter_messages()) == []
    assert reasons(scan) == [(2, "invalid_json_array"), (3, "invalid_json_array"), (4, "invalid_json")]
    path.write_text('[{"role": "user", "content": "a"}] trailing')
    assert scan_transcript(path).candidate_count == 0


def test_json_array_streams_through_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [{"role": "user", "content": f"message {i} " + "é" * (i % 7), "n": i * 1.5} for i in range(60)]
    path = write_json_array_transcript(tmp_path / "arr.jsonl", items)
    whole = [m.content for m in read_all(path)]
    monkeypatch.setattr(json_array, "_CHUNK", 5)
    assert [m.content for m in read_all(path)] == whole == [item["content"] for item in items]


# --------------------------------------------------------------------------
# Bad input: reported with line numbers, never raised
# --------------------------------------------------------------------------


def test_every_kind_of_garbage_is_reported(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [header(), msg_entry("a", None, "good")])
    kinds = append_garbage(path)
    append_lines(
        path,
        [
            {"role": "bashExecution", "command": "ls", "output": "x"},
            {"type": "message", "message": "not an object"},
            {"type": 7, "message": {"role": "user", "content": "x"}},
            {"type": "message", "id": "nomsg"},
            {"foo": 1},
        ],
    )
    append_truncated(path)
    scan = scan_transcript(path)
    assert [m.content for m in scan.iter_messages()] == ["good"]
    expected = [(3 + i, kind) for i, kind in enumerate(kinds)]
    expected += [
        (3 + len(kinds), "unsupported_role"),
        (4 + len(kinds), "wrong_type"),
        (5 + len(kinds), "wrong_type"),
        (6 + len(kinds), "missing_fields"),
        (7 + len(kinds), "missing_fields"),
        (8 + len(kinds), "truncated_last_line"),
    ]
    assert reasons(scan) == expected
    assert set(GARBAGE) <= {reason for _, reason in reasons(scan)}


def test_not_utf8_message_is_imported_with_replacement_characters(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "latin1.jsonl",
        [
            js(header()).encode(),
            b'{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"caf\xe9"}}',
        ],
    )
    scan = scan_transcript(path)
    (msg,) = scan.iter_messages()
    assert msg.content == "caf\ufffd"
    assert msg.identity_hash == identity("user", "caf\ufffd")
    assert [(w.line, w.reason) for w in scan.warnings] == [(2, "not_utf8_replaced")]


def test_binary_file(tmp_path: Path) -> None:
    rng = random.Random(1)
    path = tmp_path / "binary.jsonl"
    path.write_bytes(bytes(rng.randrange(256) for _ in range(200_000)) + b"\x00" * 1000)
    scan = scan_transcript(path)
    assert scan.candidate_count == 0 and list(scan.iter_messages()) == []
    assert scan.skipped and {r for _, r in reasons(scan)} <= {
        "binary",
        "invalid_json",
        "not_utf8",
        "truncated_last_line",
        "not_an_object",
    }


def test_line_breaks_as_node_reads_them(tmp_path: Path) -> None:
    first = js(msg_entry("a", None, "one")).encode()
    second = js(msg_entry("b", "a", "two")).encode()
    third = js(msg_entry("c", "b", "three")).encode()
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf" + js(header()).encode() + b"\r\n" + first + b"\r" + second + b"\r\n" + third
    )
    scan = scan_transcript(path)
    assert scan.header_id == "sess-1"
    assert [(m.content, m.line) for m in scan.iter_messages()] == [("one", 2), ("two", 2), ("three", 3)]


def test_too_deep_json_is_skipped(tmp_path: Path) -> None:
    deep = '{"role":"user","content":' + "[" * 5000 + "]" * 5000 + "}"
    shallow = js({"role": "user", "content": [[["fine"]]]})
    path = write_lines(tmp_path / "deep.jsonl", [deep, shallow])
    scan = scan_transcript(path)
    assert reasons(scan) == [(1, "too_deep")]
    assert [m.content for m in scan.iter_messages()] == ["fine"]


def test_unreadable_files_raise_a_typed_error(tmp_path: Path) -> None:
    for target in (tmp_path / "missing.jsonl", tmp_path):
        with pytest.raises(LcmError) as caught:
            scan_transcript(target)
        assert caught.value.code == "TRANSCRIPT_UNREADABLE"
        assert caught.value.details == {"file": str(target)}
        with pytest.raises(LcmError):
            read_header(target)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # keeps open() from blocking
    try:
        with pytest.raises(LcmError) as caught:
            scan_transcript(fifo)
        assert caught.value.code == "TRANSCRIPT_UNREADABLE"
    finally:
        os.close(fd)


def test_growth_after_the_scan_is_ignored_and_rewrites_are_caught(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "live.jsonl", [header(), msg_entry("a", None, "a"), msg_entry("b", "a", "b")]
    )
    scan = scan_transcript(path)
    append_lines(path, [msg_entry("c", "b", "appended later")])
    assert [m.content for m in scan.iter_messages()] == ["a", "b"]
    write_lines(path, [header(), msg_entry("zz", None, "rewritten in place with other content......")])
    with pytest.raises(LcmError) as caught:
        list(scan.iter_messages())
    assert caught.value.code == "TRANSCRIPT_CHANGED"


def test_a_partial_last_line_within_the_scan_window(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "partial.jsonl", [header(), msg_entry("a", None, "a")])
    append_truncated(path)
    scan = scan_transcript(path)
    assert [m.content for m in scan.iter_messages()] == ["a"]
    assert reasons(scan) == [(3, "truncated_last_line")]
    assert scan.size_bytes == path.stat().st_size
    assert scan.mtime_ms == path.stat().st_mtime_ns // 1_000_000


# --------------------------------------------------------------------------
# sessions.json
# --------------------------------------------------------------------------


def test_sessions_index_shape(tmp_path: Path) -> None:
    target = write_sessions_index(
        tmp_path / "agents" / "main",
        {
            "agent:main:main": "sess-1",
            "agent:main:telegram:42": {"sessionId": "sess-2", "channel": "telegram"},
        },
    )
    data = json.loads(target.read_text())
    assert target == tmp_path / "agents" / "main" / "sessions" / "sessions.json"
    assert data["agent:main:main"]["sessionId"] == "sess-1"
    assert data["agent:main:main"]["sessionFile"].endswith("sessions/sess-1.jsonl")
    assert data["agent:main:telegram:42"]["channel"] == "telegram"
    assert all(isinstance(entry["updatedAt"], int) for entry in data.values())


# --------------------------------------------------------------------------
# Memory stays flat
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_transcripts(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("big")
    return {
        n: write_transcript(root / f"t{n}.jsonl", session_id=f"t{n}", messages=n, seed=n).path
        for n in (2_000, 20_000)
    }


def peak_memory(action: Any) -> tuple[int, Any]:
    tracemalloc.start()
    try:
        result = action()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


@pytest.mark.slow  # a transcript large enough to show memory growth
def test_memory_stays_flat(big_transcripts: dict[int, Path]) -> None:
    peaks: dict[int, int] = {}
    for n, path in big_transcripts.items():
        scan_peak, scan = peak_memory(lambda path=path: scan_transcript(path))
        assert scan_peak < 20 * 2**20, f"scan of {n} messages peaked at {scan_peak} bytes"

        def iterate(scan: reader.Transcript = scan) -> int:
            count = 0
            for _ in scan.iter_messages():
                count += 1
            return count

        peaks[n], count = peak_memory(iterate)
        assert count == scan.candidate_count > 0.9 * n
        assert peaks[n] < 20 * 2**20, f"iterating {n} messages peaked at {peaks[n]} bytes"
    # Ten times the messages may not cost ten times the memory: the iteration holds
    # one message at a time (plus an offset table of 24 bytes per message).
    assert peaks[20_000] < 2 * peaks[2_000] + 1 * 2**20, peaks


def test_candidates_agree_with_built_messages(tmp_path: Path) -> None:
    """Dry run and --verify read candidates from the scan; they must match the full build."""
    from lcm_cli.engine.transcript.reader import scan_transcript
    from tests.support.transcripts import append_garbage, write_transcript

    for index, options in enumerate([{}, {"branches": True}, {"with_ids": False}, {"style": "bare"}]):
        path = tmp_path / f"c{index}.jsonl"
        write_transcript(path, session_id=f"c{index}", messages=60, seed=index, **options)
        append_garbage(path, ["invalid_json", "binary"])
        transcript = scan_transcript(str(path))
        built = list(transcript.iter_messages())
        candidates = list(transcript.iter_candidates())
        assert [(c.entry_id, c.line, c.byte_size, c.parts) for c in candidates] == [
            (m.entry_id, m.line, m.byte_size, len(m.parts)) for m in built
        ]
        assert [c.position for c in candidates] == list(range(transcript.candidate_count))
        chosen = list(transcript.iter_messages(lambda c: c.position % 3 == 0))
        assert chosen == built[::3]


# --- the active path with every record kind (what `lcm rotate` rewrites from) -----------------


def test_path_kinds_and_reader_follow_the_active_path(tmp_path: Path) -> None:
    from tests.support.transcripts import write_transcript

    generated = write_transcript(tmp_path / "s.jsonl", session_id="s", messages=60, branches=True)
    scan = reader.scan_transcript(generated.path)
    kinds = scan.path_kinds()
    with scan.path_reader() as read:
        entries = [read(k) for k in range(len(kinds))]
    # Root to leaf: every record's parent is the record before it (the path is a chain).
    ids = [e.entry["id"] for e in entries]
    assert [e.entry.get("parentId") for e in entries] == [None, *ids[:-1]]
    # The messages on it are exactly the imported ones, plus messages of other roles.
    message_ids = [e.entry["id"] for e, k in zip(entries, kinds) if k == "message"]
    imported = [c.entry_id for c in scan.iter_candidates()]
    assert [i for i in message_ids if i in set(imported)] == imported == generated.expected_ids
    assert not set(generated.abandoned_ids) & set(ids)
    # Settings entries have their own kind; every other entry type is "entry".
    for entry, kind in zip(entries, kinds):
        expected = entry.entry["type"]
        if expected not in ("session_info", "model_change", "thinking_level_change", "message"):
            expected = "entry"
        assert kind == expected and entry.is_message == (kind == "message")
    assert {k for k in kinds} >= {"message", "entry", "session_info", "model_change", "thinking_level_change"}
    assert scan.read_header_line() == json.loads(generated.path.read_text().splitlines()[0])


def test_path_kinds_in_flatten_mode_and_header_reading(tmp_path: Path) -> None:
    from tests.support.transcripts import write_transcript

    legacy = write_transcript(tmp_path / "legacy.jsonl", session_id="l", messages=12, with_ids=False)
    scan = reader.scan_transcript(legacy.path)
    # Without ids only message-shaped lines are records; in file order.
    assert scan.path_kinds() == ["message"] * 12
    assert read_session_header(legacy.path) == {**json.loads(legacy.path.read_text().splitlines()[0])}
    bare = write_transcript(tmp_path / "bare.jsonl", session_id="b", messages=5, header=False)
    assert read_session_header(bare.path) is None
    assert reader.scan_transcript(bare.path).read_header_line() is None
    array = tmp_path / "array.json"
    array.write_text('[{"role": "user", "content": "hi"}]')
    assert read_session_header(array) is None and reader.scan_transcript(array).path_kinds() == []
