"""after-turn guards: heartbeat-turn pruning (§2.7 step 8) and stale isolated-cron callbacks (§2.7 step 3)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from lcm_cli.engine.api import call

PROMPT = "Read HEARTBEAT.md if it exists. If nothing needs attention, reply HEARTBEAT_OK."


def test_heartbeat_turn_imported_by_the_reconcile_is_pruned(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    live = [
        {"role": "user", "content": "what is the build status"},
        {"role": "assistant", "content": "green"},
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "HEARTBEAT_OK"},
    ]
    path = tmp_path / "s1.jsonl"
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-06-01T00:00:00.000Z"}]
    parent = None
    for n, message in enumerate(live):
        lines.append(
            {
                "type": "message",
                "id": f"e{n}",
                "parentId": parent,
                "timestamp": f"2026-06-01T00:00:0{n}.000Z",
                "message": message,
            }
        )
        parent = f"e{n}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    params = {
        "session_id": "s1",
        "session_key": "agent:main:main",
        "session_file": str(path),
        "messages": live,
        "pre_prompt_message_count": 2,
    }
    data = call("session.after_turn", params, openclaw_dir=str(home))["data"]
    assert data["reason"] == "heartbeat-ack turn"
    assert data["heartbeat"] == {"prunedTurns": 1, "prunedMessages": 2}
    conn = sqlite3.connect(home / "lcm.db")
    contents = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
    items = conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0]
    conn.close()
    assert contents == ["what is the build status", "green"] and items == 2


def test_late_callback_from_an_archived_cron_run_stores_nothing(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    key = "agent:main:cron:nightly"

    def turn(session_id: str, text: str) -> dict[str, object]:
        params = {
            "session_id": session_id,
            "session_key": key,
            "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "done"}],
            "pre_prompt_message_count": 0,
        }
        return call("session.after_turn", params, openclaw_dir=str(home))["data"]

    assert turn("run-1", "first run")["persisted"] is True
    # The run ends; the next run takes the key.
    end = {"session_id": "run-1", "session_key": key, "reason": "cron", "next_session_id": "run-2"}
    call("session.end", end, openclaw_dir=str(home))
    late = turn("run-1", "late callback of run 1")
    assert late["persisted"] is False and late["reason"] == "stale isolated-cron callback"
    assert turn("run-2", "second run")["persisted"] is True
    conn = sqlite3.connect(home / "lcm.db")
    rows = conn.execute(
        "SELECT c.session_id, c.active, m.content FROM messages m JOIN conversations c USING (conversation_id)"
        " ORDER BY m.message_id"
    ).fetchall()
    conn.close()
    assert ("run-1", 0, "first run") in rows and ("run-2", 1, "second run") in rows
    assert all(r[2] != "late callback of run 1" for r in rows)


def test_after_turn_reconciles_a_grown_transcript_through_the_fast_path(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    path = tmp_path / "s1.jsonl"
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-06-01T00:00:00.000Z"}
    live: list[dict[str, object]] = []
    lines = [json.dumps(header)]
    for n in range(6):
        message = {"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}"}
        live.append(message)
        entry = {
            "type": "message",
            "id": f"e{n}",
            "parentId": f"e{n - 1}" if n else None,
            "timestamp": f"2026-06-01T00:00:0{n}.000Z",
            "message": message,
        }
        lines.append(json.dumps(entry))
        if n in (3, 5):
            path.write_text("\n".join(lines) + "\n")
            params = {
                "session_id": "s1",
                "session_key": "agent:main:main",
                "session_file": str(path),
                "messages": list(live),
                "pre_prompt_message_count": len(live) - 2,
            }
            data = call("session.after_turn", params, openclaw_dir=str(home))["data"]
            if n == 5:
                assert data["transcript"]["fastPath"] == "taken"
                assert data["transcript"]["importedMessages"] == 2
                assert data["ingest"]["alreadyStored"] == 2 and data["ingest"]["ingested"] == 0
    conn = sqlite3.connect(home / "lcm.db")
    contents = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
    conn.close()
    assert contents == [f"message {n}" for n in range(6)]
