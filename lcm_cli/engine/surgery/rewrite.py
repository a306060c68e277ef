"""`lcm summaries rewrite`: re-summarize summaries from their sources, with a diff.

Targets run bottom-up (depth, then creation time), so a condensed summary is rebuilt from
sources rewritten a moment earlier; the dry run does the same in memory, so its diffs are
what ``--apply`` would write. The summarizer is called with no transaction open; each
summary is then one ``BEGIN IMMEDIATE`` that re-checks the stored text, writes content,
token count and model, both FTS rows, and the descendant totals of every consumer. A
summarizer failure or a fallback answer leaves that summary as it was.
"""

from __future__ import annotations

import difflib
import sqlite3
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import ALL, APPLY, CASCADE, SUMMARY_ID, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.maintenance.markers import contains_marker
from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables
from lcm_cli.engine.surgery.common import (
    backup_first,
    bottom_up,
    consumers,
    load_summary,
    refresh_descendant_totals,
    set_summary_fts,
    state_changed,
    summary_fts_tables,
    writer,
)
from lcm_cli.engine.surgery.sources import previous_context, source_text, zone_of

BACKUP_LABEL = "summaries-rewrite"


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


@operation("summaries.rewrite")
def rewrite(ctx: Context, req: Request) -> Result:
    """Plan (and with --apply write) the rewrite of each target, one transaction per summary."""
    from lcm_cli.engine.summarize.base import SpendLimitError
    from lcm_cli.engine.summarize.escalation import summarize_with_escalation
    from lcm_cli.engine.summarize.factory import build_summarizer

    require_lcm_tables(ctx)
    apply = req[APPLY]
    targets, cascaded = _targets(ctx, ctx.db, req)
    effective = ctx.effective
    summarizer = build_summarizer(effective, ctx.env)
    model = str(getattr(summarizer, "model", "unknown"))
    data: dict[str, Any] = {
        "applied": False,
        "backupPath": None,
        "summarizer": model,
        "cascade": req[CASCADE],
    }
    conn = ctx.db
    fts: list[str] = []
    if apply and targets:
        data["backupPath"] = backup_first(ctx, BACKUP_LABEL)
        conn = writer(ctx)
        fts = summary_fts_tables(conn)
    zone = zone_of(effective)
    rewritten: dict[str, str] = {}  # new text by id: the sources of the summaries above
    entries: list[dict[str, Any]] = []
    stop: str | None = None
    ordered = bottom_up(conn, targets)
    for index, row in enumerate(ordered):
        ctx.report_progress("rewrite", index, len(ordered))
        sid = row["summary_id"]
        entry: dict[str, Any] = {
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
        }
        entries.append(entry)
        if stop is not None:
            entry.update(status="skipped", reason=stop)
            continue
        text = source_text(conn, row, rewritten, zone)
        if not text.strip():
            entry.update(status="skipped", reason="no-source-text")
            continue
        try:
            result = summarize_with_escalation(
                summarizer,
                text,
                depth=row["depth"],
                effective=effective,
                previous_context=previous_context(conn, row, rewritten),
            )
        except SpendLimitError as exc:
            stop = "spend-limit"
            entry.update(
                status="failed",
                reason="spend-limit",
                error={"code": "SUMMARIZER_FAILED", "message": str(exc)},
            )
            continue
        except Exception as exc:  # a broken summarizer fails this summary only
            entry.update(
                status="failed",
                reason="summarizer-error",
                error={"code": "SUMMARIZER_FAILED", "message": f"{type(exc).__name__}: {exc}"},
            )
            continue
        if result.auth_failure:
            stop = "summarizer-auth-failure"
            entry.update(
                status="failed",
                reason=stop,
                error={"code": "SUMMARIZER_FAILED", "message": "authentication failed"},
            )
            continue
        new = result.content.strip()
        entry["level"] = result.level
        # Never store a fallback: the summary keeps its text and the failure is reported.
        if not new or result.level == "fallback" or contains_marker(new):
            entry.update(
                status="failed",
                reason="summarizer-fallback",
                error={"code": "SUMMARIZER_FAILED", "message": "the summarizer gave no usable text"},
            )
            continue
        if new == row["content"]:
            entry.update(status="unchanged")
            continue
        entry.update(newTokenCount=estimate_tokens(new), diff=_diff(sid, row["content"], new))
        if apply:
            try:
                entry["consumersUpdated"] = _write(conn, fts, row, new, model)
            except LcmError as exc:
                entry.update(status="failed", reason="state-changed", error=exc.to_dict())
                continue
            entry["status"] = "rewritten"
        else:
            entry["status"] = "would-rewrite"
        rewritten[sid] = new
    ctx.report_progress("rewrite", len(ordered), len(ordered))
    counts = {
        s: sum(1 for e in entries if e["status"] == s)
        for s in ("rewritten", "would-rewrite", "unchanged", "failed", "skipped")
    }
    data.update(applied=apply and bool(targets), counts=counts, summaries=entries)
    if not apply:
        data["message"] = "Dry run: nothing was written. Re-run with --apply to back up and write these."
    return Result(data, exit_status=1 if counts["failed"] else 0)
