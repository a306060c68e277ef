"""`lcm context show`: the assembled context as JSON and as a table."""

from __future__ import annotations

from pathlib import Path

from lcm_cli.engine.api import call
from tests.conftest import lcm


def test_context_show_returns_the_assembled_context(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "context", "show", "--conversation-id", "1")
    assert out.code == 0, out.stderr
    envelope = out.json
    assert envelope["command"] == "context.assemble"
    data = envelope["data"]
    assert data["conversation"]["conversationId"] == 1
    assert data["systemPromptAddition"] is None
    first = data["messages"][0]
    assert first["role"] == "user" and first["content"].startswith('<summary id="sum_cccccccccccccccc"')
    assert 'trust="untrusted"' in first["content"]
    assert data["estimatedTokens"] > 0
    assert data["details"]["summaryItems"] == 1
    # Same envelope from the Python door.
    direct = call("context.assemble", {"conversation_id": 1}, db=str(db_path))
    assert direct["data"] == data


def test_context_show_by_session_key_and_budget(db_path: Path) -> None:
    by_key = lcm(
        "--db", str(db_path), "context", "show", "--session-key", "agent:main:main", "--token-budget", "300"
    )
    assert by_key.code == 0
    data = by_key.json["data"]
    assert data["conversation"]["conversationId"] == 1  # the active conversation of the key
    assert data["estimatedTokens"] <= 300
    assert data["details"]["tokenBudget"] == 300


def test_context_show_table_is_for_people(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "--format", "table", "context", "show", "--conversation-id", "1")
    assert out.code == 0, out.stderr
    assert "what the model sees" in out.stdout
    assert "summary d1" in out.stdout and "sum_cccccccccccccccc" in out.stdout
    assert "Context size (tokens)" in out.stdout


def test_context_show_bad_input(db_path: Path, tmp_path: Path) -> None:
    assert lcm("--db", str(db_path), "context", "show").error["code"] == "MISSING_SELECTOR"
    assert (
        lcm("--db", str(db_path), "context", "show", "--conversation-id", "42").error["code"]
        == "CONVERSATION_NOT_FOUND"
    )
    budget = lcm("--db", str(db_path), "context", "show", "--conversation-id", "1", "--token-budget", "lots")
    assert budget.error["code"] == "INVALID_ARGUMENT"
    missing = lcm("--db", str(tmp_path / "nope.db"), "context", "show", "--conversation-id", "1")
    assert missing.error["code"] == "DATABASE_NOT_FOUND"


def test_json_context_show_and_dry_run_compact_load_nothing_heavy(state_dir: Path) -> None:
    from tests.test_startup import loaded_modules

    assert loaded_modules("--openclaw-dir", str(state_dir), "context", "show", "--conversation-id", "1") == []
    assert loaded_modules("--openclaw-dir", str(state_dir), "compact", "--conversation-id", "1") == []
