"""`lcm config show|get|set`.

Only the Lossless settings of openclaw.json are ever read out (lcm's plugin entry over
lossless-claw's, see :mod:`lcm_cli.engine.config.file`); `config set` changes exactly one
key, in lcm's entry once it exists, after validating the value and the whole resulting
config, and rewrites the file atomically after an exclusive backup.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from lcm_cli.engine.config.file import (
    check_includes,
    parse_strict_json,
    plugin_config_of,
    plugin_levels,
    read_config_root,
    serialize_config,
    split_dot_path,
    writable_entry,
    write_with_backup,
)
from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import Request
from lcm_cli.engine.core.registry import Result, operation

_MISSING = object()


def _typed_effective(ctx: Context, *, keep_unset: bool = False) -> dict[str, Any]:
    """The effective config through the pydantic-settings model.

    The config commands pay for pydantic (they exist to explain the config); read commands
    call the resolver the model is built on. Unlike :attr:`Context.settings` this does not
    refuse a config with problems: `config show` lists them instead.
    ``keep_unset``: keep the known keys that have no value, as None.
    """
    from lcm_cli.engine.config.model import load_settings

    settings = load_settings(ctx.plugin_config, ctx.env, ctx.state_dir)
    if keep_unset:
        full: dict[str, Any] = settings.model_dump(by_alias=True)
        return full
    return settings.to_effective_dict()


def _type_effective(plugin: dict[str, Any], ctx: Context, path: str) -> None:
    """Resolve and type the config this write would leave, before the file is touched."""
    from pydantic import ValidationError

    from lcm_cli.engine.config.model import load_settings

    try:
        load_settings(plugin, ctx.env, ctx.state_dir)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise LcmError(
            "CONFIG_VALIDATION_FAILED",
            f"After setting {path} the effective config does not type-check: {where} {first['msg']}.",
            {"path": path},
        ) from None


def _own_lookup(node: Any, segments: list[str]) -> Any:
    """Walk plain-object keys only (arrays are not indexable); _MISSING when absent."""
    for segment in segments:
        if not isinstance(node, dict) or segment not in node:
            return _MISSING
        node = node[segment]
    return node


@operation("config.show")
def show_config(ctx: Context, req: Request) -> Result:
    """Raw and effective Lossless config, pattern-source diagnostics, overriding env names.

    Values `config set` would refuse are listed in ``meta.configProblems``, as every
    command that uses the config lists them.
    """
    from lcm_cli.engine.config.resolve import resolve_diagnostics
    from lcm_cli.engine.config.schema import config_problems

    overrides = sorted(name for name in ctx.env if name.startswith("LCM_") or name == "TZ")
    problems = config_problems(ctx.plugin_config, ctx.env)
    from lcm_cli.engine.core.redact import redact_value

    return Result(
        {
            "configPath": ctx.config_path,
            "raw": redact_value(ctx.plugin_config),
            "effective": redact_value(_typed_effective(ctx)),
            "diagnostics": resolve_diagnostics(ctx.plugin_config, ctx.env),
            "environmentOverrides": overrides,
        },
        meta={"configProblems": problems} if problems else None,
    )


def _redacted_at(path: str, value: Any) -> Any:
    """``value`` as shown for ``path``: masked whole when the key's own name is a secret."""
    from lcm_cli.engine.core.redact import MASK, is_secret_key, redact_value

    if is_secret_key(path.rsplit(".", 1)[-1]) and value not in (None, ""):
        return MASK
    return redact_value(value)


@operation("config.get")
def get_config(ctx: Context, req: Request) -> Result:
    """Look a dot path up in the stored Lossless config and in the effective config."""
    from lcm_cli.engine.config.resolve import MISSING, effective_value

    (path,) = req.args
    segments = split_dot_path(path)
    raw = _own_lookup(ctx.plugin_config, segments)
    # A known key the resolver leaves unset (freshTailMaxTokens, ...) is found, with a null
    # value, as the reference's effective config holds it as an own undefined property.
    effective = effective_value(_typed_effective(ctx, keep_unset=True), path)
    if raw is _MISSING and effective is MISSING:
        raise LcmError(
            "CONFIG_KEY_NOT_FOUND",
            f"Config key {path!r} is neither set nor known. See `lcm config show` for the keys.",
            {"path": path},
        )
    return Result(
        {
            "path": path,
            "isSet": raw is not _MISSING,
            "rawValue": None if raw is _MISSING else _redacted_at(path, raw),
            "effectiveValue": None if effective is MISSING else _redacted_at(path, effective),
        }
    )


