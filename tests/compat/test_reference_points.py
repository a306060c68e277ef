"""Issue 14's fixed cases, as docs/reference/cli-contract.md and docs/compat.md state them.

The expected values are written by hand from those documented facts (docs/compat.md's rows
for issue 14); none is an answer recorded from lossless-claw.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.compat.gen import write_file
from tests.conftest import lcm


def test_state_dir_and_verbose_are_the_importer_flags(tmp_path: Path) -> None:
    import random

    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    write_file(random.Random(1), sessions / "a.jsonl", "full", "a")
    out = lcm("migrate-sessions", "--state-dir", str(tmp_path), "--verbose", "--json")
    assert out.code == 0, out.stderr
    data = json.loads(out.stdout)["data"]
    assert data["stateDir"] == str(tmp_path) and data["dbPath"] == str(tmp_path / "lcm.db")
    assert [f["status"] for f in data["files"]] == ["would-import"]
    clash = lcm("migrate-sessions", "--state-dir", str(tmp_path), "--openclaw-dir", str(tmp_path / "x"))
    assert clash.code == 2 and json.loads(clash.stderr)["error"]["details"] == {"option": "state-dir"}


def test_a_linked_agent_dir_is_reported_not_read(tmp_path: Path) -> None:
    import random

    real = tmp_path / "elsewhere" / "sessions"
    real.mkdir(parents=True)
    write_file(random.Random(2), real / "b.jsonl", "legacy", "b")
    (tmp_path / "state" / "agents").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere", tmp_path / "state" / "agents" / "linked")
    data = json.loads(lcm("migrate-sessions", "--state-dir", str(tmp_path / "state")).stdout)["data"]
    assert [(f["status"], f["reason"]) for f in data["files"]] == [("skipped", "symlink")]


@pytest.mark.parametrize("key", ["freshTailMaxTokens", "maxAssemblyTokenBudget"])
def test_config_get_of_a_known_unset_key_is_ok(tmp_path: Path, key: str) -> None:
    (tmp_path / "openclaw.json").write_text("{}")
    out = lcm("--openclaw-dir", str(tmp_path), "config", "get", key)
    assert out.code == 0, out.stderr
    assert json.loads(out.stdout)["data"] == {
        "path": key,
        "isSet": False,
        "rawValue": None,
        "effectiveValue": None,
    }
    assert lcm("--openclaw-dir", str(tmp_path), "config", "get", "noSuchKey").code == 3


def test_config_shape_error_names_the_bare_key(tmp_path: Path) -> None:
    (tmp_path / "openclaw.json").write_text('{"plugins": {"entries": "x"}}')
    out = lcm("--openclaw-dir", str(tmp_path), "config", "show")
    error = json.loads(out.stderr)["error"]
    assert out.code == 4 and error["code"] == "CONFIG_SHAPE_INVALID"
    assert error["details"] == {"configPath": str(tmp_path / "openclaw.json"), "key": "entries"}


def test_error_details_as_the_cli_contract_states_them(db_path: Path, tmp_path: Path) -> None:
    """cli-contract.md §4.2 and §13 (details), §5 (compact before parsing ends), the
    compat.md row for `summaries show ""`, and §13's DATABASE_OPEN_FAILED row (lazy open)."""
    unsupported = lcm("--db", str(db_path), "--pretty", "status", "--kind", "leaf")
    assert unsupported.stderr.count("\n") == 1  # compact despite --pretty
    assert json.loads(unsupported.stderr)["error"]["details"] == {"option": "kind", "command": "status"}
    empty = lcm("--db", str(db_path), "summaries", "show", "")  # an empty id is a missing one
    assert empty.code == 2 and json.loads(empty.stderr)["error"]["code"] == "INVALID_COMMAND"
    text = tmp_path / "not.db"
    text.write_text("plain text, not SQLite\n" * 10)
    bad = lcm("--db", str(text), "conversations", "list")
    assert bad.code == 5 and json.loads(bad.stderr)["error"]["code"] == "DATABASE_QUERY_FAILED"


@pytest.mark.parametrize(
    "command",
    [
        ("conversations", "show"),
        ("messages", "list"),
        ("messages", "tail"),
        ("summaries", "list"),
        ("grep", "x"),
        ("export", "--to", "markdown"),
        ("context", "show"),
        ("doctor",),
    ],
    ids=" ".join,
)
def test_a_huge_conversation_id_is_not_found(tmp_path: Path, command: tuple[str, ...]) -> None:
    """cli-contract.md §4.2 (no upper bound) and §10 (no match: CONVERSATION_NOT_FOUND), the
    compat.md row "a huge `--conversation-id`"; lcm's own commands answer the same."""
    from lcm_cli.engine.db.store import Store

    Store.open(tmp_path / "lcm.db").close()
    for huge in ("9223372036854775808", "99999999999999999999999", "9" * 300):
        out = lcm("--db", str(tmp_path / "lcm.db"), *command, "--conversation-id", huge)
        assert (out.code, out.error["code"]) == (3, "CONVERSATION_NOT_FOUND"), out.stderr


def test_a_recency_past_the_earliest_javascript_date_is_a_time_filter_error(tmp_path: Path) -> None:
    from lcm_cli.engine.db.store import Store

    Store.open(tmp_path / "lcm.db").close()
    out = lcm("--db", str(tmp_path / "lcm.db"), "summaries", "list", "--recency", "99999999999w")
    assert (out.code, out.error["code"]) == (2, "INVALID_TIME_FILTER")
