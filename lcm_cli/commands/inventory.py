"""`lcm commands`: a JSON inventory of every command and option, for agents."""

from __future__ import annotations

import typer

from lcm_cli.commands.runner import emit


def commands(ctx: typer.Context) -> None:
    """Every command with its arguments and options (types, defaults, one-line help) as JSON.

    Example: lcm commands --pretty
    """
    from lcm_cli.commands.catalog import build_inventory

    emit(
        ctx, {"ok": True, "command": "commands", "data": build_inventory(ctx.find_root().command), "meta": {}}
    )
