"""`session.commit_turn`: OpenClaw 2026.8+'s durable turn, atomic and idempotent by key.

Driven through the doors the host uses (`lcm serve --stdio`, `lcm hook`) against real
SQLite files: a first commit stores the turn and its ledger row, a retry is a
``duplicate``, a reused key with another turn is refused with nothing written, a kill at
any instant leaves the turn whole or absent, and the ledger's payload hash is the one
lossless-claw 1.0 computes (checked against Node's own JSON.stringify/localeCompare).
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.session.turns import payload_hash
from tests.commands.test_doors import LCM, Client, hook

KEY = "agent:main:explicit:s1"


def turn(n: int, *, words: int = 3) -> dict[str, Any]:
    """The host's commitTurn payload for turn ``n`` (two messages, positions 2n..2n+1)."""
    body = " ".join(f"w{n}-{k}" for k in range(words))
    common = {"agentId": "main", "sessionId": "s1", "sessionKey": KEY, "storePath": "/nowhere.sqlite"}
    return {
        "advancementKey": f"turn-{n}",
        "admission": {
            **common,
            "generation": "g1",
            "entryId": f"u{n}",
            "rawSeq": 10 + 2 * n,
            "activeMessagePosition": 0 if n == 0 else 2 * n,
            "logicalTurnId": f"turn-{n}",
            "role": "user",
        },
        "terminal": {**common, "generation": "g1", "entryId": f"a{n}", "activeMessagePosition": 2 * n + 1},
        "messages": [
            {"role": "user", "content": f"question {n}: {body}", "timestamp": 1796172403934 + n},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer {n}: {body}"}],
                "usage": {"input": 10, "output": 5, "cost": {"total": 0.00015}},
                "timestamp": 1796172404934 + n,
            },
        ],
        "sessionId": "s1",
        "sessionKey": KEY,
        "isHeartbeat": False,
    }


def rows(db: Path) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    conn = sqlite3.connect(db)
    try:
        messages = conn.execute("SELECT role, content FROM messages ORDER BY seq").fetchall()
        ledger = conn.execute(
            "SELECT advancement_key, message_count FROM turn_advancements ORDER BY advancement_key"
        ).fetchall()
        return messages, ledger
    finally:
        conn.close()


def test_commit_then_retry_is_duplicate_and_a_reused_key_is_refused(tmp_path: Path) -> None:
    client = Client(tmp_path)
    try:
        first = client.ask(1, "session.commit_turn", turn(0))
        assert first["result"]["data"]["status"] == "committed", first
        assert first["result"]["data"]["ingest"]["ingested"] == 2
        again = client.ask(2, "session.commit_turn", turn(0))
        assert again["result"]["data"]["status"] == "duplicate"
        assert client.ask(3, "session.commit_turn", turn(1))["result"]["data"]["status"] == "committed"
        other = turn(1)
        other["messages"][0]["content"] = "a different turn under the same key"
        refused = client.ask(4, "session.commit_turn", other)
        assert refused["error"]["code"] == "TURN_ADVANCEMENT_CONFLICT"
    finally:
        assert client.close() == 0
    messages, ledger = rows(tmp_path / "lcm.db")
    assert [m[0] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0][1].startswith("question 0") and messages[3][1].startswith("answer 1")
    assert ledger == [("turn-0", 2), ("turn-1", 2)]
    conn = sqlite3.connect(tmp_path / "lcm.db")
    stored = conn.execute(
        "SELECT session_id, session_key, admission_entry_id, terminal_entry_id, payload_hash"
        " FROM turn_advancements WHERE advancement_key = 'turn-1'"
    ).fetchone()
    conn.close()
    expected = payload_hash(
        {"admission": turn(1)["admission"], "terminal": turn(1)["terminal"], "messages": turn(1)["messages"]},
        session_id="s1",
        session_key=KEY,
        is_heartbeat=False,
    )
    assert stored == ("s1", KEY, "u1", "a1", expected)


