"""Index-building migrations run one index per transaction, so the live writer gets the lock
between builds, and a kill between two builds leaves a file the next open finishes."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lcm_cli.engine.db import schema
from lcm_cli.engine.db.store import Store
from tests.engine.db.scale_file import build_file, forget_lcm

_LCM_INDEXES = [name for name, _ in (*schema.READ_PATH_INDEXES, schema.SUMMARY_TOKENS_INDEX)]


def _indexes(path: Path) -> set[str]:
    conn = sqlite3.connect(str(path))
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        conn.close()


def test_each_index_is_its_own_transaction(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    build_file(path, conversations=4, messages=200, archived=1)
    forget_lcm(path)
    conn = sqlite3.connect(str(path), isolation_level=None)
    units: list[tuple[set[str], list[str]]] = []  # (indexes committed before, statements)

    def trace(sql: str) -> None:
        if sql.startswith("BEGIN"):
            units.append((_indexes(path), []))
        elif units:
            units[-1][1].append(sql)

    conn.set_trace_callback(trace)
    schema.migrate(conn)
    conn.close()
    for before, statements in units:
        created = {name for name in _LCM_INDEXES for sql in statements if f" {name} ON " in sql} - before
        assert len(created) <= 1, created  # never two index builds under one lock
    assert set(_LCM_INDEXES) <= _indexes(path)
    assert schema.pending_migrations(sqlite3.connect(str(path))) == []


KILL_BETWEEN_INDEXES = r"""
import os, signal, sys
from lcm_cli.engine.db import schema
original = schema._build_index
built = []
def build(conn, migration, name, target):
    if len(built) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    built.append(name)
    return original(conn, migration, name, target)
schema._build_index = build
from lcm_cli.engine.db.store import Store
Store.open(sys.argv[1]).close()
"""


def test_a_kill_between_index_builds_is_finished_by_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    build_file(path, conversations=4, messages=200, archived=1)
    forget_lcm(path)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_BETWEEN_INDEXES, str(path)], capture_output=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    present = _indexes(path) & set(_LCM_INDEXES)
    assert present == {name for name, _ in schema.READ_PATH_INDEXES[:2]}
    conn = sqlite3.connect(str(path))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert "m003_add_read_path_indexes" in schema.pending_migrations(conn)
    conn.close()
    Store.open(path).close()
    assert set(_LCM_INDEXES) <= _indexes(path)
    assert schema.pending_migrations(sqlite3.connect(str(path))) == []


def test_a_big_table_defers_its_index_to_the_named_doctor_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over DEFERRED_INDEX_ROWS the first open builds no index of that table (the live writer
    would wait for the whole build); doctor names them; only `--check storage.read-indexes`
    builds them."""
    from lcm_cli.engine import api

    path = tmp_path / "lcm.db"
    build_file(path, conversations=4, messages=200, archived=1)  # 800 messages, fewer summaries
    forget_lcm(path)
    monkeypatch.setattr(schema, "DEFERRED_INDEX_ROWS", 300)
    conn = sqlite3.connect(str(path), isolation_level=None)
    schema.migrate(conn)
    assert schema.pending_migrations(conn) == []  # recorded, so later migrations went on
    deferred = {name for name, _ in schema.deferred_indexes(conn)}
    conn.close()
    on_messages = {name for name, target in schema.READ_PATH_INDEXES if target.startswith("messages ")}
    assert on_messages <= deferred and not deferred & _indexes(path)

    scan = api.call("doctor.scan", {"check": ["storage.read-indexes"]}, db=str(path))["data"]
    finding = scan["checks"][0]
    assert finding["status"] == "INFO" and set(finding["affected"]) == deferred
    assert scan["healthy"] is True  # information: reads work without them
    bare = api.call("doctor.apply", {"apply": True, "no_backup": True}, db=str(path))["data"]
    assert "storage.read-indexes" not in bare["checks"] and not deferred & _indexes(path)
    named = api.call(
        "doctor.apply", {"check": ["storage.read-indexes"], "apply": True, "no_backup": True}, db=str(path)
    )["data"]
    assert named["applied"] is True and deferred <= _indexes(path)
    conn = sqlite3.connect(str(path))
    assert (
        schema.deferred_indexes(conn) == [] and conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    )
    conn.close()
