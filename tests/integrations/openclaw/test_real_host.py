"""The real OpenClaw host (npm `openclaw`, pinned versions) driving this checkout's plugin shim.

Each test installs the host on first use (cached in ``.cache/openclaw-hosts/`` or
``$LCM_OPENCLAW_CACHE``), runs `openclaw agent --local` turns against a stub model on
127.0.0.1, and checks what reached lcm.db and what reached the model.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.openclaw_host import (
    HOST_VERSIONS,
    HostRun,
    StubModel,
    TurnResult,
    context_show,
    ensure_host,
    host_transcript,
    lcm_executable,
    lcm_serve_pids,
    sent_text,
    stored_messages,
    text_of,
    wait_for_no_serve,
)

pytestmark = pytest.mark.slow

NEWEST = HOST_VERSIONS[0]
TURN_TIMEOUT = 180.0  # the host is killed after this long
EXIT_BOUND = 90.0  # a turn that ends by itself ends well before that (about 15-25 s on 2 cores)
SERVE_EXIT_GRACE = 5.0  # the unreferenced `lcm serve` sees EOF when the host exits


def key(session_id: str) -> str:
    return f"agent:main:explicit:{session_id}"


def check_turn(run: HostRun, result: TurnResult, reply: str) -> None:
    """The turn succeeded, answered REPLY, ended by itself, left no `lcm serve` and did not degrade."""
    assert result.exited_by_itself, f"host killed after {result.elapsed:.0f} s:\n{result.output[-3000:]}"
    assert result.code == 0, result.output[-3000:]
    assert result.elapsed < EXIT_BOUND, f"turn took {result.elapsed:.0f} s"
    assert result.reply_texts == [reply], result.stdout[-2000:]
    assert "degraded to" not in result.output, result.output[-3000:]
    left = wait_for_no_serve(str(run.db), SERVE_EXIT_GRACE)
    assert not left, f"lcm serve still running {SERVE_EXIT_GRACE} s after the host exited: {left}"


def kill_leftovers(run: HostRun) -> None:
    for pid in lcm_serve_pids(str(run.db)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def seed_lcm(run: HostRun, session_id: str, messages: list[dict[str, str]]) -> None:
    """Store MESSAGES in lcm.db for SESSION_ID through `lcm ingest` (the host's store has none)."""
    seeded = subprocess.run(
        [lcm_executable(), "--db", str(run.db), "ingest", "--session-id", session_id]
        + ["--session-key", key(session_id)],
        input=json.dumps(messages),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert seeded.returncode == 0, seeded.stderr


@pytest.mark.parametrize("version", HOST_VERSIONS)
def test_turns_are_stored_and_the_model_sees_lcms_context(version: str, tmp_path: Path) -> None:
    """lcm.db already holds earlier turns of the session, which the host's own store lacks: the
    model's history is lcm's assembled context at every turn, and lcm.db keeps each turn once."""
    host = ensure_host(version)
    earlier = [
        ("user", "an earlier question only lcm remembers"),
        ("assistant", "an earlier answer only lcm remembers"),
    ]
    prompts = ["first question about apples", "second question about pears"]
    with StubModel() as model:
        run = HostRun(host, tmp_path, model, turn_timeout=TURN_TIMEOUT)
        seed_lcm(run, "s1", [{"role": role, "content": text} for role, text in earlier])
        try:
            expected_context = earlier
            for n, prompt in enumerate(prompts, start=1):
                result = run.turn("s1", prompt)
                check_turn(run, result, f"stub reply {n}")
                # What the model got: the host's system prompt, the history (lcm's context as of
                # the previous turn's end), then the pending prompt (2026.9.x adds one more user
                # message of internal context after it).
                request = model.chat_requests()[-1]["messages"]
                assert request[0]["role"] == "system"
                history = [(m["role"], sent_text(m)) for m in request[1 : 1 + len(expected_context)]]
                assert history == expected_context, f"turn {n}: the model's history is not lcm's context"
                pending = request[1 + len(expected_context) :]
                assert pending and pending[0]["role"] == "user" and sent_text(pending[0]) == prompt, pending
                assert all(m["role"] == "user" for m in pending), pending
                # lcm.db holds every turn so far, in order, once.
                wanted = earlier + [
                    (role, text)
                    for i, p in enumerate(prompts[:n], 1)
                    for role, text in (("user", p), ("assistant", f"stub reply {i}"))
                ]
                assert stored_messages(run.db, key("s1")) == wanted
                expected_context = context_show(run.db, key("s1"))
                assert expected_context == wanted
            if not version.startswith("2026.7."):  # 2026.8+ keeps its transcripts in SQLite
                assert host_transcript(run.state, "s1")[0] == ("user", prompts[0])
        finally:
            kill_leftovers(run)


@pytest.mark.parametrize("version", HOST_VERSIONS)
def test_kill_9_of_lcm_serve_mid_turn_loses_nothing(version: str, tmp_path: Path) -> None:
    host = ensure_host(version)
    killed: list[int] = []
    with StubModel(delay=0.0) as model:
        run = HostRun(host, tmp_path, model, turn_timeout=TURN_TIMEOUT)

        def kill_serve(n: int, body: dict[str, Any]) -> None:
            if n != 1:
                return
            # The host is waiting for the model: the shim's `lcm serve` is up (assemble ran).
            for pid in lcm_serve_pids(str(run.db)):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            model.delay = 2.0  # this reply comes after the kill (the shim restarts the child)

        model.on_request = kill_serve
        try:
            check_turn(run, run.turn("k1", "remember the number 4711"), "stub reply 1")
            assert killed, "no lcm serve was running while the model answered"
            # The restarted child stored the turn, and the next turn's model would get it
            # (each turn is a new host process, so a second turn would prove nothing more).
            turn = [("user", "remember the number 4711"), ("assistant", "stub reply 1")]
            assert stored_messages(run.db, key("k1")) == turn
            assert context_show(run.db, key("k1")) == turn
            with contextlib.closing(sqlite3.connect(run.db)) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        finally:
            kill_leftovers(run)


@pytest.mark.parametrize("version", HOST_VERSIONS)
def test_a_missing_lcm_binary_falls_back_at_once(version: str, tmp_path: Path) -> None:
    host = ensure_host(version)
    missing = tmp_path / "no-such-dir" / "lcm"
    with StubModel() as model:
        run = HostRun(
            host, tmp_path, model, lcm_command=[str(missing), "serve", "--stdio"], turn_timeout=TURN_TIMEOUT
        )
        result = run.turn("f1", "does this still work")
        check_turn(run, result, "stub reply 1")
        calls = run.trace_lines()
        assert calls, "the shim wrote no LCM_SHIM_TRACE lines"
        slow = [c for c in calls if c["ms"] >= 1000]
        # Each call falls back at once, far inside the shim's 5 s call deadline.
        assert not slow, slow
        assert not any(c["ok"] for c in calls), calls
        assert sum(c["ms"] for c in calls) < 2000, calls
        assert not run.db.exists()


def test_migrate_sessions_backfills_the_hosts_sqlite_store(tmp_path: Path) -> None:
    host = ensure_host(NEWEST)
    prompts = ["legacy engine turn one", "legacy engine turn two"]
    with StubModel() as model:
        run = HostRun(host, tmp_path / "host", model, plugin=False, turn_timeout=TURN_TIMEOUT)
        for n, prompt in enumerate(prompts, start=1):
            result = run.turn("b1", prompt)
            assert result.exited_by_itself and result.code == 0, result.output[-3000:]
            assert result.reply_texts == [f"stub reply {n}"]
    stored = host_transcript(run.state, "b1")
    assert [role for role, _ in stored] == ["user", "assistant", "user", "assistant"], stored
    assert [text for _, text in stored][1::2] == ["stub reply 1", "stub reply 2"]

    db = tmp_path / "backfill.db"
    done = subprocess.run(
        [lcm_executable(), "--db", str(db), "migrate-sessions", "--openclaw-dir", str(run.state), "--apply"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(run.home)},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout)["data"]
    assert [(f["source"], f["status"]) for f in report["files"]] == [("sqlite", "imported")], report["files"]
    assert stored_messages(db, key("b1")) == stored


def test_sent_text_strips_only_the_hosts_decorations() -> None:
    """The request normalisation the context comparison relies on (no host needed)."""
    assert sent_text({"role": "user", "content": "[Wed 2026-12-02 00:46 UTC] hello"}) == "hello"
    assert sent_text({"role": "user", "content": "hello\n\nRuntime: agent=main | session=x"}) == "hello"
    assert sent_text({"role": "assistant", "content": "[x] a\n\nRuntime: b"}) == "[x] a\n\nRuntime: b"
    assert text_of([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]) == "ab"
