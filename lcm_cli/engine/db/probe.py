"""What an lcm.db actually has: tables and columns, probed once per connection.

Older lossless-claw databases lack newer tables and columns. Queries ask this probe and
select NULL (or skip a section) instead of failing, so an old file still reads.
"""

from __future__ import annotations

import sqlite3


class SchemaProbe:
    """Cached answers to "does this table/column exist?" for one connection."""

    def __init__(self, conn: sqlite3.Connection, *, indexes: bool = True) -> None:
        self._conn = conn
        self._use_indexes = indexes  # False on a scoped connection, whose tables are views
        self._tables: set[str] | None = None
        self._indexes: set[str] | None = None
        self._columns: dict[str, set[str]] = {}

    @property
    def tables(self) -> set[str]:
        """Names of the tables and virtual tables in the main schema."""
        if self._tables is None:
            rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
            self._tables = {row[0] for row in rows}
        return self._tables

    def has_index(self, index: str) -> bool:
        """True when an index of that name exists (lcm's own read-path indexes may not)."""
        if not self._use_indexes:
            return False
        if self._indexes is None:
            rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
            self._indexes = {row[0] for row in rows}
        return index in self._indexes

    def has_table(self, table: str) -> bool:
        """True when ``table`` exists."""
        return table in self.tables

    def columns(self, table: str) -> set[str]:
        """Column names of ``table`` (empty when the table is missing)."""
        if table not in self._columns:
            if not self.has_table(table):
                self._columns[table] = set()
            else:
                rows = self._conn.execute(f'PRAGMA table_info("{table}")').fetchall()
                self._columns[table] = {row[1] for row in rows}
        return self._columns[table]

    def has_column(self, table: str, column: str) -> bool:
        """True when ``table.column`` exists."""
        return column in self.columns(table)

    def col(self, table: str, column: str, alias: str | None = None, *, prefix: str = "") -> str:
        """SQL for ``prefix.column``, or ``NULL`` when the column is missing (aliased either way)."""
        name = alias or column
        expr = f"{prefix}{column}" if self.has_column(table, column) else "NULL"
        return f"{expr} AS {name}"
