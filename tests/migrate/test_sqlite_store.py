"""`lcm migrate-sessions` over OpenClaw's SQLite session stores (host 2026.7.2 and later).

Stores are real SQLite files with the host's table shapes (tests/support/host_store.py),
filled with the same events as the JSONL fixtures, so an import of either must give the
same rows.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.transcript import host_store
from tests.conftest import lcm, lcm_process
from tests.support.host_store import add_session, compress, create_store, jsonl_events, store_from_jsonl
from tests.support.transcripts import write_lines, write_transcript

MESSAGE_COLUMNS = (
    "c.session_id, m.seq, m.role, m.content, m.token_count, m.identity_hash,"
    " m.openclaw_sender_metadata, m.transcript_entry_id, m.created_at"
)
PART_COLUMNS = (
    "c.session_id, m.seq, p.part_type, p.ordinal, p.text_content, p.tool_call_id, p.tool_name,"
    " p.tool_input, p.tool_output, p.metadata, p.session_id"
)


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def content_rows(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """messages, message_parts and context_items rows, minus ids and clock columns."""
    messages = rows(
        db,
        f"SELECT {MESSAGE_COLUMNS} FROM messages m JOIN conversations c USING (conversation_id) ORDER BY 1, 2",
    )
    parts = rows(
        db,
        f"""SELECT {PART_COLUMNS} FROM message_parts p JOIN messages m USING (message_id)
            JOIN conversations c USING (conversation_id) ORDER BY 1, 2, 4""",
    )
    context = rows(
        db,
        """SELECT c.session_id, i.ordinal, i.item_type, m.seq FROM context_items i
           JOIN conversations c USING (conversation_id) LEFT JOIN messages m USING (message_id) ORDER BY 1, 2""",
    )
    return messages, parts, context


def migrate(*args: str, code: int = 0) -> dict[str, Any]:
    out = lcm("migrate-sessions", *args)
    assert out.code == code, out.stderr
    return dict(out.json["data"])


@pytest.fixture
def jsonl_dir(tmp_path: Path) -> Path:
    """Three transcripts (one with an abandoned branch) under a JSONL-era state dir."""
    sessions = tmp_path / "jsonl-state" / "agents" / "main" / "sessions"
    for index in range(3):
        write_transcript(
            sessions / f"s{index}.jsonl", session_id=f"s{index}", messages=40, seed=index, branches=index == 1
        )
    return sessions


@pytest.fixture
def store_state(tmp_path: Path, jsonl_dir: Path) -> Path:
    """A 2026.9-style state dir: the same three sessions, only in the agent's SQLite store.

    A low compression threshold makes most message events zstd rows.
    """
    root = tmp_path / "store-state"
    store_from_jsonl(
        host_store.store_path(str(root), "main"),
        [(jsonl_dir / f"s{i}.jsonl", f"s{i}") for i in range(3)],
        compress_at=200,
    )
    return root


def store_of(root: Path) -> str:
    return host_store.store_path(str(root), "main")


# --- the engine reader ------------------------------------------------------------------


def test_reader_api_lists_sessions_and_decodes_events(store_state: Path, jsonl_dir: Path) -> None:
    store = store_of(store_state)
    assert host_store.find_stores(str(store_state)) == [("main", os.path.abspath(store))]
    sessions = host_store.list_sessions(store)
    assert [s.session_id for s in sessions] == ["s0", "s1", "s2"]
    first = sessions[0]
    assert first.session_key == "agent:main:explicit:s0" and first.agent_id == "main"
    assert first.updated_at_ms == 1_780_000_000_000
    events = jsonl_events(jsonl_dir / "s0.jsonl")
    assert first.event_count == len(events)
    compressed = rows(Path(store), "SELECT COUNT(*) FROM transcript_events WHERE event_zstd IS NOT NULL")[0][
        0
    ]
    assert compressed > 20
    assert list(host_store.iter_events(store, "s0")) == list(enumerate(events))


def test_snapshot_is_private_exclusive_and_reads_like_the_transcript(
    store_state: Path, jsonl_dir: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "snap"
    dest.mkdir()
    path = host_store.write_snapshot(store_of(store_state), "s1", str(dest))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert Path(path).read_text(encoding="utf-8").splitlines() == jsonl_events(jsonl_dir / "s1.jsonl")
    again = host_store.write_snapshot(store_of(store_state), "s1", str(dest))
    assert again != path  # never overwrites


def test_missing_and_garbage_stores_give_structured_errors(tmp_path: Path) -> None:
    with pytest.raises(LcmError) as missing:
        host_store.list_sessions(str(tmp_path / "nope.sqlite"))
    assert missing.value.code == "HOST_STORE_NOT_FOUND"
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    with pytest.raises(LcmError) as bad:
        list(host_store.iter_events(str(garbage), "s0"))
    assert bad.value.code == "HOST_STORE_UNREADABLE"
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(LcmError) as wrong:
        host_store.list_sessions(str(other))
    assert wrong.value.code == "HOST_STORE_UNREADABLE"

    db = tmp_path / "lcm.db"
    out = lcm("--db", str(db), "migrate-sessions", "--store", str(tmp_path / "nope.sqlite"))
    assert out.code == 3 and json.loads(out.stderr)["error"]["code"] == "HOST_STORE_NOT_FOUND"
    out = lcm("--db", str(db), "migrate-sessions", "--store", str(garbage))
    assert out.code == 5 and json.loads(out.stderr)["error"]["code"] == "HOST_STORE_UNREADABLE"
    assert not db.exists()


def test_a_discovered_garbage_store_is_reported_and_the_batch_goes_on(store_state: Path) -> None:
    bad = Path(host_store.store_path(str(store_state), "broken"))
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    data = migrate("--openclaw-dir", str(store_state), "--apply", code=1)  # a failed file: exit 1
    by_file = {(f["file"], f["sessionId"]): f for f in data["files"]}
    broken = by_file[(str(bad), None)]
    assert broken["status"] == "error" and broken["reason"] == "unreadable-store"
    assert data["importedFiles"] == 3 and data["errorFiles"] == 1


# --- importing ----------------------------------------------------------------------------


def test_store_import_gives_the_same_rows_as_the_jsonl_import(
    store_state: Path, jsonl_dir: Path, tmp_path: Path
) -> None:
    from_jsonl = tmp_path / "from-jsonl.db"
    migrate("--db", str(from_jsonl), "--sessions-dir", str(jsonl_dir), "--apply")
    from_store = tmp_path / "from-store.db"
    data = migrate("--db", str(from_store), "--openclaw-dir", str(store_state), "--apply")
    assert data["importedFiles"] == 3 and data["errorFiles"] == 0
    store = os.path.abspath(store_of(store_state))
    for index, report in enumerate(data["files"]):
        assert report["file"] == store and report["source"] == "sqlite"
        assert report["sessionId"] == f"s{index}" and report["sessionKey"] == f"agent:main:explicit:s{index}"
    expected = content_rows(from_jsonl)
    assert expected[0] and expected[1]
    assert content_rows(from_store) == expected
    keys = rows(from_store, "SELECT session_id, session_key FROM conversations ORDER BY 1")
    assert keys == [(f"s{i}", f"agent:main:explicit:s{i}") for i in range(3)]
    # The checkpoint names the session in the store as the host does, never the temporary snapshot.
    paths = {r[0] for r in rows(from_store, "SELECT session_file_path FROM conversation_bootstrap_state")}
    assert paths == {f"sqlite:main:s{i}:{store}" for i in range(3)}


def test_in_process_import_matches_too(
    store_state: Path, jsonl_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without forked readers (a threaded server, LCM_MIGRATE_WORKERS=0) the rows are the same."""
    monkeypatch.setenv("LCM_MIGRATE_WORKERS", "0")
    from_jsonl = tmp_path / "a.db"
    migrate("--db", str(from_jsonl), "--sessions-dir", str(jsonl_dir), "--apply")
    from_store = tmp_path / "b.db"
    migrate("--db", str(from_store), "--store", store_of(store_state), "--apply")
    assert content_rows(from_store) == content_rows(from_jsonl)


