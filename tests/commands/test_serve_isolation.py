"""`lcm serve` isolates every request: deep lines, failing handlers, runaway regexes, stops.

Also the input caps of the other doors (stdin, --file, hook payloads).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.limits import LIMITS, MAX_JSON_DEPTH, JsonTooDeep, loads_bounded, nests_deeper
from lcm_cli.engine.recall import regex_worker
from tests.conftest import REPO, lcm
from tests.support.recall_corpus import build_recall_corpus

LCM = [sys.executable, "-m", "lcm_cli"]
RUNAWAY = "(a+)+$"
# A health answer that waited for the runaway read (600 s) or a stuck line would take
# minutes; this bound proves it did not wait, with room for a loaded two-core machine.
ANSWERS_AT_ONCE_MS = 1000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("hostile")
    files = root / "lcm-files"
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {"largeFilesDir": str(files)}}}}})
    )
    return root, build_recall_corpus(root / "lcm.db", files)


class Server:
    """A `lcm serve --stdio` child whose answers are collected by a reader thread."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*LCM, "--openclaw-dir", str(root), "serve", "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.answers: dict[Any, tuple[float, dict[str, Any]]] = {}
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            answer = json.loads(line)
            with self.cond:
                self.answers[answer.get("id")] = (time.monotonic(), answer)
                self.cond.notify_all()

    def send(self, message: Any) -> float:
        assert self.proc.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        sent = time.monotonic()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        return sent

    def wait(self, request_id: Any, timeout: float = 30) -> tuple[float, dict[str, Any]]:
        with self.cond:
            assert self.cond.wait_for(lambda: request_id in self.answers, timeout), (
                f"no answer for {request_id}"
            )
            return self.answers.pop(request_id)

    def health_ms(self, request_id: Any) -> float:
        sent = self.send({"id": request_id, "method": "health"})
        at, answer = self.wait(request_id, timeout=5)
        assert answer["result"]["ok"] is True
        return (at - sent) * 1000

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server(corpus: tuple[Path, dict[str, Any]]) -> Any:
    s = Server(corpus[0])
    yield s
    s.kill()


def runaway_grep(request_id: Any, cid: int, deadline_ms: int) -> dict[str, Any]:
    params = {"pattern": RUNAWAY, "conversationId": cid, "scope": "messages", "deadlineMs": deadline_ms}
    return {"id": request_id, "method": "grep", "params": params}


def test_a_runaway_regex_through_serve_honours_its_deadline_and_health_stays_fast(
    corpus: tuple[Path, dict[str, Any]], server: Server
) -> None:
    _, ids = corpus
    server.health_ms("warm")
    sent = server.send(runaway_grep("g", ids["main"], 1500))
    latencies = []
    while "g" not in server.answers and time.monotonic() - sent < 10:
        latencies.append(server.health_ms(f"h{len(latencies)}"))
        time.sleep(0.05)
    at, answer = server.wait("g")
    assert at - sent < 4, "the deadline was not honoured on a worker thread"
    meta = answer["result"]["meta"]
    assert meta["truncatedBy"] == {"messages": "deadline"}
    assert meta["sources"]["messages"]["unsearchedIds"] == [7]
    assert latencies and max(latencies) < 100, latencies
    # Another session's write is not held up either.
    ingest = {"sessionId": "other", "sessionKey": "agent:x:y", "message": {"role": "user", "content": "hi"}}
    server.send({"id": "w", "method": "session.ingest", "params": ingest})
    assert server.wait("w")[1]["result"]["ok"] is True


def test_sigterm_abandons_a_runaway_read_and_exits_cleanly(
    corpus: tuple[Path, dict[str, Any]], server: Server
) -> None:
    _, ids = corpus
    server.health_ms("warm")
    server.send(runaway_grep("g", ids["main"], 600_000))
    time.sleep(0.5)
    assert server.health_ms("h") < ANSWERS_AT_ONCE_MS
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    status = server.proc.wait(timeout=10)
    assert status == 0
    assert time.monotonic() - started < 3  # reads get 1 s, then they are abandoned
    _, answer = server.wait("g", timeout=1)
    assert answer["error"]["code"] == "SERVER_STOPPING"


def test_shutdown_finishes_writes_in_flight(corpus: tuple[Path, dict[str, Any]], server: Server) -> None:
    for n in range(20):
        message = {"role": "user", "content": f"m{n}"}
        server.send({"id": n, "method": "session.ingest", "params": {"sessionId": "sd", "message": message}})
    server.send({"id": "stop", "method": "shutdown"})
    assert server.proc.wait(timeout=15) == 0
    for n in range(20):
        assert server.wait(n, timeout=1)[1]["result"]["ok"] is True


def test_deep_and_broken_lines_get_errors_and_the_server_goes_on(server: Server) -> None:
    server.send(b"[" * 300_000 + b"\n")
    assert server.wait(None)[1]["error"]["details"]["reason"] == "too-deep"
    nested = json.dumps({"id": 1, "method": "status", "params": {"x": json.loads("[" * 250 + "]" * 250)}})
    server.send(nested.encode() + b"\n")
    error = server.wait(None)[1]["error"]  # the id is not known when the line does not parse
    assert error["code"] == "INVALID_REQUEST" and error["details"]["reason"] == "too-deep"
    server.send(b"\xff\xfe{\n")
    assert server.wait(None)[1]["error"]["code"] == "INVALID_REQUEST"
    server.send({"id": 2, "method": "messages.list", "params": {"conversationId": 2**64}})
    assert server.wait(2)[1]["error"]["code"] == "CONVERSATION_NOT_FOUND"  # compat.md: a huge id
    server.send({"id": 3, "method": "messages.tail", "params": {"sessionKey": "\ud800"}})
    assert server.wait(3)[1]["error"]["code"] == "INVALID_ARGUMENT"
    assert server.health_ms("h") < ANSWERS_AT_ONCE_MS


