"""`lcm prune` and `lcm prune restore`: shrink lcm.db safely, and undo it.

Prune picks conversations (by age, class, id, or oldest-first until a size fits), writes
them to a checksummed archive from one read snapshot, verifies the archive, checks nothing
changed since the snapshot, then deletes exactly the archived rows in batches of about
25 ms of write lock each (``prune.delete_in_batches``), so the live agent never waits
long; ``--vacuum`` then gives the freed pages back in bounded steps when the file has
incremental auto-vacuum (``vacuum.py``). Dry run by default.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from datetime import datetime, timezone
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import (
    APPLY,
    CONVERSATION_CLASS,
    INCLUDE_ACTIVE,
    MAX_DB_SIZE,
    OUT,
    PRUNE_BEFORE,
    VACUUM,
    Request,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.core.timefilter import parse_when, to_iso_ms
from lcm_cli.engine.db.connection import connect, require_sqlite_file, translate_sqlite_error
from lcm_cli.engine.maintenance import prune
from lcm_cli.engine.maintenance.vacuum import give_back_space
from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables

CLASSES = ("archived_subagents", "cron_sessions", "null_subagent_context", "orphaned")
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4}


def parse_size(text: str) -> int:
    """Bytes in ``500MB``, ``2GiB``, ``1.5g``, ``1048576`` (decimal units; ``i`` = binary)."""
    match = _SIZE.match(text)
    if not match:
        raise invalid_argument(
            f"Invalid --max-db-size value {text!r}: expected a size like 500MB or 2GiB.", {"value": text}
        )
    unit = (match.group(2) or "").lower()
    binary = "i" in unit
    letter = unit[:1] if unit[:1] in "kmgt" and unit else ""
    factor = 1024 ** "kmgt".index(letter) * 1024 if binary and letter else _UNITS[letter]
    return int(float(match.group(1)) * factor)


def parse_before(text: str, now_ms: int) -> str:
    """``--before``: lcm's time grammar (a duration back from now, a date or a timestamp); the ISO cutoff."""
    return to_iso_ms(parse_when(text, "--before", now_ms=now_ms))


def _class_members(ctx: Context, classes: list[str]) -> set[int]:
    # The doctor's class rules (every configured agent id), evaluated on the read handle.
    from lcm_cli.engine.maintenance.findings import Scope
    from lcm_cli.engine.maintenance.junk import class_conversations, scan_input

    source = scan_input(ctx, Scope())
    found: set[int] = set()
    for name in classes:
        found.update(class_conversations(source, name))
    return found


