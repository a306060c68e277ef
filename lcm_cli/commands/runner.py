"""The bridge every command uses: call the operation with the global options, emit the result."""

from __future__ import annotations

from typing import Any

import typer


def run(ctx: typer.Context, name: str, params: dict[str, Any], args: tuple[str, ...] = ()) -> None:
    """Run operation ``name`` and hand its envelope to the output sink in ``ctx.obj``."""
    from lcm_cli.engine.api import call

    state = ctx.find_root().obj
    envelope = call(
        name,
        {k: v for k, v in params.items() if v is not None},
        args=args,
        db=state.db,
        config=state.config,
        openclaw_dir=state.openclaw_dir,
        output_format=state.format,
    )
    state.output.emit(envelope)


def emit(ctx: typer.Context, envelope: dict[str, Any]) -> None:
    """Hand an envelope built by the door itself (help-like commands) to the output sink."""
    ctx.find_root().obj.output.emit(envelope)
