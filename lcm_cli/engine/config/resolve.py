"""The effective Lossless config: environment > plugin config > defaults.

A faithful port of the runtime resolver's rules (docs/reference/config.md §2, §3, §5, §6),
including its JavaScript quirks: ``parseInt`` keeps leading digits, ``Number("")`` is 0,
some booleans are "true unless ``false``" and others "false unless ``true``", strings
are trimmed with JS whitespace rules, and numbers behave as IEEE doubles.

Numbers in the result follow JS: a value is an ``int`` when it is integral and below
1e21 in magnitude (JS prints those without a fraction), otherwise a ``float``.

This is the only implementation of precedence and coercion: the rules are read from the
key table (:mod:`lcm_cli.engine.config.keys`), and the pydantic-settings model
(:mod:`lcm_cli.engine.config.model`) uses :func:`resolve_flat` as its settings source.
Standard library only: the JSON read commands call this on every run.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.config.keys import (
    BOOTSTRAP_TOKENS,
    DOUBLE_LEAF_CHUNK,
    STATE_DIR_FILE,
    SYSTEM_TIMEZONE,
    UNSET,
    Coercion,
    ConfigKey,
    Derived,
    EffectiveField,
    effective_fields,
    effective_path_aliases,
)
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.record import Record

if TYPE_CHECKING:
    from typing import Any


class _Missing:
    """Sentinel type of :data:`MISSING`."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


#: "No value here": a path that does not exist, or a source that gave nothing usable.
#: Distinct from ``None``, which is a real JSON ``null``. Test with ``is MISSING``.
MISSING: Any = _Missing()

SOURCE_ENV = "env"
SOURCE_PLUGIN = "plugin-config"
SOURCE_DEFAULT = "default"

# ---------------------------------------------------------------------------------------
# JavaScript value semantics

# What String.prototype.trim and the number parsers treat as white space.
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_DECIMAL = r"(?:Infinity|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
_SIGNED_DECIMAL = rf"[+-]?{_DECIMAL}"
_INT_PREFIX = r"([+-]?)([0-9]+)"
_RADIX_LITERAL = r"0(?:([xX])([0-9a-fA-F]+)|([oO])([0-7]+)|([bB])([01]+))"


def js_trim(text: str) -> str:
    """``String.prototype.trim``: strips JS white space and line terminators."""
    return text.strip(_JS_SPACE)


def js_number(value: float | int) -> int | float | None:
    """A number as a JS double: None when not finite, ``int`` when integral and < 1e21."""
    try:
        f = float(value)
    except OverflowError:
        return None
    if not math.isfinite(f):
        return None
    if f.is_integer() and abs(f) < 1e21:
        return int(f) if abs(f) <= 2**53 else _printed_integer(f)
    return f


def _printed_integer(f: float) -> int:
    """The integer JS prints for an integral double: its shortest round-trip digits, then
    zeros (``12345678901234567000``, where ``int()`` gives ``…567168``). It is the same
    double, so arithmetic is unchanged; only the printed digits agree with the runtime's."""
    mantissa, _, exponent = repr(f).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction.rstrip("0")
    shift = int(exponent or 0) - len(fraction.rstrip("0"))
    return int(digits) * 10**shift if shift >= 0 else int(f)


def _digits_to_float(digits: str, base: int = 10) -> float:
    digits = digits.lstrip("0") or "0"
    if len(digits) * math.log10(base) > 330:  # far beyond the largest double: Infinity
        return math.inf
    try:
        return float(int(digits, base))
    except OverflowError:
        return math.inf


def js_parse_int(text: str) -> int | float | None:
    """``parseInt(text, 10)``: leading digits after optional space and sign, else None."""
    match = re.match(_INT_PREFIX, text.lstrip(_JS_SPACE))
    if match is None:
        return None
    magnitude = _digits_to_float(match.group(2))
    return js_number(-magnitude if match.group(1) == "-" else magnitude)


def js_parse_float(text: str) -> int | float | None:
    """``parseFloat(text)``: the longest decimal prefix, None when absent or infinite."""
    match = re.match(_SIGNED_DECIMAL, text.lstrip(_JS_SPACE))
    if match is None:
        return None
    literal = match.group(0)
    if literal.lstrip("+-") == "Infinity":
        return None
    return js_number(float(literal))


