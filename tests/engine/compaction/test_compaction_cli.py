"""`lcm compact` / `lcm maintain` end to end, read-back through the read commands, and kills."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.compaction.compactor import Compactor
from lcm_cli.engine.db.store import Store
from tests.conftest import REPO, lcm
from tests.support.compaction_sim import (
    SMALL,
    HeadSummarizer,
    check_invariants,
    effective,
    new_conversation,
    turn_rows,
)


def _state(tmp_path: Path, messages: int = 400, **config: Any) -> tuple[Path, int]:
    """A state dir with openclaw.json (small compaction sizes) and one conversation."""
    root = tmp_path / "openclaw"
    root.mkdir()
    plugin = {**SMALL, **config}
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": plugin}}}})
    )
    with Store.open(root / "lcm.db") as store:
        cid = new_conversation(store, "agent:main:main")
        store.add_messages(cid, turn_rows(0, messages))
    return root, cid


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_dry_run_lists_the_passes_and_leaves_the_file_alone(tmp_path: Path) -> None:
    root, cid = _state(tmp_path)
    db = root / "lcm.db"
    before = _digest(db)
    out = lcm(
        "--openclaw-dir", str(root), "compact", "--session-key", "agent:main:main", "--token-budget", "4000"
    )
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["dryRun"] is True and data["summarizer"] == "dry-run"
    assert data["passes"] and data["passes"][0]["kind"] == "leaf"
    assert data["after"]["tokens"] < data["before"]["tokens"]
    assert data["before"]["rawTokensOutsideTail"] > data["after"]["rawTokensOutsideTail"]
    # Manual compaction chains sweeps (each at most maxSweepIterations passes) until under the budget.
    assert data["after"]["tokens"] <= 4000 and data["reason"] == "compacted"
    assert len(data["passes"]) <= 12 * data["result"]["details"]["rounds"]
    assert _digest(db) == before
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0
    conn.close()


def test_bad_input_is_refused_before_any_work(tmp_path: Path) -> None:
    root, cid = _state(tmp_path, messages=10)
    base = ("--openclaw-dir", str(root))
    assert lcm(*base, "compact").error["code"] == "MISSING_SELECTOR"
    assert lcm(*base, "compact", "--conversation-id", "99").error["code"] == "CONVERSATION_NOT_FOUND"
    bad = lcm(*base, "compact", "--conversation-id", str(cid), "--compaction-target", "everything")
    assert bad.error["code"] == "INVALID_ARGUMENT" and "--compaction-target" in bad.error["message"]
    assert (
        lcm(*base, "compact", "--conversation-id", str(cid), "--token-budget", "0").error["code"]
        == "INVALID_ARGUMENT"
    )
    assert (
        lcm("--db", str(tmp_path / "missing.db"), "compact", "--conversation-id", "1").error["code"]
        == "DATABASE_NOT_FOUND"
    )
    assert not (tmp_path / "missing.db").exists()


def test_ignored_and_stateless_sessions_are_not_compacted(tmp_path: Path) -> None:
    root, cid = _state(tmp_path, ignoreSessionPatterns=["agent:*:main"])
    out = lcm("--openclaw-dir", str(root), "compact", "--conversation-id", str(cid), "--token-budget", "4000")
    assert out.json["data"]["reason"] == "session excluded" and out.json["data"]["passes"] == []
    shown = lcm("--openclaw-dir", str(root), "context", "show", "--conversation-id", str(cid))
    assert shown.json["data"]["messages"] == [] and shown.json["data"]["reason"] == "session excluded"
    other = tmp_path / "other"
    other.mkdir()
    root2, cid2 = _state(other, statelessSessionPatterns=["agent:**"])
    out = lcm("--openclaw-dir", str(root2), "compact", "--conversation-id", str(cid2))
    assert out.json["data"]["reason"] == "stateless session"
    shown = lcm("--openclaw-dir", str(root2), "context", "show", "--conversation-id", str(cid2))
    assert shown.json["data"]["messages"]  # stateless sessions still read


def test_engine_written_dag_reads_back_through_the_read_commands(tmp_path: Path) -> None:
    root, cid = _state(tmp_path, messages=1200)
    db = root / "lcm.db"
    with Store.open(db) as store:
        config = effective(summaryPrefixTargetTokens=150)
        # Chained sweeps (our explicit option) build a DAG deep enough to read back.
        result = Compactor(store, cid, config, HeadSummarizer()).compact(
            token_budget=4000, manual=True, until_under_target=True
        )
        assert result["compacted"]
        check_invariants(store.conn, cid)
        counts = dict(store.conn.execute("SELECT kind, COUNT(*) FROM summaries GROUP BY kind").fetchall())
        items = store.conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0]
        top = store.conn.execute(
            "SELECT summary_id, descendant_count FROM summaries ORDER BY depth DESC, created_at LIMIT 1"
        ).fetchone()
    base = ("--db", str(db))
    listed = lcm(*base, "summaries", "list", "--conversation-id", str(cid), "--limit", "500")
    assert listed.code == 0, listed.stderr
    listed_items = listed.json["data"]["items"]
    assert len(listed_items) == sum(counts.values())
    assert {i["model"] for i in listed_items} == {"test/head"}
    shown = lcm(*base, "summaries", "show", top[0])
    assert shown.code == 0
    children = shown.json["data"]["children"]
    assert len(children) == shown.json["data"]["summary"]["childCount"] > 0
    assert shown.json["data"]["summary"]["descendantCount"] == top[1]
    status = lcm(*base, "status").json["data"]["status"]
    assert status["summaries"]["count"] == sum(counts.values())
    assert status["context"]["items"] == items
    assert status["messages"]["count"] == 1200


# --------------------------------------------------------------------------
# kill -9 at random points
# --------------------------------------------------------------------------

KILLED = """
import sys
sys.path.insert(0, sys.argv[4])
from lcm_cli.engine.compaction.compactor import Compactor
from lcm_cli.engine.db.store import Store
from tests.support.compaction_sim import HeadSummarizer, effective, turn_rows

