"""`lcm summaries dissolve`: one condensation undone, its sources back in the context in
order, the summary kept as history or purged, the database healthy."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

from lcm_cli.engine.db.store import Store
from tests.engine.surgery.conftest import (
    CONDENSED,
    LEAF_A,
    LEAF_B,
    assert_healthy,
    kill_midway,
    run,
    snapshot,
)


def _context(db: Path, conversation_id: int) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT ordinal, message_id, summary_id FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
            (conversation_id,),
        ).fetchall()
    finally:
        conn.close()


def test_dry_run_shows_the_new_context_and_writes_nothing(example: Path) -> None:
    before = snapshot(example / "lcm.db")
    done = run(example, "summaries", "dissolve", CONDENSED)
    assert done.code == 0, done.stderr
    data = done.json["data"]
    assert data["applied"] is False and data["ordinal"] == 0
    assert [r["summaryId"] for r in data["restored"]] == [LEAF_A, LEAF_B]
    assert data["contextTokenDelta"] == 79 + 64 - 35
    assert data["contextItemsAfter"] == data["contextItemsBefore"] + 1
    assert [c["summaryId"] for c in data["context"][:3]] == [LEAF_A, LEAF_B, None]
    assert [c["ordinal"] for c in data["context"]] == list(range(len(data["context"])))
    assert snapshot(example / "lcm.db") == before


def test_apply_keeps_the_summary_as_orphaned_history(example: Path) -> None:
    db = example / "lcm.db"
    messages = [m for _, m, _ in _context(db, 2) if m is not None]
    done = run(example, "summaries", "dissolve", CONDENSED, "--apply")
    assert done.code == 0, done.stderr
    assert Path(done.json["data"]["backupPath"]).exists()
    assert _context(db, 2) == [(0, None, LEAF_A), (1, None, LEAF_B)] + [
        (i + 2, m, None) for i, m in enumerate(messages)
    ]
    shown = run(example, "summaries", "show", CONDENSED)
    assert shown.code == 0 and len(shown.json["data"]["children"]) == 2
    assert_healthy(example, 2)
    again = run(example, "summaries", "dissolve", CONDENSED)
    assert again.code == 3 and again.error["code"] == "SUMMARY_NOT_IN_CONTEXT"


def test_purge_deletes_the_summary_and_its_search_rows(example: Path) -> None:
    db = example / "lcm.db"
    done = run(example, "summaries", "dissolve", CONDENSED, "--purge", "--apply")
    assert done.code == 0, done.stderr
    conn = sqlite3.connect(db)
    for table in ("summaries", "summaries_fts", "summary_parents"):
        assert conn.execute(
            f"SELECT COUNT(*) FROM {table} WHERE summary_id = ?", (CONDENSED,)
        ).fetchone() == (0,)
    conn.close()
    assert run(example, "summaries", "show", CONDENSED).error["code"] == "SUMMARY_NOT_FOUND"
    assert_healthy(example, 2)


def test_refusals_have_stable_codes(example: Path) -> None:
    leaf = run(example, "summaries", "dissolve", LEAF_A)
    assert leaf.code == 2 and leaf.error["code"] == "SUMMARY_NOT_CONDENSED"
    assert run(example, "summaries", "dissolve", "sum_nope").error["code"] == "SUMMARY_NOT_FOUND"


def _middle(db: Path) -> dict[str, Any]:
    """A conversation whose condensed summary sits between raw messages in the context."""
    with Store.open(db) as store:
        cid = store.create_conversation("sess-middle", session_key="agent:main:middle")
        ids = store.add_messages(
            cid,
            [
                {
                    "role": ("user", "assistant")[i % 2],
                    "content": f"middle message {i}",
                    "created_at": f"2026-07-01 09:0{i}:00",
                }
                for i in range(8)
            ],
        )
        leaves = [
            store.add_leaf_summary(cid, ids[a:b], f"leaf over {a}..{b - 1}") for a, b in ((1, 3), (3, 5))
        ]
        for leaf in leaves:
            store.replace_context_with_summary(cid, leaf)
        top = store.add_condensed_summary(cid, leaves, "condensed over 1..4")
        store.replace_context_with_summary(cid, top)
    return {"cid": cid, "messages": ids, "leaves": leaves, "top": top}


def test_dissolve_in_the_middle_renumbers_in_order(example: Path) -> None:
    db = example / "lcm.db"
    made = _middle(db)
    ids, (first, second) = made["messages"], made["leaves"]
    assert _context(db, made["cid"]) == [(0, ids[0], None), (1, None, made["top"])] + [
        (i + 2, m, None) for i, m in enumerate(ids[5:])
    ]
    done = run(example, "summaries", "dissolve", made["top"], "--apply")
    assert done.code == 0, done.stderr
    assert done.json["data"]["itemsShifted"] == 3
    assert _context(db, made["cid"]) == [(0, ids[0], None), (1, None, first), (2, None, second)] + [
        (i + 3, m, None) for i, m in enumerate(ids[5:])
    ]
    assert_healthy(example, made["cid"])


def test_dissolve_killed_mid_apply_leaves_the_old_or_the_new_context(example: Path) -> None:
    db = example / "lcm.db"
    old = _context(db, 2)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(example.parent)}
    rng = random.Random(3)
    for _ in range(8):
        kill_midway(example, ["summaries", "dissolve", CONDENSED, "--purge", "--apply"], env, rng, 0.5)
        now = _context(db, 2)
        kept = any(r[0] == CONDENSED for r in snapshot(db)["summaries"])
        if now == old:
            assert kept  # nothing of the purge was written
        else:
            assert [s for _, _, s in now[:2]] == [LEAF_A, LEAF_B] and len(now) == len(old) + 1
            assert not kept
        assert_healthy(example, 2)
        if now != old:
            break
