"""`lcm vacuum`: give the space of deleted rows back to the file system, without making the
live agent wait, and the one offline step that makes that possible.

SQLite keeps the pages deleted rows free up inside the file (the free list) for later
writes. Two ways to give them back:

* **Online, in steps** (``lcm vacuum --apply``, ``prune --apply --vacuum``, ``doctor clean
  --apply --vacuum``): on a file with ``auto_vacuum = INCREMENTAL``, bounded
  ``PRAGMA incremental_vacuum(N)`` transactions (about 25 ms of write lock each, with pauses between) move pages
  from the end of the file into free slots, then a passive checkpoint (which never blocks
  writers) lets the file shrink. Memory stays at the page cache's size.
* **Offline, once** (``lcm vacuum --full --apply``): a file lossless-claw made has
  ``auto_vacuum = NONE``, which only a full ``VACUUM`` can change. It rewrites the whole
  file in one transaction that locks every writer out (about 20 s per GB here), so it
  refuses (``DATABASE_IN_USE``, as ``backup restore`` does) while another process has
  the file open, and runs with the database in rollback-journal mode (which SQLite only
  allows with no other connection) and with its temporary copy on disk beside the
  database (``temp_store = FILE``), not in memory. A kill part-way leaves a hot journal
  that the next open rolls back: the file as it was. The file is rebuilt in place, never
  swapped for another one, so no process can be left writing to a replaced file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import APPLY, FULL_VACUUM, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db import steps
from lcm_cli.engine.db.connection import connect, require_sqlite_file, translate_sqlite_error
from lcm_cli.engine.maintenance.replication import replication_active_error, replication_state

AUTO_VACUUM = {0: "none", 1: "full", 2: "incremental"}
#: Pages the first incremental step frees; each next step is sized from the last one's time.
FIRST_STEP_PAGES = 256
#: How fast a full VACUUM rewrites a file here (measured: 875 MB in 17 s on 2 cores), for
#: the estimate it gives before it runs. Slower disks take longer.
FULL_VACUUM_BYTES_PER_SECOND = 50 * 1000 * 1000
#: How long the offline step waits for the file's other users before it says "in use".
_IN_USE_TIMEOUT_MS = 2000
#: The WAL left after the online steps is cut back to this when this connection resets it.
_WAL_LIMIT_BYTES = 64 * 1024 * 1024


def file_facts(conn: sqlite3.Connection, database_path: str) -> dict[str, Any]:
    """Auto-vacuum mode, sizes and free pages of the open file."""
    page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    mode = int(conn.execute("PRAGMA auto_vacuum").fetchone()[0])
    return {
        "autoVacuum": AUTO_VACUUM.get(mode, str(mode)),
        "pageSize": page_size,
        "pages": pages,
        "freePages": free,
        "freeBytes": free * page_size,
        "usedBytes": (pages - free) * page_size,
        "fileBytes": _size(database_path),
        "walBytes": _size(database_path + "-wal"),
    }


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def full_vacuum_seconds(used_bytes: int) -> int:
    """Roughly how long the offline ``VACUUM`` of a file with ``used_bytes`` in use takes."""
    return max(1, round(used_bytes / FULL_VACUUM_BYTES_PER_SECOND))


def _full_vacuum_hint(facts: dict[str, Any]) -> str:
    return (
        f"This file has auto_vacuum = {facts['autoVacuum'].upper()}: the freed space can only be given back "
        "online once the file has incremental auto-vacuum. Switch it once, offline: stop the agent host, "
        f"then run `lcm vacuum --full --apply` (it locks every writer out for about "
        f"{full_vacuum_seconds(facts['usedBytes'])} s at this size)."
    )


def give_back_space(
    conn: sqlite3.Connection,
    database_path: str,
    *,
    step_seconds: float = steps.STEP_SECONDS,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Return the free pages to the file system in bounded steps, when the file allows it.

    ``conn`` is a writable connection outside any transaction. With ``auto_vacuum =
    INCREMENTAL``: one ``BEGIN IMMEDIATE`` + ``PRAGMA incremental_vacuum(N)`` per step, N
    sized to hold the lock about ``step_seconds``; then a passive checkpoint, which
    shrinks the file once no reader holds older pages. Otherwise nothing is written and
    the answer says why (``FULL`` already gives space back at every commit; ``NONE``
    needs the offline ``lcm vacuum --full`` once).
    """
    before = file_facts(conn, database_path)
    result: dict[str, Any] = {
        "autoVacuum": before["autoVacuum"],
        "fileBytesBefore": before["fileBytes"],
        "freePagesBefore": before["freePages"],
    }
    if before["autoVacuum"] != "incremental":
        result.update(
            applied=False,
            fileBytesAfter=before["fileBytes"],
            reason=(
                "auto_vacuum = FULL gives freed pages back at every commit: nothing left to do."
                if before["autoVacuum"] == "full"
                else _full_vacuum_hint(before)
            ),
        )
        return result
    conn.execute(f"PRAGMA journal_size_limit = {_WAL_LIMIT_BYTES}")
    # Checkpoints run between steps, not inside a COMMIT: the time measured is the lock's.
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    pages = FIRST_STEP_PAGES
    taken = 0
    longest = 0.0
    freed = 0
    total = before["freePages"]
    while True:
        free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        if free == 0:
            break
        started = time.perf_counter()
        try:
            # A script runs each statement to its end; the sqlite3 module's execute() stops
            # PRAGMA incremental_vacuum after its first step, which frees one page.
            conn.executescript(f"BEGIN IMMEDIATE; PRAGMA incremental_vacuum({int(pages)}); COMMIT;")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        held = time.perf_counter() - started
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        taken += 1
        longest = max(longest, held)
        left = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        freed += max(0, free - left)
        if progress is not None:
            progress(min(freed, total), total)
        if left >= free:
            break  # another writer is reusing the free pages as fast: they are in use again
        steps.yield_to_writers(held)
        pages = steps.next_step_size(pages, held, step_seconds, floor=16, ceiling=262_144)
    conn.execute("PRAGMA wal_autocheckpoint = 1000")
    checkpoint = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    result.update(
        applied=True,
        pagesFreed=freed,
        steps=taken,
        longestStepMs=round(longest * 1000, 1),
        checkpoint={"busy": checkpoint[0], "logFrames": checkpoint[1], "checkpointed": checkpoint[2]},
        fileBytesAfter=_size(database_path),
    )
    return result


