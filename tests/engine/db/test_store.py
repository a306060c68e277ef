"""The write store: invariants of database.md §8 on real SQLite files."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.db import schema
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.db.store import stamps as store_stamps
from lcm_cli.engine.db.store.messages import fts_message_text
from lcm_cli.engine.db.store.stamps import parse_timestamp
from tests.support.legacy_schema import make_legacy_db

SQLITE_TS = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")
ISO_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "state" / "lcm.db")
    yield opened
    opened.close()


@pytest.fixture
def conv(store: Store) -> int:
    return store.create_conversation("sess-1", session_key="agent:main:main", title="t")


def context(store: Store, conversation_id: int) -> list[tuple[int, str, object]]:
    return [
        (row[0], row[1], row[2] if row[1] == "message" else row[3])
        for row in store.conn.execute(
            "SELECT ordinal, item_type, message_id, summary_id FROM context_items"
            " WHERE conversation_id = ? ORDER BY ordinal",
            (conversation_id,),
        )
    ]


def summary_row(store: Store, summary_id: str) -> dict[str, object]:
    cursor = store.conn.execute("SELECT * FROM summaries WHERE summary_id = ?", (summary_id,))
    names = [d[0] for d in cursor.description]
    return dict(zip(names, cursor.fetchone(), strict=True))


def fts_hits(store: Store, table: str, query: str) -> list[object]:
    key = "rowid" if table == "messages_fts" else "summary_id"
    return [
        row[0]
        for row in store.conn.execute(f"SELECT {key} FROM {table} WHERE {table} MATCH ? ORDER BY 1", (query,))
    ]


# --------------------------------------------------------------------------
# Opening and transactions
# --------------------------------------------------------------------------


def test_open_creates_the_file_with_writer_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "lcm.db"
    with Store.open(path) as s:
        assert path.exists()
        assert s.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert s.conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert s.conn.execute("PRAGMA busy_timeout").fetchone() == (30000,)
        assert s.conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        assert schema.pending_migrations(s.conn) == []
    with Store.open(path) as again:  # reopening migrates nothing
        assert schema.pending_migrations(again.conn) == []


def test_transaction_commits_and_rolls_back(store: Store, conv: int) -> None:
    with store.transaction():
        store.add_message(conv, "user", "kept")
    with pytest.raises(RuntimeError), store.transaction():
        store.add_message(conv, "user", "dropped")
        raise RuntimeError
    assert [r[0] for r in store.conn.execute("SELECT content FROM messages")] == ["kept"]
    assert not store.conn.in_transaction


def test_nested_transactions_join_the_outer_one(store: Store, conv: int) -> None:
    with store.transaction():
        store.add_message(conv, "user", "outer")
        with pytest.raises(ValueError), store.transaction():
            store.add_message(conv, "user", "inner, undone")
            raise ValueError
        store.add_message(conv, "user", "after")
        assert store.conn.in_transaction
    rows = store.conn.execute("SELECT seq, content FROM messages ORDER BY seq").fetchall()
    assert rows == [(1, "outer"), (2, "after")]
    # The undone insert never happened, so its id is free again.
    assert context(store, conv) == [(0, "message", 1), (1, "message", 2)]


def test_outer_failure_undoes_nested_work(store: Store, conv: int) -> None:
    with pytest.raises(KeyError), store.transaction():
        with store.transaction():
            store.add_message(conv, "user", "inner")
        raise KeyError
    assert store.conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (0,)


# --------------------------------------------------------------------------
# Conversations and messages
# --------------------------------------------------------------------------


def test_create_conversation_defaults(store: Store) -> None:
    cid = store.create_conversation("sess-x")
    row = store.conn.execute(
        "SELECT session_id, session_key, active, archived_at, title, created_at, updated_at"
        " FROM conversations WHERE conversation_id = ?",
        (cid,),
    ).fetchone()
    assert row[:5] == ("sess-x", None, 1, None, None)
    assert SQLITE_TS.match(row[5]) and row[6] == row[5]
    archived = store.create_conversation(
        "sess-y",
        session_key="k",
        active=False,
        archived_at="2026-01-01T00:00:00.000Z",
        archive_cause="manual-reset",
    )
    assert store.conn.execute(
        "SELECT active, archive_cause FROM conversations WHERE conversation_id = ?",
        (archived,),
    ).fetchone() == (0, "manual-reset")


def test_add_message_defaults(store: Store, conv: int) -> None:
    content = "Hello 世界 😀"
    mid = store.add_message(conv, "user", content)
    row = store.conn.execute(
        "SELECT conversation_id, seq, role, content, token_count, identity_hash, created_at,"
        " openclaw_sender_metadata, transcript_entry_id, large_content, stable_event_key"
        " FROM messages WHERE message_id = ?",
        (mid,),
    ).fetchone()
    expected_hash = hashlib.sha256(b"user\x00" + content.encode()).hexdigest()
    assert row[:6] == (
        conv,
        1,
        "user",
        content,
        estimate_tokens(content),
        expected_hash,
    )
    assert SQLITE_TS.match(row[6])
    assert row[7:] == (None, None, None, None)
    assert context(store, conv) == [(0, "message", mid)]


def test_add_message_optional_fields(store: Store, conv: int) -> None:
    fid = store.add_large_file(conv, "/tmp/f.txt")
    mid = store.add_message(
        conv,
        "tool",
        "output",
        token_count=42,
        created_at="2026-02-03 04:05:06",
        seq=10,
        identity_hash="h",
        transcript_entry_id="entry-1",
        large_content=fid,
        sender_metadata={"senderId": "u1", "senderName": "Ana"},
        stable_event_key="tool-result:toolu_0123456789abcdef",
        in_context=False,
    )
    row = store.conn.execute(
        "SELECT seq, token_count, created_at, identity_hash, transcript_entry_id,"
        " large_content, openclaw_sender_metadata, stable_event_key"
        " FROM messages WHERE message_id = ?",
        (mid,),
    ).fetchone()
    assert row == (
        10,
        42,
        "2026-02-03 04:05:06",
        "h",
        "entry-1",
        fid,
        '{"senderId":"u1","senderName":"Ana"}',
        "tool-result:toolu_0123456789abcdef",
    )
    assert context(store, conv) == []
    # The next automatic seq continues after the explicit one.
    assert store.conn.execute(
        "SELECT seq FROM messages WHERE message_id = ?",
        (store.add_message(conv, "user", "x"),),
    ).fetchone() == (11,)


def test_message_parts(store: Store, conv: int) -> None:
    mid = store.add_message(
        conv,
        "assistant",
        "Let me check.",
        parts=[
            {"part_type": "text", "text_content": "Let me check."},
            {
                "part_type": "tool",
                "tool_call_id": "toolu_1",
                "tool_name": "bash",
                "tool_input": {"command": "ls"},
                "metadata": {"originalRole": "assistant"},
            },
            {"part_type": "reasoning", "text_content": "thinking"},
        ],
    )
    rows = store.conn.execute(
        "SELECT part_id, session_id, part_type, ordinal, text_content, tool_call_id,"
        " tool_name, tool_input, metadata FROM message_parts WHERE message_id = ?"
        " ORDER BY ordinal",
        (mid,),
    ).fetchall()
    assert [r[3] for r in rows] == [0, 1, 2]
    assert all(UUID4.match(r[0]) for r in rows)
    assert {r[1] for r in rows} == {"sess-1"}
    assert [r[2] for r in rows] == ["text", "tool", "reasoning"]
    assert rows[1][5:] == (
        "toolu_1",
        "bash",
        '{"command":"ls"}',
        '{"originalRole":"assistant"}',
    )
    with pytest.raises(ValueError, match="unknown message part fields"):
        store.add_message(conv, "user", "x", parts=[{"type": "text"}])
    with pytest.raises(sqlite3.IntegrityError):
        store.add_message(conv, "user", "x", parts=[{"part_type": "image"}])


def test_rejects_bad_input(store: Store, conv: int) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        store.add_message(conv, "toolResult", "x")
    with pytest.raises(ValueError, match="does not exist"):
        store.add_message(999, "user", "x")
    with pytest.raises(ValueError, match="unknown message fields"):
        store.add_messages(conv, [{"role": "user", "content": "x", "tokens": 3}])
    assert store.conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (0,)


def test_bulk_insert(store: Store) -> None:
    conversations = [store.create_conversation(f"s{i}") for i in range(4)]
    all_ids: list[int] = []
    for cid in conversations:
        rows = [
            {
                "role": ("user", "assistant", "tool")[i % 3],
                "content": f"message {i} of {cid}",
                "created_at": f"2026-01-01 00:{i // 60 % 60:02d}:{i % 60:02d}",
            }
            for i in range(2500)
        ]
        ids = store.add_messages(cid, rows[:1000]) + store.add_messages(cid, rows[1000:])
        assert ids == list(range(ids[0], ids[0] + 2500))
        all_ids += ids
    assert len(set(all_ids)) == 10_000
    for cid in conversations:
        seqs = [
            r[0]
            for r in store.conn.execute(
                "SELECT seq FROM messages WHERE conversation_id = ? ORDER BY message_id",
                (cid,),
            )
        ]
        assert seqs == list(range(1, 2501))
        ordinals = [
            r[0]
            for r in store.conn.execute(
                "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
                (cid,),
            )
        ]
        assert ordinals == list(range(2500))
    assert store.conn.execute(
        "SELECT COUNT(*) FROM messages WHERE token_count = length(content) / 4 + (length(content) % 4 > 0)"
    ).fetchone() == (10_000,)
    if store.has_messages_fts:
        assert store.conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == (10_000,)
    assert store.add_messages(conversations[0], []) == []


def test_message_ids_are_never_reused(store: Store, conv: int) -> None:
    first = store.add_messages(conv, [{"role": "user", "content": "a"}] * 3, in_context=False)
    store.conn.execute("DELETE FROM messages WHERE message_id = ?", (first[-1],))
    (again,) = store.add_messages(conv, [{"role": "user", "content": "b"}], in_context=False)
    assert again == first[-1] + 1
    assert store.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone() == (
        again,
    )


# --------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------


def make_messages(store: Store, conv: int, n: int, day: int = 1) -> list[int]:
    return store.add_messages(
        conv,
        [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"turn {i} " * (i + 1),
                "created_at": f"2026-03-{day:02d} 10:{i:02d}:00",
            }
            for i in range(n)
        ],
    )


def test_leaf_summary_metadata(store: Store, conv: int) -> None:
    ids = make_messages(store, conv, 4)
    # Source order is the caller's order, not id order.
    order = [ids[1], ids[0], ids[3], ids[2]]
    sid = store.add_leaf_summary(conv, order, "Four turns.", file_ids=["file_b", "file_a", "file_b"])
    assert re.fullmatch(r"sum_[0-9a-f]{16}", sid)
    row = summary_row(store, sid)
    token_sum = store.conn.execute(
        f"SELECT SUM(token_count) FROM messages WHERE message_id IN ({','.join(map(str, ids))})"
    ).fetchone()[0]
    assert row["kind"] == "leaf" and row["depth"] == 0
    assert row["token_count"] == estimate_tokens("Four turns.")
    assert row["earliest_at"] == "2026-03-01T10:00:00.000Z"
    assert row["latest_at"] == "2026-03-01T10:03:00.000Z"
    assert row["descendant_count"] == 0 and row["descendant_token_count"] == 0
    assert row["source_message_token_count"] == token_sum
    assert row["model"] == "unknown"
    assert json.loads(row["file_ids"]) == ["file_b", "file_a"]
    assert SQLITE_TS.match(row["created_at"])
    links = store.conn.execute(
        "SELECT message_id, ordinal FROM summary_messages WHERE summary_id = ? ORDER BY ordinal",
        (sid,),
    ).fetchall()
    assert links == [(mid, i) for i, mid in enumerate(order)]


def test_leaf_time_range_compares_instants_not_text(store: Store, conv: int) -> None:
    # Raw text would call the space-separated stamp the earliest.
    a = store.add_message(conv, "user", "a", created_at="2026-01-01 10:00:00")
    b = store.add_message(conv, "user", "b", created_at="2026-01-01T09:30:00.250Z")
    c = store.add_message(conv, "user", "c", created_at="2026-01-01T12:00:00+01:00")
    row = summary_row(store, store.add_leaf_summary(conv, [a, b, c], "s"))
    assert (row["earliest_at"], row["latest_at"]) == (
        "2026-01-01T09:30:00.250Z",
        "2026-01-01T11:00:00.000Z",
    )
    assert ISO_TS.match(row["earliest_at"])


def test_condensed_summary_metadata(store: Store, conv: int) -> None:
    ids = make_messages(store, conv, 6)
    leaves = [
        store.add_leaf_summary(conv, ids[0:2], "first pair", summary_id="sum-a"),
        store.add_leaf_summary(conv, ids[2:4], "second pair", summary_id="sum-b"),
        store.add_leaf_summary(conv, ids[4:6], "third pair", summary_id="sum-c"),
    ]
    mid = store.add_condensed_summary(conv, leaves[:2], "pairs one and two", model="m1")
    row = summary_row(store, mid)
    a, b = summary_row(store, "sum-a"), summary_row(store, "sum-b")
    assert row["kind"] == "condensed" and row["depth"] == 1 and row["model"] == "m1"
    assert row["descendant_count"] == 2
    assert row["descendant_token_count"] == a["token_count"] + b["token_count"]
    assert row["source_message_token_count"] == (
        a["source_message_token_count"] + b["source_message_token_count"]
    )
    assert (row["earliest_at"], row["latest_at"]) == (a["earliest_at"], b["latest_at"])
    # Inverted naming: summary_id is the new node, parent_summary_id its sources.
    assert store.conn.execute(
        "SELECT summary_id, parent_summary_id, ordinal FROM summary_parents"
        " WHERE summary_id = ? ORDER BY ordinal",
        (mid,),
    ).fetchall() == [(mid, "sum-a", 0), (mid, "sum-b", 1)]

    top = store.add_condensed_summary(conv, [mid, leaves[2]], "everything")
    top_row = summary_row(store, top)
    c = summary_row(store, "sum-c")
    assert top_row["depth"] == 2  # 1 + deepest source
    assert top_row["descendant_count"] == (row["descendant_count"] + 1) + (0 + 1)
    assert top_row["descendant_token_count"] == (
        row["token_count"] + row["descendant_token_count"] + c["token_count"]
    )
    assert (
        top_row["source_message_token_count"]
        == store.conn.execute(
            "SELECT SUM(token_count) FROM messages WHERE conversation_id = ?", (conv,)
        ).fetchone()[0]
    )
    assert (top_row["earliest_at"], top_row["latest_at"]) == (
        "2026-03-01T10:00:00.000Z",
        "2026-03-01T10:05:00.000Z",
    )


def test_condensed_range_falls_back_to_source_creation_time(store: Store, conv: int) -> None:
    store.conn.execute(
        "INSERT INTO summaries (summary_id, conversation_id, kind, content, token_count,"
        " created_at) VALUES ('old', ?, 'leaf', 'x', 1, '2025-12-31 23:00:00')",
        (conv,),
    )
    row = summary_row(store, store.add_condensed_summary(conv, ["old"], "y"))
    assert (row["earliest_at"], row["latest_at"]) == (
        "2025-12-31T23:00:00.000Z",
        "2025-12-31T23:00:00.000Z",
    )


def test_summary_sources_are_validated(store: Store, conv: int) -> None:
    other = store.create_conversation("sess-2")
    mine = make_messages(store, conv, 2)
    theirs = make_messages(store, other, 1)
    with pytest.raises(ValueError, match="at least one"):
        store.add_leaf_summary(conv, [], "x")
    with pytest.raises(ValueError, match="unknown source message"):
        store.add_leaf_summary(conv, [mine[0], 10_000], "x")
    with pytest.raises(ValueError, match="another conversation"):
        store.add_leaf_summary(conv, [mine[0], theirs[0]], "x")
    with pytest.raises(ValueError, match="duplicate"):
        store.add_leaf_summary(conv, [mine[0], mine[0]], "x")
    with pytest.raises(ValueError, match="unknown source summary"):
        store.add_condensed_summary(conv, ["nope"], "x")
    foreign = store.add_leaf_summary(other, theirs, "x")
    with pytest.raises(ValueError, match="another conversation"):
        store.add_condensed_summary(conv, [foreign], "x")
    assert store.conn.execute(
        "SELECT COUNT(*) FROM summaries WHERE conversation_id = ?", (conv,)
    ).fetchone() == (0,)


# --------------------------------------------------------------------------
# Context frontier
# --------------------------------------------------------------------------


def test_replace_context_with_leaf_then_condensed(store: Store, conv: int) -> None:
    ids = make_messages(store, conv, 8)
    leaf1 = store.add_leaf_summary(conv, ids[0:3], "one")
    assert store.replace_context_with_summary(conv, leaf1) == 0
    assert context(store, conv) == [(0, "summary", leaf1)] + [
        (i + 1, "message", mid) for i, mid in enumerate(ids[3:])
    ]
    leaf2 = store.add_leaf_summary(conv, ids[3:5], "two")
    assert store.replace_context_with_summary(conv, leaf2) == 1
    assert context(store, conv) == [(0, "summary", leaf1), (1, "summary", leaf2)] + [
        (i + 2, "message", mid) for i, mid in enumerate(ids[5:])
    ]
    top = store.add_condensed_summary(conv, [leaf1, leaf2], "both")
    store.replace_context_with_summary(conv, top)
    assert context(store, conv) == [(0, "summary", top)] + [
        (i + 1, "message", mid) for i, mid in enumerate(ids[5:])
    ]


def test_replace_context_by_ordinals_resequences_gaps(store: Store, conv: int) -> None:
    ids = make_messages(store, conv, 6)
    # Soft-reset pruning leaves a gap at ordinal 1.
    store.conn.execute("DELETE FROM context_items WHERE conversation_id = ? AND ordinal = 1", (conv,))
    leaf = store.add_leaf_summary(conv, ids[2:4], "middle")
    assert store.replace_context_with_summary(conv, leaf, ordinals=[2, 3]) == 1
    assert context(store, conv) == [
        (0, "message", ids[0]),
        (1, "summary", leaf),
        (2, "message", ids[4]),
        (3, "message", ids[5]),
    ]
    assert store.append_context_item(conv, message_id=ids[1]) == 4


def test_replace_context_rejects_bad_runs(store: Store, conv: int) -> None:
    ids = make_messages(store, conv, 5)
    leaf = store.add_leaf_summary(conv, [ids[0], ids[2]], "gapped")
    with pytest.raises(ValueError, match="contiguous"):
        store.replace_context_with_summary(conv, leaf)
    with pytest.raises(ValueError, match="no context items at ordinals"):
        store.replace_context_with_summary(conv, leaf, ordinals=[3, 9])
    with pytest.raises(ValueError, match="does not exist"):
        store.replace_context_with_summary(conv, "sum_missing")
    other_leaf = store.add_leaf_summary(conv, [ids[4]], "tail")
    store.conn.execute("DELETE FROM context_items WHERE message_id = ?", (ids[4],))
    with pytest.raises(ValueError, match="no context items"):
        store.replace_context_with_summary(conv, other_leaf)
    # Nothing changed by the failures.
    assert [c[2] for c in context(store, conv)] == ids[:4]


def test_append_context_item(store: Store, conv: int) -> None:
    (mid,) = store.add_messages(conv, [{"role": "user", "content": "x"}], in_context=False)
    sid = store.add_leaf_summary(conv, [mid], "s")
    assert store.append_context_item(conv, summary_id=sid) == 0
    assert store.append_context_item(conv, message_id=mid) == 1
    with pytest.raises(ValueError):
        store.append_context_item(conv)
    with pytest.raises(ValueError):
        store.append_context_item(conv, message_id=mid, summary_id=sid)


# --------------------------------------------------------------------------
# Full-text tables kept in step
# --------------------------------------------------------------------------


def test_fts_rows_follow_writes(store: Store, conv: int) -> None:
    if not store.has_messages_fts:
        pytest.skip("this SQLite build has no FTS5")
    a = store.add_message(conv, "user", "The penguin migrates south")
    store.add_message(conv, "assistant", "   ")  # blank: not indexed
    c = store.add_message(
        conv,
        "tool",
        "[LCM File: file_1 | log.txt]\nUse lcm_describe to expand\nExploration Summary:\nalbatross sightings",
    )
    assert fts_hits(store, "messages_fts", "penguin") == [a]
    assert fts_hits(store, "messages_fts", "albatross") == [c]
    assert fts_hits(store, "messages_fts", "lcm_describe") == []
    assert store.conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == (2,)
    leaf = store.add_leaf_summary(conv, [a], "Penguins travel; 東京の会議")
    assert fts_hits(store, "summaries_fts", "penguins") == [leaf]
    if store.has_summaries_fts_cjk:
        assert fts_hits(store, "summaries_fts_cjk", "東京の") == [leaf]


def test_fts_message_text() -> None:
    assert fts_message_text("") is None
    assert fts_message_text(" \n ") is None
    assert fts_message_text("  plain  ") == "  plain  "
    stub = "[LCM Tool Output: file_2]\n\nCall lcm_describe(id)\nExploration Summary:\n a \n b"
    assert fts_message_text(stub) == "[LCM Tool Output: file_2]\na\nb"
    assert fts_message_text("[LCM File: f]\nsomething else") == "[LCM File: f]"


# --------------------------------------------------------------------------
# Newer tables
# --------------------------------------------------------------------------


def test_large_file(store: Store, conv: int) -> None:
    fid = store.add_large_file(
        conv,
        "/data/1/f.txt",
        file_name="f.txt",
        mime_type="text/plain",
        byte_size=10,
        line_count=2,
        exploration_summary="two lines",
    )
    assert re.fullmatch(r"file_[0-9a-f]{16}", fid)
    assert store.conn.execute(
        "SELECT conversation_id, file_name, line_count, storage_uri FROM large_files WHERE file_id = ?",
        (fid,),
    ).fetchone() == (conv, "f.txt", 2, "/data/1/f.txt")


def test_bootstrap_state_upsert(store: Store, conv: int) -> None:
    store.upsert_bootstrap_state(conv, "/s/a.jsonl", last_seen_size=100, last_seen_mtime_ms=5)
    store.upsert_bootstrap_state(
        conv,
        "/s/a.jsonl",
        last_seen_size=200,
        last_seen_mtime_ms=6,
        session_header_id="hdr",
        fork_bounded=True,
        fork_source_message_count=3,
        soft_reset_pruned_at="2026-01-01 00:00:00",
    )
    assert store.conn.execute(
        "SELECT session_file_path, last_seen_size, last_processed_offset, session_header_id,"
        " fork_bounded, fork_source_message_count, soft_reset_pruned_at"
        " FROM conversation_bootstrap_state"
    ).fetchall() == [("/s/a.jsonl", 200, 200, "hdr", 1, 3, "2026-01-01 00:00:00")]


def test_maintenance_and_telemetry(store: Store, conv: int) -> None:
    store.set_maintenance(conv, pending=True, reason="threshold", token_budget=1000)
    store.set_maintenance(conv, running=True, last_failure_summary="timeout", context_threshold=0.75)
    row = store.conn.execute(
        "SELECT pending, reason, running, last_failure_summary, token_budget,"
        " context_threshold, maintenance_revision, retry_attempts"
        " FROM conversation_compaction_maintenance WHERE conversation_id = ?",
        (conv,),
    ).fetchone()
    assert row == (1, "threshold", 1, "timeout", 1000, 0.75, 1, 0)
    with pytest.raises(ValueError, match="unknown"):
        store.set_maintenance(conv, pendng=True)

    store.set_telemetry(
        conv,
        cache_state="hot",
        provider="anthropic",
        last_observed_prompt_token_count=1234,
    )
    store.set_telemetry(conv, last_activity_band="high")
    assert store.conn.execute(
        "SELECT cache_state, provider, last_observed_prompt_token_count, last_activity_band"
        " FROM conversation_compaction_telemetry"
    ).fetchall() == [("hot", "anthropic", 1234, "high")]
    with pytest.raises(sqlite3.IntegrityError):
        store.set_telemetry(conv, cache_state="lukewarm")


def test_focus_brief(store: Store, conv: int) -> None:
    ids = make_messages(store, conv, 2)
    leaf = store.add_leaf_summary(conv, ids, "s")
    bid = store.add_focus_brief(
        conv,
        "focus on auth",
        "Auth work so far.",
        session_key="agent:main:main",
        target_tokens=500,
        sources=[(leaf, "active_input"), (leaf, "cited")],
    )
    assert re.fullmatch(r"focus_[0-9a-f]{16}", bid)
    assert store.conn.execute(
        "SELECT status, token_count, target_tokens, source_context_hash FROM focus_briefs"
    ).fetchone() == ("active", estimate_tokens("Auth work so far."), 500, "")
    assert store.conn.execute(
        "SELECT summary_id, ordinal, role FROM focus_brief_sources ORDER BY ordinal"
    ).fetchall() == [(leaf, 0, "active_input"), (leaf, 1, "cited")]


# --------------------------------------------------------------------------
# Legacy files and helpers
# --------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["0.1", "0.9"])
def test_store_adopts_and_extends_a_legacy_database(tmp_path: Path, era: str) -> None:
    make_legacy_db(tmp_path / "lcm.db", era)
    with Store.open(tmp_path / "lcm.db") as s:
        mid = s.add_message(1, "user", "new turn")
        assert s.conn.execute("SELECT seq FROM messages WHERE message_id = ?", (mid,)).fetchone() == (7,)
        assert mid == 10
        # Appended after the existing frontier (ordinals 0..2).
        assert context(s, 1)[-1] == (3, "message", mid)
        leaf = s.add_leaf_summary(1, [5, 6, mid], "tail")
        s.replace_context_with_summary(1, leaf)
        assert context(s, 1) == [
            (0, "summary", "sum_legacycond0001"),
            (1, "summary", leaf),
        ]


def test_parse_timestamp_shapes() -> None:
    sqlite_shape = parse_timestamp("2026-01-01 10:00:00")
    iso_shape = parse_timestamp("2026-01-01T10:00:00.000Z")
    assert sqlite_shape == iso_shape and sqlite_shape is not None
    assert sqlite_shape.utcoffset() is not None
    assert parse_timestamp("2026-01-01T12:00:00+02:00") == sqlite_shape
    assert parse_timestamp("not a time") is None
    assert parse_timestamp(None) is None
    assert store_stamps.iso_timestamp(sqlite_shape) == "2026-01-01T10:00:00.000Z"
    assert store_stamps.sqlite_timestamp(iso_shape) == "2026-01-01 10:00:00"


def test_part_ids_are_unique_sorted_v4_uuids() -> None:
    """Part ids count upwards from a random v4 start (index locality) and stay valid v4 text."""
    import uuid

    from lcm_cli.engine.db.store.ids import PartIds

    first, second = PartIds(), PartIds()
    ids = [first.next() for _ in range(1000)]
    assert ids == sorted(ids)
    assert len(set(ids) | {second.next() for _ in range(1000)}) == 2000
    for text in ids[:3] + ids[-3:]:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)


def test_none_binds_as_null_through_the_registered_adapter(tmp_path: Path) -> None:
    # bind_none_directly() registers an adapter for None (a speed-up); the stored value
    # must still be SQL NULL, through execute and executemany alike.
    from lcm_cli.engine.db.connection import bind_none_directly

    bind_none_directly()
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)](None) is None
    conn = sqlite3.connect(tmp_path / "n.db")
    conn.execute("CREATE TABLE t (a, b)")
    conn.execute("INSERT INTO t VALUES (?, ?)", (None, 1))
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(None, None), ("x", None)])
    assert conn.execute("SELECT typeof(a), typeof(b) FROM t ORDER BY rowid").fetchall() == [
        ("null", "integer"),
        ("null", "null"),
        ("text", "null"),
    ]
    conn.close()
