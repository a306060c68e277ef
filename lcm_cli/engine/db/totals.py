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
trigger present in ``sqlite_master``, no build under way, and no ``message_id`` above
the stamp. A reader, which opens the file read-only, scans for that call instead and
says so in ``meta.totals``.

A writer (:func:`ensure_fresh`, on every store open) counts them again in bounded steps,
so the live host never waits long for the write lock (at millions of messages a single
recount held it for seconds). The build empties the totals, records its progress in
``lcm_totals_build`` and swaps in triggers that count only the rows the build has
already passed (at or below its cursor: messages by ``message_id``, then summaries by
``summary_id``). Each step, one ``BEGIN IMMEDIATE`` of about 25 ms followed by a pause (``steps``), adds the next range
of rows and moves the cursor, so every row is counted exactly once, by a step or by a
trigger, whatever other programs write meanwhile. The last step puts the final triggers
back and drops the progress table. A kill between steps leaves a consistent build that
the next writer carries on; until it completes the totals read as stale.
"""

from __future__ import annotations

import sqlite3

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.db import steps

if TYPE_CHECKING:  # typing costs start-up time on every JSON read
    from collections.abc import Callable
    from typing import Any

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

#: While the totals are counted in steps (see :func:`ensure_fresh`), the progress row.
BUILD_TABLE = "lcm_totals_build"

_BUILD_DDL = f"""
    CREATE TABLE IF NOT EXISTS {BUILD_TABLE} (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      messages_cursor INTEGER NOT NULL DEFAULT 0,
      messages_done INTEGER NOT NULL DEFAULT 0,
      summaries_cursor TEXT NOT NULL DEFAULT '',
      summaries_done INTEGER NOT NULL DEFAULT 0,
      reason TEXT,
      started_at TEXT NOT NULL DEFAULT (datetime('now'))
    )
    """

# The row-level pieces each trigger is made of: "add" a row's figures, "remove" them.
# Each is a template: the final triggers fill it with nothing (``_FINAL``); the triggers
# of a build in steps (``_BUILDING``) count only the rows the build has already passed
# ("covered": at or below its cursor), so the build adds every other row exactly once.
_MESSAGE_ADD = """
  INSERT OR IGNORE INTO {t} (conversation_id) {new_row};
  UPDATE {t} SET
    message_count = message_count + 1,
    message_tokens = message_tokens + COALESCE(NEW.token_count, 0),
    earliest_at = CASE WHEN earliest_at IS NULL OR NEW.created_at < earliest_at
                       THEN NEW.created_at ELSE earliest_at END,
    latest_at = CASE WHEN latest_at IS NULL OR NEW.created_at > latest_at
                     THEN NEW.created_at ELSE latest_at END,
    max_message_id = CASE WHEN max_message_id IS NULL OR NEW.message_id > max_message_id
                          THEN NEW.message_id ELSE max_message_id END
  WHERE conversation_id = NEW.conversation_id{new_cond};"""

# Removing the current earliest/latest value recomputes it from the table, which by
# now no longer holds the old row (AFTER trigger): an index seek on lcm's
# (conversation_id, created_at, token_count) index.
_MESSAGE_REMOVE = """
  UPDATE {t} SET
    message_count = message_count - 1,
    message_tokens = message_tokens - COALESCE(OLD.token_count, 0),
    earliest_at = CASE WHEN OLD.created_at IS earliest_at
      THEN (SELECT MIN(created_at) FROM messages WHERE conversation_id = OLD.conversation_id{row_cond})
      ELSE earliest_at END,
    latest_at = CASE WHEN OLD.created_at IS latest_at
      THEN (SELECT MAX(created_at) FROM messages WHERE conversation_id = OLD.conversation_id{row_cond})
      ELSE latest_at END
  WHERE conversation_id = OLD.conversation_id{old_cond};"""

_SUMMARY_KEY = "conversation_id = {r}.conversation_id AND kind = {r}.kind AND depth = {r}.depth"
# The same group, as the recount of a removed earliest/latest value selects it.
_SUMMARY_GROUP = "s.conversation_id = OLD.conversation_id AND s.kind = OLD.kind AND s.depth = OLD.depth"

_SUMMARY_ADD = """
  INSERT OR IGNORE INTO {t} (conversation_id, kind, depth)
    {new_row};
  UPDATE {t} SET
    summary_count = summary_count + 1,
    summary_tokens = summary_tokens + COALESCE(NEW.token_count, 0),
    source_tokens = source_tokens + COALESCE(NEW.source_message_token_count, 0),
    earliest_at = CASE WHEN earliest_at IS NULL OR COALESCE(NEW.earliest_at, NEW.created_at) < earliest_at
                       THEN COALESCE(NEW.earliest_at, NEW.created_at) ELSE earliest_at END,
    latest_at = CASE WHEN latest_at IS NULL OR COALESCE(NEW.latest_at, NEW.created_at) > latest_at
                     THEN COALESCE(NEW.latest_at, NEW.created_at) ELSE latest_at END
  WHERE {key_new}{new_cond};"""

_SUMMARY_REMOVE = """
  UPDATE {t} SET
    summary_count = summary_count - 1,
    summary_tokens = summary_tokens - COALESCE(OLD.token_count, 0),
    source_tokens = source_tokens - COALESCE(OLD.source_message_token_count, 0),
    earliest_at = CASE WHEN COALESCE(OLD.earliest_at, OLD.created_at) IS earliest_at
      THEN (SELECT MIN(COALESCE(s.earliest_at, s.created_at)) FROM summaries s
             WHERE {group}{row_cond})
      ELSE earliest_at END,
    latest_at = CASE WHEN COALESCE(OLD.latest_at, OLD.created_at) IS latest_at
      THEN (SELECT MAX(COALESCE(s.latest_at, s.created_at)) FROM summaries s
             WHERE {group}{row_cond})
      ELSE latest_at END
  WHERE {key_old}{old_cond};"""

_FINAL_MESSAGES = {
    "t": CONVERSATION_TOTALS,
    "new_row": "VALUES (NEW.conversation_id)",
    "new_cond": "",
    "old_cond": "",
    "row_cond": "",
}
_FINAL_SUMMARIES = {
    "t": SUMMARY_TOTALS,
    "new_row": "VALUES (NEW.conversation_id, NEW.kind, NEW.depth)",
    "new_cond": "",
    "old_cond": "",
    "row_cond": "",
    "group": _SUMMARY_GROUP,
    "key_new": _SUMMARY_KEY.format(r="NEW"),
    "key_old": _SUMMARY_KEY.format(r="OLD"),
}


def _covered_message(ref: str) -> str:
    return f"(SELECT messages_done OR {ref} <= messages_cursor FROM {BUILD_TABLE})"


def _covered_summary(ref: str) -> str:
    return f"(SELECT summaries_done OR {ref} <= summaries_cursor FROM {BUILD_TABLE})"


_BUILDING_MESSAGES = {
    **_FINAL_MESSAGES,
    "new_row": f"SELECT NEW.conversation_id WHERE {_covered_message('NEW.message_id')}",
    "new_cond": f" AND {_covered_message('NEW.message_id')}",
    "old_cond": f" AND {_covered_message('OLD.message_id')}",
    "row_cond": f" AND {_covered_message('message_id')}",
}
_BUILDING_SUMMARIES = {
    **_FINAL_SUMMARIES,
    "new_row": f"SELECT NEW.conversation_id, NEW.kind, NEW.depth WHERE {_covered_summary('NEW.summary_id')}",
    "new_cond": f" AND {_covered_summary('NEW.summary_id')}",
    "old_cond": f" AND {_covered_summary('OLD.summary_id')}",
    "row_cond": f" AND {_covered_summary('s.summary_id')}",
}


def _triggers(messages: dict[str, str], summaries: dict[str, str]) -> dict[str, str]:
    m_add, m_remove = _MESSAGE_ADD.format(**messages), _MESSAGE_REMOVE.format(**messages)
    s_add, s_remove = _SUMMARY_ADD.format(**summaries), _SUMMARY_REMOVE.format(**summaries)
    return {
        "lcm_totals_messages_ai": f"AFTER INSERT ON messages BEGIN{m_add}\nEND",
        "lcm_totals_messages_ad": f"AFTER DELETE ON messages BEGIN{m_remove}\nEND",
        "lcm_totals_messages_au": (
            "AFTER UPDATE OF conversation_id, token_count, created_at, message_id ON messages"
            f" BEGIN{m_remove}{m_add}\nEND"
        ),
        "lcm_totals_summaries_ai": f"AFTER INSERT ON summaries BEGIN{s_add}\nEND",
        "lcm_totals_summaries_ad": f"AFTER DELETE ON summaries BEGIN{s_remove}\nEND",
        "lcm_totals_summaries_au": (
            "AFTER UPDATE OF conversation_id, kind, depth, token_count, source_message_token_count,"
            f" earliest_at, latest_at, created_at ON summaries BEGIN{s_remove}{s_add}\nEND"
        ),
    }


#: name -> CREATE TRIGGER statement. The UPDATE triggers fire only when a counted column
#: changes; they remove the old row's figures, then add the new row's.
TRIGGERS: dict[str, str] = _triggers(_FINAL_MESSAGES, _FINAL_SUMMARIES)
#: The same triggers while a build in steps runs: they count covered rows only.
BUILDING_TRIGGERS: dict[str, str] = _triggers(_BUILDING_MESSAGES, _BUILDING_SUMMARIES)

# One step of a build adds the figures of a range of rows (by primary key) to the
# totals: aggregated into a temp table first, then merged with the counted figures.
_CHUNK_TABLE = "temp.lcm_totals_chunk"
_MESSAGE_CHUNK = f"""
    INSERT INTO {_CHUNK_TABLE} (conversation_id, kind, depth, n, tokens, source_tokens, earliest, latest, max_id)
    SELECT conversation_id, '', 0, COUNT(*), COALESCE(SUM(token_count), 0), 0, MIN(created_at),
           MAX(created_at), MAX(message_id)
    FROM messages WHERE message_id > ? AND message_id <= ? GROUP BY conversation_id"""
_SUMMARY_CHUNK = f"""
    INSERT INTO {_CHUNK_TABLE} (conversation_id, kind, depth, n, tokens, source_tokens, earliest, latest, max_id)
    SELECT conversation_id, kind, depth, COUNT(*), COALESCE(SUM(token_count), 0),
           COALESCE(SUM(source_message_token_count), 0), MIN(COALESCE(earliest_at, created_at)),
           MAX(COALESCE(latest_at, created_at)), NULL
    FROM summaries WHERE summary_id > ? AND summary_id <= ? GROUP BY conversation_id, kind, depth"""


def _merge(chunk: str, target: str, key: str, counts: tuple[str, ...]) -> tuple[str, str]:
    """The INSERT OR IGNORE and UPDATE that add the chunk table's figures to ``target``."""
    columns = key.split(", ")
    match = " AND ".join(f"c.{c} IS {target}.{c}" for c in columns)

    def pick(column: str) -> str:
        return f"(SELECT c.{column} FROM {_CHUNK_TABLE} c WHERE {match})"

    sets = [f"{name} = {name} + {pick(source)}" for name, source in zip(counts, chunk.split(", "))]
    sets.append(
        f"earliest_at = CASE WHEN earliest_at IS NULL OR {pick('earliest')} < earliest_at"
        f" THEN {pick('earliest')} ELSE earliest_at END"
    )
    sets.append(
        f"latest_at = CASE WHEN latest_at IS NULL OR {pick('latest')} > latest_at"
        f" THEN {pick('latest')} ELSE latest_at END"
    )
    if target == CONVERSATION_TOTALS:
        sets.append(
            f"max_message_id = CASE WHEN max_message_id IS NULL OR {pick('max_id')} > max_message_id"
            f" THEN {pick('max_id')} ELSE max_message_id END"
        )
    insert = f"INSERT OR IGNORE INTO {target} ({key}) SELECT {key} FROM {_CHUNK_TABLE}"
    update = (
        f"UPDATE {target} SET {', '.join(sets)} WHERE EXISTS (SELECT 1 FROM {_CHUNK_TABLE} c WHERE {match})"
    )
    return insert, update