def _in_use_error(database_path: str, found: dict[str, Any]) -> LcmError:
    holder = f" (process {found['holderPid']})" if found.get("holderPid") else ""
    return LcmError(
        "DATABASE_IN_USE",
        f"{database_path} is open in another process{holder}. `lcm vacuum --full` rewrites the whole file "
        "and locks every writer out meanwhile, so it runs only when nothing else has the file open: stop "
        "the agent host (OpenClaw gateway) and any `lcm serve`, then run it again. Nothing was changed.",
        {
            "databasePath": database_path,
            "holderPid": found.get("holderPid"),
            "detection": found.get("detection"),
        },
    )


def _open(database_path: str, timeout_ms: int) -> sqlite3.Connection:
    require_sqlite_file(database_path)
    conn = connect(database_path, timeout_ms=timeout_ms)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
    return conn


def _refusal(database_path: str, found: dict[str, Any], replicated: dict[str, Any] | None) -> LcmError:
    """The in-use refusal; beside Litestream, the one that names its safe sequence."""
    if replicated is not None:
        return replication_active_error(
            database_path, replicated, found.get("holderPid"), "lcm vacuum --full --apply"
        )
    return _in_use_error(database_path, found)


def full_vacuum(database_path: str, timeout_ms: int) -> dict[str, Any]:
    """The offline step: rewrite the file with ``auto_vacuum = INCREMENTAL`` (see the module doc).

    Refuses with ``DATABASE_IN_USE`` when another process (or another connection of this
    one) has the file open.
    """
    from lcm_cli.engine.maintenance.backup.restore import in_use  # one definition of "in use"

    found = in_use(database_path)
    replicated = replication_state(database_path)
    if found.get("inUse"):
        raise _refusal(database_path, found, replicated)
    started = time.perf_counter()
    conn = _open(database_path, min(timeout_ms, _IN_USE_TIMEOUT_MS))
    try:
        before = file_facts(conn, database_path)
        try:
            # Leaving WAL mode needs every other connection closed: the last in-use check,
            # and a rollback journal makes a killed VACUUM roll back on the next open.
            mode = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise _refusal(database_path, found, replicated) from None
            raise
        if mode != "delete":
            raise _refusal(database_path, found, replicated)
        conn.execute("PRAGMA temp_store = FILE")
        conn.execute("PRAGMA cache_size = -16384")
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        directory = os.path.dirname(os.path.abspath(database_path))
        # The temporary copy goes beside the database (where the space is), not to /tmp,
        # which may be memory. The setting is process-wide: put back right after.
        with contextlib.suppress(sqlite3.Error):
            conn.execute(f"PRAGMA temp_store_directory = '{directory.replace(chr(39), chr(39) * 2)}'")
        locked_from = time.perf_counter()
        try:
            conn.execute("VACUUM")
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("PRAGMA temp_store_directory = ''")
        locked_for = time.perf_counter() - locked_from
        conn.execute("PRAGMA journal_mode = WAL")
        after = file_facts(conn, database_path)
    except sqlite3.Error as exc:
        raise translate_sqlite_error(exc, database_path, timeout_ms) from None
    finally:
        conn.close()
    return {
        "autoVacuumBefore": before["autoVacuum"],
        "autoVacuum": after["autoVacuum"],
        "fileBytesBefore": before["fileBytes"],
        "fileBytesAfter": _size(database_path),
        "freePagesBefore": before["freePages"],
        "lockedOutMs": round(locked_for * 1000),
        "totalMs": round((time.perf_counter() - started) * 1000),
    }


