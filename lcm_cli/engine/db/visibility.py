"""The agent scope of reads: which conversations one connection may see.

Under ``agentScope: agent`` or ``session-family`` (docs/agents.md) a read connection is
given TEMP views that shadow the history tables: SQLite resolves an unqualified name in
the temp schema first, so every query of every read operation, written for the whole
file, sees only the visible conversations and the rows that belong to them. Nothing else
in the read paths knows about the scope; a conversation outside it is simply absent,
so asking for it answers exactly as asking for a missing one.

The visible conversation ids are computed once per call into ``temp.lcm_visible`` (from
each conversation's session key, with the one parser of
:mod:`lcm_cli.engine.core.session_keys`); each table with a ``conversation_id`` column
is filtered on it, a table keyed by ``message_id`` or ``summary_id`` through its message
or summary. Full-text tables are left as they are: every read joins them to their
(filtered) messages or summaries. Views have no indexes, so a scoped connection's
:class:`~lcm_cli.engine.db.probe.SchemaProbe` reports none (no ``INDEXED BY`` on a view).
"""

from __future__ import annotations

import sqlite3

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.session_keys import agent_id_of

if TYPE_CHECKING:
    from collections.abc import Iterable

VISIBLE = "lcm_visible"  # temp table: the conversation ids this connection may read


class Boundary(Record):
    """One limit on what a caller sees: ``kind`` "agent" (``value`` an agent id),
    "family" (``value`` a session key: itself and the keys below it) or "nothing"."""

    kind: str
    value: str = ""

    def admits(self, session_key: str | None) -> bool:
        """True when a conversation with ``session_key`` is inside this boundary."""
        if self.kind == "agent":
            return agent_id_of(session_key) == self.value
        if self.kind == "family":
            return session_key is not None and (
                session_key == self.value or session_key.startswith(self.value + ":")
            )
        return False


def visible_ids(conn: sqlite3.Connection, boundaries: Iterable[Boundary]) -> list[int]:
    """Ids of the conversations inside every boundary (keyless ones belong to no agent)."""
    limits = list(boundaries)
    if not _has_column(conn, "conversations", "session_key"):
        return []
    rows = conn.execute("SELECT conversation_id, session_key FROM main.conversations").fetchall()
    return [row[0] for row in rows if all(b.admits(row[1]) for b in limits)]


def install(conn: sqlite3.Connection, boundaries: Iterable[Boundary] | None) -> None:
    """Restrict ``conn`` to ``boundaries`` (refreshing the visible set), or lift it (None).

    A read connection is ``query_only``; the temp schema is written with it lifted for the
    moment (the main file stays opened read-only, so nothing of it can be written).
    """
    conn.execute("PRAGMA query_only = OFF")
    try:
        _install(conn, boundaries)
    finally:
        conn.execute("PRAGMA query_only = ON")


def _install(conn: sqlite3.Connection, boundaries: Iterable[Boundary] | None) -> None:
    views = _installed_views(conn)
    if boundaries is None:
        for name in views:
            conn.execute(f'DROP VIEW temp."{name}"')
        conn.execute(f"DROP TABLE IF EXISTS temp.{VISIBLE}")
        _end(conn)
        return
    ids = visible_ids(conn, boundaries)
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {VISIBLE} (conversation_id INTEGER PRIMARY KEY)")
    conn.execute(f"DELETE FROM temp.{VISIBLE}")
    conn.executemany(f"INSERT INTO temp.{VISIBLE} VALUES (?)", [(i,) for i in ids])
    for table, condition in _filters(conn):
        if table not in views:
            conn.execute(f'CREATE TEMP VIEW "{table}" AS SELECT * FROM main."{table}" t WHERE {condition}')
    _end(conn)


def _filters(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Each history table of the main schema and the condition that keeps its visible rows."""
    in_visible = f"IN (SELECT conversation_id FROM temp.{VISIBLE})"
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            " AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    has_messages, has_summaries = "messages" in tables, "summaries" in tables
    filters: list[tuple[str, str]] = []
    for table in tables:
        columns = _columns(conn, table)
        if "conversation_id" in columns:
            filters.append((table, f"t.conversation_id {in_visible}"))
        elif "message_id" in columns and has_messages:
            filters.append(
                (
                    table,
                    "EXISTS (SELECT 1 FROM main.messages m WHERE m.message_id = t.message_id"
                    f" AND m.conversation_id {in_visible})",
                )
            )
        elif "summary_id" in columns and has_summaries:
            filters.append(
                (
                    table,
                    "EXISTS (SELECT 1 FROM main.summaries s WHERE s.summary_id = t.summary_id"
                    f" AND s.conversation_id {in_visible})",
                )
            )
    return filters


def _installed_views(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM temp.sqlite_master WHERE type = 'view'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA main.table_info("{table}")')}


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return column in _columns(conn, table)


def _end(conn: sqlite3.Connection) -> None:
    """Commit the temp-schema change: a read connection holds no transaction between calls."""
    if conn.in_transaction:
        conn.commit()
