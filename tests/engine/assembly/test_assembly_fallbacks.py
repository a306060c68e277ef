"""`context.assemble` around the assembler (docs/reference/engine.md §6.1, §6.7, §6.8, §2.4, §3.4).

In-process through `api.call` against real SQLite files and a real config file: the
deferred-debt check (emergency drain, degraded results), the bounded live fallbacks,
trailing-prefill stripping, a fork's live suffix, live and stored tool-output stubs,
the prompt-recall cue, the projection epoch and the final clamp.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.assembly.fallback import (
    append_fork_suffix,
    degraded,
    is_volatile,
    strip_prefill,
)
from lcm_cli.engine.assembly.live_stubs import stub_file_id
from lcm_cli.engine.assembly.prompt_recall import identifiers, projection_epoch
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.tokens import estimate_tokens, serialized_tokens
from lcm_cli.engine.db.store import Store
from tests.conftest import lcm
from tests.support.compaction_sim import SMALL, stamp, turn_rows

KEY = "agent:main:fb"
SESSION = {"session_id": "sess-fb", "session_key": KEY}


class Env:
    """A state dir with a plugin config and an lcm.db holding one conversation."""

    def __init__(self, root: Path, **config: Any) -> None:
        self.root = root
        root.mkdir(exist_ok=True)
        plugin = {**SMALL, **config}
        (root / "openclaw.json").write_text(
            json.dumps({"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": plugin}}}})
        )
        self.db = root / "lcm.db"
        with Store.open(self.db) as store:
            self.cid = store.create_conversation("sess-fb", session_key=KEY, created_at=stamp(0))

    def store(self) -> Store:
        return Store.open(self.db)

    def add(self, rows: list[dict[str, Any]], *, in_context: bool = True) -> list[int]:
        with self.store() as store:
            return store.add_messages(self.cid, rows, in_context=in_context)

    def assemble(self, **params: Any) -> dict[str, Any]:
        envelope = call("context.assemble", {**SESSION, **params}, openclaw_dir=str(self.root))
        assert envelope["ok"], envelope
        data: dict[str, Any] = envelope["data"]
        return data

    def sql(self, query: str, args: tuple[Any, ...] = ()) -> list[Any]:
        conn = sqlite3.connect(self.db)
        try:
            rows = conn.execute(query, args).fetchall()
            conn.commit()
            return rows
        finally:
            conn.close()


def _live(count: int, size: int = 40) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"live {i} " + "x" * size}
        for i in range(count)
    ]


# --------------------------------------------------------------------------
# Step 1: trailing prefill
# --------------------------------------------------------------------------


def test_trailing_prefill_is_stripped_unless_the_host_delivers_the_turn() -> None:
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a real reply"}]
    assert strip_prefill(history, False) == history[:1]
    assert strip_prefill(history, True) == history
    thinking_only = [history[0], {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}]
    assert strip_prefill(thinking_only, True) == history[:1]
    blank = [history[0], {"role": "assistant", "content": "  "}]
    assert strip_prefill(blank, True) == history[:1]


def test_passthrough_keeps_a_real_reply_when_prompt_and_tools_are_given(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    live = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "done"}]
    other = {"session_key": "agent:main:none", "session_id": "sess-none", "messages": live}
    plain = call("context.assemble", other, openclaw_dir=str(env.root))["data"]
    assert plain["messages"] == live[:1] and plain["estimatedTokens"] == 0
    host = call(
        "context.assemble",
        {**other, "prompt": "next", "available_tools": "read,write"},
        openclaw_dir=str(env.root),
    )["data"]
    assert host["messages"] == live
    assert host["contextProjection"] is None and host["promptAuthority"] is None


def test_available_tools_must_be_names(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    with pytest.raises(LcmError) as raised:
        call("context.assemble", {**SESSION, "available_tools": "[1, 2]"}, openclaw_dir=str(env.root))
    assert raised.value.code == "INVALID_ARGUMENT"


# --------------------------------------------------------------------------
# Steps 9, 10, 13, 15: bounded live fallbacks
# --------------------------------------------------------------------------


def test_no_context_items_gives_the_bounded_live_fallback(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    live = _live(40, size=400)
    data = env.assemble(messages=live, token_budget=1000)
    assert data["reason"] == "no context items"
    assert data["estimatedTokens"] == sum(serialized_tokens(m) for m in data["messages"])
    assert 0 < data["estimatedTokens"] <= 900  # the clamp keeps ≤ 90 % of the budget
    assert data["messages"][-1] == live[-2]  # trailing assistant prefill stripped
    assert data["contextProjection"]["mode"] == "thread_bootstrap"
    # Within budget the live messages pass unchanged.
    assert env.assemble(messages=live[:3], token_budget=100000)["messages"] == live[:3]


def test_short_stored_context_without_summaries_falls_back_to_live(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(turn_rows(0, 4))
    live = _live(9)
    data = env.assemble(messages=live)
    assert data["reason"] == "live history is longer than the stored context"
    assert data["messages"] == live
    # As many stored items as live messages: the stored context is assembled.
    data = env.assemble(messages=live[:4])
    assert data["reason"] is None and data["messages"][0]["content"].startswith("msg 0:")


def test_an_assembly_without_a_user_message_falls_back(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add([{"role": "assistant", "content": "only me", "created_at": stamp(1)}])
    data = env.assemble(messages=[{"role": "user", "content": "hi"}])
    assert data["reason"] == "no user message in assembly"
    assert data["messages"] == [{"role": "user", "content": "hi"}]


def test_any_failure_gives_a_bounded_live_fallback_without_projection(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(turn_rows(0, 4))
    env.sql("DROP TABLE message_parts")
    live = _live(3)
    data = env.assemble(messages=live)
    assert data["reason"] == "assembly failed"
    assert data["contextProjection"] is None
    assert "message_parts" in data["details"]["error"]
    assert data["messages"] == live


# --------------------------------------------------------------------------
# Step 8: deferred debt
# --------------------------------------------------------------------------


def _debt(env: Env, **fields: Any) -> None:
    with env.store() as store:
        store.set_maintenance(env.cid, pending=True, reason="threshold", **fields)


def _stored_tokens(env: Env) -> int:
    return int(
        env.sql(
            "SELECT SUM(COALESCE(m.token_count, s.token_count)) FROM context_items ci"
            " LEFT JOIN messages m ON m.message_id = ci.message_id"
            " LEFT JOIN summaries s ON s.summary_id = ci.summary_id WHERE ci.conversation_id = ?",
            (env.cid,),
        )[0][0]
    )


def test_debt_near_the_budget_degrades_without_draining(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(turn_rows(0, 30))
    _debt(env)
    pressure = _stored_tokens(env)
    budget = int(pressure / 0.9)  # pressure in (0.75 × budget, budget]
    live = [{"role": "system", "content": "S" * 400}, *_live(30, size=200)]
    data = env.assemble(messages=live, token_budget=budget)
    assert data["reason"] == "near-budget"
    assert data["promptAuthority"] == "preassembly_may_overflow"
    assert data["messages"][0] == live[0]  # leading system message kept
    assert data["messages"][-1] == live[-2]
    assert len(data["messages"]) < len(live) - 1  # the rest suffix-trimmed
    assert data["estimatedTokens"] <= budget
    assert data["details"]["debt"]["pressure"] == pressure
    assert "emergencyDrain" not in data["details"]["debt"]
    assert env.sql("SELECT pending FROM conversation_compaction_maintenance")[0][0] == 1
    assert env.sql("SELECT COUNT(*) FROM summaries")[0][0] == 0


def test_debt_over_the_budget_drains_then_assembles(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(turn_rows(0, 200))
    _debt(env, retry_attempts=2, next_attempt_after="2999-01-01T00:00:00.000Z")
    before = _stored_tokens(env)
    budget = 6000
    assert before > budget
    data = env.assemble(messages=_live(2), token_budget=budget)
    drain = data["details"]["debt"]["emergencyDrain"]
    assert drain["changed"] is True, drain  # forced past the backoff: fewer than 3 attempts
    assert data["details"]["debt"]["pressureAfter"] < before
    assert env.sql("SELECT COUNT(*) FROM summaries")[0][0] > 0
    assert env.sql("SELECT pending, running FROM conversation_compaction_maintenance")[0] == (0, 0)
    if data["details"]["debt"]["pressureAfter"] <= budget * 0.75:
        assert data["reason"] is None and data["promptAuthority"] is None
        assert data["messages"][0]["content"].startswith("<summary ")
    else:
        assert data["reason"] == "emergency-debt-exhausted"


def test_exhausted_retries_are_not_forced_past_the_backoff(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(turn_rows(0, 200))
    _debt(env, retry_attempts=3, next_attempt_after="2999-01-01T00:00:00.000Z")
    data = env.assemble(messages=_live(4), token_budget=6000)
    assert data["details"]["debt"]["emergencyDrain"]["reason"] == "deferred compaction backoff active"
    assert data["reason"] == "emergency-debt-still-pending"
    assert data["promptAuthority"] == "preassembly_may_overflow"
    assert env.sql("SELECT COUNT(*) FROM summaries")[0][0] == 0


def test_a_stateless_session_is_never_drained(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc", statelessSessionPatterns=["agent:main:*"], skipStatelessSessions=True)
    env.add(turn_rows(0, 200))
    _debt(env)
    data = env.assemble(messages=_live(4), token_budget=6000)
    assert data["reason"] == "emergency-debt-still-pending"
    assert "emergencyDrain" not in data["details"]["debt"]
    assert env.sql("SELECT COUNT(*) FROM summaries")[0][0] == 0


def test_degraded_keeps_at_least_the_last_message() -> None:
    messages = [{"role": "developer", "content": "d"}, {"role": "user", "content": "u" * 4000}]
    assert degraded(messages, 10) == messages


# --------------------------------------------------------------------------
# Step 12: fork-bounded conversations
# --------------------------------------------------------------------------


def _fork(env: Env, source_count: int) -> None:
    env.sql(
        "INSERT INTO conversation_bootstrap_state (conversation_id, session_file_path, last_seen_size,"
        " last_seen_mtime_ms, last_processed_offset, fork_bounded, fork_source_message_count)"
        " VALUES (?, '/tmp/x.jsonl', 0, 0, 0, 1, ?)",
        (env.cid, source_count),
    )


def test_a_fork_appends_the_childs_live_suffix(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    parent = turn_rows(0, 6)
    env.add(parent[-2:])  # the copied (trimmed) parent prefix
    _fork(env, len(parent))
    child = [{"role": "user", "content": "child asks"}, {"role": "assistant", "content": "child answers"}]
    live = [{"role": r["role"], "content": r["content"]} for r in parent] + child + [child[0]]
    data = env.assemble(messages=live)
    assert data["details"]["forkBounded"] is True
    contents = [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in data["messages"]
    ]
    assert contents == [
        parent[-2]["content"],
        parent[-1]["content"],
        "child asks",
        "child answers",
        "child asks",
    ]
    # Over the budget: the oldest assembled messages go first.
    small = env.assemble(messages=live, token_budget=serialized_tokens(live[-1]) * 3 + 60)
    assert small["messages"][-1] == child[0]
    assert len(small["messages"]) < len(data["messages"])


def test_fork_suffix_eviction_order() -> None:
    head = [{"role": "user", "content": "h" * 400}, {"role": "user", "content": "i" * 400}]
    tail = [{"role": "user", "content": "t" * 400}, {"role": "user", "content": "u" * 400}]
    one = serialized_tokens(head[0])
    assert append_fork_suffix(head, tail, one * 3) == head[1:] + tail
    assert append_fork_suffix(head, tail, one) == tail[1:]


def test_a_fork_without_context_items_returns_its_live_suffix(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    _fork(env, 3)
    live = _live(6)[:5]
    data = env.assemble(messages=live)
    assert data["reason"] == "no context items"
    assert data["messages"] == live[3:]


# --------------------------------------------------------------------------
# Step 5 and §6.2 step 3: tool-output stubs
# --------------------------------------------------------------------------


def _tool_message(text: str) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }


def test_large_live_tool_outputs_become_deterministic_stubs(tmp_path: Path) -> None:
    files = tmp_path / "files"
    env = Env(
        tmp_path / "oc", stubLargeToolPayloads=True, largeFileTokenThreshold=1000, largeFilesDir=str(files)
    )
    big = "line of output\n" * 400  # above the smallest threshold config set accepts (1000)
    live = [{"role": "user", "content": "read it"}, _tool_message(big), _tool_message("small")]
    data = env.assemble(messages=live)
    file_id = stub_file_id(env.cid, "read", "call_1", big)
    stub = data["messages"][1]["content"][0]["text"]
    assert stub.startswith(f"[LCM Tool Output: {file_id} | tool=read | 6,000 bytes]")
    assert data["messages"][2] == live[2]
    assert data["details"]["liveToolStubs"] == 1
    rows = env.sql("SELECT file_id, byte_size, storage_uri FROM large_files")
    assert rows == [(file_id, 6000, rows[0][2])]
    assert Path(rows[0][2]).read_text() == big
    # Assembling the same turn again reuses the row and the file.
    again = env.assemble(messages=live)
    assert again["messages"][1] == data["messages"][1]
    assert env.sql("SELECT COUNT(*) FROM large_files")[0][0] == 1
    # Without the setting, nothing is written.
    plain = Env(tmp_path / "plain", largeFileTokenThreshold=1000, largeFilesDir=str(files))
    assert plain.assemble(messages=live)["messages"][1] == live[1]
    assert plain.sql("SELECT COUNT(*) FROM large_files")[0][0] == 0


def test_stored_evictable_tool_results_with_large_content_are_stubbed(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc", stubLargeToolPayloads=True, freshTailCount=2)
    rows = [
        {"role": "user", "content": "go", "created_at": stamp(1)},
        {
            "role": "assistant",
            "content": "",
            "created_at": stamp(2),
            "parts": [
                {"part_type": "tool", "tool_call_id": "call_9", "tool_name": "exec", "tool_input": "{}"}
            ],
        },
        {
            "role": "tool",
            "content": "bulk " * 300,
            "created_at": stamp(2),
            "large_content": "file_00aa11bb22cc33dd",
            "parts": [
                {
                    "part_type": "tool",
                    "tool_call_id": "call_9",
                    "tool_name": "exec",
                    "tool_output": "bulk " * 300,
                }
            ],
        },
        {"role": "user", "content": "later", "created_at": stamp(3)},
        {"role": "assistant", "content": "ok", "created_at": stamp(4)},
    ]
    env.add(rows)
    env.sql(
        "INSERT INTO large_files (file_id, conversation_id, file_name, mime_type, byte_size, storage_uri,"
        " exploration_summary) VALUES ('file_00aa11bb22cc33dd', ?, 'exec.txt', 'text/plain', 1500, '/x', 'bulk')",
        (env.cid,),
    )
    data = env.assemble()
    texts = json.dumps(data["messages"])
    assert "[LCM Tool Output: file_00aa11bb22cc33dd | tool=exec | 1,500 bytes]" in texts
    assert "bulk bulk bulk" not in texts
    off = Env(tmp_path / "off", freshTailCount=2)
    off.add(rows)
    assert "bulk bulk bulk" in json.dumps(off.assemble()["messages"])


# --------------------------------------------------------------------------
# §6.7 prompt recall, §6.8 projection
# --------------------------------------------------------------------------


def test_identifiers_are_all_caps_with_underscores_and_never_secrets() -> None:
    prompt = "Is FOO_BAR set, and BAZ_QUX, API_KEY, GITHUB_TOKEN, DB_PASSWORD, FOO_BAR again, A_B, C_D, E_F?"
    assert identifiers(prompt) == ["FOO_BAR", "BAZ_QUX", "A_B", "C_D"]
    assert identifiers("lower_case and NOUNDERSCORE") == []


def test_the_prompt_recall_cue_recalls_evicted_mentions(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(
        [
            {
                "role": "user",
                "content": "Background. We set RETRY_LIMIT to 7 in prod. Unrelated tail.",
                "created_at": stamp(1),
            },
            {
                "role": "assistant",
                "content": "The token=abc123def SESSION_MODE is strict.",
                "created_at": stamp(2),
            },
        ],
        in_context=False,
    )
    env.add([{"role": "user", "content": "hello", "created_at": stamp(3)}])
    data = env.assemble(prompt="What was RETRY_LIMIT and SESSION_MODE and NOT_THERE?")
    cue = data["messages"][0]
    assert cue["role"] == "user"
    assert cue["content"].startswith("<lossless_claw_prompt_recall>\n")
    assert cue["content"].endswith("\n</lossless_claw_prompt_recall>")
    assert '- user matched RETRY_LIMIT: "We set RETRY_LIMIT to 7 in prod."' in cue["content"]
    assert "SESSION_MODE" not in cue["content"]  # its sentence carries a secret value
    assert re.fullmatch(r"prompt-recall-v1:[0-9a-f]{32}", data["contextProjection"]["fingerprint"])
    assert data["details"]["promptRecall"] is True
    assert data["estimatedTokens"] == sum(serialized_tokens(m) for m in data["messages"])
    # Already visible in the assembled context: nothing recalled.
    env.add([{"role": "user", "content": "RETRY_LIMIT is 7", "created_at": stamp(4)}])
    again = env.assemble(prompt="What was RETRY_LIMIT?")
    assert "fingerprint" not in again["contextProjection"]
    # Does not fit the budget: not prepended.
    tight = env.assemble(prompt="What was SESSION_MODE or RETRY_LIMIT?", token_budget=40)
    assert not any("<lossless_claw_prompt_recall>" in str(m["content"]) for m in tight["messages"])


def test_projection_epoch_follows_the_summary_items(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    ids = env.add(turn_rows(0, 6))
    first = env.assemble()["contextProjection"]
    assert first == {"mode": "thread_bootstrap", "epoch": projection_epoch(env.cid, [])}
    assert re.fullmatch(rf"summary-prefix-v1:{env.cid}:[0-9a-f]{{32}}", first["epoch"])
    with env.store() as store:
        leaf = store.add_leaf_summary(env.cid, ids[:2], "early", summary_id="sum_aaaaaaaaaaaaaaaa")
        store.replace_context_with_summary(env.cid, leaf)
    second = env.assemble()["contextProjection"]["epoch"]
    assert second == projection_epoch(env.cid, [(0, "sum_aaaaaaaaaaaaaaaa")])
    assert second != first["epoch"] and env.assemble()["contextProjection"]["epoch"] == second


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_context_show_reports_the_new_fields(tmp_path: Path, fmt: str) -> None:
    env = Env(tmp_path / "oc")
    env.add(turn_rows(0, 4))
    out = lcm("--openclaw-dir", str(env.root), "context", "show", "--session-key", KEY, "--format", fmt)
    assert out.code == 0, out.stderr
    if fmt == "json":
        data = out.json["data"]
        assert data["contextProjection"]["epoch"].startswith("summary-prefix-v1:")
        assert data["promptAuthority"] is None and data["reason"] is None
    else:  # a person sees the totals they check; the engine's internals stay in JSON
        assert "Context size (tokens)" in out.stdout and "Token budget" in out.stdout
        assert "Projection epoch" not in out.stdout


def _volatile(note: str) -> str:
    return (
        "[Inter-session message] sourceSession=agent:main:subagent:x sourceTool=subagent_announce\n"
        f"{'<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>'}\n[Internal task completion event]\n{note}\n"
        "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
    )


def test_volatile_inputs_are_recognised() -> None:
    assert is_volatile({"role": "user", "content": _volatile("done")})
    assert is_volatile(
        {"role": "system", "content": "x\n[Retry after the previous model attempt failed or timed out]"}
    )
    assert not is_volatile({"role": "assistant", "content": _volatile("done")})
    unclosed = "[Inter-session message] a\n<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nno end"
    assert not is_volatile({"role": "user", "content": unclosed})
    bare = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nsomething\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
    assert not is_volatile({"role": "user", "content": bare})
    assert is_volatile(
        {"role": "user", "content": bare.replace("something", "[Internal task completion event]")}
    )


def test_volatile_live_inputs_are_appended_and_take_room_from_the_recall_cue(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(
        [{"role": "user", "content": "We set RETRY_LIMIT to 7 in prod.", "created_at": stamp(1)}],
        in_context=False,
    )
    env.add(
        [
            {"role": "user", "content": "start", "created_at": stamp(2)},
            {"role": "assistant", "content": "ok", "created_at": stamp(3)},
            {"role": "user", "content": "hello", "created_at": stamp(4)},
        ]
    )
    note = {"role": "user", "content": _volatile("Small live note.")}
    live = [{"role": "user", "content": "hello"}, note]
    data = env.assemble(messages=live, prompt="What is RETRY_LIMIT?")
    assert data["messages"][-1] == note and data["details"]["volatileLiveInputs"] == 1
    assert data["messages"][0]["content"].startswith("<lossless_claw_prompt_recall>")
    # Already shown word for word (stored): not appended twice.
    env.add([{"role": "user", "content": note["content"], "created_at": stamp(5)}])
    assert env.assemble(messages=live)["details"]["volatileLiveInputs"] == 0
    # A volatile input naming the identifier means nothing needs recalling.
    mention = {"role": "user", "content": _volatile("Correction: RETRY_LIMIT is 9.")}
    fresh = env.assemble(messages=[*live, mention], prompt="What is RETRY_LIMIT?")
    assert fresh["messages"][-1] == mention and "fingerprint" not in fresh["contextProjection"]
    # Tight budget: the cue goes, the volatile input stays.
    base = env.assemble(messages=[live[0], {"role": "user", "content": _volatile("x" * 800)}])
    tight = env.assemble(
        messages=[live[0], {"role": "user", "content": _volatile("x" * 800)}],
        prompt="What is RETRY_LIMIT?",
        token_budget=base["estimatedTokens"] + 10,
    )
    assert not any("<lossless_claw_prompt_recall>" in str(m["content"]) for m in tight["messages"])
    assert "x" * 800 in str(tight["messages"][-1]["content"])


def test_the_recall_cue_is_gated_on_the_reference_estimate(tmp_path: Path) -> None:
    """The recall cue is weighed against the budget as the reference weighs it.

    The rule (the reference's src/engine.ts, ``assemble`` after buildPromptRecallCue):
    the cue is prepended only when the assembler's own estimate of the context before
    it (the selected items' resolved tokens; after a fork's live suffix, the serialized
    estimate of the combined list) plus the plain estimate of the cue's text is within
    the budget. The final serialized clamp then drops the cue first if the whole list
    is over 90% of the budget (lossless-claw 1.0's clamp; 0.15.3 clamped over 100%).

    Here the stored context resolves to 314 tokens and the cue's text to 71, so it may
    go in from a budget of 385; the list with the cue serializes to 451, so it stays
    only from 502 (90% of 502 is 451.8). Before, the cue was weighed by the serialized estimate of the
    context after the assembler's own clamp: at a budget of 150 to 370 the clamp had
    cut the context to 61 tokens and the cue was added, where the reference leaves it out.
    """
    env = Env(tmp_path / "oc")
    env.add(
        [{"role": "user", "content": "We set RETRY_LIMIT to 7 in prod.", "created_at": stamp(1)}],
        in_context=False,
    )
    env.add(
        [
            {"role": "user", "content": "Earlier notes: " + "lorem ipsum " * 100, "created_at": stamp(2)},
            {"role": "assistant", "content": "ok", "created_at": stamp(3)},
            {"role": "user", "content": "hello", "created_at": stamp(4)},
        ]
    )
    prompt = "What is RETRY_LIMIT?"
    wide = env.assemble(prompt=prompt)
    cue = wide["messages"][0]
    assert wide["details"]["promptRecall"] is True
    assert wide["details"]["resolvedTokens"] == 314
    assert estimate_tokens(cue["content"]) == 71
    assert wide["estimatedTokens"] == 451
    budgets = [
        (150, False),
        (300, False),
        (384, False),
        (385, False),
        (451, False),
        (501, False),
        (502, True),
    ]
    for budget, shown in budgets:
        data = env.assemble(prompt=prompt, token_budget=budget)
        assert data["details"]["promptRecall"] is shown, budget
        assert (data["messages"][0] == cue) is shown, budget
        assert ("fingerprint" in data["contextProjection"]) is shown, budget


def test_the_final_clamp_drops_the_recall_cue_before_any_context(tmp_path: Path) -> None:
    """The cue is weighed against the assembled context as the assembler left it, unclamped.

    The reference's assembler does no serialized clamp of its own: its only one is the
    final clamp of ``assemble`` (src/engine.ts, after the cue and the volatile inputs),
    which drops the cue first. Here the items' resolved tokens leave out what the
    serialized messages carry (the assistants' usage records), so the cue passes the gate,
    yet the list serializes over the budget: the cue goes and the clamp keeps the newest
    context. Before, our assembler clamped first, and the cue then fit in the room that
    clamp had made (about 80 tokens more for the model).
    """
    env = Env(tmp_path / "oc")
    env.add(
        [{"role": "user", "content": "We set RETRY_LIMIT to 7 in prod.", "created_at": stamp(1)}],
        in_context=False,
    )
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}", "created_at": stamp(2 + i)}
        for i in range(40)
    ]
    env.add([*turns, {"role": "user", "content": "hello", "created_at": stamp(50)}])
    prompt = "What is RETRY_LIMIT?"
    assert env.assemble(prompt=prompt)["details"]["promptRecall"] is True
    data = env.assemble(prompt=prompt, token_budget=1000)
    # The gate lets the cue in (222 + 71), but with it the context serializes to 1328.
    assert data["details"]["resolvedTokens"] == 222
    assert data["details"]["promptRecall"] is False
    assert "fingerprint" not in data["contextProjection"]
    assert not any("<lossless_claw_prompt_recall>" in str(m["content"]) for m in data["messages"])
    # What is left is the context clamped as if no cue had been built.
    assert data["messages"] == env.assemble(token_budget=1000)["messages"]
    assert data["messages"][-1]["content"] == "hello"
    assert data["estimatedTokens"] == sum(serialized_tokens(m) for m in data["messages"]) <= 900


def test_recall_snippets_follow_the_references_sentence_rules() -> None:
    from lcm_cli.engine.assembly.prompt_recall import snippet

    text = "first line. ignore\nWe keep it.  Then ZEBRA_LOG_PATH  is /var/log! Trailing part"
    assert snippet(text, "ZEBRA_LOG_PATH") == "Then ZEBRA_LOG_PATH is /var/log!"
    # Not as part of a longer word; a sentence naming a secret-looking word is never quoted.
    assert snippet("see XZEBRA_LOG_PATH", "ZEBRA_LOG_PATH") is None
    assert snippet("The ZEBRA_LOG_PATH uses the auth proxy.", "ZEBRA_LOG_PATH") is None
    long = "word " * 1000 + "ZEBRA_LOG_PATH" + " tail" * 400
    clipped = snippet(long, "ZEBRA_LOG_PATH")
    assert clipped is not None and clipped.startswith("...") and clipped.endswith("...")
    assert clipped.index("ZEBRA_LOG_PATH") == 3 + 900


def test_the_cue_quotes_every_matching_message_up_to_four(tmp_path: Path) -> None:
    env = Env(tmp_path / "oc")
    env.add(
        [
            {"role": "user", "content": f"Note {n}: RETRY_LIMIT is {n}.", "created_at": stamp(n)}
            for n in range(1, 7)
        ],
        in_context=False,
    )
    env.add([{"role": "user", "content": "hello", "created_at": stamp(9)}])
    cue = env.assemble(prompt="RETRY_LIMIT?")["messages"][0]["content"]
    assert cue.splitlines()[2:-1] == [
        f'- user matched RETRY_LIMIT: "Note {n}: RETRY_LIMIT is {n}."' for n in (6, 5, 4, 3)
    ]


def test_volatile_inputs_keep_their_live_position() -> None:
    from lcm_cli.engine.assembly.fallback import merge_volatile, uncovered_volatile

    a, b, c = ({"role": "user", "content": t} for t in ("first", "second", "third"))
    reply = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    retry = {"role": "user", "content": _volatile("again")}
    live = [a, b, retry, c, reply]
    assembled = [{"role": "user", "content": "<summary>...</summary>"}, b, c, reply]
    entries = uncovered_volatile(live, assembled)
    assert entries == [(2, retry)]
    assert merge_volatile(assembled, live, entries) == [assembled[0], b, retry, c, reply]
    # No later live message among the assembled ones: the input goes last.
    assert merge_volatile([a, b], [a, b, retry], [(2, retry)]) == [a, b, retry]


def test_the_hosts_framed_prompt_budget_caps_the_assembly(tmp_path: Path) -> None:
    """OpenClaw 2026.8+ frames its own budget (runtimeSettings.limits.promptTokenBudget:
    the window less its output reserve, system prompt and pending prompt); a larger
    tokenBudget never lets the context past it."""
    import shutil

    from lcm_cli.engine.api import call

    root = tmp_path / "state"
    shutil.copytree(Path(__file__).resolve().parents[3] / "examples" / "openclaw", root)
    fields = {"session_key": "agent:main:main", "token_budget": 5000}
    wide = call("context.assemble", fields, openclaw_dir=str(root))["data"]
    framed = call(
        "context.assemble",
        {**fields, "runtime_settings": {"limits": {"promptTokenBudget": 200, "maxOutputTokens": 8000}}},
        openclaw_dir=str(root),
    )["data"]
    assert wide["details"]["tokenBudget"] == 5000 and framed["details"]["tokenBudget"] == 200
    assert framed["estimatedTokens"] <= 200 < wide["estimatedTokens"]
    unset = call(
        "context.assemble",
        {**fields, "runtime_settings": {"limits": {"promptTokenBudget": None}}},
        openclaw_dir=str(root),
    )["data"]
    assert unset["details"]["tokenBudget"] == 5000
