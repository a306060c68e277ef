"""`lcm rotate`: cut a session's transcript to its preserved tail; LCM keeps the rest."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import ConversationId, SessionKey
from lcm_cli.commands.runner import run


def rotate(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Really rotate (dry run otherwise: nothing is written).")
    ] = False,
    backup: Annotated[
        Optional[str],
        typer.Option(
            "--backup",
            metavar="MODE",
            help="Database backup before the rewrite: latest (default, the rolling rotate-latest copy), "
            "full (a timestamped copy) or none.",
        ),
    ] = None,
    session_file: Annotated[
        Optional[str],
        typer.Option(
            "--session-file",
            metavar="PATH",
            help="The session's transcript JSONL (default: the path its bootstrap checkpoint records).",
        ),
    ] = None,
) -> None:
    """Rotate a session's transcript: keep the preserved tail and current settings, drop the rest.

    With --apply: import what the transcript has that lcm.db lacks, leaf-compact the raw
    messages outside the fresh tail, back up the database, then replace the transcript
    atomically (the old file is kept as <path>.rotate-<stamp>.bak) and refresh the
    bootstrap checkpoint so nothing is replayed. Same conversation row, nothing lost.
    Ignored and stateless sessions, and sessions without LCM state, are refused.

    Example: lcm rotate --session-key agent:main:main --apply --backup none
    """
    run(
        ctx,
        "rotate",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "apply": apply,
            "backup": backup,
            "session_file": session_file,
        },
    )
