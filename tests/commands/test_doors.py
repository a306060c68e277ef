"""`lcm hook` and `lcm serve`: the same operations with the same answers, over real processes."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.engine.core.registry import OPERATIONS

LCM = [str(Path(sys.executable).with_name("lcm"))]
if not Path(LCM[0]).exists():
    LCM = [sys.executable, "-m", "lcm_cli"]

# Read operations and the parameters each is called with, against the sample state dir.
READS: list[tuple[str, dict[str, Any]]] = [
    ("status", {}),
    ("conversations.list", {"limit": 2}),
    ("conversations.show", {"sessionKey": "agent:main:main"}),
    ("messages.list", {"conversationId": 1, "limit": 3, "role": ["user"]}),
    ("messages.tail", {"session_key": "agent:main:main", "count": 2}),
    ("summaries.list", {"conversationId": 1, "kind": "leaf"}),
    ("summaries.show", {"summaryId": "sum_aaaaaaaaaaaaaaaa"}),
    ("config.show", {}),
    ("config.get", {"path": "freshTailCount"}),
    ("backup.list", {}),
    ("control", {"operation": "status", "sessionKey": "agent:main:main"}),
    ("control.capabilities", {}),
]


def in_process(state_dir: Path, name: str, params: dict[str, Any]) -> dict[str, Any]:
    """The envelope the Python door returns for the same call."""
    from lcm_cli.commands.dispatch import split_params

    fields, args = split_params(name, params)
    return call(name, fields, args=args, openclaw_dir=str(state_dir))


def hook(state_dir: Path, name: str, stdin: str | bytes) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [*LCM, "--openclaw-dir", str(state_dir), "hook", name],
        input=data,
        capture_output=True,
        timeout=60,
    )


class Client:
    """A `lcm serve --stdio` child and a line-oriented client for it."""

    def __init__(self, state_dir: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [*LCM, "--openclaw-dir", str(state_dir), "serve", "--stdio", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.answers: dict[Any, dict[str, Any]] = {}

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"server closed stdout; stderr: {self.proc.stderr.read() if self.proc.stderr else ''}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while request_id not in self.answers:
            answer = self.read()
            self.answers[answer["id"]] = answer
        return self.answers.pop(request_id)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


@pytest.fixture
def client(state_dir: Path) -> Any:
    c = Client(state_dir)
    yield c
    if c.proc.poll() is None:
        c.proc.kill()
        c.proc.wait()


@pytest.mark.parametrize("name,params", READS, ids=[name for name, _ in READS])
def test_hook_answers_exactly_like_the_python_door(
    state_dir: Path, name: str, params: dict[str, Any]
) -> None:
    done = hook(state_dir, name, json.dumps(params))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == in_process(state_dir, name, params)


def test_serve_answers_exactly_like_the_python_door(state_dir: Path, client: Client) -> None:
    for index, (name, params) in enumerate(READS):
        answer = client.ask(index, name, params)
        assert answer == {"id": index, "result": in_process(state_dir, name, params)}, name
    assert client.close() == 0


def test_every_operation_is_listed_with_a_parameter_schema(state_dir: Path) -> None:
    done = subprocess.run([*LCM, "hook", "--list"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    listed = {op["name"]: op for op in json.loads(done.stdout)["data"]["operations"]}
    assert set(listed) == set(OPERATIONS)
    tail = listed["messages.tail"]["params"]
    assert tail["properties"]["sessionKey"] == {"type": "string"}
    assert tail["additionalProperties"] is False
    assert listed["summaries.show"]["params"]["required"] == ["summaryId"]
    assert listed["config.set"]["writes"] is True and listed["status"]["writes"] is False


@pytest.mark.parametrize(
    "stdin,code,status",
    [
        ("{not json", "INVALID_REQUEST", 2),
        (b"\xff\xfe{}", "INVALID_REQUEST", 2),
        ("[1, 2]", "INVALID_ARGUMENT", 2),
        ('{"count": "many", "sessionKey": "agent:main:main"}', "INVALID_ARGUMENT", 2),
        ('{"bogus": true}', "INVALID_ARGUMENT", 2),
        ('{"sessionKey": "nobody"}', "CONVERSATION_NOT_FOUND", 3),
    ],
)
def test_hook_bad_input_is_a_structured_error(state_dir: Path, stdin: Any, code: str, status: int) -> None:
    done = hook(state_dir, "messages.tail", stdin)
    assert done.returncode == status
    assert done.stdout == b""
    assert json.loads(done.stderr)["error"]["code"] == code


def test_hook_unknown_operation_and_empty_stdin(state_dir: Path) -> None:
    done = hook(state_dir, "messages.nope", "{}")
    assert (done.returncode, json.loads(done.stderr)["error"]["code"]) == (2, "UNKNOWN_OPERATION")
    done = hook(state_dir, "status", "")
    assert done.returncode == 0 and json.loads(done.stdout)["command"] == "status"


def test_serve_bad_requests_get_errors_and_the_server_keeps_serving(client: Client) -> None:
    for line, wanted_id, code in [
        (b"{broken\n", None, "INVALID_REQUEST"),
        (b'"just a string"\n', None, "INVALID_REQUEST"),
        (b'{"method": "status"}\n', None, "INVALID_REQUEST"),
        (b'{"id": true, "method": "status"}\n', None, "INVALID_REQUEST"),
        (b'{"id": 7}\n', 7, "INVALID_REQUEST"),
        (b'{"id": 8, "method": "nope"}\n', 8, "UNKNOWN_OPERATION"),
        (b'{"id": 9, "method": "messages.tail", "params": [1]}\n', 9, "INVALID_ARGUMENT"),
        (
            b'{"id": 10, "method": "messages.tail", "params": {"count": "x", "sessionKey": "k"}}\n',
            10,
            "INVALID_ARGUMENT",
        ),
    ]:
        client.send(line)
        answer = client.read()
        assert answer["id"] == wanted_id, line
        assert answer["error"]["code"] == code, line
    assert client.ask("ok", "status")["result"]["ok"] is True
    assert client.close() == 0


def test_serve_refuses_an_oversized_line_and_carries_on(state_dir: Path) -> None:
    client = Client(state_dir, "--max-request-bytes", "4096")
    try:
        client.send(b'{"id": 1, "method": "status", "params": {"x": "' + b"y" * 50_000 + b'"}}\n')
        answer = client.read()
        assert answer["error"]["code"] == "REQUEST_TOO_LARGE"
        assert client.ask(2, "status")["result"]["ok"] is True
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


def test_serve_health_reload_and_shutdown(state_dir: Path, client: Client) -> None:
    health = client.ask(1, "health")["result"]["data"]
    assert health["pid"] == client.proc.pid and health["inFlight"] == 0
    before = client.ask(2, "config.get", {"path": "freshTailCount"})["result"]["data"]
    config = state_dir / "openclaw.json"
    body = json.loads(config.read_text())
    body["plugins"]["entries"]["lossless-claw"]["config"]["freshTailCount"] = 3
    config.write_text(json.dumps(body))
    # Warm: the config is not re-read until reload.
    assert client.ask(3, "config.get", {"path": "freshTailCount"})["result"]["data"] == before
    assert client.ask(4, "reload")["result"]["data"] == {"reloaded": True}
    after = client.ask(5, "config.get", {"path": "freshTailCount"})["result"]["data"]
    assert after != before and after["effectiveValue"] == 3
    assert client.ask(6, "shutdown")["result"]["data"] == {"stopping": True}
    assert client.proc.wait(timeout=30) == 0


def test_serve_config_set_reloads_by_itself(state_dir: Path, client: Client) -> None:
    done = client.ask(1, "config.set", {"path": "freshTailCount", "jsonValue": 5})
    assert done["result"]["ok"] is True, done
    assert client.ask(2, "config.get", {"path": "freshTailCount"})["result"]["data"]["effectiveValue"] == 5


def test_serve_exits_cleanly_on_sigterm(client: Client) -> None:
    assert client.ask(1, "status")["result"]["ok"] is True
    client.proc.send_signal(signal.SIGTERM)
    assert client.proc.wait(timeout=30) == 0


# -- the Unix socket ---------------------------------------------------------


def start_socket_server(state_dir: Path, path: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [*LCM, "--openclaw-dir", str(state_dir), "serve", "--socket", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while True:  # ready once it accepts a connection (a stale file may be there before)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "socket never came up"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
                return proc
            except OSError:
                time.sleep(0.02)


def socket_ask(path: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(path))
        stream = sock.makefile("rwb")
        for request in requests:
            stream.write(json.dumps(request).encode() + b"\n")
        stream.flush()
        answers = [json.loads(stream.readline()) for _ in requests]
    return sorted(answers, key=lambda a: str(a["id"]))


@pytest.fixture
def socket_server(state_dir: Path, tmp_path: Path) -> Any:
    path = tmp_path / "lcm.sock"
    proc = start_socket_server(state_dir, path)
    yield path, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_socket_is_private_and_a_second_server_is_refused(state_dir: Path, socket_server: Any) -> None:
    path, proc = socket_server
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    second = subprocess.run(
        [*LCM, "--openclaw-dir", str(state_dir), "serve", "--socket", str(path)],
        capture_output=True,
        timeout=60,
    )
    assert second.returncode == 5
    assert json.loads(second.stderr)["error"]["code"] == "SERVE_SOCKET_IN_USE"
    assert socket_ask(path, [{"id": 1, "method": "status"}])[0]["result"]["ok"] is True
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    assert not path.exists()


def test_a_stale_socket_file_is_replaced_but_a_regular_file_is_not(state_dir: Path, tmp_path: Path) -> None:
    stale = tmp_path / "stale.sock"
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(stale))
    leftover.close()  # the file stays, nobody listens: what a killed server leaves
    proc = start_socket_server(state_dir, stale)
    try:
        assert socket_ask(stale, [{"id": 1, "method": "health"}])[0]["result"]["ok"] is True
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    regular = tmp_path / "notes.txt"
    regular.write_text("keep me")
    refused = subprocess.run(
        [*LCM, "--openclaw-dir", str(state_dir), "serve", "--socket", str(regular)],
        capture_output=True,
        timeout=60,
    )
    assert json.loads(refused.stderr)["error"]["code"] == "SERVE_SOCKET_IN_USE"
    assert regular.read_text() == "keep me"


def test_concurrent_socket_clients_all_get_their_answers(state_dir: Path, socket_server: Any) -> None:
    path, _ = socket_server
    expected = in_process(state_dir, "messages.tail", {"sessionKey": "agent:main:main", "count": 2})
    failures: list[str] = []

    def client(number: int) -> None:
        requests = [
            {
                "id": f"{number}-{i}",
                "method": "messages.tail",
                "params": {"sessionKey": "agent:main:main", "count": 2},
            }
            for i in range(50)
        ]
        for answer in socket_ask(path, requests):
            if answer.get("result") != expected:
                failures.append(json.dumps(answer)[:200])

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []


def test_a_client_that_disconnects_mid_request_does_not_hurt_the_server(socket_server: Any) -> None:
    path, proc = socket_server
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(path))
        sock.sendall(b'{"id": 1, "method": "status"}\n{"id": 2, "meth')  # then hang up
    assert socket_ask(path, [{"id": 3, "method": "health"}])[0]["result"]["ok"] is True
    assert proc.poll() is None


def test_concurrent_writers_on_the_socket_lose_nothing(tmp_path: Path) -> None:
    """Four clients ingest into two sessions at once: every message lands once, in order."""
    state = tmp_path / "state"
    state.mkdir()
    path = tmp_path / "w.sock"
    proc = start_socket_server(state, path)
    try:
        failures: list[str] = []

        def writer(number: int) -> None:
            session = f"s-{number % 2}"
            requests = [
                {
                    "id": f"{number}-{i}",
                    "method": "session.ingest",
                    "params": {
                        "sessionId": session,
                        "sessionKey": f"agent:main:{session}",
                        "message": {"role": "user", "content": f"writer {number} message {i}"},
                    },
                }
                for i in range(40)
            ]
            for answer in socket_ask(path, requests):
                if "error" in answer or answer["result"]["data"]["ingested"] != 1:
                    failures.append(json.dumps(answer)[:300])

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert failures == []
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    import sqlite3

    with sqlite3.connect(state / "lcm.db") as conn:
        rows = conn.execute(
            "SELECT c.session_id, m.seq, m.content FROM messages m JOIN conversations c USING (conversation_id)"
            " ORDER BY c.session_id, m.seq"
        ).fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    for session in ("s-0", "s-1"):
        mine = [r for r in rows if r[0] == session]
        assert [r[1] for r in mine] == list(range(1, 81))  # contiguous seq: nothing lost or doubled
        for writer_number in (0, 2) if session == "s-0" else (1, 3):
            # One client's requests apply in the order it sent them.
            sent = [r[2] for r in mine if r[2].startswith(f"writer {writer_number} ")]
            assert sent == [f"writer {writer_number} message {i}" for i in range(40)]


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_refuses_a_bad_parameter_identically_through_every_door(
    state_dir: Path, name: str
) -> None:
    """Whatever the operation, hook, serve and the Python door give the same structured error."""
    from lcm_cli.commands.dispatch import split_params
    from lcm_cli.engine.core.errors import LcmError

    params = {"noSuchParameter": 1}
    with pytest.raises(LcmError) as raised:
        fields, args = split_params(name, params)
        call(name, fields, args=args, openclaw_dir=str(state_dir))
    expected = raised.value.to_dict()
    done = hook(state_dir, name, json.dumps(params))
    assert done.returncode == 2 and done.stdout == b""
    assert json.loads(done.stderr)["error"] == expected
    server = Client(state_dir)
    try:
        assert server.ask(1, name, params) == {"id": 1, "error": expected}
    finally:
        server.close()


def test_a_database_locked_by_another_writer_is_a_busy_error_and_serving_goes_on(
    state_dir: Path, tmp_path: Path
) -> None:
    import sqlite3

    env = {**os.environ, "LCM_BUSY_TIMEOUT_MS": "300"}
    proc = subprocess.Popen(
        [*LCM, "--openclaw-dir", str(state_dir), "serve", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    client = Client.__new__(Client)
    client.proc, client.answers = proc, {}
    message = {"sessionId": "s-lock", "message": {"role": "user", "content": "while locked"}}
    blocker = sqlite3.connect(state_dir / "lcm.db", isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        answer = client.ask(1, "session.ingest", message)
        assert answer["error"]["code"] == "DATABASE_BUSY"
        assert client.ask(2, "messages.tail", {"sessionKey": "agent:main:main", "count": 1})["result"]["ok"]
        blocker.execute("ROLLBACK")
        assert client.ask(3, "session.ingest", message)["result"]["data"]["ingested"] == 1
        count = blocker.execute("SELECT COUNT(*) FROM messages WHERE content = 'while locked'").fetchone()
        assert count == (1,)  # the refused attempt wrote nothing
    finally:
        blocker.close()
        assert client.close() == 0
