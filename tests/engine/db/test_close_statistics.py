"""`PRAGMA optimize` on a writer's close, bounded: no full ANALYZE of `messages` under the
write lock, statistics for every indexed table, and an unbounded ANALYZE's figures kept."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from lcm_cli.engine.db.store import Store
from lcm_cli.engine.db.store.base import ANALYSIS_LIMIT
from tests.engine.db.scale_file import build_file
from tests.engine.db.writer_probe import WriterProbe


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stats") / "lcm.db"
    build_file(path, conversations=8, messages=1500, archived=2)
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "lcm.db"
    path.write_bytes(template.read_bytes())
    return path


def _stats(path: Path) -> dict[tuple[str, str | None], str]:
    conn = sqlite3.connect(str(path))
    try:
        return {(t, i): s for t, i, s in conn.execute("SELECT tbl, idx, stat FROM sqlite_stat1")}
    finally:
        conn.close()


def _would_analyze(path: Path) -> list[str]:
    """What `PRAGMA optimize` would run on a fresh connection that has read `messages`."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = 1").fetchone()
        conn.execute("SELECT COUNT(*) FROM summaries WHERE conversation_id = 1").fetchone()
        return [row[0] for row in conn.execute("PRAGMA optimize(0x03)")]
    finally:
        conn.close()


def test_close_leaves_statistics_that_optimize_does_not_redo(db: Path) -> None:
    # Empty partial indexes (no row ever sets stable_event_key or transcript_entry_id)
    # get no sqlite_stat1 row from ANALYZE: plain `optimize` then analyzes `messages`
    # again at every close.
    with Store.open(db) as store:
        store.conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = 1").fetchone()
    stats = _stats(db)
    for table in ("messages", "summaries", "conversations", "summary_messages"):
        assert any(t == table for t, _ in stats), (table, stats)
    assert stats[("messages", "messages_stable_event_key_unique")] == "1 1 1"
    assert _would_analyze(db) == []
    with Store.open(db) as store:
        store.conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = 1").fetchone()
    assert _stats(db) == stats  # a second close writes nothing


def test_statistics_an_unbounded_analyze_wrote_are_kept(db: Path) -> None:
    conn = sqlite3.connect(str(db))
    conn.execute("ANALYZE")  # as lossless-claw's optimize does: exact figures
    conn.commit()
    conn.close()
    exact = {k: v for k, v in _stats(db).items() if k[0] == "messages"}
    with Store.open(db) as store:
        store.conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = 1").fetchone()
    after = {k: v for k, v in _stats(db).items() if k[0] == "messages"}
    pinned = {k: v for k, v in after.items() if k not in exact}
    assert {k: v for k, v in after.items() if k in exact} == exact
    assert set(pinned.values()) <= {"1 1 1"}


def test_close_costs_the_same_on_a_table_it_must_analyze(db: Path) -> None:
    conn = sqlite3.connect(str(db))
    conn.execute("DELETE FROM sqlite_stat1")  # nothing analyzed: the worst case for optimize
    conn.commit()
    conn.close()
    with WriterProbe(db) as probe:
        store = Store.open(db)
        store.conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = 1").fetchone()
        started = time.perf_counter()
        store.close()
        closing = time.perf_counter() - started
    assert closing < 0.5, closing
    assert probe.never_waited_long(), probe.summary()
    # Bounded figures: ANALYZE read about ANALYSIS_LIMIT rows of each index.
    first = int(_stats(db)[("messages", "messages_conv_seq_idx")].split()[1])
    assert first <= ANALYSIS_LIMIT + 1