def test_hook_door_and_exit_statuses(tmp_path: Path) -> None:
    done = hook(tmp_path, "session.commit_turn", json.dumps(turn(0)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["status"] == "committed"
    clash = turn(0)
    clash["messages"][1]["content"] = "changed"
    done = hook(tmp_path, "session.commit_turn", json.dumps(clash))
    assert done.returncode == 4
    assert json.loads(done.stderr)["error"]["code"] == "TURN_ADVANCEMENT_CONFLICT"
    assert rows(tmp_path / "lcm.db")[1] == [("turn-0", 2)]


@pytest.mark.parametrize(
    "change,code",
    [
        (lambda t: t["admission"].update(logicalTurnId="another"), "INVALID_ARGUMENT"),
        (lambda t: t["terminal"].update(activeMessagePosition=7), "INVALID_ARGUMENT"),
        (lambda t: t["terminal"].update(generation="g2"), "INVALID_ARGUMENT"),
        (lambda t: t.update(advancementKey=""), "INVALID_ARGUMENT"),
        (lambda t: t.update(messages=["not a message", {"role": "user", "content": "x"}]), "INVALID_INPUT"),
        (lambda t: t.update(admission="{not json"), "INVALID_INPUT"),
    ],
    ids=["key-not-admitted", "range-mismatch", "target-changed", "empty-key", "bad-message", "bad-admission"],
)
def test_inconsistent_turns_are_refused_before_anything_is_written(
    tmp_path: Path, change: Any, code: str
) -> None:
    payload = turn(0)
    change(payload)
    done = hook(tmp_path, "session.commit_turn", json.dumps(payload))
    assert done.returncode == 2, done.stdout
    assert json.loads(done.stderr)["error"]["code"] == code
    assert not (tmp_path / "lcm.db").exists()


def test_an_ignored_session_is_acknowledged_without_writing(tmp_path: Path) -> None:
    config = {
        "plugins": {
            "entries": {"lossless-claw": {"config": {"ignoreSessionPatterns": ["agent:main:explicit:*"]}}}
        }
    }
    (tmp_path / "openclaw.json").write_text(json.dumps(config))
    done = hook(tmp_path, "session.commit_turn", json.dumps(turn(0)))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert data["status"] == "committed" and data["reason"] == "session excluded"
    assert not (tmp_path / "lcm.db").exists()


def test_a_kill_at_any_instant_leaves_the_turn_whole_or_absent(tmp_path: Path) -> None:
    """SIGKILL mid-commit (a large turn), then the host's retry: stored exactly once."""
    big = turn(5, words=4000)
    big["messages"] = big["messages"] * 1  # two large messages
    payload = json.dumps(big).encode()
    rng = random.Random(7)
    outcomes = set()
    for attempt in range(8):
        state = tmp_path / f"run{attempt}"
        state.mkdir()
        assert hook(state, "session.commit_turn", json.dumps(turn(0))).returncode == 0
        proc = subprocess.Popen(
            [*LCM, "--openclaw-dir", str(state), "hook", "session.commit_turn"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        proc.stdin.write(payload)
        proc.stdin.close()
        time.sleep(rng.uniform(0.05, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        messages, ledger = rows(state / "lcm.db")
        committed = ("turn-5", 2) in ledger
        outcomes.add(committed)
        assert len(messages) == (4 if committed else 2)  # whole, or absent
        retry = hook(state, "session.commit_turn", payload.decode())
        assert retry.returncode == 0, retry.stderr
        assert json.loads(retry.stdout)["data"]["status"] == ("duplicate" if committed else "committed")
        messages, ledger = rows(state / "lcm.db")
        assert len(messages) == 4 and ledger == [("turn-0", 2), ("turn-5", 2)]
        conn = sqlite3.connect(state / "lcm.db")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()


# lossless-claw 1.0's receipt hash, written from its documented rule: sha256 of
# JSON.stringify of the payload with undefined members dropped and object keys sorted
# with localeCompare, recursively.
_NODE_HASH = r"""
const { createHash } = require("node:crypto");
const canon = (v) => Array.isArray(v) ? v.map(canon)
  : v && typeof v === "object"
    ? Object.fromEntries(Object.entries(v).filter(([, e]) => e !== undefined)
        .sort(([a], [b]) => a.localeCompare(b)).map(([k, e]) => [k, canon(e)]))
    : v;
let input = "";
process.stdin.on("data", (c) => (input += c)).on("end", () => {
  const p = JSON.parse(input);
  const payload = canon({ admission: p.admission, isHeartbeat: p.isHeartbeat === true, messages: p.messages,
    sessionId: p.sessionId, sessionKey: p.sessionKey, terminal: p.terminal });
  process.stdout.write(createHash("sha256").update(JSON.stringify(payload)).digest("hex"));
});
"""


def test_payload_hash_is_the_one_node_computes() -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed for the hash parity test (CI machines have it)"
    payload = turn(3)
    payload["messages"][0]["__openclaw"] = {"senderIsOwner": True, "Zeta": 1, "alpha": [1, {"b": 2, "B": 3}]}
    payload["messages"][0]["content"] = 'naïve café ☕ 漢字 \u2028 tab\t quote" back\\slash'
    payload["messages"][1]["_private"] = "x"
    payload["messages"][1]["idempotencyKey"] = "turn-3:assistant"
    done = subprocess.run(
        [node, "-e", _NODE_HASH], input=json.dumps(payload), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    ours = payload_hash(
        {"admission": payload["admission"], "terminal": payload["terminal"], "messages": payload["messages"]},
        session_id="s1",
        session_key=KEY,
        is_heartbeat=False,
    )
    assert ours == done.stdout


def test_first_assemble_on_a_fresh_state_dir_is_not_an_error(tmp_path: Path) -> None:
    live = [{"role": "user", "content": "first ever message"}]
    done = hook(
        tmp_path, "context.assemble", json.dumps({"sessionId": "s1", "sessionKey": KEY, "messages": live})
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert data["messages"] == live and data["reason"] == "no conversation found for session"
    done = hook(tmp_path, "session.maintain", json.dumps({"sessionId": "s1", "sessionKey": KEY}))
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "lcm.db").exists()
    # An operator naming a session by key alone still hears that the database is missing.
    done = subprocess.run(
        [*LCM, "--openclaw-dir", str(tmp_path), "context", "show", "--session-key", KEY],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 3 and json.loads(done.stderr)["error"]["code"] == "DATABASE_NOT_FOUND"


# --- first sight of a session whose history lives in the host's SQLite store ------------


def host_events(session_id: str, turns: int, *, big_every: int = 0) -> list[str]:
    """A v4 transcript as a 2026.9 host stores it: header, then user/assistant pairs."""
    events = [
        json.dumps(
            {"type": "session", "version": 4, "id": session_id, "timestamp": "2026-12-01T10:00:00.000Z"}
        )
    ]
    parent = None
    for n in range(turns):
        for role, text in (("user", f"old question {n}"), ("assistant", f"old answer {n}")):
            entry = f"{role[0]}{n}"
            if big_every and n % big_every == 0:
                text += " " + "padding " * 400  # zstd-compressed in the store
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            message = {"role": role, "content": content, "timestamp": 1796100000000 + 1000 * len(events)}
            events.append(
                json.dumps(
                    {
                        "type": "message",
                        "id": entry,
                        "parentId": parent,
                        "timestamp": "2026-12-01T10:00:00.000Z",
                        "message": message,
                    }
                )
            )
            parent = entry
    return events


def make_host(tmp_path: Path, session_id: str, turns: int) -> tuple[Path, Path]:
    from tests.support.host_store import add_session, create_store

    state = tmp_path / "state"
    store = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = create_store(store)
    add_session(conn, session_id, host_events(session_id, turns, big_every=2), session_key=KEY)
    conn.close()
    return state, store


def stored(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return [(r, c[:30]) for r, c in conn.execute("SELECT role, content FROM messages ORDER BY seq")]
    finally:
        conn.close()


def test_first_commit_of_a_session_imports_its_history_from_the_host_store(tmp_path: Path) -> None:
    state, store = make_host(tmp_path, "s1", turns=4)
    before = store.read_bytes()
    payload = turn(4)
    payload["admission"].update(storePath=str(store), rawSeq=9)  # history: seqs 0..8
    payload["terminal"]["storePath"] = str(store)
    done = hook(state, "session.commit_turn", json.dumps(payload))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert data["status"] == "committed" and data["bootstrap"]["importedMessages"] == 8
    rows = stored(state / "lcm.db")
    assert [r for r, _ in rows] == ["user", "assistant"] * 5
    assert rows[0][1] == "old question 0 padding padding" and rows[7][1].startswith("old answer 3")
    assert rows[8][1].startswith("question 4") and rows[9][1].startswith("answer 4")
    # Later turns arrive through commitTurn alone: the store is not read again.
    later = turn(5)
    later["admission"]["storePath"] = later["terminal"]["storePath"] = str(store)
    data = json.loads(hook(state, "session.commit_turn", json.dumps(later)).stdout)["data"]
    assert data["bootstrap"] is None and data["ingest"]["ingested"] == 2
    assert store.read_bytes() == before  # the host's store is only read


def test_host_bootstrap_naming_a_session_not_a_file_reads_the_store_once(tmp_path: Path) -> None:
    state, store = make_host(tmp_path, "s1", turns=3)
    params = {"sessionId": "s1", "sessionKey": KEY, "sessionFile": KEY, "hostStore": str(store.parent)}
    first = hook(state, "session.bootstrap", json.dumps(params))
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)["data"]
    assert data["source"] == "sqlite" and data["importedMessages"] == 6
    again = json.loads(hook(state, "session.bootstrap", json.dumps(params)).stdout)["data"]
    assert again["importedMessages"] == 0 and again["reason"].startswith("conversation exists")
    assert len(stored(state / "lcm.db")) == 6
    # Found from the session key alone (agent:main:...), as when the host names nothing.
    other = tmp_path / "other"
    shutil.copytree(state / "agents", other / "agents")
    done = hook(other, "session.bootstrap", json.dumps({"sessionId": "s1", "sessionKey": KEY}))
    assert json.loads(done.stdout)["data"]["importedMessages"] == 6
