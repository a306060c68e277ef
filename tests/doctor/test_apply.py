"""`lcm doctor apply`: dry run lists every change, --apply backs up, repairs per unit, and
a second scan is clean; a kill or a lock never leaves half a unit."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.doctor.apply import REPAIRABLE
from lcm_cli.doctor.checks import CHECKS
from tests.conftest import lcm
from tests.support.doctor_seed import build_seeded, write_config

FIXED = (
    "dag.descendant-counts",
    "context.ordinals",
    "context.dangling",
    "context.duplicates",
    "fts.messages",
    "fts.summaries",
    "fts.summaries-cjk",
    "maintenance.stale",
    "maintenance.stuck",
)


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[list[str], dict[str, set[Any]], Path]:
    db = tmp_path / "lcm.db"
    transcripts = tmp_path / "sessions"
    transcripts.mkdir()
    expect = build_seeded(db, transcripts)
    config = write_config(tmp_path, db, ["main", "work"])
    return ["--db", str(db), "--config", str(config)], expect, db


def scan(args: list[str]) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in lcm(*args, "doctor", "--limit", "500").json["data"]["checks"]}


def test_dry_run_lists_changes_and_writes_nothing(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, expect, db = seeded
    before = db.read_bytes()
    out = lcm(*args, "doctor", "apply")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["applied"] is False and "--apply" in data["message"]
    assert db.read_bytes() == before
    assert not list(db.parent.glob("*.bak"))
    units = {u["unit"]: u for u in data["units"]}
    assert {u["check"] for u in data["units"]} >= {
        "dag.descendant-counts",
        "fts.messages",
        "maintenance.stale",
    }
    dangling = [
        u
        for u in data["units"]
        if "context.dangling" in u["check"]
        and any(c["action"] == "delete-item" and c["reason"] == "missing-message" for c in u["changes"])
    ]
    assert len(dangling) == 1
    assert units["fts:messages_fts"]["changes"][0]["problems"] == {
        str(i): p
        for i, p in sorted((i, "missing" if i != 777777 else "stale") for i in expect["fts.messages"])
    }
    # Re-summarizing is planned per summary, without calling the summarizer in a dry run.
    resummarize = {u["unit"] for u in data["units"] if u["check"] == "summaries.markers"}
    assert resummarize == {f"summary:{i}" for i in expect["summaries.markers"]}
    assert data["summarizer"] == "extractive"


def test_apply_repairs_and_second_scan_is_clean(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, expect, db = seeded
    before = scan(args)
    out = lcm(*args, "doctor", "apply", "--apply")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["applied"] is True
    backup = Path(data["backup"]["backupPath"])
    assert backup.exists() and ".doctor-repair-" in backup.name
    repairs = [u for u in data["units"] if u["check"] != "summaries.markers"]
    assert repairs and all(u["status"] == "applied" for u in repairs), repairs
    # The seeded summaries cover one short message each: no summary is shorter than that,
    # so the extractive summarizer's answer falls back and the marker stays (reported).
    assert {u["reason"] for u in data["units"] if u["check"] == "summaries.markers"} == {
        "summarizer-gave-no-usable-text"
    }
    after = scan(args)
    for check_id in FIXED:
        assert after[check_id]["count"] == 0, (check_id, after[check_id]["affected"])
    # What apply does not repair is still reported, unchanged.
    for check_id in (
        "summaries.markers",
        "dag.cycles",
        "dag.depth-kind",
        "dag.cross-conversation",
        "maintenance.failed",
        "rollover.splits",
        "junk.cron-sessions",
    ):
        assert after[check_id]["affected"] == before[check_id]["affected"], check_id
    # Context rows are renumbered 0..N-1 and the dropped ones are really gone.
    conn = sqlite3.connect(db)
    try:
        for (cid,) in conn.execute("SELECT DISTINCT conversation_id FROM context_items"):
            ordinals = [
                r[0]
                for r in conn.execute(
                    "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal", (cid,)
                )
            ]
            assert ordinals == list(range(len(ordinals))), cid
        assert conn.execute("SELECT COUNT(*) FROM context_items WHERE message_id = 555555").fetchone()[0] == 0
        row = conn.execute(
            "SELECT pending, resolution_reason, maintenance_revision FROM conversation_compaction_maintenance "
            "WHERE conversation_id = ?",
            (next(iter(expect["maintenance.stale"])),),
        ).fetchone()
        assert row[0] == 0 and row[1] == "operator-ignored" and row[2] >= 1
    finally:
        conn.close()
    # A second apply has nothing left to do.
    again = lcm(*args, "doctor", "apply", "--apply", "--check", "context", "--check", "fts").json["data"]
    assert again["units"] == [] and again["backup"] is None


def test_apply_one_check_and_scope(seeded: tuple[list[str], dict[str, set[Any]], Path]) -> None:
    args, expect, db = seeded
    out = lcm(*args, "doctor", "apply", "--check", "fts.summaries", "--apply", "--no-backup")
    units = out.json["data"]["units"]
    assert [u["unit"] for u in units] == ["fts:summaries_fts"]
    assert units[0]["changes"][0]["inserted"] == 1
    after = scan(args)
    assert after["fts.summaries"]["count"] == 0 and after["fts.messages"]["count"] == 2
    not_fixable = lcm(*args, "doctor", "apply", "--check", "dag.cycles")
    assert not_fixable.code == 2 and not_fixable.error["details"]["repairable"] == list(REPAIRABLE)


def test_a_fix_names_doctor_apply_exactly_when_the_check_carries_a_repair() -> None:
    """A check never sends the reader to `doctor apply` without a repair to run, or hides one."""
    for check in CHECKS:
        names_apply = check.fix == f"lcm doctor apply --check {check.id} --apply"
        assert names_apply == (check.repair is not None), check.id


def test_locked_database_is_database_busy_and_nothing_half_done(
    seeded: tuple[list[str], dict[str, set[Any]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    args, _, db = seeded
    monkeypatch.setenv("LCM_BUSY_TIMEOUT_MS", "200")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        out = lcm(*args, "doctor", "apply", "--check", "context", "--apply", "--no-backup")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert out.code == 5 and out.error["code"] == "DATABASE_BUSY"
    assert out.error["details"]["committedUnits"] == []
    assert scan(args)["context.dangling"]["count"] == 2


KILL_MID_UNIT = """
import sys, time
import lcm_cli.doctor.repairs as repairs
original = repairs._context_write
def slow(conversation_id):
    write = original(conversation_id)
    def wrapped(conn, changes):
        write(conn, changes)
        print("inside", flush=True)
        time.sleep(30)
    return wrapped
