"""`lcm doctor`: run the checks (read-only) and report each with its status and fix.

Exit status: the report carries ``exitStatus`` — 0 when no finding is at or above
``--fail-on`` (default ``warn``), :data:`FINDINGS_EXIT_STATUS` otherwise — and the result's
exit status is the same, so every door (CLI, hook, serve) reports it, so scripts can gate on `lcm doctor` without parsing JSON.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from lcm_cli.doctor.checks import BY_ID, CHECKS, FAMILIES, Check
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.exit_codes import FINDINGS_EXIT_STATUS
from lcm_cli.engine.core.params import CHECK, FINDINGS_ONLY, THOROUGH, Request
from lcm_cli.engine.core.params import FAIL_ON as FAIL_ON_PARAM
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.connection import is_corruption
from lcm_cli.engine.maintenance.findings import Outcome, ScanInput, Scope, severity_rank
from lcm_cli.engine.maintenance.junk import scan_input
from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables

if TYPE_CHECKING:
    from lcm_cli.doctor.records import CheckReport

FAIL_ON = ("info", "warn", "error", "none")
DEFAULT_FAIL_ON = "warn"
_STATUS = {"info": "INFO", "warn": "WARN", "error": "FAIL"}
_PAIR = re.compile(r"^([0-9]+):([0-9]+)$")


def select_checks(requested: list[str] | None) -> list[Check]:
    """The checks named by ``--check`` (ids or family names); all of them when none are given."""
    if not requested:
        return list(CHECKS)
    chosen: list[str] = []
    for name in requested:
        if name in BY_ID:
            matches = [name]
        elif name in FAMILIES:
            matches = [c.id for c in CHECKS if c.id.split(".")[0] == name]
        else:
            raise invalid_argument(
                f"Unknown check {name!r}. Known checks: {', '.join(BY_ID)} (or a family: {', '.join(FAMILIES)}).",
                {"value": name, "known": list(BY_ID), "families": FAMILIES},
            )
        chosen.extend(m for m in matches if m not in chosen)
    return [c for c in CHECKS if c.id in chosen]  # registry order, whatever order they were asked in


def resolve_scope(ctx: Context, req: Request) -> Scope:
    """The conversations a scan or repair looks at: a selector, a recency window, or everything."""
    require_lcm_tables(ctx)
    if req.selector is not None:
        row = find_conversation(ctx, req.selector)
        return Scope([row["conversation_id"]])
    if req.time.after is not None:
        rows = ctx.query(
            """SELECT conversation_id FROM conversations WHERE julianday(updated_at) >= julianday(?)
               UNION SELECT DISTINCT conversation_id FROM messages WHERE julianday(created_at) >= julianday(?)
               ORDER BY 1""",
            (req.time.after, req.time.after),
        )
        return Scope([r[0] for r in rows], recency_after=req.time.after)
    return Scope()


def encode_cursor(after: dict[str, Any]) -> str:
    """An opaque cursor continuing each check's affected ids after the last one shown."""
    from lcm_cli.engine.core.cursor import seal

    return seal("doctor", after=after)


def decode_cursor(text: str) -> dict[str, Any]:
    """Check id -> last id shown; INVALID_CURSOR when it is not one of ours."""
    from lcm_cli.engine.core.cursor import open_cursor

    invalid = LcmError(
        "INVALID_CURSOR",
        "This --cursor was not printed by `lcm doctor`; pass its pagination.nextCursor unchanged.",
        {"value": text},
    )
    after = open_cursor(text, "doctor", invalid).get("after")
    if not isinstance(after, dict) or not after:
        raise invalid
    for check_id, last in after.items():
        if check_id not in BY_ID or not isinstance(last, (int, str)) or isinstance(last, bool):
            raise invalid
    return after


def _key(item: Any) -> Any:
    if isinstance(item, str):
        pair = _PAIR.match(item)
        if pair:
            return (1, int(pair.group(1)), int(pair.group(2)), "")
        return (2, 0, 0, item)
    return (0, int(item), 0, "")


def page_of(affected: list[Any], after: Any, limit: int) -> tuple[list[Any], bool]:
    """``limit`` ids after ``after`` (in the check's order), and whether more follow."""
    if after is not None:
        mark = _key(after)
        affected = [item for item in affected if _key(item) > mark]
    return affected[:limit], len(affected) > limit


def _fix_for(check: Check, req: Request, scope: Scope) -> str | None:
    if check.fix is None:
        return None
    if check.scoped and req.selector is not None and check.fix.startswith("lcm doctor"):
        option = "--conversation-id" if req.selector.kind == "conversationId" else "--session-key"
        value = (
            req.selector.value if req.selector.kind == "conversationId" else json.dumps(req.selector.value)
        )
        return f"{check.fix} {option} {value}"
    return check.fix