def js_string_to_number(text: str) -> int | float | None:
    """``Number(text)`` for a string: whole-string literal, ``""`` is 0; None unless finite."""
    body = js_trim(text)
    if body == "":
        return 0
    radix = re.fullmatch(_RADIX_LITERAL, body)
    if radix is not None:
        if radix.group(2) is not None:
            digits, base = radix.group(2), 16
        elif radix.group(4) is not None:
            digits, base = radix.group(4), 8
        else:
            digits, base = radix.group(6), 2
        return js_number(_digits_to_float(digits, base))
    if re.fullmatch(_SIGNED_DECIMAL, body) is None or body.lstrip("+-") == "Infinity":
        return None
    return js_number(float(body))


def to_number(value: Any) -> int | float | None:
    """A finite JSON number, or a string ``Number()`` accepts; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return js_string_to_number(value)
    return None


def to_bool(value: Any) -> bool | None:
    """A JSON boolean, or exactly the string ``"true"`` / ``"false"``; None otherwise."""
    if isinstance(value, bool):
        return value
    if value == "true":
        return True
    if value == "false":
        return False
    return None


def to_str(value: Any) -> str | None:
    """A string, trimmed; None for blank strings and non-strings."""
    if isinstance(value, str):
        trimmed = js_trim(value)
        return trimmed or None
    return None


def split_comma_list(text: str) -> list[str]:
    """Split on commas, trim each item, drop empty items."""
    return [item for item in (js_trim(part) for part in text.split(",")) if item]


def to_str_list(value: Any) -> list[str] | None:
    """A list of trimmed non-empty strings (others dropped), or a comma string; else None."""
    if isinstance(value, list):
        return [s for s in (to_str(item) for item in value) if s is not None]
    single = to_str(value)
    if single is None:
        return None
    return split_comma_list(single)


def parse_env_providers(text: str) -> list[dict[str, str]] | None:
    """``provider/model,provider/model`` split at the first ``/``; None when none is valid."""
    if not js_trim(text):
        return None
    entries: list[dict[str, str]] = []
    for part in text.split(","):
        item = js_trim(part)
        slash = item.find("/")
        if 0 < slash < len(item) - 1:
            provider = js_trim(item[:slash])
            model = js_trim(item[slash + 1 :])
            if provider and model:
                entries.append({"provider": provider, "model": model})
    return entries or None


def to_provider_list(value: Any) -> list[dict[str, str]] | None:
    """Objects with non-blank string ``provider`` and ``model``; None when none is valid."""
    if not isinstance(value, list):
        return None
    entries: list[dict[str, str]] = []
    for item in value:
        if isinstance(item, dict):
            provider = to_str(item.get("provider"))
            model = to_str(item.get("model"))
            if provider and model:
                entries.append({"provider": provider, "model": model})
    return entries or None


def _floor(value: int | float) -> int | float | None:
    return js_number(math.floor(value)) if isinstance(value, float) else value


def _clamp(key: ConfigKey, value: int | float | None) -> int | float | None:
    if value is not None and key.floor:
        value = _floor(value)
    if value is None:
        return None
    if not key.clamp:
        return value
    low, high = key.schema.get("minimum"), key.schema.get("maximum")
    if low is not None and value < low:
        return js_number(low)
    if high is not None and value > high:
        return js_number(high)
    return value


def _positive_clamped(value: int | float | None) -> int | float | None:
    if value is None:
        return None
    floored = _floor(value)
    if floored is None:
        return None
    return max(floored, 1)


def is_integral(value: int | float) -> bool:
    """``Number.isInteger`` for a finite number."""
    return isinstance(value, int) or value.is_integer()


def _integer_at_least(value: int | float | None, minimum: int) -> int | float | None:
    if value is None or not is_integral(value) or value < minimum:
        return None
    return value


def _enum_member(key: ConfigKey, value: Any) -> str | None:
    text = to_str(value)
    if text is None:
        return None
    lowered = text.lower()
    return lowered if lowered in key.schema.get("enum", ()) else None


def _host_mode(text: str | None) -> str | None:
    if not text:
        return None
    return "capture-only" if text == "capture-only" else "error"


def _or_missing(value: Any) -> Any:
    return MISSING if value is None else value


# ---------------------------------------------------------------------------------------
# per-source coercion


def coerce_env(key: ConfigKey, raw: str) -> Any:
    """The value an environment variable gives ``key``, or MISSING (next source wins)."""
    kind = key.coercion
    if kind is Coercion.INT:
        return _or_missing(_clamp(key, js_parse_int(raw)))
    if kind is Coercion.FLOAT:
        return _or_missing(_clamp(key, js_parse_float(raw)))
    if kind is Coercion.NUMBER:
        return _or_missing(js_string_to_number(raw))
    if kind is Coercion.POSITIVE_INT_CLAMPED:
        return _or_missing(_positive_clamped(js_parse_int(raw)))
    if kind is Coercion.INT_AT_LEAST:
        return _or_missing(_integer_at_least(js_parse_int(raw), key.schema["minimum"]))
    if kind is Coercion.BOOL_TRUE_UNLESS_FALSE:
        return raw != "false"
    if kind is Coercion.BOOL_FALSE_UNLESS_TRUE:
        return raw == "true"
    if kind is Coercion.STRING:
        return js_trim(raw)
    if kind is Coercion.RAW_ENV_STRING:
        return raw
    if kind is Coercion.ENUM:
        return _or_missing(_enum_member(key, raw))
    if kind is Coercion.HOST_FALLBACK_MODE:
        return _or_missing(_host_mode(js_trim(raw)))
    if kind is Coercion.PATTERN_LIST:
        return split_comma_list(raw)
    if kind is Coercion.TAG_LIST:
        return [] if not js_trim(raw) else split_comma_list(raw)
    if kind is Coercion.PROVIDER_LIST:
        return _or_missing(parse_env_providers(raw))
    return MISSING


def coerce_plugin(key: ConfigKey, raw: Any) -> Any:
    """The value a present plugin-config entry gives ``key``, or MISSING (next source wins).

    ``contextThresholdOverrides`` is validated here and raises :class:`ConfigRuntimeError`.
    """
    kind = key.coercion
    if kind in (Coercion.INT, Coercion.FLOAT, Coercion.NUMBER):
        return _or_missing(_clamp(key, to_number(raw)))
    if kind is Coercion.POSITIVE_INT_CLAMPED:
        return _or_missing(_positive_clamped(to_number(raw)))
    if kind is Coercion.INT_AT_LEAST:
        return _or_missing(_integer_at_least(to_number(raw), key.schema["minimum"]))
    if kind in (Coercion.BOOL_TRUE_UNLESS_FALSE, Coercion.BOOL_FALSE_UNLESS_TRUE):
        return _or_missing(to_bool(raw))
    if kind in (Coercion.STRING, Coercion.RAW_ENV_STRING):
        return _or_missing(to_str(raw))
    if kind is Coercion.ENUM:
        return _or_missing(_enum_member(key, raw))
    if kind is Coercion.HOST_FALLBACK_MODE:
        return _or_missing(_host_mode(to_str(raw)))
    if kind in (Coercion.PATTERN_LIST, Coercion.TAG_LIST):
        return _or_missing(to_str_list(raw))
    if kind is Coercion.PROVIDER_LIST:
        return _or_missing(to_provider_list(raw))
    if kind is Coercion.THRESHOLD_OVERRIDES:
        return normalize_threshold_overrides(raw)
    return MISSING


def lookup_path(obj: Any, dot_path: str) -> Any:
    """The value at ``dot_path`` through own keys of dicts only, or MISSING.

    Lists are not indexable (``contextThresholdOverrides.0`` is MISSING). A present JSON
    ``null`` is returned as None.
    """
    current = obj
    for segment in dot_path.split("."):
        if not isinstance(current, dict) or segment not in current:
            return MISSING
        current = current[segment]
    return current


def value_from_env(field: EffectiveField, env: Mapping[str, str]) -> Any:
    """The field's value from the first usable environment variable, or MISSING."""
    for name in field.env:
        raw = env.get(name)
        if raw is None:
            continue
        value = coerce_env(field.primary, raw)
        if value is not MISSING:
            return value
    return MISSING


