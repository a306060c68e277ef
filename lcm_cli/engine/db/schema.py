"""The lcm.db schema, as an ordered list of migrations.

The schema is lossless-claw's (docs/reference/database.md §3-§4): same tables, columns,
types, defaults, CHECKs, foreign keys and index names, so the plugin reads a file
we wrote as its own and we read any file it wrote.

Rules for this module:

- A migration is a function named ``mNNN_what_changed(conn)``. Once shipped it is
  never edited; a later change is a new function appended to
  :data:`SCHEMA_MIGRATIONS`.
- Each migration runs in its own ``BEGIN IMMEDIATE`` transaction, is recorded in
  ``lcm_migration_state`` (step name ``lcm_cli.<function name>``, version 1) in
  that same transaction, and rolls back completely if it raises. The index builds
  of an index-only migration (:data:`STEPPED_INDEXES`) run first, one per
  transaction, so the live writer gets the lock between them. On a big table
  (over :data:`DEFERRED_INDEX_ROWS` rows) the build is deferred: the migration is
  recorded without it, reads work without it, and `lcm doctor` names it with the
  command that builds it when the user chooses (:func:`deferred_indexes`).
- Migrations are "ensure" style, like lossless-claw's own: ``CREATE ... IF NOT
  EXISTS``, probe ``PRAGMA table_info`` and ``ALTER TABLE ... ADD COLUMN`` what
  is missing. So the first migration adopts a database lossless-claw created
  (at any release) and upgrades an older one additively; nothing is dropped
  except the obsolete global-unique ``conversations_session_key_idx`` index.
- lossless-claw's own one-shot backfills (summary depths and metadata, identity
  hashes, tool-call columns) are left to lossless-claw: we never write its step
  names, so it still runs them the next time it opens the file.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from typing import NamedTuple

Migration = Callable[[sqlite3.Connection], None]

#: Prefix of our rows in ``lcm_migration_state``; keeps them apart from the
#: plugin's own step names, which it looks up by exact name.
STEP_PREFIX = "lcm_cli."
_STEP_VERSION = 1

_MIGRATION_STATE_DDL = """
CREATE TABLE IF NOT EXISTS lcm_migration_state (
  step_name TEXT NOT NULL,
  algorithm_version INTEGER NOT NULL,
  completed_at TEXT NOT NULL DEFAULT (datetime('now')),
  PRIMARY KEY (step_name, algorithm_version)
)
"""

# Base tables, in the shape a fresh lossless-claw database has. Two details are
# deliberate: messages.large_content / messages.stable_event_key and
# summaries.model are NOT in these CREATEs, because lossless-claw adds them with
# ALTER TABLE even on a fresh file; adding them the same way (see _COLUMNS)
# gives our files the plugin's physical column order too.
_TABLES: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS conversations (
      conversation_id INTEGER PRIMARY KEY AUTOINCREMENT,
      session_id TEXT NOT NULL,
      session_key TEXT,
      active INTEGER NOT NULL DEFAULT 1,
      archived_at TEXT,
      archive_cause TEXT,
      title TEXT,
      bootstrapped_at TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      updated_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS messages (
      message_id INTEGER PRIMARY KEY AUTOINCREMENT,
      conversation_id INTEGER NOT NULL
        REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      seq INTEGER NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
      content TEXT NOT NULL,
      token_count INTEGER NOT NULL,
      identity_hash TEXT,
      openclaw_sender_metadata TEXT,
      transcript_entry_id TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      UNIQUE (conversation_id, seq)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS summaries (
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
      file_ids TEXT NOT NULL DEFAULT '[]'
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS message_parts (
      part_id TEXT PRIMARY KEY,
      message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE CASCADE,
      session_id TEXT NOT NULL,
      part_type TEXT NOT NULL CHECK (part_type IN (
        'text', 'reasoning', 'tool', 'patch', 'file',
        'subtask', 'compaction', 'step_start', 'step_finish',
        'snapshot', 'agent', 'retry'
      )),
      ordinal INTEGER NOT NULL,
      text_content TEXT,
      is_ignored INTEGER,
      is_synthetic INTEGER,
      tool_call_id TEXT,
      tool_name TEXT,
      tool_status TEXT,
      tool_input TEXT,
      tool_output TEXT,
      tool_error TEXT,
      tool_title TEXT,
      patch_hash TEXT,
      patch_files TEXT,
      file_mime TEXT,
      file_name TEXT,
      file_url TEXT,
      subtask_prompt TEXT,
      subtask_desc TEXT,
      subtask_agent TEXT,
      step_reason TEXT,
      step_cost REAL,
      step_tokens_in INTEGER,
      step_tokens_out INTEGER,
      snapshot_hash TEXT,
      compaction_auto INTEGER,
      metadata TEXT,
      UNIQUE (message_id, ordinal)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS summary_messages (
      summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
      message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE RESTRICT,
      ordinal INTEGER NOT NULL,
      PRIMARY KEY (summary_id, message_id)
    )
    """,
    # Column naming is inverted (database.md §3.6): summary_id is the condensed
    # node, parent_summary_id the lower-depth source it consumed.
    """
    CREATE TABLE IF NOT EXISTS summary_parents (
      summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
      parent_summary_id TEXT NOT NULL
        REFERENCES summaries(summary_id) ON DELETE RESTRICT,
      ordinal INTEGER NOT NULL,
      PRIMARY KEY (summary_id, parent_summary_id)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS context_items (
      conversation_id INTEGER NOT NULL
        REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      ordinal INTEGER NOT NULL,
      item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
      message_id INTEGER REFERENCES messages(message_id) ON DELETE RESTRICT,
      summary_id TEXT REFERENCES summaries(summary_id) ON DELETE RESTRICT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      PRIMARY KEY (conversation_id, ordinal),
      CHECK (
        (item_type = 'message' AND message_id IS NOT NULL AND summary_id IS NULL) OR
        (item_type = 'summary' AND summary_id IS NOT NULL AND message_id IS NULL)
      )
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS large_files (
      file_id TEXT PRIMARY KEY,
      conversation_id INTEGER NOT NULL
        REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      file_name TEXT,
      mime_type TEXT,
      byte_size INTEGER,
      line_count INTEGER,
      storage_uri TEXT NOT NULL,
      exploration_summary TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS conversation_bootstrap_state (
      conversation_id INTEGER PRIMARY KEY
        REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      session_file_path TEXT NOT NULL,
      last_seen_size INTEGER NOT NULL,
      last_seen_mtime_ms INTEGER NOT NULL,
      last_processed_offset INTEGER NOT NULL,
      last_processed_entry_hash TEXT,
      session_header_id TEXT,
      last_processed_entry_id TEXT,
      fork_bounded INTEGER NOT NULL DEFAULT 0,
      fork_source_message_count INTEGER NOT NULL DEFAULT 0,
      soft_reset_pruned_at TEXT,
      updated_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS conversation_compaction_telemetry (
      conversation_id INTEGER PRIMARY KEY
        REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      last_observed_cache_read INTEGER,
      last_observed_cache_write INTEGER,
      last_observed_prompt_token_count INTEGER,
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
      updated_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS conversation_compaction_maintenance (
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
      projected_token_count INTEGER,
      raw_tokens_outside_tail INTEGER,
      context_threshold REAL,
      context_threshold_source TEXT,
      context_fresh_tail_count INTEGER,
      context_leaf_chunk_tokens INTEGER,
      retry_attempts INTEGER NOT NULL DEFAULT 0,
      next_attempt_after TEXT,
      resolution_reason TEXT,
      resolved_at TEXT,
      maintenance_revision INTEGER NOT NULL DEFAULT 0,
      updated_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS focus_briefs (
      brief_id TEXT PRIMARY KEY,
      conversation_id INTEGER NOT NULL
        REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      session_key TEXT,
      prompt TEXT NOT NULL,
      content TEXT NOT NULL,
      status TEXT NOT NULL
        CHECK (status IN ('draft', 'active', 'superseded', 'failed', 'inactive')),
      token_count INTEGER NOT NULL DEFAULT 0,
      target_tokens INTEGER NOT NULL DEFAULT 0,
      covered_latest_at TEXT,
      covered_message_seq INTEGER,
      source_context_hash TEXT NOT NULL DEFAULT '',
      generator_run_id TEXT,
      generator_session_key TEXT,
      raw_result_json TEXT,
      error TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      updated_at TEXT NOT NULL DEFAULT (datetime('now')),
      superseded_at TEXT
    )
    """,
    # summary_id deliberately has no foreign key here (as in lossless-claw).
    """
    CREATE TABLE IF NOT EXISTS focus_brief_sources (
      brief_id TEXT NOT NULL REFERENCES focus_briefs(brief_id) ON DELETE CASCADE,
      summary_id TEXT NOT NULL,
      ordinal INTEGER,
      role TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      PRIMARY KEY (brief_id, summary_id, role)
    )
    """,
    _MIGRATION_STATE_DDL,
)

