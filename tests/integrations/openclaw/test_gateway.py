"""The long-running OpenClaw Gateway with lcm as its context engine, as people run it.

One Gateway per test, many cheap turns through it (``tests/support/openclaw_gateway.py``):
the turns survive an in-place restart, a ``kill -9`` of ``lcm serve`` mid-turn and another
process opening lcm.db between turns; a long session in a small window compacts inside the
host without starving any reply; ``/new`` and ``/reset`` reach lcm with the host's real hook
signatures; the model calls lcm's recall tools.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.openclaw_gateway import Gateway
from tests.support.openclaw_host import (
    HOST_VERSIONS,
    HostRun,
    StubModel,
    ensure_host,
    lcm_serve_pids,
    stored_messages,
    tool_call,
)

pytestmark = pytest.mark.slow

NEWEST, OLDEST = HOST_VERSIONS[0], HOST_VERSIONS[-1]
REPLY_RESERVE = 1000  # the stub model's maxTokens: what the host asks for while the prompt fits
# A small window's settings, as its users write them, in lcm's own plugin entry.
SMALL_WINDOW = {"freshTailCount": 8, "leafChunkTokens": 4000, "callTimeoutMs": 10000}


def key(session_id: str) -> str:
    return f"agent:main:explicit:{session_id}"


def configure(run: HostRun, settings: dict[str, Any]) -> None:
    config = json.loads(run.config.read_text())
    config["plugins"]["entries"]["lcm"]["config"] = settings
    run.config.write_text(json.dumps(config, indent=1))


def neighbour(db: Path) -> None:
    """Another process opens lcm.db read-write and closes it (the sqlite3 shell, a script)."""
    code = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM messages'); c.close()"
    subprocess.run([sys.executable, "-c", code, str(db)], check=True, timeout=60)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def turn_latency(run: HostRun) -> dict[str, float]:
    """p50/p95 of the time a turn waited on lcm: its bootstrap, assembles and commitTurn
    (maintain runs in the background, after the reply)."""
    per_turn: list[float] = []
    current = 0.0
    for line in run.trace_lines():
        if line["method"] == "session.maintain":
            continue
        current += line["ms"]
        if line["method"] == "session.commit_turn" and line["ok"]:
            per_turn.append(current)
            current = 0.0
    return {
        "turns": len(per_turn),
        "p50": round(percentile(per_turn, 0.5), 1),
        "p95": round(percentile(per_turn, 0.95), 1),
    }


def test_the_gateway_stores_every_turn_once_through_restart_kill_and_neighbours(tmp_path: Path) -> None:
    host = ensure_host(NEWEST)
    with StubModel() as model:
        run = HostRun(host, tmp_path, model)
        configure(run, SMALL_WINDOW)
        gateway = Gateway(run)
        killed: list[int] = []

        def kill_serve(n: int, body: dict[str, Any]) -> None:
            if killing and not killed:  # the host waits for the model: lcm serve is up
                for pid in lcm_serve_pids(str(run.db)):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)

        model.on_request = kill_serve
        killing = False
        expected: list[tuple[str, str]] = []
        with gateway:
            startup = gateway.log()
            assert "warn" not in startup.lower().replace("tool-search", ""), startup[-3000:]
            for n in range(24):
                if n == 8:
                    gateway.restart()
                killing = n == 14
                # Long messages: the 32k window fills within a dozen turns.
                message = f"turn {n}: " + " ".join(f"w{n}x{k}" for k in range(600))
                turn = gateway.turn("g1", message)
                assert turn.ok and turn.text, turn.detail
                expected += [("user", message), ("assistant", turn.text)]
                neighbour(run.db)
                assert stored_messages(run.db, key("g1")) == expected, f"after turn {n}"
            assert killed, "lcm serve was never killed mid-turn"
            # The model always got its full reply budget: compaction ran before the window filled.
            budgets = [r.get("max_completion_tokens") for r in model.chat_requests()]
            assert budgets and all(b == REPLY_RESERVE for b in budgets), budgets
            with contextlib.closing(sqlite3.connect(f"file:{run.db}?mode=ro", uri=True)) as conn:
                assert conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] > 0
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert "degraded to" not in gateway.log()
            latency = turn_latency(run)
            check_recall_tools(gateway, model)
            check_new_and_reset(gateway, model)
        print(f"\nGateway turns: {len(expected) // 2}; lcm per turn (ms): {latency}")
        assert stored_messages(run.db, key("g1")) == expected


def check_recall_tools(gateway: Gateway, model: StubModel) -> None:
    """The model calls each of lcm's recall tools (through the host's Tool Search) and reads
    lcm's answer in its next request."""
    with contextlib.closing(sqlite3.connect(f"file:{gateway.run.db}?mode=ro", uri=True)) as conn:
        summary = str(
            conn.execute("SELECT summary_id FROM summaries ORDER BY created_at LIMIT 1").fetchone()[0]
        )
    calls = {
        "lcm_grep": ({"pattern": "w3x7", "allConversations": True}, "## LCM Grep Results"),
        "lcm_describe": ({"id": summary, "allConversations": True}, f"LCM_SUMMARY {summary}"),
        "lcm_expand": ({"summaryIds": [summary], "allConversations": True}, "## Expansion Results"),
        "lcm_expand_query": (
            {
                "prompt": "Which words did turn 3 use?",
                "query": "w3x7",
                "allConversations": True,
                "timeoutMs": 30000,
            },
            "citedIds",
        ),
    }
    for name, (arguments, expected) in calls.items():
        model.script += [tool_call(name, arguments), f"read the {name} answer"]
        turn = gateway.turn("tools", f"please use {name}")
        assert turn.ok and turn.text == f"read the {name} answer", turn.detail
        answers = [m for m in model.chat_requests()[-1]["messages"] if m["role"] == "tool"]
        assert answers, model.chat_requests()[-1]["messages"]
        # The host wraps the tool's answer ({"tool": ..., "result": {"content": [...]}}) and
        # cuts a long one; the tool's own text is inside.
        text = str(answers[-1]["content"])
        assert f'"name": "{name}"' in text and expected in text, f"{name} answered: {text[:1500]}"
        assert "w3x7" in text or name != "lcm_grep", text[:1500]