def value_from_plugin(field: EffectiveField, plugin_config: Mapping[str, Any]) -> Any:
    """The field's value from the first usable plugin-config key (aliases ranked), or MISSING."""
    for key in field.keys:
        raw = lookup_path(plugin_config, key.path)
        if raw is MISSING:
            continue
        value = coerce_plugin(field.primary, raw)
        if value is not MISSING:
            return value
    return MISSING


# ---------------------------------------------------------------------------------------
# defaults


def node_join(*parts: str) -> str:
    """``path.posix.join`` of Node: join non-empty parts, then normalize."""
    joined = "/".join(p for p in parts if p)
    if not joined:
        return "."
    absolute = joined.startswith("/")
    trailing = joined.endswith("/")
    out: list[str] = []
    for segment in joined.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if out and out[-1] != "..":
                out.pop()
            elif not absolute:
                out.append("..")
            continue
        out.append(segment)
    path = "/".join(out)
    if not path and not absolute:
        path = "."
    if path and trailing:
        path += "/"
    return "/" + path if absolute else path


def effective_state_dir(state_dir: str | None) -> str:
    """The state dir as the runtime uses it: trimmed, else ``~/.openclaw``."""
    explicit = js_trim(state_dir or "")
    return explicit or node_join(os.path.expanduser("~"), ".openclaw")


