"""Output shaped for agents (issue 16, part 5): --fields on every door, NDJSON, --all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lcm_cli.engine.api import call
from tests.conftest import lcm, lcm_process

LCM = str(Path(sys.executable).with_name("lcm"))


def test_fields_on_a_list_keeps_envelope_and_pagination(state_dir: Path) -> None:
    out = lcm(
        "--openclaw-dir",
        str(state_dir),
        "conversations",
        "list",
        "--fields",
        "conversationId",
        "--limit",
        "1",
    )
    assert out.code == 0, out.stderr
    envelope = json.loads(out.stdout)
    assert set(envelope) == {"ok", "command", "data", "pagination", "meta"}
    assert all(set(item) == {"conversationId"} for item in envelope["data"]["items"])
    assert set(envelope["pagination"]) == {"limit", "returned", "hasMore", "nextCursor"}


def test_fields_anywhere_on_the_line_and_on_an_object(state_dir: Path) -> None:
    out = lcm("--fields", "status.messages.count", "status", "--openclaw-dir", str(state_dir))
    assert out.code == 0, out.stderr
    data = json.loads(out.stdout)["data"]
    assert data == {"status": {"messages": {"count": data["status"]["messages"]["count"]}}}


def test_bad_fields_is_invalid_argument(state_dir: Path) -> None:
    out = lcm("status", "--fields", "a..b", "--openclaw-dir", str(state_dir))
    assert out.code == 2
    assert out.error["code"] == "INVALID_ARGUMENT"


def test_python_hook_and_serve_doors_take_fields(state_dir: Path) -> None:
    params = {"conversationId": 1, "fields": "messageId,role"}
    envelope = call(
        "messages.tail", {"conversation_id": 1, "fields": "messageId,role"}, openclaw_dir=str(state_dir)
    )
    assert all(set(m) == {"messageId", "role"} for m in envelope["data"]["messages"])
    hook = subprocess.run(
        [LCM, "--openclaw-dir", str(state_dir), "hook", "messages.tail"],
        input=json.dumps(params),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    assert json.loads(hook.stdout)["data"] == envelope["data"]
    request = json.dumps({"id": 1, "method": "messages.tail", "params": params}) + "\n"
    served = subprocess.run(
        [LCM, "--openclaw-dir", str(state_dir), "serve", "--stdio"],
        input=request,
        capture_output=True,
        text=True,
        timeout=60,
    )
    answer = json.loads(served.stdout.splitlines()[0])
    assert answer["result"]["data"] == envelope["data"]


def test_ndjson_one_item_a_line_then_the_continuation(state_dir: Path) -> None:
    out = lcm("conversations", "list", "--format", "ndjson", "--limit", "1", "--openclaw-dir", str(state_dir))
    assert out.code == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert "conversationId" in lines[0]
    assert lines[-1]["pagination"]["hasMore"] is True


def test_all_streams_every_page_as_ndjson(state_dir: Path) -> None:
    everything = call("conversations.list", {"limit": 500}, openclaw_dir=str(state_dir))["data"]["items"]
    assert len(everything) > 1
    out = lcm_process(
        "conversations",
        "list",
        "--all",
        "--limit",
        "1",
        "--fields",
        "conversationId",
        "--openclaw-dir",
        str(state_dir),
    )
    assert out.code == 0, out.stderr
    ids = [json.loads(line)["conversationId"] for line in out.stdout.splitlines()]
    assert ids == [c["conversationId"] for c in everything]


def test_all_refuses_a_command_without_a_list(state_dir: Path) -> None:
    out = lcm("status", "--all", "--openclaw-dir", str(state_dir))
    assert out.code == 2
    assert out.error["code"] == "INVALID_ARGUMENT"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openclaw"
CAPPED = {
    "messages.list": ("messages", "list", "--conversation-id", "2", "--include-content"),
    "summaries.show": ("summaries", "show", "sum_1b2c3d4e5f607182"),
    "describe": ("describe", "sum_1b2c3d4e5f607182"),
    "expand": ("expand", "sum_1b2c3d4e5f607182"),
}


def test_every_max_tokens_is_a_hard_cap_on_the_answer_printed(tmp_path: Path) -> None:
    """The answer (``data``) fits the cap, whatever the paths in ``meta``; a cap below the
    smallest page answers that page and says so."""
    from lcm_cli.engine.core.registry import OPERATIONS
    from lcm_cli.engine.read.token_budget import json_tokens

    assert {n for n, s in OPERATIONS.items() if s.caps_output} == set(CAPPED)
    capped_elsewhere = {n for n, s in OPERATIONS.items() if "max_tokens" in s.options} - set(CAPPED)
    # expand-query caps the model's answer; the others cut their list at the door
    # (tests/commands/test_bounded_outputs.py).
    cut_at_the_door = {n for n, s in OPERATIONS.items() if s.cuts}
    assert cut_at_the_door == {"doctor.scan", "context.assemble"}
    assert capped_elsewhere == {"expand.query", "summaries.graph", *cut_at_the_door}
    import shutil

    root = tmp_path / "openclaw"
    shutil.copytree(EXAMPLE, root)
    for name, args in CAPPED.items():
        fitted = 0
        for cap in (1, 20, 150, 250, 400, 500, 700, 1000, 1500):
            out = lcm("--openclaw-dir", str(root), *args, "--max-tokens", str(cap))
            assert out.code == 0, (name, cap, out.stderr)  # never an error: the smallest page
            data = out.json["data"]
            budget = data.get("budget") if isinstance(data, dict) else None
            if json_tokens(data) > cap:  # the smallest page, said so
                assert (budget or {}).get("overBudget") or out.json["meta"].get("maxTokens"), (name, cap)
                continue
            fitted += 1
        assert fitted >= 3, name


def test_did_you_mean_for_commands_options_and_id_kinds(state_dir: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    assert lcm(*base, "statsu").error["details"] == {"suggestions": ["lcm status"]}
    assert lcm(*base, "conversations", "lst").error["details"]["suggestions"] == ["lcm conversations list"]
    assert lcm(*base, "backup", "lst").error["details"]["suggestions"] == ["lcm backup list"]
    assert lcm(*base, "grep", "x", "--limt", "3").error["details"] == {
        "option": "limt",
        "command": "grep",
        "suggestions": ["--limit"],
    }
    assert lcm(*base, "grep", "x", "--include-content").error["details"]["command"] == "grep"
    wrong_kind = lcm(*base, "grep", "x", "--conversation-id", "sum_1b2c3d4e5f607182").error
    assert wrong_kind["details"]["suggestions"] == ["lcm describe sum_1b2c3d4e5f607182"]
    key = lcm(*base, "grep", "x", "--conversation-id", "agent:main:main").error
    assert key["details"]["suggestions"] == ["--session-key agent:main:main"]
    assert lcm(*base, "describe", "2").error["details"]["suggestions"] == [
        "lcm conversations show --conversation-id 2"
    ]
    digits = lcm(*base, "grep", "x", "--session-key", "2").error
    assert digits["code"] == "CONVERSATION_NOT_FOUND" and digits["details"]["suggestions"] == [
        "--conversation-id 2"
    ]
    assert "suggestions" not in lcm(*base, "summaries", "show", "2").error["details"]  # cli-contract §13
    # nothing close: no guess
    assert "details" not in lcm(*base, "nope").error


def test_the_most_used_commands_suggest_too(state_dir: Path) -> None:
    base = ("--openclaw-dir", str(state_dir))
    for words, typo, fixed in (
        (("status",), "--fromat", "--format"),
        (("messages", "list", "--conversation-id", "1"), "--limt", "--limit"),
        (("summaries", "list"), "--dept", "--depth"),
        (("conversations", "list"), "--cusor", "--cursor"),
    ):
        error = lcm(*base, *words, typo, "x").error
        assert error["code"] == "INVALID_ARGUMENT" and error["details"]["suggestions"] == [fixed], words
    for typed, fixed in (
        (("conversation", "list"), "lcm conversations list"),
        (("summary", "lst"), "lcm summaries list"),
        (("confg", "show"), "lcm config show"),
        (("mesages",), "lcm messages"),
    ):
        assert lcm(*base, *typed).error["details"]["suggestions"] == [fixed], typed


def test_the_reference_commands_keep_their_details(state_dir: Path) -> None:
    """The details of docs/reference/cli-contract.md §13 (no suggestions added to them)."""
    base = ("--openclaw-dir", str(state_dir))
    assert "details" not in lcm(*base, "status", "--zzzzzz", "3").error  # cli-contract: parser errors
    assert lcm(*base, "status", "--limit", "3").error["details"] == {"option": "limit", "command": "status"}
    assert lcm(*base, "messages", "list", "--conversation-id", "sum_x").error["details"] == {"value": "sum_x"}
    assert "details" not in lcm(*base, "status", "extra").error


def test_hook_suggests_operations_and_parameters(state_dir: Path) -> None:
    def hook(method: str, params: dict[str, object]) -> dict[str, object]:
        done = subprocess.run(
            [LCM, "--openclaw-dir", str(state_dir), "hook", method],
            input=json.dumps(params),
            capture_output=True,
            text=True,
            timeout=60,
        )
        error: dict[str, object] = json.loads(done.stderr)["error"]
        return error

    assert hook("mesages.tail", {})["details"] == {
        "operation": "mesages.tail",
        "suggestions": ["messages.tail", "messages.list"],
    }
    assert hook("messages.tail", {"sesionKey": "k"})["details"]["suggestions"] == ["sessionKey"]  # type: ignore[index]


def test_lcm_commands_types_each_option() -> None:
    data = json.loads(lcm("commands").stdout)["data"]
    by_name = {c["command"]: {o["name"]: o for o in c["options"]} for c in data["commands"]}
    types = {o["type"] for options in by_name.values() for o in options.values()}
    assert types == {"boolean", "integer", "string", "json"}
    assert by_name["messages list"]["--role"] == {
        "name": "--role",
        "type": "string",
        "enum": ["system", "user", "assistant", "tool"],
        "repeatable": True,
        "help": by_name["messages list"]["--role"]["help"],
    }
    assert by_name["ingest"]["--messages"]["type"] == "json"
    assert by_name["rotate"]["--backup"]["enum"] == ["changes", "full", "latest", "none"]
    # the reference's grammar on its commands, lcm's one grammar ("when") on ours
    assert by_name["messages list"]["--after"]["format"] == "date-time"
    assert by_name["grep"]["--after"]["format"] == by_name["prune"]["--before"]["format"] == "when"
    assert by_name["migrate-sessions"]["--since"]["format"] == "when"
    formats = next(o for o in data["globalOptions"] if o["name"] == "--format")
    assert formats["enum"] == ["json", "table", "tsv", "ndjson", "csv", "tsv-plain"]
    assert {"--fields", "--all"} <= {o["name"] for o in data["globalOptions"]}


def test_the_typer_door_takes_fields_and_all(state_dir: Path) -> None:
    import io
    from contextlib import redirect_stdout

    from lcm_cli.commands.app import build_command

    out = io.StringIO()
    with redirect_stdout(out):
        build_command().main(
            [
                "--openclaw-dir",
                str(state_dir),
                "--fields",
                "conversationId",
                "conversations",
                "list",
                "--limit",
                "1",
            ],
            prog_name="lcm",
            standalone_mode=False,
        )
    assert all(set(i) == {"conversationId"} for i in json.loads(out.getvalue())["data"]["items"])
    out = io.StringIO()
    with redirect_stdout(out):
        build_command().main(
            [
                "--openclaw-dir",
                str(state_dir),
                "--all",
                "--fields",
                "conversationId",
                "conversations",
                "list",
            ],
            prog_name="lcm",
            standalone_mode=False,
        )
    assert len(out.getvalue().splitlines()) > 1


def test_hook_schemas_show_the_time_grammar_of_each_operation() -> None:
    from lcm_cli.commands.dispatch import operation_list

    by_name = {o["name"]: o["params"]["properties"] for o in operation_list()}
    assert by_name["messages.list"]["after"]["format"] == "date-time"  # cli-contract §9
    assert "format" not in by_name["grep"]["after"] and "duration" in by_name["grep"]["after"]["description"]
    assert "fields" in by_name["status"]


def test_a_command_keeps_its_own_all_option(tmp_path: Path) -> None:
    """`summaries rewrite --all` (every summary) is the command's; elsewhere `--all` streams pages."""
    import shutil

    root = tmp_path / "openclaw"
    shutil.copytree(EXAMPLE, root)
    out = lcm("--openclaw-dir", str(root), "summaries", "rewrite", "--conversation-id", "2", "--all")
    assert out.code == 0, out.stderr
    assert json.loads(out.stdout)["command"] == "summaries.rewrite"  # one envelope, not NDJSON
