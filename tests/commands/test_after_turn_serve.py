"""`session.after_turn` driven through a real `lcm serve --stdio`, as the OpenClaw shim drives it.

A long conversation (1,000 turns: each an after-turn with the host's growing live list,
an assemble every few turns) under a small budget, in both threshold modes, checking
that nothing is lost, the context stays under budget, the fresh tail is intact and the
summary DAG is well formed; and a `kill -9` of the server in the middle of the background
drain that follows a turn (a slow summarizer endpoint on 127.0.0.1: no turn calls it),
after which the database is consistent and the next turn completes.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.commands.test_doors import Client
from tests.engine.summarize.test_openai_compat import Endpoint, reply
from tests.support.compaction_sim import check_invariants

pytestmark = pytest.mark.slow  # a thousand turns through a real `lcm serve`

KEY = "agent:main:main"
BUDGET = 3000
TAIL = 8
CONFIG = {
    "freshTailCount": TAIL,
    "leafChunkTokens": 1000,
    "leafTargetTokens": 100,
    "condensedTargetTokens": 80,
    "leafMinFanout": 4,
    "condensedMinFanout": 3,
}


def home_with(tmp_path: Path, **config: Any) -> Path:
    home = tmp_path / "oc"
    home.mkdir()
    entry = {"enabled": True, "config": {**CONFIG, **config}}
    (home / "openclaw.json").write_text(json.dumps({"plugins": {"entries": {"lossless-claw": entry}}}))
    return home


def turn(i: int) -> list[dict[str, Any]]:
    words = " ".join(f"t{(i * 7 + k) % 89}" for k in range(24))
    return [
        {"role": "user", "content": f"q{i} {words}"},
        {"role": "assistant", "content": f"a{i} {words}"},
    ]


class Session:
    """The host side: the live message list and a request counter."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.live: list[dict[str, Any]] = []
        self.next_id = 0

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        answer = self.client.ask(self.next_id, method, params)
        assert "result" in answer, answer
        data: dict[str, Any] = answer["result"]["data"]
        return data

    def after_turn(self, i: int) -> dict[str, Any]:
        pre = len(self.live)
        self.live.extend(turn(i))
        params = {
            "sessionId": "s1",
            "sessionKey": KEY,
            "messages": self.live,
            "prePromptMessageCount": pre,
            "tokenBudget": BUDGET,
        }
        return self.ask("session.after_turn", params)

    def assemble(self) -> dict[str, Any]:
        # The host passes its live history: with debt pending near the budget the engine
        # answers with it (a degraded result, docs/reference/engine.md §6.1 step 8).
        return self.ask("context.assemble", {"sessionKey": KEY, "tokenBudget": BUDGET, "messages": self.live})


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def stored_tokens(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT COALESCE(SUM(COALESCE(m.token_count, s.token_count)), 0) FROM context_items c"
        " LEFT JOIN messages m ON m.message_id = c.message_id LEFT JOIN summaries s ON s.summary_id = c.summary_id"
    ).fetchone()
    return int(row[0])


def check_database(home: Path, live: list[dict[str, Any]]) -> sqlite3.Connection:
    """Nothing lost, DAG invariants, fresh tail intact; returns the open connection."""
    conn = sqlite3.connect(f"file:{home / 'lcm.db'}?mode=ro", uri=True)
    (cid,) = conn.execute("SELECT conversation_id FROM conversations").fetchone()
    contents = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
    assert contents == [m["content"] for m in live], "a message was lost, duplicated or reordered"
    check_invariants(conn, cid)
    newest = [
        r[0] for r in conn.execute("SELECT message_id FROM messages ORDER BY seq DESC LIMIT ?", (TAIL,))
    ]
    tail = [
        r[0]
        for r in conn.execute("SELECT message_id FROM context_items ORDER BY ordinal DESC LIMIT ?", (TAIL,))
    ]
    assert tail == newest, "the fresh tail is not the newest raw messages"
    return conn