_UTC_NAMES = {"UTC", "GMT", "ETC/UTC", "ETC/GMT"}
_system_zone: list[str] = []


def system_timezone() -> str:
    """The host's IANA zone from the ``/etc/localtime`` symlink, else ``"UTC"`` (cached)."""
    if not _system_zone:
        _system_zone.append(_read_system_timezone())
    return _system_zone[0]


def _read_system_timezone() -> str:
    try:
        if not os.path.islink("/etc/localtime"):
            return "UTC"
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return "UTC"
    marker = "/zoneinfo/"
    index = target.rfind(marker)
    if index < 0:
        return "UTC"
    name = target[index + len(marker) :]
    for prefix in ("posix/", "right/"):
        name = name.removeprefix(prefix)
    if not name or name.upper() in _UTC_NAMES:
        # Node canonicalizes the UTC spellings to "UTC".
        return "UTC"
    return name


def bootstrap_default(leaf_chunk_tokens: int | float) -> int | float:
    """``max(6000, floor(leafChunkTokens * 0.3))``."""
    derived = js_number(math.floor(float(leaf_chunk_tokens) * 0.3))
    return max(6000, derived if derived is not None else 6000)


def double_leaf_chunk_default(leaf_chunk_tokens: int | float) -> int | float:
    """``floor(leafChunkTokens * 2)``; past the largest double, ``leafChunkTokens`` itself
    (the runtime gets Infinity and prints null: tests/compat/test_config_goldens.py)."""
    doubled = float(leaf_chunk_tokens) * 2
    if not math.isfinite(doubled):
        return leaf_chunk_tokens
    value = js_number(math.floor(doubled))
    return value if value is not None else leaf_chunk_tokens


def raise_to_at_least(value: int | float, floor_value: int | float) -> int | float:
    """``Math.max(floor_value, value)`` as a JS number."""
    result = js_number(max(floor_value, value))
    return result if result is not None else value


def copy_default(value: Any) -> Any:
    """A fresh copy of a static default (lists are never shared)."""
    return list(value) if isinstance(value, list) else value


def static_or_path_default(field: EffectiveField, state_dir: str | None) -> Any:
    """A default that needs no other field: static, state-dir path or system zone.

    Returns UNSET for optional fields, MISSING for defaults derived from other fields.
    """
    return _self_contained_default(field.primary, state_dir)


def _self_contained_default(key: ConfigKey, state_dir: str | None) -> Any:
    default = key.default
    if not isinstance(default, Derived):
        return copy_default(default)
    if default.rule == STATE_DIR_FILE:
        root = effective_state_dir(state_dir)
        joined = _STATE_DIR_FILES.get((root, default.arg))
        if joined is None:
            if len(_STATE_DIR_FILES) > 64:  # a long-lived process seeing many state dirs
                _STATE_DIR_FILES.clear()
            joined = _STATE_DIR_FILES[(root, default.arg)] = node_join(root, default.arg)
        return joined
    if default.rule == SYSTEM_TIMEZONE:
        return system_timezone()
    return MISSING


_STATE_DIR_FILES: dict[tuple[str, str], str] = {}