def _skipped(check: Check, reason: str) -> CheckReport:
    """The entry of a check that did not run, and why."""
    return {
        "check": check.id,
        "title": check.title,
        "severity": check.severity,
        "status": "SKIP",
        "count": 0,
        "affected": [],
        "skipped": reason,
    }


def report_check(
    check: Check, outcome: Outcome, req: Request, scope: Scope, after: Any
) -> tuple[CheckReport, bool]:
    """One check's entry in the report, and whether more of its affected ids follow."""
    if outcome.skipped is not None:
        return _skipped(check, outcome.skipped), False
    page, more = page_of(outcome.affected, after, req.limit)
    entry: CheckReport = {
        "check": check.id,
        "title": check.title,
        "severity": check.severity,
        "status": _STATUS[check.severity] if outcome.count else "PASS",
        "count": outcome.count,
        "affected": page,
    }
    if outcome.notes:
        entry["notes"] = {str(i): outcome.notes[i] for i in page if i in outcome.notes}
    entry["fix"] = _fix_for(check, req, scope) if outcome.count else None
    if entry["fix"] is not None:
        entry["destructive"] = check.destructive
    if check.advice and outcome.count:
        entry["advice"] = check.advice
    if outcome.details:
        entry["details"] = outcome.details
    return entry, more and bool(page)


# Checks that are (nearly) pure SQL run on their own connections in threads: SQLite
# releases the GIL while it steps, so they overlap the checks on the main thread. Each
# group runs in order on one connection (the DAG pair shares its link queries).
_BACKGROUND: tuple[tuple[str, ...], ...] = (
    ("storage.quick-check",),
    ("dag.cross-conversation", "dag.missing-sources"),
    ("fts.messages", "fts.summaries", "fts.summaries-cjk"),
)


def run_checks(source: ScanInput, checks: list[Check]) -> list[tuple[Check, Outcome, int]]:
    """Run each check, timing it; a check that cannot run here is skipped, never fatal."""
    import dataclasses
    import threading

    from lcm_cli.engine.db.connection import open_read_only
    from lcm_cli.engine.db.probe import SchemaProbe

    done: dict[str, tuple[Outcome, int]] = {}
    errors: list[BaseException] = []

    def timed(check: Check, input_: ScanInput) -> tuple[Outcome, int]:
        started = time.perf_counter()
        if not check.scoped and not input_.scope.whole and check.id != "storage.schema-version":
            outcome = Outcome(skipped="database-wide check; runs only without a selector or --recency")
        else:
            outcome = check.run(input_)
        return outcome, int((time.perf_counter() - started) * 1000)

    def background(group: list[Check]) -> None:
        try:
            conn = open_read_only(source.database_path)
            conn.row_factory = source.conn.row_factory
            try:
                options = {"options": source.memo["options"]} if "options" in source.memo else {}
                mine = dataclasses.replace(source, conn=conn, probe=SchemaProbe(conn), memo=options)
                for check in group:
                    done[check.id] = timed(check, mine)
            finally:
                conn.close()
        except BaseException as exc:  # re-raised on the calling thread
            errors.append(exc)

    wanted = {c.id: c for c in checks}
    groups = []
    if source.scope.whole:
        for ids in _BACKGROUND:
            group = [wanted[i] for i in ids if i in wanted]
            if group:
                groups.append(group)
    offloaded = {c.id for group in groups for c in group}
    threads = [threading.Thread(target=background, args=(g,), daemon=True) for g in groups]
    for thread in threads:
        thread.start()
    for check in checks:
        if check.id not in offloaded:
            done[check.id] = timed(check, source)
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [(check, *done[check.id]) for check in checks]