store = Store.open(sys.argv[1])
cid, start = int(sys.argv[2]), int(sys.argv[3])
compactor = Compactor(store, cid, effective(summaryPrefixTargetTokens=150), HeadSummarizer())
print("ready", flush=True)
while True:
    store.add_messages(cid, turn_rows(start, 60))
    start += 60
    compactor.compact(token_budget=3000, manual=True)
"""


def test_kill_minus_nine_mid_compaction_leaves_a_consistent_database(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        cid = new_conversation(store)
        store.add_messages(cid, turn_rows(0, 600))
    rng = random.Random(11)
    start = 600
    for _attempt in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED, str(db), str(cid), str(start * 10), str(REPO)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        start += 1000
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
            check_invariants(conn, cid)
        finally:
            conn.close()
    # The killed runs left nothing that stops a normal compaction from finishing.
    with Store.open(db) as store:
        result = Compactor(store, cid, effective(), HeadSummarizer()).compact(token_budget=3000, manual=True)
        assert result["ok"]
        check_invariants(store.conn, cid)
    assert lcm("--db", str(db), "status").code == 0


@pytest.mark.parametrize("command", ["compact", "maintain"])
def test_commands_have_help(command: str) -> None:
    out = lcm(command, "--help")
    assert out.code == 0 and "Example:" in out.stdout


@pytest.mark.parametrize("era", ["0.1", "0.9"])
def test_older_databases_assemble_and_plan(tmp_path: Path, era: str) -> None:
    from tests.support.legacy_schema import make_legacy_db

    db = tmp_path / "old.db"
    make_legacy_db(db, era)
    before = _digest(db)
    conn = sqlite3.connect(db)
    cid = conn.execute("SELECT conversation_id FROM context_items LIMIT 1").fetchone()[0]
    conn.close()
    shown = lcm("--db", str(db), "context", "show", "--conversation-id", str(cid))
    assert shown.code == 0, shown.stderr
    assert shown.json["data"]["messages"]
    planned = lcm("--db", str(db), "compact", "--conversation-id", str(cid), "--force")
    assert planned.code == 0, planned.stderr
    assert _digest(db) == before  # neither reading nor planning touched the file


def test_host_routing_manual_and_observed_tokens(tmp_path: Path) -> None:
    root, cid = _state(tmp_path, messages=60)
    base = ("--openclaw-dir", str(root), "compact", "--conversation-id", str(cid), "--token-budget", "100000")
    below = lcm(*base)
    assert below.json["data"]["reason"] == "below threshold" and below.json["data"]["passes"] == []
    manual = lcm(*base, "--manual")
    assert manual.json["data"]["passes"] and manual.json["data"]["reason"] == "compacted"
    # The host observed more than the stored context: over the threshold, so it runs.
    observed = lcm(*base, "--current-token-count", "90000", "--compaction-target", "threshold")
    assert observed.code == 0, observed.stderr
    assert observed.json["data"]["passes"]


def test_sessions_named_by_the_host(tmp_path: Path) -> None:
    root, cid = _state(tmp_path, messages=30, ignoreSessionPatterns=["agent:*:cron:**"])
    base = ("--openclaw-dir", str(root))
    live = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "prefill"}])
    by_id = lcm(*base, "context", "show", "--session-id", "sess-agent:main:main")
    assert by_id.code == 0, by_id.stderr
    assert by_id.json["data"]["conversation"]["conversationId"] == cid and by_id.json["data"]["messages"]
    unknown = lcm(*base, "context", "show", "--session-id", "nobody", "--messages", live)
    assert unknown.json["data"]["reason"] == "no conversation found for session"
    assert unknown.json["data"]["messages"] == [{"role": "user", "content": "hi"}]
    assert unknown.json["data"]["estimatedTokens"] == 0
    ignored = lcm(*base, "context", "show", "--session-key", "agent:main:cron:nightly", "--messages", live)
    assert ignored.json["data"]["reason"] == "session excluded"
    assert ignored.json["data"]["messages"] == [{"role": "user", "content": "hi"}]
    nothing = lcm(*base, "compact", "--session-id", "nobody", "--apply")
    assert nothing.json["data"]["reason"] == "no conversation found for session"
    assert lcm(*base, "maintain", "--session-id", "nobody").json["data"]["reason"] == "conversation not found"
    assert (
        lcm(*base, "context", "show", "--session-id", "x", "--messages", "{").error["code"]
        == "INVALID_ARGUMENT"
    )
    # Through the hook door, with the host's camelCase names.
    import subprocess
    import sys

    hook = subprocess.run(
        [str(Path(sys.executable).with_name("lcm")), "--openclaw-dir", str(root), "hook", "context.assemble"],
        input=json.dumps({"sessionKey": "agent:main:main", "tokenBudget": 2000}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    assert json.loads(hook.stdout)["data"]["estimatedTokens"] <= 2000


# --------------------------------------------------------------------------
# --apply with the configured summarizers
# --------------------------------------------------------------------------


def test_apply_with_the_extractive_summarizer_reads_back(tmp_path: Path) -> None:
    root, cid = _state(tmp_path, messages=500)
    base = ("--openclaw-dir", str(root))
    out = lcm(
        *base,
        "compact",
        "--conversation-id",
        str(cid),
        "--token-budget",
        "4000",
        "--manual",
        "--until-under-target",
        "--apply",
    )
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["summarizer"] == "extractive" and data["dryRun"] is False
    assert data["compacted"] and data["after"]["tokens"] <= 4000
    conn = sqlite3.connect(root / "lcm.db")
    try:
        check_invariants(conn, cid)
        assert {r[0] for r in conn.execute("SELECT DISTINCT model FROM summaries")} == {"extractive"}
    finally:
        conn.close()
    shown = lcm(*base, "context", "show", "--conversation-id", str(cid), "--token-budget", "4000")
    assert shown.json["data"]["messages"][0]["content"].startswith("<summary ")
    listed = lcm(*base, "summaries", "list", "--conversation-id", str(cid))
    assert listed.json["data"]["items"]


def test_locked_database_is_database_busy_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cid = _state(tmp_path, messages=300)
    monkeypatch.setenv("LCM_BUSY_TIMEOUT_MS", "200")
    holder = sqlite3.connect(root / "lcm.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        out = lcm(
            "--openclaw-dir", str(root), "compact", "--conversation-id", str(cid), "--manual", "--apply"
        )
        assert out.error["code"] == "DATABASE_BUSY"
        assert out.code == 5
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    conn = sqlite3.connect(root / "lcm.db")
    assert conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0
    conn.close()


def test_maintain_drains_recorded_debt(tmp_path: Path) -> None:
    from lcm_cli.engine.compaction.compactor import record_debt

    root, cid = _state(tmp_path, messages=400)
    with Store.open(root / "lcm.db") as store:
        record_debt(store, cid, token_budget=4000, current_token_count=9000)
    base = ("--openclaw-dir", str(root))
    out = lcm(*base, "maintain", "--session-key", "agent:main:main", "--token-budget", "4000")
    assert out.code == 0, out.stderr
    assert out.json["data"]["changed"] is True
    row = (
        sqlite3.connect(root / "lcm.db")
        .execute("SELECT pending, running, last_failure_summary FROM conversation_compaction_maintenance")
        .fetchone()
    )
    assert row == (0, 0, None)
    again = lcm(*base, "maintain", "--session-key", "agent:main:main")
    # Nothing pending: lossless-claw 1.0's answer (it has no transcript GC step).
    assert again.json["data"]["reason"] == "no deferred maintenance work"
    assert again.json["data"]["changed"] is False


def test_maintain_without_debt_answers_as_1_0(tmp_path: Path) -> None:
    """No debt: 1.0's answer whatever 0.15.3's transcriptGcEnabled says (1.0 has no transcript GC)."""
    root, _cid = _state(tmp_path, messages=10, transcriptGcEnabled=True)
    out = lcm("--openclaw-dir", str(root), "maintain", "--session-key", "agent:main:main")
    assert out.code == 0, out.stderr
    assert out.json["data"]["changed"] is False
    assert out.json["data"]["reason"] == "no deferred maintenance work"


class _Refusing(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        body = b'{"error": {"message": "invalid api key"}}'
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_auth_failure_from_a_real_endpoint_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        root, cid = _state(tmp_path, messages=300)
        monkeypatch.setenv("LCM_SUMMARIZER", "openai")
        monkeypatch.setenv("LCM_SUMMARY_MODEL", "openai/test-model")
        monkeypatch.setenv("LCM_SUMMARY_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
        monkeypatch.setenv("LCM_SUMMARY_API_KEY", "wrong")
        out = lcm(
            "--openclaw-dir", str(root), "compact", "--conversation-id", str(cid), "--manual", "--apply"
        )
        assert out.code == 0, out.stderr
        data = out.json["data"]
        assert data["ok"] is False and data["reason"] == "provider auth failure"
        assert data["passes"] == []
        conn = sqlite3.connect(root / "lcm.db")
        assert conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0] == 0
        conn.close()
    finally:
        server.shutdown()
        server.server_close()


def test_a_conversation_driven_through_the_operations_keeps_bounded_context(tmp_path: Path) -> None:
    """ingest → compact (host routing, applied) → assemble, turn after turn, nothing lost."""
    from lcm_cli.engine.api import call

    root = tmp_path / "openclaw"
    root.mkdir()
    plugin = {**SMALL, "contextThreshold": 0.5, "summaryPrefixTargetTokens": 250}
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"enabled": True, "config": plugin}}}})
    )
    session = {"session_id": "sim-1", "session_key": "agent:main:sim"}
    budget = 6000
    where = {"openclaw_dir": str(root)}
    for turn in range(40):
        rows = turn_rows(turn * 40, 40)
        messages = [
            {
                "role": r["role"],
                "content": r["content"],
                "timestamp": 1_780_000_000_000 + (turn * 40 + i) * 30_000,
            }
            for i, r in enumerate(rows)
        ]
        ingested = call("session.ingest", {**session, "messages": messages}, **where)
        assert ingested["data"]["ingested"] == 40, ingested["data"]
        compacted = call(
            "session.compact",
            {**session, "token_budget": budget, "compaction_target": "threshold", "apply": True},
            **where,
        )["data"]
        assert compacted["ok"], compacted
        assembled = call("context.assemble", {**session, "token_budget": budget}, **where)["data"]
        assert assembled["estimatedTokens"] <= budget
        cid = assembled["conversation"]["conversationId"]
        conn = sqlite3.connect(root / "lcm.db")
        try:
            check_invariants(conn, cid)
            assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == (turn + 1) * 40
            newest = conn.execute(
                "SELECT content FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 16", (cid,)
            ).fetchall()
        finally:
            conn.close()
        texts = [
            m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in assembled["messages"]
        ]
        assert texts[-16:] == [r[0] for r in reversed(newest)]  # the fresh tail, intact and last
    assert compacted["after"]["tokens"] <= budget // 2
