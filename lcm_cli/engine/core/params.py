"""Validating an operation's parameters, in the reference's order (first failure wins).

Every door hands raw values here: the CLI passes option strings, ``lcm hook`` passes
JSON values. The order is the contract's: option support, selectors, missing selector,
format, roles, kind, time filters, limit, depth, count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.timefilter import TimeRange, resolve_time_range

ROLES = ("system", "user", "assistant", "tool")
KINDS = ("leaf", "condensed")
FORMATS = ("json", "table", "tsv")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500

# Fields whose CLI option is not simply ``--`` + the field name with dashes.
OPTION_OVERRIDES: dict[str, str] = {
    "max_files": "--limit",
    "prune_before": "--before",
    "conversation_class": "--class",
}


def option_name(field: str) -> str:
    """The CLI option that carries a request field (``include_content`` -> ``--include-content``)."""
    return OPTION_OVERRIDES.get(field) or "--" + field.replace("_", "-")


# JSON Schema of each request field: what `lcm commands` (and later `lcm hook --list`) shows.
_ISO = {"type": "string", "format": "date-time", "description": "ISO-8601 with a zone"}
FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "conversation_id": {"type": "integer", "minimum": 1},
    "session_key": {"type": "string"},
    "after": _ISO,
    "before": _ISO,
    "between": {"type": "string", "pattern": "^.+\\.\\..+$"},
    "recency": {"type": "string", "pattern": "^[0-9]+[smhdwSMHDW]$"},
    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    "cursor": {"type": "string"},
    "role": {"type": "array", "items": {"enum": list(ROLES)}},
    "include_content": {"type": "boolean", "default": False},
    "depth": {"type": "integer", "minimum": 0},
    "kind": {"enum": list(KINDS)},
    "count": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    # migrate-sessions
    "file": {"type": "array", "items": {"type": "string"}},
    "sessions_dir": {"type": "array", "items": {"type": "string"}},
    "store": {
        "type": "array",
        "items": {"type": "string"},
        "description": "an OpenClaw SQLite session store (openclaw-agent.sqlite)",
    },
    "since": {"type": "string", "description": "ISO-8601 timestamp or YYYY-MM-DD (UTC)"},
    "max_files": {"type": "integer", "minimum": 0},
    "apply": {"type": "boolean", "default": False},
    "verify": {"type": "boolean", "default": False},
    "json": {
        "type": "boolean",
        "default": False,
        "description": "accepted for compatibility; JSON is the default",
    },
    "verbose": {
        "type": "boolean",
        "default": False,
        "description": "accepted for compatibility; every file is always reported",
    },
    "state_dir": {
        "type": "string",
        "description": "the OpenClaw state dir (lossless-claw-migrate-sessions' name for --openclaw-dir)",
    },
    # backup
    "out": {"type": "string"},
    "quick": {"type": "boolean", "default": False},
    "keep": {"type": "integer", "minimum": 1},
    "force": {"type": "boolean", "default": False},
    # rotate
    "backup": {
        "enum": ["latest", "full", "none"],
        "default": "latest",
        "description": "latest = the rolling rotate-latest copy",
    },
    # doctor and prune
    "check": {"type": "array", "items": {"type": "string"}, "description": "check id or family (repeatable)"},
    "fail_on": {"enum": ["info", "warn", "error", "none"], "default": "warn"},
    "no_backup": {"type": "boolean", "default": False},
    "conversation_class": {
        "type": "array",
        "items": {"enum": ["archived_subagents", "cron_sessions", "null_subagent_context", "orphaned"]},
    },
    "vacuum": {"type": "boolean", "default": False},
    "prune_before": {"type": "string", "description": "a duration (90d, 12w) or an ISO-8601 timestamp"},
    "archived_only": {"type": "boolean", "default": True},
    "include_active": {"type": "boolean", "default": False},
    "max_db_size": {"type": "string", "description": "a size such as 500MB or 2GiB"},
    # recall: grep, describe, expand, export, expand-query
    "mode": {"enum": ["regex", "full_text"], "default": "regex"},
    "scope": {"enum": ["messages", "summaries", "both", "files"], "default": "both"},
    "file_id": {"type": "array", "items": {"type": "string"}},
    "all_conversations": {"type": "boolean", "default": False},
    "sort": {"enum": ["recency", "relevance", "hybrid"], "default": "recency"},
    "deadline_ms": {"type": "integer", "minimum": 1, "maximum": 600000, "default": 5000},
    "max_bytes": {"type": "integer", "minimum": 1, "maximum": 512000, "default": 32768},
    "max_tokens": {"type": "integer", "minimum": 1},
    "to": {"enum": ["markdown", "jsonl"]},
    "include_summaries": {"type": "boolean", "default": False},
    "query": {"type": "string"},
    "summary_id": {"type": "array", "items": {"type": "string"}},
    "token_cap": {"type": "integer", "minimum": 1},
    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000},
    # prompts
    "var": {
        "type": "array",
        "items": {"type": "string", "pattern": "^[a-z_]+=.*$"},
        "description": "NAME=VALUE template variable",
    },
    "source_file": {"type": "string", "description": "UTF-8 text file used as $source_text"},
    # the hook and serve doors
    "list": {"type": "boolean", "default": False},
    "stdio": {"type": "boolean", "default": False},
    "socket": {"type": "string"},
    "max_request_bytes": {"type": "integer", "minimum": 1024},
    # control contract
    "operation": {"enum": ["status", "doctor", "rotate"]},
    # sessions and ingest (the operation checks the message shapes itself)
    "session_id": {"type": "string", "description": "OpenClaw runtime session id"},
    "session_file": {"type": "string", "description": "the session's transcript JSONL"},
    "host_store": {
        "type": "string",
        "description": "the host's SQLite session store (openclaw-agent.sqlite), or its agent dir",
    },
    "message": {
        "description": "one message object (or its JSON text)",
        "oneOf": [{"type": "object"}, {"type": "string"}],
    },
    "messages": {
        "description": "an array of message objects (or its JSON text)",
        "oneOf": [{"type": "array", "items": {"type": "object"}}, {"type": "string"}],
    },
    "is_heartbeat": {"type": "boolean", "default": False},
    "reason": {"type": "string", "description": "why the session ended (session_end reason)"},
    "next_session_id": {"type": "string"},
    "next_session_key": {"type": "string"},
    # compaction and assembly
    "token_budget": {"type": "integer", "minimum": 1, "description": "model context window in tokens"},
    "compaction_target": {"type": "string", "enum": ["budget", "threshold"], "default": "budget"},
    "prompt": {"type": "string", "description": "the next user prompt (prompt-aware eviction)"},
    "available_tools": {
        "description": "the host's tool names this turn (a JSON array, or its text, or comma-separated names)",
        "oneOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}],
    },
    "manual": {"type": "boolean", "default": False, "description": "an operator's compaction: always sweep"},
    "until_under_target": {
        "type": "boolean",
        "default": False,
        "description": "with manual: chain sweeps while they make progress until under the target (ours)",
    },
    "current_token_count": {"type": "integer", "minimum": 0, "description": "tokens the host observed"},
    "model": {
        "type": "string",
        "description": "the host's model ref (provider/model), matched by contextThresholdOverrides",
    },
    "pre_prompt_message_count": {
        "type": "integer",
        "minimum": 0,
        "description": "how many of the live messages the host had before this turn's prompt",
    },
    "advancement_key": {
        "type": "string",
        "description": "the host's idempotency key of one accepted turn (commitTurn)",
    },
    "admission": {
        "description": "the host's admission anchor of the turn's user entry (a JSON object, or its text)",
        "oneOf": [{"type": "object"}, {"type": "string"}],
    },
    "terminal": {
        "description": "the host's anchor of the turn's accepted terminal entry (a JSON object, or its text)",
        "oneOf": [{"type": "object"}, {"type": "string"}],
    },
    "auto_compaction_summary": {
        "type": "string",
        "description": "the host's own compaction summary of this turn, stored as a user message",
    },
}
# The fields validated in the reference's order below; any other field is checked by its schema.
_ORDERED_FIELDS = frozenset(
    (
        "conversation_id",
        "session_key",
        "role",
        "kind",
        "after",
        "before",
        "between",
        "recency",
        "limit",
        "depth",
        "count",
        "cursor",
        "include_content",
    )
)
_DIGITS = re.compile(r"[0-9]+")


class Selector(NamedTuple):
    """How a conversation was named: by id or by session key."""

    kind: str  # "conversationId" | "sessionKey"
    value: int | str

    def to_dict(self) -> dict[str, Any]:
        """The selector as error details."""
        return {"kind": self.kind, "value": self.value}


class Request(NamedTuple):
    """Validated parameters; fields an operation does not take keep their defaults."""

    selector: Selector | None = None
    time: TimeRange = TimeRange()
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None
    roles: tuple[str, ...] = ()
    include_content: bool = False
    depth: int | None = None
    kind: str | None = None
    tail_count: int | None = None  # `count` would shadow tuple.count
    extra: dict[str, Any] | None = None  # fields outside the read commands' ordered set
    args: tuple[str, ...] = ()


def _supplied(value: Any) -> bool:
    # Flags count only when true, lists only when non-empty (as the reference counts them).
    if value is None or value is False:
        return False
    if isinstance(value, (list, tuple)) and not value:
        return False
    return True


# SQLite integers are 64-bit: a larger id or count can name nothing.
SQLITE_MAX_INT = 2**63 - 1


def _integer(option: str, value: Any, *, low: int, high: int | None, any_size: bool = False) -> int:
    """A whole number in ``low..high`` (``high`` None: SQLite's largest integer).

    ``any_size`` takes any whole number above ``low`` (an id no row can have is the
    caller's "not found", as in the reference).
    """
    longest = 400 if any_size else 30
    if isinstance(value, bool):
        ok = False
    elif isinstance(value, int):
        ok, number = True, value
    elif isinstance(value, float) and value.is_integer():
        ok, number = True, int(value)
    elif isinstance(value, str) and len(value) <= longest and _DIGITS.fullmatch(value):
        ok, number = True, int(value)
    else:
        ok = False
    ceiling = None if any_size else (SQLITE_MAX_INT if high is None else high)
    if not ok or number < low or (ceiling is not None and number > ceiling):
        bound = f"{low}..{high}" if high is not None else f">= {low} (at most {SQLITE_MAX_INT})"
        raise invalid_argument(
            f"Invalid {option} value {value!r}: expected a whole number {bound}.",
            {"value": value},
        )
    return number


def _check_text(raw: Mapping[str, Any], args: tuple[str, ...]) -> None:
    """``INVALID_ARGUMENT`` for text that is not Unicode: lone surrogates, or argv bytes
    that were not UTF-8 (Python hands them over as surrogates)."""
    for name, value in [*raw.items(), *(("argument", a) for a in args)]:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as exc:
                    option = option_name(name) if name != "argument" else "an argument"
                    raise invalid_argument(
                        f"{option} is not valid UTF-8 text (character {exc.start}); pass UTF-8.",
                        {"option": option, "reason": "not-utf8"},
                    ) from None


def validate_request(
    command: str,
    options: tuple[str, ...],
    raw: Mapping[str, Any],
    *,
    needs_selector: bool = False,
    output_format: str | None = None,
    args: tuple[str, ...] = (),
    now_ms: int | None = None,
) -> Request:
    """Check ``raw`` against what ``command`` accepts and return a :class:`Request`."""
    _check_text(raw, args)
    for name, value in raw.items():
        if name not in options and _supplied(value):
            option = option_name(name)
            raise invalid_argument(
                f"{option} is not supported by `{command}`; see `lcm {command.replace('.', ' ')} --help`.",
                {"option": option.lstrip("-"), "command": command},
            )

    conversation_id = raw.get("conversation_id")
    session_key = raw.get("session_key")
    if conversation_id == "":
        conversation_id = None
    if conversation_id is not None and session_key not in (None, ""):
        raise LcmError(
            "INVALID_SELECTOR",
            "Use either --conversation-id or --session-key, not both.",
        )
    selector: Selector | None = None
    if conversation_id is not None:
        selector = Selector(
            "conversationId", _integer("--conversation-id", conversation_id, low=1, high=None, any_size=True)
        )
    elif isinstance(session_key, str) and session_key.strip():
        selector = Selector("sessionKey", session_key.strip())
    if needs_selector and selector is None:
        raise LcmError(
            "MISSING_SELECTOR",
            f"`{command}` needs a conversation: pass --conversation-id <id> or "
            "--session-key <key> (find them with `lcm conversations list`).",
        )

    if output_format is not None and output_format not in FORMATS:
        raise invalid_argument(
            f"Invalid --format value {output_format!r}: expected json, table or tsv.",
            {"value": output_format},
        )

    roles = raw.get("role") or ()
    if isinstance(roles, str):
        roles = (roles,)
    for role in roles:
        if role not in ROLES:
            raise invalid_argument(
                f"Invalid --role value {role!r}: expected one of system, user, assistant, tool."
            )
    kind = raw.get("kind") or None  # as the reference: an empty --kind is no filter
    if kind is not None and kind not in KINDS:
        raise invalid_argument(f"Invalid --kind value {kind!r}: expected leaf or condensed.")

    time = resolve_time_range(
        raw.get("after"), raw.get("before"), raw.get("between"), raw.get("recency"), now_ms=now_ms
    )

    limit_raw = raw.get("limit")
    limit = DEFAULT_LIMIT if limit_raw is None else _integer("--limit", limit_raw, low=1, high=MAX_LIMIT)
    depth_raw = raw.get("depth")
    depth = None if depth_raw is None else _integer("--depth", depth_raw, low=0, high=None)
    count_raw = raw.get("count")
    count = None if count_raw is None else _integer("--count", count_raw, low=1, high=MAX_LIMIT)

    extra = {name: _by_schema(name, value) for name, value in raw.items() if name not in _ORDERED_FIELDS}
    cursor = raw.get("cursor")
    return Request(
        selector=selector,
        time=time,
        limit=limit,
        cursor=cursor if cursor else None,
        roles=tuple(roles),
        include_content=bool(raw.get("include_content")),
        depth=depth,
        kind=kind,
        tail_count=count,
        args=args,
        extra=extra,
    )


def _by_schema(field: str, value: Any) -> Any:
    """Check one non-ordered field against its schema; None (absent) passes through."""
    schema = FIELD_SCHEMAS.get(field, {})
    kind = schema.get("type")
    option = option_name(field)
    if value is None:
        return None
    if "oneOf" in schema:
        return value  # structured input: the operation validates its shape
    if kind == "integer":
        return _integer(option, value, low=schema.get("minimum", 0), high=schema.get("maximum"))
    if kind == "boolean":
        if not isinstance(value, bool):
            raise invalid_argument(f"{option} is a flag: true or false.", {"value": value})
        return value
    if kind == "array":
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise invalid_argument(f"{option} takes text values.", {"value": value})
        return list(items)
    if not isinstance(value, str):
        raise invalid_argument(f"{option} takes a text value.", {"value": value})
    return value