def test_dry_run_rerun_and_verify(store_state: Path) -> None:
    db = store_state / "lcm.db"
    dry = migrate("--openclaw-dir", str(store_state))
    assert not db.exists()
    assert [f["status"] for f in dry["files"]] == ["would-import"] * 3
    assert all(f["wouldImportMessages"] > 0 for f in dry["files"])
    applied = migrate("--openclaw-dir", str(store_state), "--apply")
    assert applied["importedMessages"] == sum(f["wouldImportMessages"] for f in dry["files"])
    again = migrate("--openclaw-dir", str(store_state), "--apply")
    assert [f["status"] for f in again["files"]] == ["up-to-date"] * 3 and again["importedMessages"] == 0
    verified = migrate("--openclaw-dir", str(store_state), "--verify")
    assert verified["completeFiles"] == 3 and verified["incompleteFiles"] == 0
    # Nothing was left in the temp dir.
    assert not [
        p for p in os.listdir(os.environ.get("TMPDIR", "/tmp")) if p.startswith(f"lcm-import-{os.getpid()}-")
    ]


def test_file_option_detects_a_store_and_since_limit_apply(store_state: Path, tmp_path: Path) -> None:
    store = store_of(store_state)
    conn = sqlite3.connect(store)
    conn.execute("UPDATE session_windows SET updated_at = 1700000000000 WHERE session_id = 's0'")
    conn.commit()
    conn.close()
    db = tmp_path / "lcm.db"
    data = migrate("--db", str(db), "--file", store)
    assert [f["sessionId"] for f in data["files"]] == ["s0", "s1", "s2"]
    data = migrate("--db", str(db), "--file", store, "--since", "2026-01-01")
    assert [f["sessionId"] for f in data["files"]] == ["s1", "s2"]
    data = migrate("--db", str(db), "--store", store, "--limit", "1")
    assert [f["sessionId"] for f in data["files"]] == ["s0"]


