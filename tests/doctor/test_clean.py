"""`lcm doctor clean`: junk classes for every agent id, dry run, backup, one transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import lcm
from tests.support.doctor_seed import build_seeded, write_config


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[list[str], dict[str, set[Any]], Path]:
    db = tmp_path / "lcm.db"
    transcripts = tmp_path / "sessions"
    transcripts.mkdir()
    expect = build_seeded(db, transcripts)
    config = write_config(tmp_path, db, ["main", "work"])
    return ["--db", str(db), "--config", str(config)], expect, db


def counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {
            t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in (
                "conversations",
                "messages",
                "summaries",
                "context_items",
                "messages_fts",
                "message_parts",
            )
        }
    finally:
        conn.close()


def test_dry_run_reports_each_class_with_examples(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, expect, db = seeded
    before = db.read_bytes()
    out = lcm(*args, "doctor", "clean")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    by_class = {f["class"]: f for f in data["filters"]}
    assert set(by_class["archived_subagents"]["conversationIds"]) == expect["junk.archived-subagents"]
    assert set(by_class["cron_sessions"]["conversationIds"]) == expect["junk.cron-sessions"]
    assert set(by_class["null_subagent_context"]["conversationIds"]) == expect["junk.null-subagent-context"]
    assert by_class["cron_sessions"]["messageCount"] == 12
    example = by_class["null_subagent_context"]["examples"][0]
    assert example["firstMessage"].startswith("[Subagent Context]") and example["messageCount"] == 6
    assert data["totalConversations"] == 4 and data["agentIds"] == ["main", "work"]
    assert db.read_bytes() == before


def test_apply_one_class_backs_up_and_deletes_everything_of_it(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, expect, db = seeded
    before = counts(db)
    conn = sqlite3.connect(db)
    seeded_violations = set(conn.execute("PRAGMA foreign_key_check").fetchall())  # broken on purpose
    conn.close()
    out = lcm(*args, "doctor", "clean", "--class", "cron_sessions", "--apply", "--vacuum")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert ".doctor-cleaners-" in data["backup"]["backupPath"] and Path(data["backup"]["backupPath"]).exists()
    assert data["deletedConversations"] == 2 and data["deletedMessages"] == 12
    assert data["quickCheck"] == ["ok"] and data["vacuum"]["fileBytesAfter"] > 0
    after = counts(db)
    assert after["conversations"] == before["conversations"] - 2
    assert after["messages"] == before["messages"] - 12
    assert after["messages_fts"] == before["messages_fts"] - 12
    conn = sqlite3.connect(db)
    try:
        ids = ",".join(str(i) for i in expect["junk.cron-sessions"])
        assert (
            conn.execute(f"SELECT COUNT(*) FROM messages WHERE conversation_id IN ({ids})").fetchone()[0] == 0
        )
        assert set(conn.execute("PRAGMA foreign_key_check").fetchall()) <= seeded_violations
    finally:
        conn.close()
    scan = {c["check"]: c for c in lcm(*args, "doctor").json["data"]["checks"]}
    assert scan["junk.cron-sessions"]["count"] == 0
    assert scan["junk.archived-subagents"]["count"] == 1  # other classes untouched


def test_unknown_class_and_nothing_to_do(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, _, db = seeded
    bad = lcm(*args, "doctor", "clean", "--class", "everything")
    assert bad.code == 2 and bad.error["code"] == "INVALID_ARGUMENT"
    orphaned = lcm(*args, "doctor", "clean", "--class", "orphaned")
    assert "lcm prune --class orphaned" in orphaned.error["message"]
    assert lcm(*args, "doctor", "clean", "--class", "cron_sessions", "--apply", "--no-backup").code == 0
    again = lcm(*args, "doctor", "clean", "--class", "cron_sessions", "--apply").json["data"]
    assert again["deletedConversations"] == 0 and again["backup"] is None


KILL_MID_CLEAN = """
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


def test_kill_during_clean_deletes_nothing(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    import os
    import signal
    import subprocess
    import sys

    args, _, db = seeded
    before = counts(db)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_MID_CLEAN, *args, "doctor", "clean", "--apply", "--no-backup"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert counts(db) == before
    assert lcm(*args, "doctor", "clean", "--apply", "--no-backup").json["data"]["deletedConversations"] == 4
