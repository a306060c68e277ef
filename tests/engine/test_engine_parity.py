"""Issue 15: the engine decides as lossless-claw 0.15.3's does (facts read from its source)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "oc"
    root.mkdir()
    (root / "openclaw.json").write_text(
        json.dumps(
            {"plugins": {"entries": {"lossless-claw": {"config": {"largeFileThresholdTokens": 1000}}}}}
        )
    )
    return root


def ingest(home: Path, messages: list[Any], **params: Any) -> dict[str, Any]:
    params.setdefault("session_id", "s1")
    return call("session.ingest", {"messages": messages, **params}, openclaw_dir=str(home))["data"]


def assemble(home: Path, **params: Any) -> dict[str, Any]:
    params.setdefault("session_id", "s1")
    params.setdefault("token_budget", 100000)
    return call("context.assemble", params, openclaw_dir=str(home))["data"]


def rows(home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    conn = sqlite3.connect(home / "lcm.db")
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


# --- 1. large tool outputs ------------------------------------------------------------


def test_externalized_text_tool_result_keeps_its_compact_record_and_is_assembled_as_its_placeholder(
    home: Path,
) -> None:
    ingest(
        home,
        [
            {"role": "user", "content": "read it"},
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "call_1", "name": "read", "arguments": {}}],
            },
            {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "read",
                "isError": False,
                "content": [{"type": "text", "text": "x" * 8000}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    )
    ((file_id, size),) = rows(home, "SELECT file_id, byte_size FROM large_files")
    ((part_type, text, call_id, name, output, metadata),) = rows(
        home,
        "SELECT part_type, text_content, tool_call_id, tool_name, tool_output, metadata FROM message_parts"
        " WHERE message_id = 3",
    )
    placeholder = text
    assert placeholder.startswith(f"[LCM Tool Output: {file_id} | tool=read | 8,000 bytes]\n\n")
    assert (part_type, call_id, name, output, size) == ("tool", "call_1", "read", None, 8000)
    meta = json.loads(metadata)
    # The reference's compact block: a text block remembering rawType, the file id and size.
    assert list(meta["raw"]) == [
        "type",
        "text",
        "rawType",
        "externalizedFileId",
        "originalByteSize",
        "toolOutputExternalized",
        "externalizationReason",
        "tool_use_id",
        "isError",
        "name",
    ]
    assert meta["raw"]["text"] == placeholder and meta["raw"]["type"] == "tool_result"
    assert meta["externalizedFileId"] == file_id and meta["originalByteSize"] == 8000
    assert meta["toolOutputExternalized"] is True and meta["rawType"] == "tool_result"
    assembled = assemble(home)["messages"]
    assert assembled[2]["content"] == [{"type": "text", "text": placeholder}]
    assert assembled[2]["toolCallId"] == "call_1" and assembled[3]["content"][0]["text"] == "done"


def test_externalized_function_call_output_is_assembled_with_its_output(home: Path) -> None:
    ingest(
        home,
        [
            {"role": "user", "content": "run"},
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "call_2", "name": "exec", "arguments": {}}],
            },
            {
                "role": "toolResult",
                "toolCallId": "call_2",
                "toolName": "exec",
                "content": [{"type": "function_call_output", "call_id": "call_2", "output": "y " * 4000}],
            },
        ],
    )
    ((file_id,),) = rows(home, "SELECT file_id FROM large_files")
    (metadata,) = rows(home, "SELECT metadata FROM message_parts WHERE message_id = 3")[0]
    raw = json.loads(metadata)["raw"]
    assert raw["type"] == "function_call_output" and raw["output"].startswith(f"[LCM Tool Output: {file_id}")
    assert raw["call_id"] == "call_2" and raw["originalByteSize"] == 8000 and raw["name"] == "exec"
    block = assemble(home)["messages"][2]["content"][0]
    assert list(block) == ["type", "name", "output", "call_id"]
    assert block["output"] == raw["output"] and block["call_id"] == "call_2"


# --- 2. the last assistant reply under the final clamp -----------------------------------


def test_final_clamp_keeps_the_last_reply_when_the_host_delivers_the_turn_separately(home: Path) -> None:
    messages = [
        {"role": "user", "content": "first question " * 200},
        {"role": "assistant", "content": [{"type": "text", "text": "first answer " * 200}]},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": [{"type": "text", "text": "the second answer"}]},
    ]
    ingest(home, messages)
    roles = {}
    for label, extra in {
        "plain": {},
        "prompt only": {"prompt": "next"},
        "prompt and tools": {"prompt": "next", "available_tools": []},
    }.items():
        data = assemble(home, token_budget=400, messages=messages, **extra)
        roles[label] = [m["role"] for m in data["messages"]]
    # Over budget, the clamp keeps the newest suffix within 90%; the reference strips the
    # trailing assistant only when the host does not deliver the turn separately.
    assert roles == {
        "plain": ["user"],
        "prompt only": ["user"],
        "prompt and tools": ["user", "assistant"],
    }


def test_prefill_stripping_stops_at_a_substantive_reply_and_keeps_an_assistant_only_suffix() -> None:
    from lcm_cli.engine.assembly.assembler import clamp, strip_trailing_assistants

    reply = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    call_only = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c", "name": "x", "arguments": {}}],
    }
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"}]}
    user = {"role": "user", "content": "q"}
    assert strip_trailing_assistants([user, reply, thinking], True) == [user, reply]
    assert strip_trailing_assistants([user, call_only], True) == [user, call_only]
    assert strip_trailing_assistants([user, reply, thinking], False) == [user]
    # Without a user turn left, an assistant-only suffix is returned unstripped (no preservation).
    long = {"role": "assistant", "content": "x " * 400}
    assert clamp([long, reply], 50) == [reply]
    assert clamp([long, reply], 50, preserve_assistant_tail=True) == [reply]
    assert clamp([long, thinking], 50, preserve_assistant_tail=True) == []


# --- 3. what the threshold counts, what a sender line costs -------------------------------


def test_threshold_counts_stored_tokens_and_a_leaf_source_pays_the_bare_speaker_label(home: Path) -> None:
    from lcm_cli.engine.compaction import context_items as ci
    from lcm_cli.engine.core.tokens import estimate_tokens

    ingest(
        home,
        [
            {"role": "user", "content": "hello there", "__openclaw": {"senderName": "Ada", "senderId": " "}},
            {"role": "assistant", "content": [{"type": "text", "text": "hi Ada"}]},
        ],
    )
    conn = sqlite3.connect(home / "lcm.db")
    try:
        items = ci.load_items(conn, 1)
        stored = conn.execute("SELECT SUM(token_count) FROM messages").fetchone()[0]
        user_tokens = conn.execute("SELECT token_count FROM messages WHERE role = 'user'").fetchone()[0]
    finally:
        conn.close()
    # getContextTokenCount: the stored columns summed, no sender line.
    assert ci.stored_context_tokens(items) == stored
    # resolveMessageTokenCount: content tokens + estimateTokens("speaker (untrusted metadata): {...}");
    # a blank field is not part of the sender.
    label = 'speaker (untrusted metadata): {"senderName":"Ada"}'
    assert items[0].tokens == user_tokens + estimate_tokens(label)
    assert ci.speaker_line('{"senderName":"Ada","senderId":" "}') == " | " + label


# --- 4. a threshold sweep that ends over its target ---------------------------------------


def test_threshold_compaction_over_target_is_not_ok_and_keeps_its_pending_work(tmp_path: Path) -> None:
    from lcm_cli.engine.compaction.compactor import Compactor
    from lcm_cli.engine.db.store import Store
    from tests.support.compaction_sim import HeadSummarizer, effective, new_conversation, turn_rows

    with Store.open(tmp_path / "lcm.db") as store:
        cid = new_conversation(store)
        store.add_messages(cid, turn_rows(0, 60))
        # A fresh tail larger than the threshold: compaction helps but cannot get under it.
        compactor = Compactor(store, cid, effective(freshTailCount=40), HeadSummarizer())
        first = compactor.compact(token_budget=1000, target="threshold")
        assert (first["ok"], first["compacted"], first["reason"]) == (
            False,
            True,
            "compacted but still over target",
        )
        assert first["result"]["tokensAfter"] > first["result"]["details"]["targetTokens"] == 750
        # Nothing left to compact and still over: exhausted, zero rounds.
        second = compactor.compact(token_budget=1000, target="threshold")
        assert (second["ok"], second["compacted"], second["reason"], second.get("exhausted")) == (
            False,
            False,
            "live context still exceeds target",
            True,
        )
        assert second["result"]["details"]["rounds"] == 0
        exhausted = compactor.compact(token_budget=1000, target="threshold", current_token_count=5000)
        assert exhausted["reason"].endswith("transcript reset required") and exhausted["exhausted"]
        manual = compactor.compact(token_budget=1000, manual=True)
        assert (manual["ok"], manual["reason"], manual.get("exhausted")) == (
            False,
            "nothing to compact",
            None,
        )


# --- 5. manual compaction runs one sweep; chaining is an explicit option -------------------


def test_manual_compaction_runs_one_sweep_unless_until_under_target(tmp_path: Path) -> None:
    from lcm_cli.engine.compaction.compactor import Compactor
    from lcm_cli.engine.db.store import Store
    from tests.support.compaction_sim import HeadSummarizer, effective, new_conversation, turn_rows

    outcomes = {}
    for until in (False, True):
        with Store.open(tmp_path / f"lcm-{until}.db") as store:
            cid = new_conversation(store)
            store.add_messages(cid, turn_rows(0, 120))
            compactor = Compactor(store, cid, effective(maxSweepIterations=3), HeadSummarizer())
            outcomes[until] = compactor.compact(token_budget=1000, manual=True, until_under_target=until)
    one, chained = outcomes[False], outcomes[True]
    # The reference's manual route: one sweep; over the budget after it is still ok ("compacted").
    assert (one["ok"], one["reason"], one["result"]["details"]["rounds"], len(one["passes"])) == (
        True,
        "compacted",
        1,
        3,
    )
    assert one["result"]["tokensAfter"] > 1000
    assert chained["result"]["details"]["rounds"] > 1 and len(chained["passes"]) > 3
    assert chained["result"]["tokensAfter"] < one["result"]["tokensAfter"]


def test_session_compact_takes_until_under_target_through_the_registry(home: Path) -> None:
    words = " ".join(f"word{k}" for k in range(40))
    ingest(
        home, [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} {words}"} for i in range(200)]
    )
    rounds = {}
    for until in (False, True):
        data = call(
            "session.compact",
            {"session_id": "s1", "manual": True, "until_under_target": until, "token_budget": 1500},
            openclaw_dir=str(home),
        )["data"]
        assert data["dryRun"] is True
        rounds[until] = data["result"]["details"]["rounds"]
    assert rounds[False] == 1


# --- 6. the summarizer's source text -------------------------------------------------------


def test_leaf_source_leaves_out_the_thinking_of_a_tool_call_only_step(home: Path) -> None:
    from lcm_cli.engine.compaction.compactor import Compactor
    from lcm_cli.engine.db.store import Store
    from tests.support.compaction_sim import HeadSummarizer, effective

    ingest(
        home,
        [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "PRIVATE plan: call ls"},
                    {"type": "toolCall", "id": "call_1", "name": "ls", "arguments": {"path": "/tmp"}},
                ],
            },
            {"role": "toolResult", "toolCallId": "call_1", "toolName": "ls", "content": "a.txt b.txt"},
            {"role": "assistant", "content": [{"type": "text", "text": "two files"}]},
        ],
    )
    with Store.open(home / "lcm.db") as store:
        compactor = Compactor(store, 1, effective(), HeadSummarizer())
        source = compactor.leaf_source(compactor.items())[0]
    assert "PRIVATE" not in source
    # As the reference (checked by tests/compat/goldens/engine-0.15.3): arguments with no readable
    # text leave the tool part's missing text, which the reference spells "null".
    assert "| assistant]\nnull\n" in source


@pytest.mark.parametrize(
    ("zone", "stamp", "spelled"),
    [
        ("Asia/Tokyo", "2026-07-01T15:00:00.000Z", "2026-07-02 00:00 GMT+9"),
        ("Europe/Berlin", "2026-07-01T15:00:00.000Z", "2026-07-01 17:00 GMT+2"),
        ("Europe/London", "2026-01-01T00:00:00.000Z", "2026-01-01 00:00 GMT"),
        ("Europe/Lisbon", "2026-01-01T00:00:00.000Z", "2026-01-01 00:00 GMT+0"),
        ("Asia/Kolkata", "2026-07-01T15:00:00.000Z", "2026-07-01 20:30 GMT+5:30"),
        ("America/St_Johns", "2026-07-01T15:00:00.000Z", "2026-07-01 12:30 GMT-2:30"),
        ("America/New_York", "2026-07-01T15:00:00.000Z", "2026-07-01 11:00 EDT"),
        ("America/Los_Angeles", "2026-01-01T00:00:00.000Z", "2025-12-31 16:00 PST"),
        ("America/Adak", "2026-01-01T00:00:00.000Z", "2025-12-31 14:00 HAST"),
        ("America/Mazatlan", "2026-07-01T15:00:00.000Z", "2026-07-01 08:00 GMT-7"),
        ("Etc/UTC", "2026-07-01T15:00:00.000Z", "2026-07-01 15:00 UTC"),
        ("UTC", "2026-07-01T15:00:00.000Z", "2026-07-01 15:00 UTC"),
    ],
)
def test_header_times_spell_the_zone_as_intl_en_us_does(zone: str, stamp: str, spelled: str) -> None:
    # Values from Node 24's Intl.DateTimeFormat("en-US", {timeZoneName: "short"}), which the
    # reference's formatTimestamp uses (858 of 858 zone/date pairs agreed when this was written).
    from lcm_cli.engine.compaction.leaf_source import header_time, zone_of

    assert header_time(stamp, zone_of(zone)) == spelled