# Columns an older (or fresh) database may lack, per table, in the order
# lossless-claw appends them. Each definition is valid for ALTER TABLE ADD
# COLUMN: NOT NULL columns always carry a constant default.
_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "conversations": (
        ("bootstrapped_at", "TEXT"),
        ("session_key", "TEXT"),
        ("active", "INTEGER NOT NULL DEFAULT 1"),
        ("archived_at", "TEXT"),
        ("archive_cause", "TEXT"),
    ),
    "summaries": (
        ("depth", "INTEGER NOT NULL DEFAULT 0"),
        ("earliest_at", "TEXT"),
        ("latest_at", "TEXT"),
        ("descendant_count", "INTEGER NOT NULL DEFAULT 0"),
        ("descendant_token_count", "INTEGER NOT NULL DEFAULT 0"),
        ("source_message_token_count", "INTEGER NOT NULL DEFAULT 0"),
        ("file_ids", "TEXT NOT NULL DEFAULT '[]'"),
        ("model", "TEXT NOT NULL DEFAULT 'unknown'"),
    ),
    "messages": (
        ("identity_hash", "TEXT"),
        ("openclaw_sender_metadata", "TEXT"),
        ("large_content", "TEXT"),
        ("transcript_entry_id", "TEXT"),
        ("stable_event_key", "TEXT"),
    ),
    "conversation_bootstrap_state": (
        ("fork_bounded", "INTEGER NOT NULL DEFAULT 0"),
        ("fork_source_message_count", "INTEGER NOT NULL DEFAULT 0"),
        ("session_header_id", "TEXT"),
        ("last_processed_entry_id", "TEXT"),
        ("soft_reset_pruned_at", "TEXT"),
    ),
    "conversation_compaction_telemetry": (
        ("consecutive_cold_observations", "INTEGER NOT NULL DEFAULT 0"),
        ("last_leaf_compaction_at", "TEXT"),
        ("turns_since_leaf_compaction", "INTEGER NOT NULL DEFAULT 0"),
        ("tokens_accumulated_since_leaf_compaction", "INTEGER NOT NULL DEFAULT 0"),
        (
            "last_activity_band",
            "TEXT NOT NULL DEFAULT 'low' CHECK (last_activity_band IN ('low', 'medium', 'high'))",
        ),
        ("last_api_call_at", "TEXT"),
        ("last_cache_touch_at", "TEXT"),
        ("provider", "TEXT"),
        ("model", "TEXT"),
        ("last_observed_prompt_token_count", "INTEGER"),
    ),
    "conversation_compaction_maintenance": (
        ("projected_token_count", "INTEGER"),
        ("raw_tokens_outside_tail", "INTEGER"),
        ("retry_attempts", "INTEGER NOT NULL DEFAULT 0"),
        ("next_attempt_after", "TEXT"),
        ("context_threshold", "REAL"),
        ("context_threshold_source", "TEXT"),
        ("context_fresh_tail_count", "INTEGER"),
        ("context_leaf_chunk_tokens", "INTEGER"),
        ("resolution_reason", "TEXT"),
        ("resolved_at", "TEXT"),
        ("maintenance_revision", "INTEGER NOT NULL DEFAULT 0"),
    ),
    "large_files": (("line_count", "INTEGER"),),
}

