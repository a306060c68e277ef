"""The totals counted in bounded steps: exact, resumable after a kill, and the live writer
(another process committing every few ms) never waits long while they are counted."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.engine.db import schema, totals
from lcm_cli.engine.db.store import Store
from tests.engine.db.scale_file import build_file, forget_lcm, recount
from tests.engine.db.writer_probe import WriterProbe

# The rule is 100 ms; a loaded CI machine gets some slack on top of one step.


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A modest file without lcm's additions (built by our writer, then ``forget_lcm``):
    14,400 messages, 720 summaries, no lcm totals."""
    path = tmp_path_factory.mktemp("scale") / "lcm.db"
    build_file(path)
    forget_lcm(path)
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "lcm.db"
    path.write_bytes(template.read_bytes())
    return path


def _writer(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _start_build(path: Path) -> sqlite3.Connection:
    """Migrate (which starts the build on a file this size) and return a writer connection."""
    conn = _writer(path)
    schema.migrate(conn)
    assert totals.build_progress(conn) is not None
    return conn


def _step(conn: sqlite3.Connection, rows: int) -> str | None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        upcoming = totals._advance(conn, rows)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return upcoming


def test_a_stepped_build_equals_a_recount(db: Path) -> None:
    conn = _start_build(db)
    seen: list[dict[str, Any]] = []
    reason = totals.ensure_fresh(conn, on_step=seen.append)
    assert reason == "the totals were installed"
    assert len(seen) > 5, seen  # many steps, not one transaction
    scanned, kept = recount(conn)
    assert kept == scanned
    assert totals.staleness(conn) is None and totals.build_progress(conn) is None
    names = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall())
    assert {n: names[n] for n in totals.TRIGGERS} == {
        n: f"CREATE TRIGGER {n} {b}" for n, b in totals.TRIGGERS.items()
    }


def test_readers_see_the_totals_stale_until_the_build_completes(db: Path) -> None:
    conn = _start_build(db)
    _step(conn, 500)
    assert "counted in steps" in (totals.staleness(conn) or "")
    from lcm_cli.engine import api

    during = api.call("status", {}, db=str(db))
    assert during["meta"]["totals"]["source"] == "scan"
    totals.ensure_fresh(conn)
    after = api.call("status", {}, db=str(db))
    assert "totals" not in after["meta"]
    assert after["data"] == during["data"]


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("step"), st.sampled_from([1, 7, 300, 5000])),
        st.tuples(st.just("insert"), st.integers(1, 24), st.integers(0, 90)),
        st.tuples(st.just("delete"), st.integers(0, 14_000)),
        st.tuples(st.just("move"), st.integers(0, 14_000), st.integers(1, 24), st.integers(0, 90)),
        st.tuples(st.just("summary"), st.integers(1, 24), st.integers(0, 3)),
        st.tuples(st.just("unsummary"), st.integers(0, 700)),
        st.tuples(st.just("retime"), st.integers(0, 700), st.integers(0, 90)),
    ),
    min_size=5,
    max_size=40,
)


def _day(n: int) -> str:
    return f"2025-{1 + n % 12:02d}-{1 + n % 28:02d} 0{n % 10}:00:00"


