"""What every surgery shares: reading summaries, the backup its writes take, and the derived
columns and FTS rows a write keeps in step."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.graph import nodes_on_cycles


def rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The rows of one query as dicts keyed by column name (any row factory)."""
    cursor = conn.execute(sql, params)
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, tuple(r), strict=True)) for r in cursor.fetchall()]


SUMMARY_COLUMNS = (
    "summary_id, conversation_id, kind, depth, content, token_count, earliest_at, latest_at,"
    " descendant_count, descendant_token_count, source_message_token_count, created_at, file_ids, model"
)


def load_summary(conn: sqlite3.Connection, summary_id: str) -> dict[str, Any]:
    """One summary row, or SUMMARY_NOT_FOUND."""
    found = rows(conn, f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE summary_id = ?", (summary_id,))
    if not found:
        raise LcmError(
            "SUMMARY_NOT_FOUND",
            f"No summary {summary_id}. Copy a summaryId from `lcm summaries list`.",
            {"summaryId": summary_id},
        )
    return found[0]


def subtree(conn: sqlite3.Connection, roots: Iterable[str]) -> list[str]:
    """``roots`` and every summary beneath them (their sources, transitively), same conversation only."""
    ids = list(dict.fromkeys(roots))
    if not ids:
        return []
    found = conn.execute(
        """WITH RECURSIVE below(sid) AS (
             SELECT value FROM json_each(?)
             UNION
             SELECT sp.parent_summary_id FROM summary_parents sp
               JOIN below b ON sp.summary_id = b.sid
               JOIN summaries hi ON hi.summary_id = sp.summary_id
               JOIN summaries lo ON lo.summary_id = sp.parent_summary_id
              WHERE lo.conversation_id = hi.conversation_id)
           SELECT sid FROM below""",
        (json.dumps(ids),),
    ).fetchall()
    return [r[0] for r in found]


def consumers(conn: sqlite3.Connection, sources: Iterable[str]) -> list[str]:
    """Every summary above ``sources`` (those consuming them, transitively), excluding them."""
    ids = list(dict.fromkeys(sources))
    if not ids:
        return []
    found = conn.execute(
        """WITH RECURSIVE above(sid) AS (
             SELECT value FROM json_each(?)
             UNION
             SELECT sp.summary_id FROM summary_parents sp JOIN above a ON sp.parent_summary_id = a.sid)
           SELECT sid FROM above""",
        (json.dumps(ids),),
    ).fetchall()
    given = set(ids)
    return [r[0] for r in found if r[0] not in given]


#: The doctor checks that find each kind of damage the guard below refuses.
DAMAGE_CHECKS = {
    "cycle": "dag.cycles",
    "cross-conversation": "dag.cross-conversation",
    "missing-source": "dag.missing-sources",
    "no-sources": "dag.missing-sources",
}
_SHOWN_PROBLEMS = 20


def refuse_damaged_graph(
    conn: sqlite3.Connection, roots: Iterable[str], command: str, *, messages_of_subtree: bool
) -> None:
    """SUMMARY_GRAPH_DAMAGED unless the part of the summary DAG a surgery touches is sound.

    Walks every summary beneath ``roots`` (through links within one conversation) and
    refuses a cycle, a link to another conversation's summary or message, a link to a
    summary or message that does not exist, and a leaf without messages or a condensed
    summary without sources. Message links are checked for the whole subtree when the
    surgery copies it (``messages_of_subtree``), else for the roots and their direct sources
    (what a rewrite reads and a dissolve gives back), so rewriting one high summary never
    reads every message link beneath it. Summaries of other
    conversations that consume a root are refused too: dissolve rewires consumers.
    """
    start = list(dict.fromkeys(roots))
    problems: list[dict[str, str]] = []
    edges: dict[str, list[str]] = {}
    owner: dict[str, int] = {}
    seen, frontier = set(start), list(start)
    while frontier:
        chunk, frontier = frontier[:500], frontier[500:]
        batch = json.dumps(chunk)
        for sid, kind, cid, links in conn.execute(
            """SELECT s.summary_id, s.kind, s.conversation_id,
                      (SELECT count(*) FROM summary_parents sp WHERE sp.summary_id = s.summary_id)
                 FROM summaries s WHERE s.summary_id IN (SELECT value FROM json_each(?))""",
            (batch,),
        ):
            owner[sid] = cid
            if kind == "condensed" and not links:
                problems.append({"summaryId": sid, "reason": "no-sources", "other": ""})
        for sid, source, source_cid in conn.execute(
            """SELECT sp.summary_id, sp.parent_summary_id, p.conversation_id FROM summary_parents sp
                 LEFT JOIN summaries p ON p.summary_id = sp.parent_summary_id
                WHERE sp.summary_id IN (SELECT value FROM json_each(?)) ORDER BY sp.summary_id, sp.ordinal""",
            (batch,),
        ):
            if source_cid is None:
                problems.append({"summaryId": sid, "reason": "missing-source", "other": source})
            elif source_cid != owner.get(sid):
                problems.append({"summaryId": sid, "reason": "cross-conversation", "other": source})
            else:
                edges.setdefault(sid, []).append(source)
                if source not in seen:
                    seen.add(source)
                    frontier.append(source)
    if messages_of_subtree:
        checked = sorted(seen)
    else:  # the roots and what they read or give back: their direct sources
        checked = list(dict.fromkeys([*start, *(source for sid in start for source in edges.get(sid, []))]))
    for at in range(0, len(checked), 500):
        batch = json.dumps(checked[at : at + 500])
        for sid, message_id, message_cid in conn.execute(
            """SELECT sm.summary_id, sm.message_id, m.conversation_id FROM summary_messages sm
                 LEFT JOIN messages m ON m.message_id = sm.message_id
                WHERE sm.summary_id IN (SELECT value FROM json_each(?))""",
            (batch,),
        ):
            if message_cid is None:
                problems.append({"summaryId": sid, "reason": "missing-source", "other": str(message_id)})
            elif message_cid != owner.get(sid):
                problems.append({"summaryId": sid, "reason": "cross-conversation", "other": str(message_id)})
        for (sid,) in conn.execute(
            """SELECT s.summary_id FROM summaries s WHERE s.summary_id IN (SELECT value FROM json_each(?))
                 AND s.kind = 'leaf'
                 AND NOT EXISTS (SELECT 1 FROM summary_messages sm WHERE sm.summary_id = s.summary_id)""",
            (batch,),
        ):
            problems.append({"summaryId": sid, "reason": "no-sources", "other": ""})
    for sid, consumer, consumer_cid in conn.execute(
        """SELECT sp.parent_summary_id, sp.summary_id, s.conversation_id FROM summary_parents sp
             JOIN summaries s ON s.summary_id = sp.summary_id
            WHERE sp.parent_summary_id IN (SELECT value FROM json_each(?))""",
        (json.dumps(start),),
    ):
        if owner.get(sid) is not None and consumer_cid != owner[sid]:
            problems.append({"summaryId": consumer, "reason": "cross-conversation", "other": sid})
    problems += [{"summaryId": sid, "reason": "cycle", "other": ""} for sid in sorted(nodes_on_cycles(edges))]
    if not problems:
        return
    reasons = sorted({p["reason"] for p in problems})
    checks = sorted({DAMAGE_CHECKS[r] for r in reasons})
    raise LcmError(
        "SUMMARY_GRAPH_DAMAGED",
        f"The summary graph `{command}` would touch is damaged ({len(problems)} problem(s): "
        f"{', '.join(reasons)}); nothing was written. See them with `lcm doctor --check dag`, "
        "then restore a backup from before the damage (`lcm backup list`).",
        {
            "command": command,
            "problemCount": len(problems),
            "problems": problems[:_SHOWN_PROBLEMS],
            "checks": checks,
        },
    )


def bottom_up(conn: sqlite3.Connection, summary_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The summaries named, as rows, deepest sources first: by depth, creation time, id."""
    ids = list(dict.fromkeys(summary_ids))
    if not ids:
        return []
    return rows(
        conn,
        f"""SELECT {SUMMARY_COLUMNS} FROM summaries WHERE summary_id IN (SELECT value FROM json_each(?))
            ORDER BY depth, created_at, summary_id""",
        (json.dumps(ids),),
    )


def summary_fts_tables(conn: sqlite3.Connection) -> list[str]:
    """The summary FTS tables this file has and this SQLite build can write."""
    from lcm_cli.engine.db import schema

    if not schema.fts5_available(conn):
        return []
    tables = [t for t in ("summaries_fts",) if schema.table_exists(conn, t)]
    if schema.trigram_available(conn) and schema.table_exists(conn, "summaries_fts_cjk"):
        tables.append("summaries_fts_cjk")
    return tables


def set_summary_fts(
    conn: sqlite3.Connection, tables: Sequence[str], summary_id: str, content: str | None
) -> None:
    """Replace (or with ``content`` None, drop) one summary's FTS rows (caller's transaction)."""
    for table in tables:
        conn.execute(f"DELETE FROM {table} WHERE summary_id = ?", (summary_id,))
        if content is not None:
            conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES (?, ?)", (summary_id, content))


def refresh_descendant_totals(conn: sqlite3.Connection, changed: Iterable[str]) -> int:
    """Recompute descendant counts and tokens of every summary above ``changed``, bottom-up.

    A rewritten summary's token count feeds each consumer's ``descendant_token_count``
    (database.md §8), so the consumers are brought back in step in the same transaction.
    Returns how many rows changed.
    """
    above = bottom_up(conn, consumers(conn, changed))
    updated = 0
    for row in above:
        updated += conn.execute(
            """UPDATE summaries SET
                 descendant_count = (SELECT COALESCE(SUM(p.descendant_count + 1), 0) FROM summary_parents sp
                   JOIN summaries p ON p.summary_id = sp.parent_summary_id WHERE sp.summary_id = :sid),
                 descendant_token_count = (SELECT COALESCE(SUM(p.token_count + p.descendant_token_count), 0)
                   FROM summary_parents sp JOIN summaries p ON p.summary_id = sp.parent_summary_id
                   WHERE sp.summary_id = :sid)
               WHERE summary_id = :sid AND kind = 'condensed'""",
            {"sid": row["summary_id"]},
        ).rowcount
    return updated


def backup_first(ctx: Context, label: str) -> str:
    """An online, checked backup ``<db>.<label>-<stamp>.bak`` (as migrate-sessions takes), before any write."""
    from lcm_cli.engine.config.file import backup_stamp
    from lcm_cli.engine.maintenance.backup.create import create_backup

    out = f"{ctx.database_path}.{label}-{backup_stamp()}.bak"
    return str(create_backup(ctx.database_path, out=out)["backupPath"])


class Protection:
    """The backup a surgery's writes took: ``backupPath`` and ``backupKind`` (None: none)."""

    def __init__(self) -> None:
        self.path: str | None = None
        self.kind: str | None = None
        self.rows: int | None = None


@contextmanager
def protected_writer(
    ctx: Context, mode: str, label: str, command: str
) -> Iterator[tuple[sqlite3.Connection, Protection]]:
    """The write connection, under the backup ``--backup`` chose: a change backup of the
    rows the block writes (``changes``), a full copy taken first (``full``), or none."""
    from lcm_cli.engine.maintenance.backup.changes import capture_changes

    taken = Protection()
    if mode == "full":
        taken.path, taken.kind = backup_first(ctx, label), "full"
    conn = writer(ctx)
    if mode != "changes":
        yield conn, taken
        return
    with capture_changes(conn, ctx.database_path, label=label, command=command) as capture:
        yield conn, taken
    if capture.result is not None:
        taken.path, taken.kind, taken.rows = capture.result["backupPath"], "changes", capture.result["rows"]


def writer(ctx: Context) -> sqlite3.Connection:
    """The write store's connection (migrated, WAL, foreign keys on), the read handle closed first."""
    ctx.close()
    conn: sqlite3.Connection = ctx.store().conn
    return conn


def state_changed(what: str, details: dict[str, Any]) -> LcmError:
    """STATE_CHANGED: a live writer changed what the plan read; the transaction is rolled back."""
    return LcmError(
        "STATE_CHANGED",
        f"{what} changed since it was read (a live writer got there first); nothing of this unit "
        "was written. Run the command again.",
        details,
    )


def context_items(conn: sqlite3.Connection, conversation_id: int) -> list[dict[str, Any]]:
    """A conversation's context items in prompt order."""
    return rows(
        conn,
        """SELECT ordinal, item_type, message_id, summary_id, created_at FROM context_items
           WHERE conversation_id = ? ORDER BY ordinal""",
        (conversation_id,),
    )


def write_context(conn: sqlite3.Connection, conversation_id: int, items: Sequence[dict[str, Any]]) -> None:
    """Replace a conversation's context with ``items``, in order, at ordinals 0..N-1 (caller's transaction).

    Deleting then inserting renumbers without ever colliding on the (conversation, ordinal)
    key; items keep their ``created_at``.
    """
    from lcm_cli.engine.db.store.context_items import INSERT_CONTEXT

    conn.execute("DELETE FROM context_items WHERE conversation_id = ?", (conversation_id,))
    conn.executemany(
        INSERT_CONTEXT,
        (
            (conversation_id, ordinal, i["item_type"], i["message_id"], i["summary_id"], i["created_at"])
            for ordinal, i in enumerate(items)
        ),
    )