def test_a_session_in_both_forms_is_imported_once(jsonl_dir: Path, tmp_path: Path) -> None:
    """The host imported s0 and s1 into its store on upgrade; s2 is only a JSONL file."""
    root = jsonl_dir.parent.parent.parent
    store_from_jsonl(
        host_store.store_path(str(root), "main"), [(jsonl_dir / f"s{i}.jsonl", f"s{i}") for i in range(2)]
    )
    db = tmp_path / "lcm.db"
    # An earlier JSONL-only backfill (before this lcm knew stores).
    first = migrate("--db", str(db), "--sessions-dir", str(jsonl_dir), "--apply")
    assert first["importedFiles"] == 3
    before = content_rows(db)
    data = migrate("--db", str(db), "--openclaw-dir", str(root), "--apply")
    assert data["importedMessages"] == 0
    assert content_rows(db) == before
    by = {(f["source"], f["sessionId"]): f for f in data["files"]}
    assert by[("sqlite", "s0")]["status"] == "up-to-date" and by[("sqlite", "s1")]["status"] == "up-to-date"
    for sid in ("s0", "s1"):
        jsonl = by[("jsonl", sid)]
        assert jsonl["status"] == "skipped" and jsonl["reason"] == "in-host-store"
        assert jsonl["file"] == str(jsonl_dir / f"{sid}.jsonl")
    assert by[("jsonl", "s2")]["status"] == "up-to-date"
    # A fresh database: each session once, from the store where it is there.
    fresh = tmp_path / "fresh.db"
    data = migrate("--db", str(fresh), "--openclaw-dir", str(root), "--apply")
    assert content_rows(fresh) == before
    assert data["importedFiles"] == 3 and data["skippedFiles"] == 2


