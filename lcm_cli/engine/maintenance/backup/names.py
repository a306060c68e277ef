"""The names of backups and their manifests.

Names (docs/reference/operations.md §2.1)
    ``<db dir>/<db file name>.<label>-<stamp>-<rand>.bak`` with the label normalized,
    ``stamp`` like ``20260710T123456789Z`` and 6 base-36 random characters; the manifest
    is ``<backup>.manifest.json``. :func:`list_backups` also understands the plugin's
    rolling ``<db>.<label>-latest.bak``, the importer's ``<db>.migrate-sessions-<stamp>.bak``
    and change backups, ``<db>.<label>-<stamp>-<rand>.changes.jsonl.gz``.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import datetime

from lcm_cli.engine.config.file import backup_stamp

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_STAMP = r"\d{8}T\d{9}Z"
_TIMESTAMPED = re.compile(rf"^(?P<label>.+)-(?P<stamp>{_STAMP})-(?P<rand>[0-9a-z]{{6}})$")
_STAMPED = re.compile(rf"^(?P<label>.+)-(?P<stamp>{_STAMP})$")
_LATEST = re.compile(r"^(?P<label>.+)-latest$")


def normalize_label(label: str | None) -> str:
    """Trim, lowercase, runs of non ``[a-z0-9]`` → ``-``, strip ``-``; empty → ``backup``."""
    text = re.sub(r"[^a-z0-9]+", "-", (label or "").strip().lower()).strip("-")
    return text or "backup"


def _rand6() -> str:
    value = secrets.randbelow(36**6)
    chars = []
    for _ in range(6):
        value, digit = divmod(value, 36)
        chars.append(_BASE36[digit])
    return "".join(reversed(chars))


def iso_ms(moment: datetime) -> str:
    """``moment`` as ISO-8601 UTC text with milliseconds and ``Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def default_backup_path(db_path: str, label: str = "backup", now: datetime | None = None) -> str:
    """``<db dir>/<db file name>.<label>-<stamp>-<rand>.bak`` (docs/reference/operations.md §2.1)."""
    db_abs = os.path.abspath(db_path)
    name = f"{os.path.basename(db_abs)}.{normalize_label(label)}-{backup_stamp(now)}-{_rand6()}.bak"
    return os.path.join(os.path.dirname(db_abs), name)


def change_backup_path(db_path: str, label: str, now: datetime | None = None) -> str:
    """``<db dir>/<db file name>.<label>-<stamp>-<rand>.changes.jsonl.gz``: a change backup."""
    db_abs = os.path.abspath(db_path)
    name = (
        f"{os.path.basename(db_abs)}.{normalize_label(label)}-{backup_stamp(now)}-{_rand6()}.changes.jsonl.gz"
    )
    return os.path.join(os.path.dirname(db_abs), name)


def latest_backup_path(db_path: str, label: str) -> str:
    """``<db dir>/<db file name>.<label>-latest.bak``: the rolling copy (docs/reference/operations.md §2.1)."""
    db_abs = os.path.abspath(db_path)
    name = f"{os.path.basename(db_abs)}.{normalize_label(label)}-latest.bak"
    return os.path.join(os.path.dirname(db_abs), name)


def stamp_to_iso(stamp: str) -> str:
    """A backup name's stamp (``20260710T123456789Z``) as ISO-8601 text."""
    # 20260710T123456789Z -> 2026-07-10T12:34:56.789Z
    return (
        f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}.{stamp[15:18]}Z"
    )


def parse_name(middle: str) -> tuple[str, str, str | None]:
    """(label, kind, stamp) from the part of a backup name between ``<db>.`` and ``.bak``."""
    match = _TIMESTAMPED.match(middle) or _STAMPED.match(middle)
    if match:
        return match["label"], "timestamped", match["stamp"]
    match = _LATEST.match(middle)
    if match:
        return match["label"], "latest", None
    return middle, "other", None
