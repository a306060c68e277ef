"""The whole-project checks run with the tests: lint, formatting, types, docs drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PATHS = ["lcm_cli", "tests", "scripts", "benchmarks"]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=240)


def tool(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def test_ruff_lint() -> None:
    result = run(tool("ruff"), "check", *PATHS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = run(tool("ruff"), "format", "--check", *PATHS)
    assert result.returncode == 0, "run `ruff format`:\n" + result.stdout + result.stderr


def test_mypy_strict_on_the_engine() -> None:
    result = run(tool("mypy"), "lcm_cli")
    assert result.returncode == 0, result.stdout + result.stderr
