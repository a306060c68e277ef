"""`lcm migrate-sessions`: dry run, apply, verify, idempotency, bad input, kills, live writers."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.db.store import Store
from tests.conftest import lcm, lcm_process
from tests.support.transcripts import (
    GARBAGE,
    append_garbage,
    append_lines,
    append_truncated,
    write_lines,
    write_sessions_index,
    write_transcript,
)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A state dir with three agent sessions (one with an abandoned branch) and a sessions index."""
    root = tmp_path / "state"
    sessions = root / "agents" / "main" / "sessions"
    for index in range(3):
        write_transcript(
            sessions / f"s{index}.jsonl", session_id=f"s{index}", messages=25, seed=index, branches=index == 1
        )
    write_sessions_index(root / "agents" / "main", {"agent:main:main": "s0", "agent:main:cron:nightly": "s2"})
    return root


def migrate(state: Path, *args: str) -> dict[str, Any]:
    out = lcm("--openclaw-dir", str(state), "migrate-sessions", *args)
    assert out.code == 0, out.stderr
    return out.json["data"]


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_dry_run_writes_nothing_and_reports_each_file(state: Path) -> None:
    data = migrate(state)
    assert data["mode"] == "dry-run" and data["scannedFiles"] == 3
    assert not (state / "lcm.db").exists()
    first = data["files"][0]
    assert first["status"] == "would-import" and first["conversation"] == "new"
    assert first["sessionKey"] == "agent:main:main"
    assert first["wouldImportMessages"] == first["candidateMessages"] > 0
    assert first["parts"] > 0 and first["bytes"] > 0
    assert first["skippedLines"]["count"] == len(first["skippedLines"]["lines"])


def test_apply_then_read_commands(state: Path) -> None:
    data = migrate(state, "--apply")
    db = state / "lcm.db"
    assert data["backupPath"] is None  # no database existed before
    assert data["importedFiles"] == 3 and data["errorFiles"] == 0
    expected = sum(f["candidateMessages"] for f in data["files"])
    assert data["importedMessages"] == expected
    assert rows(db, "SELECT COUNT(*) FROM messages")[0][0] == expected
    conversation = lcm("--db", str(db), "conversations", "show", "--session-key", "agent:main:main").json[
        "data"
    ]
    assert conversation["conversation"]["title"] == "Imported OpenClaw session s0"
    assert conversation["conversation"]["bootstrappedAt"] is not None
    assert conversation["bootstrap"]["sessionFilePath"] == str(state / "agents/main/sessions/s0.jsonl")
    assert (
        conversation["bootstrap"]["lastProcessedOffset"]
        == (state / "agents/main/sessions/s0.jsonl").stat().st_size
    )
    tail = lcm("--db", str(db), "messages", "tail", "--session-key", "agent:main:main", "--count", "3")
    assert tail.code == 0 and tail.json["data"]["selected"]["messages"] == 3
    # context items: one per message, ordinals 0..n-1, in seq order
    for (cid,) in rows(db, "SELECT conversation_id FROM conversations"):
        ordinals = rows(
            db,
            "SELECT ci.ordinal, m.seq FROM context_items ci JOIN messages m USING (message_id) WHERE ci.conversation_id = ? ORDER BY ci.ordinal",
            (cid,),
        )
        assert [o for o, _ in ordinals] == list(range(len(ordinals)))
        assert [s for _, s in ordinals] == list(range(1, len(ordinals) + 1))
    # every imported row carries its transcript entry id and parts
    assert rows(db, "SELECT COUNT(*) FROM messages WHERE transcript_entry_id IS NULL")[0][0] == 0
    assert (
        rows(
            db,
            "SELECT COUNT(*) FROM messages m WHERE NOT EXISTS (SELECT 1 FROM message_parts p WHERE p.message_id = m.message_id) AND m.content <> ''",
        )[0][0]
        == 0
    )


def test_abandoned_branch_is_left_out(tmp_path: Path) -> None:
    generated = write_transcript(
        tmp_path / "t.jsonl", session_id="branchy", messages=30, branches=True, seed=3
    )
    assert generated.abandoned_ids
    out = lcm("--db", str(tmp_path / "lcm.db"), "migrate-sessions", "--file", str(generated.path), "--apply")
    report = out.json["data"]["files"][0]
    assert report["skippedLines"]["byReason"].get("abandoned_branch") == len(generated.abandoned_ids)
    ids = [r[0] for r in rows(tmp_path / "lcm.db", "SELECT transcript_entry_id FROM messages ORDER BY seq")]
    assert ids == [i for i in generated.expected_ids]
    assert not set(ids) & set(generated.abandoned_ids)


