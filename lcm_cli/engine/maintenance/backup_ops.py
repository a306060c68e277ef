"""`lcm backup` operations: create, list, verify and restore copies of lcm.db.

Thin wrappers binding the ``backup_*`` modules of :mod:`lcm_cli.engine.maintenance` to the
registry: the database path comes from the usual precedence (``--db``, ``LCM_DATABASE_PATH``,
plugin config, state dir).
"""

from __future__ import annotations

from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import APPLY, FORCE, KEEP, OUT, QUICK, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.maintenance import backup_catalog, backup_create, backup_restore, backup_verify


@operation("backup.create")
def create(ctx: Context, req: Request) -> Result:
    """Copy the live database; with ``--keep N`` also prune older backups."""
    result: dict[str, Any] = backup_create.create_backup(
        ctx.database_path,
        out=req[OUT],
        quick=req[QUICK],
        progress=lambda done, total: ctx.report_progress("backing up", done, total),
    )
    ctx.report_progress("done", 1, 1)
    keep = req[KEEP]
    if keep is not None:
        result["pruned"] = backup_catalog.prune_backups(ctx.database_path, keep, label="backup")
    return Result(result)


@operation("backup.list")
def list_backups(ctx: Context, req: Request) -> Result:
    """Every backup file next to lcm.db with its manifest status."""
    return Result(
        {"databasePath": ctx.database_path, "backups": backup_catalog.list_backups(ctx.database_path)}
    )


@operation("backup.verify")
def verify(ctx: Context, req: Request) -> Result:
    """Verify one backup; a failed check is an error so scripts can gate on it."""
    (path,) = req.args
    result = backup_verify.verify_backup(path)
    if not result.get("ok"):
        failed = [c["name"] for c in result.get("checks", []) if not c.get("ok")]
        raise LcmError(
            "BACKUP_VERIFY_FAILED",
            f"Backup {path} does not match its manifest ({', '.join(failed) or 'no manifest'}); "
            "do not restore it. Take a new backup with `lcm backup`.",
            result,
        )
    return Result(result)


@operation("backup.restore")
def restore(ctx: Context, req: Request) -> Result:
    """Replace the database with a backup, keeping the replaced file as a backup."""
    (path,) = req.args
    return Result(backup_restore.restore_backup(path, ctx.database_path, apply=req[APPLY], force=req[FORCE]))
