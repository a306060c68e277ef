"""`lcm migrate-sessions` writes lossless-claw 1.0's anchor-trust rows.

Expected rows come from lossless-claw v1.0.0-beta.4, src/migrate-sessions.ts
``importPreparedFile``: after inserting a message whose transcript entry has an id it
upserts (src/store/conversation-store.ts ``upsertMessageTranscriptAnchorTrust``) one row:
trust ``verified``, source ``migrate-sessions``, reason "message imported from transcript
entry", ``verified_at`` = ``new Date()`` as ISO text (milliseconds, ``Z``), and
``created_at`` / ``updated_at`` from the column defaults (``datetime('now')``). A message
without an entry id gets no row; entries skipped as already present get none.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.db.store import Store
from lcm_cli.migrate import pipeline
from tests.support.transcripts import write_transcript

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SQLITE_NOW = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def apply(db: Path, *files: Path) -> dict[str, Any]:
    params: dict[str, Any] = {"file": [str(f) for f in files], "apply": True}
    return call("migrate.sessions", params, db=str(db), openclaw_dir=str(db.parent / "no-state"))["data"]


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


def expected_rows(db: Path, conversation_id: int) -> list[tuple[Any, ...]]:
    """What 1.0's importer writes for the stored messages (timestamps checked by shape)."""
    return [
        (
            message_id,
            conversation_id,
            entry_id,
            "verified",
            "migrate-sessions",
            "message imported from transcript entry",
        )
        for message_id, entry_id in read(
            db,
            """SELECT message_id, transcript_entry_id FROM messages
               WHERE conversation_id = ? AND transcript_entry_id IS NOT NULL ORDER BY message_id""",
            (conversation_id,),
        )
    ]


@pytest.fixture(autouse=True)
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(pipeline.WORKERS_ENV, "0")


def test_each_imported_entry_gets_one_verified_row(tmp_path: Path) -> None:
    generated = write_transcript(tmp_path / "t.jsonl", session_id="anchored", messages=30, seed=2)
    db = tmp_path / "lcm.db"
    data = apply(db, generated.path)
    report = data["files"][0]
    assert report["status"] == "imported" and report["importedMessages"] > 0
    got = trust_rows(db)
    assert [r[:6] for r in got] == expected_rows(db, report["conversationId"])
    assert len(got) == report["importedMessages"]
    for row in got:
        assert ISO_MS.match(row[6]) and SQLITE_NOW.match(row[7]) and row[7] == row[8]


def test_a_second_import_adds_no_rows_and_a_grown_transcript_only_its_new_entries(tmp_path: Path) -> None:
    generated = write_transcript(tmp_path / "t.jsonl", session_id="again", messages=20, seed=4)
    db = tmp_path / "lcm.db"
    apply(db, generated.path)
    first = trust_rows(db)
    again = apply(db, generated.path)
    assert again["files"][0]["status"] == "up-to-date"
    assert trust_rows(db) == first
    # A longer transcript of the same session (same seed: the first entries are the same).
    write_transcript(generated.path, session_id="again", messages=26, seed=4)
    grown = apply(db, generated.path)["files"][0]
    assert grown["importedMessages"] > 0 and grown["skippedMessages"] == len(first)
    now = trust_rows(db)
    assert now[: len(first)] == first  # earlier rows untouched
    assert [r[:6] for r in now] == expected_rows(db, grown["conversationId"])
    counts = read(db, "SELECT COUNT(*), COUNT(DISTINCT message_id) FROM message_transcript_anchor_trust")
    assert counts == [(len(now), len(now))]


def test_messages_without_an_entry_id_get_no_row(tmp_path: Path) -> None:
    generated = write_transcript(tmp_path / "old.jsonl", session_id="legacy", messages=8, with_ids=False)
    db = tmp_path / "lcm.db"
    report = apply(db, generated.path)["files"][0]
    assert report["importedMessages"] > 0
    assert trust_rows(db) == []


def test_an_adopted_row_is_recorded_verified(tmp_path: Path) -> None:
    # Adoption is ours (0.15.3's importer did it; 1.0's inserts instead): the row it stamps
    # holds the transcript's entry, so it is recorded as 1.0 records an entry it inserted,
    # with 1.0's reason for an id it checked against role and content.
    from lcm_cli.engine.transcript.reader import scan_transcript

    generated = write_transcript(tmp_path / "live.jsonl", session_id="live", messages=10, seed=5)
    messages = list(scan_transcript(str(generated.path)).iter_messages())
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        cid = store.create_conversation("live")
        live = store.add_messages(
            cid,
            [{"role": m.role, "content": m.content, "identity_hash": m.identity_hash} for m in messages[:3]],
        )
    apply(db, generated.path)
    got = {r[0]: r for r in trust_rows(db)}
    for message_id, message in zip(live, messages[:3]):
        assert got[message_id][1:6] == (
            cid,
            message.entry_id,
            "verified",
            "migrate-sessions",
            "entry id matches role and content",
        )
    assert set(got) == {r[0] for r in read(db, "SELECT message_id FROM messages")}


def test_a_database_without_the_table_still_imports(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:  # migrated, then the table is gone (as in a pre-1.0 file)
        store.conn.execute("DROP TABLE message_transcript_anchor_trust")
    generated = write_transcript(tmp_path / "t.jsonl", session_id="plain", messages=12, seed=1)
    report = apply(db, generated.path)["files"][0]
    assert report["status"] == "imported" and report["importedMessages"] > 0
    tables = {r[0] for r in read(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "message_transcript_anchor_trust" not in tables


def test_forked_readers_write_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = [
        write_transcript(tmp_path / f"f{i}.jsonl", session_id=f"f{i}", messages=15 + i, seed=i).path
        for i in range(4)
    ]
    apply(tmp_path / "serial.db", *files)
    monkeypatch.delenv(pipeline.WORKERS_ENV)
    apply(tmp_path / "forked.db", *files)
    serial, forked = trust_rows(tmp_path / "serial.db"), trust_rows(tmp_path / "forked.db")
    assert serial and [r[:6] for r in serial] == [r[:6] for r in forked]
