"""`lcm backup` operations: create, list, verify and restore copies of lcm.db and change backups.

Thin wrappers binding the ``backup_*`` modules of :mod:`lcm_cli.engine.maintenance` to the
registry: the database path comes from the usual precedence (``--db``, ``LCM_DATABASE_PATH``,
plugin config, state dir). ``verify`` and ``restore`` tell a change backup
(:mod:`.change_file`) from a copy by its first bytes and refuse a prune archive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import APPLY, FORCE, KEEP, OUT, QUICK, Request
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.maintenance.backup import catalog as backup_catalog
from lcm_cli.engine.maintenance.backup import create as backup_create
from lcm_cli.engine.maintenance.backup import restore as backup_restore
from lcm_cli.engine.maintenance.backup import verify as backup_verify

if TYPE_CHECKING:
    from lcm_cli.engine.maintenance.backup.records import BackupCatalog


@operation("backup.create")
def create(ctx: Context, req: Request) -> Result:
    """Copy the live database; with ``--keep N`` also prune older backups."""
    result: dict[str, Any] = backup_create.create_backup(
        ctx.database_path,
        out=req[OUT],
        quick=req[QUICK],
        progress=lambda done, total: ctx.report_progress("backing up", done, total),
        protected=ctx.protected_files(),
    )
    ctx.report_progress("done", 1, 1)
    keep = req[KEEP]
    if keep is not None:
        result["pruned"] = backup_catalog.prune_backups(ctx.database_path, keep, label="backup")
    return Result(result)


@operation("backup.list")
def list_backups(ctx: Context, req: Request) -> Result:
    """Every backup file next to lcm.db with its manifest status."""
    data: BackupCatalog = {
        "databasePath": ctx.database_path,
        "backups": backup_catalog.list_backups(ctx.database_path),
    }
    return Result(data)


def _kind(path: str) -> str:
    """``changes`` or ``full`` (a copy, or anything else: its checks say what is wrong); a prune archive is refused."""
    import os

    from lcm_cli.engine.maintenance.backup.change_file import sniff_kind, wrong_kind

    kind = sniff_kind(os.path.abspath(path)) if os.path.isfile(path) else "full"
    if kind == "prune-archive":
        raise wrong_kind(os.path.abspath(path), kind, "database backup")
    return "changes" if kind == "changes" else "full"


def _verify_changes(ctx: Context, path: str) -> dict[str, Any]:
    """A change backup checked end to end, and that it was taken of this database."""
    import os

    from lcm_cli.engine.maintenance.backup.change_file import verify_change_file
    from lcm_cli.engine.maintenance.backup.changes import database_identity

    result = verify_change_file(os.path.abspath(path))
    expected = result["header"].get("databaseIdentity")
    try:
        identity = database_identity(ctx.db)
    except LcmError:
        identity = None  # no database to compare with: the file alone was checked
        result["checks"].append(
            {"name": "database", "ok": None, "expected": expected, "actual": "unreadable"}
        )
        return result
    if identity != expected:
        raise LcmError(
            "BACKUP_WRONG_DATABASE",
            f"{result['backupPath']} is a change backup of another database "
            f"({result['header'].get('databasePath')}), not of {ctx.database_path}. Pass that database with --db.",
            {
                "backupPath": result["backupPath"],
                "databasePath": ctx.database_path,
                "backupDatabasePath": result["header"].get("databasePath"),
            },
        )
    result["checks"].append({"name": "database", "ok": True, "expected": expected, "actual": identity})
    return result


@operation("backup.verify")
def verify(ctx: Context, req: Request) -> Result:
    """Verify one backup; a failed check is an error so scripts can gate on it."""
    (path,) = req.args
    if _kind(path) == "changes":
        return Result(_verify_changes(ctx, path))
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
    """Replace the database with a backup (keeping the replaced file), or undo a change backup."""
    (path,) = req.args
    if _kind(path) == "changes":
        from lcm_cli.engine.maintenance.backup.undo import restore_changes

        ctx.close()  # the read handle must not pin an old snapshot while the undo writes
        return Result(
            restore_changes(
                path,
                ctx.database_path,
                apply=req[APPLY],
                force=req[FORCE],
                timeout_ms=ctx.timeout_ms,
                progress=lambda done, total: ctx.report_progress("restoring", done, total),
            )
        )
    return Result(backup_restore.restore_backup(path, ctx.database_path, apply=req[APPLY], force=req[FORCE]))