# Created after the columns exist, since several index columns that old
# databases gain by ALTER TABLE.
_INDEXES: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS messages_conv_seq_idx ON messages (conversation_id, seq)",
    "CREATE INDEX IF NOT EXISTS messages_conv_identity_hash_idx ON messages (conversation_id, identity_hash)",
    # Partial unique indexes: NULLs (legacy rows, runtime ingests) are exempt.
    "CREATE UNIQUE INDEX IF NOT EXISTS messages_conv_entry_unique_idx"
    " ON messages (conversation_id, transcript_entry_id)"
    " WHERE transcript_entry_id IS NOT NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS messages_stable_event_key_unique"
    " ON messages (conversation_id, stable_event_key)"
    " WHERE stable_event_key IS NOT NULL",
    # At most one ACTIVE conversation per session key; archived ones may repeat.
    "CREATE UNIQUE INDEX IF NOT EXISTS conversations_active_session_key_idx"
    " ON conversations (session_key)"
    " WHERE session_key IS NOT NULL AND active = 1",
    "CREATE INDEX IF NOT EXISTS conversations_session_key_active_created_idx"
    " ON conversations (session_key, active, created_at)",
    "CREATE INDEX IF NOT EXISTS conversations_session_id_active_created_idx"
    " ON conversations (session_id, active, created_at)",
    "CREATE INDEX IF NOT EXISTS summaries_conv_created_idx ON summaries (conversation_id, created_at)",
    "CREATE INDEX IF NOT EXISTS summaries_conv_depth_kind_idx ON summaries (conversation_id, depth, kind)",
    "CREATE INDEX IF NOT EXISTS summary_messages_message_idx ON summary_messages (message_id)",
    "CREATE INDEX IF NOT EXISTS summary_parents_parent_summary_idx ON summary_parents (parent_summary_id)",
    "CREATE INDEX IF NOT EXISTS message_parts_message_idx ON message_parts (message_id)",
    "CREATE INDEX IF NOT EXISTS message_parts_type_idx ON message_parts (part_type)",
    "CREATE INDEX IF NOT EXISTS context_items_conv_idx ON context_items (conversation_id, ordinal)",
    "CREATE INDEX IF NOT EXISTS large_files_conv_idx ON large_files (conversation_id, created_at)",
    "CREATE INDEX IF NOT EXISTS bootstrap_state_path_idx"
    " ON conversation_bootstrap_state (session_file_path, updated_at)",
    "CREATE INDEX IF NOT EXISTS compaction_telemetry_state_idx"
    " ON conversation_compaction_telemetry (cache_state, updated_at)",
    "CREATE INDEX IF NOT EXISTS focus_briefs_conversation_status_idx"
    " ON focus_briefs (conversation_id, status, created_at)",
    "CREATE INDEX IF NOT EXISTS focus_brief_sources_summary_idx ON focus_brief_sources (summary_id)",
)