def derived_default(field: EffectiveField, resolved: Mapping[str, Any]) -> Any:
    """A default computed from already resolved fields (``resolved`` is flat, dot paths)."""
    return _default_from_resolved(field.primary, resolved)


def _default_from_resolved(key: ConfigKey, resolved: Mapping[str, Any]) -> Any:
    default = key.default
    if not isinstance(default, Derived):
        return MISSING
    if default.rule == BOOTSTRAP_TOKENS:
        return bootstrap_default(resolved["leafChunkTokens"])
    if default.rule == DOUBLE_LEAF_CHUNK:
        return double_leaf_chunk_default(resolved["leafChunkTokens"])
    return MISSING


# ---------------------------------------------------------------------------------------
# contextThresholdOverrides (config.md §6)


class ConfigRuntimeError(LcmError):
    """``CONFIG_VALIDATION_FAILED`` from the runtime cross-field checks.

    ``reason`` is the bare problem (``contextThresholdOverrides[0].match …``) so a caller
    can re-wrap it with its own sentence; ``message`` is ``f"{prefix}: {reason}"``.
    """

    def __init__(
        self, reason: str, details: Any = None, prefix: str = "Lossless config failed runtime validation"
    ) -> None:
        super().__init__(
            "CONFIG_VALIDATION_FAILED", f"{prefix}: {reason}", {} if details is None else details
        )
        self.reason = reason


def _override_threshold(value: Any, where: str) -> int | float:
    threshold = MISSING if value is MISSING else to_number(value)
    if threshold is MISSING or threshold is None or not 0 <= threshold <= 1:
        raise ConfigRuntimeError(f"{where}.contextThreshold needs a finite number from 0 to 1")
    return threshold


def _override_positive_int(value: Any, where: str) -> Any:
    if value is MISSING:
        return MISSING
    number = to_number(value)
    if number is None or not is_integral(number) or number < 1:
        raise ConfigRuntimeError(f"{where} needs a positive integer")
    return number


def _override_string(value: Any, where: str) -> Any:
    if value is MISSING:
        return MISSING
    text = to_str(value)
    if text is None:
        raise ConfigRuntimeError(f"{where} needs a non-blank string")
    return text


def normalize_threshold_overrides(value: Any) -> list[dict[str, Any]]:
    """Validate ``contextThresholdOverrides`` and return the runtime's normalized rules.

    Raises :class:`ConfigRuntimeError` on the first problem, in the runtime's check order.
    """
    if value is MISSING:
        return []
    if not isinstance(value, list):
        raise ConfigRuntimeError("contextThresholdOverrides is not an array")
    rules: list[dict[str, Any]] = []
    for index, entry in enumerate(value):
        where = f"contextThresholdOverrides[{index}]"
        if not isinstance(entry, dict):
            raise ConfigRuntimeError(f"{where} is not an object")
        match = entry.get("match", MISSING)
        if not isinstance(match, dict):
            raise ConfigRuntimeError(f"{where}.match is not an object")
        model = _override_string(match.get("model", MISSING), f"{where}.match.model")
        pattern = _override_string(match.get("sessionPattern", MISSING), f"{where}.match.sessionPattern")
        low = _override_positive_int(
            match.get("modelContextWindowMin", MISSING), f"{where}.match.modelContextWindowMin"
        )
        high = _override_positive_int(
            match.get("modelContextWindowMax", MISSING), f"{where}.match.modelContextWindowMax"
        )
        if model is MISSING and pattern is MISSING and low is MISSING and high is MISSING:
            raise ConfigRuntimeError(
                f"{where}.match has no matcher (model, sessionPattern, "
                "modelContextWindowMin or modelContextWindowMax)"
            )
        if low is not MISSING and high is not MISSING and low > high:
            raise ConfigRuntimeError(
                f"{where}.match.modelContextWindowMin is greater than modelContextWindowMax"
            )
        fresh_tail = _override_positive_int(entry.get("freshTailCount", MISSING), f"{where}.freshTailCount")
        leaf_chunk = _override_positive_int(entry.get("leafChunkTokens", MISSING), f"{where}.leafChunkTokens")
        threshold = _override_threshold(entry.get("contextThreshold", MISSING), where)

        rule: dict[str, Any] = {}
        name = to_str(entry.get("name"))
        if name is not None:
            rule["name"] = name
        matchers: dict[str, Any] = {}
        if model is not MISSING:
            matchers["model"] = model
        if low is not MISSING:
            matchers["modelContextWindowMin"] = low
        if high is not MISSING:
            matchers["modelContextWindowMax"] = high
        if pattern is not MISSING:
            matchers["sessionPattern"] = pattern
        rule["match"] = matchers
        rule["contextThreshold"] = threshold
        if fresh_tail is not MISSING:
            rule["freshTailCount"] = fresh_tail
        if leaf_chunk is not MISSING:
            rule["leafChunkTokens"] = leaf_chunk
        rules.append(rule)
    return rules


