"""`lcm summaries transplant`: deep-copy a summary DAG into another conversation.

``--from ID`` copies the summaries in that conversation's context with everything beneath
them; ``--summary-id`` copies one summary (or several) with its subtree. Every copied
summary gets a new id and keeps its content, depth, kind, totals, times, file ids and
model; the messages the leaves cover are copied too (with their parts, identity hashes
and times, at the end of the target's ``seq``), so no link crosses conversations. The
copied roots go first in the target's context, in order, and the ordinals are renumbered.

A content guard refuses a copy whose summaries the target already holds (SHA-256 of the
content). Everything is one transaction, under the backup ``--backup`` chose (by default a
change backup of the rows it adds).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import APPLY, BACKUP, FROM_CONVERSATION, SUMMARY_ID, TO, Request, Selector
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.pending_state import invalidate_open_batches
from lcm_cli.engine.db.store.ids import PartIds, new_summary_id
from lcm_cli.engine.db.store.messages import fts_message_text
from lcm_cli.engine.db.store.stamps import sqlite_timestamp
from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables
from lcm_cli.engine.surgery.common import (
    SUMMARY_COLUMNS,
    bottom_up,
    context_items,
    load_summary,
    protected_writer,
    refuse_damaged_graph,
    rows,
    state_changed,
    subtree,
    summary_fts_tables,
    write_context,
)

if TYPE_CHECKING:
    from lcm_cli.engine.surgery.records import CopiedSummary

BACKUP_LABEL = "summaries-transplant"
# Message columns a copy leaves empty: they identify the source's transcript entries and
# events (unique per conversation), or point at the source's externalized files.
_NOT_COPIED = {
    "message_id",
    "conversation_id",
    "seq",
    "transcript_entry_id",
    "stable_event_key",
    "large_content",
}


def content_hash(content: str) -> str:
    """The duplicate guard's key: hex SHA-256 of a summary's content."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def _target_id(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise invalid_argument(
            "`summaries transplant` needs --to ID, the target conversation id.", {"option": "to"}
        )
    text = str(value)
    if not text.isdigit() or int(text) < 1:
        raise invalid_argument(
            f"Invalid --to value {value!r}: expected a conversation id (digits).", {"value": value}
        )
    return int(text)


