"""Real lcm.db files in the shapes older lossless-claw releases left behind.

``make_legacy_db(path, era)`` writes the tables, columns and indexes a database
had at that release (from lossless-claw's history) and fills them with a few rows
through raw SQL, so readers and migrations can be tested against genuine old
layouts rather than mocks:

- ``"0.1"``: the original tables only. conversations has no session_key /
  active / archived_at / archive_cause; messages none of identity_hash and the
  later columns; summaries no model; large_files no line_count; no bootstrap,
  telemetry, maintenance, focus or migration-state tables; no FTS.
- ``"0.5"``: adds conversations.session_key under the obsolete GLOBAL unique
  index ``conversations_session_key_idx``, summaries.model (appended by ALTER),
  the first conversation_bootstrap_state shape, and FTS (when the build has it).
- ``"0.9"``: active/archived conversations, messages.identity_hash, the
  telemetry / maintenance / migration-state tables in their first shapes and
  the trigram FTS table; still no 0.10+ columns (large_content,
  transcript_entry_id, stable_event_key, openclaw_sender_metadata,
  archive_cause, line_count, ...) and no focus tables.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

ERAS = ("0.1", "0.5", "0.9")


@dataclass(frozen=True)
class LegacyDb:
    """What :func:`make_legacy_db` wrote: where, which era, and how many rows per table."""

    path: Path
    era: str
    row_counts: dict[str, int] = field(default_factory=dict)


def make_legacy_db(path: str | Path, era: str) -> LegacyDb:
    """Create ``path`` as a populated database of lossless-claw release ``era``."""
    if era not in ERAS:
        raise ValueError(f"unknown era {era!r}; choose one of {ERAS}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise FileExistsError(path)
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN")
        for statement in _ddl(era, _has_fts5(conn), _has_trigram(conn)):
            conn.execute(statement)
        _populate(conn, era)
        conn.execute("COMMIT")
        counts = {
            name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts%'"
            ).fetchall()
        }
    finally:
        conn.close()
    return LegacyDb(path=path, era=era, row_counts=counts)


def _at_least(era: str, minimum: str) -> bool:
    return tuple(map(int, era.split("."))) >= tuple(map(int, minimum.split(".")))


def _ddl(era: str, fts5: bool, trigram: bool) -> list[str]:
    v05, v09 = _at_least(era, "0.5"), _at_least(era, "0.9")
    conversation_cols = ["session_key TEXT,"] if v05 else []
    if v09:
        conversation_cols += ["active INTEGER NOT NULL DEFAULT 1,", "archived_at TEXT,"]
    statements = [
        f"""CREATE TABLE conversations (
          conversation_id INTEGER PRIMARY KEY AUTOINCREMENT,
          session_id TEXT NOT NULL,
          {" ".join(conversation_cols)}
          title TEXT,
          bootstrapped_at TEXT,
          created_at TEXT NOT NULL DEFAULT (datetime('now')),
          updated_at TEXT NOT NULL DEFAULT (datetime('now')))""",
        f"""CREATE TABLE messages (
          message_id INTEGER PRIMARY KEY AUTOINCREMENT,
          conversation_id INTEGER NOT NULL
            REFERENCES conversations(conversation_id) ON DELETE CASCADE,
          seq INTEGER NOT NULL,
          role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
          content TEXT NOT NULL,
          token_count INTEGER NOT NULL,
          {"identity_hash TEXT," if v09 else ""}
          created_at TEXT NOT NULL DEFAULT (datetime('now')),
          UNIQUE (conversation_id, seq))""",
        """CREATE TABLE summaries (
          summary_id TEXT PRIMARY KEY,
          conversation_id INTEGER NOT NULL
            REFERENCES conversations(conversation_id) ON DELETE CASCADE,
          kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
          depth INTEGER NOT NULL DEFAULT 0,
          content TEXT NOT NULL,
          token_count INTEGER NOT NULL,
          earliest_at TEXT,
          latest_at TEXT,
          descendant_count INTEGER NOT NULL DEFAULT 0,
          descendant_token_count INTEGER NOT NULL DEFAULT 0,
          source_message_token_count INTEGER NOT NULL DEFAULT 0,
          created_at TEXT NOT NULL DEFAULT (datetime('now')),
          file_ids TEXT NOT NULL DEFAULT '[]')""",
        """CREATE TABLE message_parts (
          part_id TEXT PRIMARY KEY,
          message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
          session_id TEXT NOT NULL,
          part_type TEXT NOT NULL CHECK (part_type IN ('text', 'reasoning', 'tool',
            'patch', 'file', 'subtask', 'compaction', 'step_start', 'step_finish',
            'snapshot', 'agent', 'retry')),
          ordinal INTEGER NOT NULL,
          text_content TEXT, is_ignored INTEGER, is_synthetic INTEGER,
          tool_call_id TEXT, tool_name TEXT, tool_status TEXT, tool_input TEXT,
          tool_output TEXT, tool_error TEXT, tool_title TEXT, patch_hash TEXT,
          patch_files TEXT, file_mime TEXT, file_name TEXT, file_url TEXT,
          subtask_prompt TEXT, subtask_desc TEXT, subtask_agent TEXT, step_reason TEXT,
          step_cost REAL, step_tokens_in INTEGER, step_tokens_out INTEGER,
          snapshot_hash TEXT, compaction_auto INTEGER, metadata TEXT,
          UNIQUE (message_id, ordinal))""",
        """CREATE TABLE summary_messages (
          summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
          message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE RESTRICT,
          ordinal INTEGER NOT NULL,
          PRIMARY KEY (summary_id, message_id))""",
        """CREATE TABLE summary_parents (
          summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
          parent_summary_id TEXT NOT NULL
            REFERENCES summaries(summary_id) ON DELETE RESTRICT,
          ordinal INTEGER NOT NULL,
          PRIMARY KEY (summary_id, parent_summary_id))""",
        """CREATE TABLE context_items (
          conversation_id INTEGER NOT NULL
            REFERENCES conversations(conversation_id) ON DELETE CASCADE,
          ordinal INTEGER NOT NULL,
          item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
          message_id INTEGER REFERENCES messages(message_id) ON DELETE RESTRICT,
          summary_id TEXT REFERENCES summaries(summary_id) ON DELETE RESTRICT,
          created_at TEXT NOT NULL DEFAULT (datetime('now')),
          PRIMARY KEY (conversation_id, ordinal),
          CHECK ((item_type = 'message' AND message_id IS NOT NULL AND summary_id IS NULL)
              OR (item_type = 'summary' AND summary_id IS NOT NULL AND message_id IS NULL)))""",
        """CREATE TABLE large_files (
          file_id TEXT PRIMARY KEY,
          conversation_id INTEGER NOT NULL
            REFERENCES conversations(conversation_id) ON DELETE CASCADE,
          file_name TEXT,
          mime_type TEXT,
          byte_size INTEGER,
          storage_uri TEXT NOT NULL,
          exploration_summary TEXT,
          created_at TEXT NOT NULL DEFAULT (datetime('now')))""",
        "CREATE INDEX messages_conv_seq_idx ON messages (conversation_id, seq)",
        "CREATE INDEX summaries_conv_created_idx ON summaries (conversation_id, created_at)",
        "CREATE INDEX message_parts_message_idx ON message_parts (message_id)",
        "CREATE INDEX message_parts_type_idx ON message_parts (part_type)",
        "CREATE INDEX context_items_conv_idx ON context_items (conversation_id, ordinal)",
        "CREATE INDEX large_files_conv_idx ON large_files (conversation_id, created_at)",
    ]
    if v05:
        statements += [
            # model arrived by ALTER, so it sits after file_ids in upgraded files.
            "ALTER TABLE summaries ADD COLUMN model TEXT NOT NULL DEFAULT 'unknown'",
            """CREATE TABLE conversation_bootstrap_state (
              conversation_id INTEGER PRIMARY KEY
                REFERENCES conversations(conversation_id) ON DELETE CASCADE,
              session_file_path TEXT NOT NULL,
              last_seen_size INTEGER NOT NULL,
              last_seen_mtime_ms INTEGER NOT NULL,
              last_processed_offset INTEGER NOT NULL,
              last_processed_entry_hash TEXT,
              updated_at TEXT NOT NULL DEFAULT (datetime('now')))""",
            "CREATE INDEX bootstrap_state_path_idx"
            " ON conversation_bootstrap_state (session_file_path, updated_at)",
        ]
    if v05 and not v09:
        statements.append("CREATE UNIQUE INDEX conversations_session_key_idx ON conversations (session_key)")
    if v09:
        statements += [
            """CREATE TABLE conversation_compaction_telemetry (
              conversation_id INTEGER PRIMARY KEY
                REFERENCES conversations(conversation_id) ON DELETE CASCADE,
              last_observed_cache_read INTEGER,
              last_observed_cache_write INTEGER,
              last_observed_cache_hit_at TEXT,
              last_observed_cache_break_at TEXT,
              cache_state TEXT NOT NULL DEFAULT 'unknown'
                CHECK (cache_state IN ('hot', 'cold', 'unknown')),
              consecutive_cold_observations INTEGER NOT NULL DEFAULT 0,
              retention TEXT,
              last_leaf_compaction_at TEXT,
              turns_since_leaf_compaction INTEGER NOT NULL DEFAULT 0,
              tokens_accumulated_since_leaf_compaction INTEGER NOT NULL DEFAULT 0,
              last_activity_band TEXT NOT NULL DEFAULT 'low'
                CHECK (last_activity_band IN ('low', 'medium', 'high')),
              last_api_call_at TEXT,
              last_cache_touch_at TEXT,
              provider TEXT,
              model TEXT,
              updated_at TEXT NOT NULL DEFAULT (datetime('now')))""",
            """CREATE TABLE conversation_compaction_maintenance (
              conversation_id INTEGER PRIMARY KEY
                REFERENCES conversations(conversation_id) ON DELETE CASCADE,
              pending INTEGER NOT NULL DEFAULT 0,
              requested_at TEXT,
              reason TEXT,
              running INTEGER NOT NULL DEFAULT 0,
              last_started_at TEXT,
              last_finished_at TEXT,
              last_failure_summary TEXT,
              token_budget INTEGER,
              current_token_count INTEGER,
              updated_at TEXT NOT NULL DEFAULT (datetime('now')))""",
            """CREATE TABLE lcm_migration_state (
              step_name TEXT NOT NULL,
              algorithm_version INTEGER NOT NULL,
              completed_at TEXT NOT NULL DEFAULT (datetime('now')),
              PRIMARY KEY (step_name, algorithm_version))""",
            "CREATE INDEX compaction_telemetry_state_idx"
            " ON conversation_compaction_telemetry (cache_state, updated_at)",
            "CREATE INDEX summary_messages_message_idx ON summary_messages (message_id)",
            "CREATE INDEX summary_parents_parent_summary_idx ON summary_parents (parent_summary_id)",
            "CREATE UNIQUE INDEX conversations_active_session_key_idx ON conversations"
            " (session_key) WHERE session_key IS NOT NULL AND active = 1",
            "CREATE INDEX conversations_session_key_active_created_idx"
            " ON conversations (session_key, active, created_at)",
            "CREATE INDEX conversations_session_id_active_created_idx"
            " ON conversations (session_id, active, created_at)",
            "CREATE INDEX messages_conv_identity_hash_idx ON messages (conversation_id, identity_hash)",
            "CREATE INDEX summaries_conv_depth_kind_idx ON summaries (conversation_id, depth, kind)",
        ]
    # Created empty here and filled after the rows exist (see _populate).
    if v05 and fts5:
        statements += [
            "CREATE VIRTUAL TABLE messages_fts USING fts5(content, tokenize='porter unicode61')",
            "CREATE VIRTUAL TABLE summaries_fts USING fts5("
            "summary_id UNINDEXED, content, tokenize='porter unicode61')",
        ]
    if v09 and trigram:
        statements.append(
            "CREATE VIRTUAL TABLE summaries_fts_cjk USING fts5("
            "summary_id UNINDEXED, content, tokenize='trigram')"
        )
    return statements


def _populate(conn: sqlite3.Connection, era: str) -> None:
    v05, v09 = _at_least(era, "0.5"), _at_least(era, "0.9")

    def insert(table: str, row: dict[str, object]) -> None:
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(row.values()))

    conversations: list[dict[str, object]] = [
        {
            "session_id": "sess-legacy-a",
            "title": "Legacy main chat",
            "created_at": "2026-01-01 10:00:00",
            "updated_at": "2026-01-01 10:30:00",
            "bootstrapped_at": "2026-01-01 10:00:05",
        },
        {
            "session_id": "sess-legacy-b",
            "title": None,
            "created_at": "2026-01-02 08:00:00",
            "updated_at": "2026-01-02 08:05:00",
            "bootstrapped_at": None,
        },
    ]
    if v05:
        conversations[0]["session_key"] = "agent:main:main"
        conversations[1]["session_key"] = "agent:main:telegram:direct:42"
    if v09:
        # An archived predecessor sharing the main key: allowed since 0.6.
        conversations.append(
            {
                "session_id": "sess-legacy-a0",
                "title": None,
                "session_key": "agent:main:main",
                "active": 0,
                "archived_at": "2026-01-01 09:59:59",
                "created_at": "2025-12-31 22:00:00",
                "updated_at": "2026-01-01 09:59:59",
                "bootstrapped_at": None,
            }
        )
    for row in conversations:
        insert("conversations", row)

    messages = [
        (1, 1, "user", "Please look at the failing build."),
        (1, 2, "assistant", "Running the test suite now."),
        (1, 3, "tool", '{"exit_code": 1, "failed": ["test_sync"]}'),
        (1, 4, "assistant", "test_sync fails on a stale fixture; fixing it."),
        (1, 5, "user", "Great, also check the summary of 東京 logs."),
        (1, 6, "tool", "[LCM File: file_00aa11bb22cc33dd | build.log | 2048 bytes]"),
        (2, 1, "system", "You are a helpful agent."),
        (2, 2, "user", "hello"),
        (2, 3, "assistant", ""),
    ]
    for index, (conv, seq, role, content) in enumerate(messages):
        row: dict[str, object] = {
            "conversation_id": conv,
            "seq": seq,
            "role": role,
            "content": content,
            "token_count": (len(content) + 3) // 4 + 1,
            "created_at": f"2026-01-0{conv} 10:{index:02d}:00",
        }
        if v09:
            row["identity_hash"] = hashlib.sha256(role.encode() + b"\x00" + content.encode()).hexdigest()
        insert("messages", row)
    insert(
        "message_parts",
        {
            "part_id": "00000000-0000-4000-8000-000000000001",
            "message_id": 1,
            "session_id": "sess-legacy-a",
            "part_type": "text",
            "ordinal": 0,
            "text_content": "Please look at the failing build.",
            "metadata": '{"originalRole":"user"}',
        },
    )
    insert(
        "message_parts",
        {
            "part_id": "00000000-0000-4000-8000-000000000002",
            "message_id": 3,
            "session_id": "sess-legacy-a",
            "part_type": "tool",
            "ordinal": 0,
            "tool_call_id": "toolu_01legacyabcdef",
            "tool_name": "bash",
            "tool_output": '{"exit_code":1}',
            "metadata": '{"originalRole":"toolResult"}',
        },
    )
    insert(
        "large_files",
        {
            "file_id": "file_00aa11bb22cc33dd",
            "conversation_id": 1,
            "file_name": "build.log",
            "mime_type": "text/plain",
            "byte_size": 2048,
            "storage_uri": "/tmp/lcm-files/1/file_00aa11bb22cc33dd.txt",
            "exploration_summary": "Build log with one failing test.",
            "created_at": "2026-01-01 10:05:00",
        },
    )

    summaries = [
        {
            "summary_id": "sum_legacyleaf0001",
            "conversation_id": 1,
            "kind": "leaf",
            "depth": 0,
            "content": "User asked to fix the build; tests were run.",
            "token_count": 12,
            "earliest_at": "2026-01-01T10:00:00.000Z",
            "latest_at": "2026-01-01T10:01:00.000Z",
            "descendant_count": 0,
            "descendant_token_count": 0,
            "source_message_token_count": 19,
            "created_at": "2026-01-01 10:10:00",
        },
        {
            "summary_id": "sum_legacyleaf0002",
            "conversation_id": 1,
            "kind": "leaf",
            "depth": 0,
            "content": "test_sync failed on a stale fixture.",
            "token_count": 9,
            "earliest_at": "2026-01-01T10:02:00.000Z",
            "latest_at": "2026-01-01T10:03:00.000Z",
            "descendant_count": 0,
            "descendant_token_count": 0,
            "source_message_token_count": 24,
            "created_at": "2026-01-01 10:11:00",
            "file_ids": '["file_00aa11bb22cc33dd"]',
        },
        {
            "summary_id": "sum_legacycond0001",
            "conversation_id": 1,
            "kind": "condensed",
            "depth": 1,
            "content": "Build fixed after a stale fixture was found.",
            "token_count": 11,
            "earliest_at": "2026-01-01T10:00:00.000Z",
            "latest_at": "2026-01-01T10:03:00.000Z",
            "descendant_count": 2,
            "descendant_token_count": 21,
            "source_message_token_count": 43,
            "created_at": "2026-01-01 10:12:00",
        },
    ]
    for row in summaries:
        if v05:
            row["model"] = "anthropic/claude-haiku" if row["kind"] == "leaf" else "unknown"
        insert("summaries", row)
    for summary_id, message_ids in (
        ("sum_legacyleaf0001", (1, 2)),
        ("sum_legacyleaf0002", (3, 4)),
    ):
        for ordinal, message_id in enumerate(message_ids):
            insert(
                "summary_messages",
                {
                    "summary_id": summary_id,
                    "message_id": message_id,
                    "ordinal": ordinal,
                },
            )
    for ordinal, source in enumerate(("sum_legacyleaf0001", "sum_legacyleaf0002")):
        insert(
            "summary_parents",
            {
                "summary_id": "sum_legacycond0001",
                "parent_summary_id": source,
                "ordinal": ordinal,
            },
        )

    # Conversation 1 is compacted (summary, then the fresh tail); conversation 2
    # has a gap at ordinal 2, as soft-reset pruning leaves behind.
    context = [
        (1, 0, "summary", None, "sum_legacycond0001"),
        (1, 1, "message", 5, None),
        (1, 2, "message", 6, None),
        (2, 0, "message", 7, None),
        (2, 1, "message", 8, None),
        (2, 3, "message", 9, None),
    ]
    for conv, ordinal, item_type, message_id, summary_id in context:
        insert(
            "context_items",
            {
                "conversation_id": conv,
                "ordinal": ordinal,
                "item_type": item_type,
                "message_id": message_id,
                "summary_id": summary_id,
                "created_at": "2026-01-01 10:12:00",
            },
        )

    if v05:
        insert(
            "conversation_bootstrap_state",
            {
                "conversation_id": 1,
                "session_file_path": "/tmp/sessions/sess-legacy-a.jsonl",
                "last_seen_size": 4096,
                "last_seen_mtime_ms": 1767261600000,
                "last_processed_offset": 4096,
                "last_processed_entry_hash": "ab" * 32,
                "updated_at": "2026-01-01 10:30:00",
            },
        )
    if v09:
        insert(
            "conversation_compaction_telemetry",
            {
                "conversation_id": 1,
                "last_observed_cache_read": 1200,
                "last_observed_cache_write": 300,
                "cache_state": "hot",
                "last_observed_cache_hit_at": "2026-01-01T10:29:00.000Z",
                "provider": "anthropic",
                "model": "claude-sonnet",
                "updated_at": "2026-01-01 10:29:00",
            },
        )
        insert(
            "conversation_compaction_maintenance",
            {
                "conversation_id": 1,
                "pending": 1,
                "requested_at": "2026-01-01T10:20:00.000Z",
                "reason": "threshold",
                "token_budget": 200000,
                "current_token_count": 150000,
                "updated_at": "2026-01-01 10:20:00",
            },
        )
        for step in (
            "backfillSummaryDepths",
            "backfillSummaryMetadata",
            "backfillToolCallColumns",
        ):
            insert(
                "lcm_migration_state",
                {
                    "step_name": step,
                    "algorithm_version": 1,
                    "completed_at": "2026-01-01 09:00:00",
                },
            )

    if _table_exists(conn, "messages_fts"):
        conn.execute(
            "INSERT INTO messages_fts (rowid, content)"
            " SELECT message_id, content FROM messages WHERE trim(content) <> ''"
        )
    for table in ("summaries_fts", "summaries_fts_cjk"):
        if _table_exists(conn, table):
            conn.execute(
                f"INSERT INTO {table} (summary_id, content) SELECT summary_id, content FROM summaries"
            )


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
        is not None
    )


def _probe(conn: sqlite3.Connection, using: str) -> bool:
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.legacy_probe USING {using}")
    except sqlite3.Error:
        return False
    conn.execute("DROP TABLE temp.legacy_probe")
    return True


def _has_fts5(conn: sqlite3.Connection) -> bool:
    return _probe(conn, "fts5(content)")


def _has_trigram(conn: sqlite3.Connection) -> bool:
    return _probe(conn, "fts5(content, tokenize='trigram')")
