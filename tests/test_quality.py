"""The whole-project checks run with the tests: lint, formatting, types.

Each test runs one step of scripts/check (the import contracts are tests/test_layers.py),
so the suite and `scripts/check` never disagree and no tool runs twice.
"""

from __future__ import annotations

from tests.support.check import load_check

check = load_check()


def test_ruff_lint() -> None:
    result = check.run_step("lint")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = check.run_step("format")
    assert result.returncode == 0, "run `ruff format`:\n" + result.stdout + result.stderr


def test_mypy_strict_on_the_package() -> None:
    result = check.run_step("types")
    assert result.returncode == 0, result.stdout + result.stderr
