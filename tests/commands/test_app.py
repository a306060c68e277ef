"""The typer app generated from the declarations is a working door, not only help."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import typer

from lcm_cli.commands.app import build_command
from tests.conftest import Outcome, lcm


def via_typer(*argv: str) -> Outcome:
    """Run argv through the generated click tree itself (not the fast path)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result = build_command().main(list(argv), prog_name="lcm", standalone_mode=False)
            code = result if isinstance(result, int) else 0
        except typer.Exit as done:
            code = done.exit_code
    return Outcome(code, out.getvalue(), err.getvalue())


def test_typer_door_gives_the_same_envelope(state_dir: Any) -> None:
    argv = ["--openclaw-dir", str(state_dir), "messages", "list", "--conversation-id", "1", "--limit", "2"]
    direct, typed = lcm(*argv), via_typer(*argv)
    assert typed.code == direct.code == 0, typed.stderr
    assert typed.stdout == direct.stdout


def test_typer_door_applies_the_exit_status(state_dir: Any) -> None:
    argv = ["--openclaw-dir", str(state_dir), "doctor", "--fail-on", "info"]
    direct, typed = lcm(*argv), via_typer(*argv)
    assert typed.code == direct.code == 6
    assert json.loads(typed.stdout)["data"]["exitStatus"] == 6


def test_group_runs_its_own_operation_only_without_a_subcommand(state_dir: Any) -> None:
    typed = via_typer("--openclaw-dir", str(state_dir), "backup", "list")
    assert typed.code == 0, typed.stderr
    assert json.loads(typed.stdout)["command"] == "backup.list"


def test_repeatable_options_and_arguments_reach_the_operation(state_dir: Any) -> None:
    argv = ["--openclaw-dir", str(state_dir), "prompts", "render", "leaf", "--var", "target_tokens=7"]
    direct, typed = lcm(*argv), via_typer(*argv)
    assert typed.code == direct.code == 0, typed.stderr
    assert typed.stdout == direct.stdout


def test_ingest_reads_stdin_through_both_paths(state_dir: Any, monkeypatch: Any) -> None:
    argv = [
        "--openclaw-dir",
        str(state_dir),
        "ingest",
        "--session-id",
        "s-app",
        "--session-key",
        "agent:app:1",
    ]
    results = []
    for run in (lcm, via_typer):
        stdin = io.TextIOWrapper(io.BytesIO(b'{"role": "user", "content": "hello from stdin"}\n'))
        monkeypatch.setattr("sys.stdin", stdin)
        outcome = run(*argv)
        assert outcome.code == 0, outcome.stderr
        results.append(json.loads(outcome.stdout)["data"])
    assert [r["ingested"] for r in results] == [1, 1]
