"""`lcm summaries dissolve ID`: undo one condensation.

The condensed summary's context item is replaced by its direct sources, in their
``summary_parents`` order, and the conversation's ordinals are renumbered 0..N-1. The
summary itself stays as orphaned history (still readable, still linked to its sources), or
is deleted with ``--purge``. One transaction, under the backup ``--backup`` chose (by
default a change backup of the rows it changes); the plan is re-checked inside it.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import APPLY, BACKUP, PURGE, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.pending_state import invalidate_open_batches
from lcm_cli.engine.db.store.stamps import sqlite_timestamp
from lcm_cli.engine.read.conversation_rows import require_lcm_tables
from lcm_cli.engine.surgery.common import (
    context_items,
    load_summary,
    protected_writer,
    refuse_damaged_graph,
    rows,
    set_summary_fts,
    state_changed,
    summary_fts_tables,
    write_context,
)

if TYPE_CHECKING:
    from lcm_cli.engine.surgery.records import ContextItem

BACKUP_LABEL = "summaries-dissolve"


class Plan:
    """What dissolving one summary changes: the context before and after, and what it restores."""

    def __init__(self, conn: sqlite3.Connection, summary_id: str, purge: bool) -> None:
        target = load_summary(conn, summary_id)
        self.summary = target
        cid = target["conversation_id"]
        self.conversation_id = cid
        if target["kind"] != "condensed":
            raise LcmError(
                "SUMMARY_NOT_CONDENSED",
                f"Summary {summary_id} is a {target['kind']} summary (depth {target['depth']}); only a "
                "condensed summary can be dissolved. Dissolve the summary that consumes it instead.",
                {"summaryId": summary_id, "kind": target["kind"], "depth": target["depth"]},
            )
        refuse_damaged_graph(conn, [summary_id], "summaries dissolve", messages_of_subtree=False)
        self.before = context_items(conn, cid)
        at = [i for i, item in enumerate(self.before) if item["summary_id"] == summary_id]
        if not at:
            raise LcmError(
                "SUMMARY_NOT_IN_CONTEXT",
                f"Summary {summary_id} is not in conversation {cid}'s context, so there is no "
                "condensation to undo. `lcm context show` lists what is.",
                {"summaryId": summary_id, "conversationId": cid},
            )
        self.position = at[0]
        self.sources = rows(
            conn,
            """SELECT s.summary_id, s.kind, s.depth, s.token_count, sp.ordinal FROM summary_parents sp
               JOIN summaries s ON s.summary_id = sp.parent_summary_id
               WHERE sp.summary_id = ? AND s.conversation_id = ? ORDER BY sp.ordinal""",
            (summary_id, cid),
        )
        if not self.sources:
            raise LcmError(
                "SUMMARY_NOT_CONDENSED",
                f"Summary {summary_id} has no source summaries in its conversation: nothing to give back.",
                {"summaryId": summary_id, "kind": target["kind"], "depth": target["depth"]},
            )
        in_context = {item["summary_id"] for item in self.before if item["summary_id"]}
        # A source already in the context (abnormal data) is not added twice.
        self.restored = [s for s in self.sources if s["summary_id"] not in in_context]
        self.consumed_by = [
            r[0]
            for r in conn.execute(
                "SELECT summary_id FROM summary_parents WHERE parent_summary_id = ?", (summary_id,)
            )
        ]
        if purge and self.consumed_by:
            raise invalid_argument(
                f"--purge cannot delete {summary_id}: summaries {', '.join(self.consumed_by)} consume it. "
                "Dissolve without --purge to keep it as history.",
                {"summaryId": summary_id, "consumedBy": self.consumed_by},
            )
        now = sqlite_timestamp()
        restored_items = [
            {"item_type": "summary", "message_id": None, "summary_id": s["summary_id"], "created_at": now}
            for s in self.restored
        ]
        self.after = self.before[: self.position] + restored_items + self.before[self.position + 1 :]

    def report(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """The plan as data: the target, what returns, the token change and the new context."""
        meta = {
            r["summary_id"]: r
            for r in rows(
                conn,
                """SELECT summary_id, kind, depth, token_count FROM summaries
                   WHERE summary_id IN (SELECT summary_id FROM context_items WHERE conversation_id = ?)""",
                (self.conversation_id,),
            )
        }
        for s in self.restored:
            meta[s["summary_id"]] = s
        context: list[ContextItem] = []
        for ordinal, item in enumerate(self.after):
            info = meta.get(item["summary_id"] or "", {})
            context.append(
                {
                    "ordinal": ordinal,
                    "itemType": item["item_type"],
                    "messageId": item["message_id"],
                    "summaryId": item["summary_id"],
                    "kind": info.get("kind"),
                    "depth": info.get("depth"),
                    "tokenCount": info.get("token_count"),
                    "restored": ordinal in range(self.position, self.position + len(self.restored)),
                }
            )
        restored_tokens = sum(s["token_count"] for s in self.restored)
        return {
            "summaryId": self.summary["summary_id"],
            "conversationId": self.conversation_id,
            "kind": self.summary["kind"],
            "depth": self.summary["depth"],
            "ordinal": self.before[self.position]["ordinal"],
            "tokenCount": self.summary["token_count"],
            "restored": [
                {
                    "summaryId": s["summary_id"],
                    "kind": s["kind"],
                    "depth": s["depth"],
                    "tokenCount": s["token_count"],
                }
                for s in self.restored
            ],
            "alreadyInContext": [s["summary_id"] for s in self.sources if s not in self.restored],
            "contextTokenDelta": restored_tokens - self.summary["token_count"],
            "itemsShifted": len(self.before) - self.position - 1,
            "contextItemsBefore": len(self.before),
            "contextItemsAfter": len(self.after),
            "context": context,
        }


def _apply(conn: sqlite3.Connection, plan: Plan, purge: bool) -> None:
    sid, cid = plan.summary["summary_id"], plan.conversation_id
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = context_items(conn, cid)
        if current != plan.before:
            raise state_changed(f"The context of conversation {cid}", {"conversationId": cid})
        invalidate_open_batches(conn, cid, "context changed by lcm summaries dissolve")
        write_context(conn, cid, plan.after)
        if purge:
            conn.execute("DELETE FROM summary_parents WHERE summary_id = ?", (sid,))
            set_summary_fts(conn, summary_fts_tables(conn), sid, None)
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'focus_brief_sources'").fetchone():
                conn.execute("DELETE FROM focus_brief_sources WHERE summary_id = ?", (sid,))
            conn.execute("DELETE FROM summaries WHERE summary_id = ?", (sid,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


@operation("summaries.dissolve")
def dissolve(ctx: Context, req: Request) -> Result:
    """Plan the dissolve (dry run), or back up and write it in one transaction."""
    from lcm_cli.engine.maintenance.backup.changes import choose_mode

    mode = choose_mode(req[BACKUP])
    require_lcm_tables(ctx)
    (summary_id,) = req.args
    purge = req[PURGE]
    plan = Plan(ctx.db, summary_id, purge)
    data: dict[str, Any] = {
        "applied": False,
        "purge": purge,
        "backupPath": None,
        "backupKind": None,
        **plan.report(ctx.db),
    }
    if not req[APPLY]:
        return Result(data)
    with protected_writer(ctx, mode, BACKUP_LABEL, "summaries dissolve") as (conn, taken):
        _apply(conn, plan, purge)
    data.update(applied=True, backupPath=taken.path, backupKind=taken.kind)
    return Result(data)
