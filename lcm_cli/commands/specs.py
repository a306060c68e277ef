"""The CLI door's own declarations: the commands that are not operations, the help of the
command groups, and the sections of `lcm --help`."""

from __future__ import annotations

from lcm_cli.engine.core.registry import OpSpec

# Commands of the CLI door that are not operations: they read their own arguments
# (`lcm hook`, `lcm serve`) or describe the others (`lcm commands`).
DOOR_COMMANDS: dict[str, OpSpec] = {
    "hook": OpSpec(
        "lcm_cli.commands.hook",
        ("list",),
        args=("operation",),
        opens_db=False,
        help=(
            "Run one operation with JSON parameters from stdin; the envelope goes to stdout.\n\n"
            "Parameters are one JSON object keyed by field name (camelCase or snake_case); empty "
            'stdin means {}, e.g. {"sessionKey": "agent:main:main", "count": 5}. Errors go to '
            "stderr with the usual exit statuses."
        ),
        example="""echo '{"sessionKey": "agent:main:main", "count": 5}' | lcm hook messages.tail""",
    ),
    "serve": OpSpec(
        "lcm_cli.commands.serve",
        ("stdio", "socket", "max_request_bytes"),
        opens_db=False,
        help=(
            "Keep one warm engine process answering {id, method, params} requests.\n\n"
            "Answers are {id, result} (the same envelope as the command) or {id, error}. Server "
            "methods: health, reload, shutdown. Stops cleanly on EOF, shutdown or SIGTERM."
        ),
        example="lcm serve --stdio",
    ),
    "browse": OpSpec(
        "lcm_cli.commands.browse",
        ("conversation_id", "session_key", "screenshot", "force"),
        opens_db=False,
        interactive=True,
        help=(
            "Look around lcm.db in a terminal app: agents and conversations, messages, the summary "
            "DAG, the assembled context, large files and doctor.\n\n"
            "Read-only: every screen is read through the engine's read operations, each on its own "
            "short-lived read-only connection, so the app never holds a lock while you read. Press / "
            "to search, ? for the keys. Needs the browse extra: pip install 'lcm-cli[browse]'."
        ),
        example="lcm browse --session-key agent:main:main --screenshot browse.svg",
        param_help={
            "conversation_id": "Open this conversation first.",
            "session_key": "Open this session's conversation first (the active one wins).",
            "force": "Replace the file at --screenshot if there is one (atomically).",
        },
        outputs={"screenshot": "file"},
    ),
    "commands": OpSpec(
        "lcm_cli.commands.catalog",
        opens_db=False,
        help="Every command with its arguments and options (types, defaults, one-line help) as JSON.",
        example="lcm commands --pretty",
    ),
}


# Help of the command groups that only hold subcommands (`lcm conversations --help`).
# A group that runs itself (`lcm backup`, `lcm doctor`) is documented by its operation.
GROUPS: dict[str, str] = {
    "conversations": "List conversations or show one in detail.",
    "messages": "Page through a conversation's messages or read its fresh tail.",
    "summaries": (
        "Page through the summary DAG, show one summary, or operate on it: rewrite, dissolve, "
        "transplant, graph."
    ),
    "context": "The context the model sees.",
    "session": "A session's lifecycle: bootstrap from its transcript, /new, /reset, end.",
    "config": "Show, read or change the Lossless plugin config in openclaw.json.",
    "prompts": "Summary prompt templates (leaf, condensed-d1..d3, system): list, show, export, diff, render.",
}


# `lcm --help` in sections, each in the order a reader looks for it; a group's subcommands
# follow OPERATIONS.
COMMAND_SECTIONS: dict[str, tuple[str, ...]] = {
    "Core (read the history)": (
        "status",
        "conversations",
        "messages",
        "summaries",
        "context",
        "browse",
        "commands",
    ),
    "Recall (search and expand)": ("grep", "describe", "expand", "expand-query", "export", "tool"),
    "Maintenance (keep, check, repair)": (
        "migrate-sessions",
        "backup",
        "doctor",
        "prune",
        "vacuum",
        "compact",
        "maintain",
        "rotate",
        "config",
        "prompts",
        "control",
    ),
    "Engine doors (what the host calls each turn)": (
        "ingest",
        "after-turn",
        "commit-turn",
        "session",
        "hook",
        "serve",
    ),
}