def test_side_files_are_skipped_and_reported(jsonl_dir: Path, tmp_path: Path) -> None:
    write_lines(jsonl_dir / "s0.trajectory.jsonl", [{"kind": "step", "n": i} for i in range(5)])
    write_lines(jsonl_dir / "s1.notes.jsonl", [{"note": "beside s1"}])
    # A file with a session header is a transcript whatever its name.
    write_transcript(jsonl_dir / "s9.extra.jsonl", session_id="s9", messages=5, seed=9)
    db = tmp_path / "lcm.db"
    data = migrate("--db", str(db), "--sessions-dir", str(jsonl_dir), "--apply")
    by = {Path(f["file"]).name: f for f in data["files"]}
    for name in ("s0.trajectory.jsonl", "s1.notes.jsonl"):
        assert by[name]["status"] == "skipped" and by[name]["reason"] == "side-file", name
    assert by["s9.extra.jsonl"]["status"] == "imported"
    sessions = {r[0] for r in rows(db, "SELECT session_id FROM conversations")}
    assert sessions == {"s0", "s1", "s2", "s9"}


def test_malformed_and_torn_events_are_reported_per_event(tmp_path: Path, jsonl_dir: Path) -> None:
    store = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    conn = create_store(store)
    events = jsonl_events(jsonl_dir / "s2.jsonl")
    add_session(conn, "s2", events, compress_at=200)
    zstd_seqs = [r[0] for r in conn.execute("SELECT seq FROM transcript_events WHERE event_zstd IS NOT NULL")]
    plain = [
        r[0]
        for r in conn.execute("SELECT seq FROM transcript_events WHERE event_json IS NOT NULL AND seq > 0")
    ]
    bad_json, torn, short = plain[1], zstd_seqs[2], zstd_seqs[4]
    conn.execute(
        'UPDATE transcript_events SET event_json = \'{"type":"message",\' WHERE seq = ?', (bad_json,)
    )
    conn.execute("UPDATE transcript_events SET event_zstd = substr(event_zstd, 1, 20) WHERE seq = ?", (torn,))
    conn.execute(
        "UPDATE transcript_events SET event_utf8_bytes = event_utf8_bytes + 5 WHERE seq = ?", (short,)
    )
    conn.execute(
        "INSERT INTO transcript_events VALUES ('s2', 10000, NULL, 0, ?, 3, '{}')", (compress(b"\xff\xfe{"),)
    )
    conn.close()
    db = tmp_path / "lcm.db"
    data = migrate("--db", str(db), "--openclaw-dir", str(tmp_path), "--apply")
    (report,) = data["files"]
    assert report["status"] == "imported" and report["source"] == "sqlite"
    skipped = report["skippedLines"]
    assert skipped["byReason"]["zstd_corrupt"] == 1 and skipped["byReason"]["size_mismatch"] == 1
    listed = {entry["seq"]: entry["reason"] for entry in skipped["lines"]}
    assert listed[torn] == "zstd_corrupt" and listed[short] == "size_mismatch"
    assert listed[bad_json] == "invalid_json"
    assert listed[10000] == "not_utf8"  # an event whose bytes are not UTF-8, as a JSONL line
    assert all("line" not in entry for entry in skipped["lines"])


def test_archived_transcripts_are_reported_not_imported(store_state: Path) -> None:
    conn = sqlite3.connect(store_of(store_state))
    conn.execute(
        """INSERT INTO session_transcript_archives VALUES
           ('old', 'g1', 'agent:main:main', 'reset', 'identity', X'7B7D', ?, 'old.jsonl.reset.1', 0)""",
        ("0" * 64,),
    )
    conn.commit()
    conn.close()
    data = migrate("--openclaw-dir", str(store_state))
    (archived,) = [f for f in data["files"] if f["source"] == "sqlite-archive"]
    assert archived["status"] == "skipped" and archived["reason"] == "archived-transcript"
    assert archived["sessionId"] == "old" and archived["archive"]["reason"] == "reset"


# --- a live host ---------------------------------------------------------------------------

