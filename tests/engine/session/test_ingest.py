"""Runtime ingest: through the operation, the in-process CLI and the real `lcm ingest` process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db.sessions import SessionPolicy
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.session.ingest import (
    RUNTIME_CONTEXT_SENTINEL,
    IngestSettings,
    ingest_messages,
    stable_event_key,
)
from tests.conftest import lcm, lcm_process


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "oc"
    root.mkdir()
    return root


def ingest(home: Path, messages: list[Any], **params: Any) -> dict[str, Any]:
    params.setdefault("session_id", "s1")
    return call("session.ingest", {"messages": messages, **params}, openclaw_dir=str(home))["data"]


def rows(home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    conn = sqlite3.connect(home / "lcm.db")
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_ingest_creates_the_database_and_reports_each_message(home: Path) -> None:
    data = ingest(
        home,
        [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 1760000000000},
            {"role": "bashExecution", "content": "ls"},
        ],
        session_key="agent:main:main",
    )
    assert data["conversationId"] == 1 and data["createdConversation"] is True
    assert [m["status"] for m in data["messages"]] == ["ingested", "ingested", "skipped"]
    assert data["messages"][2]["reason"] == "unsupported-role"
    assert [m["seq"] for m in data["messages"][:2]] == [1, 2]
    stored = rows(home, "SELECT seq, role, content, token_count, created_at FROM messages ORDER BY seq")
    # The assistant string is measured as its block array, as the importer does.
    assert stored == [(1, "user", "hello", 2, stored[0][4]), (2, "assistant", "hi", 8, "2025-10-09 08:53:20")]
    assert rows(home, "SELECT ordinal, message_id FROM context_items ORDER BY ordinal") == [(0, 1), (1, 2)]
    assert rows(home, "SELECT session_key FROM conversations") == [("agent:main:main",)]


def test_the_same_functions_as_the_importer_build_rows(home: Path) -> None:
    from lcm_cli.engine.transcript.message import build_message

    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a"}},
            {"type": "mystery", "x": 1},
        ],
    }
    ingest(home, [message])
    built = build_message(message)
    stored = rows(home, "SELECT content, token_count, identity_hash FROM messages")[0]
    assert stored == (built.content, built.token_count, built.identity_hash)
    parts = rows(home, "SELECT part_type FROM message_parts ORDER BY ordinal")
    assert parts == [("reasoning",), ("tool",), ("agent",)]  # unknown block kept as a part


def test_dedup_by_stable_key_entry_id_and_delivery_mirror(home: Path) -> None:
    first = ingest(
        home,
        [
            {"role": "assistant", "content": "done", "responseId": "resp_1"},
            {"role": "toolResult", "toolCallId": "toolu_0123456789abcdef", "content": "ok"},
        ],
    )
    assert first["ingested"] == 2
    again = ingest(
        home,
        [
            {"role": "assistant", "content": "done", "responseId": "resp_1"},
            {"role": "toolResult", "toolCallId": "toolu_0123456789abcdef", "content": "ok"},
        ],
    )
    # The batch's raw-id replay filter (§2.6 step 2) sees the tool id before the stable key does.
    assert [m["reason"] for m in again["messages"]] == ["duplicate-stable-key", "duplicate-raw-id"]
    assert again["messages"][0]["duplicateOf"] == first["messages"][0]["messageId"]
    # A mirror of the newest row (which has reasoning) is not stored twice.
    ingest(
        home,
        [
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "answer"}],
            }
        ],
    )
    mirror = ingest(home, [{"role": "assistant", "model": "delivery-mirror", "content": "answer"}])
    assert mirror["messages"][0]["reason"] == "delivery-mirror"
    # Entry ids (transcript imports) are idempotent per conversation.
    with Store.open(home / "lcm.db") as store:
        settings = IngestSettings(str(home / "files"))
        one = ingest_messages(store, settings, "s1", [{"role": "user", "content": "x"}], entry_ids=["e1"])
        two = ingest_messages(store, settings, "s1", [{"role": "user", "content": "x"}], entry_ids=["e1"])
    assert one["ingested"] == 1 and two["messages"][0]["reason"] == "duplicate-entry-id"


def test_a_reused_response_id_with_another_reply_is_stored_and_reported(home: Path) -> None:
    """A local model server that restarted counts its response ids from 1 again: the second,
    different reply is kept (without the key) and reported, never dropped."""
    first = ingest(home, [{"role": "assistant", "content": "the first answer", "responseId": "chatcmpl-1"}])
    second = ingest(
        home,
        [
            {"role": "user", "content": "and now?"},
            {"role": "assistant", "content": "a different answer", "responseId": "chatcmpl-1"},
        ],
    )
    assert second["ingested"] == 2 and second["stableKeyCollisions"] == 1
    reply = second["messages"][1]
    assert reply["stableKeyCollision"] == {
        "stableEventKey": "assistant-response:chatcmpl-1",
        "messageId": first["messages"][0]["messageId"],
    }
    stored = rows(home, "SELECT content, stable_event_key FROM messages ORDER BY seq")
    assert stored == [
        ("the first answer", "assistant-response:chatcmpl-1"),
        ("and now?", None),
        ("a different answer", None),
    ]
    # The same reply again, in another representation (its reasoning dropped): a duplicate.
    again = ingest(
        home,
        [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "the first answer"}],
                "responseId": "chatcmpl-1",
            }
        ],
    )
    assert again["messages"][0]["reason"] == "duplicate-stable-key"


def test_stable_event_keys() -> None:
    assert stable_event_key({"role": "assistant", "response_id": "r9"}) == "assistant-response:r9"
    assert (
        stable_event_key({"role": "tool", "tool_call_id": "call_abcdefghijkl"})
        == "tool-result:call_abcdefghijkl"
    )
    assert stable_event_key({"role": "tool", "tool_call_id": "call_short"}) is None
    assert stable_event_key({"role": "user", "responseId": "r"}) is None


def test_skip_rules_heartbeat_aborted_sentinel_and_replay_flood(home: Path) -> None:
    assert (
        ingest(home, [{"role": "user", "content": "ping"}], is_heartbeat=True)["messages"][0]["reason"]
        == "heartbeat"
    )
    assert not (home / "lcm.db").exists()  # nothing was even opened
    data = ingest(
        home,
        [
            {"role": "assistant", "stopReason": "aborted", "content": []},
            {"role": "assistant", "content": "  " + RUNTIME_CONTEXT_SENTINEL + " more"},
        ],
    )
    assert [m["reason"] for m in data["messages"]] == ["aborted-empty-assistant", "runtime-context-sentinel"]
    assert data["conversationId"] is None
    ingest(home, [{"role": "user", "content": "again", "timestamp": "2026-01-01T00:00:00Z"}])
    replay = [{"role": "user", "content": "again", "timestamp": "2026-01-01T00:00:05Z"} for _ in range(4)]
    flood = ingest(home, replay)
    assert [m["status"] for m in flood["messages"]][:2] == ["ingested", "ingested"]
    assert flood["messages"][2]["reason"] == "replay-flood"


def test_large_payloads_are_externalized(home: Path, tmp_path: Path) -> None:
    (home / "openclaw.json").write_text(
        json.dumps(
            {"plugins": {"entries": {"lossless-claw": {"config": {"largeFileThresholdTokens": 1000}}}}}
        )
    )
    code = "import os\n\ndef main():\n    return 1\n" * 200
    data = ingest(
        home,
        [
            {"role": "user", "content": f'see <file name="app.py" mime="text/x-python">{code}</file> thanks'},
            {"role": "toolResult", "toolCallId": "call_1", "toolName": "read", "content": "x" * 8000},
            {"role": "user", "content": "word " * 2000},
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
                        "mimeType": "image/png",
                    }
                ],
            },
            {"role": "user", "content": "small"},
        ],
    )
    reasons = [f["reason"] for m in data["messages"] for f in m.get("files", [])]
    assert reasons == ["large_file_block", "large_tool_result", "large_raw_message", "native_image"]
    assert data["filesExternalized"] == 4
    files = rows(
        home,
        "SELECT file_id, file_name, mime_type, byte_size, storage_uri, exploration_summary FROM large_files",
    )
    assert len(files) == 4
    for file_id, _name, _mime, size, uri, summary in files:
        assert Path(uri).is_file() and Path(uri).stat().st_size == size
        assert Path(uri).parent.name == str(data["conversationId"]) and Path(uri).stem == file_id
        assert summary
    contents = [r[0] for r in rows(home, "SELECT content FROM messages ORDER BY seq")]
    assert contents[0].startswith("see [LCM File: file_") and contents[0].endswith(" thanks")
    assert "app.py | text/x-python | 7,200 bytes]" in contents[0] and "Exploration Summary:" in contents[0]
    assert contents[1].startswith("[LCM Tool Output: file_") and "tool=read | 8,000 bytes]" in contents[1]
    assert (
        contents[2].startswith("[LCM Raw Payload: file_")
        and "role=user | reason=large_raw_message" in contents[2]
    )
    assert "[User image: user-image.png (image/png, 70 bytes) | LCM file: file_" in contents[3]
    assert contents[4] == "small"
    assert Path(files[0][4]).read_text() == code


def test_ignore_and_stateless_patterns(home: Path) -> None:
    (home / "openclaw.json").write_text(
        json.dumps(
            {
                "plugins": {
                    "entries": {
                        "lossless-claw": {
                            "config": {
                                "ignoreSessionPatterns": ["agent:*:cron:**"],
                                "statelessSessionPatterns": ["agent:*:subagent:*"],
                            }
                        }
                    }
                }
            }
        )
    )
    msg = [{"role": "user", "content": "x"}]
    assert (
        ingest(home, msg, session_key="agent:main:cron:nightly:run:1")["messages"][0]["reason"]
        == "excluded-session"
    )
    assert (
        ingest(home, msg, session_key="agent:main:subagent:abc")["messages"][0]["reason"]
        == "stateless-session"
    )
    assert ingest(home, msg, session_key="agent:main:subagent:abc:deeper")["ingested"] == 1
    policy = SessionPolicy(("agent:*:cron:*",), (), True)
    assert policy.exclusion(None, "agent:main:cron:nightly") == "excluded"
    assert policy.exclusion(None, "agent:main:cron:nightly:run:1") is None
    assert SessionPolicy((), ("a:*",), False).exclusion(None, "a:b") is None


def test_bad_input_is_refused_before_anything_is_written(home: Path) -> None:
    ingest(home, [{"role": "user", "content": "keep"}])
    for bad, reason in [
        ([{"role": "user", "content": "a"}, 7], "not-an-object"),
        ([{"role": 5, "content": "a"}], "wrong-type"),
        ([{"role": "user", "content": 12}], "wrong-type"),
        ([{"role": "user", "content": "a", "timestamp": [1]}], "wrong-type"),
    ]:
        with pytest.raises(LcmError) as err:
            ingest(home, bad)
        assert err.value.code == "INVALID_INPUT" and err.value.details["reason"] == reason
    assert rows(home, "SELECT COUNT(*) FROM messages") == [(1,)]
    # A missing role through the operation is a skip, not an error.
    assert ingest(home, [{"content": "no role"}])["messages"][0]["reason"] == "unsupported-role"


def test_cli_ingest_reads_stdin_file_and_reports_errors(home: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    base = ["--openclaw-dir", str(home), "ingest", "--session-id", "s1", "--session-key", "agent:main:main"]
    exe = Path(sys.executable).with_name("lcm")

    def run(data: bytes, *extra: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([str(exe), *base, *extra], input=data, capture_output=True, env=env, timeout=60)

    lines = b'{"role":"user","content":"one"}\n\n{"role":"assistant","content":"two"}\n'
    done = run(lines)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["ingested"] == 2
    assert json.loads(run(b'[{"role":"user","content":"three"}]').stdout)["data"]["ingested"] == 1
    assert json.loads(run(b'{"role":"user","content":"four"}').stdout)["data"]["ingested"] == 1
    path = tmp_path / "turn.json"
    path.write_text('{"role":"user","content":"five"}')
    assert json.loads(run(b"", "--file", str(path)).stdout)["data"]["ingested"] == 1
    for data, reason, line in [
        (b'{"role":"user","content":"ok"}\n{"role":"user",\n', "invalid-json", 2),
        (b'{"role":"user","content":"\xff\xfe"}', "invalid-utf8", 1),
        (b'{"role":"user","content":"a"}\n{"content":"no role"}\n', "missing-role", None),
    ]:
        bad = run(data)
        assert bad.returncode == 2 and bad.stdout == b""
        error = json.loads(bad.stderr)["error"]
        assert error["code"] == "INVALID_INPUT" and error["details"]["reason"] == reason
        if line:
            assert error["details"]["line"] == line
    missing = run(b"", "--file", str(tmp_path / "nope.json"))
    assert json.loads(missing.stderr)["error"]["code"] == "INPUT_NOT_FOUND"
    # What ingest wrote reads back through the foundation's read commands.
    listed = lcm_process("--openclaw-dir", str(home), "messages", "list", "--session-key", "agent:main:main")
    assert [i["preview"] for i in listed.json["data"]["items"]] == ["five", "four", "three", "two", "one"]
    status = lcm("--openclaw-dir", str(home), "status").json["data"]
    assert status["status"]["messages"]["count"] == 5


def test_a_locked_database_is_busy_and_nothing_is_written(home: Path) -> None:
    ingest(home, [{"role": "user", "content": "first"}])
    holder = sqlite3.connect(home / "lcm.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LcmError) as err:
            call(
                "session.ingest",
                {"session_id": "s1", "messages": [{"role": "user", "content": "second"}]},
                openclaw_dir=str(home),
                env={**os.environ, "LCM_BUSY_TIMEOUT_MS": "200"},
            )
        assert err.value.code == "DATABASE_BUSY"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert rows(home, "SELECT content FROM messages") == [("first",)]


def test_kill_during_a_big_batch_leaves_none_or_all(home: Path, tmp_path: Path) -> None:
    ingest(home, [{"role": "user", "content": "before"}])
    batch = tmp_path / "batch.jsonl"
    with open(batch, "w") as handle:
        for i in range(6000):
            handle.write(
                json.dumps({"role": "user" if i % 2 else "assistant", "content": f"m{i} " * 40}) + "\n"
            )
    exe = Path(sys.executable).with_name("lcm")
    for delay in (0.4, 0.8, 1.2):
        proc = subprocess.Popen(
            [str(exe), "--openclaw-dir", str(home), "ingest", "--session-id", "s1", "--file", str(batch)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        count = rows(home, "SELECT COUNT(*) FROM messages")[0][0]
        assert (count - 1) % 6000 == 0, count
        assert rows(home, "PRAGMA integrity_check") == [("ok",)]
        contexts = rows(home, "SELECT COUNT(*) FROM context_items")[0][0]
        assert contexts == count


def test_inline_base64_images_are_externalized(home: Path) -> None:
    import base64

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(600)).decode()
    jpg = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(600)).decode()
    data = ingest(
        home,
        [
            {"role": "user", "content": f"[media attached: /tmp/my photo.png]\n{png[:76]}\n{png[76:]}"},
            {"role": "toolResult", "toolCallId": "call_2", "content": jpg},
            {"role": "user", "content": "not an image: " + "A" * 600},
        ],
    )
    reasons = [[f["reason"] for f in m.get("files", [])] for m in data["messages"]]
    assert reasons == [["inline_image"], ["inline_image"], []]
    contents = [r[0] for r in rows(home, "SELECT content FROM messages ORDER BY seq")]
    assert contents[0].startswith(
        "[media attached: /tmp/my photo.png]\n\n[User image: my_photo.png (image/png, 608 bytes)"
    )
    assert contents[1].startswith("[Tool image: tool-image.jpg (image/jpeg, 604 bytes) | LCM file: file_")
    assert contents[2].startswith("not an image")
    sizes = sorted(r[0] for r in rows(home, "SELECT byte_size FROM large_files"))
    assert sizes == [604, 608]


def test_ingest_loads_nothing_heavy(home: Path) -> None:
    from tests.test_startup import loaded_modules

    message = json.dumps({"role": "user", "content": "x"})
    args = ("--openclaw-dir", str(home), "ingest", "--session-id", "s1", "--message", message)
    assert loaded_modules(*args) == []


def test_live_numbers_are_stored_as_javascript_spells_them(home: Path) -> None:
    """Live ingest stores numbers as the reference's JSON.stringify spells them.

    The rule: the reference's live ingest (src/engine.ts ingest, through
    src/message-content.ts toStoredMessage) holds the host's message as JavaScript
    values and serializes parts and content with JSON.stringify. So a number is a double:
    ``1e-07`` is spelled ``1e-7``, ``2e-05`` ``0.00002``, ``3.0`` ``3``, an integer past
    2**53 is rounded (``12345678901234567890`` → ``12345678901234567000``), and
    integer-like keys come first. The transcript importer already reads transcripts this
    way; here the same message arrives through Python's JSON (the CLI's stdin) and as a
    Python dict, and must be stored byte for byte as the importer stores it, with the
    same token count (31 for the call, where Python's spelling cost 32).
    """
    from lcm_cli.engine.core.jscompat import js_parse
    from lcm_cli.engine.transcript.message import build_message

    call_text = (
        '{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"fit",'
        '"arguments":{"b":1.0,"2":1e-7,"1":0.00002,"big":12345678901234567890,"f":0.5}}]}'
    )
    result_text = (
        '{"role":"toolResult","toolCallId":"call_1","toolName":"fit",'
        '"content":[{"type":"json","value":{"loss":1e-7,"lr":0.000001,"epochs":3.0}}]}'
    )
    exe = Path(sys.executable).with_name("lcm")
    done = subprocess.run(
        [str(exe), "--openclaw-dir", str(home), "ingest", "--session-id", "s1"],
        input=(call_text + "\n" + result_text + "\n").encode(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    ingest(home, [json.loads(call_text), json.loads(result_text)], session_id="s2")
    for session in ("s1", "s2"):
        stored = rows(
            home,
            "SELECT m.content, m.token_count, p.tool_input, p.metadata FROM messages m"
            " JOIN conversations c USING (conversation_id) JOIN message_parts p USING (message_id)"
            " WHERE c.session_id = ? ORDER BY m.seq",
            (session,),
        )
        assert stored[0][2] == '{"1":0.00002,"2":1e-7,"b":1,"big":12345678901234567000,"f":0.5}'
        assert stored[0][1] == 31
        assert stored[1][0] == '[{"type":"json","value":{"loss":1e-7,"lr":0.000001,"epochs":3}}]'
        for (content, tokens, tool_input, metadata), text in zip(stored, (call_text, result_text)):
            imported = build_message(js_parse(text))
            assert (content, tokens) == (imported.content, imported.token_count)
            assert tool_input == imported.parts[0]["tool_input"]
            assert metadata == imported.parts[0]["metadata"]
