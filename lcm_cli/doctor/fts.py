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
    """Message ids missing from ``messages_fts`` (non-blank content) and index rows without a message.

    The messages are read through the narrow ``(conversation_id, seq)`` index and a row's
    content is read only when its id is not indexed: the membership test comes first, so
    the scan reads the index, not every message body.
    """
    where, params = source.scope.clause("m.conversation_id")
    index = "messages_fts_docsize" if source.has("messages_fts_docsize") else None
    member = f"SELECT id FROM {index}" if index else "SELECT rowid FROM messages_fts"
    narrow = " INDEXED BY messages_conv_seq_idx" if source.probe.has_index("messages_conv_seq_idx") else ""
    problems: dict[int, str] = {}
    for row in source.rows(
        f"""SELECT m.message_id FROM messages m{narrow}
            WHERE m.message_id NOT IN ({member}) AND trim(m.content) != ''{where}""",
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


def _digest(value: Any) -> bytes:
    """A fingerprint of one SQL value: equal for values Python compares equal, 16 bytes."""
    import hashlib  # here: its OpenSSL binding costs a few ms at start-up

    if value is None:
        return b"null"
    if isinstance(value, str):
        raw = b"t" + value.encode("utf-8", "surrogatepass")
    elif isinstance(value, bytes):
        raw = b"b" + value
    elif isinstance(value, float) and value.is_integer():
        raw = b"n" + str(int(value)).encode()
    else:
        raw = b"n" + repr(value).encode()
    return hashlib.blake2b(raw, digest_size=16).digest()


def _order(value: Any) -> tuple[int, Any]:
    """SQLite's ORDER BY order of a value (NULL, numbers, text, blobs), as a Python key."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)  # code point order is UTF-8 byte order (BINARY collation)
    return (3, bytes(value))


def summary_fts_problems(source: ScanInput, table: str) -> dict[str, str]:
    """Summary ids missing from ``table``, indexed with other content, indexed twice, or stale.

    Both sides are streamed in summary id order, each content as a 16-byte digest, and
    merged: memory stays flat however many summaries there are (SQLite sorts the
    full-text rows, spilling to a temporary file when they outgrow its cache). Of one id's
    index rows the first (lowest rowid) is the one compared.
    """
    where, params = source.scope.clause("conversation_id")
    conn = source.conn
    conn.create_function("lcm_digest", 1, _digest, deterministic=True)
    # ORDER BY +summary_id: one sequential pass and a sort, not a walk of the id index
    # that reads each wide row at random (twice as slow).
    expected = conn.execute(
        f"SELECT summary_id, lcm_digest(content) FROM summaries WHERE 1 = 1{where} ORDER BY +summary_id",
        params,
    )
    content_table = f"{table}_content"
    if source.has(content_table):
        indexed = conn.execute(f"SELECT c0, lcm_digest(c1) FROM {content_table} ORDER BY c0, id")
    else:
        indexed = conn.execute(
            f"SELECT summary_id, lcm_digest(content) FROM {table} ORDER BY summary_id, rowid"
        )
    whole = source.scope.whole
    problems: dict[str, str] = {}
    want: Any = next(expected, None)
    have: Any = next(indexed, None)
    while want is not None or have is not None:
        if have is None or (want is not None and _order(want[0]) < _order(have[0])):
            problems[want[0]] = "missing"
            want = next(expected, None)
            continue
        key, first = have[0], have[1]
        rows = 1
        have = next(indexed, None)
        while have is not None and _order(have[0]) == _order(key):
            rows += 1
            have = next(indexed, None)
        listed = want is not None and _order(want[0]) == _order(key)
        if rows > 1 and (listed or whole):
            problems[key] = "duplicate"
        elif listed:
            if first != want[1]:
                problems[key] = "content-differs"
        elif whole:
            problems[key] = "stale"
        if listed:
            want = next(expected, None)
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
