"""`lcm prune` and `lcm prune restore`: archive, verify, delete; restore row for row."""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.maintenance.prune import ARCHIVED_TABLES
from tests.conftest import lcm
from tests.support.sample import build_sample

TABLES = [t for t, _ in ARCHIVED_TABLES]


def snapshot(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every archived table and of the FTS tables, sorted, for exact comparison."""
    conn = sqlite3.connect(db)
    try:
        out = {}
        for table in TABLES:
            out[table] = sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
        out["messages_fts"] = sorted(conn.execute("SELECT rowid, content FROM messages_fts").fetchall())
        out["summaries_fts"] = sorted(
            conn.execute("SELECT summary_id, content FROM summaries_fts").fetchall()
        )
        return out
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "lcm.db"
    build_sample(path)
    return path


def test_dry_run_names_conversations_and_bytes(db: Path) -> None:
    before = db.read_bytes()
    out = lcm("--db", str(db), "prune", "--before", "2026-07-02T00:00:00Z")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["applied"] is False
    assert [c["conversationId"] for c in data["conversations"]] == [2]  # archived only by default
    assert data["skippedActive"] == 2 and data["estimatedReclaimBytes"] > 0
    assert db.read_bytes() == before
    everything = lcm("--db", str(db), "prune", "--before", "2026-07-02T00:00:00Z", "--include-active")
    assert [c["conversationId"] for c in everything.json["data"]["conversations"]] == [2, 3, 1]


def test_bad_input(db: Path, tmp_path: Path) -> None:
    assert lcm("--db", str(db), "prune").error["code"] == "INVALID_ARGUMENT"
    assert lcm("--db", str(db), "prune", "--before", "soon").error["code"] == "INVALID_TIME_FILTER"
    assert lcm("--db", str(db), "prune", "--max-db-size", "big").error["code"] == "INVALID_ARGUMENT"
    assert lcm("--db", str(db), "prune", "--class", "all").error["code"] == "INVALID_ARGUMENT"
    active = lcm("--db", str(db), "prune", "--conversation-id", "1")
    assert active.error["code"] == "INVALID_ARGUMENT" and "--include-active" in active.error["message"]
    missing = lcm("--db", str(db), "prune", "restore", str(tmp_path / "nope.jsonl.gz"))
    assert missing.code == 3 and missing.error["code"] == "ARCHIVE_NOT_FOUND"


def test_prune_then_restore_round_trip_row_by_row(db: Path, tmp_path: Path) -> None:
    original = snapshot(db)
    archive = tmp_path / "c1.jsonl.gz"
    out = lcm(
        "--db",
        str(db),
        "prune",
        "--conversation-id",
        "1",
        "--include-active",
        "--out",
        str(archive),
        "--apply",
    )
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["verified"] is True and data["deleted"]["conversations"] == 1
    assert data["archive"]["rows"]["messages"] == 24 and data["archive"]["rows"]["summaries"] == 3
    assert data["reclaimedBytes"] >= 0
    pruned = snapshot(db)
    assert not [r for r in pruned["messages"] if r[1] == 1]
    assert len(pruned["messages_fts"]) == len(original["messages_fts"]) - 24
    assert pruned["summaries_fts"] == [] and pruned["focus_briefs"] == [] and pruned["large_files"] == []
    manifest = json.loads(Path(str(archive) + ".manifest.json").read_text())
    assert manifest["conversationIds"] == [1] and len(manifest["sha256"]) == 64

    dry = lcm("--db", str(db), "prune", "restore", str(archive))
    assert dry.json["data"]["applied"] is False and snapshot(db) == pruned
    restored = lcm("--db", str(db), "prune", "restore", str(archive), "--apply")
    assert restored.code == 0, restored.stderr
    assert restored.json["data"]["inserted"]["messages"] == 24
    assert snapshot(db) == original
    again = lcm("--db", str(db), "prune", "restore", str(archive), "--apply").json["data"]
    assert again["inserted"] == {} and snapshot(db) == original  # idempotent
    clean = lcm("--db", str(db), "doctor", "--check", "fts", "--check", "dag", "--check", "context")
    assert clean.code == 0, clean.stdout


def test_restore_next_to_a_new_active_row_comes_back_archived(db: Path, tmp_path: Path) -> None:
    archive = tmp_path / "c1.jsonl.gz"
    lcm(
        "--db",
        str(db),
        "prune",
        "--conversation-id",
        "1",
        "--include-active",
        "--out",
        str(archive),
        "--apply",
    )
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO conversations (session_id, session_key, active) VALUES ('new', 'agent:main:main', 1)"
        )
    conn.close()
    out = lcm("--db", str(db), "prune", "restore", str(archive), "--apply")
    assert out.json["data"]["restoredArchived"] == [1]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT active FROM conversations WHERE conversation_id = 1").fetchone()[0] == 0
    finally:
        conn.close()


@pytest.mark.parametrize("damage", ["flip", "truncate", "manifest"])
def test_corrupted_archive_is_refused_and_nothing_changes(db: Path, tmp_path: Path, damage: str) -> None:
    archive = tmp_path / "c2.jsonl.gz"
    lcm("--db", str(db), "prune", "--conversation-id", "2", "--out", str(archive), "--apply")
    raw = bytearray(archive.read_bytes())
    if damage == "flip":
        raw[len(raw) // 2] ^= 0xFF
        archive.write_bytes(bytes(raw))
    elif damage == "truncate":
        archive.write_bytes(bytes(raw[: len(raw) - 20]))
    else:
        manifest = Path(str(archive) + ".manifest.json")
        body = json.loads(manifest.read_text())
        body["sha256"] = "0" * 64
        manifest.write_text(json.dumps(body))
    before = snapshot(db)
    out = lcm("--db", str(db), "prune", "restore", str(archive), "--apply")
    assert out.code == 4 and out.error["code"] == "ARCHIVE_CORRUPT"
    assert snapshot(db) == before


def test_archive_content_edit_is_caught_by_the_trailer(db: Path, tmp_path: Path) -> None:
    archive = tmp_path / "c2.jsonl.gz"
    lcm("--db", str(db), "prune", "--conversation-id", "2", "--out", str(archive), "--apply")
    lines = gzip.decompress(archive.read_bytes()).splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"old 0"' in line)
    lines[at] = lines[at].replace(b'"old 0"', b'"new 0"')
    archive.write_bytes(gzip.compress(b"".join(lines)))
    os.unlink(str(archive) + ".manifest.json")  # even without the manifest
    out = lcm("--db", str(db), "prune", "restore", str(archive))
    assert out.error["code"] == "ARCHIVE_CORRUPT" and "checksum" in out.error["message"]


def test_an_archive_whose_rows_disagree_with_its_trailer_counts_is_refused(db: Path, tmp_path: Path) -> None:
    """A row dropped and the trailer's checksum recomputed to match (no manifest): only the
    trailer's row counts can tell."""
    import hashlib

    archive = tmp_path / "c2.jsonl.gz"
    lcm("--db", str(db), "prune", "--conversation-id", "2", "--out", str(archive), "--apply")
    lines = gzip.decompress(archive.read_bytes()).splitlines(keepends=True)
    *body, trailer_line = lines
    body.pop(next(i for i, line in enumerate(body) if line.startswith(b"[")))
    trailer = json.loads(trailer_line)
    trailer["sha256"] = hashlib.sha256(b"".join(body)).hexdigest()
    archive.write_bytes(gzip.compress(b"".join(body) + json.dumps(trailer).encode() + b"\n"))
    os.unlink(str(archive) + ".manifest.json")
    before = snapshot(db)
    out = lcm("--db", str(db), "prune", "restore", str(archive), "--apply")
    assert out.error["code"] == "ARCHIVE_CORRUPT" and "row counts" in out.error["message"]
    assert snapshot(db) == before


def test_max_db_size_takes_oldest_first(db: Path) -> None:
    out = lcm("--db", str(db), "prune", "--max-db-size", "1KB", "--include-active")
    ids = [c["conversationId"] for c in out.json["data"]["conversations"]]
    assert ids[0] == 2 and set(ids) <= {1, 2, 3}
    roomy = lcm("--db", str(db), "prune", "--max-db-size", "1GiB", "--include-active")
    assert roomy.json["data"]["conversations"] == []


def test_changes_during_archiving_abort_the_delete(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lcm_cli.engine.maintenance.prune as prune

    original = prune.write_archive

    def racing(*args: Any, **kwargs: Any) -> dict[str, Any]:
        result = original(*args, **kwargs)
        other = sqlite3.connect(db)
        with other:
            other.execute(
                "INSERT INTO messages (conversation_id, seq, role, content, token_count) VALUES (2, 99, 'user', 'late', 1)"
            )
        other.close()
        return result

    monkeypatch.setattr(prune, "write_archive", racing)
    out = lcm(
        "--db", str(db), "prune", "--conversation-id", "2", "--out", str(tmp_path / "a.jsonl.gz"), "--apply"
    )
    assert out.code == 4 and out.error["code"] == "STATE_CHANGED"
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = 2").fetchone()[0] == 4
    finally:
        conn.close()


def test_an_archive_damaged_on_disk_is_caught_before_anything_is_deleted(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prune re-reads the archive from disk before deleting: one byte changed after it was
    written (a bad disk, a bug in the writer) stops the delete."""
    import lcm_cli.engine.maintenance.prune as prune

    original = prune.write_archive

    def damaged(*args: Any, **kwargs: Any) -> dict[str, Any]:
        result = original(*args, **kwargs)
        path = Path(result["archivePath"])
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        path.write_bytes(bytes(raw))
        return result

    monkeypatch.setattr(prune, "write_archive", damaged)
    before = snapshot(db)
    out = lcm(
        "--db", str(db), "prune", "--conversation-id", "2", "--out", str(tmp_path / "a.jsonl.gz"), "--apply"
    )
    assert out.code == 4 and out.error["code"] == "ARCHIVE_CORRUPT"
    assert snapshot(db) == before


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


def test_kill_during_prune_delete_leaves_everything(db: Path, tmp_path: Path) -> None:
    before = snapshot(db)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILL_MID_DELETE,
            "--db",
            str(db),
            "prune",
            "--conversation-id",
            "1",
            "--include-active",
            "--out",
            str(tmp_path / "k.jsonl.gz"),
            "--apply",
        ],
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
    assert snapshot(db) == before
    # The archive written before the kill is complete and verifiable.
    assert lcm("--db", str(db), "prune", "restore", str(tmp_path / "k.jsonl.gz")).json["data"]["ok"] is True


def test_a_live_writer_holding_the_lock_is_database_busy(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LCM_BUSY_TIMEOUT_MS", "200")
    before = snapshot(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        out = lcm(
            "--db",
            str(db),
            "prune",
            "--conversation-id",
            "2",
            "--out",
            str(tmp_path / "b.jsonl.gz"),
            "--apply",
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert out.code == 5 and out.error["code"] == "DATABASE_BUSY"
    assert out.error["details"]["deleted"] is False
    assert snapshot(db) == before
