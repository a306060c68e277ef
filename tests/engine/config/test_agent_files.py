"""``databasePath`` with ``{agentId}``: one database file per agent (docs/agents.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcm_cli.engine.api import invoke
from lcm_cli.engine.config.paths import resolve_database_path, safe_agent_id
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError

TURN = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]


def _config(root: Path, database_path: str) -> Path:
    config = root / "openclaw.json"
    entry = {"enabled": True, "config": {"databasePath": database_path}}
    config.write_text(json.dumps({"plugins": {"entries": {"lossless-claw": entry}}}))
    return config


def test_the_path_is_filled_in_only_when_it_asks_for_an_agent() -> None:
    plugin = {"databasePath": "/data/{agentId}/lcm.db"}
    assert resolve_database_path(None, {}, plugin, "/state", "ops") == "/data/ops/lcm.db"
    assert resolve_database_path(None, {}, plugin, "/state") == "/data/{agentId}/lcm.db"
    assert (
        resolve_database_path(None, {}, {"databasePath": "/data/lcm.db"}, "/state", "ops") == "/data/lcm.db"
    )
    assert resolve_database_path(None, {}, {}, "/state", "ops") == "/state/lcm.db"  # single file: untouched
    assert not any(safe_agent_id(a) for a in ("", ".", "..", "a/b", "a\\b", "a\0b"))


def test_each_session_writes_to_its_agents_file(tmp_path: Path) -> None:
    config = _config(tmp_path, str(tmp_path / "{agentId}.db"))
    for agent in ("main", "ops"):
        fields = {"session_id": f"s-{agent}", "session_key": f"agent:{agent}:main", "messages": TURN}
        invoke("session.ingest", fields, config=str(config), env={})
    assert (tmp_path / "main.db").exists() and (tmp_path / "ops.db").exists()
    shown = invoke("conversations.list", {}, config=str(config), env={}, agent="ops").envelope
    assert [c["sessionKey"] for c in shown["data"]["items"]] == ["agent:ops:main"]
    assert shown["meta"]["databasePath"] == str(tmp_path / "ops.db")
    by_env = invoke("conversations.list", {}, config=str(config), env={"LCM_AGENT_ID": "main"}).envelope
    assert [c["sessionKey"] for c in by_env["data"]["items"]] == ["agent:main:main"]


def test_no_agent_is_a_clear_error(tmp_path: Path) -> None:
    config = _config(tmp_path, str(tmp_path / "{agentId}.db"))
    with pytest.raises(LcmError) as caught:
        invoke("status", {}, config=str(config), env={})
    assert caught.value.code == "AGENT_REQUIRED" and "--agent" in caught.value.message
    assert invoke("config.show", {}, config=str(config), env={}).envelope["ok"]  # no database needed


def test_a_warm_context_follows_each_requests_agent(tmp_path: Path) -> None:
    config = _config(tmp_path, str(tmp_path / "{agentId}.db"))
    ctx = Context(config=str(config), env={})
    try:
        ctx.resolve_paths()
        for agent in ("main", "ops", "main"):
            fields = {"session_id": f"s-{agent}", "session_key": f"agent:{agent}:main", "messages": TURN}
            invoke("session.ingest", fields, context=ctx)
            tail = invoke("messages.tail", {"session_key": f"agent:{agent}:main"}, context=ctx).envelope
            assert tail["meta"]["databasePath"] == str(tmp_path / f"{agent}.db")
        with pytest.raises(LcmError) as caught:
            invoke("status", {}, context=ctx)
        assert caught.value.code == "AGENT_REQUIRED"
    finally:
        ctx.close()
