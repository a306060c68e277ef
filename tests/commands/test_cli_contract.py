"""The CLI contract: envelope, option placement, validation order, error codes, exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import lcm

READ_COMMANDS = [
    ["status"],
    ["conversations", "list"],
    ["conversations", "show", "--conversation-id", "1"],
    ["messages", "list", "--conversation-id", "1"],
    ["messages", "tail", "--conversation-id", "1"],
    ["summaries", "list"],
    ["summaries", "show", "sum_cccccccccccccccc"],
    ["config", "show"],
    ["config", "get", "freshTailCount"],
]
PAGINATED = {"conversations.list", "messages.list", "summaries.list"}


@pytest.mark.parametrize("words", READ_COMMANDS, ids=" ".join)
def test_success_envelope(state_dir: Path, words: list[str]) -> None:
    out = lcm("--openclaw-dir", str(state_dir), *words)
    assert out.code == 0, out.stderr
    assert out.stderr == ""
    body = out.json
    command = ".".join(
        w for w in words if not w.startswith("-") and w not in ("1", "sum_cccccccccccccccc", "freshTailCount")
    )
    expected_keys = ["ok", "command", "data"] + (["pagination"] if command in PAGINATED else []) + ["meta"]
    assert list(body) == expected_keys
    assert body["ok"] is True and body["command"] == command
    assert body["meta"] == {
        "databasePath": str(state_dir / "lcm.db"),
        "configPath": str(state_dir / "openclaw.json"),
    }
    assert out.stdout.endswith("\n") and "\n" not in out.stdout[:-1]  # compact, one line


@pytest.mark.parametrize("words", READ_COMMANDS, ids=" ".join)
def test_error_envelope_when_database_missing(tmp_path: Path, words: list[str]) -> None:
    (tmp_path / "openclaw.json").write_text("{}")
    out = lcm("--openclaw-dir", str(tmp_path), *words)
    if words[0] == "config":
        assert out.code == 0  # config commands never open the database
        return
    assert out.code == 3
    assert out.error["code"] == "DATABASE_NOT_FOUND"
    assert out.error["details"] == {"databasePath": str(tmp_path / "lcm.db")}
    assert not (tmp_path / "lcm.db").exists()


def test_global_options_anywhere(state_dir: Path) -> None:
    first = lcm("--openclaw-dir", str(state_dir), "conversations", "list", "--limit", "2")
    between = lcm("conversations", "--openclaw-dir", str(state_dir), "list", "--limit=2")
    after = lcm("--limit", "2", "conversations", "list", f"--openclaw-dir={state_dir}")
    assert first.code == between.code == after.code == 0
    assert first.stdout == between.stdout == after.stdout


def test_pretty_and_version(state_dir: Path) -> None:
    pretty = lcm("--openclaw-dir", str(state_dir), "status", "--pretty")
    assert pretty.stdout.startswith('{\n  "ok": true,\n  "command": "status",')
    version = lcm("--version")
    assert version.json == {
        "ok": True,
        "command": "version",
        "data": {"version": version.json["data"]["version"]},
        "meta": {},
    }
    assert lcm("-v").stdout == version.stdout
    assert lcm("status", "--version").stdout == version.stdout  # version wins


def test_version_is_a_literal() -> None:
    import lcm_cli

    assert lcm("--version").json["data"]["version"] == lcm_cli.__version__


@pytest.mark.parametrize(
    "argv, code, exit_status",
    [
        (["status", "--bogus"], "INVALID_ARGUMENT", 2),
        (["--limit"], "INVALID_ARGUMENT", 2),  # missing value
        (["status", "--pretty=yes"], "INVALID_ARGUMENT", 2),  # value for a flag
        (["status", "extra"], "INVALID_COMMAND", 2),
        (["nope"], "INVALID_COMMAND", 2),
        (["help"], "INVALID_COMMAND", 2),
        (["conversations"], "INVALID_COMMAND", 2),
        (["config"], "INVALID_COMMAND", 2),
        (["summaries", "show"], "INVALID_COMMAND", 2),
        (["summaries", "show", "a", "b"], "INVALID_COMMAND", 2),
        (["config", "set", "freshTailCount"], "INVALID_COMMAND", 2),
        (["status", "--limit", "5"], "INVALID_ARGUMENT", 2),  # unsupported option
        (["messages", "list"], "MISSING_SELECTOR", 2),
        (["messages", "tail"], "MISSING_SELECTOR", 2),
        (["conversations", "show"], "MISSING_SELECTOR", 2),
        (["messages", "list", "--conversation-id", "1", "--session-key", "k"], "INVALID_SELECTOR", 2),
        (["messages", "list", "--conversation-id", "1", "--session-key", "  "], "INVALID_SELECTOR", 2),
        (["messages", "list", "--conversation-id", "0"], "INVALID_ARGUMENT", 2),
        (["messages", "list", "--conversation-id", "1x"], "INVALID_ARGUMENT", 2),
        (["status", "--format", "xml"], "INVALID_ARGUMENT", 2),
        (["messages", "list", "--conversation-id", "1", "--role", "robot"], "INVALID_ARGUMENT", 2),
        (["summaries", "list", "--kind", "medium"], "INVALID_ARGUMENT", 2),
        (["summaries", "list", "--depth", "-1"], "INVALID_ARGUMENT", 2),
        (["messages", "tail", "--conversation-id", "1", "--count", "501"], "INVALID_ARGUMENT", 2),
        (["messages", "list", "--conversation-id", "1", "--after", "yesterday"], "INVALID_TIME_FILTER", 2),
        (["summaries", "list", "--cursor", "not-a-cursor"], "INVALID_CURSOR", 2),
        (["messages", "list", "--conversation-id", "999"], "CONVERSATION_NOT_FOUND", 3),
        (["messages", "list", "--session-key", "agent:none"], "CONVERSATION_NOT_FOUND", 3),
        (["summaries", "show", "sum_missing"], "SUMMARY_NOT_FOUND", 3),
        (["config", "get", "noSuchKey"], "CONFIG_KEY_NOT_FOUND", 3),
        (["config", "get", "a..b"], "CONFIG_VALIDATION_FAILED", 4),
    ],
)
def test_error_codes_and_exit_statuses(state_dir: Path, argv: list[str], code: str, exit_status: int) -> None:
    out = lcm("--openclaw-dir", str(state_dir), *argv)
    assert out.code == exit_status, out.stderr
    assert out.error["code"] == code
    assert out.error["message"]


def test_error_details(state_dir: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    assert lcm(*base, "status", "--limit", "5").error["details"] == {"option": "limit", "command": "status"}
    assert lcm(*base, "messages", "list", "--session-key", "nope").error["details"] == {
        "kind": "sessionKey",
        "value": "nope",
    }
    assert lcm(*base, "conversations", "show", "--conversation-id", "77").error["details"] == {
        "kind": "conversationId",
        "value": 77,
    }
    assert lcm(*base, "summaries", "show", "sum_x").error["details"] == {"summaryId": "sum_x"}
    assert lcm(*base, "status", "--format", "xml").error["details"] == {"value": "xml"}
    assert lcm(*base, "summaries", "list", "--limit", "0").error["details"] == {"value": "0"}
    assert "details" not in lcm(*base, "messages", "list").error  # MISSING_SELECTOR
    assert "details" not in lcm(*base, "summaries", "list", "--cursor", "x").error


@pytest.mark.parametrize(
    "argv, code",
    [
        # unknown option beats an unknown command
        (["nope", "--bogus"], "INVALID_ARGUMENT"),
        # command resolution beats option support
        (["nope", "--limit", "5"], "INVALID_COMMAND"),
        # option support beats selectors
        (["status", "--conversation-id", "1", "--session-key", "k"], "INVALID_ARGUMENT"),
        # selector conflict beats the id integer check
        (["messages", "list", "--conversation-id", "x", "--session-key", "k"], "INVALID_SELECTOR"),
        # missing selector beats format
        (["messages", "list", "--format", "xml"], "MISSING_SELECTOR"),
        # format beats role
        (
            ["messages", "list", "--conversation-id", "1", "--format", "xml", "--role", "robot"],
            "INVALID_ARGUMENT",
        ),
        # time filter beats limit
        (
            ["messages", "list", "--conversation-id", "1", "--after", "bad", "--limit", "0"],
            "INVALID_TIME_FILTER",
        ),
        # validation happens before the database is looked for
        (
            ["--db", "/nonexistent/lcm.db", "messages", "list", "--conversation-id", "1", "--limit", "0"],
            "INVALID_ARGUMENT",
        ),
    ],
)
def test_validation_order(state_dir: Path, argv: list[str], code: str) -> None:
    out = lcm("--openclaw-dir", str(state_dir), *argv)
    assert out.error["code"] == code


def test_format_details_value_and_role_order(state_dir: Path) -> None:
    out = lcm(
        "--openclaw-dir",
        str(state_dir),
        "messages",
        "list",
        "--conversation-id",
        "1",
        "--format",
        "xml",
        "--role",
        "robot",
    )
    assert out.error["details"] == {"value": "xml"}


def test_empty_conversation_id_is_absent(state_dir: Path) -> None:
    out = lcm(
        "--openclaw-dir",
        str(state_dir),
        "messages",
        "list",
        "--conversation-id",
        "",
        "--session-key",
        "agent:main:main",
        "--limit",
        "1",
    )
    assert out.code == 0
    assert out.json["data"]["conversation"]["conversationId"] == 1


def test_parse_errors_are_compact_even_with_pretty(state_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(state_dir), "--pretty", "status", "--bogus")
    assert "\n" not in out.stderr[:-1]
    late = lcm("--openclaw-dir", str(state_dir), "--pretty", "summaries", "show", "sum_missing")
    assert late.stderr.startswith('{\n  "ok": false')


def test_errors_stay_json_in_table_format(state_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(state_dir), "--format", "table", "summaries", "show", "sum_missing")
    assert out.code == 3 and out.error["code"] == "SUMMARY_NOT_FOUND"


def test_tsv_format_is_the_table_layout_of_the_cli_contract(state_dir: Path) -> None:
    """`--format tsv` lays out the reference's `--format table` as cli-contract.md §15 states it."""
    out = lcm("--openclaw-dir", str(state_dir), "--format", "tsv", "conversations", "list", "--limit", "1")
    lines = out.stdout.splitlines()
    assert lines[0] == "command\tconversations.list"
    assert lines[1].split("\t")[:3] == ["conversationId", "sessionId", "sessionKey"]
    assert lines[2].split("\t")[0] == "1"
    assert "pagination.limit\t1" in lines
    assert "pagination.hasMore\ttrue" in lines
    assert f"meta.databasePath\t{state_dir / 'lcm.db'}" in lines
    tail = lcm(
        "--openclaw-dir", str(state_dir), "--format", "tsv", "messages", "tail", "--conversation-id", "3"
    )
    assert "data.messages\t[]" in tail.stdout.splitlines()