class Plan:
    """What a transplant copies: the summaries (bottom-up), the roots for the context, the messages."""

    def __init__(self, ctx: Context, conn: sqlite3.Connection, req: Request) -> None:
        source_id, ids = req[FROM_CONVERSATION], req[SUMMARY_ID]
        if (source_id is None) == (not ids):
            raise invalid_argument(
                "`summaries transplant` takes exactly one of --from ID or --summary-id ID (with --to ID).",
                {
                    "options": [
                        o for o, v in (("--from", source_id is not None), ("--summary-id", bool(ids))) if v
                    ]
                },
            )
        self.target = find_conversation(ctx, Selector("conversationId", _target_id(req[TO])))[
            "conversation_id"
        ]
        if source_id is not None:
            self.source = find_conversation(ctx, Selector("conversationId", source_id))["conversation_id"]
            roots = [i["summary_id"] for i in context_items(conn, self.source) if i["item_type"] == "summary"]
        else:
            found = [load_summary(conn, sid) for sid in dict.fromkeys(ids)]
            owners = {row["conversation_id"] for row in found}
            if len(owners) > 1:
                raise invalid_argument(
                    "--summary-id summaries must come from one conversation.",
                    {"conversationIds": sorted(owners)},
                )
            self.source = owners.pop()
            named = [row["summary_id"] for row in found]
            # A named summary beneath another named one is copied once, as part of that subtree.
            beneath = {s for r in named for s in subtree(conn, [r]) if s != r}
            roots = [sid for sid in named if sid not in beneath]
        if self.source == self.target:
            raise invalid_argument(
                f"--to {self.target} is the source conversation; transplant into another one.",
                {"conversationId": self.target},
            )
        refuse_damaged_graph(conn, roots, "summaries transplant", messages_of_subtree=True)
        # Only the source's own summaries: a context item pointing elsewhere (abnormal) is left.
        self.summaries = [
            s for s in bottom_up(conn, subtree(conn, roots)) if s["conversation_id"] == self.source
        ]
        own = {s["summary_id"] for s in self.summaries}
        self.roots = [r for r in roots if r in own]
        copied = {s["summary_id"] for s in self.summaries}
        self.parents = rows(
            conn,
            """SELECT summary_id, parent_summary_id, ordinal FROM summary_parents
               WHERE summary_id IN (SELECT value FROM json_each(?)) ORDER BY summary_id, ordinal""",
            (json.dumps(sorted(copied)),),
        )
        self.parents = [p for p in self.parents if p["parent_summary_id"] in copied]
        self.sources = rows(
            conn,
            """SELECT sm.summary_id, sm.message_id, sm.ordinal FROM summary_messages sm
               JOIN messages m ON m.message_id = sm.message_id
               WHERE sm.summary_id IN (SELECT value FROM json_each(?)) AND m.conversation_id = ?
               ORDER BY sm.summary_id, sm.ordinal""",
            (json.dumps(sorted(copied)), self.source),
        )
        self.messages = [
            r[0]
            for r in conn.execute(
                "SELECT message_id FROM messages WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY seq, message_id",
                (json.dumps(sorted({s["message_id"] for s in self.sources})),),
            )
        ]
        self.parts = int(
            conn.execute(
                "SELECT COUNT(*) FROM message_parts WHERE message_id IN (SELECT value FROM json_each(?))",
                (json.dumps(self.messages),),
            ).fetchone()[0]
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'message_parts'").fetchone()
            else 0
        )
        self.check_duplicates(conn)

    def check_duplicates(self, conn: sqlite3.Connection) -> None:
        """TRANSPLANT_DUPLICATE when the target already holds a summary with a copied summary's content."""
        held: dict[str, str] = {}
        for sid, content in conn.execute(
            "SELECT summary_id, content FROM summaries WHERE conversation_id = ?", (self.target,)
        ):
            held.setdefault(content_hash(content), sid)
        duplicates = [
            {"summaryId": s["summary_id"], "targetSummaryId": held[content_hash(s["content"])]}
            for s in self.summaries
            if content_hash(s["content"]) in held
        ]
        if duplicates:
            raise LcmError(
                "TRANSPLANT_DUPLICATE",
                f"Conversation {self.target} already holds {len(duplicates)} of these summaries (same "
                "content): it was transplanted before. Nothing was written.",
                {"conversationId": self.target, "duplicates": duplicates},
            )

    def report(self) -> dict[str, Any]:
        """The plan as data."""
        roots = set(self.roots)
        copies: list[CopiedSummary] = [
            {
                "summaryId": s["summary_id"],
                "newSummaryId": None,
                "kind": s["kind"],
                "depth": s["depth"],
                "tokenCount": s["token_count"],
                "inContext": s["summary_id"] in roots,
                "contentSha256": content_hash(s["content"]),
            }
            for s in self.summaries
        ]
        return {
            "from": self.source,
            "to": self.target,
            "summaryCount": len(self.summaries),
            "messageCount": len(self.messages),
            "partCount": self.parts,
            "contextItemsAdded": len(self.roots),
            "summaries": copies,
        }


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _copy(conn: sqlite3.Connection, plan: Plan) -> dict[str, str]:
    """Copy messages, parts, summaries, links and context rows (caller's transaction); new ids by old id."""
    target = plan.target
    session_id = conn.execute(
        "SELECT session_id FROM conversations WHERE conversation_id = ?", (target,)
    ).fetchone()[0]
    # Messages: appended after the target's last seq, in the source's order.
    kept = [c for c in _columns(conn, "messages") if c not in _NOT_COPIED]
    has_fts = _fts_usable(conn, "messages_fts")
    part_columns = [
        c for c in _columns(conn, "message_parts") if c not in ("part_id", "message_id", "session_id")
    ]
    part_ids = PartIds()
    seq = int(
        conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM messages WHERE conversation_id = ?", (target,)
        ).fetchone()[0]
    )
    listed = json.dumps(plan.messages)
    source_rows = conn.execute(
        f"SELECT message_id, {', '.join(kept)} FROM messages"
        " WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY seq, message_id",
        (listed,),
    ).fetchall()
    insert = (
        f"INSERT INTO messages (conversation_id, seq, {', '.join(kept)}) VALUES (?, ?{', ?' * len(kept)})"
    )
    content_at = kept.index("content")
    new_message: dict[int, int] = {}
    fts_rows: list[tuple[int, str]] = []
    for old, *values in source_rows:
        seq += 1
        new_id = int(conn.execute(insert, (target, seq, *values)).lastrowid or 0)
        new_message[old] = new_id
        text = fts_message_text(values[content_at]) if has_fts else None
        if text is not None:
            fts_rows.append((new_id, text))
    conn.executemany("INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", fts_rows)
    conn.executemany(
        f"INSERT INTO message_parts (part_id, message_id, session_id, {', '.join(part_columns)})"
        f" VALUES (?, ?, ?{', ?' * len(part_columns)})",
        (
            (part_ids.next(), new_message[old], session_id, *part)
            for old, *part in conn.execute(
                f"SELECT message_id, {', '.join(part_columns)} FROM message_parts"
                " WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY message_id, ordinal",
                (listed,),
            ).fetchall()
        ),
    )
    # Summaries bottom-up, so every link points at a row that exists.
    fts = summary_fts_tables(conn)
    columns = [c.strip() for c in SUMMARY_COLUMNS.split(",")]
    new_summary: dict[str, str] = {}
    for s in plan.summaries:
        copy_id = new_summary_id(s["content"])
        new_summary[s["summary_id"]] = copy_id
        values = [
            copy_id if c == "summary_id" else target if c == "conversation_id" else s[c] for c in columns
        ]
        conn.execute(
            f"INSERT INTO summaries ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})", values
        )
        for table in fts:
            conn.execute(f"INSERT INTO {table} (summary_id, content) VALUES (?, ?)", (copy_id, s["content"]))
    conn.executemany(
        "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)",
        (
            (new_summary[p["summary_id"]], new_summary[p["parent_summary_id"]], p["ordinal"])
            for p in plan.parents
        ),
    )
    conn.executemany(
        "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
        ((new_summary[m["summary_id"]], new_message[m["message_id"]], m["ordinal"]) for m in plan.sources),
    )
    # The copied roots go first: they cover older history than anything the target holds.
    now = sqlite_timestamp()
    roots = [
        {"item_type": "summary", "message_id": None, "summary_id": new_summary[r], "created_at": now}
        for r in plan.roots
    ]
    invalidate_open_batches(conn, target, "context changed by lcm summaries transplant")
    write_context(conn, target, roots + context_items(conn, target))
    return new_summary


