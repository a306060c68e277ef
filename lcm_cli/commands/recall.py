"""Recall commands: grep, describe, expand, expand-query, export. Each collects its options,
calls the operation and hands the envelope to the output sink."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import (
    After,
    AllConversations,
    Before,
    Between,
    ConversationId,
    Cursor,
    Limit,
    MaxTokens,
    Recency,
    SessionKey,
)
from lcm_cli.commands.runner import run

SessionFamilyKey = Annotated[
    Optional[str],
    typer.Option(
        "--session-key",
        metavar="KEY",
        help="Search the whole session family of KEY: its active and archived conversations.",
    ),
]


def grep(
    ctx: typer.Context,
    pattern: Annotated[str, typer.Argument(metavar="PATTERN", help="A regex (default) or full-text words.")],
    mode: Annotated[
        Optional[str],
        typer.Option(
            "--mode", metavar="MODE", help="regex (default, case-sensitive) or full_text (words, AND)."
        ),
    ] = None,
    scope: Annotated[
        Optional[str],
        typer.Option("--scope", metavar="SCOPE", help="messages, summaries, both (default) or files."),
    ] = None,
    file_id: Annotated[
        Optional[list[str]],
        typer.Option("--file-id", metavar="FILE_ID", help="With --scope files: only this file; repeatable."),
    ] = None,
    conversation_id: ConversationId = None,
    session_key: SessionFamilyKey = None,
    all_conversations: AllConversations = False,
    after: After = None,
    before: Before = None,
    between: Between = None,
    recency: Recency = None,
    sort: Annotated[
        Optional[str],
        typer.Option(
            "--sort", metavar="SORT", help="recency (default), relevance or hybrid (full_text only)."
        ),
    ] = None,
    limit: Limit = None,
    cursor: Cursor = None,
    deadline_ms: Annotated[
        Optional[str],
        typer.Option(
            "--deadline-ms", metavar="MS", help="Stop searching after MS milliseconds (default 5000)."
        ),
    ] = None,
) -> None:
    """Search messages, summaries or large files; meta says what ran and if it is complete.

    --session-key searches the whole session family (active and archived conversations).

    Example: lcm grep "deploy failed" --mode full_text --session-key agent:main:main
    """
    run(
        ctx,
        "grep",
        {
            "mode": mode,
            "scope": scope,
            "file_id": file_id or [],
            "conversation_id": conversation_id,
            "session_key": session_key,
            "all_conversations": all_conversations,
            "after": after,
            "before": before,
            "between": between,
            "recency": recency,
            "sort": sort,
            "limit": limit,
            "cursor": cursor,
            "deadline_ms": deadline_ms,
        },
        args=(pattern,),
    )


def describe(
    ctx: typer.Context,
    item_id: Annotated[str, typer.Argument(metavar="ID", help="A summary id (sum_…) or file id (file_…).")],
    conversation_id: ConversationId = None,
    session_key: SessionFamilyKey = None,
    all_conversations: AllConversations = False,
    max_bytes: Annotated[
        Optional[str],
        typer.Option(
            "--max-bytes", metavar="N", help="File content cap in bytes, 1..512000 (default 32768)."
        ),
    ] = None,
    max_tokens: MaxTokens = None,
    cursor: Cursor = None,
) -> None:
    """Describe one summary (sum_…) or large file (file_…): metadata, links, content.

    A summary shows its time range, parents, children, source message ids and file ids; a
    file its metadata, exploration summary and content up to --max-bytes.

    Example: lcm describe sum_1b2c3d4e5f607182 --max-tokens 800
    """
    run(
        ctx,
        "describe",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "all_conversations": all_conversations,
            "max_bytes": max_bytes,
            "max_tokens": max_tokens,
            "cursor": cursor,
        },
        args=(item_id,),
    )


def expand(
    ctx: typer.Context,
    summary_id: Annotated[str, typer.Argument(metavar="SUMMARY_ID", help="The summary to expand.")],
    conversation_id: ConversationId = None,
    session_key: SessionFamilyKey = None,
    all_conversations: AllConversations = False,
    max_tokens: MaxTokens = None,
    cursor: Cursor = None,
) -> None:
    """A summary's source messages, in order, within a token cap (default maxExpandTokens).

    Reports what was left out and a cursor that continues exactly there.

    Example: lcm expand sum_1b2c3d4e5f607182 --max-tokens 2000
    """
    run(
        ctx,
        "expand",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "all_conversations": all_conversations,
            "max_tokens": max_tokens,
            "cursor": cursor,
        },
        args=(summary_id,),
    )


def expand_query(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(metavar="PROMPT", help="What to answer from the history.")],
    query: Annotated[
        Optional[str], typer.Option("--query", metavar="TEXT", help="Find summaries by full-text search.")
    ] = None,
    summary_id: Annotated[
        Optional[list[str]],
        typer.Option("--summary-id", metavar="ID", help="Expand this summary; repeatable."),
    ] = None,
    conversation_id: ConversationId = None,
    session_key: SessionFamilyKey = None,
    all_conversations: AllConversations = False,
    max_tokens: Annotated[
        Optional[str], typer.Option("--max-tokens", metavar="N", help="Answer length target (default 2000).")
    ] = None,
    token_cap: Annotated[
        Optional[str],
        typer.Option("--token-cap", metavar="N", help="Evidence budget in tokens (default maxExpandTokens)."),
    ] = None,
    timeout_ms: Annotated[
        Optional[str],
        typer.Option("--timeout-ms", metavar="MS", help="Overall time limit (default delegationTimeoutMs)."),
    ] = None,
) -> None:
    """Answer PROMPT from expanded summaries with the configured model.

    Without a model it returns the ranked, expanded evidence and says no answer was generated.

    Example: lcm expand-query "Why did the deploy fail?" --query deploy --session-key agent:main:main
    """
    run(
        ctx,
        "expand.query",
        {
            "query": query,
            "summary_id": summary_id or [],
            "conversation_id": conversation_id,
            "session_key": session_key,
            "all_conversations": all_conversations,
            "max_tokens": max_tokens,
            "token_cap": token_cap,
            "timeout_ms": timeout_ms,
        },
        args=(prompt,),
    )


def export(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    to: Annotated[
        Optional[str],
        typer.Option("--to", metavar="FORMAT", help="markdown, or jsonl (an OpenClaw transcript)."),
    ] = None,
    out: Annotated[
        Optional[str],
        typer.Option(
            "--out", metavar="PATH", help="Write here (must not exist); default: the document on stdout."
        ),
    ] = None,
    include_summaries: Annotated[
        bool, typer.Option("--include-summaries", help="Also export the summary DAG.")
    ] = False,
) -> None:
    """Export one conversation's raw messages as Markdown or a JSONL transcript.

    The JSONL form re-imports with `lcm migrate-sessions --file` to the same messages.

    Example: lcm export --session-key agent:main:main --to jsonl --out main.jsonl
    """
    run(
        ctx,
        "export",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "to": to,
            "out": out,
            "include_summaries": include_summaries,
        },
    )