_MERGE_MESSAGES = _merge(
    "n, tokens", CONVERSATION_TOTALS, "conversation_id", ("message_count", "message_tokens")
)
_MERGE_SUMMARIES = _merge(
    "n, tokens, source_tokens",
    SUMMARY_TOTALS,
    "conversation_id, kind, depth",
    ("summary_count", "summary_tokens", "source_tokens"),
)

#: Rows one step starts with; each next step is sized from the last one's time.
FIRST_STEP_ROWS = 1000
#: A table this small is counted inside the transaction that installs the totals.
INLINE_ROWS = 5000


def install(conn: sqlite3.Connection) -> None:
    """Create the tables and (re)create the triggers, then count what exists.

    The caller holds the write transaction. Recreating every trigger also replaces
    one someone else left behind under our name with other SQL. A small database is
    counted here, in the caller's transaction; a large one is left with a build in
    progress (readers see the totals as stale and scan), which :func:`ensure_fresh`
    completes in bounded steps.
    """
    _start_build(conn, "the totals were installed")
    if _table_rows_at_most(conn, "messages", INLINE_ROWS) and _table_rows_at_most(
        conn, "summaries", INLINE_ROWS
    ):
        while _build_step(conn, INLINE_ROWS + 1) is not None:
            pass


def _table_rows_at_most(conn: sqlite3.Connection, table: str, limit: int) -> bool:
    row = conn.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} LIMIT ?)", (limit + 1,)).fetchone()
    return int(row[0]) <= limit


