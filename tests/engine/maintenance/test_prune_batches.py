"""`prune --apply` deletes in bounded batches: exactly what one transaction deleted, the live
writer never waits long, a kill between batches leaves a consistent file that a rerun
finishes, and `prune restore` still puts back everything the archive holds."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.maintenance import prune
from lcm_cli.engine.maintenance.prune_ops import _open_writer
from tests.conftest import lcm
from tests.engine.db.scale_file import build_file, recount
from tests.engine.db.writer_probe import WriterProbe

_SKIP = {"sqlite_stat1", "sqlite_sequence", "probe_writes", "lcm_migration_state"}
_SHADOW = ("_data", "_idx", "_content", "_docsize", "_config")


def everything(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted, for exact comparison (FTS by their keys and text;
    lcm's totals are checked against a recount instead)."""
    conn = sqlite3.connect(str(path))
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0] not in _SKIP and not r[0].startswith("lcm_") and not r[0].endswith(_SHADOW)
        ]
        out = {}
        for table in tables:
            if table == "messages_fts":
                sql = "SELECT rowid, content FROM messages_fts"
            elif table.startswith("summaries_fts"):
                sql = f"SELECT summary_id, content FROM {table}"
            else:
                sql = f"SELECT * FROM {table}"
            out[table] = sorted(conn.execute(sql).fetchall(), key=repr)
        return out
    finally:
        conn.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[int]]]:
    path = tmp_path_factory.mktemp("prune") / "lcm.db"
    ids = build_file(path, conversations=16, messages=500, archived=8)
    return path, ids


@pytest.fixture
def db(template: tuple[Path, dict[str, list[int]]], tmp_path: Path) -> Path:
    path = tmp_path / "lcm.db"
    shutil.copyfile(template[0], path)
    return path


def _archived(template: tuple[Path, dict[str, list[int]]]) -> list[int]:
    return template[1]["archived"]


def _staged(path: Path, ids: list[int]) -> sqlite3.Connection:
    conn = _open_writer(str(path), 30000)
    conn.execute("BEGIN")
    prune.stage_ids(conn, ids)
    prune.stage_rows(conn)
    conn.execute("COMMIT")
    conn.execute("PRAGMA foreign_keys = OFF")
    return conn


