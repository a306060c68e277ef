"""Trigger-maintained totals: raw SQL writes as another program makes them, then a recount."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.engine.db import schema, totals
from lcm_cli.engine.db.store import Store


def _new_db(path: Path) -> sqlite3.Connection:
    Store.open(path).close()
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")  # as lossless-claw's writers set it
    return conn


def _recount(conn: sqlite3.Connection) -> tuple[set[Any], set[Any]]:
    messages = set(
        conn.execute(
            """SELECT conversation_id, COUNT(*), COALESCE(SUM(token_count), 0), MIN(created_at), MAX(created_at)
               FROM messages GROUP BY conversation_id"""
        )
    )
    summaries = set(
        conn.execute(
            """SELECT conversation_id, kind, depth, COUNT(*), COALESCE(SUM(token_count), 0),
                      COALESCE(SUM(source_message_token_count), 0),
                      MIN(COALESCE(earliest_at, created_at)), MAX(COALESCE(latest_at, created_at))
               FROM summaries GROUP BY conversation_id, kind, depth"""
        )
    )
    return messages, summaries


def _kept(conn: sqlite3.Connection) -> tuple[set[Any], set[Any]]:
    # Rows whose count fell to zero stay with zero figures; the recount has no row.
    messages = set(
        conn.execute(
            """SELECT conversation_id, message_count, message_tokens, earliest_at, latest_at
               FROM lcm_conversation_totals WHERE message_count > 0"""
        )
    )
    summaries = set(
        conn.execute(
            """SELECT conversation_id, kind, depth, summary_count, summary_tokens, source_tokens,
                      earliest_at, latest_at FROM lcm_summary_totals WHERE summary_count > 0"""
        )
    )
    return messages, summaries


def _assert_true(conn: sqlite3.Connection) -> None:
    assert _kept(conn) == _recount(conn)
    zeros = conn.execute(
        """SELECT COUNT(*) FROM lcm_conversation_totals
           WHERE message_count = 0 AND (message_tokens <> 0 OR earliest_at IS NOT NULL OR latest_at IS NOT NULL)"""
    ).fetchone()[0]
    assert zeros == 0
    assert totals.staleness(conn) is None


def _conversation(conn: sqlite3.Connection, session: str) -> int:
    cur = conn.execute("INSERT INTO conversations (session_id) VALUES (?)", (session,))
    assert cur.lastrowid is not None
    return cur.lastrowid


def _message(conn: sqlite3.Connection, cid: int, seq: int, tokens: int, at: str) -> int:
    cur = conn.execute(
        "INSERT INTO messages (conversation_id, seq, role, content, token_count, created_at)"
        " VALUES (?, ?, 'user', 'x', ?, ?)",
        (cid, seq, tokens, at),
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def _summary(conn: sqlite3.Connection, sid: str, cid: int, depth: int, tokens: int, at: str | None) -> None:
    conn.execute(
        """INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count,
                                  earliest_at, latest_at, source_message_token_count, created_at)
           VALUES (?, ?, ?, ?, 's', ?, ?, ?, ?, '2026-01-01 00:00:00')""",
        (sid, cid, "leaf" if depth == 0 else "condensed", depth, tokens, at, at, tokens * 3),
    )


def test_raw_sql_writes_keep_totals_true(tmp_path: Path) -> None:
    conn = _new_db(tmp_path / "lcm.db")
    a, b = _conversation(conn, "a"), _conversation(conn, "b")
    ids = [_message(conn, a, i, i * 10, f"2026-01-0{i} 10:00:00") for i in range(1, 8)]
    _message(conn, b, 1, 5, "2026-02-01 00:00:00")
    _message(conn, b, 2, 5, "2026-02-01 00:00:00")  # a tie on the latest value
    _summary(conn, "s1", a, 0, 100, "2026-01-01T10:00:00.000Z")
    _summary(conn, "s2", a, 0, 50, None)  # falls back to created_at
    _summary(conn, "s3", a, 1, 70, "2026-01-03T10:00:00.000Z")
    _assert_true(conn)
    # Delete the earliest and the latest message: both ends are recomputed.
    conn.execute("DELETE FROM messages WHERE message_id IN (?, ?)", (ids[0], ids[-1]))
    _assert_true(conn)
    # Move created_at, tokens and the owner of rows.
    conn.execute("UPDATE messages SET created_at = '2025-12-31 00:00:00' WHERE message_id = ?", (ids[3],))
    conn.execute("UPDATE messages SET token_count = token_count + 7 WHERE conversation_id = ?", (a,))
    conn.execute("UPDATE messages SET conversation_id = ?, seq = 99 WHERE message_id = ?", (b, ids[2]))
    conn.execute("UPDATE messages SET created_at = '2024-01-01 00:00:00' WHERE message_id = ?", (ids[3],))
    _assert_true(conn)
    # One of two tied latest values goes: the latest stays.
    conn.execute("DELETE FROM messages WHERE conversation_id = ? AND seq = 2", (b,))
    _assert_true(conn)
    # Summaries: change depth, drop the earliest, rewrite content/tokens as doctor repair does.
    conn.execute("UPDATE summaries SET depth = 2, kind = 'condensed' WHERE summary_id = 's3'")
    conn.execute("UPDATE summaries SET token_count = 1 WHERE summary_id = 's2'")
    conn.execute("DELETE FROM summaries WHERE summary_id = 's1'")
    _assert_true(conn)
    # All of a conversation's messages, then a whole conversation by cascade.
    conn.execute("DELETE FROM messages WHERE conversation_id = ?", (a,))
    _assert_true(conn)
    conn.execute("DELETE FROM conversations WHERE conversation_id = ?", (b,))
    _assert_true(conn)
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0


def test_dropped_triggers_are_detected_and_rebuilt_by_the_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    conn = _new_db(path)
    cid = _conversation(conn, "a")
    _message(conn, cid, 1, 3, "2026-01-01 00:00:00")
    assert totals.staleness(conn) is None
    conn.execute("DROP TRIGGER lcm_totals_messages_ai")  # as a table rebuild would
    _message(conn, cid, 2, 4, "2026-01-02 00:00:00")
    assert "lcm_totals_messages_ai" in (totals.staleness(conn) or "")
    store = Store.open(path)
    assert store.totals_rebuilt is not None
    store.close()
    _assert_true(conn)
    again = Store.open(path)
    assert again.totals_rebuilt is None
    again.close()


def test_rows_written_without_triggers_are_detected_by_the_stamp(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    conn = _new_db(path)
    cid = _conversation(conn, "a")
    for name in totals.TRIGGERS:
        conn.execute(f"DROP TRIGGER {name}")
    _message(conn, cid, 1, 3, "2026-01-01 00:00:00")
    # Someone puts triggers back without recounting: the stamp still tells.
    conn.execute("BEGIN")
    for name, body in totals.TRIGGERS.items():
        conn.execute(f"CREATE TRIGGER {name} {body}")
    conn.execute("COMMIT")
    assert totals.staleness(conn) == "messages were written that the totals never counted"
    assert Store.open(path).totals_rebuilt is not None
    _assert_true(conn)


def test_migration_counts_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    conn = _new_db(path)
    cid = _conversation(conn, "a")
    _message(conn, cid, 1, 3, "2026-01-01 00:00:00")
    # Forget the migration as if the file predated it.
    conn.execute("DROP TABLE lcm_conversation_totals")
    conn.execute("DROP TABLE lcm_summary_totals")
    conn.execute("DELETE FROM lcm_migration_state WHERE step_name LIKE '%m005%'")
    assert schema.pending_migrations(conn) == ["m005_add_trigger_maintained_totals"]
    assert totals.staleness(conn) is not None
    Store.open(path).close()
    _assert_true(conn)


_TIMES = st.sampled_from([f"2026-01-0{d} 0{h}:00:00" for d in range(1, 4) for h in range(3)])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(0, 2), st.integers(0, 50), _TIMES),
        st.tuples(st.just("delete"), st.integers(0, 30)),
        st.tuples(st.just("move"), st.integers(0, 30), st.integers(0, 2), _TIMES),
        st.tuples(st.just("summary"), st.integers(0, 2), st.integers(0, 2), st.integers(0, 9), _TIMES),
        st.tuples(st.just("unsummary"), st.integers(0, 30)),
        st.tuples(st.just("redepth"), st.integers(0, 30), st.integers(0, 2)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_any_sequence_of_raw_writes_matches_a_recount(tmp_path_factory: Any, ops: list[Any]) -> None:
    conn = _new_db(tmp_path_factory.mktemp("prop") / "lcm.db")
    cids = [_conversation(conn, str(i)) for i in range(3)]
    seq = 0
    for op in ops:
        seq += 1
        kind = op[0]
        if kind == "insert":
            _message(conn, cids[op[1]], seq, op[2], op[3])
        elif kind == "delete":
            conn.execute(
                "DELETE FROM messages WHERE message_id = (SELECT message_id FROM messages"
                " ORDER BY message_id LIMIT 1 OFFSET ?)",
                (op[1],),
            )
        elif kind == "move":
            conn.execute(
                "UPDATE messages SET conversation_id = ?, seq = ?, created_at = ? WHERE message_id ="
                " (SELECT message_id FROM messages ORDER BY message_id LIMIT 1 OFFSET ?)",
                (cids[op[2]], 10_000 + seq, op[3], op[1]),
            )
        elif kind == "summary":
            _summary(conn, f"s{seq}", cids[op[1]], op[2], op[3], op[4].replace(" ", "T") + ".000Z")
        elif kind == "unsummary":
            conn.execute(
                "DELETE FROM summaries WHERE summary_id = (SELECT summary_id FROM summaries"
                " ORDER BY summary_id LIMIT 1 OFFSET ?)",
                (op[1],),
            )
        else:
            conn.execute(
                "UPDATE summaries SET depth = ? WHERE summary_id = (SELECT summary_id FROM summaries"
                " ORDER BY summary_id LIMIT 1 OFFSET ?)",
                (op[2], op[1]),
            )
    _assert_true(conn)
    conn.close()


_READS = [
    ("status", {}),
    ("conversations.list", {}),
    ("conversations.show", {"conversation_id": 1}),
    ("messages.tail", {"conversation_id": 1}),
]


def _figures(body: dict[str, Any]) -> Any:
    data = body["data"]
    return {k: v for k, v in data.items() if k != "databaseSizeBytes"} if isinstance(data, dict) else data


def test_reads_give_the_same_figures_from_totals_and_from_a_scan(state_dir: Path) -> None:
    from lcm_cli.engine import api

    db = str(state_dir / "lcm.db")
    fresh = [api.call(name, params, openclaw_dir=str(state_dir)) for name, params in _READS]
    assert all("totals" not in body["meta"] for body in fresh)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER lcm_totals_summaries_ad")  # as a table rebuild would
    conn.close()
    scanned = [api.call(name, params, openclaw_dir=str(state_dir)) for name, params in _READS]
    for before, after in zip(fresh, scanned, strict=True):
        assert after["data"] == before["data"]
        assert after["meta"]["totals"]["source"] == "scan"
        assert "lcm_totals_summaries_ad" in after["meta"]["totals"]["reason"]
    # The next writer rebuilds them and says so.
    assert Store.open(db).totals_rebuilt is not None
    again = [api.call(name, params, openclaw_dir=str(state_dir)) for name, params in _READS]
    # The file's size follows when the WAL was last checkpointed, not the totals.
    assert [_figures(body) for body in again] == [_figures(body) for body in fresh]
    assert all("totals" not in body["meta"] for body in again)
