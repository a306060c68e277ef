"""The batch raw-id replay filter (docs/reference/engine.md §2.6 step 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lcm_cli.engine.db.store import Store
from lcm_cli.engine.session.ingest import RAW_ID_SQL, RAW_ID_WINDOW, IngestSettings, ingest_messages


def _call(call_id: str, text: str = "run it") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": text},
            {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"cmd": "ls"}},
        ],
    }


def _result(call_id: str, text: str = "a.txt") -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "bash", "content": text}


def _ingest(store: Store, tmp: Path, messages: list[dict[str, Any]], session: str = "s1") -> list[Any]:
    out = ingest_messages(store, IngestSettings(str(tmp / "files")), session, messages)
    return [m.get("reason", m["status"]) for m in out["messages"]]


def test_replayed_tool_turn_is_dropped_new_messages_kept(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store:
        turn = [{"role": "user", "content": "list files"}, _call("c-1"), _result("c-1")]
        assert _ingest(store, tmp_path, turn) == ["ingested"] * 3
        # The host replays the turn (same raw ids, different text) plus one new message.
        replay = [
            _call("c-1", "run it again"),
            _result("c-1", "a.txt b.txt"),
            {"role": "user", "content": "thanks"},
        ]
        assert _ingest(store, tmp_path, replay) == ["duplicate-raw-id", "duplicate-raw-id", "ingested"]
        assert store.conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 4


def test_a_result_is_not_a_replay_of_its_own_call(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store:
        assert _ingest(store, tmp_path, [_call("c-2")]) == ["ingested"]
        # The result shares the call's id but has another role: it is new.
        assert _ingest(store, tmp_path, [_result("c-2"), _call("c-3")]) == ["ingested", "ingested"]


def test_ids_of_another_conversation_do_not_count(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store:
        assert _ingest(store, tmp_path, [_call("c-4"), _result("c-4")], session="a") == ["ingested"] * 2
        assert _ingest(store, tmp_path, [_call("c-4"), _result("c-4")], session="b") == ["ingested"] * 2


def test_filter_off_and_heartbeat(tmp_path: Path) -> None:
    settings = IngestSettings(str(tmp_path / "files"))
    with Store.open(tmp_path / "lcm.db") as store:
        ingest_messages(store, settings, "s1", [_call("c-5")])
        off = ingest_messages(store, settings, "s1", [_call("c-5", "again")], raw_id_filter=False)
        assert off["ingested"] == 1
        beat = ingest_messages(store, settings, "s1", [_call("c-6")], is_heartbeat=True)
        assert beat["messages"][0]["reason"] == "heartbeat"


def test_query_reads_the_recent_window_not_the_parts_table(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store:
        _ingest(store, tmp_path, [_call("c-7"), _result("c-7")])
        plan = " | ".join(
            str(row[-1]) for row in store.conn.execute("EXPLAIN QUERY PLAN " + RAW_ID_SQL, (1, RAW_ID_WINDOW))
        )
        assert "SCAN p" not in plan and "SCAN message_parts" not in plan, plan
        assert "message_parts_message_idx" in plan, plan
