"""Full-text tables in step with their sources, and the repair that brings them back.

``messages_fts`` is keyed by rowid = message id and holds the reference's index text
(blank content is skipped); the summary tables carry ``summary_id`` in an UNINDEXED
column and the summary's content verbatim. Membership is compared through the FTS5
shadow tables (``_docsize`` / ``_content``), which are plain indexed tables: a join on the
virtual table itself would be a full scan per row.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from lcm_cli.engine.db.store.messages import fts_message_text
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped

SUMMARY_FTS = ("summaries_fts", "summaries_fts_cjk")


def message_fts_problems(source: ScanInput) -> dict[int, str]:
    """Message ids missing from ``messages_fts`` (non-blank content) and index rows without a message."""
    where, params = source.scope.clause("m.conversation_id")
    index = "messages_fts_docsize" if source.has("messages_fts_docsize") else None
    member = f"SELECT id FROM {index}" if index else "SELECT rowid FROM messages_fts"
    problems: dict[int, str] = {}
    for row in source.rows(
        f"""SELECT m.message_id FROM messages m
            WHERE trim(m.content) != '' AND m.message_id NOT IN ({member}){where}""",
        params,
    ):
        problems[row[0]] = "missing"
    if source.scope.whole:
        column = "id" if index else "rowid"
        table = index or "messages_fts"
        for row in source.rows(
            f"SELECT {column} FROM {table} WHERE {column} NOT IN (SELECT message_id FROM messages)"
        ):
            problems[row[0]] = "stale"
    return problems


def check_messages_fts(source: ScanInput) -> Outcome:
    """`fts.messages`: messages missing from the full-text index, or index rows with no message."""
    if not source.has("messages_fts"):
        return skipped("no messages_fts table (SQLite without FTS5, or never created)")
    found = message_fts_problems(source)
    return Outcome(affected=sorted(found), notes=found)


def summary_fts_problems(source: ScanInput, table: str) -> dict[str, str]:
    """Summary ids missing from ``table``, indexed with other content, indexed twice, or stale."""
    if "summary_content" not in source.memo:
        where, params = source.scope.clause("conversation_id")
        rows = source.rows(f"SELECT summary_id, content FROM summaries WHERE 1 = 1{where}", params)
        source.memo["summary_content"] = {r[0]: r[1] for r in rows}
    expected: dict[str, str] = source.memo["summary_content"]
    content_table = f"{table}_content"
    if source.has(content_table):
        indexed = source.rows(f"SELECT c0, c1 FROM {content_table}")
    else:
        indexed = source.rows(f"SELECT summary_id, content FROM {table}")
    problems: dict[str, str] = {}
    seen: set[str] = set()
    for summary_id, content in indexed:
        if summary_id in seen:
            if summary_id in expected or source.scope.whole:
                problems[summary_id] = "duplicate"
            continue
        seen.add(summary_id)
        if summary_id in expected:
            if content != expected[summary_id]:
                problems[summary_id] = "content-differs"
        elif source.scope.whole:
            problems[summary_id] = "stale"
    for summary_id in expected:
        if summary_id not in seen:
            problems[summary_id] = "missing"
    return problems


def _summary_check(table: str) -> Any:
    def check(source: ScanInput) -> Outcome:
        if not source.has(table):
            return skipped(f"no {table} table (SQLite without FTS5/trigram, or never created)")
        found = summary_fts_problems(source, table)
        return Outcome(affected=sorted(found), notes=found)

    check.__doc__ = f"`fts.{table}`: {table} rows missing, stale, duplicated or out of date."
    return check


check_summaries_fts = _summary_check("summaries_fts")
check_summaries_fts_cjk = _summary_check("summaries_fts_cjk")


def repair_messages_fts(conn: sqlite3.Connection, problems: dict[int, str]) -> dict[str, int]:
    """Insert missing message rows and delete stale ones (caller holds the transaction)."""
    stale = [i for i, p in problems.items() if p == "stale"]
    missing = [i for i, p in problems.items() if p == "missing"]
    for message_id in stale:
        conn.execute("DELETE FROM messages_fts WHERE rowid = ?", (message_id,))
    inserted = 0
    for start in range(0, len(missing), 500):
        chunk = missing[start : start + 500]
        rows = conn.execute(
            "SELECT message_id, content FROM messages WHERE message_id IN (SELECT value FROM json_each(?))",
            (json.dumps(chunk),),
        ).fetchall()
        for message_id, content in rows:
            text = fts_message_text(content)
            if text is not None:
                conn.execute("DELETE FROM messages_fts WHERE rowid = ?", (message_id,))
                conn.execute("INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", (message_id, text))
                inserted += 1
    return {"inserted": inserted, "deleted": len(stale)}


def repair_summary_fts(conn: sqlite3.Connection, table: str, problems: dict[str, str]) -> dict[str, int]:
    """Re-index every named summary from its current content; drop rows of gone summaries."""
    ids = json.dumps(sorted(problems))
    deleted = conn.execute(
        f"DELETE FROM {table} WHERE summary_id IN (SELECT value FROM json_each(?))", (ids,)
    ).rowcount
    inserted = conn.execute(
        f"""INSERT INTO {table} (summary_id, content)
            SELECT summary_id, content FROM summaries WHERE summary_id IN (SELECT value FROM json_each(?))""",
        (ids,),
    ).rowcount
    return {"inserted": inserted, "deleted": deleted}
