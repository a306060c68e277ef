"""`lcm summaries rewrite`: a dry run with diffs, then bottom-up writes that keep ids and
links, never store a fallback, and leave the database healthy."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.maintenance.markers import contains_marker
from tests.conftest import lcm_process
from tests.engine.surgery.conftest import (
    CONDENSED,
    LEAF_A,
    LEAF_B,
    Model,
    assert_healthy,
    kill_midway,
    run,
    snapshot,
)


def test_dry_run_diffs_and_writes_nothing(example: Path) -> None:
    before = snapshot(example / "lcm.db")
    done = run(example, "summaries", "rewrite", "--summary-id", LEAF_A)
    assert done.code == 0, done.stderr
    data = done.json["data"]
    assert data["applied"] is False and data["backupPath"] is None
    (entry,) = data["summaries"]
    assert entry["summaryId"] == LEAF_A and entry["status"] == "would-rewrite"
    assert entry["diff"].startswith(f"--- {LEAF_A} (stored)\n+++ {LEAF_A} (rewritten)\n@@")
    assert entry["oldTokenCount"] == 79 and entry["newTokenCount"] > 0
    assert snapshot(example / "lcm.db") == before
    assert not list(example.glob("*.bak"))


def test_exactly_one_target_selection(example: Path) -> None:
    for args in ([], ["--depth", "0", "--all"], ["--summary-id", LEAF_A, "--all"]):
        done = run(example, "summaries", "rewrite", *args)
        assert done.code == 2 and done.error["code"] == "INVALID_ARGUMENT", args
    missing = run(example, "summaries", "rewrite", "--summary-id", "sum_nope")
    assert missing.code == 3 and missing.error["code"] == "SUMMARY_NOT_FOUND"
    elsewhere = run(example, "summaries", "rewrite", "--summary-id", LEAF_A, "--conversation-id", "3")
    assert elsewhere.code == 3 and elsewhere.error["code"] == "NOT_IN_SCOPE"


def test_depth_is_scoped_by_the_selector(example: Path) -> None:
    scoped = run(example, "summaries", "rewrite", "--depth", "0", "--session-key", "agent:main:main")
    assert [e["summaryId"] for e in scoped.json["data"]["summaries"]] == [LEAF_A, LEAF_B]
    none = run(example, "summaries", "rewrite", "--all", "--conversation-id", "3")
    assert none.code == 0 and none.json["data"]["summaries"] == []


def test_apply_with_cascade_rewrites_bottom_up_and_keeps_ids_and_links(example: Path, model: Model) -> None:
    db = example / "lcm.db"
    before = snapshot(db)
    done = run(example, "summaries", "rewrite", "--summary-id", LEAF_A, "--cascade", "--apply")
    assert done.code == 0, done.stderr
    data = done.json["data"]
    assert data["applied"] is True and Path(data["backupPath"]).exists()
    assert [(e["summaryId"], e["status"], e["cascaded"]) for e in data["summaries"]] == [
        (LEAF_A, "rewritten", False),
        (CONDENSED, "rewritten", True),
    ]
    # Depth-aware templates: the leaf prompt is the leaf template, the parent's the d1 one,
    # and the parent was summarized from its child's new text.
    assert len(model.prompts) == 2
    assert "consecutive leaf summaries" not in model.prompts[0]
    assert "consecutive leaf summaries" in model.prompts[1]
    assert "Rewritten #1" in model.prompts[1]
    after = snapshot(db)
    for table in ("summary_parents", "summary_messages", "context_items", "messages"):
        assert after[table] == before[table], table
    assert [r[0] for r in after["summaries"]] == [r[0] for r in before["summaries"]]
    conn = sqlite3.connect(db)
    content, tokens, model_name = conn.execute(
        "SELECT content, token_count, model FROM summaries WHERE summary_id = ?", (LEAF_A,)
    ).fetchone()
    # The model id alone, as lossless-claw stores summaries.model (not provider/model).
    assert content.startswith("Rewritten #1") and model_name == "test-model"
    # The consumer's descendant tokens follow its rewritten children (doctor checks them too).
    desc = conn.execute(
        "SELECT descendant_token_count FROM summaries WHERE summary_id = ?", (CONDENSED,)
    ).fetchone()[0]
    leaf_b = conn.execute("SELECT token_count FROM summaries WHERE summary_id = ?", (LEAF_B,)).fetchone()[0]
    assert desc == tokens + leaf_b
    fts = conn.execute("SELECT content FROM summaries_fts WHERE summary_id = ?", (LEAF_A,)).fetchall()
    assert fts == [(content,)]
    conn.close()
    assert_healthy(example, 2)


def test_a_failing_summarizer_leaves_the_summary_unchanged(example: Path, model: Model) -> None:
    model.fail = True
    before = snapshot(example / "lcm.db")
    done = run(example, "summaries", "rewrite", "--all", "--conversation-id", "2", "--apply")
    assert done.code == 1  # reported, not written
    entries = done.json["data"]["summaries"]
    assert {e["status"] for e in entries} == {"failed"}
    assert all(e["error"]["code"] == "SUMMARIZER_FAILED" and e["diff"] == "" for e in entries)
    after = snapshot(example / "lcm.db")
    assert after["summaries"] == before["summaries"]
    assert not any(contains_marker(row[4]) for row in after["summaries"])
    assert_healthy(example, 2)


def test_nothing_to_change_takes_no_backup(example: Path) -> None:
    assert run(example, "summaries", "rewrite", "--all", "--apply").code == 0
    assert len(list(example.glob("*.summaries-rewrite-*.changes.jsonl.gz"))) == 1
    again = run(example, "summaries", "rewrite", "--all", "--cascade", "--apply")  # extractive: same text
    assert again.code == 0 and again.json["data"]["applied"] is False
    assert {e["status"] for e in again.json["data"]["summaries"]} == {"unchanged"}
    assert len(list(example.glob("*.summaries-rewrite-*.changes.jsonl.gz"))) == 1


def test_a_source_changed_meanwhile_is_not_overwritten_nor_built_on(
    example: Path, model: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lcm_cli.engine.surgery.common as common

    real_backup = common.backup_first

    def backup_then_a_live_writer(ctx: Any, label: str) -> str:
        path = real_backup(ctx, label)
        with sqlite3.connect(example / "lcm.db") as conn:  # the host rewrote the leaf meanwhile
            conn.execute("UPDATE summaries SET content = 'host text' WHERE summary_id = ?", (LEAF_A,))
        return path

    monkeypatch.setattr(common, "backup_first", backup_then_a_live_writer)
    done = run(
        example, "summaries", "rewrite", "--summary-id", LEAF_A, "--cascade", "--apply", "--backup", "full"
    )
    assert done.code == 1
    assert [(e["summaryId"], e["status"], e["reason"]) for e in done.json["data"]["summaries"]] == [
        (LEAF_A, "failed", "state-changed"),
        (CONDENSED, "skipped", "source-not-written"),
    ]
    assert done.json["data"]["summaries"][0]["error"]["code"] == "STATE_CHANGED"
    with sqlite3.connect(example / "lcm.db") as conn:
        assert conn.execute("SELECT content FROM summaries WHERE summary_id = ?", (LEAF_A,)).fetchone() == (
            "host text",
        )


_REWRITE_ALL = ["summaries", "rewrite", "--all", "--cascade", "--apply"]


def test_rewrite_killed_mid_apply_leaves_each_summary_old_or_new(example: Path) -> None:
    db = example / "lcm.db"
    original = {r[0]: r[4] for r in snapshot(db)["summaries"]}
    env = {"LCM_SUMMARIZER": "extractive", "PATH": "/usr/bin:/bin", "HOME": str(example.parent)}
    planned = lcm_process("--openclaw-dir", str(example), "summaries", "rewrite", "--all", env=env)
    rewritten = {e["summaryId"]: e for e in planned.json["data"]["summaries"]}
    rng = random.Random(18)
    for _ in range(6):
        kill_midway(example, _REWRITE_ALL, env, rng, 0.6)
        for sid, content in ((r[0], r[4]) for r in snapshot(db)["summaries"]):
            # Each summary holds its old text or a whole rewrite, never a mix or a marker.
            assert not contains_marker(content)
            assert content == original[sid] or rewritten[sid]["status"] == "would-rewrite", sid
        assert_healthy(example, 2)
