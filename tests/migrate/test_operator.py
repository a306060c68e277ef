"""`lcm migrate-sessions` for operators (issue 16): no backup when nothing would be written,
`--keep N` retention, a reason for every `incomplete`, session patterns honoured as the
runtime honours them, `updatedAt` from the last message, dry-run totals."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import lcm
from tests.support.transcripts import write_sessions_index, write_transcript


def _state(tmp_path: Path, **config: Any) -> Path:
    root = tmp_path / "state"
    sessions = root / "agents" / "main" / "sessions"
    for index in range(3):
        write_transcript(sessions / f"s{index}.jsonl", session_id=f"s{index}", messages=12, seed=index)
    write_sessions_index(
        root / "agents" / "main",
        {"agent:main:main": "s0", "agent:main:cron:nightly": "s1", "agent:main:subagent:x": "s2"},
    )
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": config}}}}), encoding="utf-8"
    )
    return root


def _migrate(state: Path, *args: str) -> dict[str, Any]:
    out = lcm("--openclaw-dir", str(state), "migrate-sessions", *args)
    assert out.code == 0, out.stderr
    data: dict[str, Any] = out.json["data"]
    return data


def _backups(state: Path) -> list[Path]:
    return sorted(
        [
            *state.glob("lcm.db.migrate-sessions-*.bak"),
            *state.glob("lcm.db.migrate-sessions-*.changes.jsonl.gz"),
        ]
    )


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_no_backup_when_nothing_would_be_written(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _migrate(state, "--apply")  # a first import into a new database: nothing to back up
    assert _backups(state) == []
    before = (state / "lcm.db").stat().st_mtime_ns
    again = _migrate(state, "--apply")
    assert again["backupPath"] is None and again["backupSkippedReason"] == "nothing-to-write"
    assert again["importedMessages"] == 0 and _backups(state) == []
    assert (state / "lcm.db").stat().st_mtime_ns == before


def test_keep_prunes_migrate_backups_with_backup_retention(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _migrate(state, "--file", str(state / "agents/main/sessions/s0.jsonl"), "--apply")
    other = lcm("--openclaw-dir", str(state), "backup")  # an `lcm backup` backup is not pruned
    assert other.code == 0, other.stderr
    for index in (1, 2):
        _migrate(state, "--file", str(state / f"agents/main/sessions/s{index}.jsonl"), "--apply")
    assert len(_backups(state)) == 2
    write_transcript(state / "agents/main/sessions/s3.jsonl", session_id="s3", messages=4, seed=3)
    data = _migrate(state, "--apply", "--keep", "1")
    kept = _backups(state)
    assert [p.name for p in kept] == [Path(data["backupPath"]).name]
    assert len(data["prunedBackups"]) == 2
    assert not any(Path(p).exists() or Path(p + ".manifest.json").exists() for p in data["prunedBackups"])
    assert Path(other.json["data"]["backupPath"]).exists()
    # retention also runs when there is nothing to import (and so no new backup)
    older = state / "lcm.db.migrate-sessions-20200101T000000000Z.bak"
    shutil.copyfile(data["backupPath"], older)
    idle = _migrate(state, "--apply", "--keep", "1")
    assert idle["backupPath"] is None and idle["prunedBackups"] == [str(older)]
    assert [p.name for p in _backups(state)] == [Path(data["backupPath"]).name]


def test_keep_needs_apply(tmp_path: Path) -> None:
    out = lcm("--openclaw-dir", str(_state(tmp_path)), "migrate-sessions", "--keep", "2")
    assert out.code == 2 and json.loads(out.stderr)["error"]["code"] == "INVALID_ARGUMENT"


def test_every_incomplete_file_has_a_reason(tmp_path: Path) -> None:
    state = _state(tmp_path)
    sessions = state / "agents/main/sessions"
    write_transcript(sessions / "legacy.jsonl", session_id="legacy", messages=6, with_ids=False, seed=9)
    _migrate(state, "--file", str(sessions / "legacy.jsonl"), "--file", str(sessions / "s0.jsonl"), "--apply")
    out = lcm("--openclaw-dir", str(state), "migrate-sessions", "--verify")
    assert out.code == 6  # entries missing: a finding
    data = out.json["data"]
    incomplete = {f["sessionId"]: f for f in data["files"] if f["status"] == "incomplete"}
    assert set(incomplete) == {"legacy", "s1", "s2"}
    assert incomplete["legacy"]["reason"] == "entries-without-id" and incomplete["legacy"]["hint"]
    assert incomplete["s1"]["reason"] == "missing-entries" and "--apply" in incomplete["s1"]["hint"]
    assert data["incompleteByReason"] == {"entries-without-id": 1, "missing-entries": 2}
    # Only a legacy file without entry ids left: nothing to redo, so no finding.
    only_legacy = _migrate(state, "--verify", "--file", str(sessions / "legacy.jsonl"))
    assert only_legacy["incompleteByReason"] == {"entries-without-id": 1} and only_legacy["exitStatus"] == 0


@pytest.mark.parametrize("mode", [(), ("--apply",)], ids=["dry-run", "apply"])
def test_session_patterns_are_honoured_and_reported(tmp_path: Path, mode: tuple[str, ...]) -> None:
    state = _state(
        tmp_path,
        ignoreSessionPatterns=["agent:*:cron:**"],
        statelessSessionPatterns=["agent:*:subagent:**"],
    )
    data = _migrate(state, *mode)
    by_id = {f["sessionId"]: f for f in data["files"]}
    assert by_id["s1"]["status"] == "skipped" and by_id["s1"]["reason"] == "ignored-session"
    assert by_id["s2"]["status"] == "skipped" and by_id["s2"]["reason"] == "stateless-session"
    assert any("ignoreSessionPatterns" in w for w in by_id["s1"]["warnings"])
    assert data["excludedSessions"] == {
        "count": 2,
        "byReason": {"ignored-session": 1, "stateless-session": 1},
    }
    if mode:
        assert _rows(state / "lcm.db", "SELECT session_id FROM conversations") == [("s0",)]


def test_stateless_patterns_follow_skip_stateless_sessions(tmp_path: Path) -> None:
    state = _state(tmp_path, statelessSessionPatterns=["agent:*:subagent:**"], skipStatelessSessions=False)
    data = _migrate(state)
    assert {f["status"] for f in data["files"]} == {"would-import"}
    assert data["excludedSessions"]["count"] == 0


def test_updated_at_is_the_last_message_time(tmp_path: Path) -> None:
    state = _state(tmp_path)
    _migrate(state, "--apply")
    rows = _rows(
        state / "lcm.db",
        """SELECT c.updated_at, (SELECT created_at FROM messages m WHERE m.conversation_id = c.conversation_id
                                 ORDER BY julianday(created_at) DESC LIMIT 1)
           FROM conversations c""",
    )
    assert len(rows) == 3
    for updated, last in rows:
        assert updated == last
        assert not updated.startswith(last[:0] + _today())


def _today() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def test_dry_run_totals(tmp_path: Path) -> None:
    state = _state(tmp_path)
    data = _migrate(state)
    would = [f for f in data["files"] if f["status"] == "would-import"]
    assert data["wouldImportFiles"] == len(would) == 3
    assert data["wouldImportMessages"] == sum(f["wouldImportMessages"] for f in would) > 0
    assert data["wouldCreateConversations"] == 3
    applied = _migrate(state, "--apply")
    assert applied["importedMessages"] == data["wouldImportMessages"]
    again = _migrate(state)
    assert again["wouldImportMessages"] == 0 and again["wouldImportFiles"] == 0
