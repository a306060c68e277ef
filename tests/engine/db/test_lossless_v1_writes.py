"""Our writers on a database in lossless-claw 1.0's shape keep its durable-turn rows consistent.

The database is tests/support/lossless_v1.py's, built by our DDL (not written by 1.0).

Compaction and every other context rewrite mark 1.0's open pending batches ``stale``
(as 1.0's own ``markBatchStale`` does) in the same transaction; message deletes release
the RESTRICT links first; prune / doctor clean delete the rows of the conversations they
remove (foreign keys off, so explicitly) and prune restore brings them back.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lcm_cli.engine.db.store import Store
from lcm_cli.engine.session.heartbeat import prune_heartbeat_turns
from tests.conftest import lcm
from tests.support.lossless_v1 import (
    ARCHIVED_ID,
    CONVERSATION_ID,
    SESSION_ID,
    SESSION_KEY,
    durable_rows,
    make_v1_db,
)


@pytest.fixture
def v1_db(tmp_path: Path) -> Path:
    return make_v1_db(tmp_path / "lcm.db")


def _rows(db: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _statuses(db: Path) -> dict[str, str]:
    batches = dict(_rows(db, "SELECT batch_id, status FROM pending_compaction_batches"))
    nodes = dict(_rows(db, "SELECT node_id, status FROM pending_summary_nodes"))
    return {**batches, **nodes}


PUBLISHED = {"batch-published": "published", "node-pub-1": "promoted", "node-pub-2": "promoted"}


def test_compaction_marks_open_batches_stale_in_its_transaction(v1_db: Path) -> None:
    with Store.open(v1_db) as store:
        summary_id = store.add_leaf_summary(CONVERSATION_ID, [7, 8], "our leaf over messages 7 and 8")
        store.replace_context_with_summary(CONVERSATION_ID, summary_id)
    assert _statuses(v1_db) == {
        **PUBLISHED,
        "batch-ready": "stale",
        "node-ready-leaf": "stale",
        "node-ready-cond": "stale",
    }
    reason = _rows(
        v1_db, "SELECT failure_summary FROM pending_compaction_batches WHERE batch_id = 'batch-ready'"
    )
    assert reason == [("context rewritten by lcm compaction",)]
    leases = _rows(
        v1_db, "SELECT lease_owner, lease_expires_at FROM pending_summary_nodes WHERE status = 'stale'"
    )
    assert set(leases) == {(None, None)}
    assert _rows(v1_db, "PRAGMA foreign_key_check") == []


def test_replace_range_marks_stale_and_a_rolled_back_pass_does_not(v1_db: Path) -> None:
    from lcm_cli.engine.compaction import context_items as ci

    conn = sqlite3.connect(v1_db, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        ci.replace_range(conn, CONVERSATION_ID, 2, 3, "sum_v1leaf0000002")
        assert (
            conn.execute(
                "SELECT status FROM pending_compaction_batches WHERE batch_id = 'batch-ready'"
            ).fetchone()[0]
            == "stale"
        )
        conn.execute("ROLLBACK")  # a pass that fails leaves 1.0's batch open, as it found it
    finally:
        conn.close()
    assert _statuses(v1_db)["batch-ready"] == "ready"


def test_heartbeat_pruning_releases_restrict_links(v1_db: Path) -> None:
    conn = sqlite3.connect(v1_db)
    conn.execute("UPDATE messages SET content = 'Read HEARTBEAT.md and answer' WHERE message_id = 7")
    conn.execute("UPDATE messages SET content = 'HEARTBEAT_OK' WHERE message_id = 8")
    conn.commit()
    conn.close()
    with Store.open(v1_db) as store:  # foreign keys on: RESTRICT would refuse without the release
        assert prune_heartbeat_turns(store, CONVERSATION_ID)["prunedMessages"] == 2
    assert _statuses(v1_db)["batch-ready"] == "stale"
    assert _rows(v1_db, "SELECT COUNT(*) FROM pending_summary_node_messages WHERE message_id IN (7, 8)") == [
        (0,)
    ]
    assert _rows(
        v1_db, "SELECT COUNT(*) FROM message_transcript_anchor_trust WHERE message_id IN (7, 8)"
    ) == [(0,)]
    assert _rows(v1_db, "PRAGMA foreign_key_check") == []


def test_session_new_stales_open_batches(v1_db: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    out = lcm(
        "--db", str(v1_db), "--openclaw-dir", str(state), "session", "new", "--session-key", SESSION_KEY
    )
    assert out.code == 0, out.stderr
    assert out.json["data"]["removedItems"] > 0
    assert _statuses(v1_db)["batch-ready"] == "stale"


def test_doctor_apply_context_repair_stales_open_batches(v1_db: Path) -> None:
    conn = sqlite3.connect(v1_db)
    conn.execute("DELETE FROM context_items WHERE conversation_id = ? AND ordinal = 3", (CONVERSATION_ID,))
    conn.commit()
    conn.close()
    out = lcm("--db", str(v1_db), "doctor", "apply", "--check", "context.ordinals", "--apply", "--no-backup")
    assert out.code == 0, out.stderr
    assert _statuses(v1_db)["batch-ready"] == "stale"


def _migrated(db: Path) -> None:
    with Store.open(db):
        pass


def test_prune_archives_deletes_and_restores_the_durable_rows(v1_db: Path, tmp_path: Path) -> None:
    _migrated(v1_db)
    before = durable_rows(v1_db)
    archive = tmp_path / "p.jsonl.gz"
    out = lcm(
        "--db", str(v1_db), "prune", "--conversation-id", str(CONVERSATION_ID), "--include-active",
        "--out", str(archive), "--apply",
    )  # fmt: skip
    assert out.code == 0, out.stderr
    after = durable_rows(v1_db)
    # Everything of conversation 1 is gone, the ledger of its session too; the other session's
    # ledger row (no conversation at all) and conversation 2 are untouched.
    assert {t: len(r) for t, r in after.items()} == {
        "turn_advancements": 1,
        "pending_compaction_batches": 0,
        "pending_summary_nodes": 0,
        "pending_summary_node_messages": 0,
        "pending_summary_node_children": 0,
        "conversation_transcript_epochs": 0,
        "message_transcript_anchor_trust": 0,
    }
    assert after["turn_advancements"][0][2] == "sess-gone"
    assert _rows(v1_db, "SELECT conversation_id FROM conversations") == [(ARCHIVED_ID,)]
    assert _rows(v1_db, "PRAGMA foreign_key_check") == []
    restored = lcm("--db", str(v1_db), "prune", "restore", str(archive), "--apply")
    assert restored.code == 0, restored.stderr
    assert durable_rows(v1_db) == before
    assert _rows(v1_db, "PRAGMA foreign_key_check") == []


def test_prune_keeps_the_ledger_of_a_session_another_conversation_still_has(
    v1_db: Path, tmp_path: Path
) -> None:
    _migrated(v1_db)
    conn = sqlite3.connect(v1_db)
    conn.execute(
        "UPDATE conversations SET session_id = ? WHERE conversation_id = ?", (SESSION_ID, ARCHIVED_ID)
    )
    conn.commit()
    conn.close()
    out = lcm(
        "--db", str(v1_db), "prune", "--conversation-id", str(CONVERSATION_ID), "--include-active",
        "--out", str(tmp_path / "p.jsonl.gz"), "--apply",
    )  # fmt: skip
    assert out.code == 0, out.stderr
    assert len(durable_rows(v1_db)["turn_advancements"]) == 3


def test_doctor_clean_removes_the_durable_rows_of_cleaned_conversations(v1_db: Path) -> None:
    _migrated(v1_db)
    conn = sqlite3.connect(v1_db)  # make conversation 1 an archived cron session, a cleaner's class
    conn.execute(
        "UPDATE conversations SET session_key = 'agent:main:cron:nightly', active = 0 WHERE conversation_id = ?",
        (CONVERSATION_ID,),
    )
    conn.commit()
    conn.close()
    out = lcm("--db", str(v1_db), "doctor", "clean", "--class", "cron_sessions", "--apply", "--no-backup")
    assert out.code == 0, out.stderr
    rows = durable_rows(v1_db)
    assert [len(rows[t]) for t in rows if t != "turn_advancements"] == [0] * 6
    assert _rows(v1_db, "PRAGMA foreign_key_check") == []


KILL_MID_DELETE = """
import sys, time
import lcm_cli.engine.maintenance.prune as prune
original = prune.delete_staged
def slow(conn, *args, **kwargs):  # the first batch's transaction: killed before it commits
    result = original(conn, *args, **kwargs)
    print("inside", flush=True)
    time.sleep(30)
    return result
prune.delete_staged = slow
from lcm_cli.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_kill_during_prune_delete_leaves_the_durable_rows(v1_db: Path, tmp_path: Path) -> None:
    _migrated(v1_db)
    before = durable_rows(v1_db)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_MID_DELETE, "--db", str(v1_db), "prune", "--conversation-id",
         str(CONVERSATION_ID), "--include-active", "--out", str(tmp_path / "k.jsonl.gz"), "--apply"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _rows(v1_db, "PRAGMA integrity_check") == [("ok",)]
    assert durable_rows(v1_db) == before