def test_batches_delete_exactly_what_one_transaction_deleted(
    template: tuple[Path, dict[str, list[int]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, batched = tmp_path / "one.db", tmp_path / "batched.db"
    shutil.copyfile(template[0], one)
    shutil.copyfile(template[0], batched)
    ids = _archived(template)[:3]
    conn = _staged(one, ids)
    conn.execute("BEGIN IMMEDIATE")
    whole = prune.delete_staged(conn)
    conn.execute("COMMIT")
    conn.close()
    from lcm_cli.engine.db import steps

    monkeypatch.setattr(prune, "FIRST_BATCH_ROWS", 7)
    monkeypatch.setattr(steps, "yield_to_writers", lambda held: None)
    seen: list[dict[str, Any]] = []
    conn = _staged(batched, ids)
    parts = prune.delete_in_batches(conn, step_seconds=0.001, on_batch=seen.append)
    conn.close()
    assert len(seen) > 50  # really in batches
    assert {k: v for k, v in parts.items() if v} == {k: v for k, v in whole.items() if v}
    assert everything(batched) == everything(one)
    check = sqlite3.connect(str(batched))
    assert check.execute("PRAGMA foreign_key_check").fetchall() == []
    scanned, kept = recount(check)
    assert kept == scanned
    check.close()


def test_prune_with_a_live_writer_keeps_every_write_and_restores_row_for_row(
    db: Path, template: tuple[Path, dict[str, list[int]]], tmp_path: Path
) -> None:
    original = everything(db)
    archive = tmp_path / "a.jsonl.gz"
    with WriterProbe(db, mode="messages", conversation=template[1]["active"][0]) as probe:
        out = lcm("--db", str(db), "prune", "--before", "2027-01-01", "--out", str(archive), "--apply")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["conversationCount"] == 8 and data["deleteBatches"] > 5
    assert probe.never_waited_long(), probe.summary()
    conn = sqlite3.connect(str(db))
    kept = {r[0] for r in conn.execute("SELECT message_id FROM messages")}
    assert set(probe.ids) <= kept  # every write of the live writer is still there
    assert conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id <= 8").fetchone()[0] == 0
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.execute(f"DELETE FROM messages WHERE message_id IN ({','.join(map(str, probe.ids))})")
    conn.commit()
    conn.close()
    restored = lcm("--db", str(db), "prune", "restore", str(archive), "--apply")
    assert restored.code == 0, restored.stderr
    assert everything(db) == original


def test_rows_written_to_a_pruned_conversation_mid_delete_are_kept(
    db: Path, template: tuple[Path, dict[str, list[int]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lcm_cli.engine.db import steps

    target = _archived(template)[0]
    pause = steps.yield_to_writers
    late: list[int] = []

    def write_late(held: float) -> None:
        if not late:  # between two batches: another program adds to a pruned conversation
            other = sqlite3.connect(str(db))
            with other:
                cur = other.execute(
                    "INSERT INTO messages (conversation_id, seq, role, content, token_count)"
                    " VALUES (?, 99999, 'user', 'late', 1)",
                    (target,),
                )
                late.append(int(cur.lastrowid or 0))
            other.close()
        pause(held)

    monkeypatch.setattr(steps, "yield_to_writers", write_late)
    out = lcm(
        "--db",
        str(db),
        "prune",
        "--conversation-id",
        str(target),
        "--out",
        str(tmp_path / "l.jsonl.gz"),
        "--apply",
    )
    assert out.code == 4 and out.error["code"] == "STATE_CHANGED", out.stderr
    assert out.error["details"]["deleted"]["messages"] == 500
    conn = sqlite3.connect(str(db))
    assert conn.execute(
        "SELECT conversation_id, content FROM messages WHERE message_id = ?", late
    ).fetchone() == (
        target,
        "late",
    )
    assert (
        conn.execute("SELECT COUNT(*) FROM conversations WHERE conversation_id = ?", (target,)).fetchone()[0]
        == 1
    )
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()


KILL_BETWEEN_BATCHES = r"""
import os, signal, sys
from lcm_cli.engine.db import steps
import lcm_cli.engine.maintenance.prune as prune
prune.FIRST_BATCH_ROWS = 20
taken = []
def counted(held):
    taken.append(held)
    if len(taken) == int(os.environ["KILL_AFTER"]):
        os.kill(os.getpid(), signal.SIGKILL)
steps.yield_to_writers = counted
from lcm_cli.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("after", [3, 12])
def test_a_kill_between_prune_batches_then_a_rerun_and_restores(db: Path, tmp_path: Path, after: int) -> None:
    original = everything(db)
    first = tmp_path / "first.jsonl.gz"
    args = ["--db", str(db), "prune", "--before", "2027-01-01"]
    proc = subprocess.run(
        [sys.executable, "-c", KILL_BETWEEN_BATCHES, *args, "--out", str(first), "--apply"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "KILL_AFTER": str(after)},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    conn = sqlite3.connect(str(db))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    partial = everything(db)
    assert partial != original  # some batches committed
    conn.close()
    # The archive written before the kill is whole, and a rerun finishes the job.
    assert lcm("--db", str(db), "prune", "restore", str(first)).json["data"]["ok"] is True
    second = tmp_path / "second.jsonl.gz"
    rerun = lcm(*args, "--out", str(second), "--apply")
    assert rerun.code == 0, rerun.stderr
    conn = sqlite3.connect(str(db))
    assert conn.execute("SELECT COUNT(*) FROM conversations WHERE conversation_id <= 8").fetchone()[0] == 0
    scanned, kept = recount(conn)
    assert kept == scanned
    conn.close()
    for archive in (first, second):
        assert lcm("--db", str(db), "prune", "restore", str(archive), "--apply").code == 0
    assert everything(db) == original
