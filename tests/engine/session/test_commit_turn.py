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


# --- the hash of every JSON value, as Node computes it from the same wire text ---------

_NODE_HASH_OF_WIRE = r"""
const { createHash } = require("node:crypto");
const canon = (v) => Array.isArray(v) ? v.map(canon)
  : v && typeof v === "object"
    ? Object.fromEntries(Object.entries(v).filter(([, e]) => e !== undefined)
        .sort(([a], [b]) => a.localeCompare(b)).map(([k, e]) => [k, canon(e)]))
    : v;
let input = "";
process.stdin.on("data", (c) => (input += c)).on("end", () => {
  const out = [];
  for (const line of input.split("\n").filter(Boolean)) {
    const p = JSON.parse(line);
    const payload = canon({ admission: p.admission, isHeartbeat: p.isHeartbeat === true, messages: p.messages,
      sessionId: p.sessionId, sessionKey: p.sessionKey, terminal: p.terminal });
    out.push(createHash("sha256").update(JSON.stringify(payload)).digest("hex"));
  }
  process.stdout.write(out.join("\n"));
});
"""

# Number spellings a host's usage records and tool results carry, written as JSON text.
_NUMBERS = [
    "0.000003",
    "3e-06",
    "1e-7",
    "1.0",
    "-0",
    "-0.0",
    "1e21",
    "123456789012345678901234567890",
    "9" * 400,
    "-" + "9" * 400,
    "1.7976931348623157e308",
    "5e-324",
    "0.1",
    "100",
    "2.5e+3",
    "9007199254740993",
]


def _wire_turns() -> list[str]:
    """commitTurn payloads as JSON text (numbers spelled as above), one per line."""
    lines = []
    for n, number in enumerate(_NUMBERS):
        payload = turn(20 + n)
        text = json.dumps(payload)
        usage = (
            '{"cost": NUM, "Zeta": NUM, "input_tokens": 1, "inputTokens": 2, "10": NUM, "2": "two",'
            ' "stop_reason": "x", "stopReason": "y", "\\u00e9t\\u00e9": [NUM, {"b": NUM, "B": 1}]}'
        ).replace("NUM", number)
        text = text.replace('"usage": {', '"usage": {"nested": ' + usage + ", ", 1)
        text = text.replace('"question ', '"naïve ☕ 漢字 \\u2028 \\ud83d\\ude00 question ', 1)
        lines.append(text)
    return lines


def test_payload_hash_equals_nodes_for_every_json_number_and_key_order() -> None:
    from lcm_cli.engine.core.limits import loads_bounded

    node = shutil.which("node")
    assert node, "Node.js is needed for the hash parity test (CI machines have it)"
    lines = _wire_turns()
    done = subprocess.run(
        [node, "-e", _NODE_HASH_OF_WIRE], input="\n".join(lines), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    expected = done.stdout.split("\n")
    for line, node_hash, number in zip(lines, expected, _NUMBERS):
        payload = loads_bounded(line.encode())  # as `lcm serve` reads the request line
        ours = payload_hash(
            {
                "admission": payload["admission"],
                "terminal": payload["terminal"],
                "messages": payload["messages"],
            },
            session_id=payload["sessionId"],
            session_key=payload["sessionKey"],
            is_heartbeat=False,
        )
        assert ours == node_hash, f"the hash differs from Node's for the number {number[:20]}"


def test_a_retry_after_an_engine_switch_with_js_numbers_is_a_duplicate(tmp_path: Path) -> None:
    """lossless-claw 1.0 committed the turn (its receipt hashes a cost the host sent as
    3e-06); the host's retry of that turn reaching lcm is a duplicate, not a key conflict."""
    node = shutil.which("node")
    assert node
    line = _wire_turns()[1]  # the usage numbers spelled "3e-06"
    params = json.loads(line)
    node_hash = subprocess.run(
        [node, "-e", _NODE_HASH_OF_WIRE], input=line, capture_output=True, text=True, timeout=60
    ).stdout
    assert hook(tmp_path, "session.commit_turn", json.dumps(turn(0))).returncode == 0  # the schema
    conn = sqlite3.connect(tmp_path / "lcm.db")
    with conn:
        conn.execute(
            "INSERT INTO turn_advancements (advancement_key, payload_hash, session_id, session_key,"
            " admission_entry_id, terminal_entry_id, message_count) VALUES (?, ?, 's1', ?, 'u', 'a', 2)",
            (params["advancementKey"], node_hash, KEY),
        )
    conn.close()
    client = Client(tmp_path)
    try:
        client.send(('{"id": 1, "method": "session.commit_turn", "params": ' + line + "}\n").encode())
        answer = client.read()
        assert answer["result"]["data"]["status"] == "duplicate", answer
    finally:
        assert client.close() == 0


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t["admission"].update(sessionId=5),
        lambda t: t["admission"].update(sessionKey=["agent:main:x"]),
        lambda t: t["admission"].update(entryId={"id": 1}),
        lambda t: t["admission"].update(activeMessagePosition="8"),
        lambda t: t["admission"].update(rawSeq=-1),
        lambda t: t["terminal"].update(activeMessagePosition=True),
    ],
    ids=["session-id", "session-key", "entry-id", "position-text", "raw-seq-negative", "position-bool"],
)
def test_wrong_types_in_the_anchors_are_invalid_arguments_at_every_door(tmp_path: Path, change: Any) -> None:
    from lcm_cli.engine.api import call
    from lcm_cli.engine.core.errors import LcmError

    payload = turn(4)
    change(payload)
    done = hook(tmp_path, "session.commit_turn", json.dumps(payload))
    assert done.returncode == 2 and json.loads(done.stderr)["error"]["code"] == "INVALID_ARGUMENT"
    client = Client(tmp_path)
    try:
        assert client.ask(1, "session.commit_turn", payload)["error"]["code"] == "INVALID_ARGUMENT"
    finally:
        assert client.close() == 0
    fields = {
        "advancement_key": payload["advancementKey"],
        "admission": payload["admission"],
        "terminal": payload["terminal"],
        "messages": payload["messages"],
        "session_id": "s1",
    }
    with pytest.raises(LcmError) as raised:
        call("session.commit_turn", fields, db=str(tmp_path / "lcm.db"))
    assert raised.value.code == "INVALID_ARGUMENT"
    assert not (tmp_path / "lcm.db").exists()


