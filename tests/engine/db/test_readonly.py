"""The read-only boundary, busy and foreign files, and databases from older releases."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import lcm, lcm_process
from tests.support.legacy_schema import ERAS, make_legacy_db
from tests.support.processes import exclusive_lock

READS = [
    ["status"],
    ["conversations", "list"],
    ["conversations", "show", "--conversation-id", "1"],
    ["messages", "list", "--conversation-id", "1", "--include-content"],
    ["messages", "tail", "--conversation-id", "1"],
    ["summaries", "list"],
    ["summaries", "list", "--conversation-id", "1"],
]


def test_connection_is_really_read_only(db_path: Path) -> None:
    from lcm_cli.engine.db.connection import open_read_only

    conn = open_read_only(str(db_path))
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM messages")
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("CREATE TABLE x (y)")
    conn.execute("PRAGMA query_only = OFF")  # even with query_only off, mode=ro refuses
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("UPDATE conversations SET title = 'x'")
    conn.close()


def test_reads_change_no_bytes(db_path: Path) -> None:
    before = db_path.read_bytes()
    for words in READS:
        assert lcm("--db", str(db_path), *words).code == 0
    assert db_path.read_bytes() == before


@pytest.mark.parametrize("target", ["missing.db", "sub/dir/lcm.db"])
def test_missing_database_is_never_created(tmp_path: Path, target: str) -> None:
    path = tmp_path / target
    out = lcm("--db", str(path), "status")
    assert out.code == 3 and out.error["code"] == "DATABASE_NOT_FOUND"
    assert list(tmp_path.iterdir()) == []  # neither the file nor its parent directories


def test_directory_is_not_a_database(tmp_path: Path) -> None:
    out = lcm("--db", str(tmp_path), "status")
    assert out.code == 3 and out.error["code"] == "DATABASE_NOT_FOUND"


def test_file_that_is_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    path.write_text("this is a text file, not a database\n" * 20)
    out = lcm("--db", str(path), "status")
    # cli-contract.md §13 (DATABASE_OPEN_FAILED row): the lazy open meets a non-database at
    # the first query.
    assert out.code == 5 and out.error["code"] == "DATABASE_QUERY_FAILED"
    assert out.error["details"] == {"databasePath": str(path), "reason": "not-sqlite"}


def test_sqlite_file_without_lcm_tables(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    out = lcm("--db", str(path), "conversations", "list")
    assert out.code == 5 and out.error["code"] == "DATABASE_QUERY_FAILED"
    assert "conversations" in out.error["message"]
    assert out.error["details"]["reason"] == "not-lcm-database" and "bug" not in out.error["message"]


@contextlib.contextmanager
def _unwritable(path: Path) -> Iterator[None]:
    """Make ``path`` refuse writes: mode bits for a user, the immutable attribute for root."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("root cannot make a file read-only here (no chattr +i)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("target", ["file", "folder"])
def test_a_write_to_a_read_only_database_says_so(db_path: Path, target: str) -> None:
    turn = '{"role": "user", "content": "hello"}'
    with _unwritable(db_path if target == "file" else db_path.parent):
        out = lcm_process("--db", str(db_path), "ingest", "--session-key", "agent:main:main", input=turn)
        assert lcm("--db", str(db_path), "status").code == 0  # reads still work
    assert out.code == 5 and out.stdout == ""
    error = out.error
    assert error["code"] == "DATABASE_QUERY_FAILED"  # cli-contract §13's code; the case in details
    assert error["details"]["reason"] == "read-only"
    assert "writable" in error["message"] and "bug" not in error["message"]


def test_locked_database_gives_database_busy_after_a_bounded_wait(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LCM_BUSY_TIMEOUT_MS", "300")
    with exclusive_lock(db_path):
        started = time.monotonic()
        out = lcm("--db", str(db_path), "status")
        elapsed = time.monotonic() - started
    assert out.code == 5 and out.error["code"] == "DATABASE_BUSY"
    assert out.error["details"] == {"databasePath": str(db_path), "waitedMs": 300}
    assert 0.25 < elapsed < 10


def test_live_writer_in_wal_mode_does_not_block_readers(db_path: Path) -> None:
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE conversations SET title = 'uncommitted' WHERE conversation_id = 1")
    try:
        out = lcm("--db", str(db_path), "conversations", "show", "--conversation-id", "1")
        assert out.code == 0
        assert out.json["data"]["conversation"]["title"] == "Main session"  # sees the committed state
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("words", READS, ids=" ".join)
def test_older_databases_still_read(tmp_path: Path, era: str, words: list[str]) -> None:
    legacy = make_legacy_db(tmp_path / "lcm.db", era)
    before = legacy.path.read_bytes()
    out = lcm("--db", str(legacy.path), *words)
    assert out.code == 0, out.stderr
    assert legacy.path.read_bytes() == before


def test_oldest_database_reports_missing_parts_as_null(tmp_path: Path) -> None:
    legacy = make_legacy_db(tmp_path / "lcm.db", "0.1")
    show = lcm("--db", str(legacy.path), "conversations", "show", "--conversation-id", "1").json["data"]
    assert show["conversation"]["sessionKey"] is None
    assert show["conversation"]["active"] is True
    assert show["maintenance"] is None and show["telemetry"] is None and show["bootstrap"] is None
    assert show["focusBriefs"] is None
    status = lcm("--db", str(legacy.path), "status").json["data"]["status"]
    assert status["maintenance"] is None
    assert status["conversations"]["active"] == status["conversations"]["total"]
    items = lcm("--db", str(legacy.path), "messages", "list", "--conversation-id", "1").json["data"]["items"]
    assert items and all(item["largeContent"] is None for item in items)
    summaries = lcm("--db", str(legacy.path), "summaries", "list").json["data"]["items"]
    assert all(item["model"] is None for item in summaries)
    by_key = lcm("--db", str(legacy.path), "messages", "list", "--session-key", "agent:main:main")
    assert by_key.code == 3 and by_key.error["code"] == "CONVERSATION_NOT_FOUND"