def test_rerun_imports_nothing_and_a_grown_transcript_adds_only_new_entries(state: Path) -> None:
    migrate(state, "--apply")
    db = state / "lcm.db"
    before = rows(db, "SELECT COUNT(*) FROM messages")[0][0]
    again = migrate(state, "--apply")
    assert again["importedMessages"] == 0 and again["importedFiles"] == 0
    assert {f["status"] for f in again["files"]} == {"up-to-date"}
    # nothing would be written, so no backup is taken (issue 16)
    assert again["backupPath"] is None and again["backupSkippedReason"] == "nothing-to-write"
    assert not list(state.glob("lcm.db.migrate-sessions-*.bak"))[1:]  # only the first run's
    assert rows(db, "SELECT COUNT(*) FROM messages")[0][0] == before
    # the transcript grows: only the new entries are added, after the existing seq
    path = state / "agents/main/sessions/s0.jsonl"
    last_id = json.loads(path.read_text().splitlines()[-1])["id"]
    append_lines(
        path,
        [
            {
                "type": "message",
                "id": "new-1",
                "parentId": last_id,
                "timestamp": "2026-07-02T10:00:00.000Z",
                "message": {"role": "user", "content": "one more question", "timestamp": 1782986400000},
            },
        ],
    )
    grown = migrate(state, "--apply")
    assert grown["importedMessages"] == 1
    assert grown["backupPath"] and Path(grown["backupPath"]).name.startswith("lcm.db.migrate-sessions-")
    (cid,) = rows(db, "SELECT conversation_id FROM conversations WHERE session_id = 's0'")[0]
    assert (
        rows(
            db,
            "SELECT transcript_entry_id FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
            (cid,),
        )[0][0]
        == "new-1"
    )


def test_rows_the_live_plugin_stored_are_adopted_not_duplicated(tmp_path: Path) -> None:
    from lcm_cli.engine.transcript.reader import scan_transcript

    generated = write_transcript(tmp_path / "live.jsonl", session_id="live", messages=10, seed=5)
    messages = list(scan_transcript(str(generated.path)).iter_messages())
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:  # the plugin stored the first four without entry ids
        cid = store.create_conversation("live", session_key="agent:main:live")
        store.add_messages(
            cid,
            [
                {
                    "role": m.role,
                    "content": m.content,
                    "identity_hash": m.identity_hash,
                    "token_count": m.token_count,
                }
                for m in messages[:4]
            ],
        )
    out = lcm("--db", str(db), "migrate-sessions", "--file", str(generated.path), "--apply").json["data"]
    report = out["files"][0]
    assert report["conversation"] == "existing" and report["conversationId"] == cid
    assert report["importedMessages"] == len(messages) - 4 and report["skippedMessages"] == 4
    stored = rows(
        db, "SELECT transcript_entry_id FROM messages WHERE conversation_id = ? ORDER BY seq", (cid,)
    )
    assert [r[0] for r in stored] == [m.entry_id for m in messages]


def test_legacy_transcript_without_ids_into_a_nonempty_conversation_is_skipped(tmp_path: Path) -> None:
    generated = write_transcript(tmp_path / "old.jsonl", session_id="old", messages=6, with_ids=False)
    db = tmp_path / "lcm.db"
    first = lcm("--db", str(db), "migrate-sessions", "--file", str(generated.path), "--apply").json["data"]
    assert first["importedMessages"] == first["files"][0]["candidateMessages"]
    second = lcm("--db", str(db), "migrate-sessions", "--file", str(generated.path), "--apply").json["data"]
    assert second["files"][0]["status"] == "skipped"
    assert second["files"][0]["reason"] == "existing-conversation-without-transcript-entry-ids"
    assert rows(db, "SELECT COUNT(*) FROM messages")[0][0] == first["importedMessages"]
    # The dry run says the same, with the warning (migrate-sessions.md §6.2 c; the compat.md row).
    dry = lcm("--db", str(db), "migrate-sessions", "--file", str(generated.path)).json["data"]["files"][0]
    assert dry["reason"] == second["files"][0]["reason"]
    assert dry["warnings"] == second["files"][0]["warnings"] and "no entry ids" in dry["warnings"][0]