def select_candidates(ctx: Context, req: Request, now_ms: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The conversations prune would remove, oldest activity first, with size estimates."""
    require_lcm_tables(ctx)
    classes = list(req[CONVERSATION_CLASS] or [])
    for name in classes:
        if name not in CLASSES:
            raise invalid_argument(
                f"Invalid --class value {name!r}: expected one of {', '.join(CLASSES)}.", {"value": name}
            )
    before = req[PRUNE_BEFORE]
    max_size_text = req[MAX_DB_SIZE]
    if not (before or max_size_text or req.selector or classes):
        raise invalid_argument(
            "Say what to prune: --before DURATION|TIMESTAMP, --max-db-size SIZE, --class CLASS or "
            "--conversation-id ID (see `lcm prune --help`).",
        )
    include_active = req[INCLUDE_ACTIVE]
    probe = ctx.probe
    has_active = probe.has_column("conversations", "active")
    cutoff = parse_before(before, now_ms) if before else None
    max_size = parse_size(max_size_text) if max_size_text else None

    key = probe.col("conversations", "session_key", prefix="c.")
    active = "c.active" if has_active else "1"
    rows = ctx.query(
        f"""SELECT c.conversation_id, {key}, {active} AS active, c.created_at,
                   COALESCE((SELECT m.created_at FROM messages m WHERE m.conversation_id = c.conversation_id
                             ORDER BY m.seq DESC LIMIT 1), c.updated_at, c.created_at) AS last_activity,
                   (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id) AS messages
            FROM conversations c ORDER BY julianday(last_activity), c.conversation_id"""
    )
    last_jd = ctx.query(
        """SELECT c.conversation_id, julianday(COALESCE((SELECT m.created_at FROM messages m
              WHERE m.conversation_id = c.conversation_id ORDER BY m.seq DESC LIMIT 1), c.updated_at, c.created_at))
            FROM conversations c"""
    )
    named: int | None = None
    if req.selector is not None:
        named = int(find_conversation(ctx, req.selector)["conversation_id"])
    members = _class_members(ctx, classes) if classes else None
    cutoff_jd: float | None = None
    if cutoff is not None:
        found = ctx.query_one("SELECT julianday(?)", (cutoff,))
        cutoff_jd = found[0] if found is not None else None
    jd_of = {r[0]: r[1] for r in last_jd}
    excluded_active: list[int] = []
    candidates = []
    for row in rows:
        cid = row["conversation_id"]
        if named is not None and cid != named:
            continue
        if members is not None and cid not in members:
            continue
        if cutoff_jd is not None:
            jd = jd_of.get(cid)
            if jd is None or jd >= cutoff_jd:
                continue
        if row["active"] == 1 and not include_active:
            excluded_active.append(cid)
            continue
        candidates.append(
            {
                "conversationId": cid,
                "sessionKey": row["session_key"],
                "active": row["active"] == 1,
                "lastActivityAt": row["last_activity"],
                "messages": row["messages"],
            }
        )
    if named is not None and excluded_active == [named]:
        raise invalid_argument(
            f"Conversation {named} is active; add --include-active to prune it anyway.",
            {"conversationId": named},
        )
    size = os.path.getsize(ctx.database_path)
    used = _used(ctx)
    total_messages = ctx.query_one("SELECT COUNT(*) FROM messages")
    per_message = used / total_messages[0] if total_messages and total_messages[0] else 0.0
    for item in candidates:
        item["estimatedBytes"] = int(item["messages"] * per_message)
    if max_size is not None:
        chosen, running = [], used
        for item in candidates:
            if running <= max_size:
                break
            chosen.append(item)
            running -= item["estimatedBytes"]
        candidates = chosen
    facts = {
        "cutoff": cutoff,
        "maxDbSizeBytes": max_size,
        "classes": classes,
        "includeActive": include_active,
        "databaseBytes": size,
        "usedBytes": used,
        "skippedActive": len(excluded_active),
    }
    return candidates, facts


def _used(ctx: Context) -> int:
    page_size = ctx.query_one("PRAGMA page_size")
    pages = ctx.query_one("PRAGMA page_count")
    free = ctx.query_one("PRAGMA freelist_count")
    assert page_size is not None and pages is not None and free is not None
    return int((pages[0] - free[0]) * page_size[0])


def _default_archive(database_path: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")[:-3] + "Z"
    return os.path.join(
        os.path.dirname(os.path.abspath(database_path)),
        f"{os.path.basename(database_path)}.prune-{stamp}.jsonl.gz",
    )


def _open_writer(path: str, timeout_ms: int) -> sqlite3.Connection:
    require_sqlite_file(path)
    conn = connect(path, timeout_ms=timeout_ms)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    # Staged ids and rowids live in temp tables: on disk, so memory stays bounded at any size.
    conn.execute("PRAGMA temp_store = FILE")
    conn.execute("PRAGMA cache_size = -65536")
    return conn


def _fingerprint(conn: sqlite3.Connection) -> dict[str, int]:
    """Row counts of everything staged: equal before and after means nothing moved meanwhile."""
    return {
        table: int(conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()[0])
        for table, where in prune.archived_tables(conn)
    }


@operation("prune")
def prune_conversations(ctx: Context, req: Request) -> Result:
    """Select, archive, verify, delete in bounded batches, optionally give the space back."""
    now_ms = int(time.time() * 1000)
    # Checked before the dry run too, so a refused --out is said at once.
    out = req[OUT]
    target = prune.archive_target(out, ctx.protected_files()) if out else None
    candidates, facts = select_candidates(ctx, req, now_ms)
    ids = [c["conversationId"] for c in candidates]
    estimate = sum(c["estimatedBytes"] for c in candidates)
    data: dict[str, Any] = {
        "applied": False,
        **facts,
        "conversations": candidates,
        "conversationCount": len(ids),
        "messageCount": sum(c["messages"] for c in candidates),
        "estimatedReclaimBytes": estimate,
    }
    if not req[APPLY] or not ids:
        return Result(data)
    ctx.close()
    if target is None:
        target = prune.archive_target(_default_archive(ctx.database_path), ctx.protected_files())
    path = target.path
    started = time.perf_counter()
    try:
        conn = _open_writer(ctx.database_path, ctx.timeout_ms)
    except sqlite3.Error as exc:
        raise translate_sqlite_error(exc, ctx.database_path, ctx.timeout_ms) from None
    deleted: dict[str, int] = {}
    try:
        before_used = prune.used_bytes(conn)
        # 1. Archive from one read snapshot (the live writer is not blocked meanwhile), and
        #    note the rowid of every row archived: those, and only those, are deleted.
        conn.execute("BEGIN")
        try:
            prune.stage_ids(conn, ids)
            snapshot = _fingerprint(conn)
            ctx.report_progress("archiving", 0, data["messageCount"])
            archive = prune.write_archive(
                conn,
                ids,
                target,
                database_path=ctx.database_path,
                progress=lambda n: ctx.report_progress("archiving", n, data["messageCount"]),
            )
            prune.stage_rows(conn)
            conn.execute("COMMIT")  # a read of the database; it keeps the temp tables staged
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        archived_at = time.perf_counter()
        # 2. Verify what is on disk before deleting anything.
        verified = prune.verify_archive(path)
        verified_at = time.perf_counter()
        # 3. Nothing changed since the snapshot (a read: no lock taken)...
        conn.execute("BEGIN")
        try:
            changed = _fingerprint(conn) != snapshot
        finally:
            conn.execute("ROLLBACK")
        if changed:
            raise _changed(
                path,
                "The selected conversations changed while they were being archived; nothing was deleted.",
            )
        # 4. ...then delete in batches of about 25 ms of write lock each (with pauses), children first.
        conn.execute("PRAGMA foreign_keys = OFF")  # see prune.delete_staged
        batches: list[dict[str, Any]] = []
        try:
            deleted = prune.delete_in_batches(
                conn,
                progress=lambda done, total: ctx.report_progress("deleting", done, total),
                on_batch=batches.append,
            )
        except prune.BatchError as exc:
            deleted = exc.deleted
            raise exc.error from None
        conn.execute("PRAGMA foreign_keys = ON")
        kept = deleted.pop("kept", 0)
        if kept:
            raise _changed(
                path,
                f"{kept} rows of the selected conversations changed while they were being deleted and were "
                "kept; everything deleted is in the archive.",
                deleted,
            )
        deleted_at = time.perf_counter()
        after_used = prune.used_bytes(conn)
        vacuum: dict[str, Any] | None = None
        if req[VACUUM]:
            vacuum = give_back_space(
                conn,
                ctx.database_path,
                progress=lambda done, total: ctx.report_progress("vacuum", done, total),
            )
    except sqlite3.Error as exc:
        err = translate_sqlite_error(exc, ctx.database_path, ctx.timeout_ms)
        if os.path.exists(path) and isinstance(err.details, dict):
            if deleted:
                # Part was deleted (all of it is in the archive); a rerun deletes the rest.
                err = LcmError(
                    err.code,
                    err.message + f" Part of the selection was deleted (every deleted row is in the archive "
                    f"{path}); run the same prune again to finish.",
                    {**err.details, "archivePath": path, "deleted": deleted},
                )
            else:
                # Nothing was deleted; the archive already written stays valid and says so.
                err = LcmError(
                    err.code,
                    err.message + f" Nothing was deleted; the archive {path} was written and can be removed.",
                    {**err.details, "archivePath": path, "deleted": False},
                )
        raise err from None
    finally:
        conn.close()
    data.update(
        applied=True,
        archive={k: archive[k] for k in ("archivePath", "manifestPath", "bytes", "sha256", "rows")},
        verified=verified["ok"],
        deleted=deleted,
        deleteBatches=len(batches),
        reclaimedBytes=max(0, before_used - after_used),
        vacuum=vacuum,
        timingsMs={
            "archive": int((archived_at - started) * 1000),
            "verify": int((verified_at - archived_at) * 1000),
            "delete": int((deleted_at - verified_at) * 1000),
            "longestDeleteBatch": int(max((b["seconds"] for b in batches), default=0.0) * 1000),
            "total": int((time.perf_counter() - started) * 1000),
        },
    )
    data.pop("message", None)
    return Result(data)


def _changed(path: str, what: str, deleted: dict[str, int] | None = None) -> LcmError:
    return LcmError(
        "STATE_CHANGED",
        f"{what} Run `lcm prune` again (the archive {path} "
        + ("holds every deleted row)." if deleted else "can be removed)."),
        {"archivePath": path, "deleted": deleted or False},
    )


@operation("prune.restore")
def restore(ctx: Context, req: Request) -> Result:
    """Verify the archive, then insert its rows that are missing, in one transaction."""
    (path,) = req.args
    verified = prune.verify_archive(path)
    data: dict[str, Any] = {"applied": False, **verified}
    if not req[APPLY]:
        data["message"] = "Dry run: the archive verified; re-run with --apply to restore it."
        return Result(data)
    ctx.close()
    try:
        conn = _open_writer(ctx.database_path, ctx.timeout_ms)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = prune.restore_rows(conn, path)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise translate_sqlite_error(exc, ctx.database_path, ctx.timeout_ms) from None
    data.update(applied=True, **result)
    return Result(data)
