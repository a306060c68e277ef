"""The message store records anchor trust as lossless-claw 1.0's ingest does.

Reference: v1.0.0-beta.4 src/engine.ts ``ingestSingle`` (a message stored with a transcript
entry id gets a ``verified`` / ``transcript-import`` row) and src/store/conversation-store.ts
``upsertMessageTranscriptAnchorTrust`` (insert, or on the same message replace the
classification and bump ``updated_at``, keeping ``created_at``).
"""

from __future__ import annotations

from pathlib import Path

from lcm_cli.engine.db.store import Store

ROWS = """SELECT message_id, conversation_id, transcript_entry_id, trust_state, source, reason
          FROM message_transcript_anchor_trust ORDER BY message_id"""


def test_each_message_with_an_entry_id_gets_one_verified_row(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store:
        cid = store.create_conversation("s1")
        ids = store.add_messages(
            cid,
            [
                {"role": "user", "content": "a", "transcript_entry_id": "e1"},
                {"role": "assistant", "content": "b"},
                {"role": "assistant", "content": "c", "transcript_entry_id": ""},
                {"role": "user", "content": "d", "transcript_entry_id": "e4"},
            ],
        )
        rows = store.conn.execute(ROWS).fetchall()
    reason = "message imported from transcript entry"
    assert rows == [
        (ids[0], cid, "e1", "verified", "transcript-import", reason),
        (ids[3], cid, "e4", "verified", "transcript-import", reason),
    ]


def test_trust_anchors_false_writes_none_and_a_later_upsert_keeps_created_at(tmp_path: Path) -> None:
    with Store.open(tmp_path / "lcm.db") as store:
        cid = store.create_conversation("s1")
        quiet = store.add_message(cid, "user", "a", transcript_entry_id="e1", trust_anchors=False)
        assert store.conn.execute(ROWS).fetchall() == []
        loud = store.add_message(cid, "user", "b", transcript_entry_id="e2")
        store.conn.execute(
            "UPDATE message_transcript_anchor_trust SET created_at = '2020-01-01 00:00:00',"
            " updated_at = '2020-01-01 00:00:00'"
        )
        store.trust_anchor(cid, loud, "e2", source="projection-reconcile", reason="checked")
        row = store.conn.execute(
            "SELECT source, reason, created_at, updated_at FROM message_transcript_anchor_trust"
            " WHERE message_id = ?",
            (loud,),
        ).fetchone()
        assert row[:3] == ("projection-reconcile", "checked", "2020-01-01 00:00:00")
        assert row[3] != "2020-01-01 00:00:00"
        assert store.conn.execute("SELECT COUNT(*) FROM message_transcript_anchor_trust").fetchone()[0] == 1
        assert quiet != loud


def test_a_file_without_the_table_gets_no_rows(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        store.conn.execute("DROP TABLE message_transcript_anchor_trust")
    with Store.open(db) as store:
        assert store.has_anchor_trust is False
        cid = store.create_conversation("s1")
        mid = store.add_message(cid, "user", "a", transcript_entry_id="e1")
        store.trust_anchor(cid, mid, "e1", source="projection-reconcile", reason="checked")
        assert store.conn.execute("SELECT transcript_entry_id FROM messages").fetchall() == [("e1",)]
