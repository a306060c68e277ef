"""Litestream beside lcm.db (engine/maintenance/replication.py, docs/replication.md).

The tests lay out Litestream 0.5's state as it writes it (measured with 0.5.17:
``.lcm.db-litestream/ltx/<level>/<min>-<max>.ltx`` beside the database, the same layout in
a ``file`` replica) and hold a real SQLite connection open in another process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lcm_cli.engine.core.exit_codes import FINDINGS_EXIT_STATUS
from lcm_cli.engine.maintenance.replication import find_config, lag, replication_state, state_dir
from tests.conftest import lcm


def _ltx(root: Path, level: int, low: int, high: int, mtime: float | None = None) -> Path:
    folder = root / "ltx" / str(level)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{low:016x}-{high:016x}.ltx"
    path.write_bytes(b"LTX1")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def _config(state: Path, db: Path, replica: str, *, url: bool = False) -> Path:
    where = f"url: file://{replica}" if url else f"type: file\n      path: {replica}"
    path = state / "litestream.yml"
    path.write_text(
        "# lcm's state dir\n"
        "dbs:\n"
        "  - path: /elsewhere/other.db\n"
        "    replica:\n"
        "      type: file\n"
        "      path: /elsewhere/replica\n"
        f"  - path: {db}\n"
        "    replica:\n"
        f"      {where}\n"
    )
    return path


def _holder(db: Path) -> subprocess.Popen[str]:
    """Another process with a read connection on ``db`` (as `litestream replicate` keeps one)."""
    code = (
        "import sqlite3, sys\n"
        f"c = sqlite3.connect({str(db)!r})\n"
        "c.execute('SELECT count(*) FROM sqlite_master').fetchone()\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_no_state_means_no_replicator(db_path: Path) -> None:
    assert state_dir(str(db_path)) == str(db_path.parent / ".lcm.db-litestream")
    assert replication_state(str(db_path)) is None
    entry = _check(db_path)
    assert entry["status"] == "SKIP"


def test_state_positions_and_lag(db_path: Path, tmp_path: Path) -> None:
    now = time.time()
    local = db_path.parent / ".lcm.db-litestream"
    _ltx(local, 0, 1, 1, now - 300)
    _ltx(local, 0, 2, 7, now - 200)
    replica = tmp_path / "replica"
    _ltx(replica, 0, 1, 5, now - 290)
    _ltx(replica, 9, 1, 1, now - 295)
    (local / "ltx" / "0" / "not-an-ltx.tmp").write_text("")
    os.utime(db_path, (now, now))
    _config(db_path.parent, db_path, str(replica))
    state = replication_state(str(db_path), env={})
    assert state is not None
    assert (state["localTxid"], state["localLtxFiles"], state["replicaTxid"]) == (7, 2, 5)
    assert state["configPath"] == str(db_path.parent / "litestream.yml") and state["replicaType"] == "file"
    figures = lag(str(db_path), state)
    assert figures["txidLag"] == 2
    assert 199 <= figures["secondsBehind"] <= 201 and 89 <= figures["replicaSecondsBehind"] <= 91
    entry = _check(db_path)
    assert entry["status"] == "WARN" and entry["count"] == 1
    assert entry["details"]["localTxid"] == 7 and entry["details"]["txidLag"] == 2


def test_config_by_url_and_environment(db_path: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "conf"
    elsewhere.mkdir()
    config = _config(elsewhere, db_path, "${REPLICAS}/lcm", url=True)
    found = find_config(str(db_path), {"LITESTREAM_CONFIG": str(config), "REPLICAS": str(tmp_path)})
    assert found == (str(config), {"url": f"file://{tmp_path}/lcm", "type": "file"})
    assert find_config(str(db_path), {}) is None  # not beside lcm.db, not named by the variable


def test_restore_and_full_vacuum_refuse_while_replicated_file_is_open(db_path: Path, tmp_path: Path) -> None:
    made = lcm("--db", str(db_path), "backup", "--out", str(tmp_path / "b.db"))
    assert made.code == 0, made.stderr
    _ltx(db_path.parent / ".lcm.db-litestream", 0, 1, 3)
    holder = _holder(db_path)
    try:
        for args in (
            ("backup", "restore", str(tmp_path / "b.db"), "--apply"),
            ("backup", "restore", str(tmp_path / "b.db"), "--apply", "--force"),
            ("vacuum", "--full", "--apply"),
        ):
            out = lcm("--db", str(db_path), *args)
            assert out.code == 5, (args, out.stderr)
            error = out.error
            assert error["code"] == "REPLICATION_ACTIVE"
            assert error["details"]["holderPid"] == holder.pid and error["details"]["localTxid"] == 3
            assert "stop the agent host and `litestream replicate`" in error["message"]
            assert "TXID 0000000000000003" in error["message"]
    finally:
        holder.communicate("")
    dry = lcm("--db", str(db_path), "backup", "restore", str(tmp_path / "b.db"))
    assert dry.json["data"]["replication"]["localTxid"] == 3
    # Stopped (nothing holds the file): the restore runs; Litestream picks it up when it starts.
    done = lcm("--db", str(db_path), "backup", "restore", str(tmp_path / "b.db"), "--apply")
    assert done.code == 0, done.stderr


def _check(db: Path) -> dict[str, Any]:
    out = lcm("--db", str(db), "doctor", "--check", "storage.replication")
    assert out.code in (0, FINDINGS_EXIT_STATUS), out.stderr
    return {c["check"]: c for c in out.json["data"]["checks"]}["storage.replication"]