repairs._context_write = slow
from lcm_cli.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_kill_during_apply_leaves_the_unit_untouched(
    seeded: tuple[list[str], dict[str, set[Any]], Path],
) -> None:
    args, expect, db = seeded
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILL_MID_UNIT,
            *args,
            "doctor",
            "apply",
            "--check",
            "context",
            "--apply",
            "--no-backup",
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
        assert conn.execute("SELECT COUNT(*) FROM context_items WHERE ordinal < 0").fetchone()[0] == 0
    finally:
        conn.close()
    after = scan(args)
    assert set(after["context.dangling"]["affected"]) == expect["context.dangling"]
    assert set(after["context.ordinals"]["affected"]) == expect["context.ordinals"]
    done = lcm(*args, "doctor", "apply", "--check", "context", "--apply", "--no-backup")
    assert done.code == 0 and scan(args)["context.dangling"]["count"] == 0


def test_a_failing_unit_rolls_back_alone(
    seeded: tuple[list[str], dict[str, set[Any]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    args, expect, _ = seeded
    import lcm_cli.doctor.repairs as repairs

    original = repairs._descendants_write

    def broken(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
        original(conn, changes)
        raise sqlite3.IntegrityError("simulated failure after writing")

    monkeypatch.setattr(repairs, "_descendants_write", broken)
    out = lcm(
        *args,
        "doctor",
        "apply",
        "--check",
        "dag.descendant-counts",
        "--check",
        "fts",
        "--apply",
        "--no-backup",
    )
    units = {u["check"]: u for u in out.json["data"]["units"]}
    assert units["dag.descendant-counts"]["status"] == "failed"
    assert "simulated" in units["dag.descendant-counts"]["error"]["message"]
    assert units["fts.messages"]["status"] == "applied"
    after = scan(args)
    assert set(after["dag.descendant-counts"]["affected"]) == expect["dag.descendant-counts"]
    assert after["fts.messages"]["count"] == 0
