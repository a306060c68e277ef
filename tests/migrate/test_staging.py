"""The pieces behind the fast `migrate-sessions --apply`: staging files, part ids spelled in
SQL, parse-once scanning, the span reader, reader credits and stale staging directories.

Everything runs against real SQLite files, real transcripts from the generator and real
forked processes.
"""

from __future__ import annotations

import os
import random
import select
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.db.store import Store
from lcm_cli.engine.db.store.ids import PART_ID_SQL, PartIds
from lcm_cli.engine.transcript import reader as transcript
from lcm_cli.engine.transcript.lines import SpanReader
from lcm_cli.engine.transcript.reader import scan_transcript
from lcm_cli.migrate import pipeline, staging
from tests.support.processes import process_gone
from tests.support.transcripts import append_garbage, append_truncated, write_transcript


def _transcript(path: Path, **kwargs: Any) -> Path:
    write_transcript(path, session_id=path.stem, **kwargs)
    return path


# --- part ids -------------------------------------------------------------------------


@pytest.mark.parametrize("start", [None, (1 << 62) - 3])
def test_sql_spelled_part_ids_continue_the_python_sequence(start: int | None) -> None:
    ids = PartIds()
    if start is not None:
        ids._counter = start  # near the top of the 62-bit counter
    twin = PartIds()
    twin._prefix, twin._counter = ids._prefix, ids._counter
    prefix, first = ids.reserve(5)
    conn = sqlite3.connect(":memory:")
    sql = "SELECT " + PART_ID_SQL.format(prefix=":prefix", c=":first + :k")
    spelled = [conn.execute(sql, {"prefix": prefix, "first": first, "k": k}).fetchone()[0] for k in range(5)]
    assert spelled == [twin.next() for _ in range(5)]
    assert ids.next() == twin.next()  # reserve() moved the counter past the five
    for text in spelled:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)


# --- staging files --------------------------------------------------------------------


