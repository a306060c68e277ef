"""Shared option aliases, defined once so every command spells and documents them alike.

Values are taken as strings and validated by the engine (``lcm_cli.engine.core.params``), so
the error order and codes are the same from every door.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

ConversationId = Annotated[
    Optional[str],
    typer.Option(
        "--conversation-id", metavar="ID", help="Conversation id (digits), from `lcm conversations list`."
    ),
]
SessionKey = Annotated[
    Optional[str],
    typer.Option(
        "--session-key",
        metavar="KEY",
        help="OpenClaw session key; the active conversation wins, then the newest.",
    ),
]
After = Annotated[
    Optional[str],
    typer.Option("--after", metavar="ISO", help="Inclusive lower bound, e.g. 2026-07-01T00:00:00Z."),
]
Before = Annotated[
    Optional[str],
    typer.Option("--before", metavar="ISO", help="Exclusive upper bound, e.g. 2026-07-02T00:00:00Z."),
]
Between = Annotated[
    Optional[str],
    typer.Option(
        "--between", metavar="A..B", help="Both bounds at once: START..END (START inclusive, END exclusive)."
    ),
]
Recency = Annotated[
    Optional[str],
    typer.Option("--recency", metavar="DURATION", help="Only the last N s/m/h/d/w, e.g. 12h or 7d."),
]
Limit = Annotated[
    Optional[str],
    typer.Option("--limit", metavar="N", help="Page size, 1..500 (default 50)."),
]
Cursor = Annotated[
    Optional[str],
    typer.Option("--cursor", metavar="CURSOR", help="Continue after the page that printed this nextCursor."),
]
Role = Annotated[
    Optional[list[str]],
    typer.Option(
        "--role", metavar="ROLE", help="Only this role (system, user, assistant, tool); repeatable."
    ),
]
IncludeContent = Annotated[
    bool,
    typer.Option("--include-content", help="Include full content, not just the 240-character preview."),
]
Depth = Annotated[
    Optional[str],
    typer.Option("--depth", metavar="N", help="Only summaries of this depth (0 = leaf)."),
]
Kind = Annotated[
    Optional[str],
    typer.Option("--kind", metavar="KIND", help="Only leaf or condensed summaries."),
]
Count = Annotated[
    Optional[str],
    typer.Option("--count", metavar="N", help="Tail size, 1..500 (default: effective freshTailCount)."),
]

# Shown under every command's help: global options are accepted anywhere on the line.
GLOBALS_EPILOG = (
    "Global options work anywhere on the line: --db PATH, --config PATH, --openclaw-dir DIR, "
    "--format json|table|tsv, --pretty (see `lcm --help`)."
)
MaxTokens = Annotated[
    Optional[str],
    typer.Option(
        "--max-tokens",
        metavar="N",
        help="Cut the output to about N tokens; reports what was left out and a cursor to continue.",
    ),
]
AllConversations = Annotated[
    bool,
    typer.Option("--all-conversations", help="Search or resolve across every conversation."),
]