class FtsTable(NamedTuple):
    """One optional full-text table: how to create it, seed it and spot a stale one."""

    name: str
    create: str
    seed: str
    columns: tuple[str, ...]
    stale_markers: tuple[str, ...] = ()
    needs_trigram: bool = False


# Standalone (not external-content) tables, as lossless-claw creates them.
# messages_fts is keyed by rowid = messages.message_id; the summary tables carry
# summary_id as an unindexed column.
FTS_TABLES: tuple[FtsTable, ...] = (
    FtsTable(
        "messages_fts",
        "CREATE VIRTUAL TABLE messages_fts USING fts5(content, tokenize='porter unicode61')",
        "INSERT INTO messages_fts(rowid, content) SELECT message_id, content FROM messages",
        ("content",),
        # An external-content table from early releases; lossless-claw rebuilds it.
        stale_markers=("content_rowid",),
    ),
    FtsTable(
        "summaries_fts",
        "CREATE VIRTUAL TABLE summaries_fts USING fts5("
        "summary_id UNINDEXED, content, tokenize='porter unicode61')",
        "INSERT INTO summaries_fts(summary_id, content) SELECT summary_id, content FROM summaries",
        ("summary_id", "content"),
        stale_markers=("content_rowid='summary_id'", 'content_rowid="summary_id"'),
    ),
    FtsTable(
        "summaries_fts_cjk",
        "CREATE VIRTUAL TABLE summaries_fts_cjk USING fts5("
        "summary_id UNINDEXED, content, tokenize='trigram')",
        "INSERT INTO summaries_fts_cjk(summary_id, content) SELECT summary_id, content FROM summaries",
        ("summary_id", "content"),
        needs_trigram=True,
    ),
)

_FTS_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")


# --------------------------------------------------------------------------
# Probes shared by the migrations, the store and readers
# --------------------------------------------------------------------------


def table_exists(conn: sqlite3.Connection, name: str) -> bool:
    """True when a table (or virtual table) called ``name`` exists in ``main``."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return row is not None


def column_names(conn: sqlite3.Connection, table: str) -> set[str]:
    """The column names of ``table`` (empty when the table does not exist)."""
    return {row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")}


def _probe_virtual_table(conn: sqlite3.Connection, using: str) -> bool:
    # Try the CREATE inside a savepoint and always roll it back, so the probe
    # leaves nothing behind and works inside or outside a transaction.
    conn.execute("SAVEPOINT lcm_cli_fts_probe")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.lcm_cli_fts_probe USING {using}")
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.execute("ROLLBACK TO SAVEPOINT lcm_cli_fts_probe")
        conn.execute("RELEASE SAVEPOINT lcm_cli_fts_probe")


@functools.cache
def _build_has(using: str) -> bool:
    """Whether this process's SQLite library can create ``USING <using>`` (probed in memory).

    The capability belongs to the library, not to a file, so the probe never touches a
    database another process may be writing.
    """
    probe = sqlite3.connect(":memory:")
    try:
        return _probe_virtual_table(probe, using)
    except sqlite3.Error:
        return False
    finally:
        probe.close()


def fts5_available(conn: sqlite3.Connection | None = None) -> bool:
    """True when this SQLite build can create FTS5 tables (``conn`` is not touched)."""
    return _build_has("fts5(content)")


def trigram_available(conn: sqlite3.Connection | None = None) -> bool:
    """True when this SQLite build has FTS5 and its ``trigram`` tokenizer (3.34+)."""
    return _build_has("fts5(content, tokenize='trigram')")


# --------------------------------------------------------------------------
# Migrations (append only; never edit a shipped one)
# --------------------------------------------------------------------------


def m001_adopt_lossless_claw_schema(conn: sqlite3.Connection) -> None:
    """Create or adopt every base table, column and index of lossless-claw's schema."""
    for ddl in _TABLES:
        conn.execute(ddl)
    for table, columns in _COLUMNS.items():
        present = column_names(conn, table)
        for name, definition in columns:
            if name not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")
    # An ALTER-added NOT NULL column is filled by its default, but rows written
    # by a build that had the column nullable may still hold NULL.
    conn.execute("UPDATE conversations SET active = 1 WHERE active IS NULL")
    # The global-unique key index of ~0.5 forbids archived duplicates of a
    # session key, which later releases rely on; it is replaced by the partial
    # index on active rows. Dropped before the new one is built.
    conn.execute("DROP INDEX IF EXISTS conversations_session_key_idx")
    for ddl in _INDEXES:
        conn.execute(ddl)


