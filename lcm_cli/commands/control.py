"""`lcm control`: the host's sanitized control contract (status, doctor, rotate)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import GLOBALS_EPILOG
from lcm_cli.commands.runner import run

control = typer.Typer(invoke_without_command=True)


@control.callback(epilog=GLOBALS_EPILOG)
def control_run(
    ctx: typer.Context,
    operation: Annotated[
        Optional[str],
        typer.Option("--operation", metavar="NAME", help="status, doctor or rotate."),
    ] = None,
    session_key: Annotated[
        Optional[str], typer.Option("--session-key", metavar="KEY", help="The caller's session key.")
    ] = None,
    session_id: Annotated[
        Optional[str], typer.Option("--session-id", metavar="ID", help="The caller's runtime session id.")
    ] = None,
) -> None:
    """Run a control operation; the result holds counts and flags only (no paths or text).

    An operation this lcm cannot run answers CONTROL_UNAVAILABLE with a reasonCode.

    Example: lcm control --operation status --session-key agent:main:main
    """
    if ctx.invoked_subcommand is None:
        run(ctx, "control", {"operation": operation, "session_key": session_key, "session_id": session_id})


@control.command("capabilities", epilog=GLOBALS_EPILOG)
def control_capabilities(ctx: typer.Context) -> None:
    """Which control operations this lcm can run: {status, doctor, rotate}.

    Example: lcm control capabilities
    """
    run(ctx, "control.capabilities", {})
