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
    bare = lcm("help")  # the reference's contract: the word `help` alone is no command
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
