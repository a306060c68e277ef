"""Issue 30: no model call on the turn's path (:mod:`lcm_cli.engine.compaction.interim`).

A real chat-completions server on 127.0.0.1 is the configured summarizer, and it is slow
(2 s an answer, or held until the test lets it go). `commit-turn`, `after-turn` and
`assemble` are driven past the threshold and past the budget in-process: the server's
request log proves no request reached it during those calls, the context they return stays
within the budget and the debt stays recorded. Then `maintain` calls the model, which
re-summarizes the interim summaries the turn path wrote and pays the debt.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.compaction.compactor import Compactor, record_debt
from lcm_cli.engine.compaction.drain import drain_debt
from lcm_cli.engine.compaction.interim import INTERIM_MODEL, InterimSummarizer
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.summarize.base import SummaryRequest
from tests.support.chat_model import ChatModel, configured
from tests.support.compaction_sim import SMALL, HeadSummarizer, check_invariants, effective

KEY = "agent:main:turnpath"
BUDGET = 2400
MODEL_SUMMARY = "Model summary: the turns discussed the nightly build and its retries."


class SlowModel(ChatModel):
    """Answers after ``delay`` seconds, or once ``gate`` is set when one is given."""

    def __init__(self, delay: float = 2.0) -> None:
        self.delay = delay
        self.gate: threading.Event | None = None
        self.asked = threading.Event()
        super().__init__()

    def reply(self, prompt: str) -> str | None:
        self.asked.set()
        if self.gate is not None:
            self.gate.wait(30)
        elif self.delay:
            threading.Event().wait(self.delay)
        return MODEL_SUMMARY


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowModel]:
    with configured(SlowModel(), monkeypatch) as slow:
        yield slow


def home_with(tmp_path: Path, **config: Any) -> Path:
    home = tmp_path / "oc"
    home.mkdir(parents=True, exist_ok=True)
    entry = {"enabled": True, "config": {**SMALL, **config}}
    (home / "openclaw.json").write_text(json.dumps({"plugins": {"entries": {"lossless-claw": entry}}}))
    return home


def messages(n: int) -> list[dict[str, Any]]:
    words = " ".join(f"nightly{(n * 11 + k) % 97} build retry" for k in range(10))
    return [
        {"role": "user", "content": f"question {n}: {words}"},
        {"role": "assistant", "content": f"answer {n}: {words}"},
    ]


def ok(name: str, home: Path, **params: Any) -> dict[str, Any]:
    envelope = call(name, params, openclaw_dir=str(home))
    assert envelope["ok"], envelope
    data: dict[str, Any] = envelope["data"]
    return data


def commit(home: Path, n: int, **params: Any) -> dict[str, Any]:
    return ok(
        "session.commit_turn",
        home,
        advancement_key=f"turn-{n}",
        session_id="s1",
        session_key=KEY,
        messages=messages(n),
        token_budget=BUDGET,
        **params,
    )


@contextlib.contextmanager
def db(home: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(home / "lcm.db")
    try:
        yield conn
    finally:
        conn.close()


def debt(home: Path) -> tuple[Any, ...]:
    with db(home) as conn:
        row = conn.execute(
            "SELECT pending, running, reason, retry_attempts, next_attempt_after"
            " FROM conversation_compaction_maintenance"
        ).fetchone()
    return tuple(row) if row else ()


def models(home: Path) -> dict[str, int]:
    with db(home) as conn:
        return dict(conn.execute("SELECT model, COUNT(*) FROM summaries GROUP BY model").fetchall())


def stored_tokens(home: Path) -> int:
    if not (home / "lcm.db").exists():
        return 0
    with db(home) as conn:
        row = conn.execute(
            "SELECT COALESCE(SUM(COALESCE(m.token_count, s.token_count)), 0) FROM context_items c"
            " LEFT JOIN messages m ON m.message_id = c.message_id"
            " LEFT JOIN summaries s ON s.summary_id = c.summary_id"
        ).fetchone()
    return int(row[0])


def test_turns_past_the_budget_never_reach_the_model_and_maintain_pays_the_debt(
    tmp_path: Path, model: SlowModel
) -> None:
    home = home_with(tmp_path)
    n = 0
    # Commit turns until the stored context is over the budget: every commit over the
    # threshold records debt and returns without compacting.
    while stored_tokens(home) <= BUDGET:
        data = commit(home, n)
        n += 1
        assert data["status"] == "committed" and data["compaction"] is None
        assert model.prompts == []
    assert data["debt"] == {"recorded": True, "reason": "threshold"}
    assert debt(home)[:3] == (1, 0, "threshold")

    # Assemble with the stored context over the budget: the emergency drain runs, locally.
    live = [m for i in range(n) for m in messages(i)]
    assembled = ok("context.assemble", home, session_key=KEY, token_budget=BUDGET, messages=live)
    assert model.prompts == []
    drain = assembled["details"]["debt"]["emergencyDrain"]
    assert drain["summarizer"] == INTERIM_MODEL and drain["changed"] is True
    assert assembled["estimatedTokens"] <= BUDGET
    assert stored_tokens(home) <= BUDGET
    assert models(home) == {INTERIM_MODEL: models(home)[INTERIM_MODEL]}
    assert debt(home)[:2] == (1, 0)  # still owed: the interim summaries wait for the model

    # Further turns and assembles still never ask the model; the debt stays recorded.
    for _ in range(3):
        commit(home, n)
        n += 1
        live += messages(n - 1)
        assembled = ok("context.assemble", home, session_key=KEY, token_budget=BUDGET, messages=live)
        assert assembled["estimatedTokens"] <= BUDGET
    assert model.prompts == []
    assert debt(home)[0] == 1

    # maintain is where the model works: every interim summary is re-summarized.
    model.delay = 0.0
    maintained = ok("session.maintain", home, session_key=KEY, token_budget=BUDGET)
    assert model.prompts, "maintain did not call the model"
    assert maintained["interim"]["refined"] > 0 and maintained["interim"]["remaining"] == 0
    assert INTERIM_MODEL not in models(home)
    assert debt(home)[:2] == (0, 0)
    with db(home) as conn:
        check_invariants(conn, 1)
        refined = maintained["interim"]["summaryIds"][0]
        content, tokens = conn.execute(
            "SELECT content, token_count FROM summaries WHERE summary_id = ?", (refined,)
        ).fetchone()
        assert content == MODEL_SUMMARY and tokens > 0
        assert conn.execute(
            "SELECT content FROM summaries_fts WHERE summary_id = ?", (refined,)
        ).fetchone() == (MODEL_SUMMARY,)
    assert stored_tokens(home) <= BUDGET


def test_after_turn_in_either_mode_never_reaches_the_model(tmp_path: Path, model: SlowModel) -> None:
    for mode in ("deferred", "inline"):
        home = home_with(tmp_path / mode, proactiveThresholdCompactionMode=mode)
        live: list[dict[str, Any]] = []
        recorded = 0
        for i in range(30):
            pre = len(live)
            live += messages(i)
            data = ok(
                "session.after_turn",
                home,
                session_id="s1",
                session_key=KEY,
                messages=live,
                pre_prompt_message_count=pre,
                token_budget=BUDGET,
            )
            recorded += bool(data["debt"])
            if mode == "inline" and data["compaction"] is not None:
                assert data["compaction"]["summarizer"] == INTERIM_MODEL
        assert model.prompts == []
        assert recorded > 0 and debt(home)[0] == 1
        if mode == "inline":
            assert set(models(home)) == {INTERIM_MODEL}
        else:
            assert models(home) == {}


def test_commit_turn_records_debt_even_in_inline_mode(tmp_path: Path, model: SlowModel) -> None:
    # As lossless-claw 1.0: commitTurn always takes the deferred route.
    home = home_with(tmp_path, proactiveThresholdCompactionMode="inline")
    data: dict[str, Any] = {}
    for n in range(30):
        data = commit(home, n)
        assert data["compaction"] is None
    assert data["debt"] == {"recorded": True, "reason": "threshold"}
    assert model.prompts == [] and models(home) == {}


def test_the_stand_in_drain_keeps_the_models_retry_backoff(tmp_path: Path, model: SlowModel) -> None:
    home = home_with(tmp_path)
    n = 0
    while stored_tokens(home) <= BUDGET:
        commit(home, n)
        n += 1
    with Store.open(home / "lcm.db") as store:
        store.set_maintenance(1, retry_attempts=3, next_attempt_after="2999-01-01T00:00:00.000Z")
    assembled = ok("context.assemble", home, session_key=KEY, token_budget=BUDGET, messages=messages(n - 1))
    # Forced past the backoff (it spends nothing), which it leaves for the model's drains.
    assert assembled["details"]["debt"]["emergencyDrain"]["changed"] is True
    assert debt(home) == (1, 0, "threshold", 3, "2999-01-01T00:00:00.000Z")
    assert model.prompts == []


def test_maintain_holds_no_lock_while_the_model_answers(tmp_path: Path, model: SlowModel) -> None:
    home = home_with(tmp_path)
    n = 0
    while stored_tokens(home) <= BUDGET:
        commit(home, n)
        n += 1
    model.gate = threading.Event()
    result: dict[str, Any] = {}
    maintainer = threading.Thread(
        target=lambda: result.update(ok("session.maintain", home, session_key=KEY, token_budget=BUDGET))
    )
    maintainer.start()
    try:
        assert model.asked.wait(30)
        # The model is answering (held by the gate): a turn and an assemble of the same
        # session go through meanwhile.
        turn = threading.Thread(target=lambda: result.update(turn=commit(home, n)))
        turn.start()
        turn.join(20)
        assert not turn.is_alive(), "commit-turn waited for the model"
        assert result["turn"]["status"] == "committed"
        assert not model.gate.is_set()
        assembled = ok("context.assemble", home, session_key=KEY, token_budget=BUDGET, messages=messages(n))
        assert assembled["estimatedTokens"] <= BUDGET
    finally:
        model.gate.set()
        maintainer.join(60)
    assert not maintainer.is_alive()
    with db(home) as conn:
        check_invariants(conn, 1)
    # The turn recorded debt while the drain ran: it is still owed.
    assert debt(home)[0] == 1


class _RecordsDebtMeanwhile(HeadSummarizer):
    """A summarizer during whose call a turn records new debt (another connection)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def summarize(self, request: SummaryRequest) -> str:
        if len(self.calls) == 0:
            with Store.open(self.path) as other:
                record_debt(other, 1, reason="threshold", token_budget=BUDGET, now=None)
        return super().summarize(request)


