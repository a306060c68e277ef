"""`lcm doctor apply`: repair what the scan found, dry run by default.

Each repair is a *unit* (one conversation's context, one FTS table, one conversation's
debt, ...). The plan is computed from the read-only scan; with ``--apply`` every unit
re-computes its changes inside its own ``BEGIN IMMEDIATE`` transaction (so a write that
raced the scan is seen) and commits or rolls back alone, under a change backup of the rows
the units change (``--backup full``: a copy of the whole database first; a schema
migration, which no row change undoes, always takes the copy).
The report lists every change, per unit.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lcm_cli.doctor import context as context_checks
from lcm_cli.doctor import dag, fts, maintenance, pending
from lcm_cli.doctor.checks import BY_ID
from lcm_cli.doctor.resummarize import planned as planned_summaries
from lcm_cli.doctor.resummarize import repair_order, resummarize
from lcm_cli.doctor.scan import resolve_scope, select_checks
from lcm_cli.doctor.writer import backup_first, busy_error, is_busy, open_writer, unit_of_work
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import APPLY, BACKUP, CHECK, NO_BACKUP, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.pending_state import invalidate_open_batches, stale_batches
from lcm_cli.engine.db.probe import SchemaProbe
from lcm_cli.engine.maintenance.backup.changes import capture_changes, choose_mode
from lcm_cli.engine.maintenance.findings import ScanInput, Scope
from lcm_cli.engine.maintenance.junk import scan_input

REPAIRABLE = (
    "summaries.markers",
    "dag.descendant-counts",
    "context.ordinals",
    "context.dangling",
    "context.duplicates",
    "fts.messages",
    "fts.summaries",
    "fts.summaries-cjk",
    "maintenance.stale",
    "maintenance.stuck",
    "pending.open-batches",
    "storage.undecodable-text",
    "storage.schema-version",
    "storage.wal-size",
    "storage.read-indexes",
    "storage.change-log",
)
#: Repairs that lock writers out for seconds on a big file: run only when named by --check.
NAMED_ONLY = ("storage.read-indexes",)
_FTS_TABLES = {
    "fts.messages": "messages_fts",
    "fts.summaries": "summaries_fts",
    "fts.summaries-cjk": "summaries_fts_cjk",
}
_MAINT = maintenance.TABLE

Plan = Callable[[ScanInput], list[dict[str, Any]]]
Write = Callable[[sqlite3.Connection, list[dict[str, Any]]], None]


@dataclass
class Unit:
    """One independently committed repair."""

    unit: str
    check: str
    conversation_id: int | None
    plan: Plan
    write: Write
    transactional: bool = True

    def describe(self) -> dict[str, Any]:
        """The unit's identity in the report (``destructive`` when it rewrites history)."""
        found = {"unit": self.unit, "check": self.check, "conversationId": self.conversation_id}
        destructive = any(BY_ID[check].destructive for check in self.check.split(","))
        return {**found, "destructive": True} if destructive else found


def _only_conversation(source: ScanInput) -> int | None:
    """The one conversation a per-conversation unit is scoped to."""
    ids = source.scope.conversation_ids or []
    return ids[0] if len(ids) == 1 else None


# --------------------------------------------------------------------------- context


def _context_plan(checks: set[str]) -> Plan:
    def plan(source: ScanInput) -> list[dict[str, Any]]:
        changes: list[dict[str, Any]] = []
        drop: set[int] = set()
        if "context.dangling" in checks:
            for item in context_checks.dangling_items(source).values():
                drop.add(item["ordinal"])
                changes.append(
                    {
                        "action": "delete-item",
                        "ordinal": item["ordinal"],
                        "reason": item["problem"],
                        "ref": item["ref"],
                    }
                )
        if "context.duplicates" in checks:
            for item in context_checks.duplicate_items(source).values():
                if item["ordinal"] not in drop:
                    drop.add(item["ordinal"])
                    changes.append(
                        {
                            "action": "delete-item",
                            "ordinal": item["ordinal"],
                            "reason": "duplicate",
                            "ref": item["ref"],
                        }
                    )
        cid = _only_conversation(source)
        ordinals = [
            r[0]
            for r in source.rows(
                "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal", [cid]
            )
        ]
        kept = [o for o in ordinals if o not in drop]
        if kept != list(range(len(kept))) and (drop or "context.ordinals" in checks):
            changes.append({"action": "renumber", "from": kept, "to": f"0..{len(kept) - 1}"})
        return changes

    return plan