def test_a_handler_that_raises_is_answered_and_serving_goes_on(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lcm_cli.engine.api as api
    from lcm_cli.commands.serve import Server as Engine

    real = api.invoke

    def flaky(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "status":
            raise RecursionError("boom")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(api, "invoke", flaky)
    engine = Engine(openclaw_dir=str(state_dir))
    answers: list[dict[str, Any]] = []
    for request_id, method in ((1, "status"), (2, "conversations.list")):
        future = engine.handle_line(json.dumps({"id": request_id, "method": method}).encode(), answers.append)
        assert future is not None
        future.result(timeout=30)
    assert engine.close(grace_ms=1000) is True
    by_id = {a["id"]: a for a in answers}
    assert by_id[1]["error"]["code"] == "INTERNAL_ERROR"
    assert by_id[2]["result"]["ok"] is True


def test_a_transport_that_dies_exits_non_zero() -> None:
    from lcm_cli.commands.serve import Server as Engine
    from lcm_cli.commands.serve import _exit_status, _transport

    engine = Engine()

    def die() -> None:
        raise MemoryError("gone")

    _transport(engine, die)()
    assert engine.stopping.is_set() and _exit_status(engine, True) == 1
    assert _exit_status(Engine(), True) == 0
    engine.close(grace_ms=0)


def test_the_regex_helper_cuts_a_scan_from_any_thread() -> None:
    pattern = re.compile(RUNAWAY)
    texts = ["no", "a" * 40 + "!", "aaa"]
    outcome: dict[str, Any] = {}

    def work() -> None:
        started = time.monotonic()
        try:
            regex_worker.scan(pattern, texts, per_text=1, max_hits=5, seconds=0.3)
        except regex_worker.ScanTimedOut as cut:
            outcome["cut"] = (cut.results, cut.stuck)
        outcome["seconds"] = time.monotonic() - started
        outcome["after"] = regex_worker.scan(pattern, ["xaa"], per_text=1, max_hits=5, seconds=1)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    assert outcome["cut"] == ([[]], 1)
    assert outcome["seconds"] < 5  # a 0.3 s deadline: an uncut scan of the runaway never ends
    assert outcome["after"] == [[(1, 3)]]  # the helper answers again after a cut
    regex_worker.stop_all()


def test_the_cli_honours_the_deadline_on_a_runaway_regex(corpus: tuple[Path, dict[str, Any]]) -> None:
    root, ids = corpus
    started = time.monotonic()
    out = lcm("--openclaw-dir", str(root), "grep", RUNAWAY, "--conversation-id", str(ids["main"]),
              "--scope", "messages", "--deadline-ms", "300")  # fmt: skip
    assert out.code == 0 and time.monotonic() - started < 3
    assert out.json["meta"]["truncatedBy"] == {"messages": "deadline"}


# --- bounded input ------------------------------------------------------------------------


def test_ingest_from_an_endless_file_stops_at_the_cap(state_dir: Path) -> None:
    env = {**os.environ, "LCM_MAX_INPUT_BYTES": "65536"}
    started = time.monotonic()
    result = subprocess.run(
        [*LCM, "--openclaw-dir", str(state_dir), "ingest", "--session-id", "z", "--file", "/dev/zero"],
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert time.monotonic() - started < 10
    assert result.returncode == 2 and result.stdout == b""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "INPUT_TOO_LARGE"
    assert error["details"] == {
        "source": "--file /dev/zero",
        "limitBytes": 65536,
        "setting": "LCM_MAX_INPUT_BYTES",
    }
    piped = subprocess.run(
        [*LCM, "--openclaw-dir", str(state_dir), "ingest", "--session-id", "z"],
        input=b"x" * 70_000,
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert json.loads(piped.stderr)["error"]["code"] == "INPUT_TOO_LARGE"


def test_hook_payload_cap_is_configurable(state_dir: Path) -> None:
    result = subprocess.run(
        [*LCM, "--openclaw-dir", str(state_dir), "hook", "status"],
        input=b" " * 5000,
        capture_output=True,
        env={**os.environ, "LCM_MAX_HOOK_BYTES": "4096"},
        timeout=30,
    )
    assert result.returncode == 2
    assert json.loads(result.stderr)["error"]["code"] == "REQUEST_TOO_LARGE"


def test_serve_line_cap_comes_from_the_environment(corpus: tuple[Path, dict[str, Any]]) -> None:
    s = Server(corpus[0], env={"LCM_SERVE_MAX_REQUEST_BYTES": "2048"})
    try:
        s.send(b'{"id": 1, "method": "status", "params": {"x": "' + b"y" * 3000 + b'"}}\n')
        assert s.wait(None)[1]["error"]["details"]["limitBytes"] == 2048
        assert s.health_ms("h") < ANSWERS_AT_ONCE_MS
    finally:
        s.kill()


def test_json_depth_bound() -> None:
    assert loads_bounded("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)
    for depth in (MAX_JSON_DEPTH + 1, 5000, 200_000):
        with pytest.raises(JsonTooDeep):
            loads_bounded("[" * depth + "]" * depth)
    assert loads_bounded('["[[[[", {"a": "]]}}"}]') == ["[[[[", {"a": "]]}}"}]
    assert not nests_deeper([[1]] * 1000, 3) and nests_deeper([[[[1]]]], 3)


def test_every_limit_is_documented() -> None:
    doors = (REPO / "docs" / "doors.md").read_text()
    for spec in LIMITS.values():
        assert f"`{spec.env}`" in doors, spec.env