def test_a_400_digit_number_in_a_message_is_stored_not_an_internal_error(tmp_path: Path) -> None:
    line = json.dumps(turn(0)).replace('"input": 10', '"input": ' + "9" * 400)
    client = Client(tmp_path)
    try:
        client.send(('{"id": 1, "method": "session.commit_turn", "params": ' + line + "}\n").encode())
        answer = client.read()
        assert answer["result"]["data"]["status"] == "committed", answer
        ingest = (
            '{"id": 2, "method": "session.ingest", "params": {"sessionId": "s9", "messages": '
            '[{"role": "user", "content": "x", "timestamp": ' + "9" * 400 + "}]}}\n"
        )
        client.send(ingest.encode())
        assert client.read()["result"]["data"]["ingested"] == 1
    finally:
        assert client.close() == 0


def test_the_answer_says_what_became_of_each_message(tmp_path: Path) -> None:
    """Stored (its row), duplicate (of which row), skipped (why); a provider that reuses a
    response id for a new reply loses nothing."""
    client = Client(tmp_path)
    try:
        first = turn(0)
        first["messages"][1]["responseId"] = "chatcmpl-1"
        data = client.ask(1, "session.commit_turn", first)["result"]["data"]
        assert [m["status"] for m in data["messages"]] == ["stored", "stored"]
        reply_row = data["messages"][1]["messageId"]
        second = turn(1)
        second["messages"][1]["responseId"] = "chatcmpl-1"  # the server restarted and counts from 1
        second["messages"].append({"role": "assistant", "content": "", "stopReason": "aborted"})
        second["terminal"]["activeMessagePosition"] += 1
        data = client.ask(2, "session.commit_turn", second)["result"]["data"]
        assert data["status"] == "committed"
        assert [m["status"] for m in data["messages"]] == ["stored", "stored", "skipped"]
        assert data["messages"][1]["stableKeyCollision"] == {
            "stableEventKey": "assistant-response:chatcmpl-1",
            "messageId": reply_row,
        }
        assert data["messages"][2]["reason"] == "aborted-empty-assistant"
        retry = client.ask(3, "session.commit_turn", second)["result"]["data"]
        assert retry["status"] == "duplicate"
        assert [m["duplicateOf"] for m in retry["messages"][:2]] == [
            m["messageId"] for m in data["messages"][:2]
        ]
    finally:
        assert client.close() == 0
    messages, _ = rows(tmp_path / "lcm.db")
    assert [c[:8] for _, c in messages] == ["question", "answer 0", "question", "answer 1"]