_WRITER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO transcript_events VALUES ('s0', 99999, '{}', 0, NULL, 2, NULL)")
print("holding", flush=True)
time.sleep(60)
"""


def test_a_store_locked_by_a_writer_is_read_without_waiting(store_state: Path) -> None:
    store = store_of(store_state)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, store], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "holding"
        started = time.monotonic()
        data = migrate("--openclaw-dir", str(store_state), "--apply")
        assert time.monotonic() - started < 4.5  # under the store's busy timeout: no wait at all
        assert data["importedFiles"] == 3 and data["errorFiles"] == 0
        seen = [e["seq"] for f in data["files"] for e in f["skippedLines"]["lines"]]
        assert 99999 not in seen  # the uncommitted event is not read
    finally:
        writer.kill()
        writer.wait()


def test_killed_import_of_a_store_leaves_whole_sessions(tmp_path: Path) -> None:
    jsonl = tmp_path / "src"
    expected: dict[str, int] = {}
    pairs = []
    for index in range(10):
        generated = write_transcript(
            jsonl / f"k{index:02d}.jsonl", session_id=f"k{index:02d}", messages=400, seed=index, entry_every=0
        )
        expected[f"k{index:02d}"] = len(generated.expected_ids)
        pairs.append((generated.path, f"k{index:02d}"))
    root = tmp_path / "state"
    store_from_jsonl(host_store.store_path(str(root), "main"), pairs, compress_at=512)
    db = root / "lcm.db"
    rng = random.Random(7)
    exe = Path(sys.executable).with_name("lcm")
    for _ in range(6):
        proc = subprocess.Popen(
            [str(exe), "--openclaw-dir", str(root), "migrate-sessions", "--apply"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.1, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if db.exists():
            conn = sqlite3.connect(db)
            # A new lcm.db appears only with its whole schema (built aside, then linked in).
            assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'conversations'").fetchone()
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            for session_id, count in conn.execute(
                "SELECT c.session_id, COUNT(m.message_id) FROM conversations c LEFT JOIN messages m USING (conversation_id) GROUP BY c.conversation_id"
            ):
                assert count == expected[session_id], f"{session_id} half-imported: {count}"
            conn.close()
    done = lcm_process("--openclaw-dir", str(root), "migrate-sessions", "--apply")
    assert done.code == 0, done.stderr
    verified = lcm_process("--openclaw-dir", str(root), "migrate-sessions", "--verify").json["data"]
    assert verified["completeFiles"] == 10
    assert rows(db, "SELECT COUNT(*) FROM messages")[0][0] == sum(expected.values())


def test_start_up_does_not_load_zstd(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom lcm_cli.cli import main\nmain(['--version'])\n"
        "assert 'zstandard' not in sys.modules and 'compression.zstd' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_only_the_current_session_of_a_key_carries_the_key(tmp_path: Path) -> None:
    """A key reset once has two windows: the current one gets the key, the earlier none."""
    state = tmp_path / "state"
    store = Path(host_store.store_path(str(state), "main"))
    conn = create_store(store)
    key = "agent:main:telegram:direct:7"
    for sid, when in (("old-window", 1_780_000_000_000), ("new-window", 1_780_000_500_000)):
        sessions = tmp_path / sid
        write_transcript(sessions / f"{sid}.jsonl", session_id=sid, messages=4, seed=3)
        add_session(conn, sid, jsonl_events(sessions / f"{sid}.jsonl"), session_key=key, updated_at=when)
    conn.close()  # add_session made new-window the key's current session (it ran last)
    data = migrate("--openclaw-dir", str(state), "--apply")
    assert [(f["sessionId"], f["sessionKey"]) for f in data["files"]] == [
        ("new-window", key),
        ("old-window", None),
    ]
    keys = rows(state / "lcm.db", "SELECT session_id, session_key FROM conversations ORDER BY session_id")
    assert keys == [("new-window", key), ("old-window", None)]


# --- a store built to hurt: memory stays bounded, bad rows are skipped by seq -------------


@pytest.fixture
def hostile_state(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A state dir whose store holds compression bombs, events at the host's cap, an
    over-cap value, and rows with a non-numeric seq, a NULL payload, wrong-typed columns."""
    pytest.importorskip("zstandard")
    from tests.support.host_store import hostile_store

    transcript = tmp_path / "good.jsonl"
    write_transcript(transcript, session_id="h1", messages=20, seed=1)
    root = tmp_path / "hostile"
    named = hostile_store(
        host_store.store_path(str(root), "main"), jsonl_events(transcript), at_cap=12, plain_at_cap=5
    )
    return root, named


