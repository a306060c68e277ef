"""`lcm rotate`: the transcript rewrite rule, dry run vs apply, the frontier refresh,
refusals that write nothing, and the backup modes (real transcripts, real lcm.db files)."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.maintenance.rotate import configured_tail, plan_rewrite
from tests.conftest import lcm
from tests.support.rotation import SESSION_KEY, Session, seed_session, write_config
from tests.support.transcripts import append_lines

# --- the rewrite rule (docs/reference/operations.md §3.3) ------------------------------------------


def _msg(entry_id: str, role: str, text: str = "x") -> tuple[dict[str, Any], bool]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": "?",
        "message": {"role": role, "content": text},
    }, True


def _entry(entry_id: str, kind: str, **body: Any) -> tuple[dict[str, Any], bool]:
    return {"type": kind, "id": entry_id, "parentId": "?", **body}, False


HEADER = {"type": "session", "id": "s1", "version": 3}


def test_rewrite_keeps_tail_latest_settings_and_relinks() -> None:
    path = [
        _entry("i1", "session_info", name="old"),
        _entry("m1", "model_change", modelId="a"),
        _msg("u1", "user"),
        _entry("t1", "thinking_level_change", thinkingLevel="low"),
        _entry("i2", "session_info", name="new"),
        _msg("a1", "assistant"),
        _entry("c1", "compaction", summary="s"),
        _msg("u2", "user"),
        _entry("x1", "custom", data={}),
        _msg("a2", "assistant"),
        _entry("m2", "model_change", modelId="b"),
        _msg("a3", "assistant"),
        _entry("l1", "label", label="tail"),
        _entry("t2", "thinking_level_change", thinkingLevel="high"),
    ]
    plan = plan_rewrite(HEADER, path, 2)
    # Tail of 2 would start at a2, but it reaches back to the newest user message u2.
    assert [e["id"] for e in plan.kept] == ["i2", "m1", "t1", "u2", "a2", "m2", "a3"]
    assert plan.settings == ["session_info", "model_change", "thinking_level_change"]
    assert [e["parentId"] for e in plan.kept] == [None, "i2", "m1", "t1", "u2", "a2", "m2"]
    assert (plan.messages, plan.preserved_messages, plan.last_entry_id) == (5, 3, "a3")
    lines = plan.content().decode().splitlines()
    assert json.loads(lines[0]) == HEADER and len(lines) == 1 + len(plan.kept)
    assert json.loads(lines[1]) == {"type": "session_info", "id": "i2", "parentId": None, "name": "new"}


def test_rewrite_tail_count_edges() -> None:
    assert configured_tail(8, 0) == 0
    assert configured_tail(8, 3) == 3
    assert configured_tail(2.9, 10) == 2
    assert configured_tail(0, 10) == 1
    assert configured_tail(float("nan"), 10) == 1
    assert configured_tail(None, 10) == 1
    path = [_msg("u1", "user"), _msg("a1", "assistant"), _msg("a2", "assistant")]
    assert [e["id"] for e in plan_rewrite(HEADER, path, 1).kept] == ["u1", "a1", "a2"]
    no_user = [_msg("s1", "system"), _msg("a1", "assistant"), _msg("a2", "assistant")]
    assert [e["id"] for e in plan_rewrite(HEADER, no_user, 1).kept] == ["a2"]
    empty = plan_rewrite(HEADER, [_entry("i1", "session_info")], 4)
    assert empty.kept == [] and empty.content().decode() == json.dumps(HEADER, separators=(",", ":")) + "\n"


# --- helpers ----------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its content hash.

    lcm.db's ``-shm`` and an empty ``-wal`` (a read-only reader of a WAL database makes
    both) are not content; a write leaves frames in the WAL or changes lcm.db itself.
    """
    return {
        str(p.relative_to(root)): _digest(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".db-shm" and not (p.suffix == ".db-wal" and p.stat().st_size == 0)
    }


def _rotate(session: Session, *extra: str, key: str = SESSION_KEY) -> Any:
    return lcm("--openclaw-dir", str(session.root), "rotate", "--session-key", key, *extra)


def _bootstrap(session: Session) -> dict[str, Any]:
    out = lcm(
        "--openclaw-dir",
        str(session.root),
        "session",
        "bootstrap",
        "--session-id",
        "sess-rotate",
        "--session-key",
        SESSION_KEY,
        "--session-file",
        str(session.transcript),
    )
    assert out.code == 0, out.stderr
    return dict(out.json["data"])


def _db_counts(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        return {
            "conversations": conn.execute(
                "SELECT conversation_id, session_id, session_key FROM conversations"
            ).fetchall(),
            "messages": conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
            "summaries": conn.execute("SELECT COUNT(*) FROM summaries").fetchone()[0],
            "context": conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0],
        }
    finally:
        conn.close()


def _checkpoint(db: Path) -> tuple[Any, ...]:
    conn = sqlite3.connect(db)
    try:
        return tuple(
            conn.execute(
                "SELECT session_file_path, last_seen_size, last_seen_mtime_ms, last_processed_offset,"
                " last_processed_entry_hash, session_header_id, last_processed_entry_id"
                " FROM conversation_bootstrap_state"
            ).fetchone()
        )
    finally:
        conn.close()


# --- dry run and apply --------------------------------------------------------------------


def test_dry_run_reports_and_writes_nothing(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=60)
    before = _files(session.root)
    out = _rotate(session)
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["dryRun"] is True and data["applied"] is False
    report = data["transcript"]
    assert report["messages"] == 60 and report["preservedTailMessageCount"] >= 8
    assert report["removedMessages"] == 60 - report["preservedTailMessageCount"]
    assert report["bytesRemoved"] == report["sizeBytes"] - report["newSizeBytes"] > 0
    assert data["compaction"]["rawMessagesToCompact"] == 0  # already summarized outside the tail
    assert data["reconcile"] == {"checkpointInSync": True}
    table = _rotate(session, "--format", "table")
    assert table.code == 0 and "Transcript" in table.stdout and "Preserved tail message count" in table.stdout
    assert _files(session.root) == before


def test_dry_run_counts_raw_messages_to_compact(tmp_path: Path) -> None:
    session = seed_session(
        tmp_path / "oc", messages=40, summarize=False, kinds=["user_text", "assistant_text"]
    )
    data = _rotate(session).json["data"]
    assert data["compaction"]["messageContextItems"] == 40
    assert data["compaction"]["rawMessagesToCompact"] == 40 - 8
    assert data["compaction"]["rawTokensToCompact"] > 0


def test_apply_rewrites_transcript_and_refreshes_frontier(tmp_path: Path) -> None:
    from lcm_cli.engine.transcript.reader import scan_transcript

    session = seed_session(tmp_path / "oc", messages=80, branches=True)
    old_bytes = session.transcript.read_bytes()
    counts = _db_counts(session.db)
    out = _rotate(session, "--apply", "--backup", "none")
    assert out.code == 0, out.stderr
    data = out.json["data"]
    report = data["transcript"]
    kept = report["preservedTailMessageCount"]
    # The new file: the header, then the tail of the active path (no abandoned branch).
    scan = scan_transcript(session.transcript)
    ids = [c.entry_id for c in scan.iter_candidates()]
    assert ids == session.generated.expected_ids[-kept:]
    assert scan.header_id == "sess-rotate" and scan.leaf_path and not scan.skipped
    assert not set(session.generated.abandoned_ids) & set(ids)
    assert session.transcript.stat().st_size == report["newSizeBytes"] < len(old_bytes)
    # The old file is kept, byte for byte.
    assert Path(report["oldTranscriptPath"]).read_bytes() == old_bytes
    assert report["oldTranscriptPath"].startswith(str(session.transcript) + ".rotate-")
    # Same conversation row, nothing lost in the database.
    assert _db_counts(session.db) == counts
    assert data["conversationId"] == session.conversation_id and data["messageCount"] == counts["messages"]
    info = session.transcript.stat()
    path, size, mtime, offset, entry_hash, header_id, entry_id = _checkpoint(session.db)
    assert (path, size, mtime, offset) == (
        str(session.transcript),
        info.st_size,
        info.st_mtime_ns // 10**6,
        info.st_size,
    )
    assert (header_id, entry_id) == ("sess-rotate", ids[-1])
    from lcm_cli.engine.core.identity import entry_hash as hash_of

    conn = sqlite3.connect(session.db)
    role, content = conn.execute("SELECT role, content FROM messages ORDER BY seq DESC LIMIT 1").fetchone()
    conn.close()
    assert entry_hash == hash_of(role, content)
    # Nothing is replayed: a bootstrap right after finds the checkpoint in step.
    again = _bootstrap(session)
    assert again["importedMessages"] == 0 and again["reason"] == "already bootstrapped"
    assert _db_counts(session.db) == counts
    # New turns appended to the rotated file import exactly once.
    append_lines(
        session.transcript,
        [
            {
                "type": "message",
                "id": "new-1",
                "parentId": ids[-1],
                "timestamp": "2026-03-02T10:00:00.000Z",
                "message": {"role": "user", "content": "after the rotation"},
            },
            {
                "type": "message",
                "id": "new-2",
                "parentId": "new-1",
                "timestamp": "2026-03-02T10:00:05.000Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "noted"}]},
            },
        ],
    )
    grown = _bootstrap(session)
    assert grown["importedMessages"] == 2
    assert _db_counts(session.db)["messages"] == counts["messages"] + 2
    assert _bootstrap(session)["importedMessages"] == 0


def test_apply_by_conversation_id_and_rotating_twice(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=50)
    first = lcm(
        "--openclaw-dir",
        str(session.root),
        "rotate",
        "--conversation-id",
        str(session.conversation_id),
        "--apply",
    )
    assert first.code == 0, first.stderr
    once = session.transcript.read_bytes()
    second = _rotate(session, "--apply", "--backup", "none")
    assert second.code == 0, second.stderr
    # Already at its tail: the second rotation keeps the same entries.
    assert session.transcript.read_bytes() == once
    assert second.json["data"]["transcript"]["bytesRemoved"] == 0


def test_session_file_option_names_another_transcript(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=40)
    moved = tmp_path / "elsewhere" / "moved.jsonl"
    moved.parent.mkdir()
    moved.write_bytes(session.transcript.read_bytes())
    out = _rotate(session, "--apply", "--backup", "none", "--session-file", str(moved))
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert data["transcript"]["sessionFile"] == str(moved) and data["checkpoint"]["sessionFilePath"] == str(
        moved
    )
    assert data["reconcile"]["importedMessages"] == 0  # a new path: re-anchored, nothing imported
    assert moved.stat().st_size == data["transcript"]["newSizeBytes"] < session.transcript.stat().st_size
    # The recorded path is now the rotated file: a later rotate finds it without the option.
    assert _rotate(session).json["data"]["transcript"]["sessionFile"] == str(moved)


# --- refusals: structured, and nothing written ----------------------------------------------


def _refused(session: Session, *args: str) -> dict[str, Any]:
    before = _files(session.root)
    for extra in ((), ("--apply",)):
        out = lcm("--openclaw-dir", str(session.root), "rotate", *args, *extra)
        assert out.code == 3, out.stderr
        error = out.error
        assert error["code"] == "ROTATE_UNAVAILABLE"
        assert _files(session.root) == before, f"{extra} wrote something"
    return dict(error["details"])


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"ignoreSessionPatterns": ["agent:*:main"]}, "ignored-session"),
        ({"statelessSessionPatterns": ["agent:main:**"]}, "stateless-session"),
    ],
)
def test_ignored_and_stateless_sessions_are_refused(
    tmp_path: Path, config: dict[str, Any], reason: str
) -> None:
    session = seed_session(tmp_path / "oc", messages=30)
    write_config(session.root, {**session.config, **config})
    details = _refused(session, "--session-key", SESSION_KEY)
    assert details["reasonCode"] == "unavailable" and details["reason"] == reason


