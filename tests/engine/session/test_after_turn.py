"""`session.after_turn`: the turn's new messages, the threshold, inline (local) compaction or debt.

In-process through `api.call` (the same envelope every door returns) against real
SQLite files; the serve-driven long conversation and the kill test are in
tests/commands/test_after_turn_serve.py.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.compaction.threshold import evaluate, resolve_threshold
from lcm_cli.engine.core.errors import LcmError
from tests.support.compaction_sim import SMALL, check_invariants
from tests.support.transcripts import write_lines

KEY = "agent:main:main"


def home_with(tmp_path: Path, **config: Any) -> Path:
    home = tmp_path / "oc"
    home.mkdir(exist_ok=True)
    entry = {"enabled": True, "config": {**SMALL, **config}}
    (home / "openclaw.json").write_text(json.dumps({"plugins": {"entries": {"lossless-claw": entry}}}))
    return home


def turn(i: int) -> list[dict[str, Any]]:
    """One user/assistant exchange, about 60 tokens each."""
    words = " ".join(f"w{(i * 13 + k) % 101}" for k in range(40))
    return [
        {"role": "user", "content": f"question {i}: {words}"},
        {"role": "assistant", "content": f"answer {i}: {words}"},
    ]


def after_turn(
    home: Path, live: list[dict[str, Any]], pre: int, env: dict[str, str] | None = None, **params: Any
) -> Any:
    fields = {
        "session_id": "s1",
        "session_key": KEY,
        "messages": live,
        "pre_prompt_message_count": pre,
        **params,
    }
    return call("session.after_turn", fields, openclaw_dir=str(home), env=env)["data"]


def connect(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(home / "lcm.db")


def debt_rows(home: Path) -> list[tuple[Any, ...]]:
    with connect(home) as conn:
        return conn.execute(
            "SELECT pending, running, reason, context_threshold, context_threshold_source, maintenance_revision,"
            " token_budget FROM conversation_compaction_maintenance"
        ).fetchall()


def drive(
    home: Path,
    turns: int,
    budget: int,
    start: int = 0,
    live: list[dict[str, Any]] | None = None,
    **params: Any,
) -> tuple[list[dict[str, Any]], Any]:
    live = live if live is not None else []
    data = None
    for i in range(start, start + turns):
        pre = len(live)
        live.extend(turn(i))
        data = after_turn(home, live, pre, token_budget=budget, **params)
    return live, data


def test_only_the_messages_after_the_pre_prompt_count_are_stored(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    live, data = drive(home, 3, 100000)
    assert data["ingest"]["ingested"] == 2 and data["newMessages"] == 2
    assert data["threshold"]["shouldCompact"] is False and data["reason"] == "below threshold"
    assert data["threshold"]["threshold"] == 75000 and data["threshold"]["source"] == "global"
    # A system line and an unsupported role in the slice are not new messages.
    live.extend([{"role": "custom", "content": "x"}, *turn(3)])
    data = after_turn(home, live, len(live) - 3)
    assert data["newMessages"] == 2 and data["ingest"]["ingested"] == 2
    with connect(home) as conn:
        contents = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
    assert contents == [m["content"] for m in live if m["role"] != "custom"]


def test_deferred_mode_records_one_coalesced_debt_row_then_maintain_drains_it(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    live, data = drive(home, 30, 2000)
    assert data["mode"] == "deferred" and data["threshold"]["shouldCompact"] is True
    assert data["debt"] == {"recorded": True, "reason": "threshold"} and data["compaction"] is None
    assert data["reason"] == "compaction deferred"
    rows = debt_rows(home)
    assert len(rows) == 1  # one row per conversation, coalesced turn after turn
    pending, running, reason, threshold, source, revision, budget = rows[0]
    assert (pending, running, reason, threshold, source, budget) == (1, 0, "threshold", 0.75, "global", 2000)
    assert revision > 1
    with connect(home) as conn:
        assert conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0  # nothing compacted yet
    drained = call("session.maintain", {"session_key": KEY, "token_budget": 2000}, openclaw_dir=str(home))[
        "data"
    ]
    assert drained["changed"] is True and drained["compaction"]["ok"] is True
    assert debt_rows(home)[0][:2] == (0, 0)
    with connect(home) as conn:
        check_invariants(conn, 1)
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == len(live)
    data = after_turn(home, live, len(live))  # nothing new; the context is under the threshold again
    assert data["threshold"]["storedTokens"] <= data["threshold"]["threshold"]


def test_inline_mode_compacts_now_and_records_no_debt(tmp_path: Path) -> None:
    home = home_with(tmp_path, proactiveThresholdCompactionMode="inline")
    live: list[dict[str, Any]] = []
    compactions = []
    for i in range(40):
        pre = len(live)
        live.extend(turn(i))
        data = after_turn(home, live, pre, token_budget=2000)
        assert data["mode"] == "inline" and data["debt"] is None
        if data["compaction"] is not None:
            compactions.append(data["compaction"])
            threshold = data["threshold"]["threshold"]
            assert data["compaction"]["result"]["tokensAfter"] <= threshold
        else:
            assert data["threshold"]["shouldCompact"] is False
    assert len(compactions) >= 2
    assert all(c["ok"] and c["compacted"] and c["passes"] > 0 for c in compactions)
    assert debt_rows(home) == []
    with connect(home) as conn:
        check_invariants(conn, 1)
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == len(live)


def test_inline_mode_with_a_model_compacts_locally_and_leaves_the_model_work_as_debt(tmp_path: Path) -> None:
    # Before issue 30 inline mode called the configured model on the turn's path (and, with
    # a refusing provider, failed and recorded debt). No turn calls a model now: with a
    # model configured, inline compacts with the extractive stand-in and records the debt
    # that `maintain` pays with the model.
    from tests.engine.summarize.test_openai_compat import Endpoint

    endpoint = Endpoint()
    try:
        endpoint.script = [{"status": 401, "json": {"error": {"message": "bad key"}}}] * 50
        home = home_with(tmp_path, proactiveThresholdCompactionMode="inline", summaryModel="after-turn-auth")
        env = {"LCM_SUMMARIZER": "openai", "LCM_SUMMARY_BASE_URL": endpoint.base_url}
        live: list[dict[str, Any]] = []
        data = None
        for i in range(40):
            pre = len(live)
            live.extend(turn(i))
            data = after_turn(home, live, pre, env=env, token_budget=2000)
            if data["compaction"] is not None:
                break
        assert endpoint.requests == []
    finally:
        endpoint.close()
    assert data is not None and data["compaction"]["ok"] is True
    assert data["compaction"]["summarizer"] == "extractive-interim" and data["compaction"]["interim"] is True
    assert data["debt"] == {"recorded": True, "reason": "threshold"}
    assert debt_rows(home)[0][:3] == (1, 0, "threshold")
    with connect(home) as conn:
        models = {r[0] for r in conn.execute("SELECT model FROM summaries")}
        assert models == {"extractive-interim"}
        check_invariants(conn, 1)


def test_threshold_overrides_match_by_session_pattern_and_model_else_global(tmp_path: Path) -> None:
    overrides = [
        {"name": "tight", "match": {"sessionPattern": "agent:*:tight"}, "contextThreshold": 0.1},
        {
            "match": {"model": "gpt-x", "sessionPattern": "agent:**"},
            "contextThreshold": 0.9,
            "freshTailCount": 4,
        },
        {"match": {"modelContextWindowMin": 1000}, "contextThreshold": 0.2},
    ]
    home = home_with(tmp_path, contextThresholdOverrides=overrides)
    tight = after_turn(home, turn(0), 0, session_key="agent:main:tight", session_id="s2", token_budget=1000)
    assert tight["threshold"]["source"] == "override" and tight["threshold"]["threshold"] == 100
    assert tight["threshold"]["override"]["name"] == "tight"
    plain = after_turn(home, turn(0), 0, token_budget=1000)
    assert plain["threshold"]["source"] == "global" and plain["threshold"]["threshold"] == 750
    # The model rule is more specific (100 + 50) than the pattern rule (50); `openai/gpt-x` matches by id.
    modelled = after_turn(
        home,
        turn(0),
        0,
        session_key="agent:main:tight",
        session_id="s2",
        token_budget=1000,
        model="openai/gpt-x",
    )
    assert modelled["threshold"]["threshold"] == 900 and modelled["threshold"]["override"]["index"] == 1
    # session.compact resolves the same way.
    compact = call(
        "session.compact", {"session_key": "agent:main:tight", "token_budget": 1000}, openclaw_dir=str(home)
    )["data"]
    assert compact["threshold"] == 100 and compact["thresholdResolution"]["source"] == "override"
    compact = call("session.compact", {"session_key": KEY, "token_budget": 1000}, openclaw_dir=str(home))[
        "data"
    ]
    assert compact["threshold"] == 750 and compact["thresholdResolution"]["source"] == "global"


def test_override_debt_keeps_its_threshold_for_the_drain(tmp_path: Path) -> None:
    overrides = [{"match": {"sessionPattern": "agent:*:main"}, "contextThreshold": 0.3}]
    home = home_with(tmp_path, contextThresholdOverrides=overrides, freshTailCount=4)
    live, data = drive(home, 12, 2000)
    assert data["threshold"]["threshold"] == 600 and data["debt"]["recorded"] is True
    assert debt_rows(home)[0][3:5] == (0.3, "override")
    drained = call("session.maintain", {"session_key": KEY}, openclaw_dir=str(home))["data"]
    assert drained["thresholdResolution"]["source"] == "override"
    assert drained["compaction"]["result"]["details"]["targetTokens"] == 600
    assert drained["compaction"]["result"]["tokensAfter"] <= 600


def test_threshold_rules_directly() -> None:
    effective = {
        "contextThreshold": 0.5,
        "contextThresholdOverrides": [{"match": {"model": "m"}, "contextThreshold": 2}],
    }
    # An out-of-range override (hand-built config) falls back to the global value.
    assert resolve_threshold(effective, model="m").source == "global"
    res = resolve_threshold({"contextThreshold": 0.5}, session_key=KEY)
    assert evaluate(res, 1000, 500, None).should_compact is False  # strict: equal is not over
    assert evaluate(res, 1000, 100, 501).should_compact is True  # observed tokens count
    assert evaluate(res, 1000, 501, 0).current_tokens == 501


def test_transcript_covering_the_turn_is_not_stored_twice(tmp_path: Path) -> None:
    home = home_with(tmp_path, bootstrapMaxTokens=100000)
    live = turn(0) + turn(1)
    path = tmp_path / "s1.jsonl"
    header = {"type": "session", "id": "s1", "timestamp": "2026-07-01T09:00:00.000Z"}
    entries = [
        {
            "type": "message",
            "id": f"e{i}",
            "parentId": f"e{i - 1}" if i else None,
            "timestamp": f"2026-07-01T09:00:{i:02d}.000Z",
            "message": m,
        }
        for i, m in enumerate(live[:3])
    ]
    write_lines(path, [header, *entries])
    data = after_turn(home, live, 0, session_file=str(path))
    assert data["transcript"]["importedMessages"] == 3
    assert data["ingest"]["alreadyStored"] == 3 and data["ingest"]["ingested"] == 1
    with connect(home) as conn:
        contents = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
    assert contents == [m["content"] for m in live]


def test_a_transcript_that_does_not_line_up_stores_nothing(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    live, _ = drive(home, 2, 100000)
    path = tmp_path / "other.jsonl"
    write_lines(
        path,
        [
            {"type": "session", "id": "s1"},
            {
                "type": "message",
                "id": "x1",
                "message": {"role": "user", "content": "something else entirely"},
            },
        ],
    )
    live.extend(turn(9))
    data = after_turn(home, live, len(live) - 2, session_file=str(path))
    assert data["persisted"] is False and data["reason"].startswith("unsafe to advance")
    assert data["ingest"] is None and data["threshold"] is None
    with connect(home) as conn:
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 4


def test_auto_compaction_summary_and_heartbeat_turns(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    live = turn(0)
    data = after_turn(home, live, 0, auto_compaction_summary=f"Earlier: {live[0]['content']}")
    assert data["ingest"]["ingested"] == 2
    with connect(home) as conn:
        rows = conn.execute("SELECT role, content FROM messages ORDER BY seq").fetchall()
    assert rows[0] == ("user", f"Earlier: {live[0]['content']}") and rows[1][1] == live[1]["content"]
    beat = [
        {"role": "user", "content": "Read HEARTBEAT.md if it exists and follow it."},
        {"role": "assistant", "content": "HEARTBEAT_OK"},
    ]
    data = after_turn(home, live + beat, 2)
    assert data["reason"] == "heartbeat-ack turn" and data["persisted"] is False
    data = after_turn(home, live + turn(5), 2, is_heartbeat=True)
    assert data["ingest"]["ingested"] == 0 and data["ingest"]["skipped"] == 2
    with connect(home) as conn:
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 2


def test_excluded_sessions_write_nothing(tmp_path: Path) -> None:
    home = home_with(tmp_path, ignoreSessionPatterns=["agent:*:skip"])
    data = after_turn(home, turn(0), 0, session_key="agent:main:skip")
    assert data["reason"] == "session excluded" and data["persisted"] is False
    assert not (home / "lcm.db").exists()


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"messages": None}, "INVALID_ARGUMENT"),
        ({"messages": {"role": "user"}}, "INVALID_INPUT"),
        ({"messages": [{"role": 5, "content": "x"}]}, "INVALID_INPUT"),
        ({"messages": ["not an object"]}, "INVALID_INPUT"),
        ({"messages": [{"role": "user", "content": 12}]}, "INVALID_INPUT"),
        ({"pre_prompt_message_count": 3}, "INVALID_ARGUMENT"),
        ({"pre_prompt_message_count": -1}, "INVALID_ARGUMENT"),
        ({"pre_prompt_message_count": "two"}, "INVALID_ARGUMENT"),
        ({"token_budget": "lots"}, "INVALID_ARGUMENT"),
        ({"is_heartbeat": "yes"}, "INVALID_ARGUMENT"),
        ({"auto_compaction_summary": 7}, "INVALID_ARGUMENT"),
        ({"session_id": None, "session_key": None}, "INVALID_ARGUMENT"),
    ],
)
def test_bad_input_is_a_structured_error_and_writes_nothing(
    tmp_path: Path, params: dict[str, Any], code: str
) -> None:
    home = home_with(tmp_path)
    fields = {
        "session_id": "s1",
        "session_key": KEY,
        "messages": turn(0),
        "pre_prompt_message_count": 0,
        **params,
    }
    with pytest.raises(LcmError) as caught:
        call("session.after_turn", fields, openclaw_dir=str(home))
    assert caught.value.code == code
    assert caught.value.message  # says what to fix
    assert not (home / "lcm.db").exists()


def test_bad_input_through_the_hook_door(tmp_path: Path) -> None:
    from tests.commands.test_doors import hook

    home = home_with(tmp_path)
    params = {"sessionId": "s1", "sessionKey": KEY, "messages": turn(0), "prePromptMessageCount": 9}
    result = hook(home, "session.after_turn", json.dumps(params))
    assert result.returncode == 2 and result.stdout == b""
    assert json.loads(result.stderr)["error"]["code"] == "INVALID_ARGUMENT"
    params["prePromptMessageCount"] = 0
    result = hook(home, "session.after_turn", json.dumps(params))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["data"]["ingest"]["ingested"] == 2


def test_the_cli_reads_the_live_messages_from_a_file(tmp_path: Path) -> None:
    from tests.conftest import lcm

    home = home_with(tmp_path)
    live = tmp_path / "live.json"
    live.write_text(json.dumps(turn(0) + turn(1)))
    out = lcm(
        "--openclaw-dir",
        str(home),
        "after-turn",
        "--session-id",
        "s1",
        "--session-key",
        KEY,
        "--pre-prompt-message-count",
        "2",
        "--file",
        str(live),
        "--token-budget",
        "4000",
    )
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["ingest"]["ingested"] == 2 and data["threshold"]["tokenBudget"] == 4000


def test_observed_tokens_trigger_the_threshold_and_are_kept_on_the_debt_row(tmp_path: Path) -> None:
    home = home_with(tmp_path, maxAssemblyTokenBudget=50000)
    data = after_turn(home, turn(0), 0, token_budget=100000, current_token_count=40000)
    threshold = data["threshold"]
    # The budget is capped by maxAssemblyTokenBudget; the host's count wins over the stored one.
    assert threshold["tokenBudget"] == 50000 and threshold["threshold"] == 37500
    assert threshold["observedTokens"] == 40000 and threshold["currentTokens"] == 40000
    assert threshold["shouldCompact"] is True and data["debt"]["recorded"] is True
    with connect(home) as conn:
        row = conn.execute(
            "SELECT token_budget, current_token_count, projected_token_count FROM conversation_compaction_maintenance"
        ).fetchone()
    assert row == (50000, 40000, 40000)
    data = after_turn(home, turn(0) + turn(1), 2, token_budget=100000, current_token_count=0)
    assert data["threshold"]["observedTokens"] is None and data["threshold"]["shouldCompact"] is False
