"""The bridge every command uses: call the operation with the global options, emit the result."""

from __future__ import annotations

from typing import Any

import typer


def run(ctx: typer.Context, name: str, params: dict[str, Any], args: tuple[str, ...] = ()) -> None:
    """Run operation ``name`` through the CLI door's helper; a non-zero exit status exits so."""
    from lcm_cli.commands.door import run_cli

    state = ctx.find_root().obj
    status = run_cli(
        name,
        {k: v for k, v in params.items() if v is not None},
        args=args,
        db=state.db,
        config=state.config,
        openclaw_dir=state.openclaw_dir,
        output=state.output,
        output_format=state.format,
    )
    if status:
        raise typer.Exit(status)


def emit(ctx: typer.Context, envelope: dict[str, Any]) -> None:
    """Hand an envelope built by the door itself (help-like commands) to the output sink."""
    ctx.find_root().obj.output.emit(envelope)