def test_sessions_without_lcm_state_are_refused(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=30)
    details = _refused(session, "--session-key", "agent:main:other")
    assert (details["reasonCode"], details["reason"]) == ("conversation_unavailable", "no-conversation")
    from lcm_cli.engine.db.store import Store

    with Store.open(session.db) as store:
        empty = store.create_conversation("sess-empty", session_key="agent:main:empty")
    details = _refused(session, "--conversation-id", str(empty))
    assert (details["reasonCode"], details["reason"]) == ("conversation_unavailable", "no-lcm-state")
    with Store.open(session.db) as store, store.transaction() as conn:
        conn.execute(
            "UPDATE conversations SET active = 0 WHERE conversation_id = ?", (session.conversation_id,)
        )
    details = _refused(session, "--conversation-id", str(session.conversation_id))
    assert details["reason"] == "archived-conversation"


def test_headerless_and_missing_transcripts_are_refused(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=30, header=False)
    details = _refused(session, "--session-key", SESSION_KEY)
    assert (details["reasonCode"], details["reason"]) == ("transcript_unavailable", "no-header")
    details = _refused(session, "--session-key", SESSION_KEY, "--session-file", str(tmp_path / "gone.jsonl"))
    assert details["reason"] == "transcript-missing"


def test_a_host_with_a_sqlite_transcript_store_is_refused(tmp_path: Path) -> None:
    # OpenClaw 2026.7.2+ keeps transcripts in agents/<id>/agent/openclaw-agent.sqlite; a
    # JSONL beside it is no longer read by the host, so rewriting it would gain nothing.
    session = seed_session(tmp_path / "oc", messages=30)
    store = session.root / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    store.parent.mkdir(parents=True, exist_ok=True)
    sqlite3.connect(store).close()
    details = _refused(session, "--session-key", SESSION_KEY)
    assert (details["reasonCode"], details["reason"]) == ("unavailable", "sqlite-transcript-store")
    assert details["hostStore"] == str(store)
    # Found from the transcript's own agent directory too (a conversation without a key).
    details = _refused(session, "--conversation-id", str(session.conversation_id), "--session-file",
                       str(session.transcript))  # fmt: skip
    assert details["reason"] == "sqlite-transcript-store"