def _install_triggers(conn: sqlite3.Connection, triggers: dict[str, str]) -> None:
    for name, body in triggers.items():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(f"CREATE TRIGGER {name} {body}")


def _start_build(conn: sqlite3.Connection, reason: str) -> None:
    """Empty the totals and count again from nothing, in steps (caller's transaction)."""
    for ddl in TABLES_DDL:
        conn.execute(ddl)
    conn.execute(_BUILD_DDL)
    conn.execute(f"DELETE FROM {BUILD_TABLE}")
    conn.execute(f"INSERT INTO {BUILD_TABLE} (id, reason) VALUES (1, ?)", (reason,))
    conn.execute(f"DELETE FROM {CONVERSATION_TOTALS}")
    conn.execute(f"DELETE FROM {SUMMARY_TOTALS}")
    _install_triggers(conn, BUILDING_TRIGGERS)


def _building_triggers_in_place(conn: sqlite3.Connection) -> bool:
    found = dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN"
            f" ({', '.join('?' for _ in BUILDING_TRIGGERS)})",
            tuple(BUILDING_TRIGGERS),
        ).fetchall()
    )
    return all(found.get(name) == f"CREATE TRIGGER {name} {body}" for name, body in BUILDING_TRIGGERS.items())


def _build_state(conn: sqlite3.Connection) -> tuple[int, int, str, int, str | None] | None:
    """The build's progress row, or None when no build is under way."""
    if (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (BUILD_TABLE,)
        ).fetchone()
        is None
    ):
        return None
    row = conn.execute(
        f"SELECT messages_cursor, messages_done, summaries_cursor, summaries_done, reason FROM {BUILD_TABLE}"
        " WHERE id = 1"
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]), int(row[3]), row[4])


