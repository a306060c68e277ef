"""The schema migrations: blank databases, idempotence, adoption of old files, rollback."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from lcm_cli.engine.db import schema
from tests.support.legacy_schema import ERAS, make_legacy_db

# Every table and its columns, as database.md §3 lists them.
EXPECTED_COLUMNS: dict[str, set[str]] = {
    "conversations": {
        "conversation_id", "session_id", "session_key", "active", "archived_at",
        "archive_cause", "title", "bootstrapped_at", "created_at", "updated_at",
    },
    "messages": {
        "message_id", "conversation_id", "seq", "role", "content", "token_count",
        "identity_hash", "openclaw_sender_metadata", "transcript_entry_id", "created_at",
        "large_content", "stable_event_key",
    },
    "message_parts": {
        "part_id", "message_id", "session_id", "part_type", "ordinal", "text_content",
        "tool_call_id", "tool_name", "tool_input", "tool_output", "metadata", "is_ignored",
        "is_synthetic", "tool_status", "tool_error", "tool_title", "patch_hash",
        "patch_files", "file_mime", "file_name", "file_url", "subtask_prompt",
        "subtask_desc", "subtask_agent", "step_reason", "step_cost", "step_tokens_in",
        "step_tokens_out", "snapshot_hash", "compaction_auto",
    },
    "summaries": {
        "summary_id", "conversation_id", "kind", "depth", "content", "token_count",
        "earliest_at", "latest_at", "descendant_count", "descendant_token_count",
        "source_message_token_count", "created_at", "file_ids", "model",
    },
    "summary_messages": {"summary_id", "message_id", "ordinal"},
    "summary_parents": {"summary_id", "parent_summary_id", "ordinal"},
    "context_items": {
        "conversation_id", "ordinal", "item_type", "message_id", "summary_id", "created_at",
    },
    "large_files": {
        "file_id", "conversation_id", "file_name", "mime_type", "byte_size", "line_count",
        "storage_uri", "exploration_summary", "created_at",
    },
    "conversation_bootstrap_state": {
        "conversation_id", "session_file_path", "last_seen_size", "last_seen_mtime_ms",
        "last_processed_offset", "last_processed_entry_hash", "session_header_id",
        "last_processed_entry_id", "fork_bounded", "fork_source_message_count",
        "soft_reset_pruned_at", "updated_at",
    },
    "conversation_compaction_telemetry": {
        "conversation_id", "last_observed_cache_read", "last_observed_cache_write",
        "last_observed_prompt_token_count", "last_observed_cache_hit_at",
        "last_observed_cache_break_at", "cache_state", "consecutive_cold_observations",
        "retention", "last_leaf_compaction_at", "turns_since_leaf_compaction",
        "tokens_accumulated_since_leaf_compaction", "last_activity_band",
        "last_api_call_at", "last_cache_touch_at", "provider", "model", "updated_at",
    },
    "conversation_compaction_maintenance": {
        "conversation_id", "pending", "requested_at", "reason", "running",
        "last_started_at", "last_finished_at", "last_failure_summary", "token_budget",
        "current_token_count", "projected_token_count", "raw_tokens_outside_tail",
        "context_threshold", "context_threshold_source", "context_fresh_tail_count",
        "context_leaf_chunk_tokens", "retry_attempts", "next_attempt_after",
        "resolution_reason", "resolved_at", "maintenance_revision", "updated_at",
    },
    "focus_briefs": {
        "brief_id", "conversation_id", "session_key", "prompt", "content", "status",
        "token_count", "target_tokens", "covered_latest_at", "covered_message_seq",
        "source_context_hash", "generator_run_id", "generator_session_key",
        "raw_result_json", "error", "created_at", "updated_at", "superseded_at",
    },
    "focus_brief_sources": {"brief_id", "summary_id", "ordinal", "role", "created_at"},
    "lcm_migration_state": {"step_name", "algorithm_version", "completed_at"},
}  # fmt: skip

# Index name -> (table, columns, unique, partial), as database.md §4 lists them.
EXPECTED_INDEXES: dict[str, tuple[str, tuple[str, ...], bool, bool]] = {
    "messages_conv_seq_idx": ("messages", ("conversation_id", "seq"), False, False),
    "messages_conv_identity_hash_idx": (
        "messages", ("conversation_id", "identity_hash"), False, False),
    "messages_conv_entry_unique_idx": (
        "messages", ("conversation_id", "transcript_entry_id"), True, True),
    "messages_stable_event_key_unique": (
        "messages", ("conversation_id", "stable_event_key"), True, True),
    "conversations_active_session_key_idx": ("conversations", ("session_key",), True, True),
    "conversations_session_key_active_created_idx": (
        "conversations", ("session_key", "active", "created_at"), False, False),
    "conversations_session_id_active_created_idx": (
        "conversations", ("session_id", "active", "created_at"), False, False),
    "summaries_conv_created_idx": ("summaries", ("conversation_id", "created_at"), False, False),
    "summaries_conv_depth_kind_idx": (
        "summaries", ("conversation_id", "depth", "kind"), False, False),
    "summary_messages_message_idx": ("summary_messages", ("message_id",), False, False),
    "summary_parents_parent_summary_idx": (
        "summary_parents", ("parent_summary_id",), False, False),
    "message_parts_message_idx": ("message_parts", ("message_id",), False, False),
    "message_parts_type_idx": ("message_parts", ("part_type",), False, False),
    "context_items_conv_idx": ("context_items", ("conversation_id", "ordinal"), False, False),
    "large_files_conv_idx": ("large_files", ("conversation_id", "created_at"), False, False),
    "bootstrap_state_path_idx": (
        "conversation_bootstrap_state", ("session_file_path", "updated_at"), False, False),
    "compaction_telemetry_state_idx": (
        "conversation_compaction_telemetry", ("cache_state", "updated_at"), False, False),
    "focus_briefs_conversation_status_idx": (
        "focus_briefs", ("conversation_id", "status", "created_at"), False, False),
    "focus_brief_sources_summary_idx": ("focus_brief_sources", ("summary_id",), False, False),
}  # fmt: skip

FTS_TABLES = ("messages_fts", "summaries_fts", "summaries_fts_cjk")


def _build_supports(module_args: str) -> bool:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING {module_args}")
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


HAS_FTS5 = _build_supports("fts5(content)")
HAS_TRIGRAM = _build_supports("fts5(content, tokenize='trigram')")


@pytest.fixture
def connect(tmp_path: Path) -> Iterator[object]:
    """Open connections to files under tmp_path and close them all at teardown."""
    opened: list[sqlite3.Connection] = []

    def _connect(name: str = "lcm.db") -> sqlite3.Connection:
        conn = sqlite3.connect(str(tmp_path / name), isolation_level=None)
        conn.execute("PRAGMA foreign_keys = ON")
        opened.append(conn)
        return conn

    yield _connect
    for conn in opened:
        conn.close()


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def columns(conn: sqlite3.Connection, table: str) -> dict[str, tuple[str, int, object, int]]:
    return {row[1]: (row[2], row[3], row[4], row[5]) for row in conn.execute(f"PRAGMA table_info({table})")}


def index_shape(conn: sqlite3.Connection, name: str) -> tuple[str, tuple[str, ...], bool, bool]:
    table = conn.execute(
        "SELECT tbl_name FROM sqlite_master WHERE type='index' AND name=?", (name,)
    ).fetchone()[0]
    listed = {row[1]: row for row in conn.execute(f"PRAGMA index_list({table})")}
    cols = tuple(row[2] for row in conn.execute(f"PRAGMA index_info({name})"))
    return table, cols, bool(listed[name][2]), bool(listed[name][4])


def dump(conn: sqlite3.Connection, table: str, order: str) -> list[tuple[object, ...]]:
    return conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()


# --------------------------------------------------------------------------
# Blank database
# --------------------------------------------------------------------------


def test_blank_database_gets_every_table_and_column(connect) -> None:
    conn = connect()
    applied = schema.migrate(conn)
    assert applied == [m.__name__ for m in schema.SCHEMA_MIGRATIONS]
    for table, expected in EXPECTED_COLUMNS.items():
        assert set(columns(conn, table)) == expected, table
    assert "sqlite_sequence" in table_names(conn)


def test_blank_database_gets_every_index(connect) -> None:
    conn = connect()
    schema.migrate(conn)
    for name, shape in EXPECTED_INDEXES.items():
        assert index_shape(conn, name) == shape, name
    assert not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'conversations_session_key_idx'"
    ).fetchone()


def test_defaults_and_not_null_are_those_of_database_md(connect) -> None:
    """The defaults and NOT NULLs of docs/reference/database.md §3 (§3.1, §3.4, §3.10–§3.12)."""
    conn = connect()
    schema.migrate(conn)
    conv = columns(conn, "conversations")
    assert conv["active"] == ("INTEGER", 1, "1", 0)
    assert conv["created_at"][1:3] == (1, "datetime('now')")
    assert conv["session_key"] == ("TEXT", 0, None, 0)
    summaries = columns(conn, "summaries")
    assert summaries["file_ids"] == ("TEXT", 1, "'[]'", 0)
    assert summaries["model"] == ("TEXT", 1, "'unknown'", 0)
    assert summaries["depth"] == ("INTEGER", 1, "0", 0)
    telemetry = columns(conn, "conversation_compaction_telemetry")
    assert telemetry["cache_state"] == ("TEXT", 1, "'unknown'", 0)
    assert telemetry["last_activity_band"] == ("TEXT", 1, "'low'", 0)
    maintenance = columns(conn, "conversation_compaction_maintenance")
    assert maintenance["context_threshold"][0] == "REAL"
    assert maintenance["maintenance_revision"] == ("INTEGER", 1, "0", 0)
    assert columns(conn, "focus_briefs")["source_context_hash"] == ("TEXT", 1, "''", 0)
    # Physical order matches a fresh lossless-claw file: the two late message
    # columns and summaries.model are appended after created_at / file_ids.
    assert list(columns(conn, "messages"))[-3:] == [
        "created_at",
        "large_content",
        "stable_event_key",
    ]
    assert list(columns(conn, "summaries"))[-2:] == ["file_ids", "model"]


def test_checks_and_foreign_keys_are_enforced(connect) -> None:
    conn = connect()
    schema.migrate(conn)
    conn.execute("INSERT INTO conversations (session_id) VALUES ('s')")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO messages (conversation_id, seq, role, content, token_count)"
            " VALUES (1, 1, 'toolResult', '', 0)"
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO messages (conversation_id, seq, role, content, token_count)"
            " VALUES (99, 1, 'user', '', 0)"
        )
    conn.execute(
        "INSERT INTO messages (conversation_id, seq, role, content, token_count)"
        " VALUES (1, 1, 'user', 'hi', 1)"
    )
    with pytest.raises(sqlite3.IntegrityError):  # item_type / id mismatch
        conn.execute(
            "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id)"
            " VALUES (1, 0, 'summary', 1)"
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO conversation_compaction_telemetry (conversation_id, cache_state) VALUES (1, 'warm')"
        )
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(
            "INSERT INTO focus_briefs (brief_id, conversation_id, prompt, content, status)"
            " VALUES ('f', 1, 'p', 'c', 'done')"
        )


def test_one_active_conversation_per_session_key(connect) -> None:
    conn = connect()
    schema.migrate(conn)
    conn.execute("INSERT INTO conversations (session_id, session_key, active) VALUES ('a', 'k', 0)")
    conn.execute("INSERT INTO conversations (session_id, session_key, active) VALUES ('b', 'k', 0)")
    conn.execute("INSERT INTO conversations (session_id, session_key, active) VALUES ('c', 'k', 1)")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO conversations (session_id, session_key, active) VALUES ('d', 'k', 1)")


# --------------------------------------------------------------------------
# Idempotence and bookkeeping
# --------------------------------------------------------------------------


def test_migrate_is_idempotent(connect) -> None:
    conn = connect()
    schema.migrate(conn)
    before = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    assert schema.migrate(conn) == []
    assert schema.pending_migrations(conn) == []
    after = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    assert before == after
    # Running every migration body a second time changes nothing either.
    conn.execute("BEGIN")
    for migration in schema.SCHEMA_MIGRATIONS:
        migration(conn)
    conn.execute("COMMIT")
    assert conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall() == after


def test_applied_migrations_are_recorded_with_our_prefix(connect) -> None:
    conn = connect()
    schema.migrate(conn)
    rows = conn.execute(
        "SELECT step_name, algorithm_version FROM lcm_migration_state ORDER BY step_name"
    ).fetchall()
    assert rows == [
        ("lcm_cli." + m.__name__, 1) for m in sorted(schema.SCHEMA_MIGRATIONS, key=lambda m: m.__name__)
    ]
    assert all(m.__name__.startswith("m") and m.__name__[1:4].isdigit() for m in schema.SCHEMA_MIGRATIONS)


def test_migrate_refuses_an_open_transaction(connect) -> None:
    conn = connect()
    conn.execute("BEGIN")
    with pytest.raises(RuntimeError):
        schema.migrate(conn)
    conn.execute("ROLLBACK")


def test_migrate_works_with_the_default_isolation_level(tmp_path: Path) -> None:
    conn = sqlite3.connect(str(tmp_path / "lcm.db"))  # legacy implicit-transaction mode
    try:
        assert schema.migrate(conn) == [m.__name__ for m in schema.SCHEMA_MIGRATIONS]
        assert not conn.in_transaction
        assert schema.migrate(conn) == []
    finally:
        conn.close()


def test_a_failing_migration_rolls_back_completely(connect) -> None:
    conn = connect()

    def m900_half_done(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half_done (x INTEGER)")
        c.execute("INSERT INTO half_done VALUES (1)")
        c.execute("ALTER TABLE conversations ADD COLUMN half_done_column TEXT")
        raise RuntimeError("stopped half-way")

    migrations = [schema.m001_adopt_lossless_claw_schema, m900_half_done]
    with pytest.raises(RuntimeError, match="half-way"):
        schema.migrate(conn, migrations)
    assert not conn.in_transaction
    assert "half_done" not in table_names(conn)
    assert "half_done_column" not in columns(conn, "conversations")
    assert schema.applied_migrations(conn) == {"m001_adopt_lossless_claw_schema"}
    # The earlier migration stays committed; the failed one is still pending.
    assert schema.pending_migrations(conn, migrations) == ["m900_half_done"]


def test_a_failing_first_migration_leaves_the_file_untouched(connect) -> None:
    conn = connect()

    def m001_boom(c: sqlite3.Connection) -> None:
        schema.m001_adopt_lossless_claw_schema(c)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        schema.migrate(conn, [m001_boom])
    assert table_names(conn) == set()


def test_a_migration_applied_elsewhere_meanwhile_is_not_rerun(connect) -> None:
    first, second = connect(), connect()
    calls: list[str] = []

    def m001_count(c: sqlite3.Connection) -> None:
        calls.append("run")

    # `second` read the (empty) state before `first` applied the migration.
    assert schema.pending_migrations(second, [m001_count]) == ["m001_count"]
    assert schema.migrate(first, [m001_count]) == ["m001_count"]
    assert schema.migrate(second, [m001_count]) == []
    assert calls == ["run"]


# --------------------------------------------------------------------------
# Adopting older databases
# --------------------------------------------------------------------------

CORE_TABLES = {
    "conversations": "conversation_id",
    "messages": "message_id",
    "summaries": "summary_id",
    "summary_messages": "summary_id, message_id",
    "summary_parents": "summary_id, parent_summary_id",
    "context_items": "conversation_id, ordinal",
    "large_files": "file_id",
    "message_parts": "part_id",
}


@pytest.mark.parametrize("era", ERAS)
def test_adopting_a_legacy_database_adds_what_is_missing_and_keeps_data(
    tmp_path: Path, connect, era: str
) -> None:
    legacy = make_legacy_db(tmp_path / "lcm.db", era)
    conn = connect()
    before = {}
    for table, order in CORE_TABLES.items():
        names = list(columns(conn, table))
        before[table] = (
            names,
            conn.execute(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}").fetchall(),
        )

    assert schema.migrate(conn) == [m.__name__ for m in schema.SCHEMA_MIGRATIONS]

    for table, expected in EXPECTED_COLUMNS.items():
        assert set(columns(conn, table)) == expected, table
    for name, shape in EXPECTED_INDEXES.items():
        assert index_shape(conn, name) == shape, name
    # Every old row and value survives, read back by column name.
    for table, order in CORE_TABLES.items():
        names, rows = before[table]
        assert conn.execute(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}").fetchall() == rows
    for table, count in legacy.row_counts.items():
        if table != "lcm_migration_state":
            assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == count, table
    # Columns added by ALTER carry their defaults on old rows.
    assert {row[0] for row in conn.execute("SELECT active FROM conversations")} <= {
        0,
        1,
    }
    assert conn.execute("SELECT DISTINCT model FROM summaries").fetchall() != []
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # lossless-claw's own backfill records are untouched.
    steps = {row[0] for row in conn.execute("SELECT step_name FROM lcm_migration_state")}
    lossless_steps = {s for s in steps if not s.startswith("lcm_cli.")}
    assert lossless_steps == (
        {"backfillSummaryDepths", "backfillSummaryMetadata", "backfillToolCallColumns"}
        if era == "0.9"
        else set()
    )
    assert schema.migrate(conn) == []


def test_adopting_0_1_fills_new_columns_with_their_defaults(tmp_path: Path, connect) -> None:
    make_legacy_db(tmp_path / "lcm.db", "0.1")
    conn = connect()
    schema.migrate(conn)
    assert conn.execute(
        "SELECT DISTINCT active, session_key, archived_at, archive_cause FROM conversations"
    ).fetchall() == [(1, None, None, None)]
    assert conn.execute("SELECT DISTINCT model FROM summaries").fetchall() == [("unknown",)]
    assert conn.execute(
        "SELECT COUNT(*) FROM messages WHERE identity_hash IS NULL AND large_content IS NULL"
    ).fetchone() == (9,)
    # New columns come after the old ones (ALTER appends), so read by name.
    assert list(columns(conn, "conversations"))[-4:] == [
        "session_key",
        "active",
        "archived_at",
        "archive_cause",
    ]


def test_adopting_0_5_drops_the_global_unique_session_key_index(tmp_path: Path, connect) -> None:
    make_legacy_db(tmp_path / "lcm.db", "0.5")
    conn = connect()
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'conversations_session_key_idx'").fetchone()
    schema.migrate(conn)
    assert not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'conversations_session_key_idx'"
    ).fetchone()
    # An archived duplicate of a key is now allowed.
    conn.execute(
        "INSERT INTO conversations (session_id, session_key, active) VALUES ('old', 'agent:main:main', 0)"
    )


# --------------------------------------------------------------------------
# Full-text tables
# --------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_FTS5, reason="this SQLite build has no FTS5")
def test_fts_tables_are_created_when_supported(connect) -> None:
    conn = connect()
    schema.migrate(conn)
    names = table_names(conn)
    assert {"messages_fts", "summaries_fts"} <= names
    assert ("summaries_fts_cjk" in names) == HAS_TRIGRAM
    assert set(columns(conn, "messages_fts")) == {"content"}
    assert set(columns(conn, "summaries_fts")) == {"summary_id", "content"}
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()[0]
    assert "porter unicode61" in sql and "content_rowid" not in sql


@pytest.mark.skipif(not HAS_FTS5, reason="this SQLite build has no FTS5")
def test_fts_tables_are_seeded_when_newly_created(tmp_path: Path, connect) -> None:
    make_legacy_db(tmp_path / "lcm.db", "0.1")  # no FTS in that era
    conn = connect()
    schema.migrate(conn)
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == (9,)
    hits = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'fixture'").fetchall()
    assert hits == [(4,)]
    assert conn.execute(
        "SELECT summary_id FROM summaries_fts WHERE summaries_fts MATCH 'stale' ORDER BY 1"
    ).fetchall() == [("sum_legacycond0001",), ("sum_legacyleaf0002",)]
    if HAS_TRIGRAM:
        assert conn.execute("SELECT COUNT(*) FROM summaries_fts_cjk").fetchone() == (3,)


@pytest.mark.skipif(not HAS_FTS5, reason="this SQLite build has no FTS5")
def test_existing_fts_tables_are_kept_not_rebuilt(tmp_path: Path, connect) -> None:
    make_legacy_db(tmp_path / "lcm.db", "0.9")
    conn = connect()
    # A row only the index has: a rebuild from base rows would lose it.
    conn.execute("INSERT INTO messages_fts (rowid, content) VALUES (999, 'sentinel')")
    schema.migrate(conn)
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'sentinel'").fetchall() == [
        (999,)
    ]


@pytest.mark.skipif(not HAS_FTS5, reason="this SQLite build has no FTS5")
def test_a_legacy_external_content_fts_table_is_rebuilt(connect) -> None:
    conn = connect()
    schema.migrate(conn, [schema.m001_adopt_lossless_claw_schema])
    conn.execute("INSERT INTO conversations (session_id) VALUES ('s')")
    conn.execute(
        "INSERT INTO messages (conversation_id, seq, role, content, token_count)"
        " VALUES (1, 1, 'user', 'rebuilt from messages', 5)"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages',"
        " content_rowid='message_id')"
    )
    schema.migrate(conn)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()[0]
    assert "content_rowid" not in sql
    assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'rebuilt'").fetchall() == [
        (1,)
    ]


def test_feature_probes_leave_no_trace(connect) -> None:
    conn = connect()
    assert schema.fts5_available(conn) == HAS_FTS5
    assert schema.trigram_available(conn) == HAS_TRIGRAM
    assert not conn.in_transaction
    assert conn.execute("SELECT COUNT(*) FROM temp.sqlite_master").fetchone() == (0,)
    # Also inside a transaction, without ending it.
    conn.execute("BEGIN")
    assert schema.fts5_available(conn) == HAS_FTS5
    assert conn.in_transaction
    conn.execute("ROLLBACK")
