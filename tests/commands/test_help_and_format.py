"""People's conventions that do not change what agents read: `lcm help CMD`, and
`LCM_FORMAT` as the default format on a terminal only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tty
from pathlib import Path

from tests.conftest import REPO, lcm

EXAMPLE = REPO / "examples" / "openclaw"
EXE = Path(sys.executable).with_name("lcm")


def _on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`lcm ARGS` with a pseudo-terminal as stdout (raw: the tty adds no CR)."""
    master, slave = os.openpty()
    tty.setraw(slave)
    with subprocess.Popen([str(EXE), *args], stdout=slave, stderr=subprocess.PIPE, env=env) as child:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = child.wait(timeout=60)
        err = child.stderr.read().decode() if child.stderr else ""
    os.close(master)
    return code, b"".join(chunks).decode(), err


def test_help_cmd_is_the_commands_own_help() -> None:
    for words in (["status"], ["summaries", "list"], ["backup", "restore"]):
        asked = lcm("help", *words)
        flagged = lcm(*words, "--help")
        assert asked.code == flagged.code == 0
        assert asked.stdout == flagged.stdout and f"lcm {' '.join(words)}" in asked.stdout
    bare = lcm("help")  # cli-contract.md §2: the word `help` alone is no command
    assert bare.code == 2 and bare.error["code"] == "INVALID_COMMAND"
    unknown = lcm("help", "stauts")
    assert unknown.code == 2 and unknown.error["code"] == "INVALID_COMMAND"
    assert "lcm status" in unknown.error["details"]["suggestions"]


def test_lcm_format_is_the_default_on_a_terminal_and_never_when_piped() -> None:
    env = {**os.environ, "LCM_FORMAT": "tsv", "COLUMNS": "120"}
    args = ["--openclaw-dir", str(EXAMPLE), "status"]
    code, out, err = _on_terminal(args, env)
    assert code == 0, err
    assert out.startswith("command\tstatus\n")  # the TSV layout
    code, out, err = _on_terminal([*args, "--format", "json"], env)  # --format still wins
    assert code == 0 and json.loads(out)["command"] == "status"
    piped = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and json.loads(piped.stdout)["command"] == "status"


def test_a_bad_lcm_format_on_a_terminal_names_the_variable() -> None:
    env = {**os.environ, "LCM_FORMAT": "yaml"}
    code, out, err = _on_terminal(["--openclaw-dir", str(EXAMPLE), "status"], env)
    assert code == 2 and out == ""
    error = json.loads(err)["error"]
    assert error["code"] == "INVALID_ARGUMENT" and error["details"]["variable"] == "LCM_FORMAT"


def test_root_help_groups_commands_in_sections_without_cutting_their_help() -> None:
    from lcm_cli.commands.specs import COMMAND_SECTIONS

    out = lcm("--help")
    assert out.code == 0
    assert "..." not in out.stdout.split("\n", 1)[1]  # the usage line's ARGS... aside, nothing is cut
    positions = [out.stdout.index(f"\n{title}:\n") for title in COMMAND_SECTIONS]
    assert positions == sorted(positions)
    for title, words in COMMAND_SECTIONS.items():
        start = out.stdout.index(f"\n{title}:\n")
        block = out.stdout[start:]
        for word in words:
            assert f"\n  {word} " in block, (title, word)


def _ex_db(tmp_path: Path) -> str:
    import shutil

    target = tmp_path / "lcm.db"
    shutil.copy(EXAMPLE / "lcm.db", target)
    return str(target)


