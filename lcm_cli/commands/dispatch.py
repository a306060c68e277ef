"""Calling an operation from a JSON parameters object: what `lcm hook` and `lcm serve` share.

A host speaks JSON, so parameters arrive as one object keyed by request field. Both
spellings are accepted: the request field (``conversation_id``) and the host's camelCase
(``conversationId``). Positional arguments of the CLI (a summary id, a config path) are
named fields here (``summary_id``/``summaryId``). The result is exactly the envelope
:func:`lcm_cli.engine.api.call` returns, so every door answers identically.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import PARAMS, UNIVERSAL_FIELDS
from lcm_cli.engine.core.registry import OPERATIONS, REFERENCE_COMMANDS, OpSpec, command_words
from lcm_cli.engine.core.suggest import suggest

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """``conversationId`` -> ``conversation_id`` (snake names pass through)."""
    return _CAMEL.sub(r"_\1", name).lower()


def camel_case(name: str) -> str:
    """``conversation_id`` -> ``conversationId``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def operation_spec(method: Any) -> OpSpec:
    """The registry entry for ``method`` or ``UNKNOWN_OPERATION``."""
    if isinstance(method, str) and method in OPERATIONS:
        return OPERATIONS[method]
    details: dict[str, Any] = {"operation": method if isinstance(method, (str, int, float)) else None}
    close = suggest(method, OPERATIONS) if isinstance(method, str) else []
    if close:
        details["suggestions"] = close
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    raise LcmError(
        "UNKNOWN_OPERATION", f"Unknown operation {method!r}. List them with `lcm hook --list`.{hint}", details
    )


def split_params(name: str, params: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Request fields and positional arguments of operation ``name`` from a JSON object."""
    spec = operation_spec(name)
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise invalid_argument("params must be a JSON object.", {"type": type(params).__name__})
    fields: dict[str, Any] = {}
    named_args: dict[str, Any] = {}
    for key, value in params.items():
        field = snake_case(key)
        if field in spec.args:
            named_args[field] = value
        elif field in spec.options or field in UNIVERSAL_FIELDS:
            fields[field] = value
        else:
            known = [camel_case(f) for f in (*spec.options, *UNIVERSAL_FIELDS, *spec.args)]
            close = suggest(key, known)
            raise invalid_argument(
                f"Parameter {key!r} is not taken by `{name}`; see `lcm hook --list`."
                + (f" Did you mean {' or '.join(close)}?" if close else ""),
                {"parameter": key, "operation": name, **({"suggestions": close} if close else {})},
            )
    args: list[str] = []
    for arg in spec.args:
        if arg not in named_args:
            raise invalid_argument(
                f"`{name}` needs the parameter {camel_case(arg)!r}.", {"parameter": camel_case(arg)}
            )
        value = named_args[arg]
        if arg == "json_value" and not isinstance(value, str):
            value = json.dumps(value)  # `config set`'s value: any JSON value, as JSON text
        if not isinstance(value, str):
            raise invalid_argument(f"{camel_case(arg)!r} must be a string.", {"parameter": camel_case(arg)})
        args.append(value)
    return fields, tuple(args)


# lcm's one time grammar (timefilter.parse_when), for the time fields of lcm's own operations.
_WHEN_SCHEMA = {
    "type": "string",
    "description": "an ISO-8601 timestamp (no zone: UTC), a date (2026-07-01) or a duration back from now (90d)",
}
_WHEN_FIELDS = frozenset(("after", "before", "recency", "since", "prune_before"))


def params_schema(spec: OpSpec, name: str = "") -> dict[str, Any]:
    """The JSON Schema of an operation's parameters object (camelCase keys)."""
    properties: dict[str, Any] = {}
    for field in spec.options + UNIVERSAL_FIELDS:
        ours = name not in REFERENCE_COMMANDS and field in _WHEN_FIELDS
        properties[camel_case(field)] = _WHEN_SCHEMA if ours else PARAMS[field].schema
    for arg in spec.args:
        properties[camel_case(arg)] = {"type": "string"}
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if spec.args:
        schema["required"] = [camel_case(arg) for arg in spec.args]
    return schema


def operation_list() -> list[dict[str, Any]]:
    """Every operation with its summary, CLI words and parameter schema (`lcm hook --list`)."""
    out = []
    for name, spec in OPERATIONS.items():
        out.append(
            {
                "name": name,
                "summary": spec.summary,
                "command": "lcm " + " ".join(command_words(name, spec)),
                "writes": spec.writes,
                "params": params_schema(spec, name),
            }
        )
    return out


def serialization_key(name: str, fields: Mapping[str, Any]) -> str:
    """Which per-session queue a write waits in: the session key, else id, else one global queue."""
    for field in ("session_key", "session_id", "conversation_id"):
        value = fields.get(field)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return f"{field}:{str(value).strip()}"
    return "__lcm__"
