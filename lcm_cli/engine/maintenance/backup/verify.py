"""Verifying a backup against its integrity check and manifest."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.files import hash_file
from lcm_cli.engine.db.connection import busy_timeout_ms
from lcm_cli.engine.maintenance.backup.files import integrity_problems, open_read_only
from lcm_cli.engine.maintenance.backup.manifest import manifest_path_for, read_manifest, row_counts


def _check(name: str, ok: bool, expected: Any, actual: Any) -> dict[str, Any]:
    return {"name": name, "ok": ok, "expected": expected, "actual": actual}


def require_backup(path: str) -> str:
    """The absolute path of the backup file ``path``; BACKUP_NOT_FOUND when there is none."""
    backup = os.path.abspath(path)
    if not os.path.isfile(backup):
        raise LcmError(
            "BACKUP_NOT_FOUND",
            f"No backup file at {backup}. Run `lcm backup list` to see the backups beside the database.",
            {"backupPath": backup},
        )
    return backup


def verify_backup(path: str) -> dict[str, Any]:
    """Re-check a backup against its manifest: size, sha256, integrity_check, pages, row counts.

    Returns ``{backupPath, manifestPath, ok, checks: [{name, ok, expected, actual}]}``;
    a missing manifest or any mismatch makes ``ok`` false (it is not raised). Raises
    BACKUP_NOT_FOUND when the file does not exist.
    """
    backup = require_backup(path)
    manifest_path = manifest_path_for(backup)
    manifest, state = read_manifest(backup)
    checks = [_check("manifest", manifest is not None, "present", state)]
    size, sha256 = hash_file(backup, fsync=False)
    if manifest is not None:
        checks.append(_check("size", manifest.get("sizeBytes") == size, manifest.get("sizeBytes"), size))
        checks.append(_check("sha256", manifest.get("sha256") == sha256, manifest.get("sha256"), sha256))
    try:
        # Nobody writes a backup: open it immutable (no -shm created beside it) unless a
        # -wal sibling holds part of it.
        conn = open_read_only(backup, busy_timeout_ms(), immutable=not os.path.exists(backup + "-wal"))
        try:
            problems = integrity_problems(conn, "integrity_check")
            checks.append(_check("integrity", not problems, "ok", problems[0] if problems else "ok"))
            if manifest is not None:
                pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
                expected_pages = manifest.get("pageCount")
                checks.append(_check("pageCount", expected_pages == pages, expected_pages, pages))
                counts = row_counts(conn)
                expected_counts = manifest.get("tables")
                checks.append(_check("rowCounts", expected_counts == counts, expected_counts, counts))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        checks.append(_check("integrity", False, "ok", f"not a readable SQLite database: {exc}"))
    return {
        "backupPath": backup,
        "manifestPath": manifest_path,
        "ok": all(item["ok"] for item in checks),
        "sizeBytes": size,
        "sha256": sha256,
        "checks": checks,
    }
