"""Surgery refuses a damaged summary graph: a cycle, a link into another conversation, a
link to a row that does not exist, a summary without sources. Nothing is written, the error
names the doctor check that shows the damage, and that check does find it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.engine.surgery.conftest import CONDENSED, LEAF_A, run, snapshot

Damage = Callable[[sqlite3.Connection], None]


def _cycle(conn: sqlite3.Connection) -> None:
    # The leaf becomes a consumer of the condensed summary above it.
    conn.execute(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, 0)",
        (LEAF_A, CONDENSED),
    )


def _foreign_message(conn: sqlite3.Connection) -> None:
    other = conn.execute("SELECT message_id FROM messages WHERE conversation_id = 3 LIMIT 1").fetchone()[0]
    conn.execute(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, 99)", (LEAF_A, other)
    )


def _missing_source(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, 'sum_gone', 9)",
        (CONDENSED,),
    )


def _leaf_without_messages(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM summary_messages WHERE summary_id = ?", (LEAF_A,))


DAMAGE: dict[str, tuple[Damage, str, str]] = {
    "cycle": (_cycle, "cycle", "dag.cycles"),
    "cross-conversation": (_foreign_message, "cross-conversation", "dag.cross-conversation"),
    "missing source": (_missing_source, "missing-source", "dag.missing-sources"),
    "no sources": (_leaf_without_messages, "no-sources", "dag.missing-sources"),
}
SURGERY = {
    "transplant": ("summaries", "transplant", "--from", "2", "--to", "3", "--apply"),
    "dissolve": ("summaries", "dissolve", CONDENSED, "--apply"),
    # Refused before any model is asked: no summarizer is configured here.
    "rewrite": ("summaries", "rewrite", "--summary-id", CONDENSED, "--apply"),
}


def _damage(db: Path, how: Damage) -> None:
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")  # damage the way old or foreign writers left it
        how(conn)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("surgery", sorted(SURGERY))
@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_graph_is_refused_and_nothing_is_written(example: Path, kind: str, surgery: str) -> None:
    how, reason, check = DAMAGE[kind]
    db = example / "lcm.db"
    _damage(db, how)
    before = snapshot(db)
    files = sorted(p.name for p in example.iterdir())
    done = run(example, *SURGERY[surgery])
    assert done.code == 5, (done.stdout, done.stderr)
    error = done.error
    assert error["code"] == "SUMMARY_GRAPH_DAMAGED"
    assert reason in {p["reason"] for p in error["details"]["problems"]}
    assert check in error["details"]["checks"] and "lcm doctor --check dag" in error["message"]
    assert snapshot(db) == before
    assert sorted(p.name for p in example.iterdir()) == files  # no backup, no change backup
    # The check the error names finds the damage.
    scan = run(example, "doctor", "--check", check, "--fail-on", "none")
    assert scan.json["data"]["checks"][0]["status"] == "FAIL", scan.stdout


def test_a_dry_run_refuses_too_and_a_sound_graph_still_copies(example: Path) -> None:
    db = example / "lcm.db"
    _damage(db, _cycle)
    dry = run(example, "summaries", "transplant", "--from", "2", "--to", "3")
    assert dry.code == 5 and dry.error["code"] == "SUMMARY_GRAPH_DAMAGED"
    conn = sqlite3.connect(db)
    conn.execute(
        "DELETE FROM summary_parents WHERE summary_id = ? AND parent_summary_id = ?", (LEAF_A, CONDENSED)
    )
    conn.commit()
    conn.close()
    done = run(example, "summaries", "transplant", "--from", "2", "--to", "3", "--apply")
    assert done.code == 0, done.stderr
    assert done.json["data"]["applied"] is True
