"""The repairs of `lcm doctor apply`: each check that has one carries it (``Check.repair``).

A :class:`Repair` turns the scan into *units* (one conversation's context, one FTS table,
one conversation's debt, ...), each a read-only plan and a write that
:mod:`lcm_cli.doctor.apply` runs in its own transaction; ``order`` says where a repair's
units run among the others'. Checks that share a repair share one object (the three
``context.*`` checks fix one conversation's context in one unit).
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import Any

from lcm_cli.doctor import context as context_checks
from lcm_cli.doctor import dag, fts, maintenance, pending
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.db.pending_state import invalidate_open_batches, stale_batches
from lcm_cli.engine.db.probe import SchemaProbe
from lcm_cli.engine.maintenance.findings import ScanInput

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


#: A repair's units for the scan: given the chosen ids of the checks that carry it.
Units = Callable[[ScanInput, Set[str]], list[Unit]]


@dataclass(frozen=True, eq=False)  # one object per repair: checks that share it share the object
class Repair:
    """How `lcm doctor apply` fixes a check: the units it plans, where they run, and when."""

    units: Units
    order: int  # where its units run among the repairs' (lowest first)
    named_only: bool = False  # locks writers out for long: runs only when named with --check


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


def _fts_plan(table: str) -> Plan:
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


def _maintenance_plan(find: Callable[[ScanInput], dict[int, str]], action: str) -> Plan:
    def plan(source: ScanInput) -> list[dict[str, Any]]:
        found = find(source)
        cid = _only_conversation(source)
        if cid not in found:
            return []
        revision = (
            source.rows(f"SELECT maintenance_revision FROM {_MAINT} WHERE conversation_id = ?", [cid])[0][0]
            if source.probe.has_column(_MAINT, "maintenance_revision")
            else None
        )
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


# --------------------------------------------------------------------------- units


def _schema_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    (check_id,) = ids
    return [Unit("schema", check_id, None, _schema_plan, _schema_write, transactional=False)]


def _indexes_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    (check_id,) = ids
    return [Unit("indexes", check_id, None, _indexes_plan, _indexes_write, transactional=False)]


def _context_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    """One unit per conversation any chosen ``context.*`` check found, fixing all of them at once."""
    if not source.has("context_items"):
        return []
    conversations: set[int] = set()
    if "context.dangling" in ids:
        conversations.update(v["conversationId"] for v in context_checks.dangling_items(source).values())
    if "context.duplicates" in ids:
        conversations.update(v["conversationId"] for v in context_checks.duplicate_items(source).values())
    if "context.ordinals" in ids:
        conversations.update(context_checks.check_ordinals(source).affected)
    return [
        Unit(f"context:{cid}", ",".join(sorted(ids)), cid, _context_plan(set(ids)), _context_write(cid))
        for cid in sorted(conversations)
    ]


def _descendants_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    (check_id,) = ids
    if not source.has("summaries", "summary_parents"):
        return []
    mismatched = dag.descendant_mismatches(source)
    owners = source.summary_conversations()
    conversations = sorted({owners[s] for s in mismatched if s in owners})
    return [
        Unit(f"descendants:{cid}", check_id, cid, _descendants_plan, _descendants_write)
        for cid in conversations
    ]


def _text_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    (check_id,) = ids
    return [Unit("text:reencode", check_id, None, _text_plan, _text_write)]


def _fts_units(table: str) -> Units:
    def units(source: ScanInput, ids: Set[str]) -> list[Unit]:
        (check_id,) = ids
        return (
            [Unit(f"fts:{table}", check_id, None, _fts_plan(table), _fts_write)] if source.has(table) else []
        )

    return units


def _maintenance_units(find: Callable[[ScanInput], dict[int, str]], action: str) -> Units:
    def units(source: ScanInput, ids: Set[str]) -> list[Unit]:
        (check_id,) = ids
        if not source.has(_MAINT):
            return []
        return [
            Unit(f"{check_id}:{cid}", check_id, cid, _maintenance_plan(find, action), _maintenance_write(cid))
            for cid in sorted(find(source))
        ]

    return units


def _open_batches_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    (check_id,) = ids
    if not source.has("pending_compaction_batches"):
        return []
    conversations = sorted({v["conversationId"] for v in pending.open_batches(source).values()})
    return [
        Unit(f"{check_id}:{cid}", check_id, cid, _open_batches_plan, _open_batches_write)
        for cid in conversations
    ]


def _change_log_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    (check_id,) = ids
    if not source.has("lcm_change_log"):
        return []
    return [
        Unit(
            "change-log",
            check_id,
            None,
            _change_log_plan,
            _change_log_write(source.database_path),
            transactional=False,
        )
    ]


def _wal_units(source: ScanInput, ids: Set[str]) -> list[Unit]:
    (check_id,) = ids
    return [Unit("wal", check_id, None, _wal_plan, _wal_write, transactional=False)]


def _resummarized_first(source: ScanInput, ids: Set[str]) -> list[Unit]:
    """No units: `apply` plans and writes these summaries itself (resummarize.py), first."""
    return []


# --------------------------------------------------------------------------- the repairs

#: Fallback summaries re-summarized with the configured summarizer, before every unit.
RESUMMARIZE = Repair(_resummarized_first, order=0)
MIGRATE = Repair(_schema_units, order=10)
BUILD_READ_INDEXES = Repair(_indexes_units, order=20, named_only=True)
FIX_CONTEXT = Repair(_context_units, order=30)
RECOUNT_DESCENDANTS = Repair(_descendants_units, order=40)
#: Before the FTS units, so they re-plan against the re-encoded text.
REENCODE_TEXT = Repair(_text_units, order=50)
REINDEX_MESSAGES_FTS = Repair(_fts_units("messages_fts"), order=60)
REINDEX_SUMMARIES_FTS = Repair(_fts_units("summaries_fts"), order=61)
REINDEX_SUMMARIES_FTS_CJK = Repair(_fts_units("summaries_fts_cjk"), order=62)
CLOSE_STALE_DEBT = Repair(_maintenance_units(maintenance.stale_debt, "close-debt"), order=70)
CLEAR_STUCK_DRAINS = Repair(_maintenance_units(maintenance.stuck_debt, "clear-running"), order=71)
STALE_OPEN_BATCHES = Repair(_open_batches_units, order=80)
EXPORT_CHANGE_LOG = Repair(_change_log_units, order=90)
CHECKPOINT_WAL = Repair(_wal_units, order=100)