def _context_write(conversation_id: int) -> Write:
    def write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
        if changes:
            invalidate_open_batches(conn, conversation_id, "context repaired by lcm doctor apply")
        for change in changes:
            if change["action"] == "delete-item":
                conn.execute(
                    "DELETE FROM context_items WHERE conversation_id = ? AND ordinal = ?",
                    (conversation_id, change["ordinal"]),
                )
        if any(c["action"] == "renumber" for c in changes):
            # Two passes through negative ordinals: the primary key never sees a clash.
            conn.execute(
                "UPDATE context_items SET ordinal = -1 - ordinal WHERE conversation_id = ?",
                (conversation_id,),
            )
            rows = conn.execute(
                "SELECT ordinal FROM context_items WHERE conversation_id = ? ORDER BY ordinal DESC",
                (conversation_id,),
            ).fetchall()
            for new, (old,) in enumerate(rows):
                conn.execute(
                    "UPDATE context_items SET ordinal = ? WHERE conversation_id = ? AND ordinal = ?",
                    (new, conversation_id, old),
                )

    return write


# --------------------------------------------------------------------------- DAG counts


def _descendants_plan(source: ScanInput) -> list[dict[str, Any]]:
    """Bottom-up recomputation of descendant counts for one conversation (in memory)."""
    cid = _only_conversation(source)
    rows = source.rows(
        "SELECT summary_id, kind, depth, token_count, descendant_count, descendant_token_count FROM summaries "
        "WHERE conversation_id = ? ORDER BY depth, summary_id",
        [cid],
    )
    nodes = {r["summary_id"]: dict(r) for r in rows}
    sources: dict[str, list[str]] = {}
    for sid, pid in source.rows(
        "SELECT sp.summary_id, sp.parent_summary_id FROM summary_parents sp JOIN summaries s ON s.summary_id = sp.summary_id "
        "WHERE s.conversation_id = ?",
        [cid],
    ):
        sources.setdefault(sid, []).append(pid)
    computed: dict[str, tuple[int, int]] = {}

    def value(sid: str, seen: frozenset[str]) -> tuple[int, int]:
        if sid in computed:
            return computed[sid]
        node = nodes.get(sid)
        if node is None or sid in seen:  # foreign or cyclic: keep what is stored
            return (node["descendant_count"], node["descendant_token_count"]) if node else (0, 0)
        count = tokens = 0
        if node["kind"] == "condensed":
            for pid in sources.get(sid, []):
                child = nodes.get(pid)
                if child is None:
                    continue
                c_count, c_tokens = value(pid, seen | {sid})
                count += c_count + 1
                tokens += child["token_count"] + c_tokens
        computed[sid] = (count, tokens)
        return computed[sid]

    changes = []
    for sid, node in nodes.items():
        count, tokens = value(sid, frozenset())
        if (count, tokens) != (node["descendant_count"], node["descendant_token_count"]):
            changes.append(
                {
                    "action": "set-descendants",
                    "summaryId": sid,
                    "from": [node["descendant_count"], node["descendant_token_count"]],
                    "to": [count, tokens],
                }
            )
    return changes


def _descendants_write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
    for change in changes:
        conn.execute(
            "UPDATE summaries SET descendant_count = ?, descendant_token_count = ? WHERE summary_id = ?",
            (change["to"][0], change["to"][1], change["summaryId"]),
        )


# --------------------------------------------------------------------------- FTS


