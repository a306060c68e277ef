"""Bootstrap's rollover guards (docs/reference/engine.md §3.1 step 2): a key whose runtime session changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from lcm_cli.engine.api import call
from lcm_cli.engine.session.rollover import AMBIGUOUS_REASON
from tests.support.transcripts import write_transcript

KEY = "agent:main:main"


def _boot(home: Path, session_id: str, path: Path) -> dict[str, Any]:
    params = {"session_id": session_id, "session_key": KEY, "session_file": str(path)}
    return call("session.bootstrap", params, openclaw_dir=str(home))["data"]


def _conversations(home: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(home / "lcm.db")
    try:
        return conn.execute(
            "SELECT c.conversation_id, c.session_id, c.session_key, c.active, c.archive_cause,"
            " (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id)"
            " FROM conversations c ORDER BY c.conversation_id"
        ).fetchall()
    finally:
        conn.close()


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "oc"
    home.mkdir()
    old = tmp_path / "old.jsonl"
    write_transcript(old, session_id="s1", messages=12, seed=1)
    first = _boot(home, "s1", old)
    assert first["bootstrapped"] is True
    return home, old


def test_ambiguous_rollover_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    home, _ = _setup(tmp_path)
    before = _conversations(home)
    new = tmp_path / "new.jsonl"
    write_transcript(new, session_id="unrelated-header", messages=8, seed=2)
    out = _boot(home, "s2", new)
    assert out["bootstrapped"] is False and out["reason"] == AMBIGUOUS_REASON
    assert out["rollover"]["kind"] == "ambiguous" and out["rollover"]["previousSessionId"] == "s1"
    assert _conversations(home) == before  # not rebound, nothing imported


def test_proven_fresh_transcript_archives_and_imports(tmp_path: Path) -> None:
    home, _ = _setup(tmp_path)
    new = tmp_path / "new.jsonl"
    write_transcript(new, session_id="s2", messages=8, seed=2)
    out = _boot(home, "s2", new)
    assert out["bootstrapped"] is True and out["rollover"]["kind"] == "proven"
    rows = _conversations(home)
    assert rows[0][3:5] == (0, "rollover-fallback") and rows[0][1] == "s1" and rows[0][5] > 0
    assert rows[1][1:4] == ("s2", KEY, 1) and rows[1][5] == out["importedMessages"] > 0


def test_stale_key_with_missing_transcript_archives_and_imports(tmp_path: Path) -> None:
    home, old = _setup(tmp_path)
    old.unlink()
    new = tmp_path / "new.jsonl"
    write_transcript(new, session_id="unrelated-header", messages=8, seed=2)
    out = _boot(home, "s2", new)
    assert out["bootstrapped"] is True and out["rollover"]["kind"] == "stale-key"
    rows = _conversations(home)
    assert [r[3] for r in rows] == [0, 1] and rows[0][4] == "rollover-fallback"


def test_same_session_new_path_is_not_a_rollover(tmp_path: Path) -> None:
    home, old = _setup(tmp_path)
    moved = tmp_path / "moved.jsonl"
    moved.write_bytes(old.read_bytes())
    out = _boot(home, "s1", moved)
    assert "rollover" not in out
    assert len(_conversations(home)) == 1
