"""The engine's imports write lossless-claw 1.0's anchor-trust rows.

Expected rows come from lossless-claw v1.0.0-beta.4: ``ingestSingle`` (src/engine.ts), the one
ingest behind bootstrap, reconcile, ``afterTurn`` and ``commitTurn``, upserts
(src/store/conversation-store.ts ``upsertMessageTranscriptAnchorTrust``) one row right after
it inserts a message that carries a transcript entry id: trust ``verified``, source
``transcript-import``, reason "message imported from transcript entry", ``verified_at`` =
``new Date()`` as ISO text, ``created_at`` / ``updated_at`` from the column defaults. A
message without an entry id gets none, and an entry already stored is skipped before any
write, so it gets no second row. Its reconcile records an unstamped row it adopts as a
``verified`` ``projection-reconcile`` anchor.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from lcm_cli.engine.api import call
from lcm_cli.engine.db.store import Store
from tests.support.transcripts import append_lines, write_lines, write_transcript

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SQLITE_NOW = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
IMPORTED = ("verified", "transcript-import", "message imported from transcript entry")
KEY = "agent:main:main"


def read(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def trust_rows(db: Path) -> list[tuple[Any, ...]]:
    return read(
        db,
        """SELECT message_id, conversation_id, transcript_entry_id, trust_state, source, reason,
                  verified_at, created_at, updated_at
           FROM message_transcript_anchor_trust ORDER BY message_id""",
    )


def imported_rows(db: Path) -> list[tuple[Any, ...]]:
    """The rows 1.0 writes for the stored messages with an entry id (timestamps aside)."""
    return [
        (message_id, conversation_id, entry_id, *IMPORTED)
        for message_id, conversation_id, entry_id in read(
            db,
            """SELECT message_id, conversation_id, transcript_entry_id FROM messages
               WHERE transcript_entry_id IS NOT NULL ORDER BY message_id""",
        )
    ]


def assert_shapes(rows: list[tuple[Any, ...]]) -> None:
    for row in rows:
        assert ISO_MS.match(row[6]) and SQLITE_NOW.match(row[7]) and row[7] == row[8], row


def home(tmp_path: Path, **config: Any) -> Path:
    state = tmp_path / "oc"
    state.mkdir(exist_ok=True)
    entry = {"config": {"bootstrapMaxTokens": 10_000_000, **config}}
    (state / "openclaw.json").write_text(json.dumps({"plugins": {"entries": {"lossless-claw": entry}}}))
    return state


def boot(state: Path, path: Path) -> dict[str, Any]:
    params = {"session_id": "s1", "session_key": KEY, "session_file": str(path)}
    return call("session.bootstrap", params, openclaw_dir=str(state))["data"]


def test_bootstrap_and_reconcile_record_each_imported_entry_once(tmp_path: Path) -> None:
    state = home(tmp_path)
    path = tmp_path / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=24, seed=7)
    first = boot(state, path)
    assert first["bootstrapped"] and first["importedMessages"] > 0
    db = state / "lcm.db"
    rows = trust_rows(db)
    assert len(rows) == first["importedMessages"]
    assert [r[:6] for r in rows] == imported_rows(db)
    assert_shapes(rows)
    # Unchanged file, then a re-read from scratch: every entry is already stored, no new row.
    assert boot(state, path)["importedMessages"] == 0
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM conversation_bootstrap_state")
    conn.commit()
    conn.close()
    assert boot(state, path)["importedMessages"] == 0
    assert trust_rows(db) == rows
    # Appended entries (the reconcile, fast path or not) get theirs; earlier rows stay as they were.
    last = read(db, "SELECT transcript_entry_id FROM messages ORDER BY seq DESC LIMIT 1")[0][0]
    append_lines(
        path,
        [
            {
                "type": "message",
                "id": "n1",
                "parentId": last,
                "timestamp": "2026-06-10T01:00:00.000Z",
                "message": {"role": "user", "content": "an appended question"},
            },
            {
                "type": "message",
                "id": "n2",
                "parentId": "n1",
                "timestamp": "2026-06-10T01:00:01.000Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "its answer"}]},
            },
        ],
    )
    assert boot(state, path)["importedMessages"] == 2
    now = trust_rows(db)
    assert now[: len(rows)] == rows
    assert [r[:6] for r in now] == imported_rows(db) and [r[2] for r in now[len(rows) :]] == ["n1", "n2"]
    assert read(db, "SELECT COUNT(*), COUNT(DISTINCT message_id) FROM message_transcript_anchor_trust") == [
        (len(now), len(now))
    ]


def test_messages_without_an_entry_id_get_no_row(tmp_path: Path) -> None:
    state = home(tmp_path)
    path = tmp_path / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=10, with_ids=False)
    assert boot(state, path)["importedMessages"] > 0
    live = [{"role": "user", "content": "a live message"}]
    params = {"session_id": "s1", "session_key": KEY, "messages": live}
    assert call("session.ingest", params, openclaw_dir=str(state))["data"]["ingested"] == 1
    assert trust_rows(state / "lcm.db") == []


def test_after_turn_records_the_transcript_it_imports_not_the_live_batch(tmp_path: Path) -> None:
    state = home(tmp_path)
    live = [
        {"role": "user", "content": "question zero"},
        {"role": "assistant", "content": "answer zero"},
        {"role": "user", "content": "question one"},
        {"role": "assistant", "content": "answer one"},
    ]
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
    fields = {
        "session_id": "s1",
        "session_key": KEY,
        "messages": live,
        "pre_prompt_message_count": 0,
        "session_file": str(path),
    }
    data = call("session.after_turn", fields, openclaw_dir=str(state))["data"]
    assert data["transcript"]["importedMessages"] == 3 and data["ingest"]["ingested"] == 1
    db = state / "lcm.db"
    rows = trust_rows(db)
    # The host's live message has no entry id (1.0: no transcript entry meta), so no row.
    assert [r[2] for r in rows] == ["e0", "e1", "e2"]
    assert [r[:6] for r in rows] == imported_rows(db)
    assert_shapes(rows)


def test_reconcile_records_a_runtime_row_it_adopts(tmp_path: Path) -> None:
    state = home(tmp_path)
    said = [
        {"role": "user", "content": "question zero"},
        {"role": "assistant", "content": "answer zero"},
        {"role": "user", "content": "question one"},
        {"role": "assistant", "content": "answer one"},
        {"role": "user", "content": "question two"},
    ]
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
        for i, m in enumerate(said)
    ]
    write_lines(path, [header, *entries[:2]])
    assert boot(state, path)["importedMessages"] == 2
    # The next two arrive live (no entry ids), then the transcript catches up with one more.
    params = {"session_id": "s1", "session_key": KEY, "messages": said[2:4]}
    assert call("session.ingest", params, openclaw_dir=str(state))["data"]["ingested"] == 2
    write_lines(path, [header, *entries])
    outcome = boot(state, path)
    assert outcome["adoptedMessages"] == 2 and outcome["importedMessages"] == 1
    db = state / "lcm.db"
    rows = trust_rows(db)
    assert [r[2] for r in rows] == ["e0", "e1", "e2", "e3", "e4"]
    assert read(db, "SELECT message_id, transcript_entry_id FROM messages ORDER BY seq") == [
        (r[0], r[2]) for r in rows
    ]
    adopted = ("verified", "projection-reconcile", "entry id matches role and content")
    assert [r[3:6] for r in rows] == [IMPORTED, IMPORTED, adopted, adopted, IMPORTED]
    assert_shapes(rows)


def test_first_commit_records_the_history_it_imports_from_the_host_store(tmp_path: Path) -> None:
    from tests.engine.session.test_commit_turn import KEY as HOST_KEY
    from tests.engine.session.test_commit_turn import make_host, turn

    state, store = make_host(tmp_path, "s1", turns=4)
    payload = turn(4)
    payload["admission"].update(storePath=str(store), rawSeq=9)
    payload["terminal"]["storePath"] = str(store)
    fields = {
        "advancement_key": payload["advancementKey"],
        "admission": payload["admission"],
        "terminal": payload["terminal"],
        "messages": payload["messages"],
        "session_id": "s1",
        "session_key": HOST_KEY,
    }
    data = call("session.commit_turn", fields, openclaw_dir=str(state))["data"]
    assert data["status"] == "committed" and data["bootstrap"]["importedMessages"] == 8
    db = state / "lcm.db"
    rows = trust_rows(db)
    assert [r[2] for r in rows] == [f"{role}{n}" for n in range(4) for role in "ua"]
    assert [r[:6] for r in rows] == imported_rows(db)
    assert_shapes(rows)
    # The turn itself carries no entry ids; its retry is a duplicate and writes nothing.
    assert read(db, "SELECT COUNT(*) FROM messages")[0][0] == 10
    assert call("session.commit_turn", fields, openclaw_dir=str(state))["data"]["status"] == "duplicate"
    assert trust_rows(db) == rows


def test_a_database_without_the_table_still_imports(tmp_path: Path) -> None:
    state = home(tmp_path)
    with Store.open(state / "lcm.db") as store:  # migrated, then the table is gone (a pre-1.0 file)
        store.conn.execute("DROP TABLE message_transcript_anchor_trust")
    path = tmp_path / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=10, seed=1)
    assert boot(state, path)["importedMessages"] > 0
    tables = {r[0] for r in read(state / "lcm.db", "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "message_transcript_anchor_trust" not in tables