def _seeded(tmp_path: Path) -> Path:
    from tests.support.compaction_sim import new_conversation, turn_rows

    path = tmp_path / "lcm.db"
    with Store.open(path) as store:
        cid = new_conversation(store)
        store.add_messages(cid, turn_rows(0, 120))
        record_debt(store, cid, reason="threshold", token_budget=BUDGET, now=None)
    return path


def test_debt_recorded_while_a_drain_runs_stays_pending(tmp_path: Path) -> None:
    path = _seeded(tmp_path)
    with Store.open(path) as store:
        out = drain_debt(Compactor(store, 1, effective(), _RecordsDebtMeanwhile(path)), token_budget=BUDGET)
        assert out["changed"] is True
        row = store.conn.execute(
            "SELECT pending, running FROM conversation_compaction_maintenance"
        ).fetchone()
    assert tuple(row) == (1, 0)


def test_a_stand_in_drain_keeps_the_debt_and_a_model_drain_refines_it(tmp_path: Path) -> None:
    path = _seeded(tmp_path)
    with Store.open(path) as store:
        out = drain_debt(Compactor(store, 1, effective(), InterimSummarizer()), token_budget=BUDGET)
        assert out["changed"] is True
        pending = store.conn.execute("SELECT pending FROM conversation_compaction_maintenance").fetchone()[0]
        assert pending == 1
        interim_ids = [
            r[0]
            for r in store.conn.execute("SELECT summary_id FROM summaries WHERE model = ?", (INTERIM_MODEL,))
        ]
        assert interim_ids
        head = HeadSummarizer()
        out = drain_debt(Compactor(store, 1, effective(), head), token_budget=BUDGET)
        assert out["interim"]["refined"] == len(interim_ids) and out["interim"]["remaining"] == 0
        # Bottom-up: every leaf is re-summarized before any condensed node.
        depths = [r.depth for r in head.calls[: len(interim_ids)]]
        assert depths == sorted(depths)
        kept = {r[0]: r[1] for r in store.conn.execute("SELECT summary_id, model FROM summaries")}
        assert all(kept[sid] == "test/head" for sid in interim_ids)
        assert store.conn.execute(
            "SELECT pending, running FROM conversation_compaction_maintenance"
        ).fetchone() == (
            0,
            0,
        )
        check_invariants(store.conn, 1)