def test_apply_leaf_compacts_raw_context_outside_the_tail(tmp_path: Path) -> None:
    session = seed_session(
        tmp_path / "oc", messages=60, summarize=False, extra_config={"leafChunkTokens": 600}
    )
    planned = _rotate(session).json["data"]["compaction"]["rawMessagesToCompact"]
    assert planned > 0
    counts = _db_counts(session.db)
    out = _rotate(session, "--apply", "--backup", "none")
    assert out.code == 0, out.stderr
    compaction = out.json["data"]["compaction"]
    assert compaction["rawMessagesBefore"] == planned and compaction["rawMessagesAfter"] == 0
    passes = compaction["passes"]
    assert len(passes) > 1 and all(p["kind"] == "leaf" and p["depth"] == 0 for p in passes)
    assert sum(p["sourceCount"] for p in passes) == planned
    conn = sqlite3.connect(session.db)
    try:
        # Leaf-only: no condensed summaries; the raw messages left are the fresh tail.
        assert conn.execute("SELECT DISTINCT kind, depth FROM summaries").fetchall() == [("leaf", 0)]
        raw = conn.execute("SELECT COUNT(*) FROM context_items WHERE item_type = 'message'").fetchone()[0]
        linked = conn.execute("SELECT COUNT(DISTINCT message_id) FROM summary_messages").fetchone()[0]
    finally:
        conn.close()
    assert raw == counts["messages"] - planned and linked == planned
    assert _db_counts(session.db)["messages"] == counts["messages"]
    assert _bootstrap(session)["importedMessages"] == 0