def validate_runtime(
    plugin_config: Mapping[str, Any] | None,
    details: Any = None,
    *,
    prefix: str = "Lossless config failed runtime validation",
) -> None:
    """Raise :class:`ConfigRuntimeError` (an ``LcmError``, ``CONFIG_VALIDATION_FAILED``)
    when the plugin config fails the runtime's cross-field checks.

    ``details`` is attached as given (default ``{}``), e.g. ``{"configPath": …}`` on reads
    or ``{"path": …}`` after ``config set``; the message is ``f"{prefix}: {reason}"``.
    """
    raw = lookup_path(plugin_config or {}, "contextThresholdOverrides")
    try:
        normalize_threshold_overrides(raw)
    except ConfigRuntimeError as exc:
        raise ConfigRuntimeError(exc.reason, details, prefix) from None


# ---------------------------------------------------------------------------------------
# the effective config


#: One effective field as the resolver walks it, worked out once from the key table: its
#: name, its canonical key (None for a mirror), its environment variables and plugin-config
#: paths (split), winner first, and the field a mirror copies ("" for the others).
_FieldPlan = tuple[str, "ConfigKey | None", tuple[str, ...], tuple[tuple[str, ...], ...], str]


class _Plan(Record):
    """The key table prepared for :func:`merge_sources` (built once, on first use)."""

    fields: tuple[_FieldPlan, ...]
    static: dict[str, Any]  # the fields whose default is a constant, with it
    lists: tuple[str, ...]  # those of them whose default is a list (copied per call)
    located: tuple[_FieldPlan, ...]  # defaults from the state dir or the system zone
    by_env: dict[str, tuple[_FieldPlan, ...]]  # a variable -> the fields reading it
    by_top: dict[str, tuple[_FieldPlan, ...]]  # a top-level plugin key -> the fields under it
    cross: tuple[_FieldPlan, ...]  # mirrors, defaults from other fields, floors from others
    order: tuple[str, ...]  # every field, in output order


_PLAN: list[_Plan] = []


def _plan() -> _Plan:
    if not _PLAN:
        fields: list[_FieldPlan] = []
        static: dict[str, Any] = {}
        by_env: dict[str, list[_FieldPlan]] = {}
        by_top: dict[str, list[_FieldPlan]] = {}
        for f in effective_fields():
            if f.mirror_of is not None:
                fields.append((f.name, None, (), (), f.mirror_of))
                continue
            step = (f.name, f.primary, f.env, tuple(tuple(k.path.split(".")) for k in f.keys), "")
            fields.append(step)
            default = f.primary.default
            if not isinstance(default, Derived) and default is not UNSET:
                static[f.name] = default
            for var in step[2]:
                by_env.setdefault(var, []).append(step)
            for top in {segments[0] for segments in step[3]}:
                by_top.setdefault(top, []).append(step)
        located = tuple(
            step
            for step in fields
            if step[1] is not None
            and isinstance(step[1].default, Derived)
            and step[1].default.rule in (STATE_DIR_FILE, SYSTEM_TIMEZONE)
        )
        _PLAN.append(
            _Plan(
                tuple(fields),
                static,
                tuple(name for name, value in static.items() if isinstance(value, list)),
                located,
                {var: tuple(steps) for var, steps in by_env.items()},
                {top: tuple(steps) for top, steps in by_top.items()},
                tuple(step for step in fields if _is_cross_field(step)),
                tuple(step[0] for step in fields),
            )
        )
    return _PLAN[0]