def _fts_usable(conn: sqlite3.Connection, table: str) -> bool:
    from lcm_cli.engine.db import schema

    return schema.fts5_available(conn) and schema.table_exists(conn, table)


@operation("summaries.transplant")
def transplant(ctx: Context, req: Request) -> Result:
    """Plan the copy (dry run), or back up and copy it in one transaction."""
    from lcm_cli.engine.maintenance.backup.changes import choose_mode

    mode = choose_mode(req[BACKUP])
    require_lcm_tables(ctx)
    plan = Plan(ctx, ctx.db, req)
    data: dict[str, Any] = {"applied": False, "backupPath": None, "backupKind": None, **plan.report()}
    if not req[APPLY] or not plan.summaries:
        return Result(data)
    with protected_writer(ctx, mode, BACKUP_LABEL, "summaries transplant") as (conn, taken):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-plan inside the transaction: what the dry run read may have moved since.
            again = Plan(ctx, conn, req)
            if [s["summary_id"] for s in again.summaries] != [s["summary_id"] for s in plan.summaries]:
                raise state_changed(
                    f"The summary DAG of conversation {plan.source}", {"conversationId": plan.source}
                )
            new_ids = _copy(conn, again)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    for entry in data["summaries"]:
        entry["newSummaryId"] = new_ids[entry["summaryId"]]
    data.update(applied=True, backupPath=taken.path, backupKind=taken.kind)
    return Result(data)
