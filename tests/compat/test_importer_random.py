"""The importer on random state dirs, held to the rules of lossless-claw's importer.

The expected counts come from the generator (tests/compat/gen.py), which applies the rules of
docs/reference/migrate-sessions.md to the lines it writes; they are not answers recorded from
lossless-claw. The file order is ``localeCompare``'s, itself held to answers recorded from
Node 24 (tests/compat/goldens/localecompare_node24.json). Per seed: every file's persistable-message count, no conversation without messages,
conversation and message ids assigned in the reference's ``localeCompare`` file order,
``--limit N`` taking the first N files of that order, symlinks skipped and reported, and
exit status 1 exactly when a file failed.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.collation import sort_key
from tests.compat.gen import add_symlink, build_state_dir
from tests.conftest import lcm

SEEDS = range(1, 17)


def migrate(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = lcm("migrate-sessions", "--state-dir", str(root), *args)
    assert out.stdout, out.stderr
    return out.code, json.loads(out.stdout)["data"]


def order(paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda p: (sort_key(p), p))


@pytest.mark.parametrize("seed", SEEDS)
def test_random_state_dir_imports_by_the_reference_rules(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "state"
    files = build_state_dir(seed, root)
    link = add_symlink(root, files[0].path) if files and seed % 3 == 0 else None
    expected = {str(f.path): f.expected for f in files}

    code, data = migrate(root, "--apply")
    assert code == 0 and data["errorFiles"] == 0 and data["exitStatus"] == 0
    reports = [r for r in data["files"] if r.get("reason") not in ("symlink", "side-file")]
    side = {r["file"] for r in data["files"] if r.get("reason") == "side-file"}
    assert [r["file"] for r in reports] == order(list(set(expected) - side))
    for report in reports:
        assert report["candidateMessages"] == expected[report["file"]], report
        if expected[report["file"]] == 0:
            assert report["status"] == "skipped" and report["reason"] == "no-persistable-messages"
            assert report["conversationId"] is None
        else:
            assert report["status"] == "imported" and report["importedMessages"] == expected[report["file"]]
    links = [r for r in data["files"] if r.get("reason") == "symlink"]
    assert [r["file"] for r in links] == ([str(link)] if link else [])

    db = root / "lcm.db"
    if not db.exists():
        assert not any(expected.values())
        return
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            """SELECT c.conversation_id, c.session_id, COUNT(m.message_id), MIN(m.message_id), MAX(m.message_id)
               FROM conversations c LEFT JOIN messages m USING (conversation_id)
               GROUP BY c.conversation_id ORDER BY c.conversation_id"""
        ).fetchall()
    assert all(count > 0 for _, _, count, _, _ in rows), "a conversation without messages"
    imported = [r for r in reports if r["status"] == "imported"]
    # Conversation ids follow the file order, and so do message ids.
    assert [r["conversationId"] for r in imported] == [row[0] for row in rows]
    assert [r["importedMessages"] for r in imported] == [row[2] for row in rows]
    assert all(rows[i][4] < rows[i + 1][3] for i in range(len(rows) - 1))

    # A rerun adds nothing and still creates no empty conversation.
    code, again = migrate(root, "--apply")
    assert code == 0 and again["importedMessages"] == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM conversations").fetchone()[0] == len(rows)


@pytest.mark.parametrize("seed", SEEDS)
def test_limit_takes_the_first_files_of_the_reference_order(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "state"
    files = build_state_dir(seed, root)
    limit = seed % 5
    code, data = migrate(root, "--limit", str(limit))
    assert code == 0
    chosen = [r["file"] for r in data["files"] if r.get("reason") != "side-file"]
    everything = order([str(f.path) for f in files])
    assert set(chosen) <= set(everything)
    # Side files are set aside after the limit is applied; the rest is a prefix of the order.
    assert chosen == [p for p in everything[:limit] if p in chosen]


@pytest.mark.parametrize("seed", range(1, 5))
def test_failed_files_exit_1_with_the_report_on_stdout(tmp_path: Path, seed: int) -> None:
    root = tmp_path / "state"
    files = build_state_dir(seed, root) or build_state_dir(seed + 100, root)
    given = [str(f.path) for f in files[:2]]
    broken = [str(tmp_path / "missing.jsonl"), str(tmp_path)][: 1 + seed % 2]  # missing, or a directory
    args = [a for path in given + broken for a in ("--file", path)]
    for mode in ((), ("--apply",)):
        code, data = migrate(root, *args, *mode)
        assert code == 1 and data["exitStatus"] == 1
        assert data["errorFiles"] == len(broken)
        failed = {r["file"] for r in data["files"] if r["status"] == "error"}
        assert failed == set(broken)