def _context_texts(db: Path, session_key: str) -> list[str]:
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("lcm")),
            "--db",
            str(db),
            "context",
            "show",
            "--session-key",
            session_key,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.dumps(m.get("content")) for m in json.loads(done.stdout)["data"]["messages"]]


def _conversations(db: Path, session_key: str) -> list[tuple[int, int, str | None]]:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT conversation_id, active, archive_cause FROM conversations WHERE session_key = ?"
            " ORDER BY conversation_id",
            (session_key,),
        ).fetchall()
    return [(int(r[0]), int(r[1]), r[2]) for r in rows]


def check_new_and_reset(gateway: Gateway, model: StubModel) -> None:
    """`/new` leaves the old messages out of what the model sees next; `/reset` archives the
    conversation and starts another; lcm.db keeps every message either way."""
    run = gateway.run
    first = gateway.agent("r1", "remember the word okapi")
    assert first.ok, first.detail
    assert any("okapi" in text for text in _context_texts(run.db, key("r1")))
    assert gateway.agent("r1", "/new").ok
    assert not any("okapi" in text for text in _context_texts(run.db, key("r1")))
    after_new = gateway.agent("r1", "what was the word?")
    assert after_new.ok, after_new.detail
    request = model.chat_requests()[-1]["messages"]
    assert not any("okapi" in json.dumps(m) for m in request), "the model still sees the old session"
    assert [active for _, active, _ in _conversations(run.db, key("r1"))] == [1]
    assert gateway.agent("r1", "/reset").ok
    conversations = _conversations(run.db, key("r1"))
    assert [(active, cause) for _, active, cause in conversations] == [(0, "manual-reset"), (1, None)]
    assert gateway.agent("r1", "a fresh start").ok
    stored = stored_messages(run.db, key("r1"))
    assert ("user", "remember the word okapi") in stored and ("user", "a fresh start") in stored
    assert "Name the session" not in gateway.log()


def test_new_and_reset_reach_lcm_with_the_hosts_real_hook_signatures(tmp_path: Path) -> None:
    """On the oldest host generation (2026.7.1), whose `/new` gives the session a new id
    under the same key; the newest one is checked in the test above."""
    host = ensure_host(OLDEST)
    with StubModel() as model, Gateway(HostRun(host, tmp_path, model)) as gateway:
        check_new_and_reset(gateway, model)