def m002_add_full_text_tables(conn: sqlite3.Connection) -> None:
    """Create the optional FTS5 tables this SQLite build supports, seeded from base rows.

    A table that exists and is sound is left alone. A missing or broken one
    (shadow table gone, columns differ, legacy external-content options) is
    rebuilt: it is derived data, so rebuilding loses nothing. Without FTS5 this
    migration does nothing, and readers fall back to LIKE scans.
    """
    if not fts5_available(conn):
        return
    trigram = trigram_available(conn)
    for spec in FTS_TABLES:
        if spec.needs_trigram and not trigram:
            continue
        if not _fts_table_needs_rebuild(conn, spec):
            continue
        conn.execute(f"DROP TABLE IF EXISTS {_quote(spec.name)}")
        for suffix in _FTS_SHADOW_SUFFIXES:
            conn.execute(f"DROP TABLE IF EXISTS {_quote(spec.name + suffix)}")
        conn.execute(spec.create)
        conn.execute(spec.seed)


def _fts_table_needs_rebuild(conn: sqlite3.Connection, spec: FtsTable) -> bool:
    names = [spec.name, *(spec.name + suffix for suffix in _FTS_SHADOW_SUFFIXES)]
    placeholders = ", ".join("?" for _ in names)
    rows = conn.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name IN ({placeholders})",
        names,
    ).fetchall()
    found = {name: sql or "" for name, sql in rows}
    if len(found) != len(names):
        return True
    if any(marker in found[spec.name] for marker in spec.stale_markers):
        return True
    try:
        return not set(spec.columns) <= column_names(conn, spec.name)
    except sqlite3.Error:
        return True


#: Indexes that keep every `lcm` read bounded on large databases. Expression indexes on
#: ``julianday(...)`` let the keyset lists walk in order without sorting a whole
#: conversation; the covering ``(conversation_id, created_at, token_count)`` index answers
#: per-conversation counts, token sums and time ranges without touching message bodies,
#: and the summaries stats index does the same for summary totals and depths.
#: All are additive: lossless-claw ignores them (SQLite 3.20+ can open the file).
READ_PATH_INDEXES: tuple[tuple[str, str], ...] = (
    ("lcm_messages_conv_time_tokens_idx", "messages (conversation_id, created_at, token_count)"),
    ("lcm_messages_conv_julian_idx", "messages (conversation_id, julianday(created_at), message_id)"),
    ("lcm_summaries_coverage_idx", "summaries (julianday(COALESCE(latest_at, created_at)), summary_id)"),
    (
        "lcm_summaries_conv_coverage_idx",
        "summaries (conversation_id, julianday(COALESCE(latest_at, created_at)), summary_id)",
    ),
    ("lcm_conversations_updated_idx", "conversations (julianday(updated_at), conversation_id)"),
    (
        "lcm_summaries_stats_idx",
        "summaries (conversation_id, kind, depth, token_count, source_message_token_count,"
        " earliest_at, latest_at, created_at)",
    ),
)


def m003_add_read_path_indexes(conn: sqlite3.Connection) -> None:
    """Add the indexes behind `lcm`'s list, tail and status queries."""
    for name, target in READ_PATH_INDEXES:
        conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target}")


