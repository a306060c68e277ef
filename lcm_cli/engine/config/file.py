"""Reading openclaw.json, and rewriting one Lossless key in it without risk.

Only strict JSON is accepted (OpenClaw itself takes JSON5, but a JSON5 file cannot be
rewritten without losing its comments, so we refuse it). Only the Lossless settings are
ever returned to callers: other sections of openclaw.json hold credentials and must never
be printed.

The settings live in two plugin entries: ``plugins.entries.lcm.config`` (the entry of
lcm's own OpenClaw plugin, :data:`PLUGIN_IDS` first) and, for users who switched from
lossless-claw, ``plugins.entries.lossless-claw.config``. Both are read; where both set a
key, lcm's entry wins. ``config set`` writes to lcm's entry once it exists.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from datetime import datetime, timezone

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.files import atomic_write, atomic_writer, private_mode, remove_orphans
from lcm_cli.engine.core.held_files import open_input, open_input_text

if TYPE_CHECKING:
    from typing import Any

#: lcm's own plugin entry (the OpenClaw shim's), then lossless-claw's, whose settings are
#: still read: where both set a key, the first wins.
PLUGIN_IDS = ("lcm", "lossless-claw")
LEGACY_PLUGIN_ID = PLUGIN_IDS[1]


def plugin_levels(plugin_id: str) -> tuple[tuple[str, str], ...]:
    """The levels from the root to one entry's config, with the label used in errors."""
    return (
        ("plugins", "plugins"),
        ("entries", "plugins.entries"),
        (plugin_id, f"plugins.entries.{plugin_id}"),
        ("config", f"plugins.entries.{plugin_id}.config"),
    )


def _reject_constant(name: str) -> Any:
    # JSON.parse rejects NaN/Infinity; so do we, so both tools agree on what is valid.
    raise ValueError(f"{name} is not valid JSON")


# A ``\uD800``-``\uDFFF`` escape: only these can decode to a lone surrogate.
_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"


def _first_lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) holding a lone UTF-16 surrogate, or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value
        return None
    if isinstance(value, dict):
        items: list[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        found = _first_lone_surrogate(item)
        if found is not None:
            return found
    return None


def parse_strict_json(text: str) -> Any:
    """Parse strict JSON (no NaN/Infinity, no comments, no trailing commas), depth-bounded.

    A lone surrogate (the escape ``"\\ud800"``, or an undecodable byte smuggled in through argv) is
    refused too: it cannot be written back as UTF-8 or printed, so it is bad input here
    rather than a crash later.
    """
    from lcm_cli.engine.core.limits import loads_bounded

    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the text holds a character that is not valid UTF-8") from None
    value = loads_bounded(text, parse_constant=_reject_constant)
    if re.search(_SURROGATE_ESCAPE, text):
        found = _first_lone_surrogate(value)
        if found is not None:
            raise ValueError(
                f"lone surrogate escape in the string {found.encode('utf-8', 'backslashreplace').decode()[:60]!r}"
            )
    return value


def read_config_root(config_path: str) -> dict[str, Any] | None:
    """The whole openclaw.json as a dict, or None when the file does not exist."""
    try:
        with open_input_text(config_path) as handle:
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


def entry_config(root: dict[str, Any] | None, config_path: str, plugin_id: str) -> dict[str, Any]:
    """One plugin entry's config object inside ``root`` ({} when any level is absent)."""
    node: Any = root or {}
    for key, label in plugin_levels(plugin_id):
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


def plugin_config_of(root: dict[str, Any] | None, config_path: str) -> dict[str, Any]:
    """The Lossless settings of ``root``: lossless-claw's entry overlaid key by key by lcm's."""
    merged: dict[str, Any] = {}
    for plugin_id in reversed(PLUGIN_IDS):
        merged.update(entry_config(root, config_path, plugin_id))
    return merged


def writable_entry(root: dict[str, Any]) -> str:
    """The entry ``config set`` writes to: lcm's once it exists, else lossless-claw's."""
    entries = root.get("plugins", {}).get("entries", {}) if isinstance(root.get("plugins"), dict) else {}
    return PLUGIN_IDS[0] if isinstance(entries, dict) and PLUGIN_IDS[0] in entries else LEGACY_PLUGIN_ID


def check_includes(root: dict[str, Any], config_path: str) -> None:
    """Refuse ``$include`` at the root, on the path to either entry's config, or inside it."""
    for plugin_id in PLUGIN_IDS:
        levels = plugin_levels(plugin_id)
        node: Any = root
        labels = ("root",) + tuple(label for _, label in levels)
        keys = (None,) + tuple(key for key, _ in levels)
        for key, label in zip(keys, labels):
            if key is not None:
                if not isinstance(node, dict) or key not in node:
                    break
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

    Returns the backup path. Both go through :mod:`lcm_cli.engine.core.files`: a private temp
    sibling created exclusively, fsynced, renamed (the backup: linked, never over a file),
    directory fsynced. The backup is 0600 (or the file's mode when stricter); the new file
    keeps the original's mode.
    """
    import shutil  # write-path import, kept off the read commands' start-up

    backup_path = f"{config_path}.lcm-backup-{backup_stamp()}"
    directory = os.path.dirname(os.path.abspath(config_path))
    remove_orphans(directory)
    try:
        mode = stat.S_IMODE(os.stat(config_path).st_mode)
        # The backup holds the same secrets (API keys): 0600, or stricter when the file is.
        with (
            open_input(config_path) as src,
            atomic_writer(backup_path, mode=private_mode(mode), replace=False) as dst,
        ):
            shutil.copyfileobj(src, dst)
    except OSError as exc:
        raise LcmError(
            "CONFIG_BACKUP_FAILED",
            f"Could not create the backup {backup_path} ({exc.strerror or exc}); nothing was "
            "changed. Retry, or check free space and permissions.",
            {"configPath": config_path, "backupPath": backup_path},
        ) from None

    try:
        # The config itself keeps its own mode (the host must still read it). Any failure
        # removes the temp file (atomic_writer), and the original stays as it was.
        atomic_write(config_path, new_text.encode("utf-8"), mode=mode, replace=True)
    except OSError as exc:
        raise LcmError(
            "CONFIG_WRITE_FAILED",
            f"Could not write {config_path} ({exc.strerror or exc}); the original file is "
            f"unchanged and a backup is at {backup_path}.",
            {"configPath": config_path},
        ) from None
    return backup_path
