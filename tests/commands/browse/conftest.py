"""Fixtures of the `lcm browse` tests: a fresh copy of the bundled example per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture
def example_dir(tmp_path: Path) -> Path:
    """A scratch copy of examples/openclaw (lcm.db and openclaw.json)."""
    target = tmp_path / "openclaw"
    shutil.copytree(REPO / "examples" / "openclaw", target)
    return target