def wait_for_no_debt(home: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conn = sqlite3.connect(f"file:{home / 'lcm.db'}?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT pending, running FROM conversation_compaction_maintenance").fetchone()
        finally:
            conn.close()
        if row is not None and row == (0, 0):
            return
        time.sleep(0.05)
    raise AssertionError(f"the deferred debt was not drained in the background: {row}")


@pytest.mark.parametrize("mode", ["deferred", "inline"])
def test_a_thousand_turns_through_serve_lose_nothing_and_stay_under_budget(tmp_path: Path, mode: str) -> None:
    home = home_with(tmp_path, proactiveThresholdCompactionMode=mode)
    client = Client(home)
    try:
        session = Session(client)
        recorded = compacted = 0
        for i in range(1000):
            data = session.after_turn(i)
            assert data["ingest"]["ingested"] == 2 and data["mode"] == mode
            recorded += bool(data["debt"])
            compacted += bool(data["compaction"] and data["compaction"]["compacted"])
            if i % 25 == 24:
                assembled = session.assemble()
                assert assembled["estimatedTokens"] <= BUDGET
                texts = [text_of(m["content"]) for m in assembled["messages"]]
                assert session.live[-2]["content"] in texts  # the newest prompt is in the context
            if i % 250 == 249:
                if mode == "deferred":
                    wait_for_no_debt(home)
                conn = check_database(home, session.live)
                try:
                    assert stored_tokens(conn) <= BUDGET
                finally:
                    conn.close()
        if mode == "deferred":
            assert recorded > 10 and compacted == 0  # every compaction ran in the background drain
            wait_for_no_debt(home)
        else:
            assert compacted > 10 and recorded == 0
        conn = check_database(home, session.live)
        try:
            assert stored_tokens(conn) <= BUDGET
            depths = {r[0] for r in conn.execute("SELECT depth FROM summaries")}
            assert {0, 1} <= depths  # leaves and condensed nodes: a real DAG
        finally:
            conn.close()
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def test_a_burst_of_after_turns_is_drained_in_the_background_once_idle(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    client = Client(home)
    try:
        session = Session(client)
        recorded = 0
        for i in range(60):
            recorded += bool(session.after_turn(i)["debt"])
        assert recorded > 0
        wait_for_no_debt(home)
        conn = check_database(home, session.live)
        conn.close()
        # A burst: every after-turn is sent before any answer is read, so each finds the
        # next one already queued and leaves the drain to the last.
        first = session.next_id + 1
        for i in range(60, 90):
            pre = len(session.live)
            session.live.extend(turn(i))
            session.next_id += 1
            params = {
                "sessionId": "s1",
                "sessionKey": KEY,
                "messages": session.live,
                "prePromptMessageCount": pre,
                "tokenBudget": BUDGET,
            }
            client.send({"id": session.next_id, "method": "session.after_turn", "params": params})
        answers = [client.read() for _ in range(first, session.next_id + 1)]
        assert all("result" in a for a in answers)
        wait_for_no_debt(home)
        check_database(home, session.live).close()
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def test_kill_9_during_a_background_drain_leaves_a_consistent_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before issue 30 this killed an inline compaction: the turn itself called the slow
    # model. No turn calls a model now, in either mode; the model runs in the drain the
    # server starts after answering the turn (its follow-up), and that is what is killed.
    endpoint = Endpoint()
    home = home_with(tmp_path, proactiveThresholdCompactionMode="inline", summaryModel="slow-model")
    monkeypatch.setenv("LCM_SUMMARIZER", "openai")
    monkeypatch.setenv("LCM_SUMMARY_BASE_URL", endpoint.base_url)
    # No preparation between turns here (its own kill test is tests/engine/compaction/pending):
    # the model is called only by the drain this test kills.
    monkeypatch.setenv("LCM_PENDING_PREPARATION_BUDGET_MS", "0")
    client = None
    try:
        client = Client(home)
        session = Session(client)
        # Below the threshold: no summarizer call yet.
        i = 0
        while True:
            data = session.after_turn(i)
            i += 1
            if data["threshold"]["currentTokens"] > 0.6 * BUDGET:
                break
        assert not endpoint.requests
        # Every summary answer now takes 0.4 s. The turn that crosses the threshold is
        # answered after a local (interim) compaction; the drain that follows asks the model.
        endpoint.script = [{"sleep": 0.4, **reply("a slow summary of the turns")} for _ in range(40)]
        while True:
            data = session.after_turn(i)
            i += 1
            if data["debt"]:
                assert data["compaction"]["summarizer"] == "extractive-interim"
                break
        deadline = time.monotonic() + 10
        while not endpoint.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert endpoint.requests  # the background drain called the model
        time.sleep(0.6)  # a pass or two may commit; another summary call is in flight
        client.proc.kill()
        client.proc.wait()
        assert len(endpoint.requests) >= 1

        conn = sqlite3.connect(home / "lcm.db")
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            (cid,) = conn.execute("SELECT conversation_id FROM conversations").fetchone()
            check_invariants(conn, cid)
            stored = [r[0] for r in conn.execute("SELECT content FROM messages ORDER BY seq")]
        finally:
            conn.close()
        # Every answered turn's messages are stored.
        assert stored == [m["content"] for m in session.live]

        # Restart with a fast endpoint: the next turn completes, compaction included.
        endpoint.script = []
        client = Client(home)
        session.client = client
        data = session.after_turn(i)
        assert data["ingest"]["ingested"] == 2
        if data["compaction"] is not None:
            assert data["compaction"]["ok"] is True
        compacted = session.ask(
            "session.compact", {"sessionKey": KEY, "tokenBudget": BUDGET, "apply": True, "manual": True}
        )
        assert compacted["ok"] is True
        # The killed drain left its row running; the host's maintain pays it with the model.
        maintained = session.ask("session.maintain", {"sessionKey": KEY, "tokenBudget": BUDGET})
        assert maintained["reason"] != "no deferred compaction debt", maintained
        wait_for_no_debt(home)
        conn = check_database(home, session.live)
        try:
            assert conn.execute(
                "SELECT COUNT(*) FROM summaries WHERE model = 'extractive-interim'"
            ).fetchone() == (0,)
        finally:
            conn.close()
        assert client.close() == 0
    finally:
        if client is not None and client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        endpoint.close()
