"""`lcm summaries transplant`: a deep copy with new ids, its messages' identity, the roots
first in the target's context, a content-hash guard, one transaction."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.engine.surgery.conftest import CONDENSED, LEAF_A, assert_healthy, kill_midway, run, snapshot


def test_dry_run_plans_the_copy_and_writes_nothing(example: Path) -> None:
    before = snapshot(example / "lcm.db")
    done = run(example, "summaries", "transplant", "--from", "2", "--to", "3")
    assert done.code == 0, done.stderr
    data = done.json["data"]
    assert (data["from"], data["to"], data["applied"]) == (2, 3, False)
    assert [(s["summaryId"], s["inContext"], s["newSummaryId"]) for s in data["summaries"]] == [
        ("sum_0a1b2c3d4e5f6071", False, None),
        ("sum_1b2c3d4e5f607182", False, None),
        (CONDENSED, True, None),
    ]
    assert data["contextItemsAdded"] == 1 and data["messageCount"] == 16
    assert snapshot(example / "lcm.db") == before


def test_apply_deep_copies_the_dag_with_its_messages(example: Path) -> None:
    db = example / "lcm.db"
    conn = sqlite3.connect(db)
    target_context = conn.execute(
        "SELECT message_id FROM context_items WHERE conversation_id = 3 ORDER BY ordinal"
    ).fetchall()
    target_seq = conn.execute("SELECT MAX(seq) FROM messages WHERE conversation_id = 3").fetchone()[0]
    source_messages = conn.execute(
        """SELECT m.role, m.content, m.identity_hash, m.created_at, m.token_count FROM summary_messages sm
           JOIN messages m ON m.message_id = sm.message_id ORDER BY m.seq"""
    ).fetchall()
    conn.close()
    done = run(example, "summaries", "transplant", "--from", "2", "--to", "3", "--apply")
    assert done.code == 0, done.stderr
    data = done.json["data"]
    assert data["applied"] is True and Path(data["backupPath"]).exists()
    new_ids = {s["summaryId"]: s["newSummaryId"] for s in data["summaries"]}
    assert all(n.startswith("sum_") and len(n) == 20 and n != o for o, n in new_ids.items())
    conn = sqlite3.connect(db)
    # The copied root goes first; the target's own items follow, renumbered 0..N-1.
    context = conn.execute(
        "SELECT ordinal, summary_id, message_id FROM context_items WHERE conversation_id = 3 ORDER BY ordinal"
    ).fetchall()
    assert context[0] == (0, new_ids[CONDENSED], None)
    assert [m for _, _, m in context[1:]] == [m for (m,) in target_context]
    assert [o for o, _, _ in context] == list(range(len(context)))
    # Links are rewired to the copies, in the same order; nothing points across conversations.
    children = conn.execute(
        "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal",
        (new_ids[CONDENSED],),
    ).fetchall()
    assert children == [(new_ids["sum_0a1b2c3d4e5f6071"],), (new_ids["sum_1b2c3d4e5f607182"],)]
    copied = conn.execute(
        """SELECT m.role, m.content, m.identity_hash, m.created_at, m.token_count, m.seq FROM summary_messages sm
           JOIN messages m ON m.message_id = sm.message_id JOIN summaries s ON s.summary_id = sm.summary_id
           WHERE s.conversation_id = 3 ORDER BY m.seq"""
    ).fetchall()
    assert [r[:5] for r in copied] == source_messages  # the messages' identity travels with them
    assert [r[5] for r in copied] == list(range(target_seq + 1, target_seq + 1 + len(copied)))
    original = conn.execute(
        "SELECT kind, depth, content, token_count, earliest_at, latest_at, descendant_count,"
        " descendant_token_count, source_message_token_count, file_ids, model FROM summaries WHERE summary_id = ?",
        (CONDENSED,),
    ).fetchone()
    copy = conn.execute(
        "SELECT kind, depth, content, token_count, earliest_at, latest_at, descendant_count,"
        " descendant_token_count, source_message_token_count, file_ids, model FROM summaries WHERE summary_id = ?",
        (new_ids[CONDENSED],),
    ).fetchone()
    assert copy == original
    conn.close()
    assert_healthy(example, 3)
    assert_healthy(example, 2)  # the source is untouched
    expanded = run(example, "expand", new_ids[CONDENSED])
    assert expanded.code == 0, expanded.stderr


def test_the_content_guard_refuses_a_second_copy(example: Path) -> None:
    assert run(example, "summaries", "transplant", "--from", "2", "--to", "3", "--apply").code == 0
    before = snapshot(example / "lcm.db")
    again = run(example, "summaries", "transplant", "--from", "2", "--to", "3", "--apply")
    assert again.code == 2 and again.error["code"] == "TRANSPLANT_DUPLICATE"
    assert len(again.error["details"]["duplicates"]) == 3
    assert snapshot(example / "lcm.db") == before
    # refused before anything was written: no second change backup
    assert len(list(example.glob("*.summaries-transplant-*.changes.jsonl.gz"))) == 1


def test_one_summary_with_its_subtree(example: Path) -> None:
    done = run(example, "summaries", "transplant", "--summary-id", LEAF_A, "--to", "1", "--apply")
    assert done.code == 0, done.stderr
    data = done.json["data"]
    assert (data["summaryCount"], data["contextItemsAdded"], data["messageCount"]) == (1, 1, 8)
    assert_healthy(example, 1)


def test_bad_requests_have_stable_codes(example: Path) -> None:
    same = run(example, "summaries", "transplant", "--from", "2", "--to", "2")
    assert same.code == 2 and same.error["code"] == "INVALID_ARGUMENT"
    both = run(example, "summaries", "transplant", "--from", "2", "--summary-id", LEAF_A, "--to", "3")
    assert both.code == 2 and both.error["code"] == "INVALID_ARGUMENT"
    no_target = run(example, "summaries", "transplant", "--from", "2")
    assert no_target.code == 2 and no_target.error["code"] == "INVALID_ARGUMENT"
    bad_target = run(example, "summaries", "transplant", "--from", "2", "--to", "mermaid")
    assert bad_target.code == 2 and bad_target.error["code"] == "INVALID_ARGUMENT"
    unknown = run(example, "summaries", "transplant", "--from", "2", "--to", "99")
    assert unknown.code == 3 and unknown.error["code"] == "CONVERSATION_NOT_FOUND"


def test_transplant_killed_mid_apply_copies_all_or_nothing(example: Path) -> None:
    db = example / "lcm.db"
    before = snapshot(db)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(example.parent)}
    rng = random.Random(11)
    for _ in range(8):
        kill_midway(
            example, ["summaries", "transplant", "--from", "2", "--to", "3", "--apply"], env, rng, 0.5
        )
        now = snapshot(db)
        added = len(now["summaries"]) - len(before["summaries"])
        assert added in (0, 3)
        assert len(now["messages"]) - len(before["messages"]) == (16 if added else 0)
        if added:
            assert_healthy(example, 3)
            break
        assert now == before


def test_the_hook_door_takes_a_numeric_target_and_applies(example: Path) -> None:
    # What `lcm browse` and the host send: JSON fields in camelCase, `to` as a number.
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("lcm")),
            "--openclaw-dir",
            str(example),
            "hook",
            "summaries.transplant",
        ],
        input='{"summaryId": "sum_1b2c3d4e5f607182", "to": 3, "apply": true}',
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"applied":true' in done.stdout.replace(" ", "")
    assert_healthy(example, 3)
