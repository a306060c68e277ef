"""`lcm backup [list|verify|restore]`: online backups of lcm.db and getting them back."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lcm_cli.commands.options import GLOBALS_EPILOG
from lcm_cli.commands.runner import run

# No help= here: the callback's docstring (the `lcm backup` command itself) is the help.
backup = typer.Typer(invoke_without_command=True)


@backup.callback(epilog=GLOBALS_EPILOG)
def backup_create(
    ctx: typer.Context,
    out: Annotated[
        Optional[str],
        typer.Option(
            "--out",
            metavar="PATH",
            help="Where to write the copy (default: beside the database, timestamped).",
        ),
    ] = None,
    quick: Annotated[
        bool, typer.Option("--quick", help="Check the copy with quick_check instead of integrity_check.")
    ] = False,
    keep: Annotated[
        Optional[str],
        typer.Option("--keep", metavar="N", help="Afterwards keep only the newest N `backup` backups."),
    ] = None,
) -> None:
    """Back up lcm.db online (the live agent keeps writing), check the copy, write a manifest.

    Subcommands list, verify and restore backups.

    Example: lcm backup --keep 5
    """
    if ctx.invoked_subcommand is None:
        run(ctx, "backup.create", {"out": out, "quick": quick, "keep": keep})


@backup.command("list", epilog=GLOBALS_EPILOG)
def backup_list(ctx: typer.Context) -> None:
    """Backups beside the database, newest first, with their manifest status.

    Example: lcm backup list --format table
    """
    run(ctx, "backup.list", {})


@backup.command("verify", epilog=GLOBALS_EPILOG)
def backup_verify(
    ctx: typer.Context, path: Annotated[str, typer.Argument(metavar="PATH", help="The backup file.")]
) -> None:
    """Re-check a backup against its manifest: size, sha256, integrity and row counts.

    Example: lcm backup verify ~/.openclaw/lcm.db.backup-20260710T123456789Z-k3x9q2.bak
    """
    run(ctx, "backup.verify", {}, args=(path,))


@backup.command("restore", epilog=GLOBALS_EPILOG)
def backup_restore(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(metavar="PATH", help="The backup file.")],
    apply: Annotated[
        bool, typer.Option("--apply", help="Really replace the database (dry run otherwise).")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Restore even while another process has the database open.")
    ] = False,
) -> None:
    """Replace lcm.db with a verified backup; the replaced file is kept as a backup.

    Example: lcm backup restore ~/.openclaw/lcm.db.backup-20260710T123456789Z-k3x9q2.bak --apply
    """
    run(ctx, "backup.restore", {"apply": apply, "force": force}, args=(path,))