def _is_cross_field(step: _FieldPlan) -> bool:
    key = step[1]
    if key is None or key.at_least_of is not None:
        return True
    return isinstance(key.default, Derived) and key.default.rule not in (STATE_DIR_FILE, SYSTEM_TIMEZONE)


def _lookup_segments(obj: Any, segments: tuple[str, ...]) -> Any:
    current = obj
    for segment in segments:
        if not isinstance(current, dict) or segment not in current:
            return MISSING
        current = current[segment]
    return current


def _field_value(
    step: _FieldPlan, plugin: Mapping[str, Any], env: Mapping[str, str], state_dir: str | None
) -> Any:
    """One field from env, else plugin config, else its self-contained default (MISSING when
    derived from other fields, UNSET when optional)."""
    _, key, env_names, paths, _ = step
    assert key is not None
    for var in env_names:
        raw = env.get(var)
        if raw is not None:
            value = coerce_env(key, raw)
            if value is not MISSING:
                return value
    for segments in paths:
        raw = _lookup_segments(plugin, segments)
        if raw is not MISSING:
            value = coerce_plugin(key, raw)
            if value is not MISSING:
                return value
    return _self_contained_default(key, state_dir)


def merge_sources(
    plugin_config: Mapping[str, Any] | None, env: Mapping[str, str], state_dir: str | None
) -> dict[str, Any]:
    """Each field's value from env, else plugin config, else a self-contained default.

    Flat dot paths; optional unset fields, mirrors and defaults derived from other fields
    are left out (see :func:`finish_flat`). Every JSON read resolves the config, so the
    defaults are laid down at once and only the fields an environment variable or a
    top-level plugin key names are resolved one by one (:func:`value_from_env`, then
    :func:`value_from_plugin`, then :func:`static_or_path_default`).
    """
    plan = _plan()
    plugin = plugin_config or {}
    merged = dict(plan.static)
    for name in plan.lists:
        merged[name] = list(merged[name])
    for step in plan.located:
        merged[step[0]] = _self_contained_default(step[1], state_dir)  # type: ignore[arg-type]
    named: dict[str, _FieldPlan] = {}
    for var, steps in plan.by_env.items():
        if var in env:
            for step in steps:
                named[step[0]] = step
    if isinstance(plugin, dict):  # as lookup_path: only a dict has keys to look up
        for top in plugin:
            for step in plan.by_top.get(top, ()):
                named[step[0]] = step
    for name, step in named.items():
        value = _field_value(step, plugin, env, state_dir)
        if value is MISSING or value is UNSET:
            merged.pop(name, None)
        else:
            merged[name] = value
    return merged


def finish_flat(values: Mapping[str, Any]) -> dict[str, Any]:
    """Apply the cross-field rules to merged values and return them in output order.

    Fills derived defaults (``bootstrapMaxTokens``, ``dynamicLeafChunkTokens.max``), copies
    mirrors (``incrementalMaxDepth``) and raises ``dynamicLeafChunkTokens.max`` to at least
    ``leafChunkTokens``. Fields still without a value (optional, unset) are omitted.
    """
    plan = _plan()
    resolved = dict(values)
    for name, key, _, _, mirror_of in plan.cross:
        if key is None:
            resolved[name] = resolved[mirror_of]
            continue
        value = resolved.get(name, MISSING)
        if value is MISSING:
            value = _default_from_resolved(key, resolved)
            if value is MISSING or value is UNSET:
                continue
        if key.at_least_of is not None:
            value = raise_to_at_least(value, resolved[key.at_least_of])
        resolved[name] = value
    return {name: resolved[name] for name in plan.order if name in resolved}


def resolve_flat(
    plugin_config: Mapping[str, Any] | None, env: Mapping[str, str], state_dir: str | None
) -> dict[str, Any]:
    """Every effective field by dot path, in output order; optional unset fields absent."""
    return finish_flat(merge_sources(plugin_config, env, state_dir))


