"""Follow-up work: the engine asks for the debt drain after a deferred turn; only a warm door runs it."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import invoke
from lcm_cli.engine.core.registry import FollowUp
from tests.commands.test_doors import Client
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "openclaw"
KEY = "agent:main:main"
# The example's active conversation holds more than 75 % of this budget: the turn records debt.
BUDGET = 200


def _turn(method: str, n: int) -> dict[str, Any]:
    messages = [{"role": "user", "content": f"turn {n}: how is the nightly?"}]
    params: dict[str, Any] = {"session_key": KEY, "messages": messages, "token_budget": BUDGET}
    if method == "session.commit_turn":
        params.update(advancement_key=f"adv-follow-{n}", session_id="9b1f0c2e-0000-4000-8000-000000000002")
    return params


def _debt(root: Path) -> Any:
    """(pending, last_finished_at) of the debt row: a drain that ran sets the second."""
    conn = sqlite3.connect(f"file:{root / 'lcm.db'}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT pending, last_finished_at FROM conversation_compaction_maintenance"
        ).fetchone()
    finally:
        conn.close()


def _wait_for_a_drain(root: Path, before: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _debt(root)[1] != before:
            return
        time.sleep(0.05)
    raise AssertionError(f"the deferred debt was not drained in the background: {_debt(root)}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "openclaw"
    shutil.copytree(EXAMPLE, copy)
    return copy


@pytest.mark.parametrize("method", ["session.after_turn", "session.commit_turn"])
def test_a_deferred_turn_with_debt_asks_for_the_drain_and_a_cold_door_leaves_it(
    root: Path, method: str
) -> None:
    finished = _debt(root)[1]
    outcome = invoke(method, _turn(method, 1), openclaw_dir=str(root))
    data = outcome.envelope["data"]
    assert data["debt"] == {"recorded": True, "reason": "threshold"}
    assert outcome.follow_ups == (FollowUp("session.maintain", {"conversation_id": data["conversationId"]}),)
    assert _debt(root) == (1, finished)  # a cold door leaves the debt recorded for the host's maintain


def test_a_turn_below_the_threshold_asks_for_nothing(root: Path) -> None:
    params = {**_turn("session.after_turn", 1), "token_budget": 1_000_000}
    assert invoke("session.after_turn", params, openclaw_dir=str(root)).follow_ups == ()


@pytest.mark.parametrize("method", ["session.after_turn", "session.commit_turn"])
def test_serve_runs_the_follow_up_in_the_background(root: Path, method: str) -> None:
    finished = _debt(root)[1]
    client = Client(root)
    try:
        answer = client.ask(1, method, _turn(method, 2))  # serve takes snake_case names too
        assert answer["result"]["data"]["debt"] == {"recorded": True, "reason": "threshold"}, answer
        _wait_for_a_drain(root, finished)  # (the example is too small to get under 75 % of 200 tokens)
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
