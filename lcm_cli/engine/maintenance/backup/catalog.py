"""The backups beside a database: listing them and retention."""

from __future__ import annotations

import os
import stat
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from lcm_cli.engine.core.errors import invalid_argument
from lcm_cli.engine.core.files import fsync_dir, remove_quietly
from lcm_cli.engine.maintenance.backup.change_file import SUFFIX as CHANGES_SUFFIX
from lcm_cli.engine.maintenance.backup.change_file import read_manifest as read_change_manifest
from lcm_cli.engine.maintenance.backup.errors import backup_failed
from lcm_cli.engine.maintenance.backup.manifest import manifest_path_for, read_manifest
from lcm_cli.engine.maintenance.backup.names import iso_ms, normalize_label, parse_name, stamp_to_iso

if TYPE_CHECKING:
    from lcm_cli.engine.maintenance.backup.records import BackupEntry


def list_backups(db_path: str) -> list[BackupEntry]:
    """Backups beside the database (``<db name>.*.bak`` and ``*.changes.jsonl.gz``), newest first.

    Each a :class:`~lcm_cli.engine.maintenance.backup.records.BackupEntry` (its fields and
    kinds are described there). No file is hashed: use :func:`verify_backup` for that.
    """
    db_abs = os.path.abspath(db_path)
    directory, db_name = os.path.split(db_abs)
    prefix = db_name + "."
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found: list[BackupEntry] = []
    for name in names:
        if (
            name.startswith(prefix)
            and name.endswith(CHANGES_SUFFIX)
            and len(name) > len(prefix) + len(CHANGES_SUFFIX)
        ):
            found.extend(_change_backup(directory, name, name[len(prefix) : -len(CHANGES_SUFFIX)]))
            continue
        if not (name.startswith(prefix) and name.endswith(".bak")) or len(name) <= len(prefix) + 4:
            continue
        path = os.path.join(directory, name)
        try:
            info = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        label, kind, stamp = parse_name(name[len(prefix) : -len(".bak")])
        manifest, _state = read_manifest(path)
        created = manifest.get("createdAt") if manifest else None
        if not isinstance(created, str):
            created = (
                stamp_to_iso(stamp) if stamp else iso_ms(datetime.fromtimestamp(info.st_mtime, timezone.utc))
            )
        found.append(
            {
                "path": path,
                "name": name,
                "label": label,
                "kind": kind,
                "sizeBytes": info.st_size,
                "createdAt": created,
                "hasManifest": manifest is not None,
                "verifiedAtCreation": (manifest.get("integrity") == "ok") if manifest else None,
                "sizeMatchesManifest": (manifest.get("sizeBytes") == info.st_size) if manifest else None,
            }
        )
    found.sort(key=lambda item: (item["createdAt"], item["name"]), reverse=True)
    return found


def _change_backup(directory: str, name: str, middle: str) -> list[BackupEntry]:
    """A change backup's entry (none when it is not a regular file)."""
    path = os.path.join(directory, name)
    try:
        info = os.stat(path)
    except OSError:
        return []
    if not stat.S_ISREG(info.st_mode):
        return []
    label, _kind, stamp = parse_name(middle)
    manifest = read_change_manifest(path)
    created = manifest.get("createdAt") if manifest else None
    if not isinstance(created, str):
        created = (
            stamp_to_iso(stamp) if stamp else iso_ms(datetime.fromtimestamp(info.st_mtime, timezone.utc))
        )
    return [
        {
            "path": path,
            "name": name,
            "label": label,
            "kind": "changes",
            "sizeBytes": info.st_size,
            "createdAt": created,
            "hasManifest": manifest is not None,
            "verifiedAtCreation": (manifest.get("integrity") == "ok") if manifest else None,
            "sizeMatchesManifest": (manifest.get("sizeBytes") == info.st_size) if manifest else None,
            "rows": manifest.get("changes") if manifest else None,
            "command": manifest.get("command") if manifest else None,
        }
    ]


def prune_backups(db_path: str, keep: int, *, label: str | None = None) -> list[str]:
    """Keep the newest ``keep`` backups (of ``label``, or of every label); delete the rest.

    Rolling ``-latest`` copies are never pruned. Each deleted backup's manifest (and a
    ``-wal`` kept beside a byte-copied one) goes with it. Returns the deleted backup paths.
    """
    if not isinstance(keep, int) or keep < 0:
        raise invalid_argument("--keep must be 0 or more.", {"keep": keep})
    wanted = normalize_label(label) if label is not None else None
    candidates = [
        item
        for item in list_backups(db_path)
        if item["kind"] != "latest" and (wanted is None or item["label"] == wanted)
    ]
    deleted: list[str] = []
    for item in candidates[keep:]:
        path = item["path"]
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise backup_failed(
                f"Could not delete {path} ({exc.strerror or exc}); {len(deleted)} older backups were "
                "deleted before it. Check the directory's permissions.",
                {"path": path, "deleted": deleted},
            ) from None
        remove_quietly(manifest_path_for(path), path + "-wal")
        deleted.append(path)
    if deleted:
        fsync_dir(os.path.dirname(os.path.abspath(db_path)))
    return deleted
