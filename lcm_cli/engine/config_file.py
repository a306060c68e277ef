"""Reading openclaw.json, and rewriting one Lossless key in it without risk.

Only strict JSON is accepted (OpenClaw itself takes JSON5, but a JSON5 file cannot be
rewritten without losing its comments, so we refuse it). Only the Lossless plugin entry
(``plugins.entries.lossless-claw.config``) is ever returned to callers: other sections
of openclaw.json hold credentials and must never be printed.
"""

from __future__ import annotations

import json
import math
import os
import stat
from datetime import datetime, timezone
from typing import Any

from lcm_cli.engine.durable import fsync_dir
from lcm_cli.engine.errors import LcmError

PLUGIN_ID = "lossless-claw"
# The levels from the root to the Lossless config, with the label used in errors.
PLUGIN_LEVELS: tuple[tuple[str, str], ...] = (
    ("plugins", "plugins"),
    ("entries", "plugins.entries"),
    (PLUGIN_ID, f"plugins.entries.{PLUGIN_ID}"),
    ("config", f"plugins.entries.{PLUGIN_ID}.config"),
)


def _reject_constant(name: str) -> Any:
    # JSON.parse rejects NaN/Infinity; so do we, so both tools agree on what is valid.
    raise ValueError(f"{name} is not valid JSON")


def parse_strict_json(text: str) -> Any:
    """Parse strict JSON (no NaN/Infinity, no comments, no trailing commas)."""
    return json.loads(text, parse_constant=_reject_constant)


def read_config_root(config_path: str) -> dict[str, Any] | None:
    """The whole openclaw.json as a dict, or None when the file does not exist."""
    try:
        with open(config_path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise LcmError(
            "CONFIG_PARSE_FAILED",
            f"Config path {config_path} is a directory, not a JSON file; pass --config with the openclaw.json file.",
            {"configPath": config_path},
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LcmError(
            "CONFIG_PARSE_FAILED",
            f"Cannot read {config_path}: {exc}. Check its permissions and encoding (UTF-8).",
            {"configPath": config_path},
        ) from None
    try:
        root = parse_strict_json(text)
    except ValueError as exc:
        raise LcmError(
            "CONFIG_PARSE_FAILED",
            f"{config_path} is not strict JSON ({exc}). Comments, trailing commas and other "
            "JSON5 syntax are not supported; fix the file or pass --config.",
            {"configPath": config_path},
        ) from None
    if not isinstance(root, dict):
        raise LcmError(
            "CONFIG_PARSE_FAILED",
            f"{config_path} must hold a JSON object at its root.",
            {"configPath": config_path},
        )
    return root


def plugin_config_of(root: dict[str, Any] | None, config_path: str) -> dict[str, Any]:
    """The Lossless plugin config object inside ``root`` ({} when any level is absent)."""
    node: Any = root or {}
    for key, label in PLUGIN_LEVELS:
        if key not in node:
            return {}
        node = node[key]
        if not isinstance(node, dict):
            raise LcmError(
                "CONFIG_SHAPE_INVALID",
                f"`{label}` in {config_path} must be a JSON object.",
                {"configPath": config_path, "key": key},
            )
    plugin: dict[str, Any] = node
    return plugin


def check_includes(root: dict[str, Any], config_path: str) -> None:
    """Refuse ``$include`` at the root, on the path to the Lossless config, or inside it."""
    node: Any = root
    labels = ("root",) + tuple(label for _, label in PLUGIN_LEVELS)
    keys = (None,) + tuple(key for key, _ in PLUGIN_LEVELS)
    for key, label in zip(keys, labels):
        if key is not None:
            if not isinstance(node, dict) or key not in node:
                return
            node = node[key]
        if isinstance(node, dict) and "$include" in node:
            raise LcmError(
                "CONFIG_INCLUDE_UNSUPPORTED",
                f"{config_path} uses $include at `{label}`; lcm cannot rewrite included "
                "config safely. Edit the included file by hand.",
                {"configPath": config_path, "includePath": label},
            )


def split_dot_path(path: str) -> list[str]:
    """Split a config dot path, refusing empty or space-padded segments."""
    segments = path.split(".")
    if not path or any(not s or s != s.strip() for s in segments):
        raise LcmError(
            "CONFIG_VALIDATION_FAILED",
            f"Invalid config path {path!r}: use dot-separated key names such as "
            "`freshTailCount` or `autoRotateSessionFiles.enabled`.",
            {"path": path},
        )
    return segments


# --- writing ---------------------------------------------------------------------------


def _js_number(value: Any) -> Any:
    """Make floats print like JavaScript numbers (an integral value has no ``.0``)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_number(v) for v in value]
    return value


def serialize_config(root: dict[str, Any]) -> str:
    """The file text: 2-space indent, key order kept, non-ASCII raw, trailing newline."""
    return json.dumps(_js_number(root), indent=2, ensure_ascii=False) + "\n"


def backup_stamp(now: datetime | None = None) -> str:
    """UTC ISO-8601 with ``-``, ``:`` and ``.`` removed, e.g. ``20260710T123456789Z``."""
    now = now or datetime.now(timezone.utc)
    iso = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    return iso.replace("-", "").replace(":", "").replace(".", "")


def write_with_backup(config_path: str, new_text: str) -> str:
    """Back up ``config_path`` exclusively, then atomically replace it with ``new_text``.

    Returns the backup path. The temp file is a sibling (same filesystem, so the rename
    is atomic), created exclusively with the original mode, fsynced before the rename;
    the directory is fsynced after it so the rename itself survives a crash.
    """
    import shutil  # write-path imports, kept off the read commands' start-up
    import uuid

    backup_path = f"{config_path}.lcm-backup-{backup_stamp()}"
    try:
        with open(config_path, "rb") as src, open(backup_path, "xb") as dst:
            shutil.copyfileobj(src, dst)
            dst.flush()
            os.fsync(dst.fileno())
    except OSError as exc:
        raise LcmError(
            "CONFIG_BACKUP_FAILED",
            f"Could not create the backup {backup_path} ({exc.strerror or exc}); nothing was "
            "changed. Retry, or check free space and permissions.",
            {"configPath": config_path, "backupPath": backup_path},
        ) from None

    directory = os.path.dirname(config_path) or "."
    mode = stat.S_IMODE(os.stat(config_path).st_mode)
    temp_path = os.path.join(
        directory, f".{os.path.basename(config_path)}.lcm-{os.getpid()}-{uuid.uuid4()}.tmp"
    )
    try:
        fd = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), mode)  # umask may have narrowed the mode given to open()
            handle.write(new_text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_path, config_path)
        fsync_dir(directory)
    except OSError as exc:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise LcmError(
            "CONFIG_WRITE_FAILED",
            f"Could not write {config_path} ({exc.strerror or exc}); the original file is "
            f"unchanged and a backup is at {backup_path}.",
            {"configPath": config_path},
        ) from None
    return backup_path