#: lossless-claw 1.0's durable-turn tables (docs/reference/openclaw-hosts.md): the ``commitTurn``
#: idempotency ledger, the pending-summary staging tables, and the transcript epoch and
#: anchor-trust tables of its SQLite-transcript bootstrap. Same names, columns, CHECKs,
#: foreign keys and indexes, so either engine can take over a database the other wrote.
DURABLE_TURN_DDL: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS turn_advancements (
      advancement_key TEXT PRIMARY KEY,
      payload_hash TEXT NOT NULL,
      session_id TEXT NOT NULL,
      session_key TEXT,
      admission_entry_id TEXT NOT NULL,
      terminal_entry_id TEXT NOT NULL,
      message_count INTEGER NOT NULL,
      committed_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS message_transcript_anchor_trust (
      message_id INTEGER PRIMARY KEY REFERENCES messages(message_id) ON DELETE CASCADE,
      conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      transcript_entry_id TEXT,
      trust_state TEXT NOT NULL CHECK (trust_state IN (
        'verified', 'repaired', 'suspect', 'legacy_prefix', 'unproven'
      )),
      source TEXT NOT NULL,
      reason TEXT,
      verified_at TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      updated_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS conversation_transcript_epochs (
      conversation_id INTEGER PRIMARY KEY REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      session_id TEXT NOT NULL,
      session_key TEXT,
      frontier_entry_id TEXT,
      frontier_seq INTEGER,
      frontier_created_at TEXT,
      migration_mode TEXT NOT NULL CHECK (migration_mode IN (
        'verified', 'repairable', 'legacy_prefix', 'corrupt'
      )),
      metadata_json TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      updated_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS pending_compaction_batches (
      batch_id TEXT PRIMARY KEY,
      conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      session_key TEXT,
      session_target_json TEXT NOT NULL DEFAULT '{}',
      status TEXT NOT NULL DEFAULT 'planning'
        CHECK (status IN ('planning', 'ready', 'publishing', 'published', 'stale', 'failed')),
      source_projection_fingerprint TEXT NOT NULL,
      compactable_start_ordinal INTEGER NOT NULL,
      compactable_end_ordinal INTEGER NOT NULL,
      planned_fresh_tail_start_ordinal INTEGER,
      prompt_version TEXT NOT NULL DEFAULT 'unknown',
      model TEXT NOT NULL DEFAULT 'unknown',
      failure_summary TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      updated_at TEXT NOT NULL DEFAULT (datetime('now')),
      published_at TEXT
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS pending_summary_nodes (
      node_id TEXT PRIMARY KEY,
      batch_id TEXT NOT NULL REFERENCES pending_compaction_batches(batch_id) ON DELETE CASCADE,
      conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
      kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')),
      depth INTEGER NOT NULL DEFAULT 0,
      status TEXT NOT NULL DEFAULT 'planned'
        CHECK (status IN ('planned', 'running', 'ready', 'promoted', 'stale', 'failed')),
      ordinal_start INTEGER NOT NULL,
      ordinal_end INTEGER NOT NULL,
      source_fingerprint TEXT NOT NULL,
      source_context_hash TEXT,
      content TEXT,
      token_count INTEGER,
      prompt_version TEXT NOT NULL DEFAULT 'unknown',
      model TEXT NOT NULL DEFAULT 'unknown',
      canonical_summary_id TEXT REFERENCES summaries(summary_id) ON DELETE SET NULL,
      lease_owner TEXT,
      lease_expires_at TEXT,
      failure_summary TEXT,
      retry_count INTEGER NOT NULL DEFAULT 0,
      next_attempt_after TEXT,
      created_at TEXT NOT NULL DEFAULT (datetime('now')),
      updated_at TEXT NOT NULL DEFAULT (datetime('now')),
      ready_at TEXT,
      promoted_at TEXT,
      UNIQUE (batch_id, ordinal_start, ordinal_end, depth, kind),
      CHECK (ordinal_end >= ordinal_start),
      CHECK (token_count IS NULL OR token_count >= 0)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS pending_summary_node_messages (
      node_id TEXT NOT NULL REFERENCES pending_summary_nodes(node_id) ON DELETE CASCADE,
      message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE RESTRICT,
      ordinal INTEGER NOT NULL,
      transcript_entry_id TEXT,
      identity_hash TEXT,
      PRIMARY KEY (node_id, message_id)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS pending_summary_node_children (
      node_id TEXT NOT NULL REFERENCES pending_summary_nodes(node_id) ON DELETE CASCADE,
      ordinal INTEGER NOT NULL,
      child_node_id TEXT REFERENCES pending_summary_nodes(node_id) ON DELETE CASCADE,
      child_summary_id TEXT REFERENCES summaries(summary_id) ON DELETE RESTRICT,
      PRIMARY KEY (node_id, ordinal),
      CHECK (
        (child_node_id IS NOT NULL AND child_summary_id IS NULL) OR
        (child_node_id IS NULL AND child_summary_id IS NOT NULL)
      )
    )
    """,
    "CREATE INDEX IF NOT EXISTS message_anchor_trust_conv_state_idx"
    " ON message_transcript_anchor_trust (conversation_id, trust_state)",
    "CREATE INDEX IF NOT EXISTS message_anchor_trust_conv_entry_idx"
    " ON message_transcript_anchor_trust (conversation_id, transcript_entry_id)"
    " WHERE transcript_entry_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS conversation_transcript_epochs_mode_idx"
    " ON conversation_transcript_epochs (migration_mode, created_at)",
    "CREATE INDEX IF NOT EXISTS pending_compaction_batches_conv_status_idx"
    " ON pending_compaction_batches (conversation_id, status, created_at)",
    "CREATE INDEX IF NOT EXISTS pending_summary_nodes_batch_status_idx"
    " ON pending_summary_nodes (batch_id, status, ordinal_start)",
    "CREATE INDEX IF NOT EXISTS pending_summary_nodes_conv_status_idx"
    " ON pending_summary_nodes (conversation_id, status, ordinal_start)",
    "CREATE INDEX IF NOT EXISTS pending_summary_node_messages_message_idx"
    " ON pending_summary_node_messages (message_id)",
    "CREATE INDEX IF NOT EXISTS pending_summary_node_children_child_node_idx"
    " ON pending_summary_node_children (child_node_id)",
    "CREATE INDEX IF NOT EXISTS pending_summary_node_children_child_summary_idx"
    " ON pending_summary_node_children (child_summary_id)",
    "CREATE INDEX IF NOT EXISTS turn_advancements_session_idx ON turn_advancements (session_id, committed_at)",
)


def m004_add_durable_turn_tables(conn: sqlite3.Connection) -> None:
    """Create lossless-claw 1.0's durable-turn tables (a 1.0 database already has them)."""
    for ddl in DURABLE_TURN_DDL:
        conn.execute(ddl)


def m005_add_trigger_maintained_totals(conn: sqlite3.Connection) -> None:
    """Add the ``lcm_*_totals`` tables, the triggers that keep them, and count once."""
    from lcm_cli.engine.db import totals

    totals.install(conn)


#: A covering index for a summary's token count by id. ``status`` and ``conversations
#: list/show`` sum their context items' summary tokens from it: one index probe per item
#: instead of the id index and then the summary's own row (several times faster on a
#: cold page cache). Additive, as the read-path indexes above.
SUMMARY_TOKENS_INDEX = ("lcm_summaries_tokens_idx", "summaries (summary_id, token_count)")


def m006_add_summary_tokens_index(conn: sqlite3.Connection) -> None:
    """Add the covering index the context token sums read (see SUMMARY_TOKENS_INDEX)."""
    name, target = SUMMARY_TOKENS_INDEX
    conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target}")


#: Every migration, in order. Append new ones; never reorder or edit.
SCHEMA_MIGRATIONS: list[Migration] = [
    m001_adopt_lossless_claw_schema,
    m002_add_full_text_tables,
    m003_add_read_path_indexes,
    m004_add_durable_turn_tables,
    m005_add_trigger_maintained_totals,
    m006_add_summary_tokens_index,
]

#: Index builds that run one per transaction before their migration (which then finds
#: them in place and only records itself). SQLite builds an index in one statement that
#: holds the write lock throughout, and cannot do it in steps; so each build at least
#: stands alone, with the live writer's turn in between, and the table is read into the
#: page cache first, outside the lock, so the lock covers the sort and not the disk reads.
#: Each statement is idempotent: a kill between them leaves built indexes that the next
#: open skips. (The totals of m005 are counted in steps by ``totals``.)
STEPPED_INDEXES: dict[str, tuple[tuple[str, str], ...]] = {
    m003_add_read_path_indexes.__name__: READ_PATH_INDEXES,
    m006_add_summary_tokens_index.__name__: (SUMMARY_TOKENS_INDEX,),
}

#: Over this many rows a table's index is not built on open: SQLite builds an index in
#: one statement (about 1 us a row here: 100 ms at this size) and the live writer waits
#: for all of it. Such a build waits for `lcm doctor apply --check storage.read-indexes`.
DEFERRED_INDEX_ROWS = 100_000


# --------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------


def migration_step_name(migration: Migration) -> str:
    """The ``lcm_migration_state.step_name`` recorded for ``migration``."""
    return STEP_PREFIX + migration.__name__


def applied_migrations(conn: sqlite3.Connection) -> set[str]:
    """Names (without prefix) of our migrations already recorded in this database."""
    if not table_exists(conn, "lcm_migration_state"):
        return set()
    rows = conn.execute(
        "SELECT step_name FROM lcm_migration_state WHERE step_name LIKE ? ESCAPE '\\'",
        (STEP_PREFIX.replace("_", "\\_") + "%",),
    )
    return {row[0][len(STEP_PREFIX) :] for row in rows}


def pending_migrations(conn: sqlite3.Connection, migrations: Sequence[Migration] | None = None) -> list[str]:
    """Names of the migrations :func:`migrate` would apply to this database now."""
    done = applied_migrations(conn)
    return [m.__name__ for m in _chosen(migrations) if m.__name__ not in done]


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] | None = None) -> list[str]:
    """Apply every pending migration, each in its own transaction; return their names.

    ``conn`` must be writable and not inside a transaction. Safe to call on every
    open: when nothing is pending it only reads ``lcm_migration_state`` and takes
    no write lock. Two processes migrating at once are safe too: each migration
    re-checks its record after taking the write lock.
    """
    if conn.in_transaction:
        raise RuntimeError("migrate() needs a connection that is not inside a transaction")
    chosen = _chosen(migrations)
    done = applied_migrations(conn)
    applied: list[str] = []
    for migration in chosen:
        if migration.__name__ in done:
            continue
        if _apply(conn, migration):
            applied.append(migration.__name__)
    return applied


def _chosen(migrations: Sequence[Migration] | None) -> Sequence[Migration]:
    return SCHEMA_MIGRATIONS if migrations is None else migrations


def _apply(conn: sqlite3.Connection, migration: Migration) -> bool:
    stepped = migration.__name__ in STEPPED_INDEXES
    for name, target in STEPPED_INDEXES.get(migration.__name__, ()):
        if _rows_over(conn, _table_of(target), DEFERRED_INDEX_ROWS):
            continue  # deferred: see DEFERRED_INDEX_ROWS
        if not _build_index(conn, migration, name, target):
            return False
    # Explicit BEGIN IMMEDIATE works whatever isolation_level the caller chose:
    # the sqlite3 module never adds its own BEGIN while a transaction is open.
    conn.execute("BEGIN IMMEDIATE")
    try:
        step = migration_step_name(migration)
        if _is_recorded(conn, step):
            # Another process applied it between our read and our lock.
            conn.execute("ROLLBACK")
            return False
        if not stepped:  # a stepped migration's work is its indexes, built (or deferred) above
            migration(conn)
        conn.execute(_MIGRATION_STATE_DDL)
        conn.execute(
            "INSERT INTO lcm_migration_state (step_name, algorithm_version, completed_at)"
            " VALUES (?, ?, datetime('now'))",
            (step, _STEP_VERSION),
        )
        conn.execute("COMMIT")
        return True
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _table_of(target: str) -> str:
    return target.split(" ", 1)[0]


def _rows_over(conn: sqlite3.Connection, table: str, limit: int) -> bool:
    """True when ``table`` has more than ``limit`` rows (its largest rowid: one b-tree descent)."""
    if not table_exists(conn, table):
        return False
    return int(conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {_quote(table)}").fetchone()[0]) > limit


def _index_exists(conn: sqlite3.Connection, name: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)).fetchone()
        is not None
    )


def deferred_indexes(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """The ``(name, target)`` of each index whose migration is recorded but which was not
    built (deferred on a big table, see :data:`DEFERRED_INDEX_ROWS`)."""
    done = applied_migrations(conn)
    return [
        (name, target)
        for migration, indexes in STEPPED_INDEXES.items()
        if migration in done
        for name, target in indexes
        if not _index_exists(conn, name) and table_exists(conn, _table_of(target))
    ]


def build_index(conn: sqlite3.Connection, name: str, target: str) -> None:
    """Build one deferred index in its own transaction (the writer waits for the whole build)."""
    _read_into_cache(conn, _table_of(target))
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _build_index(conn: sqlite3.Connection, migration: Migration, name: str, target: str) -> bool:
    """Build one index of ``migration`` in its own transaction; False when another process
    recorded the migration meanwhile."""
    if _index_exists(conn, name):
        return True
    _read_into_cache(conn, _table_of(target))
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _is_recorded(conn, migration_step_name(migration)):
            conn.execute("ROLLBACK")
            return False
        conn.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {target}")
        conn.execute("COMMIT")
        return True
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _read_into_cache(conn: sqlite3.Connection, table: str) -> None:
    """Read every page of ``table`` (its last column: the whole record, overflow pages too)
    without any lock a writer waits for, so the index build after it reads from memory."""
    columns = [row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")]
    if not columns:
        return
    last = _quote(columns[-1])
    conn.execute(
        f"SELECT COUNT(*) FROM {_quote(table)} NOT INDEXED WHERE length(quote({last})) < 0"
    ).fetchone()


def _is_recorded(conn: sqlite3.Connection, step: str) -> bool:
    if not table_exists(conn, "lcm_migration_state"):
        return False
    row = conn.execute(
        "SELECT 1 FROM lcm_migration_state WHERE step_name = ? AND algorithm_version = ?",
        (step, _STEP_VERSION),
    ).fetchone()
    return row is not None


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
