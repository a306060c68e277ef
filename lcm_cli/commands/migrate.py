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
        typer.Option(
            "--apply",
            help="Write: back up the database if anything would be imported, then import (one "
            "transaction per file).",
        ),
    ] = False,
    verify: Annotated[
        bool, typer.Option("--verify", help="Read-only: check every transcript entry is in the database.")
    ] = False,
    keep: Annotated[
        Optional[int],
        typer.Option(
            "--keep",
            metavar="N",
            help="With --apply, afterwards keep only the newest N `migrate-sessions` backups.",
        ),
    ] = None,
    json: Annotated[
        bool, typer.Option("--json", help="Accepted for compatibility; JSON is the default output.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", help="Accepted for compatibility; every file is always reported."),
    ] = False,
    state_dir: Annotated[
        Optional[str],
        typer.Option(
            "--state-dir",
            metavar="DIR",
            help="The OpenClaw state dir: lossless-claw-migrate-sessions' name for --openclaw-dir.",
        ),
    ] = None,
) -> None:
    """Backfill OpenClaw session transcripts into lcm.db; a dry run unless --apply.

    Without --file, --sessions-dir or --store it reads <state dir>/agents/*/sessions/*.jsonl
    and every <state dir>/agents/*/agent/openclaw-agent.sqlite. Safe to re-run: entries
    already imported are skipped. Exits 1 when a file failed (its report says why).

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
            "keep": keep,
            "json": json,
            "verbose": verbose,
            "state_dir": state_dir,
        },
    )
