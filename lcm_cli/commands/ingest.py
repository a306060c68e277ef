"""`lcm ingest` and `lcm session ...`: write a session's messages and run its lifecycle."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import GLOBALS_EPILOG, SessionKey
from lcm_cli.commands.runner import run

SessionId = Annotated[
    Optional[str],
    typer.Option(
        "--session-id", metavar="ID", help="OpenClaw runtime session id (the transcript's header id)."
    ),
]


def ingest(
    ctx: typer.Context,
    session_id: SessionId = None,
    session_key: SessionKey = None,
    file: Annotated[
        Optional[list[str]],
        typer.Option(
            "--file",
            metavar="PATH",
            help="Read the messages from PATH instead of stdin ('-' is stdin).",
        ),
    ] = None,
    message: Annotated[
        Optional[str], typer.Option("--message", metavar="JSON", help="One message object as JSON text.")
    ] = None,
    messages: Annotated[
        Optional[str], typer.Option("--messages", metavar="JSON", help="A JSON array of message objects.")
    ] = None,
    is_heartbeat: Annotated[
        bool,
        typer.Option("--is-heartbeat", help="A heartbeat turn: nothing is stored (reported as skipped)."),
    ] = False,
) -> None:
    """Store messages for a session: one JSON object, a JSON array, or JSON lines on stdin.

    Each message is reported as ingested (with its message id and seq) or skipped with
    the reason. Bad JSON or invalid UTF-8 is an INVALID_INPUT error naming the line, and
    nothing is written. Ingest never compacts.

    Example: echo '{"role": "user", "content": "Is the nightly green now?"}' | lcm ingest --session-id 9b1f0c2e-0000-4000-8000-000000000002 --session-key agent:main:main
    """
    run(
        ctx,
        "session.ingest",
        {
            "session_id": session_id,
            "session_key": session_key,
            "file": file,
            "message": message,
            "messages": messages,
            "is_heartbeat": is_heartbeat,
        },
    )


session = typer.Typer(help="A session's lifecycle: bootstrap from its transcript, /new, /reset, end.")


@session.command("bootstrap", epilog=GLOBALS_EPILOG)
def session_bootstrap(
    ctx: typer.Context,
    session_id: SessionId = None,
    session_key: SessionKey = None,
    session_file: Annotated[
        Optional[str], typer.Option("--session-file", metavar="PATH", help="The session's transcript JSONL.")
    ] = None,
    host_store: Annotated[
        Optional[str],
        typer.Option(
            "--host-store",
            metavar="PATH",
            help="The host's SQLite session store (openclaw-agent.sqlite) when there is no JSONL.",
        ),
    ] = None,
) -> None:
    """Import a session's transcript, or only what the database is missing.

    The first import keeps the newest messages within bootstrapMaxTokens; later runs
    find the anchor and import what follows it (at most max(20% of stored, 50) a run).
    A current host (2026.7.2+) keeps no JSONL: without a --session-file that exists, the
    session is read from the host's SQLite store (--host-store, else the agent's
    openclaw-agent.sqlite under the state dir), once, when lcm has no conversation for it.

    Example: lcm session bootstrap --session-id 9b1f0c2e-0000-4000-8000-0000000000a1 --session-file ~/.openclaw/agents/main/sessions/9b1f0c2e-0000-4000-8000-0000000000a1.jsonl
    """
    run(
        ctx,
        "session.bootstrap",
        {
            "session_id": session_id,
            "session_key": session_key,
            "session_file": session_file,
            "host_store": host_store,
        },
    )


@session.command("new", epilog=GLOBALS_EPILOG)
def session_new(ctx: typer.Context, session_id: SessionId = None, session_key: SessionKey = None) -> None:
    """/new: drop messages and shallow summaries from the context (newSessionRetainDepth).

    Messages and summaries stay in the database; only context items are removed.

    Example: lcm session new --session-key agent:main:main
    """
    run(ctx, "session.new", {"session_id": session_id, "session_key": session_key})


@session.command("reset", epilog=GLOBALS_EPILOG)
def session_reset(ctx: typer.Context, session_id: SessionId = None, session_key: SessionKey = None) -> None:
    """/reset: archive the active conversation (manual-reset) and start a fresh one.

    Example: lcm session reset --session-key agent:main:main
    """
    run(ctx, "session.reset", {"session_id": session_id, "session_key": session_key})


@session.command("end", epilog=GLOBALS_EPILOG)
def session_end(
    ctx: typer.Context,
    session_id: SessionId = None,
    session_key: SessionKey = None,
    reason: Annotated[
        Optional[str],
        typer.Option(
            "--reason", metavar="REASON", help="deleted, reset, idle, ... (new/restart/shutdown: no-op)."
        ),
    ] = None,
    next_session_id: Annotated[
        Optional[str], typer.Option("--next-session-id", metavar="ID", help="The session that replaces it.")
    ] = None,
    next_session_key: Annotated[
        Optional[str], typer.Option("--next-session-key", metavar="KEY", help="The replacing session's key.")
    ] = None,
) -> None:
    """Session end: archive the conversation as the host's reason says.

    Example: lcm session end --session-key agent:main:main --reason deleted
    """
    run(
        ctx,
        "session.end",
        {
            "session_id": session_id,
            "session_key": session_key,
            "reason": reason,
            "next_session_id": next_session_id,
            "next_session_key": next_session_key,
        },
    )
