"""`lcm compact`, `lcm context show`, `lcm maintain`: compaction and the assembled context."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.ingest import SessionId
from lcm_cli.commands.options import GLOBALS_EPILOG, ConversationId, SessionKey
from lcm_cli.commands.runner import run

TokenBudget = Annotated[
    Optional[str],
    typer.Option(
        "--token-budget",
        metavar="N",
        help="Model context window in tokens (default 128000, capped by maxAssemblyTokenBudget).",
    ),
]
Model = Annotated[
    Optional[str],
    typer.Option(
        "--model",
        metavar="REF",
        help="The host's model ref (provider/model); picks contextThresholdOverrides.",
    ),
]
CurrentTokenCount = Annotated[
    Optional[str],
    typer.Option("--current-token-count", metavar="N", help="Prompt tokens the host observed last turn."),
]
Force = Annotated[
    bool, typer.Option("--force", help="Run even when below the threshold / past a retry backoff.")
]


def compact(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    session_id: SessionId = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Really compact (dry run on an in-memory copy otherwise).")
    ] = False,
    token_budget: TokenBudget = None,
    compaction_target: Annotated[
        Optional[str],
        typer.Option(
            "--compaction-target",
            metavar="TARGET",
            help="budget (default: until under the budget) or threshold (contextThreshold x budget).",
        ),
    ] = None,
    force: Force = False,
    manual: Annotated[
        bool,
        typer.Option("--manual", help="An operator's compaction: one sweep, even below the threshold."),
    ] = False,
    until_under_target: Annotated[
        bool,
        typer.Option(
            "--until-under-target",
            help="With --manual: chain sweeps while they make progress until under the target (ours).",
        ),
    ] = False,
    current_token_count: CurrentTokenCount = None,
    model: Model = None,
) -> None:
    """Compact a conversation: leaf passes over old raw messages, then condensation.

    Runs what the host's compact runs: nothing at or below the threshold unless --manual
    or --force. Without --apply this is a dry run on an in-memory copy of the
    conversation, with placeholder summaries: it lists the passes that would run and the
    tokens they would roughly save.

    Example: lcm compact --session-key agent:main:main --manual --apply
    """
    run(
        ctx,
        "session.compact",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "session_id": session_id,
            "apply": apply,
            "token_budget": token_budget,
            "compaction_target": compaction_target,
            "force": force,
            "manual": manual,
            "until_under_target": until_under_target,
            "current_token_count": current_token_count,
            "model": model,
        },
    )


def after_turn(
    ctx: typer.Context,
    session_id: SessionId = None,
    session_key: SessionKey = None,
    session_file: Annotated[
        Optional[str],
        typer.Option(
            "--session-file", metavar="PATH", help="The session's transcript JSONL (reconciled first)."
        ),
    ] = None,
    file: Annotated[
        Optional[list[str]],
        typer.Option("--file", metavar="PATH", help="Read the live messages from PATH instead of stdin."),
    ] = None,
    messages: Annotated[
        Optional[str], typer.Option("--messages", metavar="JSON", help="The live messages as a JSON array.")
    ] = None,
    pre_prompt_message_count: Annotated[
        Optional[str],
        typer.Option(
            "--pre-prompt-message-count",
            metavar="N",
            help="How many of the messages the session had before this turn (default 0: all are new).",
        ),
    ] = None,
    auto_compaction_summary: Annotated[
        Optional[str],
        typer.Option(
            "--auto-compaction-summary",
            metavar="TEXT",
            help="The host's own compaction summary of this turn.",
        ),
    ] = None,
    is_heartbeat: Annotated[
        bool, typer.Option("--is-heartbeat", help="A heartbeat turn: nothing is stored.")
    ] = False,
    token_budget: TokenBudget = None,
    current_token_count: CurrentTokenCount = None,
    model: Model = None,
) -> None:
    """After a turn: store its new messages, then apply the threshold policy.

    The new messages are messages[N:] (N = --pre-prompt-message-count). With
    --session-file the transcript is reconciled first; when it cannot be lined up with
    the database nothing is stored this turn. Over the threshold, the context is
    compacted now (proactiveThresholdCompactionMode inline) or one threshold debt row is
    recorded for `lcm maintain` (deferred, the default).

    Example: echo '[{"role": "user", "content": "Is the nightly green?"}]' | lcm after-turn --session-id 9b1f0c2e-0000-4000-8000-000000000002 --session-key agent:main:main --pre-prompt-message-count 0
    """
    run(
        ctx,
        "session.after_turn",
        {
            "session_id": session_id,
            "session_key": session_key,
            "session_file": session_file,
            "file": file,
            "messages": messages,
            "pre_prompt_message_count": pre_prompt_message_count,
            "auto_compaction_summary": auto_compaction_summary,
            "is_heartbeat": is_heartbeat,
            "token_budget": token_budget,
            "current_token_count": current_token_count,
            "model": model,
        },
    )


def commit_turn(
    ctx: typer.Context,
    advancement_key: Annotated[
        Optional[str],
        typer.Option("--advancement-key", metavar="KEY", help="The host's idempotency key of this turn."),
    ] = None,
    session_id: SessionId = None,
    session_key: SessionKey = None,
    file: Annotated[
        Optional[list[str]],
        typer.Option("--file", metavar="PATH", help="Read the turn's messages from PATH instead of stdin."),
    ] = None,
    messages: Annotated[
        Optional[str], typer.Option("--messages", metavar="JSON", help="The turn's messages as a JSON array.")
    ] = None,
    admission: Annotated[
        Optional[str],
        typer.Option(
            "--admission", metavar="JSON", help="The host's admission anchor (checked, hashed, recorded)."
        ),
    ] = None,
    terminal: Annotated[
        Optional[str],
        typer.Option("--terminal", metavar="JSON", help="The host's terminal-entry anchor."),
    ] = None,
    is_heartbeat: Annotated[
        bool, typer.Option("--is-heartbeat", help="A heartbeat turn: acknowledged, nothing stored.")
    ] = False,
    token_budget: TokenBudget = None,
    current_token_count: CurrentTokenCount = None,
    model: Model = None,
) -> None:
    """Commit one accepted turn, atomically and idempotently by its advancement key.

    What OpenClaw 2026.8+ calls as commitTurn: the turn's messages and its
    turn_advancements ledger row are stored in one transaction. A retry with the same
    key answers status "duplicate" and stores nothing; the same key with another turn
    is refused (TURN_ADVANCEMENT_CONFLICT). Then the threshold policy applies, as after
    `lcm after-turn`.

    Example: lcm commit-turn --advancement-key turn-1 --session-id s1 --session-key agent:main:main --messages '[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]'
    """
    run(
        ctx,
        "session.commit_turn",
        {
            "advancement_key": advancement_key,
            "session_id": session_id,
            "session_key": session_key,
            "file": file,
            "messages": messages,
            "admission": admission,
            "terminal": terminal,
            "is_heartbeat": is_heartbeat,
            "token_budget": token_budget,
            "current_token_count": current_token_count,
            "model": model,
        },
    )


context = typer.Typer(help="The context the model sees.", no_args_is_help=True)


@context.command("show", epilog=GLOBALS_EPILOG)
def context_show(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    session_id: SessionId = None,
    token_budget: TokenBudget = None,
    prompt: Annotated[
        Optional[str],
        typer.Option(
            "--prompt", metavar="TEXT", help="The next prompt (used when promptAwareEviction is on)."
        ),
    ] = None,
    messages: Annotated[
        Optional[str],
        typer.Option(
            "--messages",
            metavar="JSON",
            help="The host's live messages: the fallback, a fork's live suffix, large tool outputs to stub.",
        ),
    ] = None,
    available_tools: Annotated[
        Optional[str],
        typer.Option(
            "--available-tools",
            metavar="NAMES",
            help="The host's tools this turn (JSON array or comma-separated); with --prompt the host "
            "delivers the turn separately and a real trailing assistant reply is kept.",
        ),
    ] = None,
) -> None:
    """The assembled context exactly as the model would see it, with token totals.

    Example: lcm context show --conversation-id 1 --token-budget 32000 --format table
    """
    run(
        ctx,
        "context.assemble",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "session_id": session_id,
            "token_budget": token_budget,
            "prompt": prompt,
            "messages": messages,
            "available_tools": available_tools,
        },
    )


def maintain(
    ctx: typer.Context,
    conversation_id: ConversationId = None,
    session_key: SessionKey = None,
    session_id: SessionId = None,
    token_budget: TokenBudget = None,
    force: Force = False,
) -> None:
    """Drain a conversation's deferred compaction debt now (the host's maintain step).

    Example: lcm maintain --session-key agent:main:main
    """
    run(
        ctx,
        "session.maintain",
        {
            "conversation_id": conversation_id,
            "session_key": session_key,
            "session_id": session_id,
            "token_budget": token_budget,
            "force": force,
        },
    )