@pytest.mark.slow  # a hostile store large enough to show memory growth
def test_a_hostile_store_imports_within_256_mib(
    hostile_state: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """`--apply` as a subprocess of a fresh small launcher (its RUSAGE_CHILDREN peak is the
    import's, not pytest's): bombs unpacked to their header's 1 GiB used to take ~1 GiB."""
    root, named = hostile_state
    store = host_store.store_path(str(root), "main")
    assert os.path.getsize(store) < 64 * 1024 * 1024  # the bombs are KBs; the plain cap rows most of it
    exe = Path(sys.executable).with_name("lcm")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "lcm_cli"]
    launcher = Path(__file__).resolve().parents[1] / "support" / "peak_rss.py"
    result = tmp_path / "peak.json"
    db = tmp_path / "lcm.db"
    subprocess.run(
        [
            sys.executable,
            str(launcher),
            str(result),
            *command,
            "--db",
            str(db),
            "migrate-sessions",
            "--store",
            store,
            "--apply",
        ],
        check=True,
        timeout=600,
    )
    measured = json.loads(result.read_text())
    assert measured["code"] == 0, measured["stderr"]
    assert "Traceback" not in measured["stderr"]
    assert measured["peakKiB"] < 256 * 1024, measured["peakKiB"]
    (report,) = json.loads(measured["stdout"])["data"]["files"]
    assert report["status"] == "imported"
    listed = {entry["seq"]: entry["reason"] for entry in report["skippedLines"]["lines"]}
    assert listed[named["bomb-header"]] == "size_mismatch"  # the header's 1 GiB, never allocated
    assert listed[named["bomb-declared"]] == "too_large"
    assert listed[named["bomb-stream"]] == "zstd_corrupt"  # stopped at the declared 4 MiB
    assert listed[named["plain-over"]] == "too_large"
    # The big events and the row after every bad one are imported, each of the cap's size.
    sizes = rows(db, "SELECT length(content) FROM messages WHERE content LIKE 'a long paste%'")
    assert len(sizes) == 12 + 5 and all(size[0] > 4_000_000 for size in sizes)
    assert rows(db, "SELECT COUNT(*) FROM messages WHERE content = 'the row after the bad ones'") == [(1,)]


def test_bad_rows_are_skipped_by_seq_and_the_rest_imported(
    hostile_state: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, named = hostile_state
    db = tmp_path / "lcm.db"
    data = migrate("--db", str(db), "--store", host_store.store_path(str(root), "main"), "--apply")
    assert data["errorFiles"] == 0 and data["importedFiles"] == 1
    (report,) = data["files"]
    skipped = report["skippedLines"]
    listed = {entry["seq"]: entry["reason"] for entry in skipped["lines"]}
    assert listed[named["null-payload"]] == "empty_event"
    assert listed[named["zstd-as-text"]] == "wrong_type"
    assert listed[named["json-as-blob"]] == "wrong_type"
    assert listed[named["size-as-text"]] == "wrong_type"
    # Rows whose seq is not an integer come last, named by their value when it is short.
    assert listed["seven"] == "bad_seq" and listed[2.5] == "bad_seq" and listed[None] == "bad_seq"
    assert skipped["byReason"]["bad_seq"] == 3
    # A second run finds everything in place: the advice to run --apply again can work.
    again = migrate("--db", str(db), "--store", host_store.store_path(str(root), "main"), "--apply")
    assert again["files"][0]["status"] == "up-to-date"
    verify = migrate("--db", str(db), "--store", host_store.store_path(str(root), "main"), "--verify")
    assert verify["files"][0]["status"] == "complete"


def test_pages_are_cut_by_bytes_and_lose_no_row(
    store_state: Path, jsonl_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = jsonl_events(jsonl_dir / "s0.jsonl")
    monkeypatch.setattr(host_store, "PAGE_BYTES", 2000)  # a few events a page
    assert list(host_store.iter_events(store_of(store_state), "s0")) == list(enumerate(events))