class _Refusing(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = b'{"error": {"message": "invalid api key"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_summarizer_failure_refuses_and_keeps_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        session = seed_session(tmp_path / "oc", messages=40, summarize=False)
        old = session.transcript.read_bytes()
        monkeypatch.setenv("LCM_SUMMARIZER", "openai")
        monkeypatch.setenv("LCM_SUMMARY_MODEL", "openai/rotate-test-model")
        monkeypatch.setenv("LCM_SUMMARY_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
        monkeypatch.setenv("LCM_SUMMARY_API_KEY", "wrong")
        out = _rotate(session, "--apply")
        assert out.code == 3, out.stderr
        details = out.error["details"]
        assert details["reasonCode"] == "summarization_unavailable"
        assert details["reason"] in ("provider-auth-failure", "summarizer-failed")
        assert session.transcript.read_bytes() == old
        assert _baks(session.root) == [] and not list(session.transcript.parent.glob("*.bak"))
        assert _db_counts(session.db)["summaries"] == 0
    finally:
        server.shutdown()
        server.server_close()


def test_bad_backup_mode_and_selector(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=20)
    out = _rotate(session, "--backup", "sometimes")
    assert out.code == 2 and out.error["code"] == "INVALID_ARGUMENT"
    out = lcm("--openclaw-dir", str(session.root), "rotate")
    assert out.code == 2 and out.error["code"] == "MISSING_SELECTOR"


# --- backups --------------------------------------------------------------------------------


def _baks(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("lcm.db.") and ".bak" in p.name)


def test_backup_modes(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=40)
    assert _rotate(session, "--apply", "--backup", "none").code == 0
    assert _baks(session.root) == []
    out = _rotate(session, "--apply")  # default: a change backup of the rows rotate changed
    assert out.code == 0, out.stderr
    backup = out.json["data"]["backup"]
    assert backup["mode"] == "changes" and backup["rows"] > 0
    assert os.path.basename(backup["path"]).startswith("lcm.db.rotate-")
    assert backup["path"].endswith(".changes.jsonl.gz") and _baks(session.root) == []
    out = _rotate(session, "--apply", "--backup", "latest")  # operations.md §2.1's rolling copy
    assert out.code == 0, out.stderr
    latest = session.root / "lcm.db.rotate-latest.bak"
    assert out.json["data"]["backup"] == {"mode": "latest", "path": str(latest)}
    assert _baks(session.root) == ["lcm.db.rotate-latest.bak", "lcm.db.rotate-latest.bak.manifest.json"]
    first = _digest(latest)
    verified = lcm("--db", str(session.db), "backup", "verify", str(latest))
    assert verified.code == 0, verified.stderr
    # The database changes; the next rotate replaces the one latest copy.
    conn = sqlite3.connect(session.db)
    with conn:
        conn.execute("UPDATE conversations SET title = 'renamed'")
    conn.close()
    assert _rotate(session, "--apply", "--backup", "latest").code == 0
    assert _baks(session.root) == ["lcm.db.rotate-latest.bak", "lcm.db.rotate-latest.bak.manifest.json"]
    assert _digest(latest) != first
    assert lcm("--db", str(session.db), "backup", "verify", str(latest)).code == 0
    full = _rotate(session, "--apply", "--backup", "full")
    assert full.code == 0, full.stderr
    path = full.json["data"]["backup"]["path"]
    assert os.path.basename(path).startswith("lcm.db.rotate-") and not path.endswith("latest.bak")
    assert lcm("--db", str(session.db), "backup", "verify", path).code == 0
    listed = {
        b["name"]: b["kind"] for b in lcm("--db", str(session.db), "backup", "list").json["data"]["backups"]
    }
    assert listed["lcm.db.rotate-latest.bak"] == "latest" and listed[os.path.basename(path)] == "timestamped"


# --- the control contract -----------------------------------------------------------------------


def test_control_rotate_is_sanitized(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=40)
    out = lcm(
        "--openclaw-dir", str(session.root), "control", "--operation", "rotate", "--session-key", SESSION_KEY
    )
    assert out.code == 0, out.stderr
    data = out.json["data"]
    assert set(data) == {"operation", "messageCount", "lastRotatedAt"}
    assert data["operation"] == "rotate" and data["messageCount"] == _db_counts(session.db)["messages"]
    assert str(session.root) not in out.stdout and out.json["meta"] == {}
    assert (session.root / "lcm.db.rotate-latest.bak").exists()
    missing = lcm("--openclaw-dir", str(session.root), "control", "--operation", "rotate")
    assert missing.error["details"]["reasonCode"] == "session_key_unavailable"
    other = lcm(
        "--openclaw-dir", str(session.root), "control", "--operation", "rotate", "--session-key", "agent:x:y"
    )
    assert other.error["details"]["reasonCode"] == "conversation_unavailable"
    assert str(session.root) not in other.stderr


def test_unwritable_transcript_directory_changes_nothing(tmp_path: Path) -> None:
    """A write failure of the new transcript (here a file-size limit, which also binds root)
    is a structured refusal: the transcript, its directory and the frontier are unchanged."""
    import resource
    import subprocess
    import sys

    session = seed_session(tmp_path / "oc", messages=30)
    last = json.loads(session.transcript.read_text().splitlines()[-1])
    append_lines(
        session.transcript,
        [
            {
                "type": "message",
                "id": "big-1",
                "parentId": last["id"],
                "message": {"role": "user", "content": "big " * 100_000},
            }
        ],
    )
    _bootstrap(session)  # stored now, so the rotation's own database writes stay small
    before = _files(session.root)
    checkpoint = _checkpoint(session.db)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    exe = Path(sys.executable).with_name("lcm")
    done = subprocess.run(
        [str(exe), "--openclaw-dir", str(session.root), "rotate", "--session-key", SESSION_KEY, "--apply"]
        + ["--backup", "none"],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "ROTATE_UNAVAILABLE" and error["details"]["reason"] == "transcript-unwritable"
    # The transcript directory holds exactly what it held (no temp file, no kept copy); the
    # database only saw the reconcile (a checkpoint hit), and its frontier is unchanged.
    transcripts = {k: v for k, v in _files(session.root).items() if k.startswith("agents/")}
    assert transcripts == {k: v for k, v in before.items() if k.startswith("agents/")}
    assert _checkpoint(session.db) == checkpoint


def test_a_capped_reconcile_refuses_until_bootstrap_catches_up(tmp_path: Path) -> None:
    """More unseen turns than one reconcile may import: rotate refuses (the transcript is
    untouched), and succeeds once bootstraps have brought lcm.db level."""
    session = seed_session(tmp_path / "oc", messages=400)
    parent = json.loads(session.transcript.read_text().splitlines()[-1])["id"]
    unseen = []
    for i in range(300):
        unseen.append(
            {
                "type": "message",
                "id": f"late-{i}",
                "parentId": parent,
                "message": {"role": "user" if i % 2 == 0 else "assistant", "content": f"late {i}"},
            }
        )
        parent = unseen[-1]["id"]
    append_lines(session.transcript, unseen)
    transcript = _digest(session.transcript)
    out = _rotate(session, "--apply", "--backup", "none")
    assert out.code == 3, out.stderr
    details = out.error["details"]
    assert out.error["code"] == "ROTATE_UNAVAILABLE" and details["reason"] == "reconcile-unsafe"
    assert details["reconcile"]["reason"] == "reconcile import capped"
    assert details["reconcile"]["remainingMessages"] > 0
    assert _digest(session.transcript) == transcript and not _baks(session.root)
    while _bootstrap(session).get("reason") == "reconcile import capped":
        pass
    done = _rotate(session, "--apply", "--backup", "none")
    assert done.code == 0, done.stderr


APPENDER = """
import json, sys, time
path, count, parent = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print("ready", flush=True)
for i in range(count):
    entry = {"type": "message", "id": f"live-{i}", "parentId": parent,
             "message": {"role": "user" if i % 2 == 0 else "assistant", "content": f"live turn {i}"}}
    with open(path, "a", encoding="utf-8") as handle:  # the host opens, appends, closes
        handle.write(json.dumps(entry) + "\\n")
    parent = entry["id"]
    time.sleep(0.004)
"""


@pytest.mark.parametrize("count", [12, 120])
def test_turns_appended_during_a_rotation_are_never_lost(tmp_path: Path, count: int) -> None:
    """The host keeps appending while rotate runs: every appended turn ends up in lcm.db
    (imported by the rotation, or by the next bootstrap of a file rotate left alone)."""
    import subprocess
    import sys

    session = seed_session(tmp_path / "oc", messages=400)
    last = json.loads(session.transcript.read_text().splitlines()[-1])["id"]
    appender = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(session.transcript), str(count), last],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert appender.stdout is not None and appender.stdout.readline().strip() == "ready"
    exe = Path(sys.executable).with_name("lcm")
    done = subprocess.run(
        [str(exe), "--openclaw-dir", str(session.root), "rotate", "--session-key", SESSION_KEY, "--apply"]
        + ["--backup", "full"],
        capture_output=True,
        text=True,
        check=False,
    )
    appender.wait(timeout=60)
    if done.returncode != 0:
        # Refusing is safe too: the appends outran the settle rounds, or (on a slow machine,
        # when rotate starts late) arrived all at once and exceeded one reconcile's flood cap.
        error = json.loads(done.stderr)["error"]
        details = error.get("details", {})
        refused = (
            error["code"] == "ROTATE_UNAVAILABLE"
            and details.get("reason") == "reconcile-unsafe"
            and details.get("reconcile", {}).get("reason") == "reconcile import capped"
        )
        assert error["code"] == "TRANSCRIPT_CHANGED" or refused, done.stderr
    # Whatever happened, the transcript is whole JSONL and a bootstrap brings lcm.db level.
    for line in session.transcript.read_text().splitlines():
        json.loads(line)
    for _ in range(3):
        _bootstrap(session)
    conn = sqlite3.connect(session.db)
    stored = {row[0] for row in conn.execute("SELECT transcript_entry_id FROM messages")}
    conn.close()
    kept = "".join(p.read_text() for p in session.transcript.parent.glob("*.rotate-*.bak"))
    lost = [i for i in range(count) if f"live-{i}" not in stored]
    # Only a turn written in the instant between the last check and the rename could miss
    # the new file; it is then still in the kept copy of the old one.
    assert all(f'"live-{i}"' in kept for i in lost), lost
    assert len(lost) <= 1, lost


# --- ownership: the transcript must be the conversation's before anything is written ---------


def test_another_sessions_transcript_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    # Session A and session B share one state dir and lcm.db; B's transcript is longer.
    a = seed_session(tmp_path / "oc", messages=30)
    b = seed_session(tmp_path / "oc", messages=50, session_id="sess-other", session_key="agent:main:other")
    db_before, transcript_before = a.db.read_bytes(), b.transcript.read_bytes()
    counts = _db_counts(a.db)
    details = _refused(a, "--session-key", SESSION_KEY, "--session-file", str(b.transcript))
    assert (details["reasonCode"], details["reason"]) == ("transcript_unavailable", "transcript-not-owned")
    assert details["headerId"] == "sess-other" and details["ownerConversationId"] == b.conversation_id
    # Byte-identical: no reconcile, no import, no checkpoint change, no cut.
    assert a.db.read_bytes() == db_before and b.transcript.read_bytes() == transcript_before
    assert _db_counts(a.db) == counts
    wal = Path(str(a.db) + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_transcript_of_no_known_session_is_refused(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=30)
    stranger = tmp_path / "stranger.jsonl"
    from tests.support.transcripts import write_transcript

    write_transcript(stranger, session_id="sess-stranger", messages=12, with_ids=False)
    details = _refused(session, "--session-key", SESSION_KEY, "--session-file", str(stranger))
    assert details["reason"] == "transcript-not-owned" and details["ownerConversationId"] is None


def test_ownership_is_proven_by_header_or_checkpoint(tmp_path: Path) -> None:
    session = seed_session(tmp_path / "oc", messages=30)
    out = _rotate(session)
    assert out.json["data"]["ownership"] == {"proof": "header", "headerId": "sess-rotate"}
    # The conversation's session id no longer matches the header (renamed by hand): the
    # bootstrap checkpoint still records this very file with this header id.
    with sqlite3.connect(session.db) as conn:
        conn.execute(
            "UPDATE conversations SET session_id = 'renamed' WHERE conversation_id = ?",
            (session.conversation_id,),
        )
    conn.close()
    out = _rotate(session)
    assert out.code == 0, out.stderr
    assert out.json["data"]["ownership"]["proof"] == "checkpoint"
