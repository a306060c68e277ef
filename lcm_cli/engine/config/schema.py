"""The manifest JSON schema of the Lossless plugin config, and the validator ``config set`` uses.

``MANIFEST_SCHEMA`` is built from :mod:`lcm_cli.engine.config.keys`; ``validate`` implements
the JSON-schema subset the manifest uses (config.md §8, cli-contract.md §13): object,
array, string, boolean, number and integer types, ``required``, ``minProperties``,
``additionalProperties: false``, ``minLength``, ``minimum``, ``maximum`` and ``enum``.

Standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.config.keys import CONFIG_KEYS, LCM_KEYS, SHIM_KEYS, ConfigKey, ShimKey

if TYPE_CHECKING:
    from typing import Any

#: At most this many ``{path, message}`` entries are reported.
MAX_ERRORS = 20


def _copy(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _copy(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node


def build_manifest_schema(*, documented: bool = False) -> dict[str, Any]:
    """A fresh copy of the whole plugin-config schema, built from the key tables.

    The engine keys (lossless-claw's, then lcm's own :data:`LCM_KEYS`) and the plugin's own
    (:data:`SHIM_KEYS`, with their defaults), as lcm's
    plugin entry holds them. ``documented``: each node also carries its ``description``
    (the OpenClaw manifest).
    """
    root: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": {}}
    keys: tuple[ConfigKey | ShimKey, ...] = (*CONFIG_KEYS, *LCM_KEYS, *SHIM_KEYS)
    for key in keys:
        *parents, leaf = key.path.split(".")
        node = root
        for parent in parents:
            node = node["properties"][parent]
        node_schema = _copy(key.schema)
        if node_schema.get("type") == "object" and "properties" not in node_schema:
            node_schema["properties"] = {}
        if isinstance(key, ShimKey):
            node_schema["default"] = _copy(key.default)
        if documented:
            node_schema["description"] = key.description
        node["properties"][leaf] = node_schema
    return root


#: The Lossless config schema, equivalent to the manifest's ``configSchema``. Do not mutate.
MANIFEST_SCHEMA: dict[str, Any] = build_manifest_schema()


def schema_node_for(dot_path: str) -> dict[str, Any] | None:
    """The schema node of a settable dot path, or None when the path is not in the manifest.

    Only nested ``properties`` are walked (own keys; array items are not addressable), so
    ``contextThresholdOverrides.0`` and ``__proto__`` are not found. Returns a copy.
    """
    node: dict[str, Any] = MANIFEST_SCHEMA
    for segment in dot_path.split("."):
        properties = node.get("properties")
        if not isinstance(properties, dict) or segment not in properties:
            return None
        child = properties[segment]
        if not isinstance(child, dict):
            return None
        node = child
    copied: dict[str, Any] = _copy(node)
    return copied


def settable_paths() -> list[str]:
    """Every dot path ``config set`` accepts, depth first in schema order."""
    out: list[str] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for name, child in node.get("properties", {}).items():
            path = f"{prefix}{name}"
            out.append(path)
            if child.get("type") == "object":
                walk(child, f"{path}.")

    walk(MANIFEST_SCHEMA, "")
    return out


# ---------------------------------------------------------------------------------------
# validation


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_finite_number(value: Any) -> bool:
    if not _is_number(value):
        return False
    return not isinstance(value, float) or math.isfinite(value)


def _is_integral(value: int | float) -> bool:
    return isinstance(value, int) or value.is_integer()


def _utf16_length(text: str) -> int:
    # JS string length counts UTF-16 code units: astral characters count twice.
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in text)


def _number_text(value: Any) -> str:
    """A schema number as JS would print it (``5``, not ``5.0``)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


_INDEX_KEY = r"0|[1-9][0-9]*"


def _own_keys(record: dict[str, Any]) -> list[str]:
    """Keys in JS own-property order: array-index keys ascending, then insertion order."""
    index_keys: list[tuple[int, str]] = []
    other: list[str] = []
    for key in record:
        if re.fullmatch(_INDEX_KEY, key) and int(key) < 2**32 - 1:
            index_keys.append((int(key), key))
        else:
            other.append(key)
    if not index_keys:
        return other
    index_keys.sort()
    return [k for _, k in index_keys] + other


