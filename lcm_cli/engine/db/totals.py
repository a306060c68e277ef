"""Running totals of messages and summaries, kept true by triggers.

``status`` and ``conversations list/show`` used to scan ``messages`` for counts, token
sums and the time range. Two additive tables hold those figures instead, and triggers on
``messages`` and ``summaries`` update them on every INSERT, UPDATE and DELETE, so they
stay true whichever program writes (lossless-claw's plugin does not know the tables, but
its writes fire the triggers):

- ``lcm_conversation_totals``: per conversation, message count, token sum, raw-text
  MIN/MAX of ``created_at``, and the highest ``message_id`` ever counted (the stamp).
- ``lcm_summary_totals``: per (conversation, kind, depth), summary count, token sum,
  source-message token sum and the MIN/MAX of ``COALESCE(earliest_at|latest_at,
  created_at)``.

A delete (or an update that moves a row) that removes the current earliest or latest
value recomputes that one conversation's MIN/MAX by an index seek; any other write is
O(1). The triggers use only SQL that any SQLite since 3.8 parses (no UPSERT), so an
older program can still load the schema.

Totals can go stale when the triggers are gone (a table rebuild drops them) or when the
file was written before they existed. (One write the triggers cannot see: a row that
``INSERT OR REPLACE`` removes on a conflict fires no DELETE trigger unless
``recursive_triggers`` is on. Neither lcm nor lossless-claw writes ``messages`` or
``summaries`` that way.) :func:`staleness` detects that cheaply: every
trigger present in ``sqlite_master``, and no ``message_id`` above the stamp. A writer
(:func:`ensure_fresh`) then rebuilds them in one transaction; a reader, which opens the
file read-only, scans for that call instead and says so in ``meta.totals``.
"""

from __future__ import annotations

import sqlite3

CONVERSATION_TOTALS = "lcm_conversation_totals"
SUMMARY_TOTALS = "lcm_summary_totals"

TABLES_DDL: tuple[str, ...] = (
    f"""
    CREATE TABLE IF NOT EXISTS {CONVERSATION_TOTALS} (
      conversation_id INTEGER PRIMARY KEY,
      message_count INTEGER NOT NULL DEFAULT 0,
      message_tokens INTEGER NOT NULL DEFAULT 0,
      earliest_at TEXT,
      latest_at TEXT,
      max_message_id INTEGER
    )
    """,
    f"""
    CREATE TABLE IF NOT EXISTS {SUMMARY_TOTALS} (
      conversation_id INTEGER NOT NULL,
      kind TEXT NOT NULL,
      depth INTEGER NOT NULL,
      summary_count INTEGER NOT NULL DEFAULT 0,
      summary_tokens INTEGER NOT NULL DEFAULT 0,
      source_tokens INTEGER NOT NULL DEFAULT 0,
      earliest_at TEXT,
      latest_at TEXT,
      PRIMARY KEY (conversation_id, kind, depth)
    )
    """,
)

# The row-level pieces each trigger is made of: "add" a row's figures, "remove" them.
_MESSAGE_ADD = f"""
  INSERT OR IGNORE INTO {CONVERSATION_TOTALS} (conversation_id) VALUES (NEW.conversation_id);
  UPDATE {CONVERSATION_TOTALS} SET
    message_count = message_count + 1,
    message_tokens = message_tokens + COALESCE(NEW.token_count, 0),
    earliest_at = CASE WHEN earliest_at IS NULL OR NEW.created_at < earliest_at
                       THEN NEW.created_at ELSE earliest_at END,
    latest_at = CASE WHEN latest_at IS NULL OR NEW.created_at > latest_at
                     THEN NEW.created_at ELSE latest_at END,
    max_message_id = CASE WHEN max_message_id IS NULL OR NEW.message_id > max_message_id
                          THEN NEW.message_id ELSE max_message_id END
  WHERE conversation_id = NEW.conversation_id;"""