def test_session_key_held_by_another_active_conversation_stays_unset(state: Path) -> None:
    db = state / "lcm.db"
    with Store.open(db) as store:
        store.create_conversation("someone-else", session_key="agent:main:main")
    data = migrate(state, "--apply")
    s0 = next(f for f in data["files"] if f["sessionId"] == "s0")
    assert s0["sessionKey"] is None and any("agent:main:main" in w for w in s0["warnings"])
    assert rows(db, "SELECT session_key FROM conversations WHERE session_id = 's0'")[0][0] is None


def test_since_and_limit(state: Path) -> None:
    sessions = state / "agents/main/sessions"
    os.utime(sessions / "s0.jsonl", (1_700_000_000, 1_700_000_000))  # 2023
    recent = migrate(state, "--since", "2024-01-01")
    assert [Path(f["file"]).name for f in recent["files"]] == ["s1.jsonl", "s2.jsonl"]
    assert len(migrate(state, "--limit", "1")["files"]) == 1
    assert migrate(state, "--limit", "0")["scannedFiles"] == 0
    assert migrate(state, "--since", "30d")["scannedFiles"] == 2  # lcm's one time grammar
    bad = lcm("--openclaw-dir", str(state), "migrate-sessions", "--since", "yesterday")
    assert bad.code == 2 and bad.error["code"] == "INVALID_TIME_FILTER"  # as every time input


def test_bad_files_are_reported_per_file_and_the_batch_goes_on(tmp_path: Path) -> None:
    good = write_transcript(tmp_path / "good.jsonl", session_id="good", messages=8)
    noisy = write_transcript(tmp_path / "noisy.jsonl", session_id="noisy", messages=8, seed=2)
    # Damage without entry ids, then a crash-truncated last line. (An id-bearing junk line
    # at the end would become the active leaf, as it does for the reference importer.)
    append_garbage(noisy.path, [k for k in GARBAGE if k != "missing_fields"])
    append_truncated(noisy.path)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    write_lines(
        tmp_path / "header-only.jsonl",
        [{"type": "session", "id": "header-only", "timestamp": "2026-07-01T00:00:00Z"}],
    )
    (tmp_path / "binary.jsonl").write_bytes(bytes(range(256)) * 8)
    (tmp_path / "latin1.jsonl").write_bytes('{"role": "user", "content": "caf\xe9"}\n'.encode("latin-1"))
    db = tmp_path / "lcm.db"
    files = ["good", "noisy", "empty", "header-only", "binary", "latin1", "missing"]
    args = [a for name in files for a in ("--file", str(tmp_path / f"{name}.jsonl"))]
    data = lcm("--db", str(db), "migrate-sessions", *args, "--apply").json["data"]
    by_name = {Path(f["file"]).stem: f for f in data["files"]}
    assert by_name["good"]["status"] == "imported" and by_name["noisy"]["status"] == "imported"
    noisy_reasons = by_name["noisy"]["skippedLines"]["byReason"]
    assert noisy_reasons.get("invalid_json", 0) >= 1 and noisy_reasons.get("truncated_last_line") == 1
    assert by_name["noisy"]["importedMessages"] == len(noisy.expected_ids)
    assert by_name["good"]["importedMessages"] == len(good.expected_ids)
    assert noisy_reasons.get("not_utf8") == 1 and noisy_reasons.get("binary") == 1
    for name in ("empty", "header-only", "binary"):
        assert (
            by_name[name]["status"] == "skipped" and by_name[name]["reason"] == "no-persistable-messages"
        ), name
    assert by_name["binary"]["skippedLines"]["count"] > 0
    assert by_name["latin1"]["status"] == "imported"  # replacement characters, reported as a warning
    assert by_name["missing"]["status"] == "error" and by_name["missing"]["reason"] == "unreadable-file"
    assert data["errorFiles"] == 1


