"""Read commands: status, conversations, messages, summaries. Each is a few lines:
collect the options, call the operation, hand the envelope to the output sink."""

from __future__ import annotations

from typing import Annotated

import typer

from lcm_cli.commands.options import (
    GLOBALS_EPILOG,
    After,
    Before,
    Between,
    ConversationId,
    Count,
    Cursor,
    Depth,
    IncludeContent,
    Kind,
    Limit,
    MaxTokens,
    Recency,
    Role,
    SessionKey,
)
from lcm_cli.commands.runner import run

conversations = typer.Typer(help="List conversations or show one in detail.", no_args_is_help=False)
messages = typer.Typer(help="Page through a conversation's messages or read its fresh tail.")
summaries = typer.Typer(help="Page through the summary DAG or show one summary with its neighbours.")


def status(ctx: typer.Context) -> None:
    """Database-wide counts, token totals, time coverage and maintenance state.

    Example: lcm status --pretty
    """
    run(ctx, "status", {})


@conversations.command("list", epilog=GLOBALS_EPILOG)
def conversations_list(ctx: typer.Context, limit: Limit = None, cursor: Cursor = None) -> None:
    """Conversations, most recently updated first, with message, summary and tail figures.

    Example: lcm conversations list --limit 20
    """
    run(ctx, "conversations.list", {"limit": limit, "cursor": cursor})


@conversations.command("show", epilog=GLOBALS_EPILOG)
def conversations_show(
    ctx: typer.Context, conversation_id: ConversationId = None, session_key: SessionKey = None
) -> None:
    """One conversation: figures, summary depths, context, telemetry, maintenance, bootstrap.

    Example: lcm conversations show --session-key agent:main:main
    """
    run(ctx, "conversations.show", {"conversation_id": conversation_id, "session_key": session_key})


@messages.command("list", epilog=GLOBALS_EPILOG)
def messages_list(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    after: After = None,
    before: Before = None,
    between: Between = None,
    recency: Recency = None,
    limit: Limit = None,
    cursor: Cursor = None,
    role: Role = None,
    include_content: IncludeContent = False,
    max_tokens: MaxTokens = None,
) -> None:
    """A conversation's messages, newest first, with previews (or full content).

    Example: lcm messages list --conversation-id 1 --role user --recency 2d
    """
    run(
        ctx,
        "messages.list",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "after": after,
            "before": before,
            "between": between,
            "recency": recency,
            "limit": limit,
            "cursor": cursor,
            "role": role or [],
            "include_content": include_content,
            "max_tokens": max_tokens,
        },
    )


@messages.command("tail", epilog=GLOBALS_EPILOG)
def messages_tail(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    count: Count = None,
) -> None:
    """The fresh tail: newest raw messages in context, oldest first, with full content.

    Example: lcm messages tail --session-key agent:main:main --count 10
    """
    run(
        ctx, "messages.tail", {"conversation_id": conversation_id, "session_key": session_key, "count": count}
    )


@summaries.command("list", epilog=GLOBALS_EPILOG)
def summaries_list(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    after: After = None,
    before: Before = None,
    between: Between = None,
    recency: Recency = None,
    limit: Limit = None,
    cursor: Cursor = None,
    include_content: IncludeContent = False,
    depth: Depth = None,
    kind: Kind = None,
) -> None:
    """Summaries (one conversation, or all), newest coverage first.

    Example: lcm summaries list --conversation-id 1 --kind condensed
    """
    run(
        ctx,
        "summaries.list",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "after": after,
            "before": before,
            "between": between,
            "recency": recency,
            "limit": limit,
            "cursor": cursor,
            "include_content": include_content,
            "depth": depth,
            "kind": kind,
        },
    )


@summaries.command("show", epilog=GLOBALS_EPILOG)
def summaries_show(
    ctx: typer.Context,
    summary_id: Annotated[
        str, typer.Argument(metavar="SUMMARY_ID", help="A summary id such as sum_1b2c3d4e5f607182.")
    ],
    max_tokens: MaxTokens = None,
) -> None:
    """One summary with full content, its parents (summaries that consume it), its children
    (its source summaries) and its source messages.

    Example: lcm summaries show sum_1b2c3d4e5f607182 --format table
    """
    run(ctx, "summaries.show", {"max_tokens": max_tokens}, args=(summary_id,))
