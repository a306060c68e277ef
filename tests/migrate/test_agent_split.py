"""`migrate-sessions` into per-agent database files: each agent's transcripts into its own file."""

from __future__ import annotations

import json
from pathlib import Path

from lcm_cli.engine.api import invoke
from tests.conftest import REPO

SOURCE = REPO / "examples" / "openclaw" / "agents" / "main" / "sessions"
MAIN_ID = "9b1f0c2e-0000-4000-8000-0000000000a1"
OPS_ID = "9b1f0c2e-0000-4000-8000-0000000000b1"


def _state(root: Path) -> Path:
    """A state dir whose agents `main` and `ops` each have one transcript."""
    for agent, session in (("main", MAIN_ID), ("ops", OPS_ID)):
        sessions = root / "agents" / agent / "sessions"
        sessions.mkdir(parents=True)
        text = (SOURCE / f"{MAIN_ID}.jsonl").read_text().replace(MAIN_ID, session)
        (sessions / f"{session}.jsonl").write_text(text)
        index = {f"agent:{agent}:main": {"sessionId": session, "updatedAt": 1780390800000}}
        (sessions / "sessions.json").write_text(json.dumps(index))
    entry = {"enabled": True, "config": {"databasePath": str(root / "db" / "{agentId}.db")}}
    (root / "openclaw.json").write_text(json.dumps({"plugins": {"entries": {"lossless-claw": entry}}}))
    (root / "db").mkdir()
    return root


def test_a_backfill_per_agent_reads_only_that_agents_transcripts(tmp_path: Path) -> None:
    root = _state(tmp_path / "openclaw")
    for agent in ("main", "ops"):
        invoke(
            "migrate.sessions", {"apply": True, "backup": "none"}, openclaw_dir=str(root), env={}, agent=agent
        )
    for agent in ("main", "ops"):
        listed = invoke("conversations.list", {}, openclaw_dir=str(root), env={}, agent=agent).envelope
        assert [c["sessionKey"] for c in listed["data"]["items"]] == [f"agent:{agent}:main"]


def test_a_single_file_backfill_is_untouched(tmp_path: Path) -> None:
    root = _state(tmp_path / "openclaw")
    (root / "openclaw.json").write_text("{}")
    found = invoke("migrate.sessions", {}, openclaw_dir=str(root), env={}, agent="ops").envelope
    assert found["data"]["scannedFiles"] == 2  # --agent names no file of its own here


def test_one_run_splits_a_backfill_into_each_agents_file(tmp_path: Path) -> None:
    root = _state(tmp_path / "openclaw")
    dry = invoke("migrate.sessions", {}, openclaw_dir=str(root), env={}).envelope["data"]
    assert dry["wouldImportFiles"] == 2 and not list((root / "db").iterdir())  # a dry run writes nothing
    done = invoke("migrate.sessions", {"apply": True, "backup": "none"}, openclaw_dir=str(root), env={})
    data = done.envelope["data"]
    assert done.exit_status == 0 and data["importedFiles"] == 2
    assert [(a["agentId"], a["dbPath"], a["scannedFiles"]) for a in data["agents"]] == [
        (agent, str(root / "db" / f"{agent}.db"), 1) for agent in ("main", "ops")
    ]
    assert sorted(f["agentId"] for f in data["files"]) == ["main", "ops"]
    for agent in ("main", "ops"):
        listed = invoke("conversations.list", {}, openclaw_dir=str(root), env={}, agent=agent).envelope
        assert [c["sessionKey"] for c in listed["data"]["items"]] == [f"agent:{agent}:main"]
    again = invoke("migrate.sessions", {"verify": True}, openclaw_dir=str(root), env={}).envelope["data"]
    assert again["completeFiles"] == 2 and again["exitStatus"] == 0
