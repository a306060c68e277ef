"""`lcm prune [restore]`: archive then delete old conversations; put an archive back."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import GLOBALS_EPILOG, ConversationId
from lcm_cli.commands.runner import run

# No help= here: the callback's docstring (the `lcm prune` command itself) is the help.
prune = typer.Typer(invoke_without_command=True)

Apply = Annotated[bool, typer.Option("--apply", help="Really write (dry run otherwise).")]


@prune.callback(epilog=GLOBALS_EPILOG)
def prune_run(
    ctx: typer.Context,
    prune_before: Annotated[
        Optional[str],
        typer.Option(
            "--before",
            metavar="WHEN",
            help="Conversations with no activity since WHEN: a duration (90d, 12w) or an ISO timestamp.",
        ),
    ] = None,
    archived_only: Annotated[
        bool, typer.Option("--archived-only", help="Only archived conversations (the default).")
    ] = False,
    include_active: Annotated[
        bool, typer.Option("--include-active", help="Also active conversations (overrides --archived-only).")
    ] = False,
    max_db_size: Annotated[
        Optional[str],
        typer.Option(
            "--max-db-size",
            metavar="SIZE",
            help="Oldest first until the data fits in SIZE (e.g. 500MB, 2GiB).",
        ),
    ] = None,
    conversation_id: ConversationId = None,
    conversation_class: Annotated[
        Optional[list[str]],
        typer.Option(
            "--class",
            metavar="CLASS",
            help="archived_subagents, cron_sessions, null_subagent_context or orphaned; repeatable.",
        ),
    ] = None,
    out: Annotated[
        Optional[str],
        typer.Option(
            "--out", metavar="PATH", help="Archive file (default: beside the database, timestamped)."
        ),
    ] = None,
    apply: Apply = False,
    vacuum: Annotated[bool, typer.Option("--vacuum", help="VACUUM and checkpoint after deleting.")] = False,
) -> None:
    """Archive old conversations to a checksummed .jsonl.gz, verify it, then delete them.

    Dry run by default: says which conversations and how many bytes. At least one of
    --before, --max-db-size, --conversation-id, --class is required. Subcommand restore
    puts an archive back.

    Example: lcm prune --before 90d --apply --vacuum
    """
    if ctx.invoked_subcommand is None:
        run(
            ctx,
            "prune",
            {
                "prune_before": prune_before,
                "archived_only": archived_only,
                "include_active": include_active,
                "max_db_size": max_db_size,
                "conversation_id": conversation_id,
                "conversation_class": conversation_class or None,
                "out": out,
                "apply": apply,
                "vacuum": vacuum,
            },
        )


@prune.command("restore", epilog=GLOBALS_EPILOG)
def prune_restore(
    ctx: typer.Context,
    archive: Annotated[str, typer.Argument(metavar="ARCHIVE", help="A .jsonl.gz written by `lcm prune`.")],
    apply: Apply = False,
) -> None:
    """Put the conversations of a prune archive back (verified first; safe to run twice).

    Example: lcm prune restore ~/.openclaw/lcm.db.prune-20260710T123456789Z.jsonl.gz --apply
    """
    run(ctx, "prune.restore", {"apply": apply}, args=(archive,))
