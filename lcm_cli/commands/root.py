"""The root callback: global options, stored for every command in ``ctx.obj``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Optional

import typer


@dataclass
class GlobalState:
    """Global options, shared with every command through ``ctx.obj``."""

    db: str | None = None
    config: str | None = None
    openclaw_dir: str | None = None
    format: str = "json"
    pretty: bool = False
    output: Any = None


def root(
    ctx: typer.Context,
    db: Annotated[
        Optional[str],
        typer.Option("--db", metavar="PATH", help="lcm.db path (beats LCM_DATABASE_PATH and plugin config)."),
    ] = None,
    config: Annotated[
        Optional[str],
        typer.Option("--config", metavar="PATH", help="openclaw.json path (beats OPENCLAW_CONFIG_PATH)."),
    ] = None,
    openclaw_dir: Annotated[
        Optional[str],
        typer.Option(
            "--openclaw-dir",
            metavar="DIR",
            help="OpenClaw state dir (beats LCM_OPENCLAW_DIR, OPENCLAW_STATE_DIR).",
        ),
    ] = None,
    format: Annotated[
        str,
        typer.Option(
            "--format", metavar="FORMAT", show_default=False, help="json (default), table (rich) or tsv."
        ),
    ] = "json",
    pretty: Annotated[bool, typer.Option("--pretty", help="Indent JSON output.")] = False,
    version: Annotated[
        bool, typer.Option("--version", "-v", help="Print the version as JSON and exit.")
    ] = False,
) -> None:
    """Inspect and maintain an agent's Lossless Context Management database (lcm.db).

    JSON on stdout by default; errors as one JSON object on stderr.
    """
    from lcm_cli.render.output import Output

    ctx.obj = GlobalState(db, config, openclaw_dir, format, pretty, Output(format, pretty))
