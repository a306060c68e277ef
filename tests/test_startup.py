"""Start-up cost: which heavy modules a command loads, measured in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import lcm_process

PROBE = """
import json, sys
from lcm_cli.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("typer", "rich", "sqlite_utils", "pydantic", "pydantic_settings", "platformdirs", "textual",
                           "typing")
               if m in sys.modules)
sys.stderr.write("\\nHEAVY=" + json.dumps(heavy) + "\\n")
raise SystemExit(code)
"""


def loaded_modules(*args: str, typing: bool = False) -> list[str]:
    """The heavy third-party modules `lcm ARGS` loads (and ``typing``, when asked)."""
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    line = [text for text in result.stderr.splitlines() if text.startswith("HEAVY=")][-1]
    return [name for name in json.loads(line[len("HEAVY=") :]) if typing or name != "typing"]


def test_version_loads_nothing_heavy() -> None:
    assert loaded_modules("--version", typing=True) == []


@pytest.mark.parametrize(
    "words",
    [
        ["status"],
        ["conversations", "list"],
        ["conversations", "show", "--conversation-id", "1"],
        ["messages", "list", "--conversation-id", "1"],
        ["messages", "tail", "--conversation-id", "1"],
        ["summaries", "list"],
    ],
    ids=" ".join,
)
def test_json_reads_skip_rich_sqlite_utils_pydantic_and_typing(state_dir: Path, words: list[str]) -> None:
    assert loaded_modules("--openclaw-dir", str(state_dir), *words, typing=True) == []


def test_table_format_loads_rich_only_when_asked(state_dir: Path) -> None:
    assert "rich" in loaded_modules("--openclaw-dir", str(state_dir), "--format", "table", "status")


def test_installed_console_script_end_to_end(state_dir: Path) -> None:
    out = lcm_process("--openclaw-dir", str(state_dir), "conversations", "list", "--limit", "1")
    assert out.code == 0, out.stderr
    body = out.json
    assert body["command"] == "conversations.list" and body["pagination"]["returned"] == 1
    failure = lcm_process("--openclaw-dir", str(state_dir), "summaries", "show", "sum_nope")
    assert failure.code == 3 and failure.stdout == ""
    assert json.loads(failure.stderr)["error"]["code"] == "SUMMARY_NOT_FOUND"


def test_python_dash_m_entry_point(state_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lcm_cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and json.loads(result.stdout)["command"] == "version"


EXIT_PROBE = """
import atexit, sys
atexit.register(lambda: sys.stderr.write("exit handlers ran\\n"))
sys.argv = ["lcm", *sys.argv[1:]]
from lcm_cli.cli import run
run()
raise SystemExit("run() returned")
"""


@pytest.mark.parametrize("pretty", [False, True])
def test_console_exit_skips_teardown_but_flushes_and_runs_exit_handlers(
    state_dir: Path, pretty: bool
) -> None:
    # Output larger than a pipe's buffer, through a pipe: all of it arrives, then the
    # exit handlers run, and the status is the command's.
    words = ["--openclaw-dir", str(state_dir), "commands"] + (["--pretty"] if pretty else [])
    result = subprocess.run([sys.executable, "-c", EXIT_PROBE, *words], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) > 65536 or not pretty
    assert json.loads(result.stdout)["command"] == "commands"
    assert result.stderr.decode() == "exit handlers ran\n"
    failed = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, "--openclaw-dir", str(state_dir), "summaries", "show", "sum_nope"],
        capture_output=True,
        timeout=60,
    )
    assert failed.returncode == 3 and failed.stdout == b""
    assert json.loads(failed.stderr.decode().splitlines()[0])["error"]["code"] == "SUMMARY_NOT_FOUND"
    assert failed.stderr.decode().endswith("exit handlers ran\n")