def _fts_plan(check_id: str) -> Plan:
    table = _FTS_TABLES[check_id]

    def plan(source: ScanInput) -> list[dict[str, Any]]:
        if not source.has(table):
            return []
        if table == "messages_fts":
            problems: dict[Any, str] = dict(fts.message_fts_problems(source))
        else:
            problems = dict(fts.summary_fts_problems(source, table))
        if not problems:
            return []
        return [
            {
                "action": "reindex",
                "table": table,
                "problems": {str(k): v for k, v in sorted(problems.items())},
            }
        ]

    return plan


def _fts_write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
    for change in changes:
        table = change["table"]
        if table == "messages_fts":
            result = fts.repair_messages_fts(conn, {int(k): v for k, v in change["problems"].items()})
        else:
            result = fts.repair_summary_fts(conn, table, dict(change["problems"]))
        change.update(result)


# --------------------------------------------------------------------------- maintenance debt


def _maintenance_plan(check_id: str) -> Plan:
    def plan(source: ScanInput) -> list[dict[str, Any]]:
        found = (
            maintenance.stale_debt(source)
            if check_id == "maintenance.stale"
            else maintenance.stuck_debt(source)
        )
        cid = _only_conversation(source)
        if cid not in found:
            return []
        revision = (
            source.rows(f"SELECT maintenance_revision FROM {_MAINT} WHERE conversation_id = ?", [cid])[0][0]
            if source.probe.has_column(_MAINT, "maintenance_revision")
            else None
        )
        action = "close-debt" if check_id == "maintenance.stale" else "clear-running"
        return [{"action": action, "revision": revision, "reason": found[cid]}]

    return plan


def _maintenance_write(conversation_id: int) -> Write:
    def write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
        probe = SchemaProbe(conn)
        for change in changes:
            sets = ["running = 0", "updated_at = datetime('now')"]
            params: list[Any] = []
            if change["action"] == "close-debt":
                sets.append("pending = 0")
                if probe.has_column(_MAINT, "resolution_reason"):
                    sets += ["resolution_reason = 'operator-ignored'", "resolved_at = ?"]
                    params.append(time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()))
            guard = ""
            if change["revision"] is not None:
                sets.append("maintenance_revision = maintenance_revision + 1")
                guard = " AND maintenance_revision = ?"
            sql = f"UPDATE {_MAINT} SET {', '.join(sets)} WHERE conversation_id = ?{guard}"
            params.append(conversation_id)
            if change["revision"] is not None:
                params.append(change["revision"])
            if conn.execute(sql, params).rowcount != 1:
                raise LcmError(
                    "STATE_CHANGED", f"Compaction debt of conversation {conversation_id} changed meanwhile."
                )

    return write


# --------------------------------------------------------------------------- 1.0 pending batches

STALE_BY_DOCTOR = "closed by lcm doctor apply: left open over 24 hours"


def _open_batches_plan(source: ScanInput) -> list[dict[str, Any]]:
    found = pending.open_batches(source)
    return [{"action": "mark-stale", "batchId": bid, **facts} for bid, facts in sorted(found.items())]


def _open_batches_write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
    stale_batches(conn, [c["batchId"] for c in changes], STALE_BY_DOCTOR)


# --------------------------------------------------------------------------- storage


def _schema_plan(source: ScanInput) -> list[dict[str, Any]]:
    from lcm_cli.engine.db import schema

    pending = schema.pending_migrations(source.conn)
    return [{"action": "migrate", "migrations": pending}] if pending else []


def _schema_write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
    from lcm_cli.engine.db import schema

    for change in changes:
        change["applied"] = schema.migrate(conn)


def _indexes_plan(source: ScanInput) -> list[dict[str, Any]]:
    from lcm_cli.engine.db import schema

    return [{"action": "build-index", "index": name} for name, _ in schema.deferred_indexes(source.conn)]


def _indexes_write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
    from lcm_cli.engine.db import schema

    targets = dict(schema.deferred_indexes(conn))
    for change in changes:
        if change["index"] in targets:
            schema.build_index(conn, change["index"], targets[change["index"]])