# Removing the current earliest/latest value recomputes it from the table, which by
# now no longer holds the old row (AFTER trigger): an index seek on lcm's
# (conversation_id, created_at, token_count) index.
_MESSAGE_REMOVE = f"""
  UPDATE {CONVERSATION_TOTALS} SET
    message_count = message_count - 1,
    message_tokens = message_tokens - COALESCE(OLD.token_count, 0),
    earliest_at = CASE WHEN OLD.created_at IS earliest_at
      THEN (SELECT MIN(created_at) FROM messages WHERE conversation_id = OLD.conversation_id)
      ELSE earliest_at END,
    latest_at = CASE WHEN OLD.created_at IS latest_at
      THEN (SELECT MAX(created_at) FROM messages WHERE conversation_id = OLD.conversation_id)
      ELSE latest_at END
  WHERE conversation_id = OLD.conversation_id;"""

_SUMMARY_KEY = "conversation_id = {r}.conversation_id AND kind = {r}.kind AND depth = {r}.depth"
# The same group, as the recount of a removed earliest/latest value selects it.
_SUMMARY_GROUP = "s.conversation_id = OLD.conversation_id AND s.kind = OLD.kind AND s.depth = OLD.depth"

_SUMMARY_ADD = f"""
  INSERT OR IGNORE INTO {SUMMARY_TOTALS} (conversation_id, kind, depth)
    VALUES (NEW.conversation_id, NEW.kind, NEW.depth);
  UPDATE {SUMMARY_TOTALS} SET
    summary_count = summary_count + 1,
    summary_tokens = summary_tokens + COALESCE(NEW.token_count, 0),
    source_tokens = source_tokens + COALESCE(NEW.source_message_token_count, 0),
    earliest_at = CASE WHEN earliest_at IS NULL OR COALESCE(NEW.earliest_at, NEW.created_at) < earliest_at
                       THEN COALESCE(NEW.earliest_at, NEW.created_at) ELSE earliest_at END,
    latest_at = CASE WHEN latest_at IS NULL OR COALESCE(NEW.latest_at, NEW.created_at) > latest_at
                     THEN COALESCE(NEW.latest_at, NEW.created_at) ELSE latest_at END
  WHERE {_SUMMARY_KEY.format(r="NEW")};"""

_SUMMARY_REMOVE = f"""
  UPDATE {SUMMARY_TOTALS} SET
    summary_count = summary_count - 1,
    summary_tokens = summary_tokens - COALESCE(OLD.token_count, 0),
    source_tokens = source_tokens - COALESCE(OLD.source_message_token_count, 0),
    earliest_at = CASE WHEN COALESCE(OLD.earliest_at, OLD.created_at) IS earliest_at
      THEN (SELECT MIN(COALESCE(s.earliest_at, s.created_at)) FROM summaries s
             WHERE {_SUMMARY_GROUP})
      ELSE earliest_at END,
    latest_at = CASE WHEN COALESCE(OLD.latest_at, OLD.created_at) IS latest_at
      THEN (SELECT MAX(COALESCE(s.latest_at, s.created_at)) FROM summaries s
             WHERE {_SUMMARY_GROUP})
      ELSE latest_at END
  WHERE {_SUMMARY_KEY.format(r="OLD")};"""

#: name -> CREATE TRIGGER statement. The UPDATE triggers fire only when a counted column
#: changes; they remove the old row's figures, then add the new row's.
TRIGGERS: dict[str, str] = {
    "lcm_totals_messages_ai": f"AFTER INSERT ON messages BEGIN{_MESSAGE_ADD}\nEND",
    "lcm_totals_messages_ad": f"AFTER DELETE ON messages BEGIN{_MESSAGE_REMOVE}\nEND",
    "lcm_totals_messages_au": (
        "AFTER UPDATE OF conversation_id, token_count, created_at, message_id ON messages"
        f" BEGIN{_MESSAGE_REMOVE}{_MESSAGE_ADD}\nEND"
    ),
    "lcm_totals_summaries_ai": f"AFTER INSERT ON summaries BEGIN{_SUMMARY_ADD}\nEND",
    "lcm_totals_summaries_ad": f"AFTER DELETE ON summaries BEGIN{_SUMMARY_REMOVE}\nEND",
    "lcm_totals_summaries_au": (
        "AFTER UPDATE OF conversation_id, kind, depth, token_count, source_message_token_count,"
        f" earliest_at, latest_at, created_at ON summaries BEGIN{_SUMMARY_REMOVE}{_SUMMARY_ADD}\nEND"
    ),
}

