"""`lcm summaries rewrite`: re-summarize summaries from their sources, with a diff.

Every target is summarized first, bottom-up (depth, then creation time), so a condensed
summary is rebuilt from the new text of sources rewritten a moment earlier: that plan is
the dry run, and exactly what ``--apply`` writes. With ``--apply`` (and something to
change) each summary is one ``BEGIN IMMEDIATE``, all under one backup (by default a change
backup of the rows written: ``--backup``), that re-checks
the stored text and writes content, token count and model, both FTS rows, and the
descendant totals of every consumer. No transaction is open during a model call. A
summarizer failure or a fallback answer leaves that summary as it was; a summary whose
source could not be written is not written either.
"""

from __future__ import annotations

import difflib
import sqlite3
from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import ALL, APPLY, BACKUP, CASCADE, SUMMARY_ID, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables
from lcm_cli.engine.surgery.common import (
    bottom_up,
    consumers,
    load_summary,
    protected_writer,
    refresh_descendant_totals,
    refuse_damaged_graph,
    set_summary_fts,
    state_changed,
    summary_fts_tables,
)
from lcm_cli.engine.surgery.sources import rebuild_text, zone_of

if TYPE_CHECKING:
    from lcm_cli.engine.surgery.records import PlannedRewrite

BACKUP_LABEL = "summaries-rewrite"

# Failures reported under their own reason; a fallback or marked text is "summarizer-fallback".
_OWN_REASONS = ("spend-limit", "summarizer-error", "summarizer-auth-failure")


def _targets(ctx: Context, conn: sqlite3.Connection, req: Request) -> tuple[list[str], set[str]]:
    """The summaries to rewrite (ids) and which of them only --cascade brought in."""
    ids, depth, every = req[SUMMARY_ID], req.depth, req[ALL]
    chosen = [
        name
        for name, given in (("--summary-id", ids), ("--depth", depth is not None), ("--all", every))
        if given
    ]
    if len(chosen) != 1:
        raise invalid_argument(
            "`summaries rewrite` takes exactly one of --summary-id, --depth or --all"
            + (f" (got {', '.join(chosen)})." if chosen else "."),
            {"options": chosen},
        )
    scope = find_conversation(ctx, req.selector)["conversation_id"] if req.selector is not None else None
    if ids:
        for sid in ids:
            row = load_summary(conn, sid)
            if scope is not None and row["conversation_id"] != scope:
                raise LcmError(
                    "NOT_IN_SCOPE",
                    f"Summary {sid} belongs to conversation {row['conversation_id']}, not {scope}; "
                    "drop the selector or pick another summary.",
                    {"id": sid, "conversationId": row["conversation_id"]},
                )
        base = list(dict.fromkeys(ids))
    else:
        where, params = ["1 = 1"], []
        if depth is not None:
            where.append("depth = ?")
            params.append(depth)
        if scope is not None:
            where.append("conversation_id = ?")
            params.append(scope)
        base = [
            r[0]
            for r in conn.execute(f"SELECT summary_id FROM summaries WHERE {' AND '.join(where)}", params)
        ]
    extra = set(consumers(conn, base)) - set(base) if req[CASCADE] else set()
    refuse_damaged_graph(conn, [*base, *sorted(extra)], "summaries rewrite", messages_of_subtree=False)
    return base + sorted(extra), extra