def test_table_format_renders_with_rich(state_dir: Path) -> None:
    out = lcm("--openclaw-dir", str(state_dir), "--format", "table", "conversations", "list")
    assert out.code == 0
    assert "Conv" in out.stdout and "conversationId" not in out.stdout and "agent:main:main" in out.stdout
    tree = lcm(
        "--openclaw-dir", str(state_dir), "--format", "table", "summaries", "show", "sum_cccccccccccccccc"
    )
    assert "sum_aaaaaaaaaaaaaaaa" in tree.stdout and "Children" in tree.stdout


def test_help_is_text_for_people() -> None:
    out = lcm("--help")
    assert out.code == 0 and "Usage: lcm" in out.stdout and "conversations" in out.stdout
    sub = lcm("messages", "list", "-h")
    assert "--conversation-id" in sub.stdout and "Example:" in sub.stdout
    assert lcm().stdout == out.stdout


def test_negative_number_is_a_config_value_only_in_the_value_slot(state_dir: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    out = lcm(*base, "config", "set", "newSessionRetainDepth", "-1")
    assert out.code == 0, out.stderr
    assert out.json["data"]["newValue"] == -1
    assert lcm(*base, "--pretty", "config", "set", "sweepMaxDepth", "-1").code == 0
    assert lcm(*base, "config", "set", "-1", "2").error["code"] == "INVALID_ARGUMENT"
    assert lcm(*base, "status", "-5").error["code"] == "INVALID_ARGUMENT"


def test_commands_inventory(state_dir: Path) -> None:
    out = lcm("commands")
    assert out.code == 0
    data = out.json["data"]
    by_name = {c["command"]: c for c in data["commands"]}
    for name in [
        "status",
        "conversations list",
        "conversations show",
        "messages list",
        "messages tail",
        "summaries list",
        "summaries show",
        "config show",
        "config get",
        "config set",
        "doctor",
        "commands",
    ]:
        assert name in by_name, name
        assert by_name[name]["help"]
    options = {o["name"]: o for o in by_name["messages list"]["options"]}
    assert options["--limit"]["type"] == "integer" and options["--limit"]["maximum"] == 500
    assert options["--role"]["repeatable"] is True
    assert options["--include-content"]["type"] == "boolean"
    assert by_name["messages list"]["needsSelector"] is True
    assert [a["name"] for a in by_name["config set"]["arguments"]] == ["PATH", "JSON_VALUE"]
    assert {o["name"] for o in data["globalOptions"]} >= {
        "--db",
        "--config",
        "--openclaw-dir",
        "--format",
        "--pretty",
        "--version",
    }


def test_doctor_reads_the_database_and_never_creates_it(tmp_path: Path) -> None:
    out = lcm("--openclaw-dir", str(tmp_path / "missing"), "doctor")
    assert out.code == 3
    assert out.error["code"] == "DATABASE_NOT_FOUND"
    assert not (tmp_path / "missing").exists()


def test_internal_errors_are_json(monkeypatch: pytest.MonkeyPatch, state_dir: Path) -> None:
    import lcm_cli.engine.read.status as status_module

    def explode(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(status_module, "global_status", explode)
    out = lcm("--openclaw-dir", str(state_dir), "status")
    assert out.code == 1
    assert out.error["code"] == "INTERNAL_ERROR" and "boom" in out.error["message"]
    assert json.loads(out.stderr)["ok"] is False


def test_shell_completion_uses_typers_mechanism(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_LCM_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", "lcm conv")
    monkeypatch.setenv("COMP_CWORD", "1")
    out = lcm()
    assert out.stdout.split() == ["conversations"]
    monkeypatch.delenv("_LCM_COMPLETE")
    # The shell is named: typer detects it from the parent processes, and a test run
    # need not have a shell among them (a detached job, a CI runner's exec).
    script = lcm("--show-completion", "bash")
    assert script.code == 0 and "_LCM_COMPLETE" in script.stdout