def _change_log_plan(source: ScanInput) -> list[dict[str, Any]]:
    from lcm_cli.engine.maintenance.backup.changes import leftover_runs

    if not source.has("lcm_change_log"):
        return []
    return [
        {
            "action": "export",
            "run": r["header"]["run"],
            "changes": r["changes"],
            "backupPath": r["header"].get("path"),
        }
        for r in leftover_runs(source.conn)
    ]


def _change_log_write(database_path: str) -> Write:
    def write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
        from lcm_cli.engine.maintenance.backup.changes import export_leftovers

        if changes:
            written = {d["backupPath"] for d in export_leftovers(conn, database_path)}
            for change in changes:
                change["written"] = change["backupPath"] in written

    return write


def _wal_plan(source: ScanInput) -> list[dict[str, Any]]:
    from lcm_cli.doctor.storage import WAL_WARN_BYTES, _size
    from lcm_cli.engine.maintenance.replication import replication_state

    wal = _size(source.database_path + "-wal")
    if wal <= WAL_WARN_BYTES:
        return []
    # Litestream checkpoints the WAL itself; a TRUNCATE from outside makes it write the whole
    # database again (docs/replication.md), so beside it the repair only checkpoints passively.
    replicated = replication_state(source.database_path) is not None
    return [{"action": "checkpoint-passive" if replicated else "checkpoint-truncate", "walBytes": wal}]


def _wal_write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
    for change in changes:
        mode = "PASSIVE" if change["action"] == "checkpoint-passive" else "TRUNCATE"
        row = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        change["result"] = {"busy": row[0], "logFrames": row[1], "checkpointed": row[2]}


def _text_plan(source: ScanInput) -> list[dict[str, Any]]:
    from lcm_cli.doctor.storage import undecodable_text

    found = undecodable_text(dataclasses.replace(source, memo={}))
    return [
        {"action": "reencode", "table": v["table"], "id": v["id"], "column": v["column"]}
        for _, v in sorted(found.items())
    ]


def _text_write(conn: sqlite3.Connection, changes: list[dict[str, Any]]) -> None:
    from lcm_cli.doctor.storage import TEXT_COLUMNS

    keys = {table: key for table, key, _, _ in TEXT_COLUMNS}
    for change in changes:
        table, column, key = change["table"], change["column"], keys[change["table"]]
        # The decode with replacement is deliberate here (the connection's text_factory);
        # this is the one place a replaced value is stored.
        row = conn.execute(f"SELECT {column} FROM {table} WHERE {key} = ?", (change["id"],)).fetchone()
        if row is not None:
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (row[0], change["id"]))


# --------------------------------------------------------------------------- planning


def _conversations_with(source: ScanInput, check_id: str) -> list[int]:
    if check_id == "dag.descendant-counts":
        mismatched = dag.descendant_mismatches(source)
        owners = source.summary_conversations()
        return sorted({owners[s] for s in mismatched if s in owners})
    if check_id == "context.dangling":
        return sorted({v["conversationId"] for v in context_checks.dangling_items(source).values()})
    if check_id == "context.duplicates":
        return sorted({v["conversationId"] for v in context_checks.duplicate_items(source).values()})
    if check_id == "context.ordinals":
        return sorted(context_checks.check_ordinals(source).affected)
    if check_id == "maintenance.stale":
        return sorted(maintenance.stale_debt(source))
    if check_id == "maintenance.stuck":
        return sorted(maintenance.stuck_debt(source))
    if check_id == "pending.open-batches":
        return sorted({v["conversationId"] for v in pending.open_batches(source).values()})
    return []