@pytest.mark.slow  # a writer process between every step
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_writes_between_steps_are_counted_exactly_once(
    template: Path, tmp_path_factory: Any, ops: list[Any]
) -> None:
    path = tmp_path_factory.mktemp("steps") / "lcm.db"
    path.write_bytes(template.read_bytes())
    builder = _start_build(path)
    other = _writer(path)  # another program's raw writes: they fire the triggers of the moment
    seq = 100_000
    for op in ops:
        seq += 1
        kind = op[0]
        if kind == "step":
            _step(builder, op[1])
        elif kind == "insert":
            other.execute(
                "INSERT INTO messages (conversation_id, seq, role, content, token_count, created_at)"
                " VALUES (?, ?, 'user', 'x', ?, ?)",
                (op[1], seq, op[2], _day(op[2])),
            )
        elif kind == "delete":
            other.execute(
                "DELETE FROM messages WHERE message_id = (SELECT message_id FROM messages ORDER BY message_id"
                " LIMIT 1 OFFSET ?) AND NOT EXISTS (SELECT 1 FROM summary_messages sm"
                " WHERE sm.message_id = messages.message_id)",
                (op[1],),
            )
        elif kind == "move":
            other.execute(
                "UPDATE messages SET conversation_id = ?, seq = ?, created_at = ?, token_count = ? WHERE message_id ="
                " (SELECT message_id FROM messages ORDER BY message_id LIMIT 1 OFFSET ?)",
                (op[2], seq, _day(op[3]), op[3], op[1]),
            )
        elif kind == "summary":
            other.execute(
                """INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count,
                                          earliest_at, latest_at, source_message_token_count)
                   VALUES (?, ?, ?, ?, 's', 5, ?, ?, 9)""",
                (
                    f"sum_{seq:x}",
                    op[1],
                    "leaf" if op[2] == 0 else "condensed",
                    op[2],
                    _day(seq),
                    _day(seq + 1),
                ),
            )
        elif kind == "unsummary":
            other.execute(
                "DELETE FROM summaries WHERE summary_id = (SELECT summary_id FROM summaries ORDER BY summary_id"
                " LIMIT 1 OFFSET ?)",
                (op[1],),
            )
        else:
            other.execute(
                "UPDATE summaries SET latest_at = ?, depth = depth + 1, kind = 'condensed' WHERE summary_id ="
                " (SELECT summary_id FROM summaries ORDER BY summary_id LIMIT 1 OFFSET ?)",
                (_day(op[2]), op[1]),
            )
    totals.ensure_fresh(builder)
    scanned, kept = recount(builder)
    assert kept == scanned
    assert totals.staleness(builder) is None
    builder.close()
    other.close()


def test_the_live_writer_never_waits_long_while_a_file_is_adopted(db: Path) -> None:
    # The probe inserts messages into conversation 13 the whole time, triggers firing,
    # while lcm's first writer open builds indexes and counts the totals in steps.
    with WriterProbe(db, mode="messages", conversation=13) as probe:
        store = Store.open(db)
        assert store.totals_rebuilt == "the totals were installed"
        store.close()
    assert not probe.errors, probe.summary()
    assert probe.never_waited_long(), probe.summary()
    conn = sqlite3.connect(str(db))
    scanned, kept = recount(conn)
    assert kept == scanned  # every probe message counted once
    found = conn.execute(
        f"SELECT COUNT(*) FROM messages WHERE message_id IN ({','.join(map(str, probe.ids))})"
    ).fetchone()[0]
    assert found == len(probe.ids) > 0
    conn.close()


KILL_MID_BUILD = r"""
import os, signal, sys
from lcm_cli.engine.db import steps
taken = []
def counted(held):
    taken.append(held)
    if len(taken) == 4:
        print("killing", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
steps.yield_to_writers = counted
import lcm_cli.engine.db.totals as totals
totals.FIRST_STEP_ROWS = 200
from lcm_cli.engine.db.store import Store
Store.open(sys.argv[1]).close()
"""


def test_a_kill_between_build_steps_leaves_a_build_the_next_writer_finishes(db: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", KILL_MID_BUILD, str(db)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    conn = sqlite3.connect(str(db), isolation_level=None)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    progress = totals.build_progress(conn)
    assert progress is not None and progress["messagesCursor"] > 0 and not progress["messagesDone"]
    assert "counted in steps" in (totals.staleness(conn) or "")
    # Another program writes meanwhile (the build triggers count what they cover).
    conn.execute(
        "INSERT INTO messages (conversation_id, seq, role, content, token_count) VALUES (1, 99999, 'user', 'late', 7)"
    )
    conn.execute("DELETE FROM messages WHERE message_id = (SELECT MAX(message_id) - 5 FROM messages)")
    store = Store.open(db)
    assert store.totals_rebuilt == "the totals were installed"  # why the killed build started
    store.close()
    scanned, kept = recount(conn)
    assert kept == scanned and totals.staleness(conn) is None
    assert os.path.exists(db)
    conn.close()
