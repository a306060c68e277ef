"""The file itself: `PRAGMA quick_check`, schema version, WAL size, and growth per day."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from typing import Any

from lcm_cli.engine.db import schema
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, skipped

WAL_WARN_BYTES = 64 * 1024 * 1024
GROWTH_WINDOW_DAYS = 30
#: Files up to this size get the whole-file `quick_check` by default (a second or two).
WHOLE_FILE_CHECK_BYTES = 256 * 1024 * 1024
#: A bigger file is checked table by table until this much time is spent; --thorough reads it all.
QUICK_CHECK_BUDGET_MS = 3_000
MAX_PROBLEMS = 100
#: Tables that grow with the summaries (checked after the small ones) and with every message
#: (checked last, biggest last) when the check is bounded.
SUMMARY_TABLES = ("context_items", "large_files", "summaries", "summary_parents", "summaries_fts")
BULK_TABLES = (
    "summary_messages",
    "messages_fts_docsize",
    "messages_fts_idx",
    "messages_fts_config",
    "messages_fts_data",
    "messages_fts_content",
    "message_parts",
    "messages",
)
THOROUGH_NEXT = "lcm doctor --check storage.quick-check --thorough"


def thorough(source: ScanInput) -> bool:
    """True when the scan was asked for the full passes (``--thorough``)."""
    return bool(source.memo.get("options", {}).get("thorough"))


def check_quick_check(source: ScanInput) -> Outcome:
    """`storage.quick-check`: SQLite's structural check of every page and index.

    The whole file with ``--thorough`` or when the file is small; otherwise table by
    table (each with its indexes), the small ones first and the per-message bulk last,
    until :data:`QUICK_CHECK_BUDGET_MS` is spent. ``details`` then names the tables left
    unchecked (and the free-page list, which only the whole-file pass walks).
    """
    if not source.scope.whole:
        return skipped("database-wide check; runs only without --conversation-id/--session-key/--recency")
    if thorough(source) or _size(source.database_path) <= WHOLE_FILE_CHECK_BYTES:
        rows = source.rows(f"PRAGMA quick_check({MAX_PROBLEMS})")
        return Outcome(affected=[r[0] for r in rows if r[0] != "ok"])
    return _bounded_quick_check(source, QUICK_CHECK_BUDGET_MS)


def _check_order(source: ScanInput) -> list[str]:
    """Every table: the schema, the small tables, those that grow with the summaries, then
    the per-message bulk (biggest last), so a bounded check covers the most tables."""
    names = [
        r[0]
        for r in source.rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
        )
    ]
    bulk = [name for name in BULK_TABLES if name in names]
    grown = [n for n in names if n not in bulk and n.startswith(SUMMARY_TABLES)]
    small = [n for n in names if n not in bulk and n not in grown]
    return ["sqlite_master", *small, *grown, *bulk]


def _bounded_quick_check(source: ScanInput, budget_ms: int) -> Outcome:
    """`quick_check` table by table until ``budget_ms`` is spent. One table's check is a
    single SQLite step (a progress handler never runs inside it), so a timer interrupts it."""
    import threading

    conn = source.conn
    ends = time.monotonic() + budget_ms / 1000
    # quick_check(TABLE) is SQLite 3.33+; an older one can only try the whole file in the budget.
    per_table = sqlite3.sqlite_version_info >= (3, 33, 0)
    order = _check_order(source) if per_table else [""]
    problems: list[str] = []
    unchecked: list[str] = []
    guard = threading.Lock()
    running = [True]

    def interrupt() -> None:
        with guard:
            if running[0]:
                conn.interrupt()

    timer = threading.Timer(budget_ms / 1000, interrupt)
    timer.daemon = True
    timer.start()
    try:
        for name in order:
            if unchecked or time.monotonic() >= ends:
                unchecked.append(name)
                continue
            quoted = '"' + name.replace('"', '""') + '"'
            try:
                rows = conn.execute(f"PRAGMA quick_check({quoted if name else MAX_PROBLEMS})").fetchall()
            except sqlite3.OperationalError as exc:
                if "interrupted" not in str(exc):
                    raise
                unchecked.append(name)
                continue
            problems += [r[0] for r in rows if r[0] != "ok"][: MAX_PROBLEMS - len(problems)]
    finally:
        with guard:
            running[0] = False
        timer.cancel()
    if not per_table and not unchecked:
        return Outcome(affected=problems)  # the whole file fitted in the budget
    details: dict[str, Any] = {
        "bounded": True,
        "budgetMs": budget_ms,
        "checkedTables": sum(1 for n in order if n and n != "sqlite_master" and n not in unchecked),
        "uncheckedTables": [
            n or "every table (SQLite before 3.33 checks whole files only)" for n in unchecked
        ],
        "freelistChecked": False,
        "fullCheck": THOROUGH_NEXT,
    }
    return Outcome(affected=problems, details=details)


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


def check_read_indexes(source: ScanInput) -> Outcome:
    """`storage.read-indexes`: lcm's read-path indexes left unbuilt on a big table."""
    deferred = schema.deferred_indexes(source.conn)
    return Outcome(
        affected=[name for name, _ in deferred],
        notes={name: f"ON {target}" for name, target in deferred},
        details={"deferredAboveRows": schema.DEFERRED_INDEX_ROWS},
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


def check_change_log(source: ScanInput) -> Outcome:
    """`storage.change-log`: change records a killed command left in lcm.db, not yet in their change backup."""
    from lcm_cli.engine.maintenance.backup.changes import leftover_runs

    if not source.has("lcm_change_log"):
        return Outcome()
    every = leftover_runs(source.conn)
    # A run killed before it changed anything left only its start record: nothing to keep,
    # and the next command that takes a change backup removes it.
    runs = [item for item in every if item["changes"]]
    notes = {
        item["header"]["run"]: (
            f"`lcm {item['header'].get('command')}` (pid {item['header'].get('pid')}, gone) started "
            f"{item['header'].get('startedAt')}: {item['changes']} changes for {item['header'].get('path')}"
        )
        for item in runs
    }
    return Outcome(
        affected=sorted(notes),
        notes=notes,
        details={"changes": sum(item["changes"] for item in runs), "emptyRuns": len(every) - len(runs)},
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


#: A replica more than this behind lcm.db is a finding (Litestream syncs about every second).
REPLICATION_LAG_WARN_SECONDS = 60.0


def check_replication(source: ScanInput) -> Outcome:
    """`storage.replication`: Litestream's position against lcm.db's, when its state is beside it."""
    from lcm_cli.engine.maintenance.replication import lag, replication_state

    state = replication_state(source.database_path)
    if state is None:
        # Nothing to lag behind: a file without a replicator is not a check that could not run.
        return Outcome(details={"replicator": None, "looked": ".<name>-litestream/ beside the database"})
    behind = lag(source.database_path, state)
    details = {
        key: state[key]
        for key in (
            "stateDir",
            "localTxid",
            "localLtxFiles",
            "configPath",
            "replicaType",
            "replicaPath",
            "replicaTxid",
        )
    }
    details.update(behind)
    details["warnAboveSeconds"] = REPLICATION_LAG_WARN_SECONDS
    late = [
        what
        for what, seconds in (("local", behind["secondsBehind"]), ("replica", behind["replicaSecondsBehind"]))
        if seconds is not None and seconds > REPLICATION_LAG_WARN_SECONDS
    ]
    notes = {
        source.database_path: (
            f"Litestream's newest LTX file is {behind['secondsBehind']} s older than the last write"
            if "local" in late
            else f"the replica's newest LTX file is {behind['replicaSecondsBehind']} s older than the local one"
        )
    }
    return Outcome(
        affected=[source.database_path] if late else [], details=details, notes=notes if late else {}
    )