def _rows(db: Path) -> dict[str, list[Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {
            "messages": conn.execute("SELECT * FROM messages ORDER BY message_id").fetchall(),
            "parts": conn.execute("SELECT * FROM message_parts ORDER BY rowid").fetchall(),
            "fts": conn.execute("SELECT rowid, content FROM messages_fts ORDER BY rowid").fetchall(),
            "context": conn.execute(
                "SELECT conversation_id, ordinal, item_type, message_id, summary_id, created_at"
                " FROM context_items ORDER BY conversation_id, ordinal"
            ).fetchall(),
            "sequence": conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchall(),
        }
    finally:
        conn.close()


def _fresh_store(db: Path, prefix: str, counter: int) -> Store:
    store = Store.open(db)
    store.part_ids._prefix, store.part_ids._counter = prefix, counter
    # Some messages already there, so the copied ids and seqs are offsets, not 1..n.
    other = store.create_conversation("other-session")
    earlier = [
        {"role": "user", "content": f"earlier {i}", "created_at": "2026-01-01 00:00:00"} for i in range(3)
    ]
    store.add_messages(other, earlier)
    return store


def test_a_staged_copy_stores_exactly_what_add_messages_stores(tmp_path: Path) -> None:
    source = _transcript(tmp_path / "rich.jsonl", messages=160, seed=7, rare_every=5)
    messages = list(scan_transcript(source).iter_messages())
    # An externalized-payload reference: FTS indexes its header, not the content.
    messages[3] = messages[3]._replace(
        content="[LCM File: file_0123456789abcdef]\nExploration Summary:\nsome lines"
    )
    messages[4] = messages[4]._replace(created_at=None)  # "now", on either path
    assert any(len(m.parts) > 1 for m in messages)
    prefix, counter = str(uuid.uuid4())[:19], 12345
    now = "2026-11-29 12:00:00"

    plain = _fresh_store(tmp_path / "plain.db", prefix, counter)
    conversation = plain.create_conversation("rich")
    for start in range(0, len(messages), 64):  # several batches, as the importer writes
        batch = [m.as_row() | {"created_at": m.created_at or now} for m in messages[start : start + 64]]
        plain.add_messages(conversation, batch)
    plain.conn.execute("UPDATE context_items SET created_at = ?", (now,))
    plain.close()

    staged_path = tmp_path / "stage.db"
    writer = staging.StagingWriter(str(staged_path))
    for message in messages:
        writer.add(message)
    writer.close()
    copied = _fresh_store(tmp_path / "copied.db", prefix, counter)
    conversation = copied.create_conversation("rich")
    with staging.attached(copied.conn, str(staged_path), "stage"), copied.transaction():
        assert staging.copy_staged(copied, "stage", conversation, "rich", now) == len(messages)
    copied.conn.execute("UPDATE context_items SET created_at = ?", (now,))
    assert copied.part_ids.next() == plain_next(prefix, counter, len(_rows(tmp_path / "plain.db")["parts"]))
    copied.close()

    a, b = _rows(tmp_path / "plain.db"), _rows(tmp_path / "copied.db")
    assert a == b
    # Message 4 of the conversation (ids 1-3 are the earlier ones) is indexed by its header.
    assert dict(a["fts"])[3 + 4] == "[LCM File: file_0123456789abcdef]\nsome lines"


def plain_next(prefix: str, counter: int, used: int) -> str:
    ids = PartIds()
    ids._prefix, ids._counter = prefix, counter + used
    return ids.next()


def test_a_failed_staged_copy_leaves_nothing(tmp_path: Path) -> None:
    source = _transcript(tmp_path / "s.jsonl", messages=30)
    staged_path = tmp_path / "stage.db"
    writer = staging.StagingWriter(str(staged_path))
    for message in scan_transcript(source).iter_messages():
        writer.add(message)
    writer.close()
    store = Store.open(tmp_path / "lcm.db")
    conversation = store.create_conversation("s")
    with pytest.raises(sqlite3.OperationalError), staging.attached(store.conn, str(staged_path), "stage"):
        store.conn.execute("DROP TABLE stage.p")  # a damaged staging file
        with store.transaction():
            staging.copy_staged(store, "stage", conversation, "s", "2026-01-01 00:00:00")
    assert store.conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (0,)
    assert store.conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == (0,)
    # The connection is as it was: checks back on, nothing attached.
    assert store.conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
    assert store.conn.execute("PRAGMA ignore_check_constraints").fetchone() == (0,)
    assert [row[1] for row in store.conn.execute("PRAGMA database_list")] == ["main"]
    store.close()


def test_every_role_and_part_type_the_reader_builds_passes_the_schemas_checks(tmp_path: Path) -> None:
    # copy_staged skips the CHECKs on messages.role and message_parts.part_type (they
    # cost SQLite a temporary index per row); it may only because every value the
    # builder can produce is one the schema accepts. Inserted here with checks on.
    from lcm_cli.engine.transcript import message as builder
    from lcm_cli.engine.transcript.records import PERSISTABLE_ROLES

    roles = {
        built.role
        for built in (builder.build_message({"role": r, "content": "x"}) for r in PERSISTABLE_ROLES)
    }
    part_types = set(builder._PART_TYPES.values()) | {"text", "reasoning", "agent"}
    store = Store.open(tmp_path / "lcm.db")
    conversation = store.create_conversation("s")
    assert store.conn.execute("PRAGMA ignore_check_constraints").fetchone() == (0,)
    with store.transaction():
        store.add_messages(conversation, [{"role": role, "content": role} for role in sorted(roles)])
        for ordinal, part_type in enumerate(sorted(part_types)):
            store.conn.execute(
                "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal)"
                " VALUES (?, 1, 's', ?, ?)",
                (f"p{ordinal}", part_type, ordinal),
            )
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):  # the checks are live here
            store.conn.execute(
                "INSERT INTO message_parts (part_id, message_id, session_id, part_type, ordinal)"
                " VALUES ('bad', 1, 's', 'not-a-type', 99)"
            )
    store.close()


# --- parse once -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"messages": 120, "seed": 1, "rare_every": 4},
        {"messages": 80, "seed": 2, "branches": True},
        {"messages": 60, "seed": 3, "with_ids": False},
        {"messages": 60, "seed": 4, "style": "bare"},
        {"messages": 90, "seed": 5, "reset_at": 40},
    ],
)
def test_keeping_the_first_parse_builds_the_same_messages(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    path = _transcript(tmp_path / "t.jsonl", **kwargs)
    append_garbage(path)
    append_truncated(path)
    twice, once = scan_transcript(path), scan_transcript(path, keep_parsed=True)
    assert once._parsed and twice._parsed is None
    assert (once.skipped, once.warnings, once.structural, once.candidate_count) == (
        twice.skipped,
        twice.warnings,
        twice.structural,
        twice.candidate_count,
    )
    assert list(once.iter_messages()) == list(twice.iter_messages())
    # A want filter sees the same candidates either way.
    wanted = [c.position for c in twice.iter_candidates() if c.position % 3 == 0]
    keep = set(wanted)
    assert [m.line for m in once.iter_messages(lambda c: c.position in keep)] == [
        m.line for m in twice.iter_messages(lambda c: c.position in keep)
    ]
    once.drop_parsed()
    assert list(once.iter_messages()) == list(twice.iter_messages())  # read again from the file


def test_large_files_are_not_kept_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _transcript(tmp_path / "t.jsonl", messages=40)
    monkeypatch.setattr(transcript, "KEEP_PARSED_MAX_BYTES", os.path.getsize(path) - 1)
    assert scan_transcript(path, keep_parsed=True)._parsed is None


def test_the_span_reader_returns_every_span_as_a_direct_read(tmp_path: Path) -> None:
    data = bytes(random.Random(3).randrange(256) for _ in range(300_000))
    path = tmp_path / "blob"
    path.write_bytes(data)
    rng = random.Random(4)
    spans = sorted((rng.randrange(len(data)), rng.randrange(1, 5000)) for _ in range(400))
    spans += [(10, 100), (0, 1 << 20), (len(data) - 5, 50)]  # backwards, larger than a chunk, past the end
    with open(path, "rb") as handle:
        reader = SpanReader(handle)
        for offset, length in spans:
            assert reader.read(offset, length) == data[offset : offset + length]


# --- reader credits and staging directories ----------------------------------------------


def test_credits_bound_how_far_a_reader_runs_ahead() -> None:
    def produce(send: Any, acquire: Any) -> None:
        for number in range(5):
            acquire()
            send(number)

    reader = pipeline.Reader(produce, credits=2)
    try:
        assert [reader.receive(), reader.receive()] == [0, 1]
        fd = reader._file.fileno()
        time.sleep(0.2)
        assert select.select([fd], [], [], 0.3)[0] == []  # blocked on its third credit
        reader.release()
        assert reader.receive() == 2
        reader.release()
        reader.release()
        assert [reader.receive(), reader.receive()] == [3, 4]
    finally:
        reader.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_reader_waiting_for_credit_exits_when_its_parent_dies() -> None:
    def produce(send: Any, acquire: Any) -> None:
        while True:
            acquire()
            send("x")

    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:  # pragma: no cover - the parent that dies without cleaning up
        os.close(read_end)
        reader = pipeline.Reader(produce, credits=1)
        reader.receive()
        os.write(write_end, str(reader.pid).encode())
        os._exit(0)
    os.close(write_end)
    pid = int(os.read(read_end, 32))
    os.close(read_end)
    os.waitpid(middle, 0)
    deadline = time.monotonic() + 10
    while not process_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process_gone(pid), "a reader outlived its parent while waiting for credit"


def test_staging_directories_of_dead_imports_are_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - a process that is gone by the time we look
        os._exit(0)
    os.waitpid(pid, 0)
    dead = tmp_path / f"lcm-import-{pid}-abc"
    alive = tmp_path / f"lcm-import-{os.getppid()}-def"
    unrelated = tmp_path / "lcm-importer-notes"
    for directory in (dead, alive, unrelated):
        directory.mkdir()
        (directory / "1-0.db").write_bytes(b"x")
    made = staging.make_stage_dir()
    try:
        assert not dead.exists() and alive.exists() and unrelated.exists()
        assert Path(made).parent == tmp_path and Path(made).name.startswith(f"lcm-import-{os.getpid()}-")
    finally:
        staging.remove_stage_dir(made)
    assert not Path(made).exists()


def test_a_reader_takes_as_many_credits_as_it_asks_for() -> None:
    def produce(send: Any, acquire: Any) -> None:
        for size in (3, 3, 1):
            acquire(size)
            send(size)

    reader = pipeline.Reader(produce, credits=4)
    try:
        assert reader.receive() == 3
        fd = reader._file.fileno()
        assert select.select([fd], [], [], 0.3)[0] == []  # 1 left, 3 wanted
        reader.release(1)
        assert select.select([fd], [], [], 0.3)[0] == []  # 2 of the 3 it wants
        reader.release(1)
        assert reader.receive() == 3  # took all 3 it had
        assert select.select([fd], [], [], 0.3)[0] == []
        reader.release(1)
        assert reader.receive() == 1
    finally:
        reader.close()