def damaged_report(
    ctx: Context, checks: list[Check], fail_on: str, exc: BaseException, started: float
) -> dict[str, Any]:
    """The report when SQLite cannot read the file's schema: quick-check FAILs, the rest SKIP."""
    from lcm_cli.engine.db.connection import translate_database_failure

    error = exc if isinstance(exc, LcmError) else translate_database_failure(exc, ctx.database_path, 0)
    message = error.details.get("sqliteError", error.message) if error is not None else str(exc)
    entries: list[CheckReport] = []
    for check in checks:
        entry: CheckReport
        if check.id == "storage.quick-check":
            entry = {
                "check": check.id,
                "title": check.title,
                "severity": check.severity,
                "status": "FAIL",
                "count": 1,
                "affected": ["database"],
                "notes": {"database": message},
                "fix": None,
                "advice": check.advice,
            }
        else:
            entry = _skipped(check, f"the database schema cannot be read ({message})")
        entry["elapsedMs"] = 0
        entries.append(entry)
    failing = any(e["status"] == "FAIL" for e in entries)
    counts = {
        s: sum(1 for e in entries if e["status"] == s) for s in ("PASS", "INFO", "WARN", "FAIL", "SKIP")
    }
    exit_status = FINDINGS_EXIT_STATUS if fail_on != "none" else 0
    return {
        "healthy": exit_status == 0,
        "status": "FAIL" if failing else "SKIP",
        "failOn": fail_on,
        "exitStatus": exit_status,
        "scope": {"conversationIds": None, "recencyAfter": None, "agentIds": []},
        "counts": counts,
        "elapsedMs": int((time.perf_counter() - started) * 1000),
        "checks": entries,
        "damaged": {
            "error": message,
            "next": "`lcm backup list`, then `lcm backup restore PATH --apply` (a backup taken before the damage).",
        },
    }


@operation("doctor.scan")
def doctor(ctx: Context, req: Request) -> Result:
    """Run the selected checks and report PASS/INFO/WARN/FAIL/SKIP per check."""
    fail_on = req[FAIL_ON_PARAM] or DEFAULT_FAIL_ON
    if fail_on not in FAIL_ON:
        raise invalid_argument(
            f"Invalid --fail-on value {fail_on!r}: expected info, warn, error or none.", {"value": fail_on}
        )
    requested = req[CHECK]
    after: dict[str, Any] = {}
    if req.cursor:
        after = decode_cursor(req.cursor)
        if requested:
            chosen = {c.id for c in select_checks(requested)}
            stray = [check_id for check_id in after if check_id not in chosen]
            if stray:
                raise LcmError(
                    "INVALID_CURSOR",
                    f"This cursor continues check {stray[0]}, not the --check given; drop --check or match it.",
                    {"value": req.cursor},
                )
        requested = list(after)
    checks = select_checks(requested)
    started = time.perf_counter()
    try:
        scope = resolve_scope(ctx, req)
        source = scan_input(ctx, scope)
        source.memo["options"] = {"thorough": bool(req[THOROUGH])}
        results = run_checks(source, checks)
    except (sqlite3.Error, UnicodeDecodeError, LcmError) as exc:
        if not is_corruption(exc):
            raise
        # A damaged schema stops every query: report it as the finding it is.
        report = damaged_report(ctx, checks, fail_on, exc, started)
        return Result(report, _pagination(req.limit, 0, {}), exit_status=report["exitStatus"])
    entries: list[CheckReport] = []
    more: dict[str, Any] = {}
    counts = {s: 0 for s in ("PASS", "INFO", "WARN", "FAIL", "SKIP")}
    for check, outcome, elapsed in results:
        entry, has_more = report_check(check, outcome, req, scope, after.get(check.id))
        entry["elapsedMs"] = elapsed
        counts[entry["status"]] += 1
        if req[FINDINGS_ONLY] and entry["status"] in ("PASS", "SKIP"):
            continue
        entries.append(entry)
        if has_more:
            more[check.id] = entry["affected"][-1]
    worst = max(
        (severity_rank(c.severity) for c, o, _ in results if o.skipped is None and o.count), default=-1
    )
    failing = fail_on != "none" and worst >= severity_rank(fail_on)
    status = FINDINGS_EXIT_STATUS if failing else 0
    data = {
        "healthy": not failing,
        "status": "FAIL"
        if counts["FAIL"]
        else "WARN"
        if counts["WARN"]
        else "INFO"
        if counts["INFO"]
        else "PASS",
        "failOn": fail_on,
        "exitStatus": status,
        "scope": {
            "conversationIds": scope.conversation_ids,
            "recencyAfter": scope.recency_after,
            "agentIds": source.agent_ids,
        },
        "counts": counts,
        "elapsedMs": int((time.perf_counter() - started) * 1000),
        "checks": entries,
    }
    returned = sum(len(e["affected"]) for e in entries)
    return Result(data, _pagination(req.limit, returned, more), exit_status=status)


def _pagination(limit: int, returned: int, more: dict[str, Any]) -> dict[str, Any]:
    """One continuation for the whole report: the next page of every check that has more
    (``limit`` and ``returned`` count affected ids, per check and in all)."""
    cursor = encode_cursor(more) if more else None
    return {"limit": limit, "returned": returned, "hasMore": cursor is not None, "nextCursor": cursor}