_REBUILD: tuple[str, ...] = (
    f"DELETE FROM {CONVERSATION_TOTALS}",
    f"DELETE FROM {SUMMARY_TOTALS}",
    f"""INSERT INTO {CONVERSATION_TOTALS}
          (conversation_id, message_count, message_tokens, earliest_at, latest_at, max_message_id)
        SELECT conversation_id, COUNT(*), COALESCE(SUM(token_count), 0), MIN(created_at),
               MAX(created_at), MAX(message_id)
        FROM messages GROUP BY conversation_id""",
    f"""INSERT INTO {SUMMARY_TOTALS}
          (conversation_id, kind, depth, summary_count, summary_tokens, source_tokens,
           earliest_at, latest_at)
        SELECT conversation_id, kind, depth, COUNT(*), COALESCE(SUM(token_count), 0),
               COALESCE(SUM(source_message_token_count), 0),
               MIN(COALESCE(earliest_at, created_at)), MAX(COALESCE(latest_at, created_at))
        FROM summaries GROUP BY conversation_id, kind, depth""",
)


def install(conn: sqlite3.Connection) -> None:
    """Create the tables and (re)create the triggers, then recount everything.

    The caller holds the write transaction. Recreating every trigger also replaces
    one someone else left behind under our name with other SQL.
    """
    for ddl in TABLES_DDL:
        conn.execute(ddl)
    for name, body in TRIGGERS.items():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(f"CREATE TRIGGER {name} {body}")
    for sql in _REBUILD:
        conn.execute(sql)


def staleness(conn: sqlite3.Connection, trigger_names: set[str] | None = None) -> str | None:
    """Why the totals cannot be trusted, or None when they can. Cheap: no table scan.

    ``trigger_names`` may pass the names already read from ``sqlite_master``.
    """
    if trigger_names is None:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
        trigger_names = {row[0] for row in rows}
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
            (CONVERSATION_TOTALS, SUMMARY_TOTALS),
        )
    }
    if len(tables) < 2:
        return "the totals tables are missing (a database written before lcm kept totals)"
    missing = sorted(set(TRIGGERS) - trigger_names)
    if missing:
        return f"the totals triggers are missing ({', '.join(missing)}); a table rebuild drops them"
    # Rows added while the triggers were absent carry ids above the stamp. MAX(rowid)
    # and a 200-row MAX are both O(1)-ish.
    row = conn.execute(
        f"""SELECT (SELECT MAX(message_id) FROM messages),
                   (SELECT MAX(max_message_id) FROM {CONVERSATION_TOTALS})"""
    ).fetchone()
    newest, stamp = row[0], row[1]
    if newest is not None and (stamp is None or newest > stamp):
        return "messages were written that the totals never counted"
    return None


def ensure_fresh(conn: sqlite3.Connection) -> str | None:
    """Rebuild stale totals (and their triggers) in one write transaction.

    Returns the reason they were rebuilt, or None when they were already fresh. A
    database that has none of our migrations yet is left to :func:`schema.migrate`.
    """
    reason = staleness(conn)
    if reason is None:
        return None
    conn.execute("BEGIN IMMEDIATE")
    try:
        reason = staleness(conn)  # another writer may have rebuilt them meanwhile
        if reason is not None:
            install(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return reason
