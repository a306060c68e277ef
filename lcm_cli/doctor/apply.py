"""`lcm doctor apply`: repair what the scan found, dry run by default.

Each check that has a repair carries it (``Check.repair``, declared in
:mod:`lcm_cli.doctor.repairs`); a repair plans *units* (one conversation's context, one FTS
table, one conversation's debt, ...). The plan is computed from the read-only scan; with ``--apply`` every unit
re-computes its changes inside its own ``BEGIN IMMEDIATE`` transaction (so a write that
raced the scan is seen) and commits or rolls back alone, under a change backup of the rows
the units change (``--backup full``: a copy of the whole database first; a schema
migration, which no row change undoes, always takes the copy).
The report lists every change, per unit.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any

from lcm_cli.doctor.checks import BY_ID, CHECKS
from lcm_cli.doctor.repairs import RESUMMARIZE, Repair, Unit
from lcm_cli.doctor.resummarize import planned as planned_summaries
from lcm_cli.doctor.resummarize import repair_order, resummarize
from lcm_cli.doctor.scan import resolve_scope, select_checks
from lcm_cli.doctor.writer import backup_first, busy_error, is_busy, open_writer, unit_of_work
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import APPLY, BACKUP, CHECK, NO_BACKUP, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.probe import SchemaProbe
from lcm_cli.engine.maintenance.backup.changes import capture_changes, choose_mode
from lcm_cli.engine.maintenance.findings import ScanInput, Scope
from lcm_cli.engine.maintenance.junk import scan_input

#: Every check `lcm doctor apply` can repair (its ``repair``), in registry order.
REPAIRABLE = tuple(c.id for c in CHECKS if c.repair is not None)


def _describe(unit: Unit) -> dict[str, Any]:
    """The unit's identity in the report (``destructive`` when it rewrites history)."""
    found = {"unit": unit.unit, "check": unit.check, "conversationId": unit.conversation_id}
    destructive = any(BY_ID[check].destructive for check in unit.check.split(","))
    return {**found, "destructive": True} if destructive else found


def plan_units(source: ScanInput, check_ids: list[str]) -> list[Unit]:
    """Every unit the selected checks need, in repair order."""
    chosen: dict[Repair, set[str]] = {}  # checks that share a repair plan its units once
    for check in CHECKS:
        if check.repair is not None and check.id in check_ids:
            chosen.setdefault(check.repair, set()).add(check.id)
    units: list[Unit] = []
    for repair in sorted(chosen, key=lambda r: r.order):
        units += repair.units(source, frozenset(chosen[repair]))
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
        # A named-only repair locks writers out for seconds on a big file: only --check runs it.
        else [c.id for c in CHECKS if c.repair is not None and not c.repair.named_only]
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
    targets = repair_order(source) if any(BY_ID[c].repair is RESUMMARIZE for c in checks) else []
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
        + [{**_describe(u), "changes": ch} for u, ch in planned],
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
        entry = _describe(unit)
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
