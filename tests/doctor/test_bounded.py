"""`lcm doctor` in bounded memory and time: structural checks, not timings.

The full-text comparison streams both sides (memory flat in the number of summaries), the
cycle search loads nothing on a sound DAG, and `storage.quick-check` reads the whole file
only with ``--thorough`` (or when the file is small).
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.doctor import dag, fts, storage
from lcm_cli.engine.db.connection import open_read_only
from lcm_cli.engine.db.probe import SchemaProbe
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.maintenance.findings import ScanInput, Scope
from tests.conftest import lcm

CONTENT_CHARS = 4_000


@pytest.fixture(scope="module")
def wordy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,200 leaf summaries of 4,000 characters each (about 5 MB of summary text)."""
    db = tmp_path_factory.mktemp("doctor-wordy") / "lcm.db"
    with Store.open(db) as store:
        cid = store.create_conversation("s-wordy", session_key="agent:main:main")
        ids = store.add_messages(cid, [{"role": "user", "content": f"m{i}"} for i in range(1_200)])
        with store.transaction():
            for i, message_id in enumerate(ids):
                text = f"summary {i} " + "lorem ipsum dolor " * (CONTENT_CHARS // 18)
                store.add_leaf_summary(cid, [message_id], text[:CONTENT_CHARS])
    return db


def scan_input(db: Path) -> tuple[ScanInput, sqlite3.Connection]:
    conn = open_read_only(str(db))
    return ScanInput(conn, SchemaProbe(conn), Scope(), str(db), [], 0), conn


def test_summary_fts_comparison_memory_does_not_hold_the_text(wordy: Path) -> None:
    """Peak Python memory of the summary FTS check stays far below the text it compares."""
    source, conn = scan_input(wordy)
    try:
        tracemalloc.start()
        try:
            for table in fts.SUMMARY_FTS:
                assert fts.summary_fts_problems(source, table) == {}
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        conn.close()
    text = 1_200 * CONTENT_CHARS
    assert peak < text / 10, (peak, text)  # the whole text was held twice before


def test_the_whole_scan_stays_in_bounded_memory(wordy: Path) -> None:
    assert lcm("--db", str(wordy), "doctor", "--fail-on", "none").code == 0  # modules imported
    tracemalloc.start()
    try:
        out = lcm("--db", str(wordy), "doctor", "--fail-on", "none")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.code == 0, out.stderr
    assert peak < 1_200 * CONTENT_CHARS / 4, peak


def test_summary_fts_findings_by_merge(wordy: Path, tmp_path: Path) -> None:
    """Missing, stale, duplicated (first row compared) and changed rows, in both tables."""
    db = tmp_path / "broken.db"
    db.write_bytes(wordy.read_bytes())
    conn = sqlite3.connect(db)
    ids = [r[0] for r in conn.execute("SELECT summary_id FROM summaries ORDER BY summary_id LIMIT 4")]
    for table in fts.SUMMARY_FTS:
        conn.execute(f"DELETE FROM {table} WHERE summary_id = ?", (ids[0],))
        conn.execute(f"UPDATE {table} SET content = 'other' WHERE summary_id = ?", (ids[1],))
        conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES (?, 'again')", (ids[2],))
        conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES ('sum_gone', 'x')")
        conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES ('sum_gone2', 'x')")
        conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES ('sum_gone2', 'y')")
    conn.commit()
    conn.close()
    source, conn = scan_input(db)
    try:
        for table in fts.SUMMARY_FTS:
            assert fts.summary_fts_problems(source, table) == {
                ids[0]: "missing",
                ids[1]: "content-differs",
                ids[2]: "duplicate",
                "sum_gone": "stale",
                "sum_gone2": "duplicate",
            }
        narrowed = ScanInput(conn, source.probe, Scope([1]), str(db), [], 0)
        assert fts.summary_fts_problems(narrowed, "summaries_fts") == {
            ids[0]: "missing",
            ids[1]: "content-differs",
            ids[2]: "duplicate",
        }
    finally:
        conn.close()


def test_a_sound_dag_loads_no_edges_for_the_cycle_search(
    wordy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any) -> Any:
        raise AssertionError("the graph was loaded although no link can close a cycle")

    monkeypatch.setattr(dag, "_reachable_edges", refuse)
    source, conn = scan_input(wordy)
    try:
        assert dag.check_cycles(source).affected == []
    finally:
        conn.close()


def test_quick_check_is_bounded_on_a_big_file_and_whole_with_thorough(
    wordy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def quick(*extra: str) -> dict[str, Any]:
        out = lcm("--db", str(wordy), "doctor", "--check", "storage.quick-check", *extra)
        assert out.code == 0, out.stderr
        entry: dict[str, Any] = out.json["data"]["checks"][0]
        return entry

    small = quick()
    assert small["status"] == "PASS" and "details" not in small  # a small file: the whole-file check
    monkeypatch.setattr(storage, "WHOLE_FILE_CHECK_BYTES", 0)  # every file is "big" now
    bounded = quick()
    assert bounded["status"] == "PASS" and bounded["details"]["bounded"] is True
    assert bounded["details"]["uncheckedTables"] == [] and bounded["details"]["checkedTables"] > 10
    assert bounded["details"]["fullCheck"].endswith("--thorough")
    monkeypatch.setattr(storage, "QUICK_CHECK_BUDGET_MS", 0)
    spent = quick()
    assert spent["status"] == "PASS" and spent["details"]["checkedTables"] == 0
    assert spent["details"]["uncheckedTables"][-1] == "messages"  # the bulk goes last
    thorough = quick("--thorough")
    assert thorough["status"] == "PASS" and "details" not in thorough


def test_bounded_quick_check_interrupts_a_table_at_the_deadline(wordy: Path) -> None:
    """One table's check is a single SQLite step: the timer interrupts it, the connection
    stays usable, and the table is reported unchecked."""
    source, conn = scan_input(wordy)
    try:
        outcome = storage._bounded_quick_check(source, 1)
        assert outcome.affected == [] and "summaries" in outcome.details["uncheckedTables"]
        assert conn.execute("SELECT count(*) FROM summaries").fetchone()[0] == 1_200
    finally:
        conn.close()