@pytest.mark.parametrize(
    "args, code, exit_status",
    [
        (["--sessions-dir", "/nonexistent/dir"], "SESSIONS_DIR_NOT_FOUND", 3),
        (["--apply", "--verify"], "INVALID_ARGUMENT", 2),
        (["--limit", "-1"], "INVALID_ARGUMENT", 2),
    ],
)
def test_invocation_errors(state: Path, args: list[str], code: str, exit_status: int) -> None:
    out = lcm("--openclaw-dir", str(state), "migrate-sessions", *args)
    assert out.code == exit_status and out.error["code"] == code


def test_missing_state_dir(tmp_path: Path) -> None:
    out = lcm("--openclaw-dir", str(tmp_path / "nowhere"), "migrate-sessions")
    assert out.code == 3 and out.error["code"] == "STATE_DIR_NOT_FOUND"
    assert not (tmp_path / "nowhere").exists()


def test_database_that_is_not_sqlite_is_refused_without_writing(state: Path) -> None:
    db = state / "lcm.db"
    db.write_text("not a database\n" * 100)
    before = db.read_bytes()
    out = lcm("--openclaw-dir", str(state), "migrate-sessions", "--apply")
    assert out.code == 5 and out.error["code"] == "DATABASE_OPEN_FAILED"
    assert db.read_bytes() == before


