"""Heartbeat-turn pruning (``pruneHeartbeatOk``; docs/reference/engine.md §2.7 step 8, §3.1 step 13)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.session.heartbeat import prune_heartbeat_turns
from lcm_cli.engine.session.ingest import IngestSettings, ingest_messages

PROMPT = "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly."


def _turns() -> list[tuple[bool, list[dict[str, Any]]]]:
    """(is a heartbeat turn, its messages), in order."""
    return [
        (
            False,
            [{"role": "user", "content": "deploy the service"}, {"role": "assistant", "content": "deployed"}],
        ),
        (True, [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "HEARTBEAT_OK"}]),
        (
            False,  # mentions the file but the agent did real work: kept
            [
                {"role": "user", "content": "update heartbeat.md please"},
                {"role": "assistant", "content": "updated"},
            ],
        ),
        (
            True,  # a heartbeat turn with a tool round trip before the ack
            [
                {"role": "user", "content": PROMPT},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "toolCall", "id": "hb-1", "name": "read", "arguments": {"p": "HEARTBEAT.md"}}
                    ],
                },
                {"role": "toolResult", "toolCallId": "hb-1", "toolName": "read", "content": "nothing to do"},
                {"role": "assistant", "content": [{"type": "text", "text": " heartbeat_ok "}]},
            ],
        ),
        (
            False,
            [
                {"role": "user", "content": "HEARTBEAT_OK is a nice word"},
                {"role": "assistant", "content": "ok"},
            ],
        ),
    ]


def _snapshot(db: Path) -> dict[int, tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT message_id, seq, role, content, identity_hash FROM messages").fetchall()
        return {r[0]: r for r in rows}
    finally:
        conn.close()


def test_prune_removes_only_heartbeat_turns(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    settings = IngestSettings(str(tmp_path / "files"))
    heartbeat_ids: list[int] = []
    with Store.open(db) as store:
        for is_beat, messages in _turns():
            out = ingest_messages(store, settings, "s1", messages)
            ids = [m["messageId"] for m in out["messages"]]
            assert len(ids) == len(messages)
            if is_beat:
                heartbeat_ids.extend(ids)
        before = _snapshot(db)
        result = prune_heartbeat_turns(store, 1)
        assert result == {"prunedTurns": 2, "prunedMessages": 6}
        after = _snapshot(db)
        assert set(after) == set(before) - set(heartbeat_ids)
        assert all(after[i] == before[i] for i in after)  # nothing else touched
        conn = store.conn
        listed = json.dumps(heartbeat_ids)
        for table, column in (("context_items", "message_id"), ("message_parts", "message_id")):
            left = conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {column} IN (SELECT value FROM json_each(?))", (listed,)
            ).fetchone()[0]
            assert left == 0, table
        assert conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0] == len(after)
        hits = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'HEARTBEAT'").fetchall()
        assert {r[0] for r in hits} <= set(after)
        # A second pass finds nothing.
        assert prune_heartbeat_turns(store, 1) == {"prunedTurns": 0, "prunedMessages": 0}


def _transcript(path: Path) -> None:
    lines, parent = (
        [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-06-01T00:00:00.000Z"}],
        None,
    )
    n = 0
    for _, messages in _turns():
        for message in messages:
            n += 1
            entry = f"e{n:03d}"
            lines.append(
                {
                    "type": "message",
                    "id": entry,
                    "parentId": parent,
                    "timestamp": f"2026-06-01T00:00:{n:02d}.000Z",
                    "message": message,
                }
            )
            parent = entry
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _config(home: Path, prune: bool) -> None:
    config = {"bootstrapMaxTokens": 100000, "pruneHeartbeatOk": prune}
    (home / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": config}}}})
    )


def test_bootstrap_prunes_heartbeat_turns_only_when_enabled(tmp_path: Path) -> None:
    for prune in (False, True):
        home = tmp_path / f"oc-{prune}"
        home.mkdir()
        _config(home, prune)
        path = home / "s1.jsonl"
        _transcript(path)
        data = call(
            "session.bootstrap", {"session_id": "s1", "session_file": str(path)}, openclaw_dir=str(home)
        )["data"]
        conn = sqlite3.connect(home / "lcm.db")
        contents = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
        conn.close()
        total = sum(len(m) for _, m in _turns())
        if prune:
            assert data["heartbeat"] == {"prunedTurns": 2, "prunedMessages": 6}
            assert len(contents) == total - 6 and "HEARTBEAT_OK" not in contents
            assert "update heartbeat.md please" in contents
        else:
            assert "heartbeat" not in data and len(contents) == total


def test_a_heartbeat_turn_a_summary_covers_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    settings = IngestSettings(str(tmp_path / "files"))
    with Store.open(db) as store:
        ids = []
        for _, messages in _turns():
            ids.append([m["messageId"] for m in ingest_messages(store, settings, "s1", messages)["messages"]])
        with store.transaction():
            store.conn.execute(
                "INSERT INTO summaries (summary_id, conversation_id, kind, content, token_count)"
                " VALUES ('sum_a', 1, 'leaf', 'covers the first heartbeat', 5)"
            )
            store.conn.execute(
                "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES ('sum_a', ?, 0)",
                (ids[1][1],),
            )
        before = _snapshot(db)
        # Only the second heartbeat turn (turn 3, four messages) goes.
        assert prune_heartbeat_turns(store, 1) == {"prunedTurns": 1, "prunedMessages": 4}
        assert set(_snapshot(db)) == set(before) - set(ids[3])


def test_a_failed_prune_leaves_everything(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    settings = IngestSettings(str(tmp_path / "files"))
    with Store.open(db) as store:
        for _, messages in _turns():
            ingest_messages(store, settings, "s1", messages)
        # The message delete fails after the context items went: all of it must roll back.
        store.conn.execute(
            "CREATE TEMP TRIGGER refuse BEFORE DELETE ON main.messages BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        items = store.conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0]
        before = _snapshot(db)
        with pytest.raises(sqlite3.IntegrityError):
            prune_heartbeat_turns(store, 1)
        assert store.conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0] == items
        assert _snapshot(db) == before


def test_a_pruned_heartbeat_turn_is_not_imported_again(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    _config(home, True)
    path = home / "s1.jsonl"
    turns = [
        [{"role": "user", "content": "deploy"}, {"role": "assistant", "content": "deployed"}],
        [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "HEARTBEAT_OK"}],
        [{"role": "user", "content": "check logs"}, {"role": "assistant", "content": "clean"}],
    ]
    lines = [{"type": "session", "version": 3, "id": "s1", "timestamp": "2026-06-01T00:00:00.000Z"}]
    for n, message in enumerate(m for turn in turns for m in turn):
        parent = f"e{n - 1}" if n else None
        stamp = f"2026-06-01T00:00:{n:02d}.000Z"
        lines.append(
            {"type": "message", "id": f"e{n}", "parentId": parent, "timestamp": stamp, "message": message}
        )

    def boot(upto: int) -> dict[str, Any]:
        path.write_text("".join(json.dumps(line) + "\n" for line in lines[: upto + 1]))
        params = {"session_id": "s1", "session_file": str(path)}
        return call("session.bootstrap", params, openclaw_dir=str(home))["data"]

    first = boot(4)  # ends with the heartbeat turn
    assert first["heartbeat"] == {"prunedTurns": 1, "prunedMessages": 2}
    second = boot(6)  # a normal turn follows
    assert second["importedMessages"] == 2 and second["heartbeatDropped"] == 2
    assert second["heartbeat"] == {"prunedTurns": 0, "prunedMessages": 0}
    conn = sqlite3.connect(home / "lcm.db")
    contents = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
    conn.close()
    assert contents == ["deploy", "deployed", "check logs", "clean"]