@operation("config.set")
def set_config(ctx: Context, req: Request) -> Result:
    """Validate everything first; only then back up and atomically rewrite the file."""
    from lcm_cli.engine.config.resolve import validate_runtime
    from lcm_cli.engine.config.schema import MANIFEST_SCHEMA, schema_node_for, validate

    path, value_text = req.args
    config_path = ctx.config_path
    try:
        info = os.lstat(config_path)
    except FileNotFoundError:
        raise LcmError(
            "CONFIG_NOT_FOUND",
            f"No OpenClaw config at {config_path}; pass --config or --openclaw-dir.",
            {"configPath": config_path},
        ) from None
    if os.path.islink(config_path) or (info.st_mode & 0o170000) == 0o120000:
        raise LcmError(
            "CONFIG_SYMLINK_UNSUPPORTED",
            f"{config_path} is a symlink; run `lcm config set` with --config pointing at the real file.",
            {"configPath": config_path},
        )
    root = read_config_root(config_path)
    assert root is not None
    check_includes(root, config_path)
    segments = split_dot_path(path)
    node = schema_node_for(path)
    if node is None:
        raise LcmError(
            "CONFIG_VALIDATION_FAILED",
            f"{path!r} is not a Lossless config key that can be set. See docs/cli.md for the keys.",
            {"path": path},
        )
    try:
        value = parse_strict_json(value_text)
    except ValueError:
        raise LcmError(
            "CONFIG_VALIDATION_FAILED",
            f"The value for {path} must be JSON: quote strings ('\"text\"'), write numbers and "
            "true/false bare.",
            {"path": path},
        ) from None
    pointer = "/" + "/".join(segments)
    errors = validate(value, node, base_path=pointer)
    if errors:
        raise LcmError(
            "CONFIG_VALIDATION_FAILED",
            f"Invalid value for {path}: {errors[0]['message']}.",
            {"path": path, "errors": errors},
        )

    # Build the new root on a copy; the file is untouched until every check has passed.
    new_root = copy.deepcopy(root)
    holder: dict[str, Any] = new_root
    entry = writable_entry(root)
    entry_levels = plugin_levels(entry)
    config_label = entry_levels[-1][1]
    levels = list(entry_levels) + [
        (key, f"{config_label}.{'.'.join(segments[: i + 1])}") for i, key in enumerate(segments[:-1])
    ]
    for key, label in levels:
        if key not in holder:
            holder[key] = {}
        elif not isinstance(holder[key], dict):
            raise LcmError(
                "CONFIG_SHAPE_INVALID",
                f"`{label}` in {config_path} must be a JSON object.",
                {"configPath": config_path, "key": key},
            )
        holder = holder[key]
    leaf = segments[-1]
    old_value = holder.get(leaf)
    holder[leaf] = value

    plugin = plugin_config_of(new_root, config_path)
    errors = validate(plugin, MANIFEST_SCHEMA)
    if errors:
        raise LcmError(
            "CONFIG_VALIDATION_FAILED",
            f"After setting {path} the Lossless config is invalid: {errors[0]['path'] or '/'} "
            f"{errors[0]['message']}. Fix that key first.",
            {"path": path, "errors": errors},
        )
    try:
        validate_runtime(plugin)
    except LcmError as exc:
        raise LcmError("CONFIG_VALIDATION_FAILED", exc.message, {"path": path}) from None
    _type_effective(plugin, ctx, path)

    backup_path = write_with_backup(config_path, serialize_config(new_root))
    ctx.config_root, ctx.plugin_config = new_root, plugin
    ctx.resolve_database_path()
    return Result(
        {
            "path": path,
            "oldValue": _redacted_at(path, old_value),
            "newValue": _redacted_at(path, value),
            "configPath": config_path,
            "configEntry": config_label,
            "backupPath": backup_path,
        }
    )