def test_read_only_target_directory(state: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = lcm("--openclaw-dir", str(state), "--db", str(blocker / "lcm.db"), "migrate-sessions", "--apply")
    assert out.code == 5 and out.error["code"] == "DATABASE_OPEN_FAILED"
    assert blocker.read_text() == "x"


def test_verify_finds_missing_entries(state: Path) -> None:
    migrate(state, "--apply")
    assert migrate(state, "--verify")["incompleteFiles"] == 0
    db = state / "lcm.db"
    conn = sqlite3.connect(db)
    victim = conn.execute(
        "SELECT message_id, transcript_entry_id FROM messages ORDER BY message_id LIMIT 1"
    ).fetchone()
    conn.execute("DELETE FROM context_items WHERE message_id = ?", (victim[0],))
    conn.execute("DELETE FROM message_parts WHERE message_id = ?", (victim[0],))
    conn.execute("DELETE FROM messages WHERE message_id = ?", (victim[0],))
    conn.commit()
    conn.close()
    before = db.read_bytes()
    # Incomplete is a finding: exit 6, the summary at the top, the counts per file.
    out = lcm("--openclaw-dir", str(state), "migrate-sessions", "--verify")
    assert out.code == 6, out.stderr
    data = out.json["data"]
    assert data["incompleteFiles"] == 1 and data["exitStatus"] == 6
    assert data["incompleteByReason"] == {"missing-entries": 1}
    assert data["filesByStatus"] == {"complete": 2, "incomplete": 1}
    broken = next(f for f in data["files"] if f["status"] == "incomplete")
    assert broken["missingEntries"] == 1 and "missing" not in broken
    # The per-entry detail is behind --verbose.
    verbose = lcm("--openclaw-dir", str(state), "migrate-sessions", "--verify", "--verbose")
    assert verbose.code == 6
    detailed = next(f for f in verbose.json["data"]["files"] if f["status"] == "incomplete")
    assert detailed["missing"][0]["entryId"] == victim[1]
    assert len(out.stdout) < len(verbose.stdout)
    assert db.read_bytes() == before  # verify never writes


def test_totals_by_reason_at_the_top(state: Path) -> None:
    sessions = state / "agents" / "main" / "sessions"
    (sessions / "empty.jsonl").write_text("")
    with (sessions / "s0.jsonl").open("a") as handle:
        handle.write("{not json\n")
    data = migrate(state)
    assert data["filesByStatus"] == {"skipped": 1, "would-import": 3}
    assert data["skippedFilesByReason"] == {"no-persistable-messages": 1}
    assert sum(data["skippedLinesByReason"].values()) == data["skippedLines"] >= 1
    assert data["errorFilesByReason"] == {}


def test_an_up_to_date_conversation_keeps_its_updated_at(state: Path) -> None:
    migrate(state, "--apply")
    db = state / "lcm.db"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE conversations SET updated_at = '2030-01-01 00:00:00'")  # as a live turn sets it
    conn.commit()
    conn.close()
    order = lcm("--openclaw-dir", str(state), "conversations", "list").json["data"]["items"]
    again = migrate(state, "--apply")
    assert again["filesByStatus"] == {"up-to-date": 3}
    assert rows(db, "SELECT DISTINCT updated_at FROM conversations") == [("2030-01-01 00:00:00",)]
    assert lcm("--openclaw-dir", str(state), "conversations", "list").json["data"]["items"] == order


def test_waits_for_a_live_writer(state: Path) -> None:
    db = state / "lcm.db"
    Store.open(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sqlite3, time\n"
                f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
                "c.execute('PRAGMA journal_mode=WAL'); c.execute('BEGIN IMMEDIATE')\n"
                "print('locked', flush=True); time.sleep(1.5); c.execute('COMMIT')\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    started = time.monotonic()
    data = migrate(state, "--apply")
    holder.wait()
    assert data["importedFiles"] == 3 and time.monotonic() - started >= 1.0


def test_killed_importer_leaves_whole_files_and_a_rerun_completes(tmp_path: Path) -> None:
    root = tmp_path / "state"
    sessions = root / "agents" / "main" / "sessions"
    expected: dict[str, int] = {}
    for index in range(12):
        generated = write_transcript(
            sessions / f"k{index:02d}.jsonl",
            session_id=f"k{index:02d}",
            messages=400,
            seed=index,
            entry_every=0,
        )
        expected[f"k{index:02d}"] = len(generated.expected_ids)
    db = root / "lcm.db"
    rng = random.Random(11)
    exe = Path(sys.executable).with_name("lcm")
    # A whole run takes about a second here; kills land at start-up, mid-file and between files.
    for _ in range(8):
        proc = subprocess.Popen(
            [str(exe), "--openclaw-dir", str(root), "migrate-sessions", "--apply"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.1, 0.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if db.exists():
            conn = sqlite3.connect(db)
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            for session_id, count in conn.execute(
                "SELECT c.session_id, COUNT(m.message_id) FROM conversations c LEFT JOIN messages m USING (conversation_id) GROUP BY c.conversation_id"
            ):
                assert count == expected[session_id], f"{session_id} half-imported: {count}"
            conn.close()
    done = lcm_process("--openclaw-dir", str(root), "migrate-sessions", "--apply")
    assert done.code == 0, done.stderr
    verified = lcm_process("--openclaw-dir", str(root), "migrate-sessions", "--verify").json["data"]
    assert verified["completeFiles"] == 12
    assert rows(db, "SELECT COUNT(*) FROM messages")[0][0] == sum(expected.values())


def test_disk_full_midway_rolls_back_that_file_and_keeps_the_rest(tmp_path: Path) -> None:
    """A file-size limit stands in for a full disk: SQLite's writes fail part-way."""
    root = tmp_path / "state"
    sessions = root / "agents" / "main" / "sessions"
    write_transcript(sessions / "a-small.jsonl", session_id="a-small", messages=5, seed=1)
    write_transcript(sessions / "b-large.jsonl", session_id="b-large", messages=3000, seed=2)
    db = root / "lcm.db"
    Store.open(db).close()  # the schema exists, so only the import itself needs space
    limit = db.stat().st_size + 400_000

    def limit_file_size() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # turn the signal into EFBIG errors
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    exe = Path(sys.executable).with_name("lcm")
    result = subprocess.run(
        [
            str(exe),
            "--openclaw-dir",
            str(root),
            "--db",
            str(db),
            "migrate-sessions",
            "--apply",
            "--limit",
            "2",
        ],
        capture_output=True,
        text=True,
        preexec_fn=limit_file_size,
        timeout=120,
    )
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        counts = dict(
            conn.execute(
                "SELECT c.session_id, COUNT(m.message_id) FROM conversations c LEFT JOIN messages m USING (conversation_id) GROUP BY c.conversation_id"
            ).fetchall()
        )
    finally:
        conn.close()
    assert counts.get("b-large", 0) == 0  # rolled back whole
    if result.stdout:  # the run reported the failure per file (and exits 1 for it)
        assert result.returncode == 1
        files = {Path(f["file"]).stem: f for f in json.loads(result.stdout)["data"]["files"]}
        assert files["b-large"]["status"] == "error" and files["b-large"]["reason"] == "import-failed"
        assert counts.get("a-small") == files["a-small"]["importedMessages"] > 0
    else:  # or the backup/open step refused before writing anything
        assert json.loads(result.stderr)["ok"] is False
