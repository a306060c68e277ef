"""Databases in lossless-claw 1.0's shape: every read works, our migrations keep its rows.

The file comes from tests/support/lossless_v1.py, which builds 1.0's tables, indexes and
rows (a published and a ready pending batch, the turn ledger, an epoch, anchor trust) with
our own DDL and 1.0's differences applied by hand: it is not a file lossless-claw wrote.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from lcm_cli.engine.db import schema
from tests.conftest import lcm
from tests.support.lossless_v1 import CONVERSATION_ID, SESSION_KEY, SUMMARY_IDS, durable_rows, make_v1_db

CID = str(CONVERSATION_ID)
READS: list[list[str]] = [
    ["status"],
    ["conversations", "list"],
    ["conversations", "show", "--conversation-id", CID],
    ["conversations", "show", "--conversation-id", "2"],
    ["messages", "list", "--conversation-id", CID, "--include-content"],
    ["messages", "tail", "--conversation-id", CID],
    ["messages", "tail", "--session-key", SESSION_KEY],
    ["summaries", "list"],
    ["summaries", "list", "--conversation-id", CID],
    ["summaries", "show", SUMMARY_IDS[0]],
    ["grep", "durable turn", "--all-conversations"],
    ["grep", "durable", "--mode", "full_text", "--session-key", SESSION_KEY],
    ["describe", SUMMARY_IDS[1]],
    ["expand", SUMMARY_IDS[0]],
    ["export", "--conversation-id", CID, "--to", "markdown"],
    ["export", "--conversation-id", CID, "--to", "jsonl", "--include-summaries"],
    ["context", "show", "--conversation-id", CID],
    ["context", "show", "--session-key", SESSION_KEY],
    ["config", "show"],
]


def _migrated_copy(source: Path, target: Path) -> Path:
    shutil.copyfile(source, target)
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        assert schema.migrate(conn) == [m.__name__ for m in schema.SCHEMA_MIGRATIONS]
    finally:
        conn.close()
    return target


@pytest.fixture
def v1_db(tmp_path: Path) -> Path:
    return make_v1_db(tmp_path / "v1" / "lcm.db")


def _checkpointed(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


@pytest.mark.parametrize("migrated", [False, True], ids=["as-1.0-left-it", "after-our-migrations"])
def test_every_read_command_works(v1_db: Path, tmp_path: Path, migrated: bool) -> None:
    db = _migrated_copy(_checkpointed(v1_db), tmp_path / "copy.db") if migrated else _checkpointed(v1_db)
    before = db.read_bytes()
    for words in READS:
        out = lcm("--db", str(db), "--openclaw-dir", str(tmp_path / "state"), *words)
        assert out.code == 0, (words, out.stderr)
    assert db.read_bytes() == before  # reads wrote nothing, not even a migration


def test_reads_see_the_published_dag_and_messages(v1_db: Path) -> None:
    status = lcm("--db", str(v1_db), "status").json["data"]["status"]
    assert status["conversations"] == {"total": 2, "active": 1}
    assert status["summaries"]["count"] == 2 and status["context"]["items"] == 6
    shown = lcm("--db", str(v1_db), "summaries", "show", SUMMARY_IDS[0]).json["data"]
    assert shown["summary"]["kind"] == "leaf"
    tail = lcm("--db", str(v1_db), "messages", "tail", "--conversation-id", CID).json["data"]
    assert "v1 message 10" in repr(tail)
    context = lcm("--db", str(v1_db), "context", "show", "--conversation-id", CID).json["data"]
    assert SUMMARY_IDS[0] in repr(context) and SUMMARY_IDS[1] in repr(context)


def test_doctor_and_backups_work(v1_db: Path, tmp_path: Path) -> None:
    doctor = lcm("--db", str(v1_db), "doctor")
    data = doctor.json["data"]
    assert doctor.code == data["exitStatus"], doctor.stderr  # findings are allowed; crashes are not
    assert data["counts"]["SKIP"] == 0
    taken = lcm("--db", str(v1_db), "backup", "--out", str(tmp_path / "v1.bak"))
    assert taken.code == 0, taken.stderr
    verified = lcm("--db", str(v1_db), "backup", "verify", str(tmp_path / "v1.bak"))
    assert verified.code == 0 and verified.json["data"]["ok"] is True
    assert durable_rows(tmp_path / "v1.bak") == durable_rows(v1_db)


def test_our_migrations_leave_1_0_rows_untouched(v1_db: Path, tmp_path: Path) -> None:
    before = durable_rows(v1_db)
    copy = _migrated_copy(_checkpointed(v1_db), tmp_path / "copy.db")
    assert durable_rows(copy) == before
    conn = sqlite3.connect(copy)
    try:
        # 1.0's indexes survive, and no durable table was rebuilt under another shape.
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"pending_summary_node_messages_message_idx", "turn_advancements_session_idx"} <= indexes
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # What m001 adds back (1.0 dropped them) is additive: a table and a nullable column.
        assert conn.execute("SELECT COUNT(*) FROM conversation_bootstrap_state").fetchone()[0] == 0
    finally:
        conn.close()
    assert schema.pending_migrations(sqlite3.connect(copy)) == []


def _doctor(db: Path, *args: str) -> dict[str, dict[str, object]]:
    out = lcm("--db", str(db), "doctor", *args)
    return {c["check"]: c for c in out.json["data"]["checks"]}


def test_doctor_understands_the_durable_turn_rows(v1_db: Path) -> None:
    checks = _doctor(v1_db)
    assert checks["pending.open-batches"]["status"] == "INFO"
    assert checks["pending.open-batches"]["affected"] == ["batch-ready"]
    assert checks["turns.orphaned"]["affected"] == ["adv:sess-gone:turn-1"]
    assert checks["pending.dangling"]["status"] == "PASS"
    assert checks["epochs.frontier-missing"]["status"] == "PASS"
    # A writer with foreign keys off removed rows 1.0's pending state and epoch name.
    conn = sqlite3.connect(v1_db)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("DELETE FROM summaries WHERE summary_id = ?", (SUMMARY_IDS[1],))
    conn.execute("DELETE FROM messages WHERE message_id IN (8, 10)")
    conn.commit()
    conn.close()
    checks = _doctor(v1_db)
    dangling = checks["pending.dangling"]
    assert dangling["status"] == "FAIL" and dangling["severity"] == "error"
    assert dangling["affected"] == [
        "node-child:node-ready-cond:1",
        "node-message:node-ready-leaf:8",
        "node:node-pub-2",
    ]
    assert checks["epochs.frontier-missing"]["affected"] == [CONVERSATION_ID]


def test_doctor_apply_marks_long_open_batches_stale(v1_db: Path) -> None:
    dry = lcm("--db", str(v1_db), "doctor", "apply", "--check", "pending.open-batches").json["data"]
    assert [c["batchId"] for u in dry["units"] for c in u["changes"]] == ["batch-ready"]
    out = lcm(
        "--db", str(v1_db), "doctor", "apply", "--check", "pending.open-batches", "--apply", "--no-backup"
    )
    assert out.code == 0, out.stderr
    conn = sqlite3.connect(v1_db)
    try:
        statuses = dict(conn.execute("SELECT node_id, status FROM pending_summary_nodes"))
        batch = conn.execute(
            "SELECT status FROM pending_compaction_batches WHERE batch_id = 'batch-ready'"
        ).fetchone()
    finally:
        conn.close()
    assert batch == ("stale",)
    assert statuses == {
        "node-pub-1": "promoted",
        "node-pub-2": "promoted",
        "node-ready-leaf": "stale",
        "node-ready-cond": "stale",
    }
    assert _doctor(v1_db)["pending.open-batches"]["status"] == "PASS"


def test_doctor_skips_the_new_checks_on_older_databases(tmp_path: Path) -> None:
    from tests.support.legacy_schema import make_legacy_db

    old = make_legacy_db(tmp_path / "old.db", "0.9").path
    checks = _doctor(old)
    for check_id in ("pending.open-batches", "pending.dangling", "turns.orphaned", "epochs.frontier-missing"):
        assert checks[check_id]["status"] == "SKIP"
