"""What every check shares: the scan scope, a check's outcome, and small SQL helpers.

Used by the doctor's checks and by the rules prune and control share with them
(:mod:`.junk`, :mod:`.markers`), so it lives below both.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lcm_cli.engine.db.probe import SchemaProbe

SEVERITIES = ("info", "warn", "error")


def severity_rank(severity: str) -> int:
    """info < warn < error (``none`` ranks above everything: nothing fails)."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


@dataclass
class Scope:
    """What a scan looks at: every conversation, or a chosen set (by selector or recency)."""

    conversation_ids: list[int] | None = None  # None = the whole database
    recency_after: str | None = None  # ISO lower bound when --recency narrowed it

    @property
    def whole(self) -> bool:
        """True when nothing narrows the scan (database-wide checks run only then)."""
        return self.conversation_ids is None

    def clause(self, column: str) -> tuple[str, list[Any]]:
        """``AND column IN (...)`` with its parameter, or nothing for a whole-database scan."""
        if self.conversation_ids is None:
            return "", []
        return f" AND {column} IN (SELECT value FROM json_each(?))", [json.dumps(self.conversation_ids)]


@dataclass
class ScanInput:
    """Everything a check may read: a read-only connection, what the file has, the scope."""

    conn: sqlite3.Connection
    probe: SchemaProbe
    scope: Scope
    database_path: str
    agent_ids: list[str]
    now_ms: int
    memo: dict[str, Any] = field(default_factory=dict)  # facts several checks share
    state_dir: str | None = None  # where a moved state dir's transcripts are found again

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run one read query."""
        return self.conn.execute(sql, list(params)).fetchall()

    def summary_conversations(self) -> dict[str, int]:
        """summary id -> conversation id (every summary), read once per scan."""
        if "summary_conversations" not in self.memo:
            rows = self.conn.execute("SELECT summary_id, conversation_id FROM summaries")
            self.memo["summary_conversations"] = dict(rows)
        result: dict[str, int] = self.memo["summary_conversations"]
        return result

    def in_scope(self, conversation_id: int | None) -> bool:
        """True when a conversation is part of this scan."""
        ids = self.scope.conversation_ids
        if ids is None:
            return True
        if "scope_set" not in self.memo:
            self.memo["scope_set"] = set(ids)
        return conversation_id in self.memo["scope_set"]

    def has(self, *tables: str) -> bool:
        """True when every table exists."""
        return all(self.probe.has_table(t) for t in tables)


@dataclass
class Outcome:
    """What one check found: the affected ids (sorted, unbounded here) and facts about them."""

    affected: list[Any] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: dict[Any, Any] = field(default_factory=dict)  # id -> what is wrong with it (paged too)
    skipped: str | None = None  # why the check could not run on this file (table missing, ...)

    @property
    def count(self) -> int:
        """How many affected ids."""
        return len(self.affected)


def skipped(reason: str) -> Outcome:
    """An outcome for a check this database cannot run (e.g. an older file without the table)."""
    return Outcome(skipped=reason)
