"""Path precedence for the state dir, openclaw.json and lcm.db."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcm_cli.engine.config import paths
from tests.conftest import lcm
from tests.support.sample import build_sample


def meta(*args: str) -> dict:
    out = lcm(*args, "config", "show")
    assert out.code == 0, out.stderr
    return out.json["meta"]


def test_state_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_env: Path) -> None:
    assert meta()["configPath"] == str(isolated_env / ".openclaw" / "openclaw.json")
    monkeypatch.setenv("OPENCLAW_HOME", str(tmp_path / "oc-home"))
    assert meta()["configPath"] == str(tmp_path / "oc-home" / ".openclaw" / "openclaw.json")
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "state"))
    assert meta()["databasePath"] == str(tmp_path / "state" / "lcm.db")
    monkeypatch.setenv("LCM_OPENCLAW_DIR", str(tmp_path / "lcm-dir"))
    assert meta()["databasePath"] == str(tmp_path / "lcm-dir" / "lcm.db")
    assert meta("--openclaw-dir", str(tmp_path / "flag"))["databasePath"] == str(tmp_path / "flag" / "lcm.db")


def test_blank_values_are_skipped_and_tilde_expands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> None:
    monkeypatch.setenv("LCM_OPENCLAW_DIR", "   ")
    monkeypatch.setenv("OPENCLAW_STATE_DIR", "~/custom")
    assert meta()["databasePath"] == str(isolated_env / "custom" / "lcm.db")
    monkeypatch.setenv("OPENCLAW_HOME", "~/elsewhere")
    assert meta()["databasePath"] == str(isolated_env / "elsewhere" / "custom" / "lcm.db")
    assert meta("--db", "~")["databasePath"] == str(isolated_env / "elsewhere")
    assert meta("--db", "~user/x.db")["databasePath"].endswith("~user/x.db")  # ~user is not expanded


def test_relative_paths_resolve_against_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert meta("--db", "rel/lcm.db")["databasePath"] == str(tmp_path / "rel" / "lcm.db")


def test_config_path_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENCLAW_CONFIG_PATH", str(tmp_path / "env.json"))
    assert meta("--openclaw-dir", str(tmp_path))["configPath"] == str(tmp_path / "env.json")
    assert meta("--config", str(tmp_path / "flag.json"))["configPath"] == str(tmp_path / "flag.json")


def test_database_path_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = {
        "plugins": {
            "entries": {"lossless-claw": {"config": {"databasePath": str(tmp_path / "canonical.db")}}}
        }
    }
    (tmp_path / "openclaw.json").write_text(json.dumps(config))
    base = ("--openclaw-dir", str(tmp_path))
    assert meta(*base)["databasePath"] == str(tmp_path / "canonical.db")
    config["plugins"]["entries"]["lossless-claw"]["config"]["dbPath"] = str(tmp_path / "alias.db")
    (tmp_path / "openclaw.json").write_text(json.dumps(config))
    assert meta(*base)["databasePath"] == str(tmp_path / "alias.db")  # dbPath beats databasePath
    monkeypatch.setenv("LCM_DATABASE_PATH", str(tmp_path / "env.db"))
    assert meta(*base)["databasePath"] == str(tmp_path / "env.db")
    assert meta(*base, "--db", str(tmp_path / "flag.db"))["databasePath"] == str(tmp_path / "flag.db")


def test_commands_read_the_database_the_paths_name(tmp_path: Path) -> None:
    build_sample(tmp_path / "elsewhere.db")
    config = {
        "plugins": {"entries": {"lossless-claw": {"config": {"dbPath": str(tmp_path / "elsewhere.db")}}}}
    }
    (tmp_path / "openclaw.json").write_text(json.dumps(config))
    out = lcm("--openclaw-dir", str(tmp_path), "status")
    assert out.code == 0 and out.json["data"]["status"]["conversations"]["total"] == 3


def test_effective_config_follows_the_resolved_state_dir(tmp_path: Path) -> None:
    out = lcm("--openclaw-dir", str(tmp_path), "config", "show")
    effective = out.json["data"]["effective"]
    assert effective["databasePath"] == str(tmp_path / "lcm.db")
    assert effective["largeFilesDir"] == str(tmp_path / "lcm-files")


def test_resolver_functions_directly(tmp_path: Path) -> None:
    env = {"OPENCLAW_HOME": str(tmp_path)}
    state = paths.resolve_state_dir(None, env)
    assert state == str(tmp_path / ".openclaw")
    assert paths.resolve_database_path(None, env, {"dbPath": "  "}, state) == str(
        tmp_path / ".openclaw" / "lcm.db"
    )


def test_locate_transcript_finds_a_moved_state_dirs_transcript(tmp_path: Path) -> None:
    from lcm_cli.engine.config.paths import locate_transcript

    moved = tmp_path / "agents" / "main" / "sessions" / "s.jsonl"
    moved.parent.mkdir(parents=True)
    moved.write_text("{}\n")
    recorded = "/home/gone/.openclaw/agents/main/sessions/s.jsonl"
    assert locate_transcript(recorded, str(tmp_path)) == str(moved)
    assert locate_transcript("/home/gone/.openclaw/agents/other/sessions/s.jsonl", str(tmp_path)).startswith(
        "/home/gone"
    )
    assert locate_transcript(str(moved), None) == str(moved)
    assert locate_transcript("/elsewhere/s.jsonl", str(tmp_path)) == "/elsewhere/s.jsonl"