def _import_host_history(state: Path, store: Path, session_id: str) -> None:
    """The host's transcript imported into lcm.db as the other engine (or a bootstrap) does."""
    params = {"sessionId": session_id, "sessionKey": KEY, "hostStore": str(store)}
    done = hook(state, "session.bootstrap", json.dumps(params))
    assert done.returncode == 0, done.stderr


def test_a_turn_retried_from_the_outbox_after_an_engine_switch_is_stored_once(tmp_path: Path) -> None:
    """Turn 4 failed under lcm and waited in the host's outbox; meanwhile the history,
    this turn included, reached lcm.db through the other engine's import of the host's
    transcript. The retry answers duplicates of those rows and stores nothing twice."""
    state, store = make_host(tmp_path, "s1", turns=5)  # the host's transcript holds turn 4 (u4, a4)
    _import_host_history(state, store, "s1")
    before = stored(state / "lcm.db")
    payload = turn(4)
    payload["admission"].update(storePath=str(store), entryId="u4")
    payload["terminal"].update(storePath=str(store), entryId="a4")
    payload["messages"] = [
        {"role": "user", "content": "old question 4 " + "padding " * 400},
        {"role": "assistant", "content": [{"type": "text", "text": "old answer 4 " + "padding " * 400}]},
    ]
    done = hook(state, "session.commit_turn", json.dumps(payload))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["data"]
    assert data["status"] == "committed"
    assert [m["status"] for m in data["messages"]] == ["duplicate", "duplicate"]
    assert all(m["reason"] == "already-stored" and m["duplicateOf"] for m in data["messages"])
    assert stored(state / "lcm.db") == before
    retry = json.loads(hook(state, "session.commit_turn", json.dumps(payload)).stdout)["data"]
    assert retry["status"] == "duplicate" and stored(state / "lcm.db") == before


def test_a_turn_another_engine_stored_without_entry_ids_is_recognised_by_its_timestamps(
    tmp_path: Path,
) -> None:
    other_engine = turn(2)
    done = subprocess.run(
        [*LCM, "--openclaw-dir", str(tmp_path), "ingest", "--session-id", "s1", "--session-key", KEY],
        input=json.dumps(other_engine["messages"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(hook(tmp_path, "session.commit_turn", json.dumps(turn(2))).stdout)["data"]
    assert [m["status"] for m in data["messages"]] == ["duplicate", "duplicate"]
    # The same words at another time are a new turn.
    later = turn(2)
    later["advancementKey"] = later["admission"]["logicalTurnId"] = "turn-2b"
    for message in later["messages"]:
        message["timestamp"] += 60_000
    data = json.loads(hook(tmp_path, "session.commit_turn", json.dumps(later)).stdout)["data"]
    assert [m["status"] for m in data["messages"]] == ["stored", "stored"]
    assert len(rows(tmp_path / "lcm.db")[0]) == 4


def test_a_first_commit_killed_at_any_instant_imports_history_and_turn_together(tmp_path: Path) -> None:
    """The first commit of a session imports its history from the host's store: a kill
    leaves both or neither, and the host's retry stores every message once."""
    rng = random.Random(11)

    def prepare(name: str) -> tuple[Path, dict[str, Any]]:
        state, store = make_host(tmp_path / name, "s1", turns=60)
        payload = turn(60, words=2000)
        payload["admission"].update(storePath=str(store), rawSeq=121)
        payload["terminal"]["storePath"] = str(store)
        return state, payload

    clean, payload = prepare("clean")
    assert hook(clean, "session.commit_turn", json.dumps(payload)).returncode == 0
    whole = len(rows(clean / "lcm.db")[0])  # the history that fits bootstrap's budget, and the turn
    assert whole > 2
    outcomes = set()
    for attempt in range(6):
        state, payload = prepare(f"run{attempt}")
        proc = subprocess.Popen(
            [*LCM, "--openclaw-dir", str(state), "hook", "session.commit_turn"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        time.sleep(rng.uniform(0.1, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        db = state / "lcm.db"
        messages, ledger = rows(db) if db.exists() else ([], [])
        committed = ledger == [("turn-60", 2)]
        outcomes.add(committed)
        assert (len(messages), committed) in ((0, False), (whole, True)), (len(messages), ledger)
        retry = hook(state, "session.commit_turn", json.dumps(payload))
        assert retry.returncode == 0, retry.stderr
        messages, ledger = rows(db)
        assert len(messages) == whole and ledger == [("turn-60", 2)]
