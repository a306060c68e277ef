"""`lcm vacuum`: freed pages given back online in bounded steps on an incremental file, and
the one offline step (`--full`) that switches a file to it: refused while the file is in use,
bounded in memory, and a kill part-way leaves the file as it was."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import lcm
from tests.engine.db.scale_file import build_file
from tests.engine.db.writer_probe import WriterProbe
from tests.engine.maintenance.test_prune_batches import everything


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vacuum") / "lcm.db"
    build_file(path, conversations=16, messages=500, archived=8)
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "lcm.db"
    shutil.copyfile(template, path)
    return path


def _pragma(path: Path, name: str) -> object:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def _full(db: Path) -> None:
    out = lcm("--db", str(db), "vacuum", "--full", "--apply")
    assert out.code == 0, out.stderr


def test_dry_runs_say_the_mode_and_the_plan(db: Path) -> None:
    before = db.read_bytes()
    dry = lcm("--db", str(db), "vacuum").json["data"]
    assert dry["applied"] is False and dry["autoVacuum"] == "none"
    assert "lcm vacuum --full --apply" in dry["plan"]
    full = lcm("--db", str(db), "vacuum", "--full").json["data"]
    assert full["estimatedLockedOutSeconds"] >= 1 and "locked out" in full["plan"]
    assert db.read_bytes() == before


def test_online_vacuum_on_a_file_without_incremental_auto_vacuum_writes_nothing(db: Path) -> None:
    out = lcm("--db", str(db), "vacuum", "--apply")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["applied"] is False and "lcm vacuum --full --apply" in data["reason"]
    assert _pragma(db, "auto_vacuum") == 0


def test_full_vacuum_switches_the_file_and_keeps_every_row(db: Path) -> None:
    original = everything(db)
    out = lcm("--db", str(db), "vacuum", "--full", "--apply")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["autoVacuumBefore"] == "none" and data["autoVacuum"] == "incremental"
    assert data["lockedOutMs"] >= 0
    assert _pragma(db, "auto_vacuum") == 2 and _pragma(db, "journal_mode") == "wal"
    assert _pragma(db, "integrity_check") == "ok"
    assert everything(db) == original


def test_full_vacuum_is_refused_while_another_process_has_the_file_open(db: Path) -> None:
    with WriterProbe(db) as probe:
        out = lcm("--db", str(db), "vacuum", "--full", "--apply")
    assert out.code == 5 and out.error["code"] == "DATABASE_IN_USE", out.stderr
    assert out.error["details"]["holderPid"] is not None
    assert probe.never_waited_long(), probe.summary()
    assert _pragma(db, "auto_vacuum") == 0


def test_full_vacuum_is_refused_while_this_process_has_another_connection(db: Path) -> None:
    other = sqlite3.connect(str(db))
    other.execute("SELECT COUNT(*) FROM messages").fetchone()
    try:
        out = lcm("--db", str(db), "vacuum", "--full", "--apply")
    finally:
        other.close()
    assert out.code == 5 and out.error["code"] == "DATABASE_IN_USE", out.stderr
    assert _pragma(db, "auto_vacuum") == 0 and _pragma(db, "journal_mode") == "wal"


def test_incremental_vacuum_gives_pruned_space_back_while_the_writer_writes(db: Path, tmp_path: Path) -> None:
    _full(db)
    pruned = lcm(
        "--db", str(db), "prune", "--before", "2027-01-01", "--out", str(tmp_path / "p.jsonl.gz"), "--apply"
    )
    assert pruned.code == 0, pruned.stderr
    free = _pragma(db, "freelist_count")
    assert isinstance(free, int) and free > 100
    size = db.stat().st_size
    with WriterProbe(db, mode="messages", conversation=9) as probe:
        out = lcm("--db", str(db), "vacuum", "--apply")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["applied"] is True and data["pagesFreed"] >= free - 5 and data["steps"] >= 1
    assert probe.never_waited_long(), probe.summary()
    assert _pragma(db, "freelist_count") <= 5
    # Pages moved while the live writer wrote; the file shrinks at a checkpoint.
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert db.stat().st_size < size
    kept = sqlite3.connect(str(db))
    assert kept.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    ids = set(probe.ids)
    assert ids <= {r[0] for r in kept.execute("SELECT message_id FROM messages")}
    kept.close()


def test_prune_vacuum_gives_the_space_back_in_the_same_command(db: Path, tmp_path: Path) -> None:
    _full(db)
    size = db.stat().st_size
    out = lcm(
        "--db",
        str(db),
        "prune",
        "--before",
        "2027-01-01",
        "--out",
        str(tmp_path / "v.jsonl.gz"),
        "--apply",
        "--vacuum",
    )
    assert out.code == 0, out.stderr
    vacuum = out.json["data"]["vacuum"]
    assert vacuum["applied"] is True and vacuum["pagesFreed"] > 100
    assert _pragma(db, "freelist_count") <= 5
    conn = sqlite3.connect(str(db))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert db.stat().st_size < size


def test_prune_vacuum_on_a_file_without_incremental_auto_vacuum_says_what_to_run(
    db: Path, tmp_path: Path
) -> None:
    out = lcm(
        "--db",
        str(db),
        "prune",
        "--before",
        "2027-01-01",
        "--out",
        str(tmp_path / "n.jsonl.gz"),
        "--apply",
        "--vacuum",
    )
    assert out.code == 0, out.stderr
    vacuum = out.json["data"]["vacuum"]
    assert vacuum["applied"] is False and "lcm vacuum --full --apply" in vacuum["reason"]


# VmHWM, not ru_maxrss: Linux carries the parent's peak across exec into ru_maxrss, so
# a child of a big pytest process would report the parent's size.
FULL_VACUUM_RSS = r"""
import re, sys
from lcm_cli.cli import main
code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    print(re.search(r"VmHWM:\s+(\d+)", status.read()).group(1), file=sys.stderr)
sys.exit(code)
"""


def test_full_vacuum_memory_stays_bounded(db: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", FULL_VACUUM_RSS, "--db", str(db), "vacuum", "--full", "--apply"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    assert peak_kib < 256 * 1024, peak_kib


KILL_MID_VACUUM = r"""
import os, signal, sys, threading, time
path = sys.argv[2]
def watch():
    # Killed once VACUUM is writing: its rollback journal exists.
    while not os.path.exists(path + "-journal"):
        time.sleep(0.0005)
    time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGKILL)
threading.Thread(target=watch, daemon=True).start()
from lcm_cli.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_kill_during_the_full_vacuum_leaves_the_file_as_it_was(db: Path) -> None:
    original = everything(db)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_MID_VACUUM, "--db", str(db), "vacuum", "--full", "--apply"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # The next opener (lcm, or the host) rolls the hot journal back.
    assert _pragma(db, "integrity_check") == "ok"
    assert everything(db) == original
    again = lcm("--db", str(db), "vacuum", "--full", "--apply")
    assert again.code == 0, again.stderr
    # A journal the kill left before its header was written is not hot (nothing to roll
    # back); the next write clears it either way.
    assert not os.path.exists(str(db) + "-journal")
    assert everything(db) == original and _pragma(db, "auto_vacuum") == 2
