"""Bootstrap from a generated transcript: bounded first import, no-op re-run, appended lines."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from lcm_cli.engine.api import call
from lcm_cli.engine.session.bootstrap import import_cap, trim_to_budget
from tests.support.transcripts import append_lines, write_transcript


def boot(home: Path, path: Path, **params: Any) -> dict[str, Any]:
    return call(
        "session.bootstrap", {"session_id": "s1", "session_file": str(path), **params}, openclaw_dir=str(home)
    )["data"]


def count(home: Path) -> int:
    conn = sqlite3.connect(home / "lcm.db")
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def big_budget(home: Path) -> None:
    (home / "openclaw.json").write_text(
        '{"plugins":{"entries":{"lossless-claw":{"config":{"bootstrapMaxTokens":10000000}}}}}'
    )


def test_bootstrap_then_no_op_then_appended_lines(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    big_budget(home)
    path = tmp_path / "s1.jsonl"
    generated = write_transcript(path, session_id="s1", messages=60, seed=3)
    first = boot(home, path, session_key="agent:main:main")
    assert first["bootstrapped"] is True and first["importedMessages"] == first["transcriptMessages"] > 0
    stored = count(home)
    again = boot(home, path, session_key="agent:main:main")
    assert again["importedMessages"] == 0 and again["reason"] == "already bootstrapped"
    assert count(home) == stored
    # Append two message entries chained to the current leaf.
    conn = sqlite3.connect(home / "lcm.db")
    last_id = conn.execute("SELECT last_processed_entry_id FROM conversation_bootstrap_state").fetchone()[0]
    conn.close()
    append_lines(
        path,
        [
            {
                "type": "message",
                "id": "new1",
                "parentId": last_id,
                "timestamp": "2026-06-10T01:00:00.000Z",
                "message": {"role": "user", "content": "appended question"},
            },
            {
                "type": "message",
                "id": "new2",
                "parentId": "new1",
                "timestamp": "2026-06-10T01:00:01.000Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "appended answer"}]},
            },
        ],
    )
    third = boot(home, path, session_key="agent:main:main")
    assert third["importedMessages"] == 2 and third["reason"] == "reconciled missing session messages"
    assert third["anchor"] == "append-only" and third["fastPath"] == "taken"
    assert count(home) == stored + 2
    assert boot(home, path, session_key="agent:main:main")["importedMessages"] == 0
    assert generated is not None


def test_first_import_is_bounded_by_bootstrap_max_tokens(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    (home / "openclaw.json").write_text(
        '{"plugins":{"entries":{"lossless-claw":{"config":{"bootstrapMaxTokens":300}}}}}'
    )
    path = tmp_path / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=80, seed=5)
    data = boot(home, path)
    assert 0 < data["importedMessages"] < data["transcriptMessages"]
    assert data["trimmedMessages"] == data["transcriptMessages"] - data["importedMessages"]
    conn = sqlite3.connect(home / "lcm.db")
    assert conn.execute("SELECT SUM(token_count) FROM messages").fetchone()[0] <= 300
    conn.close()


def test_trim_and_cap_rules() -> None:
    class M:
        def __init__(self, tokens: int) -> None:
            self.token_count = tokens

    msgs = [M(5), M(10), M(20)]
    assert [m.token_count for m in trim_to_budget(msgs, 30)] == [10, 20]
    assert trim_to_budget([M(50)], 30) == []
    assert import_cap(10) == 50 and import_cap(1000) == 200


def test_reconcile_by_content_without_entry_ids_and_the_flood_cap(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    big_budget(home)
    # Runtime ingest wrote the first messages (no entry ids); the transcript has them plus more.
    lines = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(140)]
    call("session.ingest", {"session_id": "s1", "messages": lines[:10]}, openclaw_dir=str(home))
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(__import__("json").dumps(line) + "\n" for line in lines))
    first = boot(home, path)
    assert first["anchor"] == "content" and first["importedMessages"] == 50  # capped: max(10*0.2, 50)
    assert first["reason"] == "reconcile import capped" and first["bootstrapped"] is False
    second = boot(home, path)
    assert second["importedMessages"] == 50
    third = boot(home, path)
    assert third["importedMessages"] == 30 and third["reason"] == "reconciled missing session messages"
    assert count(home) == 140
    assert boot(home, path)["reason"] == "already bootstrapped"


def test_excluded_sessions_and_missing_files(tmp_path: Path) -> None:
    home = tmp_path / "oc"
    home.mkdir()
    (home / "openclaw.json").write_text(
        '{"plugins":{"entries":{"lossless-claw":{"config":{"ignoreSessionPatterns":["cron:**"]}}}}}'
    )
    path = tmp_path / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=5)
    assert boot(home, path, session_key="cron:x:y")["reason"] == "session excluded by pattern"
    import pytest

    from lcm_cli.engine.core.errors import LcmError

    with pytest.raises(LcmError) as err:
        boot(home, tmp_path / "missing.jsonl")
    assert err.value.code == "TRANSCRIPT_UNREADABLE"


def test_bootstrap_rows_equal_the_importer_rows_and_large_outputs_are_externalized(tmp_path: Path) -> None:
    import json

    home = tmp_path / "oc"
    home.mkdir()
    big_budget(home)
    path = tmp_path / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=80, seed=11)
    boot(home, path)
    other = tmp_path / "other"
    other.mkdir()
    call("migrate.sessions", {"file": [str(path)], "apply": True}, openclaw_dir=str(other))
    columns = "seq, role, content, token_count, identity_hash, transcript_entry_id, created_at, openclaw_sender_metadata"
    live = sqlite3.connect(home / "lcm.db")
    imported = sqlite3.connect(other / "lcm.db")
    # Images are externalized at any size by the live path (the importer keeps them inline).
    externalized = {
        row[0]
        for row in live.execute(
            "SELECT DISTINCT seq FROM messages JOIN message_parts USING (message_id)"
            " WHERE message_parts.metadata LIKE '%externalizedFileId%'"
        )
    }
    assert externalized  # the generator writes image blocks
    a = [r for r in live.execute(f"SELECT {columns} FROM messages ORDER BY seq") if r[0] not in externalized]
    b = [
        r
        for r in imported.execute(f"SELECT {columns} FROM messages ORDER BY seq")
        if r[0] not in externalized
    ]
    assert a == b and len(a) > 50
    parts = "SELECT seq, part_type, text_content, tool_call_id, tool_name, tool_input, tool_output, metadata"
    order = " FROM message_parts JOIN messages USING (message_id) ORDER BY seq, ordinal"
    assert [r for r in live.execute(parts + order) if r[0] not in externalized] == [
        r for r in imported.execute(parts + order) if r[0] not in externalized
    ]
    live.close()
    imported.close()
    # A large tool output in a transcript is externalized at bootstrap, as live ingest does.
    (home / "openclaw.json").write_text(
        json.dumps(
            {
                "plugins": {
                    "entries": {
                        "lossless-claw": {
                            "config": {"bootstrapMaxTokens": 10000000, "largeFileThresholdTokens": 1000}
                        }
                    }
                }
            }
        )
    )
    second = tmp_path / "s2.jsonl"
    lines = [
        {"type": "session", "id": "s2", "timestamp": "2026-06-10T00:00:00.000Z"},
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "read it"}},
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "message": {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "read",
                "content": "z" * 9000,
            },
        },
    ]
    second.write_text("".join(json.dumps(line) + "\n" for line in lines))
    data = call(
        "session.bootstrap", {"session_id": "s2", "session_file": str(second)}, openclaw_dir=str(home)
    )["data"]
    assert data["importedMessages"] == 2 and data["filesExternalized"] == 1