def test_csv_is_the_items_under_one_header_in_the_fields_order(tmp_path: Path) -> None:
    import csv
    import io

    db = _ex_db(tmp_path)
    as_json = lcm("messages", "list", "--db", db, "--conversation-id", "2", "--include-content")
    items = as_json.json["data"]["items"]
    fields = "content,messageId,role"
    out = lcm(
        "messages",
        "list",
        "--db",
        db,
        "--conversation-id",
        "2",
        "--include-content",
        "--format",
        "csv",
        "--fields",
        fields,
    )
    assert out.code == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows[0] == fields.split(",")
    # Commas, quotes and line breaks in stored text survive the round trip exactly.
    assert rows[1:] == [[item["content"], str(item["messageId"]), item["role"]] for item in items]
    bare = lcm(
        "messages",
        "list",
        "--db",
        db,
        "--conversation-id",
        "2",
        "--format",
        "csv",
        "--fields",
        fields,
        "--no-headers",
        "--include-content",
    )
    assert list(csv.reader(io.StringIO(bare.stdout))) == rows[1:]


def test_plain_tsv_cuts_and_sorts(tmp_path: Path) -> None:
    db = _ex_db(tmp_path)
    out = lcm(
        "conversations",
        "list",
        "--db",
        db,
        "--format",
        "tsv-plain",
        "--no-headers",
        "--fields",
        "conversationId,messageCount",
    )
    assert out.code == 0, out.stderr
    listed = lcm("conversations", "list", "--db", db).json["data"]["items"]
    assert out.stdout.splitlines() == [f"{c['conversationId']}\t{c['messageCount']}" for c in listed]


def test_a_record_nests_as_dot_path_columns(tmp_path: Path) -> None:
    db = _ex_db(tmp_path)
    status = lcm("status", "--db", db).json["data"]
    out = lcm("status", "--db", db, "--format", "tsv-plain")
    header, row = (line.split("\t") for line in out.stdout.splitlines())
    values = dict(zip(header, row))
    assert values["status.messages.count"] == str(status["status"]["messages"]["count"])
    assert values["version"] == status["version"]


def test_all_pages_as_csv_print_one_header(tmp_path: Path) -> None:
    db = _ex_db(tmp_path)
    out = lcm(
        "messages",
        "list",
        "--db",
        db,
        "--conversation-id",
        "2",
        "--limit",
        "5",
        "--all",
        "--format",
        "csv",
        "--fields",
        "messageId",
    )
    assert out.code == 0, out.stderr
    ids = [
        str(m["messageId"])
        for m in lcm("messages", "list", "--db", db, "--conversation-id", "2", "--limit", "500").json["data"][
            "items"
        ]
    ]
    assert out.stdout.splitlines() == ["messageId", *ids]


def test_no_headers_without_a_row_format_is_refused(tmp_path: Path) -> None:
    out = lcm("status", "--db", _ex_db(tmp_path), "--no-headers")
    assert out.code == 2 and out.stdout == ""
    assert out.error["code"] == "INVALID_ARGUMENT" and out.error["details"]["option"] == "no-headers"


def test_long_tables_page_on_a_terminal_and_never_when_piped(tmp_path: Path) -> None:
    paged = tmp_path / "paged.txt"
    pager = tmp_path / "pager.sh"
    pager.write_text(f'#!/bin/sh\necho "LESS=$LESS" > {paged}\ncat >> {paged}\n')
    pager.chmod(0o755)
    env = {**os.environ, "PAGER": str(pager), "LINES": "10", "COLUMNS": "100"}
    env.pop("LCM_PAGER", None)
    env.pop("LESS", None)
    args = ["--openclaw-dir", str(EXAMPLE), "messages", "list", "--conversation-id", "2", "--format", "table"]
    code, out, err = _on_terminal(args, env)
    assert code == 0, err
    assert out == "" and paged.read_text().startswith("LESS=FRX\n") and "Messages" in paged.read_text()
    paged.unlink()
    short = ["--openclaw-dir", str(EXAMPLE), "status", "--format", "table"]
    code, out, _ = _on_terminal(short, {**env, "LINES": "200"})  # fits the screen: no pager
    assert code == 0 and "Messages" in out and not paged.exists()
    code, out, _ = _on_terminal(args, {**env, "PAGER": ""})  # turned off
    assert code == 0 and "Messages" in out and not paged.exists()
    piped = subprocess.run([str(EXE), *args], env=env, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and "Messages" in piped.stdout and not paged.exists()
