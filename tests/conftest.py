"""Shared fixtures: an isolated environment, real lcm.db files built through the Store,
and a way to run `lcm` in-process or as a real subprocess."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support.sample import build_sample

REPO = Path(__file__).resolve().parent.parent

# A run spawns `lcm` thousands of times: each would compile the package again where the
# environment turns bytecode off (PYTHONDONTWRITEBYTECODE), and so would pytest's rewritten
# test modules in every worker. Keep the compiled files (they are git-ignored).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Property tests judge answers, never speed: a loaded CI machine must not fail them on a
# per-example deadline or on how long generating an input took.
settings.register_profile("lcm", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("lcm")


@dataclass
class Outcome:
    """What one `lcm` run produced."""

    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        """The stdout envelope, parsed."""
        return json.loads(self.stdout)

    @property
    def error(self) -> dict[str, Any]:
        """The stderr error object, parsed (and checked to be the only output)."""
        assert self.stdout == "", f"stdout not empty on failure: {self.stdout!r}"
        body = json.loads(self.stderr)
        assert body["ok"] is False
        return body["error"]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test sees the real ~/.openclaw or the developer's LCM_* variables."""
    home = tmp_path_factory.mktemp("home")
    for name in list(os.environ):
        if name.startswith(("LCM_", "OPENCLAW_", "_LCM")) or name == "TZ":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    return home


def lcm(*args: str) -> Outcome:
    """Run `lcm` in this process (fast; same code path as the console script)."""
    from lcm_cli.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Outcome(code, out.getvalue(), err.getvalue())


def lcm_process(
    *args: str, env: dict[str, str] | None = None, cwd: str | None = None, input: str | None = None
) -> Outcome:
    """Run the installed `lcm` as a real subprocess (``input`` on its stdin)."""
    exe = Path(sys.executable).with_name("lcm")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "lcm_cli"]
    result = subprocess.run(
        command + list(args),
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        cwd=cwd,
        timeout=60,
        input=input,
    )
    return Outcome(result.returncode, result.stdout, result.stderr)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """An OpenClaw state dir with a sample lcm.db and a minimal openclaw.json."""
    root = tmp_path / "openclaw"
    root.mkdir()
    build_sample(root / "lcm.db")
    (root / "openclaw.json").write_text(
        json.dumps(
            {"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": {"freshTailCount": 8}}}}}
        )
    )
    return root


@pytest.fixture
def db_path(state_dir: Path) -> Path:
    """The sample database's path."""
    return state_dir / "lcm.db"


# Tests that kill a process mid-way or soak a server: minutes of wall time, so they carry the
# `slow` marker (CI still runs them; `-m "not slow"` is the quick loop). Named, not listed.
_SLOW_NAME = re.compile(r"(^|_)(kill|killed|sigkill)(_|$)|soak")


def pytest_configure(config: pytest.Config) -> None:
    """Parallel workers (``-n``) take one test at a time: pytest-xdist otherwise hands each
    worker a long run of consecutive tests, and the slow ones, sorted first, would all go to
    the first worker."""
    if getattr(config.option, "maxschedchunk", "absent") is None:
        config.option.maxschedchunk = 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the kill and soak tests ``slow`` by their names, then run the slow tests first,
    so the long ones spread over the workers instead of one worker finishing alone with them."""
    for item in items:
        if _SLOW_NAME.search(item.name.split("[")[0].removeprefix("test_")):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