def _diff(sid: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{sid} (stored)",
        tofile=f"{sid} (rewritten)",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _write(conn: sqlite3.Connection, fts: list[str], row: dict[str, Any], new: str, model: str) -> int:
    """One summary's unit of work; returns how many consumers' totals moved."""
    sid = row["summary_id"]
    conn.execute("BEGIN IMMEDIATE")
    try:
        changed = conn.execute(
            "UPDATE summaries SET content = ?, token_count = ?, model = ? WHERE summary_id = ? AND content = ?",
            (new, estimate_tokens(new), model, sid, row["content"]),
        ).rowcount
        if changed != 1:
            raise state_changed(f"Summary {sid}", {"summaryId": sid})
        set_summary_fts(conn, fts, sid, new)
        moved = refresh_descendant_totals(conn, [sid])
        conn.execute("COMMIT")
        return moved
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _plan(ctx: Context, targets: list[str], cascaded: set[str], summarizer: Any) -> list[PlannedRewrite]:
    """Summarize every target bottom-up from the current sources (no write, no transaction).

    A summary's sources rewritten a moment earlier count with their new text, so the
    entries are exactly what ``--apply`` writes. Each entry that would change carries
    its ``new`` text (taken out before the result is returned).
    """
    conn, effective = ctx.db, ctx.effective
    zone = zone_of(effective)
    rewritten: dict[str, str] = {}  # new text by id: the sources of the summaries above
    entries: list[PlannedRewrite] = []
    stop: str | None = None
    ordered = bottom_up(conn, targets)
    for index, row in enumerate(ordered):
        ctx.report_progress("rewrite", index, len(ordered))
        sid = row["summary_id"]
        entry: PlannedRewrite = {
            "summaryId": sid,
            "conversationId": row["conversation_id"],
            "kind": row["kind"],
            "depth": row["depth"],
            "cascaded": sid in cascaded,
            "status": "",
            "oldTokenCount": row["token_count"],
            "newTokenCount": row["token_count"],
            "level": None,
            "reason": None,
            "diff": "",
            "row": row,
        }
        entries.append(entry)
        if stop is not None:
            entry["status"], entry["reason"] = "skipped", stop
            continue
        out = rebuild_text(conn, row, rewritten, summarizer, effective, zone)
        if out.failure == "no-source-text":
            entry["status"], entry["reason"] = "skipped", out.failure
            continue
        entry["level"] = out.level
        if out.text is None:
            # Never store a fallback: the summary keeps its text and the failure is reported.
            reason = out.failure if out.failure in _OWN_REASONS else "summarizer-fallback"
            entry["status"], entry["reason"] = "failed", reason
            entry["error"] = {"code": "SUMMARIZER_FAILED", "message": out.message}
            if out.stops:
                stop = out.failure
            continue
        new = out.text
        if new == row["content"]:
            entry["status"] = "unchanged"
            continue
        entry["status"] = "would-rewrite"
        entry["new"] = new
        entry["newTokenCount"] = estimate_tokens(new)
        entry["diff"] = _diff(sid, row["content"], new)
        rewritten[sid] = new
    ctx.report_progress("rewrite", len(ordered), len(ordered))
    return entries


def _apply(conn: sqlite3.Connection, entries: list[PlannedRewrite], model: str) -> None:
    """Write each planned rewrite in its own transaction, bottom-up."""
    fts = summary_fts_tables(conn)
    unwritten: set[str] = set()  # planned but not written: what was built on them is not written either
    for entry in entries:
        if entry["status"] != "would-rewrite":
            continue
        sid = entry["summaryId"]
        sources = {
            r[0]
            for r in conn.execute(
                "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ?", (sid,)
            )
        }
        if sources & unwritten:
            entry["status"], entry["reason"] = "skipped", "source-not-written"
            unwritten.add(sid)
            continue
        try:
            entry["consumersUpdated"] = _write(conn, fts, entry["row"], entry["new"], model)
        except LcmError as exc:
            entry["status"], entry["reason"] = "failed", "state-changed"
            entry["error"] = exc.to_dict()
            unwritten.add(sid)
            continue
        entry["status"] = "rewritten"


@operation("summaries.rewrite")
def rewrite(ctx: Context, req: Request) -> Result:
    """Plan every rewrite (the dry run); with --apply, back up once, then write them one by one."""
    from lcm_cli.engine.maintenance.backup.changes import choose_mode
    from lcm_cli.engine.summarize.factory import build_summarizer

    mode = choose_mode(req[BACKUP])
    require_lcm_tables(ctx)
    targets, cascaded = _targets(ctx, ctx.db, req)
    summarizer = build_summarizer(ctx.effective, ctx.env)
    model = str(getattr(summarizer, "model_id", None) or getattr(summarizer, "model", "unknown"))
    entries = _plan(ctx, targets, cascaded, summarizer)
    apply = req[APPLY]
    data: dict[str, Any] = {
        "applied": False,
        "backupPath": None,
        "backupKind": None,
        "summarizer": model,
        "cascade": req[CASCADE],
    }
    if apply and any(e["status"] == "would-rewrite" for e in entries):
        with protected_writer(ctx, mode, BACKUP_LABEL, "summaries rewrite") as (conn, taken):
            _apply(conn, entries, model)
        data.update(applied=True, backupPath=taken.path, backupKind=taken.kind)
    for entry in entries:
        entry.pop("row")
        entry.pop("new", None)
    counts = {
        s: sum(1 for e in entries if e["status"] == s)
        for s in ("rewritten", "would-rewrite", "unchanged", "failed", "skipped")
    }
    data.update(counts=counts, summaries=entries)
    return Result(data, exit_status=1 if counts["failed"] else 0)