@operation("vacuum")
def vacuum(ctx: Context, req: Request) -> Result:
    """Report the free space; with ``--apply`` give it back online, or with ``--full`` offline."""
    facts = file_facts(ctx.db, ctx.database_path)
    full = req[FULL_VACUUM]
    data: dict[str, Any] = {"applied": False, "full": full, **facts}
    if full:
        data["estimatedLockedOutSeconds"] = full_vacuum_seconds(facts["usedBytes"])
        data["needsFreeBytes"] = facts["usedBytes"] * 2
        data["plan"] = (
            "offline: rewrite the whole file with auto_vacuum = INCREMENTAL, every writer locked out "
            f"for about {data['estimatedLockedOutSeconds']} s; refused while another process has the file open"
        )
    elif facts["autoVacuum"] == "incremental":
        data["plan"] = (
            "online: give the free pages back in steps of about 25 ms of write lock each, with pauses between"
        )
    elif facts["autoVacuum"] == "full":
        data["plan"] = "nothing: auto_vacuum = FULL gives freed pages back at every commit"
    else:
        data["plan"] = "nothing online: " + _full_vacuum_hint(facts)
    if not req[APPLY]:
        return Result(data)
    ctx.close()
    if full:
        data.update(applied=True, **full_vacuum(ctx.database_path, ctx.timeout_ms))
        return Result(data)
    try:
        conn = _open(ctx.database_path, ctx.timeout_ms)
        try:
            done = give_back_space(
                conn, ctx.database_path, progress=lambda d, t: ctx.report_progress("vacuum", d, t)
            )
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise translate_sqlite_error(exc, ctx.database_path, ctx.timeout_ms) from None
    data.update(done)
    return Result(data)