def flatten(effective: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`nest` for effective-config leaves (unknown keys dropped)."""
    flat: dict[str, Any] = {}
    for field in effective_fields():
        value = lookup_path(effective, field.name)
        if value is not MISSING:
            flat[field.name] = value
    return flat


_SPLIT_PATHS: dict[str, tuple[tuple[str, ...], str]] = {}


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Turn ``{"a.b": 1}`` into ``{"a": {"b": 1}}``, keeping first-seen order."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        if "." not in path:
            out[path] = value
            continue
        split = _SPLIT_PATHS.get(path)
        if split is None:
            *parents, leaf = path.split(".")
            split = _SPLIT_PATHS[path] = (tuple(parents), leaf)
        node = out
        for parent in split[0]:
            child = node.get(parent)
            node = child if child is not None else node.setdefault(parent, {})
        node[split[1]] = value
    return out


def resolve_effective(
    plugin_config: Mapping[str, Any] | None, env: Mapping[str, str], state_dir: str | None
) -> dict[str, Any]:
    """The full effective ``LcmConfig`` as a JSON-ready dict in output key order.

    ``state_dir`` stands in for ``OPENCLAW_STATE_DIR`` (blank means ``~/.openclaw``).
    Unset optional values are omitted. Raises :class:`ConfigRuntimeError` when
    ``contextThresholdOverrides`` fails runtime validation (details ``{}``).
    """
    return nest(resolve_flat(plugin_config, env, state_dir))


def resolve_diagnostics(plugin_config: Mapping[str, Any] | None, env: Mapping[str, str]) -> dict[str, Any]:
    """Where the two session-pattern lists came from (cli-contract.md §14.1)."""
    plugin = plugin_config or {}
    out: dict[str, Any] = {}
    flags: dict[str, bool] = {}
    for name in ("ignoreSessionPatterns", "statelessSessionPatterns"):
        field = next(f for f in effective_fields() if f.name == name)
        raw = lookup_path(plugin, name)
        from_plugin = MISSING if raw is MISSING else coerce_plugin(field.primary, raw)
        if any(var in env for var in field.env):
            out[f"{name}Source"] = SOURCE_ENV
            flags[name] = from_plugin is not MISSING and len(from_plugin) > 0
        else:
            out[f"{name}Source"] = SOURCE_DEFAULT if from_plugin is MISSING else SOURCE_PLUGIN
            flags[name] = False
    for name, overridden in flags.items():
        out[f"{name}EnvOverridesPluginConfig"] = overridden
    return out


def effective_value(effective: Mapping[str, Any], dot_path: str) -> Any:
    """The effective value at ``dot_path`` (``config get``), or :data:`MISSING`.

    The whole path ``dbPath``, ``largeFileThresholdTokens`` or ``incrementalMaxDepth`` reads
    its effective field (``databasePath``, ``largeFileTokenThreshold``, ``sweepMaxDepth``).
    Objects are returned whole; lists are not indexable. MISSING means "not found";
    the caller reports ``effectiveValue: null`` for it.
    """
    return lookup_path(effective, effective_path_aliases().get(dot_path, dot_path))


def lcm_setting(
    path: str, plugin_config: Mapping[str, Any], env: Mapping[str, str], *, strict: bool = False
) -> Any:
    """One of lcm's own keys (:data:`~lcm_cli.engine.config.keys.LCM_KEYS`): the first usable
    environment variable, else the plugin config's value, else the declared default.

    ``strict``: a value that is set but unusable is refused (``CONFIG_VALIDATION_FAILED``)
    instead of falling back, for a key whose default would widen what a caller may do.
    """
    from lcm_cli.engine.config.keys import LCM_KEYS

    key = next(k for k in LCM_KEYS if k.path == path)
    for name in key.env:
        raw = env.get(name)
        if raw is not None:
            value = coerce_env(key, raw)
            if value is not MISSING:
                return value
            if strict:
                raise _unusable(key, raw, name)
    raw = lookup_path(plugin_config, key.path)
    if raw is not MISSING:
        value = coerce_plugin(key, raw)
        if value is not MISSING:
            return value
        if strict:
            raise _unusable(key, raw, f"plugins.entries.lcm.config.{key.path}")
    return key.default


def _unusable(key: ConfigKey, raw: Any, where: str) -> LcmError:
    accepted = key.schema.get("enum")
    expected = f"one of {', '.join(accepted)}" if accepted else f"a {key.schema.get('type', 'value')}"
    return LcmError(
        "CONFIG_VALIDATION_FAILED",
        f"{key.path} must be {expected}; got {raw!r}. Fix {where}.",
        {"key": key.path, "value": raw, "source": where},
    )