def plan_units(source: ScanInput, check_ids: list[str]) -> list[Unit]:
    """Every unit the selected checks need, in repair order."""
    chosen = set(check_ids)
    units: list[Unit] = []
    if "storage.schema-version" in chosen:
        units.append(
            Unit("schema", "storage.schema-version", None, _schema_plan, _schema_write, transactional=False)
        )
    if "storage.read-indexes" in chosen:
        units.append(
            Unit("indexes", "storage.read-indexes", None, _indexes_plan, _indexes_write, transactional=False)
        )
    context_ids = set(chosen) & {"context.dangling", "context.duplicates", "context.ordinals"}
    if context_ids and source.has("context_items"):
        conversations: set[int] = set()
        for check_id in context_ids:
            conversations.update(_conversations_with(source, check_id))
        for cid in sorted(conversations):
            units.append(
                Unit(
                    f"context:{cid}",
                    ",".join(sorted(context_ids)),
                    cid,
                    _context_plan(context_ids),
                    _context_write(cid),
                )
            )
    if "dag.descendant-counts" in chosen and source.has("summaries", "summary_parents"):
        for cid in _conversations_with(source, "dag.descendant-counts"):
            units.append(
                Unit(
                    f"descendants:{cid}", "dag.descendant-counts", cid, _descendants_plan, _descendants_write
                )
            )
    if "storage.undecodable-text" in chosen:
        # Before the FTS units, so they re-plan against the re-encoded text.
        units.append(Unit("text:reencode", "storage.undecodable-text", None, _text_plan, _text_write))
    for check_id, table in _FTS_TABLES.items():
        if check_id in chosen and source.has(table):
            units.append(Unit(f"fts:{table}", check_id, None, _fts_plan(check_id), _fts_write))
    for check_id in ("maintenance.stale", "maintenance.stuck"):
        if check_id in chosen and source.has(_MAINT):
            for cid in _conversations_with(source, check_id):
                units.append(
                    Unit(
                        f"{check_id}:{cid}",
                        check_id,
                        cid,
                        _maintenance_plan(check_id),
                        _maintenance_write(cid),
                    )
                )
    if "pending.open-batches" in chosen and source.has("pending_compaction_batches"):
        for cid in _conversations_with(source, "pending.open-batches"):
            units.append(
                Unit(
                    f"pending.open-batches:{cid}",
                    "pending.open-batches",
                    cid,
                    _open_batches_plan,
                    _open_batches_write,
                )
            )
    if "storage.change-log" in chosen and source.has("lcm_change_log"):
        units.append(
            Unit(
                "change-log",
                "storage.change-log",
                None,
                _change_log_plan,
                _change_log_write(source.database_path),
                transactional=False,
            )
        )
    if "storage.wal-size" in chosen:
        units.append(Unit("wal", "storage.wal-size", None, _wal_plan, _wal_write, transactional=False))
    return units


def _unit_input(source: ScanInput, unit: Unit) -> ScanInput:
    if unit.conversation_id is None:
        return source
    return dataclasses.replace(source, scope=Scope([unit.conversation_id]), memo={})


