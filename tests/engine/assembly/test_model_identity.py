"""An assistant's model identity: stored at ingest as lossless-claw stores it, re-attached
at assembly, and the signature gate on thinking blocks (docs/reference/engine.md §6.4)."""

from __future__ import annotations

import json
import sqlite3
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.assembly.assembler import rebuild_message, resolve_items
from lcm_cli.engine.assembly.fallback import _signature as live_signature
from lcm_cli.engine.core.jscompat import stringify

IDENTITY = {
    "provider": "anthropic",
    "api": "anthropic-messages",
    "model": "claude-x",
    "responseModel": "claude-x-2026",
}
KIMI = {"provider": "moonshot", "api": "openai-completions", "model": "kimi"}
SIGNED = {"type": "thinking", "thinking": "plan it", "thinkingSignature": "sig-anthropic"}
SENTINEL = {"type": "thinking", "thinking": "think aloud", "thinkingSignature": "reasoning_content"}
OPENAI_ITEM = {"type": "reasoning", "id": "rs_1", "encrypted_content": "opaque"}
FOLDED = {"type": "thinking", "thinking": "", "thinkingSignature": json.dumps(OPENAI_ITEM)}
IDENTITY_FIELDS = ("provider", "api", "model", "responseModel")
IDENTITY_KEYS = ("modelProvider", "modelApi", "modelId", "responseModelId")


def _conversation(identity: bool) -> list[dict[str, Any]]:
    """One user turn and three assistant replies; ``identity``: the replies name their model."""

    def reply(blocks: list[dict[str, Any]], model: dict[str, str]) -> dict[str, Any]:
        return {"role": "assistant", "content": blocks, **(model if identity else {})}

    return [
        {"role": "user", "content": "what now?"},
        reply([SIGNED, {"type": "text", "text": "the answer"}], IDENTITY),
        reply([SENTINEL, {"type": "text", "text": "done"}], KIMI),
        reply([FOLDED, {"type": "text", "text": "from openai"}], KIMI),
        reply([{"type": "text", "text": "plain"}], KIMI),
    ]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "oc"
    root.mkdir()
    return root


def _ingest(home: Path, session: str, messages: list[dict[str, Any]]) -> int:
    data = call("session.ingest", {"session_id": session, "messages": messages}, openclaw_dir=str(home))[
        "data"
    ]
    assert data["ingested"] == len(messages), data
    return int(data["conversationId"])


def _assemble(home: Path, session: str, live: list[dict[str, Any]]) -> list[dict[str, Any]]:
    envelope = call("context.assemble", {"session_id": session, "messages": live}, openclaw_dir=str(home))
    assert envelope["ok"], envelope
    assert envelope["data"]["reason"] is None  # assembled from the stored rows
    messages: list[dict[str, Any]] = envelope["data"]["messages"]
    return messages


def _rows(home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    conn = sqlite3.connect(home / "lcm.db")
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _parts(home: Path, cid: int) -> list[tuple[Any, ...]]:
    return _rows(
        home,
        "SELECT m.seq, p.ordinal, p.part_type, p.text_content, p.tool_call_id, p.tool_name, p.tool_input,"
        " p.tool_output, p.metadata FROM message_parts p JOIN messages m ON m.message_id = p.message_id"
        " WHERE m.conversation_id = ? ORDER BY m.seq, p.ordinal",
        (cid,),
    )


def test_ingest_stores_the_identity_in_first_part_metadata_as_lossless_claw(home: Path) -> None:
    # Expected forms written from lossless-claw v1.0.0-beta.4 src/message-content.ts,
    # buildMessageParts (with extractModelIdentityMetadata): the identity keys follow
    # originalRole in the first part's metadata only; later parts carry none; a string
    # content's single part carries it too; an empty provider/api/model is still a string.
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [SIGNED, {"type": "text", "text": "the answer"}], **IDENTITY},
        {"role": "assistant", "content": "a string reply", **KIMI},
        {"role": "assistant", "content": "partial", "provider": "p", "api": "", "model": "m"},
        {"role": "assistant", "content": "no api", "provider": "p", "model": "m"},
    ]
    cid = _ingest(home, "s1", messages)
    identity = (
        '"modelProvider":"anthropic","modelApi":"anthropic-messages","modelId":"claude-x",'
        '"responseModelId":"claude-x-2026"'
    )
    assert [(seq, ordinal, meta) for seq, ordinal, *_, meta in _parts(home, cid)] == [
        (1, 0, '{"originalRole":"user"}'),
        (
            2,
            0,
            '{"originalRole":"assistant",'
            + identity
            + ',"rawType":"thinking","raw":'
            + stringify(SIGNED)
            + "}",
        ),
        (2, 1, '{"originalRole":"assistant","rawType":"text","raw":{"type":"text","text":"the answer"}}'),
        (
            3,
            0,
            '{"originalRole":"assistant","modelProvider":"moonshot","modelApi":"openai-completions",'
            '"modelId":"kimi"}',
        ),
        (4, 0, '{"originalRole":"assistant","modelProvider":"p","modelApi":"","modelId":"m"}'),
        (5, 0, '{"originalRole":"assistant"}'),
    ]


