"""`lcm hook` and `lcm serve`: declared here for --help and completion only.

Both doors read their own arguments (see :mod:`lcm_cli.commands.hook` and :mod:`lcm_cli.commands.serve`);
`lcm_cli.cli` routes to them before typer is imported.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer


def _route(ctx: typer.Context, words: list[str]) -> None:
    """Run the door the same way the fast path does (typer is a working door too)."""
    from lcm_cli.cli import _door_command

    root = ctx.find_root().params
    argv = []
    for name in ("db", "config", "openclaw_dir", "format"):
        if root.get(name):
            argv += ["--" + name.replace("_", "-"), root[name]]
    if root.get("pretty"):
        argv.append("--pretty")
    code = _door_command(argv + words)
    raise typer.Exit(code or 0)


def hook(
    ctx: typer.Context,
    operation: Annotated[Optional[str], typer.Argument(help="Operation name, e.g. messages.tail.")] = None,
    list: Annotated[  # noqa: A002 - the parameter is named after its option, as the drift test checks
        bool, typer.Option("--list", help="Print every operation with its parameter JSON Schema.")
    ] = False,
) -> None:
    """Run one operation with JSON parameters from stdin; the envelope goes to stdout.

    Parameters are one JSON object keyed by field name (camelCase or snake_case); empty
    stdin means {}, e.g. {"sessionKey": "agent:main:main", "count": 5}. Errors go to
    stderr with the usual exit statuses.

    Example: echo '{"sessionKey": "agent:main:main", "count": 5}' | lcm hook messages.tail
    """
    _route(ctx, ["hook"] + (["--list"] if list else []) + ([operation] if operation else []))


def serve(
    ctx: typer.Context,
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Serve newline-delimited JSON on stdin/stdout.")
    ] = False,
    socket: Annotated[
        Optional[str], typer.Option("--socket", metavar="PATH", help="Serve on a Unix socket (mode 0600).")
    ] = None,
    max_request_bytes: Annotated[
        Optional[str],
        typer.Option(
            "--max-request-bytes", metavar="N", help="Longest request line accepted (default 32 MiB)."
        ),
    ] = None,
) -> None:
    """Keep one warm engine process answering {id, method, params} requests.

    Answers are {id, result} (the same envelope as the command) or {id, error}. Server
    methods: health, reload, shutdown. Stops cleanly on EOF, shutdown or SIGTERM.

    Example: lcm serve --stdio
    """
    words = ["serve"] + (["--stdio"] if stdio else []) + (["--socket", socket] if socket else [])
    if max_request_bytes:
        words += ["--max-request-bytes", max_request_bytes]
    _route(ctx, words)