def _same_value(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return type(a) is type(b) and a == b


_EXPECTED = {
    "object": "expected an object",
    "array": "expected an array",
    "string": "expected a string",
    "boolean": "expected a boolean",
    "number": "expected a number",
    "integer": "expected an integer",
}


Errors = list[dict[str, str]]


def _check_object(schema: dict[str, Any], value: Any, path: str, errors: Errors, allow_unknown: bool) -> bool:
    if not isinstance(value, dict):
        errors.append({"path": path, "message": _EXPECTED["object"]})
        return False
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    for name in schema.get("required", ()):
        if name not in value:
            errors.append({"path": f"{path}/{name}", "message": "required property missing"})
    min_props = schema.get("minProperties")
    if isinstance(min_props, int) and len(value) < min_props:
        errors.append(
            {"path": path, "message": f"has fewer properties than minProperties ({_number_text(min_props)})"}
        )
    for name in _own_keys(value):
        child = properties.get(name)
        if not isinstance(child, dict):
            if schema.get("additionalProperties") is False and not allow_unknown:
                errors.append({"path": f"{path}/{name}", "message": "unexpected property"})
            continue
        _check(child, value[name], f"{path}/{name}", errors, allow_unknown)
    return True


def _check_array(schema: dict[str, Any], value: Any, path: str, errors: Errors, allow_unknown: bool) -> bool:
    if not isinstance(value, list):
        errors.append({"path": path, "message": _EXPECTED["array"]})
        return False
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _check(items, item, f"{path}/{index}", errors, allow_unknown)
    return True


def _check_string(schema: dict[str, Any], value: Any, path: str, errors: Errors, allow_unknown: bool) -> bool:
    if not isinstance(value, str):
        errors.append({"path": path, "message": _EXPECTED["string"]})
        return False
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and _utf16_length(value) < min_length:
        errors.append({"path": path, "message": f"shorter than minLength ({_number_text(min_length)})"})
    return True


def _check_boolean(
    schema: dict[str, Any], value: Any, path: str, errors: Errors, allow_unknown: bool
) -> bool:
    if not isinstance(value, bool):
        errors.append({"path": path, "message": _EXPECTED["boolean"]})
        return False
    return True


def _check_number(schema: dict[str, Any], value: Any, path: str, errors: Errors, allow_unknown: bool) -> bool:
    kind = schema["type"]
    if not _is_finite_number(value) or (kind == "integer" and not _is_integral(value)):
        errors.append({"path": path, "message": _EXPECTED[kind]})
        return False
    minimum = schema.get("minimum")
    if _is_number(minimum) and value < minimum:
        errors.append({"path": path, "message": f"below minimum ({_number_text(minimum)})"})
    maximum = schema.get("maximum")
    if _is_number(maximum) and value > maximum:
        errors.append({"path": path, "message": f"above maximum ({_number_text(maximum)})"})
    return True


# One checker per schema type; each returns False when the value has the wrong type,
# and then nothing else (not even ``enum``) is checked at that path.
_CHECKS = {
    "object": _check_object,
    "array": _check_array,
    "string": _check_string,
    "boolean": _check_boolean,
    "number": _check_number,
    "integer": _check_number,
}


def _check(
    schema: dict[str, Any], value: Any, path: str, errors: Errors, allow_unknown: bool = False
) -> None:
    checker = _CHECKS.get(str(schema.get("type")))
    if checker is not None and not checker(schema, value, path, errors, allow_unknown):
        return
    members = schema.get("enum")
    if isinstance(members, list) and not any(_same_value(m, value) for m in members):
        listed = ", ".join(str(m) for m in members)
        errors.append({"path": path, "message": f"not in enum ({listed})"})


def validate(
    value: Any, schema: dict[str, Any], *, base_path: str = "", allow_unknown: bool = False
) -> list[dict[str, str]]:
    """Check ``value`` against ``schema``; return at most 20 ``{path, message}`` errors.

    ``path`` is a slash-prefixed pointer below ``base_path`` (``""`` is the value itself,
    ``/freshTailCount``, ``/contextThresholdOverrides/0/match``); keys are not escaped.
    Integers accept integral floats (``5.0``, ``-1e2``); booleans are never numbers;
    ``minLength`` counts UTF-16 code units. An empty list means the value is valid.
    ``allow_unknown`` skips ``additionalProperties: false`` (reads ignore keys a newer
    lossless-claw may have added; ``config set`` never passes it).
    """
    errors: list[dict[str, str]] = []
    _check(schema, value, base_path, errors, allow_unknown)
    return errors[:MAX_ERRORS]


# ---------------------------------------------------------------------------------------
# the config in use: the same rules as `config set`, applied on read


def allowed_text(schema: dict[str, Any]) -> str:
    """What a schema node accepts, in words: ``an integer >= 1``, ``one of: a, b``."""
    members = schema.get("enum")
    if isinstance(members, list):
        return "one of: " + ", ".join(str(m) for m in members)
    kind = schema.get("type")
    if kind in ("number", "integer"):
        noun = "an integer" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if _is_number(low) and _is_number(high):
            return f"{noun} from {_number_text(low)} to {_number_text(high)}"
        if _is_number(low):
            return f"{noun} >= {_number_text(low)}"
        return noun
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "a string"
    if kind == "array":
        return "an array"
    return "an object"


def _node_at(pointer: str) -> dict[str, Any] | None:
    node: Any = MANIFEST_SCHEMA
    for segment in pointer.strip("/").split("/"):
        if not isinstance(node, dict):
            return None
        if node.get("type") == "array":
            node = node.get("items")
        elif isinstance(node.get("properties"), dict) and segment in node["properties"]:
            node = node["properties"][segment]
        else:
            return None
    return node if isinstance(node, dict) else None


def config_problems(plugin_config: dict[str, Any], env: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every value in use that `config set` would refuse, as ``{key, source, message, allowed}``.

    Stored keys are checked with :func:`validate` against :data:`MANIFEST_SCHEMA` (unknown
    keys ignored); a value taken from an ``LCM_*`` variable is checked, after the runtime's
    coercion, against the schema of the key it feeds. ``source`` is ``plugin-config`` or
    the variable's name. An empty list means the config can be used.
    """
    from lcm_cli.engine.config.resolve import MISSING, coerce_env

    problems: list[dict[str, Any]] = []
    for error in validate(plugin_config, MANIFEST_SCHEMA, allow_unknown=True):
        key = error["path"].strip("/").replace("/", ".")
        node = _node_at(error["path"])
        problems.append(
            {
                "key": key,
                "source": "plugin-config",
                "message": error["message"],
                "allowed": allowed_text(node) if node is not None else "",
            }
        )
    for config_key in CONFIG_KEYS:
        if (
            not config_key.env
            or config_key.alias_of is not None
            or config_key.schema.get("type") in ("object", "array")
        ):
            continue
        for name in config_key.env:
            raw = env.get(name)
            if raw is None:
                continue
            value = coerce_env(config_key, raw)
            if value is MISSING:
                continue
            for error in validate(value, config_key.schema):
                problems.append(
                    {
                        "key": config_key.path,
                        "source": name,
                        "message": error["message"],
                        "allowed": allowed_text(config_key.schema),
                    }
                )
            break
    return problems