def _without_identity(metadata: str | None) -> str | None:
    """Part metadata with the identity keys removed (key order kept)."""
    if metadata is None or not any(f'"{key}"' in metadata for key in IDENTITY_KEYS):
        return metadata
    record = json.loads(metadata)
    return stringify({k: v for k, v in record.items() if k not in IDENTITY_KEYS})


def test_rows_written_before_identity_are_the_same_rows_less_the_identity(home: Path) -> None:
    # What an engine that did not store identity wrote: the same parts, byte for byte,
    # less the identity keys; the message rows themselves are the same.
    current = _ingest(home, "now", _conversation(identity=True))
    legacy = _ingest(home, "before", _conversation(identity=False))
    assert [(*p[:-1], _without_identity(p[-1])) for p in _parts(home, current)] == _parts(home, legacy)
    sql = "SELECT seq, role, content, identity_hash FROM messages WHERE conversation_id = ? ORDER BY seq"
    assert _rows(home, sql, (current,)) == _rows(home, sql, (legacy,))


def test_assembly_reattaches_the_identity_and_keeps_signatures(home: Path) -> None:
    live = _conversation(identity=True)
    _ingest(home, "now", live)
    user, signed, sentinel, folded, plain = _assemble(home, "now", live)
    assert user == {"role": "user", "content": "what now?"}
    # Identity right after the content, before the synthetic usage.
    assert list(signed)[:6] == ["role", "content", *IDENTITY_FIELDS]
    assert {k: signed[k] for k in IDENTITY_FIELDS} == IDENTITY
    assert signed["content"] == live[1]["content"]  # the provider's signature is kept
    assert {k: sentinel.get(k) for k in ("provider", "api", "model")} == KIMI
    assert "responseModel" not in sentinel
    assert sentinel["content"] == live[2]["content"]  # the host's sentinel is kept
    # An OpenAI reasoning item folded into a signature comes back as the item.
    assert folded["content"] == [OPENAI_ITEM, {"type": "text", "text": "from openai"}]
    assert plain["content"] == live[4]["content"] and plain["model"] == "kimi"


def test_assembly_of_rows_without_identity(home: Path) -> None:
    live = _conversation(identity=False)
    _ingest(home, "before", live)
    user, signed, sentinel, folded, plain = _assemble(home, "before", live)
    for message in (signed, sentinel, folded, plain):
        assert not set(IDENTITY_FIELDS) & set(message)
    # A provider's signature is removed, the host's sentinel block dropped, an OpenAI
    # reasoning item still restored.
    assert signed["content"] == [
        {"type": "thinking", "thinking": "plan it"},
        {"type": "text", "text": "the answer"},
    ]
    assert sentinel["content"] == [{"type": "text", "text": "done"}]
    assert folded["content"] == [OPENAI_ITEM, {"type": "text", "text": "from openai"}]
    assert plain["content"] == live[4]["content"]
    # Each still matches its live copy (with or without identity) where assembly
    # compares stored and live messages.
    for assembled, mine, theirs in zip(
        [user, signed, sentinel, folded, plain], live, _conversation(identity=True)
    ):
        assert live_signature(assembled) == live_signature(mine) == live_signature(theirs)


