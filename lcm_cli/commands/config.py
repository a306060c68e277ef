"""`lcm config show|get|set`: the Lossless plugin config in openclaw.json."""

from __future__ import annotations

from typing import Annotated

import typer

from lcm_cli.commands.options import GLOBALS_EPILOG
from lcm_cli.commands.runner import run

config = typer.Typer(help="Show, read or change the Lossless plugin config in openclaw.json.")


@config.command("show", epilog=GLOBALS_EPILOG)
def config_show(ctx: typer.Context) -> None:
    """The stored and effective Lossless config, pattern sources and LCM_* overrides.

    Example: lcm config show --pretty
    """
    run(ctx, "config.show", {})


@config.command("get", epilog=GLOBALS_EPILOG)
def config_get(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="PATH", help="Dot path, e.g. freshTailCount.")],
) -> None:
    """One key: whether it is set, its stored value and its effective value.

    Example: lcm config get autoRotateSessionFiles.sizeBytes
    """
    run(ctx, "config.get", {}, args=(path,))


@config.command("set", epilog=GLOBALS_EPILOG)
def config_set(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="PATH", help="Dot path, e.g. freshTailCount.")],
    json_value: Annotated[
        str, typer.Argument(metavar="JSON_VALUE", help="The new value as JSON: 32, true, '\"text\"'.")
    ],
) -> None:
    """Set one key after validating it; backs the file up and replaces it atomically.

    Example: lcm config set freshTailCount 32
    """
    run(ctx, "config.set", {}, args=(path, json_value))
