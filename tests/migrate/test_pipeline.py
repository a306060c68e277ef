"""`lcm migrate-sessions` with forked readers: same rows as in-process, and a reader that dies.

Mostly in-process through `api.call`, so a test can make the (really forked) reader die
at a chosen moment: the child inherits the patched module. The writer-killed test runs
the real `lcm` executable. Databases are real files.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.api import call
from lcm_cli.migrate import importer, pipeline, staging
from tests.support.processes import process_gone
from tests.support.transcripts import write_transcript

FILES = 6


@pytest.fixture
def state(tmp_path: Path) -> Path:
    root = tmp_path / "state"
    sessions = root / "agents" / "main" / "sessions"
    for index in range(FILES):
        write_transcript(
            sessions / f"p{index}.jsonl", session_id=f"p{index}", messages=40 + index, seed=index
        )
    return root


def migrate(
    state: Path, db: Path, monkeypatch: pytest.MonkeyPatch, workers: str | None, **params: Any
) -> Any:
    if workers is None:
        monkeypatch.delenv(pipeline.WORKERS_ENV, raising=False)
    else:
        monkeypatch.setenv(pipeline.WORKERS_ENV, workers)
    return call("migrate.sessions", params, db=str(db), openclaw_dir=str(state))["data"]


def dump(db: Path) -> list[Any]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out: list[Any] = []
        for sql in (
            "SELECT conversation_id, session_id, session_key, title FROM conversations ORDER BY 1",
            "SELECT * FROM messages ORDER BY message_id",
            "SELECT message_id, session_id, part_type, ordinal, text_content, tool_call_id, tool_name,"
            " tool_input, tool_output, metadata FROM message_parts ORDER BY rowid",  # part_id is random
            "SELECT conversation_id, ordinal, item_type, message_id FROM context_items ORDER BY 1, 2",
            "SELECT conversation_id, session_file_path, last_processed_entry_hash, last_processed_entry_id"
            " FROM conversation_bootstrap_state ORDER BY 1",
        ):
            out.append(conn.execute(sql).fetchall())
        return out
    finally:
        conn.close()


def sessions_in(db: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {
            r[0]
            for r in conn.execute(
                "SELECT session_id FROM conversations c WHERE EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.conversation_id)"
            )
        }
    finally:
        conn.close()


def test_forking_is_used_here() -> None:
    # The tests below exercise the forked path only if this holds.
    assert pipeline.can_fork() and threading.active_count() == 1
    assert pipeline.worker_count(2) == 2


def test_forked_readers_write_exactly_the_in_process_rows(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = migrate(state, tmp_path / "serial.db", monkeypatch, "0", apply=True)
    forked = migrate(state, tmp_path / "forked.db", monkeypatch, None, apply=True)
    assert serial["importedMessages"] == forked["importedMessages"] > 0
    strip = [{k: v for k, v in r.items() if k not in ("file",)} for r in serial["files"]]
    assert strip == [{k: v for k, v in r.items() if k not in ("file",)} for r in forked["files"]]
    a, b = dump(tmp_path / "serial.db"), dump(tmp_path / "forked.db")
    # messages.created_at comes from the transcript; only conversation times differ (not dumped).
    assert a == b
    # Dry run and verify give the same reports either way, in discovery order.
    for mode in ({}, {"verify": True}):
        one = migrate(state, tmp_path / "forked.db", monkeypatch, "0", **mode)
        two = migrate(state, tmp_path / "forked.db", monkeypatch, None, **mode)
        assert one["files"] == two["files"]


def test_no_fork_while_another_thread_runs(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A threaded process (lcm serve) reads in-process: forking it could copy a held lock.
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert pipeline.worker_count(2) == 0
        monkeypatch.setattr(importer, "_produce", _die_after(0))  # would fail any forked file
        data = migrate(state, tmp_path / "lcm.db", monkeypatch, None, apply=True)
        assert data["errorFiles"] == 0 and data["importedFiles"] == FILES
    finally:
        stop.set()
        thread.join()


def _die_after(sends: int) -> Any:
    """A reader body that SIGKILLs its own process after ``sends`` files."""
    real = importer._produce

    def produce(send: Any, acquire: Any, **kwargs: Any) -> None:
        count = 0

        def counting(obj: Any) -> None:
            nonlocal count
            if count == sends:
                os.kill(os.getpid(), signal.SIGKILL)
            count += 1
            send(obj)

        real(counting, acquire, **kwargs)

    return produce


def _die_while_staging(after: int) -> Any:
    """A staging writer that SIGKILLs its process at its ``after``-th message."""
    real = staging.StagingWriter.add

    def add(self: Any, message: Any) -> None:
        if self.count == after:
            os.kill(os.getpid(), signal.SIGKILL)
        real(self, message)

    return add


@pytest.mark.parametrize("where", ["first-file", "second-file", "last-file", "staging"])
def test_a_reader_killed_midway_fails_only_its_file(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # Each reader dies before handing over its first, second or last file, or in the
    # middle of staging a file's rows: the file it was on is reported, nothing of it is
    # stored, every other file is imported (the dead reader's remaining files
    # in-process), nothing hangs, and no staging file is left behind.
    db = tmp_path / "lcm.db"
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    if where == "staging":
        monkeypatch.setattr(staging.StagingWriter, "add", _die_while_staging(7))
    else:
        sends = {"first-file": 0, "second-file": 1, "last-file": FILES // importer.APPLY_READERS - 1}[where]
        monkeypatch.setattr(importer, "_produce", _die_after(sends))
    data = migrate(state, db, monkeypatch, None, apply=True)
    assert list(temp.iterdir()) == []
    failed = [r for r in data["files"] if r["status"] == "error"]
    assert len(failed) == importer.APPLY_READERS
    for report in failed:
        assert report["reason"] == "import-failed"
        assert "killed by signal 9" in report["error"] and "Run --apply again" in report["error"]
        assert report["importedMessages"] == 0
    imported = {r["sessionId"] for r in data["files"] if r["status"] == "imported"}
    assert len(imported) == FILES - len(failed)
    assert sessions_in(db) == imported  # the failed files left no message behind
    # A re-run (readers healthy again) completes the database.
    monkeypatch.undo()
    again = migrate(state, db, monkeypatch, None, apply=True)
    assert again["errorFiles"] == 0 and again["importedFiles"] == len(failed)
    assert sessions_in(db) == {f"p{i}" for i in range(FILES)}
    assert migrate(state, db, monkeypatch, None, verify=True)["incompleteFiles"] == 0


def test_a_scanning_child_killed_fails_its_files_in_a_dry_run(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importer._read_one
    victim = str(state / "agents" / "main" / "sessions" / "p2.jsonl")

    def read_one(conn: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        if path == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(conn, path, *args, **kwargs)

    order = [r["file"] for r in migrate(state, tmp_path / "lcm.db", monkeypatch, "0")["files"]]
    monkeypatch.setattr(importer, "_read_one", read_one)
    data = migrate(state, tmp_path / "lcm.db", monkeypatch, None)
    assert [r["file"] for r in data["files"]] == order  # discovery order, every file once
    by_file = {r["file"]: r for r in data["files"]}
    assert by_file[victim]["status"] == "error" and by_file[victim]["reason"] == "read-failed"
    assert "killed by signal 9" in by_file[victim]["error"]
    # The dead child's other files fail the same way; the other child's are all there.
    statuses = {r["status"] for r in data["files"]}
    assert statuses == {"error", "would-import"}
    assert all(r["reason"] == "read-failed" for r in data["files"] if r["status"] == "error")


@pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"), reason="needs /proc"
)
def test_readers_exit_when_the_writer_is_killed(tmp_path: Path) -> None:
    root = tmp_path / "state"
    sessions = root / "agents" / "main" / "sessions"
    for index in range(12):
        write_transcript(
            sessions / f"k{index:02d}.jsonl", session_id=f"k{index:02d}", messages=400, seed=index
        )
    exe = Path(sys.executable).with_name("lcm")
    proc = subprocess.Popen(
        [str(exe), "--openclaw-dir", str(root), "migrate-sessions", "--apply"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    children: list[int] = []
    deadline = time.monotonic() + 10
    while not children and proc.poll() is None and time.monotonic() < deadline:
        try:
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as listing:
                children = [int(pid) for pid in listing.read().split()]
        except OSError:
            break
        time.sleep(0.005)
    assert children, "the import forked no reader"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while not all(process_gone(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(process_gone(pid) for pid in children), "a reader outlived its writer"
    # Whatever was committed is whole; a re-run completes the rest.
    again = call("migrate.sessions", {"apply": True}, openclaw_dir=str(root))["data"]
    assert again["errorFiles"] == 0
    verified = call("migrate.sessions", {"verify": True}, openclaw_dir=str(root))["data"]
    assert verified["completeFiles"] == 12


def test_a_session_that_appears_meanwhile_is_read_against_its_conversation(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The readers decide what to stage from the sessions the database held when the
    # import started. A live host can create one of those conversations in between:
    # its staged rows are then dropped and the writer reads the file against it.
    db = tmp_path / "lcm.db"
    sessions = state / "agents" / "main" / "sessions"
    first = [str(sessions / f"p{i}.jsonl") for i in range(3)]
    migrate(state, db, monkeypatch, "0", apply=True, file=first)
    monkeypatch.setattr(importer, "_known_sessions", lambda path: set())  # as if started earlier
    parent = os.getpid()
    rescanned: list[str] = []
    real_scan = importer._scan

    def scan(path: str, *args: Any, **kwargs: Any) -> Any:
        if os.getpid() == parent:
            rescanned.append(path)
        return real_scan(path, *args, **kwargs)

    monkeypatch.setattr(importer, "_scan", scan)
    data = migrate(state, db, monkeypatch, None, apply=True)
    assert sorted(rescanned) == first  # only the files whose conversation appeared
    by_session = {r["sessionId"]: r for r in data["files"]}
    for index in range(FILES):
        report = by_session[f"p{index}"]
        assert report["status"] == ("up-to-date" if index < 3 else "imported")
        assert report["conversation"] == ("existing" if index < 3 else "new")
    serial = tmp_path / "serial.db"
    migrate(state, serial, monkeypatch, "0", apply=True)
    assert dump(db) == dump(serial)  # nothing doubled, nothing missing


def test_a_reader_that_cannot_stage_leaves_the_file_to_the_writer(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_room(self: Any, path: str) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(staging.StagingWriter, "__init__", no_room)
    data = migrate(state, tmp_path / "forked.db", monkeypatch, None, apply=True)
    assert data["errorFiles"] == 0 and data["importedFiles"] == FILES
    migrate(state, tmp_path / "serial.db", monkeypatch, "0", apply=True)
    assert dump(tmp_path / "forked.db") == dump(tmp_path / "serial.db")


def test_staging_files_are_gone_after_an_import(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    data = migrate(state, tmp_path / "lcm.db", monkeypatch, None, apply=True)
    assert data["importedFiles"] == FILES
    assert list(temp.iterdir()) == []


def test_no_usable_temp_dir_means_reading_in_process(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    monkeypatch.setattr(importer, "_produce", _die_after(0))  # would fail any forked file
    data = migrate(state, tmp_path / "lcm.db", monkeypatch, None, apply=True)
    assert data["errorFiles"] == 0 and data["importedFiles"] == FILES


# --- the share-out: the largest transcript first, then the fewest bytes so far ----------


def test_the_first_reader_starts_with_the_largest_file(tmp_path: Path) -> None:
    sizes = [300, 200, 1000, 100, 400, 250, 900, 50]
    files = []
    for index, size in enumerate(sizes):
        path = tmp_path / f"f{index}.jsonl"
        path.write_bytes(b"x" * size)
        files.append(str(path))
    plan = importer._share_out(files, 2)
    assert plan[0][0] == 2  # the largest, wherever it is in discovery order
    assert sorted(i for items in plan for i in items) == list(range(len(sizes)))
    for items in plan:  # after it, each reader keeps to discovery order
        rest = [i for i in items if i != 2]
        assert rest == sorted(rest)
    # The other files go to the reader with the fewest bytes so far: the second reader
    # takes the first ones, while the first is on the largest.
    assert plan == [[2, 5, 7], [0, 1, 3, 4, 6]]
    assert importer._share_out(files, 1) == [list(range(len(sizes)))]  # one reader: in order


def _feeding(items: list[tuple[int, str]], die_before: int | None = None) -> Any:
    def produce(send: Any, acquire: Any) -> None:
        for count, item in enumerate(items):
            if count == die_before:
                os.kill(os.getpid(), signal.SIGKILL)
            send(item)

    return produce


def test_a_feed_gives_items_in_the_order_asked_keeping_those_built_ahead() -> None:
    plan = [[2, 0, 3], [1]]
    feed = pipeline.Feed(
        [
            pipeline.Reader(_feeding([(2, "c"), (0, "a"), (3, "d")])),
            pipeline.Reader(_feeding([(1, "b")])),
        ],
        plan,
    )
    try:
        assert [feed.take(i) for i in range(4)] == ["a", "b", "c", "d"]
        assert feed.take(9) is None  # nobody's item: read it yourself
    finally:
        feed.close()


def test_a_feed_fails_only_the_item_its_dead_reader_was_building() -> None:
    # The first reader dies while building item 2, which it took on first: item 0
    # (asked for earlier, not yet built) is left to the caller; item 2 is the one lost.
    feed = pipeline.Feed([pipeline.Reader(_feeding([(2, "c"), (0, "a")], die_before=0))], [[2, 0]])
    try:
        assert feed.take(0) is None
        with pytest.raises(pipeline.ReaderDied, match="killed by signal 9"):
            feed.take(2)
    finally:
        feed.close()
    # Dying after item 2 was sent: 2 still arrives, and 0 is the one it was on.
    feed = pipeline.Feed([pipeline.Reader(_feeding([(2, "c"), (0, "a")], die_before=1))], [[2, 0]])
    try:
        with pytest.raises(pipeline.ReaderDied):
            feed.take(0)
        assert feed.take(2) == "c"
    finally:
        feed.close()


def test_the_reader_killed_on_the_largest_file_fails_that_file_alone(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The largest transcript is built first but written in its turn; the reader dies
    # staging it after its earlier files are written. Only that file fails.
    largest = FILES // 2
    write_transcript(
        state / "agents" / "main" / "sessions" / f"p{largest}.jsonl",
        session_id=f"p{largest}",
        messages=400,
        seed=99,
    )
    real = staging.StagingWriter.add

    def add(self: Any, message: Any) -> None:
        if self.path.endswith(f"-{largest}.db") and self.count == 200:
            os.kill(os.getpid(), signal.SIGKILL)
        real(self, message)

    monkeypatch.setattr(staging.StagingWriter, "add", add)
    db = tmp_path / "lcm.db"
    data = migrate(state, db, monkeypatch, None, apply=True)
    failed = [r for r in data["files"] if r["status"] == "error"]
    assert [Path(r["file"]).name for r in failed] == [f"p{largest}.jsonl"]
    assert "killed by signal 9" in failed[0]["error"]
    assert sessions_in(db) == {f"p{i}" for i in range(FILES)} - {f"p{largest}"}
    monkeypatch.undo()
    again = migrate(state, db, monkeypatch, None, apply=True)
    assert again["errorFiles"] == 0 and again["importedFiles"] == 1
    assert sessions_in(db) == {f"p{i}" for i in range(FILES)}
