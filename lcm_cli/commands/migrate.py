"""`lcm migrate-sessions`: the one-time backfill of OpenClaw session transcripts."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.runner import run


def migrate_sessions(
    ctx: typer.Context,
    file: Annotated[
        Optional[list[str]],
        typer.Option("--file", metavar="PATH", help="Import this transcript; repeatable."),
    ] = None,
    sessions_dir: Annotated[
        Optional[list[str]],
        typer.Option(
            "--sessions-dir", metavar="DIR", help="Import every *.jsonl directly in DIR; repeatable."
        ),
    ] = None,
    store: Annotated[
        Optional[list[str]],
        typer.Option(
            "--store",
            metavar="PATH",
            help="Import every session of this OpenClaw SQLite store (openclaw-agent.sqlite); repeatable.",
        ),
    ] = None,
    since: Annotated[
        Optional[str],
        typer.Option(
            "--since", metavar="WHEN", help="Only files modified at or after a date or ISO timestamp."
        ),
    ] = None,
    max_files: Annotated[
        Optional[str], typer.Option("--limit", metavar="N", help="Read at most N files.")
    ] = None,
    apply: Annotated[
        bool,
        typer.Option("--apply", help="Write: back up the database, then import (one transaction per file)."),
    ] = False,
    verify: Annotated[
        bool, typer.Option("--verify", help="Read-only: check every transcript entry is in the database.")
    ] = False,
    json: Annotated[
        bool, typer.Option("--json", help="Accepted for compatibility; JSON is the default output.")
    ] = False,
) -> None:
    """Backfill OpenClaw session transcripts into lcm.db; a dry run unless --apply.

    Without --file, --sessions-dir or --store it reads <state dir>/agents/*/sessions/*.jsonl
    and every <state dir>/agents/*/agent/openclaw-agent.sqlite. Safe to re-run: entries
    already imported are skipped.

    Example: lcm migrate-sessions --openclaw-dir ~/.openclaw --apply
    """
    run(
        ctx,
        "migrate.sessions",
        {
            "file": file or [],
            "sessions_dir": sessions_dir or [],
            "store": store or [],
            "since": since,
            "max_files": max_files,
            "apply": apply,
            "verify": verify,
            "json": json,
        },
    )