def _add_chunk(conn: sqlite3.Connection, fill: str, bounds: tuple[Any, Any], merge: tuple[str, str]) -> None:
    conn.execute(
        """CREATE TEMP TABLE IF NOT EXISTS lcm_totals_chunk (
              conversation_id, kind, depth, n, tokens, source_tokens, earliest, latest, max_id)"""
    )
    conn.execute(f"DELETE FROM {_CHUNK_TABLE}")
    conn.execute(fill, bounds)
    for sql in merge:
        conn.execute(sql)
    conn.execute(f"DELETE FROM {_CHUNK_TABLE}")


def _build_step(conn: sqlite3.Connection, rows: int) -> str | None:
    """Count up to ``rows`` more rows into the totals (caller's transaction).

    Returns what the next step does (``messages``, ``summaries``, or ``finish``: put
    the final triggers in place), None once the build is complete.

    Messages are walked by ``message_id``, then summaries by ``summary_id``. The rows at or
    below a cursor are "covered": the build triggers keep their figures true, so a row is
    counted once, either by a step (while above the cursor) or by the triggers.
    """
    state = _build_state(conn)
    if state is None:
        return None
    messages_cursor, messages_done, summaries_cursor, summaries_done, _reason = state
    if not messages_done:
        upper = conn.execute(
            "SELECT message_id FROM messages WHERE message_id > ? ORDER BY message_id LIMIT 1 OFFSET ?",
            (messages_cursor, rows - 1),
        ).fetchone()
        if upper is None:
            _add_chunk(conn, _MESSAGE_CHUNK, (messages_cursor, 2**63 - 1), _MERGE_MESSAGES)
            conn.execute(f"UPDATE {BUILD_TABLE} SET messages_done = 1")
            return "summaries"
        else:
            _add_chunk(conn, _MESSAGE_CHUNK, (messages_cursor, upper[0]), _MERGE_MESSAGES)
            conn.execute(f"UPDATE {BUILD_TABLE} SET messages_cursor = ?", (upper[0],))
        return "messages"
    if not summaries_done:
        upper = conn.execute(
            "SELECT summary_id FROM summaries WHERE summary_id > ? ORDER BY summary_id LIMIT 1 OFFSET ?",
            (summaries_cursor, rows - 1),
        ).fetchone()
        if upper is None:
            last = conn.execute("SELECT MAX(summary_id) FROM summaries").fetchone()[0]
            if last is not None and last > summaries_cursor:
                _add_chunk(conn, _SUMMARY_CHUNK, (summaries_cursor, last), _MERGE_SUMMARIES)
            conn.execute(f"UPDATE {BUILD_TABLE} SET summaries_done = 1")
            return "finish"
        else:
            _add_chunk(conn, _SUMMARY_CHUNK, (summaries_cursor, upper[0]), _MERGE_SUMMARIES)
            conn.execute(f"UPDATE {BUILD_TABLE} SET summaries_cursor = ?", (upper[0],))
        return "summaries"
    # Every row is covered: the build triggers now do what the final ones do.
    _install_triggers(conn, TRIGGERS)
    conn.execute(f"DROP TABLE {BUILD_TABLE}")
    return None


