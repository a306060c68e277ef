"""`lcm doctor [apply|clean]`: find every problem, say the exact fix, repair safely."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import GLOBALS_EPILOG, ConversationId, Cursor, Limit, Recency, SessionKey
from lcm_cli.commands.runner import run

# No help= here: the callback's docstring (the `lcm doctor` scan itself) is the help.
doctor = typer.Typer(invoke_without_command=True)

Check = Annotated[
    Optional[list[str]],
    typer.Option("--check", metavar="ID", help="Only this check id or family (e.g. fts); repeatable."),
]
Apply = Annotated[bool, typer.Option("--apply", help="Really write (dry run otherwise).")]
NoBackup = Annotated[
    bool, typer.Option("--no-backup", help="Skip the backup taken before writing (not recommended).")
]
ConversationClass = Annotated[
    Optional[list[str]],
    typer.Option(
        "--class",
        metavar="CLASS",
        help="archived_subagents, cron_sessions or null_subagent_context; repeatable (default: all).",
    ),
]


@doctor.callback(epilog=GLOBALS_EPILOG)
def doctor_scan(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    recency: Recency = None,
    check: Check = None,
    fail_on: Annotated[
        Optional[str],
        typer.Option(
            "--fail-on",
            metavar="SEVERITY",
            help="Exit 6 when a finding is at or above info, warn (default), error; none never fails.",
        ),
    ] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> None:
    """Check lcm.db for every known problem (read-only); each finding names the command that fixes it.

    Subcommands repair (apply) and remove junk conversations (clean). Exit status 0 when
    nothing is at or above --fail-on, 6 otherwise. Checks are listed in docs/doctor.md.

    Example: lcm doctor --format table
    """
    if ctx.invoked_subcommand is None:
        run(
            ctx,
            "doctor.scan",
            {
                "conversation_id": conversation_id,
                "session_key": session_key,
                "recency": recency,
                "check": check or None,
                "fail_on": fail_on,
                "limit": limit,
                "cursor": cursor,
            },
        )


@doctor.command("apply", epilog=GLOBALS_EPILOG)
def doctor_apply(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    check: Check = None,
    apply: Apply = False,
    no_backup: NoBackup = False,
) -> None:
    """Repair what the scan found: FTS, context ordinals, dangling items, stale debt, counts.

    Dry run by default (lists every change it would make); --apply backs up first, then
    writes one transaction per repaired unit and lists every change made.

    Example: lcm doctor apply --check fts --apply
    """
    run(
        ctx,
        "doctor.apply",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "check": check or None,
            "apply": apply,
            "no_backup": no_backup,
        },
    )


@doctor.command("clean", epilog=GLOBALS_EPILOG)
def doctor_clean(
    ctx: typer.Context,
    conversation_class: ConversationClass = None,
    apply: Apply = False,
    vacuum: Annotated[bool, typer.Option("--vacuum", help="VACUUM and checkpoint after deleting.")] = False,
    no_backup: NoBackup = False,
) -> None:
    """Remove junk conversations by class (archived subagents, cron sessions, keyless subagent contexts).

    Dry run by default; --apply backs up first and deletes in one transaction.

    Example: lcm doctor clean --class cron_sessions --apply --vacuum
    """
    run(
        ctx,
        "doctor.clean",
        {
            "conversation_class": conversation_class or None,
            "apply": apply,
            "vacuum": vacuum,
            "no_backup": no_backup,
        },
    )
