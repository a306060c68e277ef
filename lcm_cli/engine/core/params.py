"""Request fields, declared once, and validating them in the reference's order.

Each field is one :class:`Param`: its JSON Schema, CLI option, metavar and help. The doors
are generated from these declarations (see :mod:`lcm_cli.engine.core.registry` for which
operation takes which), and operations read validated values with ``req[PARAM]``.

Validation stops at the first failure, in the reference's order. Every door hands raw
values here: the CLI passes option strings, ``lcm hook`` passes JSON values. The order
is the contract's: option support, selectors, missing selector, format, roles, kind,
time filters, limit, depth, count; then every other field by its schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.registry import REFERENCE_COMMANDS
from lcm_cli.engine.core.suggest import id_kind_hint, suggest
from lcm_cli.engine.core.timefilter import TimeRange, resolve_time_range

if TYPE_CHECKING:
    from typing import Any, Generic, TypeVar

    T = TypeVar("T")
    T_co = TypeVar("T_co", covariant=True)  # a Param only hands its type out
else:

    class Generic:
        """At run time a Param needs no type parameter: ``Generic[T_co]`` is this empty base."""

        __slots__ = ()

        def __class_getitem__(cls, _parameter: object) -> type:
            return cls

    T_co = None

ROLES = ("system", "user", "assistant", "tool")
KINDS = ("leaf", "condensed")
#: Formats of plain records, a header and one line each (lcm_cli.render.rows).
ROW_FORMATS = ("csv", "tsv-plain")
FORMATS = ("json", "table", "tsv", "ndjson", *ROW_FORMATS)
DEFAULT_LIMIT = 50
MAX_LIMIT = 500


class Param(Generic[T_co]):
    """One request field, declared once: its JSON Schema, CLI spelling and help.

    ``T`` is the type an operation reads back with ``req[PARAM]`` (absent values read as
    None, flags as False, repeatable options as an empty list). Every door derives from
    this: the fast parser and the typer app (option, metavar, flag, repeatable, help),
    the hook/serve schemas and `lcm commands` (schema), and the validation below.
    """

    __slots__ = ("name", "schema", "option", "metavar", "help")

    def __init__(
        self, name: str, schema: dict[str, Any], help: str, *, option: str = "", metavar: str = ""
    ) -> None:
        self.name = name
        self.schema = schema
        self.option = option or "--" + name.replace("_", "-")
        self.metavar = metavar
        self.help = help

    @property
    def flag(self) -> bool:
        """True for a bare flag (``--apply``)."""
        return self.schema.get("type") == "boolean"

    @property
    def repeatable(self) -> bool:
        """True for an option given once per value (``--role user --role tool``)."""
        return self.schema.get("type") == "array"

    def __repr__(self) -> str:
        return f"Param({self.name!r})"


def _text(description: str = "") -> dict[str, Any]:
    return {"type": "string", "description": description} if description else {"type": "string"}


def _flag(description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "boolean", "default": False}
    return {**schema, "description": description} if description else schema


def _texts(description: str = "", **items: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": {"type": "string", **items}}
    return {**schema, "description": description} if description else schema


def _json(description: str, shape: dict[str, Any]) -> dict[str, Any]:
    """Structured input: the value itself or its JSON text (the operation checks the shape)."""
    return {"description": description, "oneOf": [shape, {"type": "string"}]}


_ISO = {"type": "string", "format": "date-time", "description": "ISO-8601 with a zone"}

# --- selectors, time filters and paging (validated in the reference's order) ----------
CONVERSATION_ID: Param[int | None] = Param(
    "conversation_id",
    {"type": "integer", "minimum": 1},
    "Conversation id (digits), from `lcm conversations list`.",
    metavar="ID",
)
SESSION_KEY: Param[str | None] = Param(
    "session_key",
    _text(),
    "OpenClaw session key; the active conversation wins, then the newest.",
    metavar="KEY",
)
AFTER: Param[str | None] = Param(
    "after", _ISO, "Inclusive lower bound, e.g. 2026-07-01T00:00:00Z.", metavar="ISO"
)
BEFORE: Param[str | None] = Param(
    "before", _ISO, "Exclusive upper bound, e.g. 2026-07-02T00:00:00Z.", metavar="ISO"
)
BETWEEN: Param[str | None] = Param(
    "between",
    {"type": "string", "pattern": "^.+\\.\\..+$"},
    "Both bounds at once: START..END (START inclusive, END exclusive).",
    metavar="A..B",
)
RECENCY: Param[str | None] = Param(
    "recency",
    {"type": "string", "pattern": "^[0-9]+[smhdwSMHDW]$"},
    "Only the last N s/m/h/d/w, e.g. 12h or 7d.",
    metavar="DURATION",
)
LIMIT: Param[int] = Param(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
    "Page size, 1..500 (default 50).",
    metavar="N",
)
CURSOR: Param[str | None] = Param(
    "cursor", _text(), "Continue after the page that printed this nextCursor.", metavar="CURSOR"
)
ROLE: Param[list[str]] = Param(
    "role",
    {"type": "array", "items": {"enum": list(ROLES)}},
    "Only this role (system, user, assistant, tool); repeatable.",
    metavar="ROLE",
)
INCLUDE_CONTENT: Param[bool] = Param(
    "include_content", _flag(), "Include full content, not just the 240-character preview."
)
DEPTH: Param[int | None] = Param(
    "depth", {"type": "integer", "minimum": 0}, "Only summaries of this depth (0 = leaf).", metavar="N"
)
MIN_DEPTH: Param[int | None] = Param(
    "min_depth",
    {"type": "integer", "minimum": 0},
    "Only summaries of at least this depth: the top of the DAG (0 = all).",
    metavar="N",
)
KIND: Param[str | None] = Param(
    "kind", {"enum": list(KINDS)}, "Only leaf or condensed summaries.", metavar="KIND"
)
COUNT: Param[int | None] = Param(
    "count",
    {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    "Tail size, 1..500 (default: effective freshTailCount).",
    metavar="N",
)
MAX_TOKENS: Param[int | None] = Param(
    "max_tokens",
    {"type": "integer", "minimum": 1},
    "Cut the answer (data; never meta) to about N tokens; reports what was left out and a cursor to continue.",
    metavar="N",
)

# --- recall: grep, describe, expand, export, expand-query ------------------------------
MODE: Param[str | None] = Param(
    "mode",
    {"enum": ["auto", "full_text", "regex"], "default": "auto"},
    "auto (default: full_text unless the pattern is regex syntax), full_text or regex.",
    metavar="MODE",
)
SCOPE: Param[str | None] = Param(
    "scope",
    {"enum": ["messages", "summaries", "both", "files"], "default": "both"},
    "messages, summaries, both (default) or files.",
    metavar="SCOPE",
)
FILE_ID: Param[list[str]] = Param(
    "file_id", _texts(), "With --scope files: only this file; repeatable.", metavar="FILE_ID"
)
ALL_CONVERSATIONS: Param[bool] = Param(
    "all_conversations", _flag(), "Search or resolve across every conversation."
)
SORT: Param[str | None] = Param(
    "sort",
    {"enum": ["recency", "relevance", "hybrid"], "default": "recency"},
    "recency (default), relevance or hybrid (full_text only).",
    metavar="SORT",
)
DEADLINE_MS: Param[int | None] = Param(
    "deadline_ms",
    {"type": "integer", "minimum": 1, "maximum": 600000, "default": 5000},
    "Stop searching after MS milliseconds (default 5000).",
    metavar="MS",
)
SCAN_LIMIT: Param[int | None] = Param(
    "scan_limit",
    {"type": "integer", "minimum": 1, "maximum": 10_000_000, "default": 20000},
    "Regex mode: read at most ROWS rows per source (default 20000).",
    metavar="ROWS",
)
MAX_BYTES: Param[int | None] = Param(
    "max_bytes",
    {"type": "integer", "minimum": 1, "maximum": 512000, "default": 32768},
    "File content cap in bytes, 1..512000 (default 32768).",
    metavar="N",
)
EXPORT_FORMATS = ("markdown", "jsonl")
GRAPH_FORMATS = ("mermaid", "dot", "svg")
# One field, three uses: export's and graph's format, transplant's target conversation.
# Each operation checks the form it takes (recall.scope.choice, surgery.selection).
TO: Param[Any] = Param(
    "to",
    {
        "description": "export: markdown|jsonl; summaries graph: mermaid|dot|svg; "
        "summaries transplant: the target conversation id",
        "oneOf": [
            {"enum": [*EXPORT_FORMATS, *GRAPH_FORMATS]},
            {"type": "integer", "minimum": 1},
        ],
    },
    "markdown, or jsonl (an OpenClaw transcript).",
    metavar="FORMAT",
)
INCLUDE_SUMMARIES: Param[bool] = Param("include_summaries", _flag(), "Also export the summary DAG.")
QUERY: Param[str | None] = Param("query", _text(), "Find summaries by full-text search.", metavar="TEXT")
SUMMARY_ID: Param[list[str]] = Param("summary_id", _texts(), "Expand this summary; repeatable.", metavar="ID")
TOKEN_CAP: Param[int | None] = Param(
    "token_cap",
    {"type": "integer", "minimum": 1},
    "Evidence budget in tokens (default maxExpandTokens).",
    metavar="N",
)
TIMEOUT_MS: Param[int | None] = Param(
    "timeout_ms",
    {"type": "integer", "minimum": 1, "maximum": 600000},
    "Overall time limit (default delegationTimeoutMs).",
    metavar="MS",
)
# One call of an agent tool (lcm_grep, lcm_describe, lcm_expand, lcm_expand_query): the tool
# names and their parameter schemas are declared in lcm_cli.engine.recall.tools.
TOOL: Param[str | None] = Param(
    "tool",
    _text("the agent tool to run (`lcm tool specs` lists them)"),
    "The agent tool to run, e.g. lcm_grep (`lcm tool specs` lists them).",
    metavar="NAME",
)
TOOL_ARGUMENTS: Param[Any] = Param(
    "arguments",
    _json("the tool call's arguments (a JSON object, or its JSON text)", {"type": "object"}),
    "The tool call's arguments as a JSON object, as the model wrote them.",
    metavar="JSON",
)

# --- summary surgery: rewrite, dissolve, transplant, graph --------------------------------
ALL: Param[bool] = Param("all", _flag(), "Every summary in scope (bottom-up by depth).")
CASCADE: Param[bool] = Param(
    "cascade", _flag(), "Also re-summarize every summary that consumes a rewritten one, bottom-up."
)
PURGE: Param[bool] = Param(
    "purge", _flag(), "Delete the dissolved summary instead of keeping it as orphaned history."
)
FROM_CONVERSATION: Param[int | None] = Param(
    "from",
    {"type": "integer", "minimum": 1},
    "Copy the summary DAG of this conversation (its summaries in context, with their subtrees).",
    metavar="ID",
)

# --- writing files, backups and dry runs -------------------------------------------------
OUT: Param[str | None] = Param("out", _text(), "Where to write.", metavar="PATH")
FORCE: Param[bool] = Param("force", _flag(), "Run even when below the threshold / past a retry backoff.")
APPLY: Param[bool] = Param("apply", _flag(), "Really write (dry run otherwise).")
QUICK: Param[bool] = Param("quick", _flag(), "Check the copy with quick_check instead of integrity_check.")
KEEP: Param[int | None] = Param(
    "keep",
    {"type": "integer", "minimum": 1},
    "Afterwards keep only the newest N backups of this command.",
    metavar="N",
)
BACKUP: Param[str | None] = Param(
    "backup",
    {
        "enum": ["changes", "full", "latest", "none"],
        "default": "changes",
        "description": (
            "changes = the rows the command changes, as they were (undo: `lcm backup restore FILE`); "
            "full = a checked copy of the whole database; latest = rotate's rolling rotate-latest copy"
        ),
    },
    "The backup this write takes: changes (default: the rows it changes, as they were, in "
    "<db>.<label>-<stamp>-<rand>.changes.jsonl.gz), full (a checked copy of the whole database) or none.",
    metavar="MODE",
)
NO_BACKUP: Param[bool] = Param(
    "no_backup", _flag(), "Take no backup (the same as --backup none; not recommended)."
)
VACUUM: Param[bool] = Param(
    "vacuum",
    _flag(),
    "Afterwards give the freed space back in steps of ~25 ms of write lock (files with incremental "
    "auto-vacuum; others say to run `lcm vacuum --full --apply` once).",
)
FULL_VACUUM: Param[bool] = Param(
    "full",
    _flag(),
    "OFFLINE: rewrite the whole file with incremental auto-vacuum (one VACUUM, temp copy on disk). "
    "Locks every writer out for about 20 s per GB; refused (DATABASE_IN_USE) while another "
    "process has the file open.",
)

# --- migrate-sessions --------------------------------------------------------------------
FILE: Param[list[str]] = Param("file", _texts(), "Read from PATH; repeatable.", metavar="PATH")
SESSIONS_DIR: Param[list[str]] = Param(
    "sessions_dir", _texts(), "Import every *.jsonl directly in DIR; repeatable.", metavar="DIR"
)
STORE: Param[list[str]] = Param(
    "store",
    _texts("an OpenClaw SQLite session store (openclaw-agent.sqlite)"),
    "Import every session of this OpenClaw SQLite store (openclaw-agent.sqlite); repeatable.",
    metavar="PATH",
)
SINCE: Param[str | None] = Param(
    "since",
    _text("ISO-8601 timestamp, YYYY-MM-DD (UTC) or a duration back from now (7d)"),
    "Only files modified at or after WHEN: a timestamp, a date or a duration (7d, 36h).",
    metavar="WHEN",
)
MAX_FILES: Param[int | None] = Param(
    "max_files", {"type": "integer", "minimum": 0}, "Read at most N files.", option="--limit", metavar="N"
)
VERIFY: Param[bool] = Param("verify", _flag(), "Read-only: check every transcript entry is in the database.")
JSON: Param[bool] = Param(
    "json",
    _flag("accepted for compatibility; JSON is the default"),
    "Accepted for compatibility; JSON is the default output.",
)
VERBOSE: Param[bool] = Param(
    "verbose",
    _flag("with --verify: list the entries each file is missing (without it, their count)"),
    "With --verify: list the entries each file is missing (without it, each file gives their "
    "count). Every file is always listed.",
)
STATE_DIR: Param[str | None] = Param(
    "state_dir",
    _text("the OpenClaw state dir (lossless-claw-migrate-sessions' name for --openclaw-dir)"),
    "The OpenClaw state dir: lossless-claw-migrate-sessions' name for --openclaw-dir.",
    metavar="DIR",
)

# --- doctor and prune --------------------------------------------------------------------
CHECK: Param[list[str]] = Param(
    "check",
    _texts("check id or family (repeatable)"),
    "Only this check id or family (e.g. fts); repeatable.",
    metavar="ID",
)
FAIL_ON: Param[str | None] = Param(
    "fail_on",
    {"enum": ["info", "warn", "error", "none"], "default": "warn"},
    "Exit 6 when a finding is at or above info, warn (default), error; none never fails.",
    metavar="SEVERITY",
)
THOROUGH: Param[bool] = Param(
    "thorough",
    _flag(),
    "Run PRAGMA quick_check over the whole file (reads every page: minutes on a big file); "
    "by default a big file gets a time-bounded check, table by table.",
)
FINDINGS_ONLY: Param[bool] = Param(
    "findings_only",
    _flag(),
    "List only the checks that found something (INFO, WARN, FAIL); counts still cover every check.",
)
CONVERSATION_CLASS: Param[list[str]] = Param(
    "conversation_class",
    {
        "type": "array",
        "items": {"enum": ["archived_subagents", "cron_sessions", "null_subagent_context", "orphaned"]},
    },
    "archived_subagents, cron_sessions, null_subagent_context or orphaned; repeatable.",
    option="--class",
    metavar="CLASS",
)
PRUNE_BEFORE: Param[str | None] = Param(
    "prune_before",
    _text("a duration (90d, 12w), a date or an ISO-8601 timestamp"),
    "Conversations with no activity since WHEN: a duration (90d, 12w), a date or a timestamp.",
    option="--before",
    metavar="WHEN",
)
ARCHIVED_ONLY: Param[bool] = Param(
    "archived_only",
    {"type": "boolean", "default": True},
    "Only archived conversations (the default).",
)
INCLUDE_ACTIVE: Param[bool] = Param(
    "include_active", _flag(), "Also active conversations (overrides --archived-only)."
)
MAX_DB_SIZE: Param[str | None] = Param(
    "max_db_size",
    _text("a size such as 500MB or 2GiB"),
    "Oldest first until the data fits in SIZE (e.g. 500MB, 2GiB).",
    metavar="SIZE",
)

# --- prompts -----------------------------------------------------------------------------
VAR: Param[list[str]] = Param(
    "var",
    _texts("NAME=VALUE template variable", pattern="^[a-z_]+=.*$"),
    "Set a template variable (target_tokens, previous_context, custom_instructions, "
    "source_text, aggressive, ...); repeatable.",
    metavar="NAME=VALUE",
)
SOURCE_FILE: Param[str | None] = Param(
    "source_file",
    _text("UTF-8 text file used as $source_text"),
    "Use this UTF-8 file as $source_text.",
    metavar="PATH",
)

# --- output shape, taken by every operation (see UNIVERSAL_FIELDS) -----------------------
FIELDS: Param[str | None] = Param(
    "fields",
    {"type": "string", "description": "comma-separated dot paths of data to keep, e.g. conversationId,title"},
    "Keep only these fields of the data (comma-separated dot paths, e.g. conversationId,title); "
    "a list command keeps them in each item.",
    metavar="A,B.C",
)
# `--all` on the CLI; a command that declares its own `--all` (`summaries rewrite`) keeps it.
ALL_PAGES: Param[bool] = Param(
    "all_pages",
    _flag(),
    "Follow nextCursor to the end and stream every item as NDJSON (one per line).",
    option="--all",
)

NO_HEADERS: Param[bool] = Param(
    "no_headers", _flag(), "With --format csv or tsv-plain: leave out the header line."
)

# --- the hook and serve doors ------------------------------------------------------------
LIST: Param[bool] = Param("list", _flag(), "Print every operation with its parameter JSON Schema.")
STDIO: Param[bool] = Param("stdio", _flag(), "Serve newline-delimited JSON on stdin/stdout.")
SOCKET: Param[str | None] = Param("socket", _text(), "Serve on a Unix socket (mode 0600).", metavar="PATH")
MAX_REQUEST_BYTES: Param[int | None] = Param(
    "max_request_bytes",
    {"type": "integer", "minimum": 1024},
    "Longest request line accepted (default 32 MiB).",
    metavar="N",
)

# --- lcm browse ----------------------------------------------------------------------------
SCREENSHOT: Param[str | None] = Param(
    "screenshot",
    _text(),
    "Draw the opening screen without a terminal into this SVG file, then exit.",
    metavar="PATH",
)

# --- the control contract ----------------------------------------------------------------
OPERATION: Param[str | None] = Param(
    "operation", {"enum": ["status", "doctor", "rotate"]}, "status, doctor or rotate.", metavar="NAME"
)

# --- sessions and ingest (the operation checks the message shapes itself) ----------------
SESSION_ID: Param[str | None] = Param(
    "session_id",
    _text("OpenClaw runtime session id"),
    "OpenClaw runtime session id (the transcript's header id).",
    metavar="ID",
)
SESSION_FILE: Param[str | None] = Param(
    "session_file",
    _text("the session's transcript JSONL"),
    "The session's transcript JSONL.",
    metavar="PATH",
)
HOST_STORE: Param[str | None] = Param(
    "host_store",
    _text("the host's SQLite session store (openclaw-agent.sqlite), or its agent dir"),
    "The host's SQLite session store (openclaw-agent.sqlite) when there is no JSONL.",
    metavar="PATH",
)
MESSAGE: Param[Any] = Param(
    "message",
    _json("one message object (or its JSON text)", {"type": "object"}),
    "One message object as JSON text.",
    metavar="JSON",
)
MESSAGES: Param[Any] = Param(
    "messages",
    _json("an array of message objects (or its JSON text)", {"type": "array", "items": {"type": "object"}}),
    "A JSON array of message objects.",
    metavar="JSON",
)
IS_HEARTBEAT: Param[bool] = Param("is_heartbeat", _flag(), "A heartbeat turn: nothing is stored.")
REASON: Param[str | None] = Param(
    "reason",
    _text("why the session ended (session_end reason)"),
    "deleted, reset, idle, ... (new/restart/shutdown: no-op).",
    metavar="REASON",
)
NEXT_SESSION_ID: Param[str | None] = Param(
    "next_session_id", _text(), "The session that replaces it.", metavar="ID"
)
NEXT_SESSION_KEY: Param[str | None] = Param(
    "next_session_key", _text(), "The replacing session's key.", metavar="KEY"
)

# --- compaction and assembly -------------------------------------------------------------
TOKEN_BUDGET: Param[int | None] = Param(
    "token_budget",
    {"type": "integer", "minimum": 1, "description": "model context window in tokens"},
    "Model context window in tokens (default 128000, capped by maxAssemblyTokenBudget).",
    metavar="N",
)
COMPACTION_TARGET: Param[str | None] = Param(
    "compaction_target",
    {"type": "string", "enum": ["budget", "threshold"], "default": "budget"},
    "budget (default: until under the budget) or threshold (contextThreshold x budget).",
    metavar="TARGET",
)
PROMPT: Param[str | None] = Param(
    "prompt",
    _text("the next user prompt (prompt-aware eviction)"),
    "The next prompt (used when promptAwareEviction is on).",
    metavar="TEXT",
)
AVAILABLE_TOOLS: Param[Any] = Param(
    "available_tools",
    _json(
        "the host's tool names this turn (a JSON array, or its text, or comma-separated names)",
        {"type": "array", "items": {"type": "string"}},
    ),
    "The host's tools this turn (JSON array or comma-separated); with --prompt the host "
    "delivers the turn separately and a real trailing assistant reply is kept.",
    metavar="NAMES",
)
RUNTIME_SETTINGS: Param[Any] = Param(
    "runtime_settings",
    _json(
        "the host's runtimeSettings of this turn (OpenClaw 2026.8+): its own prompt accounting in limits",
        {"type": "object"},
    ),
    "The host's runtimeSettings (JSON object): limits.promptTokenBudget caps the budget.",
    metavar="JSON",
)
MANUAL: Param[bool] = Param(
    "manual",
    _flag("an operator's compaction: always sweep"),
    "An operator's compaction: one sweep, even below the threshold.",
)
UNTIL_UNDER_TARGET: Param[bool] = Param(
    "until_under_target",
    _flag("with manual: chain sweeps while they make progress until under the target (ours)"),
    "With --manual: chain sweeps while they make progress until under the target (ours).",
)
CURRENT_TOKEN_COUNT: Param[int | None] = Param(
    "current_token_count",
    {"type": "integer", "minimum": 0, "description": "tokens the host observed"},
    "Prompt tokens the host observed last turn.",
    metavar="N",
)
MODEL: Param[str | None] = Param(
    "model",
    _text("the host's model ref (provider/model), matched by contextThresholdOverrides"),
    "The host's model ref (provider/model); picks contextThresholdOverrides.",
    metavar="REF",
)
PRE_PROMPT_MESSAGE_COUNT: Param[int | None] = Param(
    "pre_prompt_message_count",
    {
        "type": "integer",
        "minimum": 0,
        "description": "how many of the live messages the host had before this turn's prompt",
    },
    "How many of the messages the session had before this turn (default 0: all are new).",
    metavar="N",
)
ADVANCEMENT_KEY: Param[str | None] = Param(
    "advancement_key",
    _text("the host's idempotency key of one accepted turn (commitTurn)"),
    "The host's idempotency key of this turn.",
    metavar="KEY",
)
ADMISSION: Param[Any] = Param(
    "admission",
    _json(
        "the host's admission anchor of the turn's user entry (a JSON object, or its text)",
        {"type": "object"},
    ),
    "The host's admission anchor (checked, hashed, recorded).",
    metavar="JSON",
)
TERMINAL: Param[Any] = Param(
    "terminal",
    _json(
        "the host's anchor of the turn's accepted terminal entry (a JSON object, or its text)",
        {"type": "object"},
    ),
    "The host's terminal-entry anchor.",
    metavar="JSON",
)
AUTO_COMPACTION_SUMMARY: Param[str | None] = Param(
    "auto_compaction_summary",
    _text("the host's own compaction summary of this turn, stored as a user message"),
    "The host's own compaction summary of this turn.",
    metavar="TEXT",
)

# Every request field by name: what the doors, `lcm commands` and the schemas read.
PARAMS: dict[str, Param[Any]] = {p.name: p for p in globals().values() if isinstance(p, Param)}


# Fields every operation takes, on every door (`--fields` on the CLI, `fields` in a hook or
# serve request); not listed in each OpSpec.
UNIVERSAL_FIELDS: tuple[str, ...] = ("fields",)


def option_name(field: str) -> str:
    """The CLI option that carries a request field (``include_content`` -> ``--include-content``)."""
    param = PARAMS.get(field)
    return param.option if param is not None else "--" + field.replace("_", "-")


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
_DIGITS = r"[0-9]+"


class Selector(Record):
    """How a conversation was named: by id or by session key."""

    kind: str  # "conversationId" | "sessionKey"
    value: int | str

    def to_dict(self) -> dict[str, Any]:
        """The selector as error details."""
        return {"kind": self.kind, "value": self.value}


_NO_TIME = TimeRange()


class Request:
    """Validated parameters; fields an operation does not take keep their defaults.

    The reference's ordered fields are attributes (``req.selector``, ``req.limit`` ...);
    every other field is read by its declaration: ``req[APPLY]`` -> ``bool``.
    """

    __slots__ = (
        "selector",
        "time",
        "limit",
        "cursor",
        "roles",
        "include_content",
        "depth",
        "kind",
        "tail_count",
        "args",
        "_values",
    )

    def __init__(
        self,
        selector: Selector | None = None,
        time: TimeRange = _NO_TIME,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
        roles: tuple[str, ...] = (),
        include_content: bool = False,
        depth: int | None = None,
        kind: str | None = None,
        tail_count: int | None = None,  # `count`, named as the reference's tail size
        args: tuple[str, ...] = (),
        values: Mapping[Param[Any], Any] | None = None,
    ) -> None:
        self.selector = selector
        self.time = time
        self.limit = limit
        self.cursor = cursor
        self.roles = roles
        self.include_content = include_content
        self.depth = depth
        self.kind = kind
        self.tail_count = tail_count
        self.args = args
        self._values: dict[str, Any] = {p.name: v for p, v in (values or {}).items()}

    def __getitem__(self, param: Param[T]) -> T:
        """The validated value of ``param``: None when absent, False for a flag, [] when repeatable."""
        if param.name in _ORDERED_FIELDS:
            raise KeyError(f"{param.name} is validated in order: read it as an attribute of Request")
        value = self._values.get(param.name)
        if value is None:
            value = False if param.flag else [] if param.repeatable else None
        return value  # type: ignore[return-value]  # validated against the param's schema: a T


def _supplied(value: Any) -> bool:
    # Flags count only when true, lists only when non-empty (as the reference counts them).
    if value is None or value is False:
        return False
    if isinstance(value, (list, tuple)) and not value:
        return False
    return True


def unsupported_option(command: str, option: str, options: tuple[str, ...]) -> LcmError:
    """INVALID_ARGUMENT for an option ``command`` does not take; lcm's own commands add the
    closest options it does take (``details.suggestions``), the reference's keep its details."""
    details: dict[str, Any] = {"option": option.lstrip("-"), "command": command}
    message = f"{option} is not supported by `{command}`; see `lcm {command.replace('.', ' ')} --help`."
    if command not in REFERENCE_COMMANDS:
        close = suggest(option, [option_name(f) for f in options])
        if close:
            details["suggestions"] = close
            message += f" Did you mean {' or '.join(close)}?"
    return invalid_argument(message, details)


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
    elif isinstance(value, str) and len(value) <= longest and re.fullmatch(_DIGITS, value):
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
        if name not in options and name not in UNIVERSAL_FIELDS and _supplied(value):
            raise unsupported_option(command, option_name(name), options)

    # Each ordered field is type-checked by its declaration at its place in the order, so a
    # JSON door's wrong type (a number for a key, true for a cursor) is the same clean error.
    conversation_id = raw.get("conversation_id")
    session_key = raw.get("session_key")
    if conversation_id == "":
        conversation_id = None
    if conversation_id is not None and session_key not in (None, ""):
        raise LcmError(
            "INVALID_SELECTOR",
            "Use either --conversation-id or --session-key, not both.",
        )
    session_key = _by_schema("session_key", session_key)
    selector: Selector | None = None
    if conversation_id is not None:
        try:
            number = _integer("--conversation-id", conversation_id, low=1, high=None, any_size=True)
        except LcmError as exc:
            hint = id_kind_hint(conversation_id, "--conversation-id")
            if hint and command not in REFERENCE_COMMANDS:  # the reference's details stay {value}
                exc.message += f" It looks like another kind of id: try `{hint[0]}`."
                exc.details = {**exc.details, "suggestions": hint}
            raise
        selector = Selector("conversationId", number)
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
            f"Invalid --format value {output_format!r}: expected {', '.join(FORMATS[:-1])} or {FORMATS[-1]}.",
            {"value": output_format},
        )

    roles = _by_schema("role", raw.get("role")) or ()
    for role in roles:
        if role not in ROLES:
            raise invalid_argument(
                f"Invalid --role value {role!r}: expected one of system, user, assistant, tool."
            )
    kind = _by_schema("kind", raw.get("kind")) or None  # as the reference: an empty --kind is no filter
    if kind is not None and kind not in KINDS:
        raise invalid_argument(f"Invalid --kind value {kind!r}: expected leaf or condensed.")

    after, before, between, recency = (
        _by_schema(f, raw.get(f)) for f in ("after", "before", "between", "recency")
    )
    time = resolve_time_range(
        after, before, between, recency, now_ms=now_ms, strict=command in REFERENCE_COMMANDS
    )

    limit_raw = raw.get("limit")
    limit = DEFAULT_LIMIT if limit_raw is None else _integer("--limit", limit_raw, low=1, high=MAX_LIMIT)
    depth_raw = raw.get("depth")
    depth = None if depth_raw is None else _integer("--depth", depth_raw, low=0, high=None)
    count_raw = raw.get("count")
    count = None if count_raw is None else _integer("--count", count_raw, low=1, high=MAX_LIMIT)

    values = {name: _by_schema(name, value) for name, value in raw.items() if name not in _ORDERED_FIELDS}
    if values.get("fields"):
        from lcm_cli.engine.core.projection import parse_fields

        parse_fields(values["fields"])  # a malformed --fields fails before the operation runs
    cursor = _by_schema("cursor", raw.get("cursor"))
    include_content = _by_schema("include_content", raw.get("include_content"))
    request = Request(
        selector=selector,
        time=time,
        limit=limit,
        cursor=cursor if cursor else None,
        roles=tuple(roles),
        include_content=bool(include_content),
        depth=depth,
        kind=kind,
        tail_count=count,
        args=args,
    )
    request._values = values
    return request


def _by_schema(field: str, value: Any) -> Any:
    """Check one non-ordered field against its schema; None (absent) passes through."""
    param = PARAMS.get(field)
    schema = param.schema if param is not None else {}
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