def build_progress(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """Where a build in steps stands (``None`` when none is under way)."""
    state = _build_state(conn)
    if state is None:
        return None
    messages_cursor, messages_done, summaries_cursor, summaries_done, reason = state
    return {
        "messagesCursor": messages_cursor,
        "messagesDone": bool(messages_done),
        "summariesCursor": summaries_cursor,
        "summariesDone": bool(summaries_done),
        "reason": reason,
    }


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
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?)",
            (CONVERSATION_TOTALS, SUMMARY_TOTALS, BUILD_TABLE),
        )
    }
    if CONVERSATION_TOTALS not in tables or SUMMARY_TOTALS not in tables:
        return "the totals tables are missing (a database written before lcm kept totals)"
    if BUILD_TABLE in tables:
        return "the totals are being counted in steps (the next lcm writer carries on)"
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


def ensure_fresh(
    conn: sqlite3.Connection,
    *,
    step_seconds: float = steps.STEP_SECONDS,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> str | None:
    """Count stale totals again (and restore their triggers) in bounded write transactions.

    Returns the reason they were counted, or None when they were already fresh. Each
    step is one ``BEGIN IMMEDIATE`` sized to hold the write lock about ``step_seconds``,
    then a pause as long, so a concurrent writer (the host) waits at most one step. A kill between steps
    leaves a consistent build that the next call (any lcm writer's open) carries on;
    meanwhile readers see the totals as stale and scan. A database that has none of
    our migrations yet is left to :func:`schema.migrate`.
    """
    reason = staleness(conn)
    if reason is None:
        return None
    progress = build_progress(conn)
    if progress is not None and progress["reason"]:
        reason = str(progress["reason"])  # a build a killed writer left: why it started
    rows = FIRST_STEP_ROWS
    counting: str | None = None
    while True:
        with steps.step(conn) as lock:
            upcoming = _advance(conn, rows)
        held = lock.seconds
        if on_step is not None:
            on_step({"table": counting, "rows": rows, "seconds": held, "done": upcoming is None})
        if upcoming is None:
            return reason
        steps.yield_to_writers(held)
        # Rows of another table cost something else: start that table small again.
        same = upcoming == counting
        rows = (
            steps.next_step_size(rows, held, step_seconds, floor=100, ceiling=200_000)
            if same
            else FIRST_STEP_ROWS
        )
        counting = upcoming


def _advance(conn: sqlite3.Connection, rows: int) -> str | None:
    """One step under the write lock: start a build when needed, else carry it on."""
    state = _build_state(conn)
    if state is not None and _building_triggers_in_place(conn) and _totals_tables_present(conn):
        return _build_step(conn, rows)
    why = staleness(conn)  # another writer may have finished (or started) meanwhile
    if why is None:
        return None
    if state is not None:
        why = "the totals triggers were changed while the totals were being counted"
    _start_build(conn, why)
    return "messages"


def _totals_tables_present(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
        (CONVERSATION_TOTALS, SUMMARY_TOTALS),
    ).fetchone()
    return int(row[0]) == 2
