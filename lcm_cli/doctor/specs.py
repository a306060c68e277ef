"""The operation specs of doctor: scan, apply its repairs, clean.

Plain data, loaded without importing the implementation (see
:data:`lcm_cli.engine.core.registry.OPERATIONS`).
"""

from __future__ import annotations

from lcm_cli.engine.core.registry import Fleet, OpSpec
from lcm_cli.engine.core.render_hints import Render, Rows, Tally
from lcm_cli.engine.core.spec_parts import (
    CONVERSATION_ROWS,
    MESSAGE_ROWS,
    SELECTOR,
    SUMMARY_ROWS,
    WHEN_HELP,
    WHOLE_FILE,
)

# The columns a person scans first in a list of records, and those dropped first (least
# important first) when the terminal is narrow; JSON output carries every field.
_FINDINGS = Rows("check", ("status", "check", "count", "fix"))
_UNITS = Rows("unit", ("unit", "check", "conversationId", "status"))
# Doctor's findings first, each with its title and fix; the passes fold into one line.
_CHECKS = Tally(
    "checks",
    "status",
    (("PASS", "passed"), ("SKIP", "skipped")),
    "check",
    "{status} {check}: {title}",
    ("fix", "destructive", "advice", "count", "affected", "nextCursor"),
)
_DOCTOR = Render(
    rows=(_FINDINGS, _UNITS, SUMMARY_ROWS, MESSAGE_ROWS, CONVERSATION_ROWS),
    tallies=(_CHECKS,),
    first=("checks",),
)

SPECS: dict[str, OpSpec] = {
    "doctor.scan": OpSpec(
        "lcm_cli.doctor.scan",
        SELECTOR
        + ("recency", "check", "fail_on", "thorough", "findings_only", "limit", "cursor", "max_tokens"),
        words=("doctor",),
        long_running=True,
        summary="Check lcm.db for every known problem; each finding names its fix (read-only).",
        help=(
            "Check lcm.db for every known problem (read-only); each finding names the command that "
            "fixes it.\n\n"
            "Subcommands repair (apply) and remove junk conversations (clean). Exit status 0 when "
            "nothing is at or above --fail-on, 6 otherwise. Checks are listed in docs/doctor.md."
        ),
        example="lcm doctor --format table",
        param_help={"recency": WHEN_HELP["recency"]},
        metavars={"recency": "WHEN"},
        render=_DOCTOR,
        items="checks",
        cuts="checks",
        fleet=Fleet("summary", totals=("healthy", "status", "exitStatus", "counts")),
        unscoped=WHOLE_FILE,
    ),
    "doctor.apply": OpSpec(
        "lcm_cli.doctor.apply",
        SELECTOR + ("check", "apply", "backup", "no_backup"),
        long_running=True,
        writes=True,
        summary="Repair what `lcm doctor` found (dry run unless --apply; under a change backup).",
        help=(
            "Repair what the scan found: FTS, context ordinals, dangling items, stale debt, counts.\n\n"
            "Dry run by default (lists every change it would make); --apply writes one transaction per "
            "repaired unit, under a change backup of the rows it changes (--backup full: a copy of the "
            "whole database first), and lists every change made."
        ),
        example="lcm doctor apply --check fts --apply",
        render=_DOCTOR,
        applies="make these changes",
        unscoped=WHOLE_FILE,
    ),
    "doctor.clean": OpSpec(
        "lcm_cli.doctor.clean",
        ("conversation_class", "apply", "vacuum", "backup", "no_backup"),
        long_running=True,
        writes=True,
        summary="Remove junk conversations by class (dry run unless --apply; under a change backup).",
        help=(
            "Remove junk conversations by class (archived subagents, cron sessions, keyless subagent "
            "contexts).\n\n"
            "Dry run by default; --apply deletes in batches of ~25 ms of write lock (the agent keeps "
            "writing), under a change backup of the deleted rows (--backup full: a copy of the whole "
            "database first)."
        ),
        example="lcm doctor clean --class cron_sessions --apply --vacuum",
        param_help={
            "conversation_class": (
                "archived_subagents, cron_sessions or null_subagent_context; repeatable (default: all)."
            ),
        },
        render=_DOCTOR,
        applies="back up and delete these",
        unscoped=WHOLE_FILE,
    ),
}