@operation("doctor.apply")
def apply_repairs(ctx: Context, req: Request) -> Result:
    """Plan every repair; with ``--apply`` back up, then commit each unit in its own transaction."""
    requested = req[CHECK]
    checks = (
        [c.id for c in select_checks(requested)]
        if requested
        else [c for c in REPAIRABLE if c not in NAMED_ONLY]
    )
    not_repairable = [c for c in checks if c not in REPAIRABLE]
    if requested and not_repairable and len(not_repairable) == len(checks):
        raise invalid_argument(
            f"No automatic repair for {', '.join(not_repairable)}; `lcm doctor` shows the advice for each. "
            f"Repairable checks: {', '.join(REPAIRABLE)}.",
            {"value": not_repairable, "repairable": list(REPAIRABLE)},
        )
    checks = [c for c in checks if c in REPAIRABLE]
    scope = resolve_scope(ctx, req)
    source = scan_input(ctx, scope)
    skipped: list[dict[str, Any]] = []
    targets = repair_order(source) if "summaries.markers" in checks else []
    summarizer_model = None
    if targets:
        from lcm_cli.engine.summarize.factory import build_summarizer

        summarizer_model = build_summarizer(ctx.effective, ctx.env).model
    units = plan_units(source, checks)
    planned = []
    for unit in units:
        changes = unit.plan(_unit_input(source, unit))
        if changes:
            planned.append((unit, changes))
    data: dict[str, Any] = {
        "applied": False,
        "checks": checks,
        "scope": {"conversationIds": scope.conversation_ids},
        "units": planned_summaries(targets, summarizer_model or "")
        + [{**u.describe(), "changes": ch} for u, ch in planned],
        "summarizer": summarizer_model,
        "skipped": skipped,
        "notRepairable": not_repairable,
    }
    if not req[APPLY]:
        return Result(data)
    mode = choose_mode(req[BACKUP], no_backup=req[NO_BACKUP])
    if mode == "changes" and any(u.unit == "schema" for u, _ in planned):
        mode = "full"  # a migration changes the schema, which no row change undoes
        data["backupNote"] = (
            "A schema migration is planned: a full copy was taken instead of a change backup."
        )
    ctx.close()  # the read handle must not pin an old snapshot while we write
    data["applied"] = True
    data["backup"] = None
    data["backupKind"] = None
    if (planned or targets) and mode == "full":
        data["backup"] = {**backup_first(ctx.database_path, "doctor-repair"), "kind": "full"}
        data["backupKind"] = "full"
    capture = mode == "changes" and bool(planned or targets)
    data["units"], made = _write_units(ctx, [u for u, _ in planned], source, targets, capture=capture)
    if made is not None:
        data["backup"], data["backupKind"] = made, "changes"
    return Result(data)


def _write_units(
    ctx: Context, units: list[Unit], source: ScanInput, targets: list[dict[str, Any]], *, capture: bool
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Write every unit (the re-summarized targets first); with ``capture``, under a change backup."""
    conn = open_writer(ctx.database_path, ctx.timeout_ms)
    try:
        if not capture:
            return _write_all(ctx, conn, units, source, targets), None
        with capture_changes(conn, ctx.database_path, label="doctor-repair", command="doctor apply") as taken:
            results = _write_all(ctx, conn, units, source, targets, exported=taken.leftovers)
        return results, taken.result
    finally:
        conn.close()


def _write_all(
    ctx: Context,
    conn: sqlite3.Connection,
    units: list[Unit],
    source: ScanInput,
    targets: list[dict[str, Any]],
    exported: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    if targets:
        try:
            results += resummarize(
                conn,
                targets,
                effective=ctx.effective,
                env=ctx.env,
                progress=lambda done, total: ctx.report_progress("re-summarizing", done, total),
            )
        except sqlite3.Error as exc:
            if is_busy(exc):
                raise busy_error(ctx.database_path, ctx.timeout_ms, []) from None
            raise
    writer_source = dataclasses.replace(source, conn=conn, probe=SchemaProbe(conn), memo={})
    for index, unit in enumerate(units):
        ctx.report_progress("repairing", index, len(units))
        entry = unit.describe()
        try:
            if unit.unit == "change-log" and exported is not None:
                # Taking this run's change backup wrote them already.
                changes = [
                    {"action": "export", "backupPath": d["backupPath"], "written": True} for d in exported
                ]
            elif unit.transactional:
                with unit_of_work(conn):
                    changes = unit.plan(_unit_input(writer_source, unit))
                    unit.write(conn, changes)
            else:
                changes = unit.plan(_unit_input(writer_source, unit))
                unit.write(conn, changes)
            entry.update(status="applied" if changes else "unchanged", changes=changes)
        except LcmError as exc:
            entry.update(status="failed", error=exc.to_dict(), changes=[])
        except sqlite3.Error as exc:
            if is_busy(exc):
                raise busy_error(
                    ctx.database_path,
                    ctx.timeout_ms,
                    [r["unit"] for r in results if r["status"] == "applied"],
                ) from None
            entry.update(
                status="failed", error={"code": "DATABASE_QUERY_FAILED", "message": str(exc)}, changes=[]
            )
        results.append(entry)
    ctx.report_progress("done", len(units), len(units))
    return results