def test_a_partial_identity_counts_as_none(home: Path) -> None:
    text = {"type": "text", "text": "t"}
    partial = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [SIGNED, text], "provider": "p", "api": "", "model": "m"},
        {
            "role": "assistant",
            "content": [SENTINEL, text],
            "provider": "p",
            "model": "m",
            "responseModel": "r",
        },
    ]
    _ingest(home, "partial", partial)
    _, empty_api, no_api = _assemble(home, "partial", partial)
    assert empty_api["content"] == [{"type": "thinking", "thinking": "plan it"}, text]
    assert no_api["content"] == [text]
    assert not set(IDENTITY_FIELDS) & {*empty_api, *no_api}


def test_a_reply_of_dropped_blocks_falls_back_to_its_stored_text() -> None:
    metadata = '{"originalRole":"assistant","rawType":"thinking","raw":' + stringify(SENTINEL) + "}"
    parts = [_part(0, "reasoning", "think aloud", metadata)]
    rebuilt = rebuild_message({"role": "assistant", "content": "", "sender": None}, parts)
    assert rebuilt is not None and rebuilt[0]["content"] == []
    rebuilt = rebuild_message({"role": "assistant", "content": "kept", "sender": None}, parts)
    assert rebuilt is not None and rebuilt[0]["content"] == [{"type": "text", "text": "kept"}]


def test_the_gate_is_decided_for_the_whole_message() -> None:
    # The identity sits on the first part; a signed thinking block later in the message
    # is kept all the same.
    text = {"type": "text", "text": "first"}
    first = (
        '{"originalRole":"assistant","modelProvider":"p","modelApi":"a","modelId":"m","rawType":"text","raw":'
    )
    parts = [
        _part(0, "text", "first", first + stringify(text) + "}"),
        _part(
            1,
            "reasoning",
            "plan it",
            '{"originalRole":"assistant","rawType":"thinking","raw":' + stringify(SIGNED) + "}",
        ),
    ]
    rebuilt = rebuild_message({"role": "assistant", "content": "first", "sender": None}, parts)
    assert rebuilt is not None
    message, _, _ = rebuilt
    assert message["content"] == [text, SIGNED]
    assert (message["provider"], message["api"], message["model"]) == ("p", "a", "m")


def test_reasoning_parts_without_a_raw_block() -> None:
    # Older rows: a reasoning part without its raw block; a part standing only for a
    # top-level reasoning_content is not content (the reasoning rides on the message).
    row = {"role": "assistant", "content": "", "sender": None}
    thinking = _part(0, "reasoning", "hmm", '{"originalRole":"assistant","rawType":"thinking"}')
    reasoning = _part(1, "reasoning", None, '{"originalRole":"assistant","rawType":"reasoning"}')
    rebuilt = rebuild_message(row, [thinking, reasoning])
    assert rebuilt is not None and rebuilt[0]["content"] == [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "reasoning"},
    ]
    only = _part(
        0,
        "reasoning",
        None,
        '{"originalRole":"assistant","rawType":"reasoning_content","topLevelReasoningField":"reasoning_content",'
        '"topLevelReasoningContent":"because","topLevelReasoningOnly":true}',
    )
    rebuilt = rebuild_message(row, [only])
    assert rebuilt is not None
    assert rebuilt[0]["content"] == [] and rebuilt[0]["reasoning_content"] == "because"


def test_resolved_tokens_equal_the_stored_count(home: Path) -> None:
    # The ingest estimate rebuilds the blocks through the same gate as assembly, so the
    # assembled cost of each row is its stored token_count, with identity or without.
    for session, identity in (("now", True), ("before", False)):
        cid = _ingest(home, session, _conversation(identity=identity))
        conn = sqlite3.connect(home / "lcm.db")
        conn.row_factory = sqlite3.Row
        try:
            resolved = resolve_items(conn, cid, timezone.utc)
            stored = [
                r[0]
                for r in conn.execute(
                    "SELECT token_count FROM messages WHERE conversation_id = ? ORDER BY seq", (cid,)
                )
            ]
        finally:
            conn.close()
        assert [item.tokens for item in resolved] == stored


def _part(ordinal: int, part_type: str, text: str | None, metadata: str) -> dict[str, Any]:
    return {
        "message_id": 1,
        "ordinal": ordinal,
        "part_type": part_type,
        "text_content": text,
        "tool_call_id": None,
        "tool_name": None,
        "tool_input": None,
        "tool_output": None,
        "metadata": metadata,
    }
