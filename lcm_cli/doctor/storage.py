"""The file itself: `PRAGMA quick_check`, schema version, WAL size, and growth per day."""

from __future__ import annotations

import os
import shutil
from typing import Any

from lcm_cli.engine.db import schema
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped

WAL_WARN_BYTES = 64 * 1024 * 1024
GROWTH_WINDOW_DAYS = 30


def check_quick_check(source: ScanInput) -> Outcome:
    """`storage.quick-check`: SQLite's structural check of every page and index."""
    if not source.scope.whole:
        return skipped("database-wide check; runs only without --conversation-id/--session-key/--recency")
    rows = source.rows("PRAGMA quick_check(100)")
    problems = [r[0] for r in rows if r[0] != "ok"]
    return Outcome(affected=problems)


def check_schema_version(source: ScanInput) -> Outcome:
    """`storage.schema-version`: migrations this lcm would still apply, or steps it does not know."""
    known = {m.__name__ for m in schema.SCHEMA_MIGRATIONS}
    applied = schema.applied_migrations(source.conn)
    pending = [name for name in (m.__name__ for m in schema.SCHEMA_MIGRATIONS) if name not in applied]
    unknown = sorted(applied - known)
    notes: dict[str, str] = {name: "pending" for name in pending}
    notes.update({name: "unknown (written by a newer lcm)" for name in unknown})
    return Outcome(
        affected=pending + unknown,
        notes=notes,
        details={"known": sorted(known), "applied": sorted(applied & known), "newer": bool(unknown)},
    )


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def check_wal_size(source: ScanInput) -> Outcome:
    """`storage.wal-size`: a write-ahead log grown past 64 MiB (checkpoints are not keeping up)."""
    wal = _size(source.database_path + "-wal")
    db = _size(source.database_path)
    affected = [source.database_path + "-wal"] if wal > WAL_WARN_BYTES else []
    return Outcome(
        affected=affected, details={"walBytes": wal, "databaseBytes": db, "warnAboveBytes": WAL_WARN_BYTES}
    )


def growth_facts(source: ScanInput) -> dict[str, Any]:
    """Messages per day over the last 30 days, bytes per message, and a size forecast."""
    db = _size(source.database_path)
    page_size = source.rows("PRAGMA page_size")[0][0]
    free_pages = source.rows("PRAGMA freelist_count")[0][0]
    used = db - free_pages * page_size
    total = source.rows("SELECT COUNT(*) FROM messages")[0][0] if source.has("messages") else 0
    recent = 0
    if source.has("messages"):
        recent = source.rows(
            "SELECT COUNT(*) FROM messages WHERE julianday(created_at) >= julianday(?, 'unixepoch') - ?",
            [source.now_ms / 1000, GROWTH_WINDOW_DAYS],
        )[0][0]
    per_message = used / total if total else 0.0
    per_day = recent / GROWTH_WINDOW_DAYS * per_message
    try:
        free_disk: int | None = shutil.disk_usage(os.path.dirname(os.path.abspath(source.database_path))).free
    except OSError:
        free_disk = None
    days_left = int(free_disk / per_day) if free_disk is not None and per_day > 0 else None
    return {
        "databaseBytes": db,
        "freelistBytes": free_pages * page_size,
        "messages": total,
        "messagesLast30Days": recent,
        "messagesPerDay": round(recent / GROWTH_WINDOW_DAYS, 1),
        "bytesPerMessage": int(per_message),
        "bytesPerDay": int(per_day),
        "forecastBytes": {f"{d}d": int(db + per_day * d) for d in (30, 90, 365)},
        "freeDiskBytes": free_disk,
        "daysUntilDiskFull": days_left,
    }


def check_growth(source: ScanInput) -> Outcome:
    """`storage.growth`: database growth per day and a forecast; flags a disk full within 90 days."""
    if not source.scope.whole:
        return skipped("database-wide check; runs only without a selector")
    facts = growth_facts(source)
    days = facts["daysUntilDiskFull"]
    affected = [source.database_path] if days is not None and days < 90 else []
    return Outcome(affected=affected, details=facts)


#: Text columns read by every command, as (table, key column, column, id label).
TEXT_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("messages", "message_id", "content", "message"),
    ("summaries", "summary_id", "content", "summary"),
)


def undecodable_text(source: ScanInput) -> dict[str, dict[str, Any]]:
    """``message:12`` / ``summary:sum_…`` -> ``{table, id, column, badByteAt}`` for every
    stored TEXT value that is not valid UTF-8 (reads show it with U+FFFD)."""
    if "undecodable_text" in source.memo:
        cached: dict[str, dict[str, Any]] = source.memo["undecodable_text"]
        return cached
    found: dict[str, dict[str, Any]] = {}
    for table, key, column, label in TEXT_COLUMNS:
        if not source.has(table):
            continue
        clause, params = source.scope.clause("conversation_id")
        # CAST AS BLOB hands Python the stored bytes; ASCII (most rows) is settled in C.
        rows = source.conn.execute(
            f"SELECT {key}, CAST({column} AS BLOB) FROM {table} WHERE typeof({column}) = 'text'{clause}",
            params,
        )
        for row_id, raw in rows:
            if raw is None or raw.isascii():
                continue
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                found[f"{label}:{row_id}"] = {
                    "table": table,
                    "id": row_id,
                    "column": column,
                    "badByteAt": exc.start,
                }
    source.memo["undecodable_text"] = found
    return found


def check_undecodable_text(source: ScanInput) -> Outcome:
    """`storage.undecodable-text`: message or summary text that is not valid UTF-8."""
    found = undecodable_text(source)
    notes = {
        name: f"{v['table']}.{v['column']} is not valid UTF-8 (first bad byte at {v['badByteAt']})"
        for name, v in found.items()
    }
    by_table: dict[str, int] = {}
    for value in found.values():
        by_table[value["table"]] = by_table.get(value["table"], 0) + 1
    return Outcome(affected=sorted(found), notes=notes, details={"rowsByTable": by_table} if found else {})
