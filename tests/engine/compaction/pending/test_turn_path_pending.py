"""Issue 30 item 3 end to end: `maintain` prepares with the model between turns, the turn
path publishes at the threshold without it.

A real chat-completions server on 127.0.0.1 is the configured summarizer. Between turns
`session.maintain` (what `lcm serve`'s follow-up lane runs after a turn) prepares pending
summaries; the model is then held (any request would block), and the turns that cross the
threshold publish the prepared batch: no request reaches the server, the published
summaries carry the model's text, and the context is back under the threshold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lcm_cli.engine.api import call
from tests.engine.compaction.test_turn_path import (
    BUDGET,
    KEY,
    MODEL_SUMMARY,
    SlowModel,
    commit,
    db,
    home_with,
    ok,
    stored_tokens,
)
from tests.support.chat_model import configured
from tests.support.compaction_sim import check_invariants


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowModel]:
    fast = SlowModel(delay=0.0)
    with configured(fast, monkeypatch):
        yield fast


def test_the_threshold_publishes_what_maintain_prepared_without_the_model(
    tmp_path: Path, model: SlowModel
) -> None:
    home = home_with(tmp_path, leafChunkTokens=300)
    n = 0
    prepared = False
    # Below the threshold: every commit offers `maintain` as its follow-up, which prepares.
    while not prepared:
        data = commit(home, n)
        n += 1
        assert data["reason"] == "below threshold"
        maintained = ok("session.maintain", home, session_key=KEY, token_budget=BUDGET)
        prepared = maintained.get("pending", {}).get("status") == "ready"
    assert model.prompts, "maintain did not prepare with the model"
    asked = len(model.prompts)

    # Now the model would block any caller: the turns must not ask it.
    model.gate = threading.Event()
    published = None
    for _ in range(40):
        data = commit(home, n)
        n += 1
        if "pending" in data:
            published = data
            break
    model.gate.set()
    assert len(model.prompts) == asked
    assert published is not None and published["pending"]["status"] == "published"
    assert published["reason"] in ("pending summaries published", "compaction deferred")
    assert stored_tokens(home) <= BUDGET
    with db(home) as conn:
        check_invariants(conn, 1)
        contents = {r[0] for r in conn.execute("SELECT content FROM summaries")}
        assert contents == {MODEL_SUMMARY}
        states = dict(conn.execute("SELECT status, COUNT(*) FROM pending_compaction_batches GROUP BY status"))
        assert states.get("published") == 1


def test_maintain_with_a_local_summarizer_prepares_nothing(tmp_path: Path) -> None:
    home = home_with(tmp_path, leafChunkTokens=300)
    for n in range(20):
        commit(home, n)
    envelope = call("session.maintain", {"session_key": KEY}, openclaw_dir=str(home))
    assert envelope["ok"] and "pending" not in envelope["data"]
    with db(home) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pending_compaction_batches").fetchone()[0] == 0
