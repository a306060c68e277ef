"""The OpenClaw model's four recall tools, answered by lcm's recall operations.

lossless-claw gives the model ``lcm_grep``, ``lcm_describe``, ``lcm_expand`` and
``lcm_expand_query`` (docs/reference/engine.md §7). :data:`TOOL_SPECS` declares them once, with
its names, parameters, bounds and required lists (the OpenClaw plugin registers its tools
from this list, through `lcm tool specs`); the operation ``recall.tool`` runs one call and
answers the text the model reads, laid out as lossless-claw lays it out.

Each tool is a thin mapping onto the shell's recall operations: ``lcm_grep`` runs `grep`,
``lcm_describe`` runs `describe`, ``lcm_expand_query`` runs `expand.query`, and
``lcm_expand`` walks the summary DAG with :mod:`~lcm_cli.engine.recall.dag` and the
summary lookups of `expand`. The default scope is the calling session's family; a
mistake in the model's arguments (a bad pattern, an unknown id, an id outside the
scope) is an answer with ``isError`` true and a short text saying what to do, never a
failed request. Only a request the plugin itself got wrong (an unknown tool, arguments
that are not an object) is ``INVALID_ARGUMENT``. Nothing here writes.

Where lcm differs from lossless-claw on purpose (docs/recall.md, "Agent tools in
OpenClaw"): ``lcm_expand`` works in every session, bounded by ``tokenCap``, and shows the
text it expanded; ``lcm_describe``'s manifest walks the summaries beneath the one
described; ``lcm_expand_query`` answers with the configured model, without a sub-agent.
"""

from __future__ import annotations

import math
import os

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.params import SESSION_ID, TOOL, TOOL_ARGUMENTS, Request
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.registry import Result, operation

if TYPE_CHECKING:
    from typing import Any

    from lcm_cli.engine.context import Context
    from lcm_cli.engine.read.records import SummaryItem

# lossless-claw's caps: the grep text budget (about 10k tokens), a snippet's length, the
# default and bounds of an inlined file, the answer target and the advertised time limit
# of lcm_expand_query (its default delegationTimeoutMs, 120000, plus 30 s of headroom).
MAX_RESULT_CHARS = 40_000
SNIPPET_CHARS = 200
MAX_FILE_BYTES = 512_000
DEFAULT_FILE_BYTES = 32_768
MIN_FILE_BYTES = 1_024
DEFAULT_MAX_DEPTH = 3
DEFAULT_ANSWER_TOKENS = 2_000
DEFAULT_TIMEOUT_MS = 150_000
MAX_TIMEOUT_MS = 600_000
TIMEOUT_HEADROOM_MS = 30_000
QUERY_CANDIDATES = 50  # summaries a query finds for lcm_expand
TRUNCATED_NOTE = "*(truncated — more results available)*"
NO_CONVERSATION = (
    "No LCM conversation found for this session. Pass conversationId, or set "
    "allConversations=true to look across every conversation."
)
WIDEN_HINT = "Set allConversations=true to look across every conversation."
ID_HINT = "Check the id: summaries are sum_xxx, files file_xxx (as lcm_grep prints them)."


# --------------------------------------------------------------------------------------
# The tools, declared once
# --------------------------------------------------------------------------------------


def _number(description: str, **bounds: int) -> dict[str, Any]:
    return {"type": "number", "description": description, **bounds}


def _string(description: str, *choices: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "description": description}
    if choices:
        schema["enum"] = list(choices)
    return schema


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _boolean(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _scope_params(verb: str) -> dict[str, Any]:
    """``conversationId`` and ``allConversations``, as every tool takes them."""
    return {
        "conversationId": _number(
            f"{verb} only in this conversation (its numeric id). Default: the current session's "
            "family of conversations."
        ),
        "allConversations": _boolean(
            f"true to {verb.lower()} across every conversation. Has no effect when conversationId is given."
        ),
    }


def _parameters(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "lcm_grep",
        "label": "LCM Grep",
        "description": (
            "Search the conversation history LCM has compacted, or the text of large files it "
            "stored, by regular expression or by full-text words. It covers raw messages, "
            "summaries, and the first 512000 bytes of stored files (scope='files'), e.g. after "
            "an lcm_describe whose file content came back cut. In full_text mode every word "
            "must match (FTS5 AND), so give a few distinctive words or one quoted phrase; "
            "quoted phrases stay whole, and sort can rank the most relevant older hits first. "
            "Each hit carries its message, summary or file id, for lcm_expand or lcm_describe."
        ),
        "parameters": _parameters(
            {
                "pattern": _string(
                    'What to look for: a regular expression with mode "regex", an FTS5 word query '
                    'with mode "full_text". Full-text words must all match (AND), so use 1-3 '
                    "distinctive words or one quoted phrase rather than a list of synonyms. "
                    'Alternation such as `A|B` needs mode "regex".'
                ),
                "mode": _string(
                    'How pattern is read: "regex" (a regular expression; the default) or '
                    '"full_text" (words).',
                    "regex",
                    "full_text",
                ),
                "scope": _string(
                    'Where to search: "messages" (raw messages), "summaries" (compacted '
                    'summaries), "both" (the default) or "files" (the first bytes of stored '
                    "large files).",
                    "messages",
                    "summaries",
                    "both",
                    "files",
                ),
                "fileIds": _strings(
                    'With scope="files": search only these file_xxx ids. Without it every large '
                    "file in the conversation scope is searched, up to 512000 bytes each."
                ),
                **_scope_params("Search"),
                "since": _string("Keep matches from this ISO timestamp on (inclusive)."),
                "before": _string("Keep matches older than this ISO timestamp (exclusive)."),
                "limit": _number("How many results at most (default 50).", minimum=1, maximum=200),
                "sort": _string(
                    '"recency" (newest first; the default), "relevance" (best full-text match '
                    'first) or "hybrid" (relevance weighed with recency); the last two apply to '
                    'mode "full_text" only. The order is applied before the limit.',
                    "recency",
                    "relevance",
                    "hybrid",
                ),
            },
            ("pattern",),
        ),
    },
    {
        "name": "lcm_describe",
        "label": "LCM Describe",
        "description": (
            "Show what LCM knows about one item, by id: a summary (sum_xxx) with its content, "
            "lineage and token counts, or a stored file (file_xxx) with its exploration "
            "summary. Use it as well when the conversation shows an `[LCM Tool Output: "
            "file_xxx | tool=… | N bytes]` or `[LCM File: file_xxx | …]` reference: an older "
            "tool result or large file was replaced by it to save context. The whole "
            "reference may be passed as id; the file id is read from it. Call it with "
            "expandFile=true to read the file's content before answering anything that "
            "depends on its details; if that content comes back cut, search the rest with "
            "lcm_grep(scope='files', fileIds=[file_xxx])."
        ),
        "parameters": _parameters(
            {
                "id": _string(
                    "The id to look up: sum_xxx for a summary, file_xxx for a file (a copied "
                    "[LCM …] reference works too)."
                ),
                **_scope_params("Look up"),
                "tokenCap": _number(
                    "Token budget each node of the summary's subtree manifest is measured "
                    "against (in or over). Default: the maxExpandTokens setting.",
                    minimum=1,
                ),
                "expandFile": _boolean(
                    "For a file_xxx: true to include the file's content, read from disk, beside "
                    "its exploration summary. This recovers the original output of a tool result "
                    "that was replaced by an [LCM Tool Output: file_xxx | tool=… | N bytes] "
                    "reference. At most expandFileMaxBytes are included (default 32768, about 8K "
                    "tokens), and the answer says when the content was cut; "
                    "lcm_grep(scope='files', fileIds=[file_xxx]) searches past that."
                ),
                "expandFileMaxBytes": _number(
                    "With expandFile=true: most bytes of content to include (default 32768, at most 512000).",
                    minimum=MIN_FILE_BYTES,
                    maximum=MAX_FILE_BYTES,
                ),
                "startLine": _number(
                    "With expandFile=true: the first line (1-based) of a partial read, which runs "
                    "to endLine (inclusive). Lines are counted within the first "
                    "expandFileMaxBytes bytes of the file (512KB at most); to find text further "
                    "in, use lcm_grep(scope='files', fileIds=[id]) first.",
                    minimum=1,
                ),
                "endLine": _number(
                    "With expandFile=true: the last line (1-based, inclusive) of a partial read; "
                    "not before startLine. Without it the read runs to the last line within the "
                    "byte budget.",
                    minimum=1,
                ),
            },
            ("id",),
        ),
    },
    {
        "name": "lcm_expand",
        "label": "LCM Expand",
        "description": (
            "Open compacted summaries of LCM (Lossless Context Management): walk the summary "
            "DAG down to the summaries, and optionally the raw messages, each one was made "
            "from, to recover detail the summary left out. Give summaryIds to expand them, or "
            "query to search summaries first and expand the matches. Returns the expanded text "
            "within tokenCap, with the ids it cites for further calls."
        ),
        "parameters": _parameters(
            {
                "summaryIds": _strings("The sum_xxx ids to expand; give these or query."),
                "query": _string(
                    "A full-text query: the summaries matching it are expanded, and summaryIds "
                    "is then ignored."
                ),
                "maxDepth": _number("How many levels below each summary to walk (default 3).", minimum=1),
                "tokenCap": _number(
                    "Token budget of the whole expansion (default: the maxExpandTokens setting).",
                    minimum=1,
                ),
                "includeMessages": _boolean(
                    "true to include the raw source messages of leaf summaries (default false)."
                ),
                **_scope_params("Expand"),
            }
        ),
    },
    {
        "name": "lcm_expand_query",
        "label": "LCM Expand Query",
        "description": (
            "Answer one focused question from expanded LCM history. The summaries to expand "
            "come from summaryIds or from a short FTS5 query (the full-text rules of lcm_grep); "
            "the question is answered from them, compactly, with the summary ids the answer "
            "cites for follow-up. When no expansion model is configured, the expanded evidence "
            "is returned for you to read instead of an answer."
        ),
        "parameters": _parameters(
            {
                "summaryIds": _strings("The sum_xxx ids to expand; give these or query."),
                "query": _string(
                    "FTS5 query finding the summaries to expand, by lcm_grep's full-text search. "
                    "Use 1-3 distinctive words or one quoted phrase: every word must match, so "
                    "more words match less. Needed when summaryIds is not given."
                ),
                "prompt": _string(
                    "The question or task to answer from the expanded history. The question goes "
                    "here, not in query."
                ),
                **_scope_params("Look up"),
                "maxTokens": _number("The answer's length to aim for, in tokens (default 2000).", minimum=1),
                "tokenCap": _number(
                    "Token budget of the history expanded to answer this question (default: the "
                    "maxExpandTokens setting).",
                    minimum=1,
                ),
                "timeoutMs": {
                    **_number(
                        "Time limit of this whole tool call in milliseconds (the host's timeout for "
                        "it). Keep the default unless the user asks for a quicker, shallower attempt.",
                        minimum=1,
                    ),
                    "default": DEFAULT_TIMEOUT_MS,
                },
            },
            ("prompt", "timeoutMs"),
        ),
    },
]

_SPECS: dict[str, dict[str, Any]] = {spec["name"]: spec for spec in TOOL_SPECS}


@operation("recall.tool_specs")
def tool_specs(ctx: Context, req: Request) -> Result:
    """The four tools as data: name, label, description, parameter JSON Schema."""
    return Result({"tools": TOOL_SPECS})


# --------------------------------------------------------------------------------------
# One tool call
# --------------------------------------------------------------------------------------


class ToolError(Exception):
    """A mistake the model can fix: answered as ``isError`` with ``{error, hint?}``, as
    lossless-claw answers its model."""

    def __init__(self, error: str, hint: str | None = None, **extra: Any) -> None:
        super().__init__(error)
        self.payload: dict[str, Any] = {"error": error}
        if hint:
            self.payload["hint"] = hint
        self.payload.update(extra)


class ToolScope(Record):
    """Where a call looks: ``kind`` (conversation | sessionFamily | all), the conversation it
    is rooted at, the conversations in scope (None: all), and the selector fields the recall
    operations take for it."""

    kind: str
    root: int | None
    ids: list[int] | None
    fields: dict[str, Any]


@operation("recall.tool")
def run_tool(ctx: Context, req: Request) -> Result:
    """Run one tool call; the answer is ``{tool, text, details, isError}``."""
    name = (req[TOOL] or "").strip()
    spec = _SPECS.get(name)
    if spec is None:
        from lcm_cli.engine.core.suggest import suggest

        close = suggest(name, list(_SPECS))
        raise invalid_argument(
            f"Unknown tool {name!r}: expected one of {', '.join(_SPECS)}."
            + (f" Did you mean {close[0]}?" if close else ""),
            {"value": name, **({"suggestions": close} if close else {})},
        )
    arguments = _arguments(req[TOOL_ARGUMENTS])
    session_key = str(req.selector.value) if req.selector is not None else None
    session_id = (req[SESSION_ID] or "").strip() or None
    # The caller is the session the host named, never the model's arguments: under an agent
    # scope its conversationId or allConversations reach only what that session may see
    # (docs/agents.md), and a call naming no session sees nothing.
    ctx.rescope(scoped_reads=True, caller_session_key=session_key or "")
    try:
        values = check_arguments(spec, arguments)
        text, details = _RUNNERS[name](ctx, values, session_key, session_id)
        is_error = False
    except ToolError as exc:
        text, details, is_error = _error_text(exc.payload), exc.payload, True
    except LcmError as exc:
        mapped = _model_error(exc)
        if mapped is None:
            raise
        text, details, is_error = _error_text(mapped.payload), mapped.payload, True
    return Result({"tool": name, "text": text, "details": details, "isError": is_error})


def _arguments(value: Any) -> dict[str, Any]:
    """The tool call's arguments: an object, or its JSON text (absent: no arguments)."""
    if value is None:
        return {}
    if isinstance(value, str):
        from lcm_cli.engine.core.limits import loads_bounded

        try:
            value = loads_bounded(value)
        except ValueError as exc:
            raise invalid_argument(f"--arguments is not JSON ({exc}).", {"reason": "invalid-json"}) from None
    if not isinstance(value, dict):
        raise invalid_argument(
            "--arguments must be a JSON object of the tool's parameters.",
            {"type": type(value).__name__},
        )
    return value


def _error_text(payload: dict[str, Any]) -> str:
    """What the model reads for an error: the payload as indented JSON, as lossless-claw does."""
    from lcm_cli.engine.core.jscompat import stringify_indented

    return stringify_indented(payload, 2)


# --------------------------------------------------------------------------------------
# The model's arguments, checked against the tool's own schema
# --------------------------------------------------------------------------------------

_TYPE_WORDS = {
    "string": "a string",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list of strings",
}


def check_arguments(spec: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments checked against ``spec``'s parameter schema (types, enums, bounds,
    required), defaults filled in and numbers truncated to whole ones, as the host and
    lossless-claw treat them; a null counts as absent and unknown names are ignored."""
    schema = spec["parameters"]
    properties: dict[str, Any] = schema["properties"]
    values: dict[str, Any] = {}
    for key, prop in properties.items():
        value = arguments.get(key)
        if value is None:
            if "default" in prop:
                values[key] = prop["default"]
            continue
        values[key] = _checked(spec["name"], key, prop, value)
    missing = [key for key in schema.get("required", ()) if key not in values]
    if missing:
        raise ToolError(f"{spec['name']} needs {' and '.join(missing)}.", _parameter_hint(spec))
    return values


def _checked(tool: str, key: str, prop: dict[str, Any], value: Any) -> Any:
    kind = prop["type"]
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif kind == "string":
        ok = isinstance(value, str)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    else:
        ok = isinstance(value, list) and all(isinstance(item, str) for item in value)
    if not ok:
        raise ToolError(
            f"{key} must be {_TYPE_WORDS[kind]}, not {_shown(value)}.", f"See {tool}'s parameters."
        )
    if "enum" in prop and value not in prop["enum"]:
        raise ToolError(
            f"{key} must be one of {', '.join(map(repr, prop['enum']))}, not {_shown(value)}.",
            f"See {tool}'s parameters.",
        )
    if kind == "number":
        if "minimum" in prop and value < prop["minimum"]:
            raise ToolError(f"{key} must be at least {prop['minimum']}, not {_shown(value)}.")
        if "maximum" in prop and value > prop["maximum"]:
            raise ToolError(f"{key} must be at most {prop['maximum']}, not {_shown(value)}.")
        return math.trunc(value)
    return value


def _shown(value: Any) -> str:
    from lcm_cli.engine.core.jscompat import stringify

    text = stringify(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _parameter_hint(spec: dict[str, Any]) -> str:
    required = set(spec["parameters"].get("required", ()))
    names = [f"{key} (required)" if key in required else key for key in spec["parameters"]["properties"]]
    return f"{spec['name']} takes: {', '.join(names)}."


# --------------------------------------------------------------------------------------
# Scope: conversationId > allConversations > the calling session's family
# --------------------------------------------------------------------------------------


def resolve_tool_scope(
    ctx: Context, values: dict[str, Any], session_key: str | None, session_id: str | None
) -> ToolScope:
    """The scope of a call (docs/reference/engine.md §7.1, without delegation grants)."""
    conversation_id = values.get("conversationId")
    if conversation_id is not None:
        if conversation_id < 1:
            raise ToolError(f"conversationId must be a conversation's id (1 or more), not {conversation_id}.")
        return ToolScope(
            "conversation", conversation_id, [conversation_id], {"conversation_id": conversation_id}
        )
    if values.get("allConversations") is True:
        return ToolScope("all", None, None, {"all_conversations": True})
    row = _session_conversation(ctx, session_key, session_id)
    if row is None:
        raise ToolError(NO_CONVERSATION)
    cid = row["conversation_id"]
    key = row["session_key"]
    from lcm_cli.engine.db.sessions import is_isolated_cron  # it loads typing: `lcm tool specs` must not

    if is_isolated_cron(session_key) or is_isolated_cron(key) or not key:
        # One conversation per cron run; a keyless conversation is its own family here.
        return ToolScope("conversation", cid, [cid], {"conversation_id": cid})
    from lcm_cli.engine.recall.scope import session_family

    return ToolScope("sessionFamily", cid, session_family(ctx, row), {"session_key": key})


def _session_conversation(ctx: Context, session_key: str | None, session_id: str | None) -> Any:
    """The calling session's conversation: its runtime id's active row (which wins over a
    stale key), else the key's active row, else the key's newest archived row; or None."""
    from lcm_cli.engine.core.params import Selector
    from lcm_cli.engine.read.conversation_rows import find_conversation, require_lcm_tables

    if not (session_key or session_id) or not os.path.exists(ctx.database_path):
        return None
    require_lcm_tables(ctx)
    probe = ctx.probe
    found = None
    if probe.has_column("conversations", "active") and probe.has_column("conversations", "session_key"):
        from lcm_cli.engine.db.sessions import find_active

        found = find_active(ctx.db, session_id, None) if session_id else None
        if found is None and session_key:
            found = find_active(ctx.db, None, session_key)
    if found is not None:
        return find_conversation(ctx, Selector("conversationId", int(found[0])))
    if session_key:
        try:
            return find_conversation(ctx, Selector("sessionKey", session_key))
        except LcmError as exc:
            if exc.code != "CONVERSATION_NOT_FOUND":
                raise
    return None


def _recall_request(name: str, fields: dict[str, Any], *args: str) -> Request:
    """A validated request for recall operation ``name``, as any door would build it."""
    from lcm_cli.engine.core.params import validate_request
    from lcm_cli.engine.core.registry import OPERATIONS

    raw = {key: value for key, value in fields.items() if value is not None}
    return validate_request(name, OPERATIONS[name].options, raw, args=args)


# --------------------------------------------------------------------------------------
# Errors of the recall operations, as the model reads them
# --------------------------------------------------------------------------------------


def _model_error(exc: LcmError) -> ToolError | None:
    """The model-facing answer to a recall failure the model's arguments caused; None for a
    failure of lcm itself (a busy or broken database), which stays an error of the call."""
    details = exc.details if exc.has_details and isinstance(exc.details, dict) else {}
    code = exc.code
    if code == "INVALID_PATTERN":
        return _pattern_error(details, exc.message)
    if code in ("SUMMARY_NOT_FOUND", "FILE_NOT_FOUND"):
        item = details.get("summaryId") or details.get("fileId") or ", ".join(details.get("fileIds") or [])
        return ToolError(f"Not found: {item}", ID_HINT)
    if code == "NOT_IN_SCOPE":
        scope = details.get("scope") or {}
        if scope.get("kind") == "conversation":
            return ToolError(
                f"Not found in conversation {(scope.get('conversationIds') or ['?'])[0]}: {details.get('id')}",
                "Leave conversationId out and set allConversations=true to look across every conversation.",
            )
        return ToolError(f"Not found in this session scope: {details.get('id')}", WIDEN_HINT)
    if code == "CONVERSATION_NOT_FOUND":
        return ToolError(
            f"No conversation has id {details.get('value')}.",
            "Leave conversationId out to use this session's conversations, or set allConversations=true.",
        )
    if code == "DATABASE_NOT_FOUND":
        return ToolError("LCM has stored no conversation yet: there is nothing to search.")
    if code in ("INVALID_ARGUMENT", "INVALID_TIME_FILTER", "INVALID_SELECTOR", "MISSING_SELECTOR"):
        return ToolError(exc.message)
    return None


def _pattern_error(details: dict[str, Any], message: str) -> ToolError:
    pattern = details.get("pattern", "")
    reason = details.get("reason", "")
    if reason == "empty":
        return ToolError("pattern holds nothing to search for: give a word, a quoted phrase or a regex.")
    if details.get("mode") == "full_text" and details.get("acceptedBy") == "regex":
        return ToolError(
            f'mode "full_text" searches words, and `{pattern}` uses regex syntax ({reason}).',
            'Use mode "regex" for it, or search 1-3 plain words or one quoted phrase.',
        )
    if reason == "too long":
        return ToolError(
            "The regex is too long (500 characters at most).",
            'Shorten it, or search words with mode "full_text".',
        )
    if details.get("mode") == "regex":
        return ToolError(
            f"`{pattern}` is not a valid regular expression ({reason}).",
            'Escape its special characters, or search it as words with mode "full_text".',
        )
    return ToolError(message)


# --------------------------------------------------------------------------------------
# Display helpers
# --------------------------------------------------------------------------------------


class _Clock:
    """Times as lossless-claw shows them: ``YYYY-MM-DD HH:mm <zone>`` in the configured zone."""

    def __init__(self, ctx: Context) -> None:
        from lcm_cli.engine.compaction.leaf_source import zone_of

        self.zone = zone_of(ctx.engine_settings.timezone)

    def __call__(self, stamp: str | None) -> str:
        from lcm_cli.engine.compaction.leaf_source import header_time

        shown = header_time(stamp, self.zone) if stamp else "unknown"
        return "-" if shown == "unknown" else shown


def _snippet(text: str | None) -> str:
    """One line of at most 200 characters (197 and an ellipsis when cut), as grep's snippets."""
    from lcm_cli.engine.recall.grep_sql import flatten

    return flatten(text or "", SNIPPET_CHARS)


def _js_length(text: str) -> int:
    """JavaScript's ``length``: UTF-16 code units (lossless-claw's character budget counts these)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _scope_line(scope: ToolScope) -> str:
    if scope.kind == "all":
        return "**Conversation scope:** all conversations"
    count = len(scope.ids or ())
    if count > 1:
        return f"**Conversation scope:** session family rooted at {scope.root} ({count} segments)"
    return f"**Conversation scope:** {scope.root}"


# --------------------------------------------------------------------------------------
# lcm_grep
# --------------------------------------------------------------------------------------


def _time_bounds(values: dict[str, Any]) -> dict[str, str]:
    """``since``/``before`` checked (an ISO timestamp; since earlier than before)."""
    from lcm_cli.engine.core.timefilter import parse_when

    bounds: dict[str, str] = {}
    instants: dict[str, int] = {}
    for key in ("since", "before"):
        text = (values.get(key) or "").strip()
        if not text:
            continue
        try:
            instants[key] = parse_when(text, key)
        except LcmError:
            raise ToolError(
                f"{key} is not a valid ISO timestamp: {text!r}.", "E.g. 2026-07-01T09:30:00Z."
            ) from None
        bounds[key] = text
    if len(instants) == 2 and instants["since"] >= instants["before"]:
        raise ToolError("since must be earlier than before: this time window is empty.")
    return bounds


def _grep(
    ctx: Context, values: dict[str, Any], session_key: str | None, session_id: str | None
) -> tuple[str, dict[str, Any]]:
    from lcm_cli.engine.recall.grep import FILE_SCAN_BYTES, REGEX_SCAN_ROWS, run_search

    pattern = values["pattern"].strip()
    mode = values.get("mode") or "regex"
    where = values.get("scope") or "both"
    bounds = _time_bounds(values)
    scope = resolve_tool_scope(ctx, values, session_key, session_id)
    fields = {
        **scope.fields,
        "mode": mode,
        "scope": where,
        "sort": values.get("sort") or "recency",
        "limit": values.get("limit", 50),
        "after": bounds.get("since"),
        "before": bounds.get("before"),
        "file_id": (values.get("fileIds") or None) if where == "files" else None,  # as lossless-claw reads it
    }
    req = _recall_request("grep", fields, pattern)
    result = run_search(ctx, req, per_source=True)  # lossless-claw: limit per source
    meta = result.meta or {}
    hits = result.data["hits"]
    clock = _Clock(ctx)

    lines = [
        "## LCM Grep Results",
        f"**Pattern:** `{pattern}`",
        f"**Mode:** {mode} | **Scope:** {where} | **Sort:** {meta.get('sort', 'recency')}",
        _scope_line(scope),
    ]
    if bounds:
        since = f"since {clock(req.time.after)}" if req.time.after else "since -∞"
        before = f"before {clock(req.time.before)}" if req.time.before else "before +∞"
        lines.append(f"**Time filter:** {since} | {before}")
    if where == "files":
        lines.append(
            f"**File scan:** first {FILE_SCAN_BYTES:,} bytes per file; matches beyond that prefix are not searched."
        )
    lines.append(f"**Total matches:** {len(hits)}")
    cut = _cut_short(meta.get("truncatedBy") or {}, req.limit, meta.get("deadlineMs"), REGEX_SCAN_ROWS)
    if cut:
        lines.append(cut)
    lines.append("")
    used = _js_length("\n".join(lines))

    # lossless-claw's regex snippet is the matched text (`lcm grep` adds the context around it).
    def message(hit: dict[str, Any]) -> str:
        when = clock(hit["timestamp"])
        text = _snippet(hit.get("match", hit["snippet"]))
        return f"- [conv={hit['conversationId']} msg#{hit['id']}] ({hit['role']}, {when}): {text}"

    def summary(hit: dict[str, Any]) -> str:
        when = clock(hit["timestamp"])
        text = _snippet(hit.get("match", hit["snippet"]))
        return f"- [conv={hit['conversationId']} {hit['id']}] ({hit['kind']}, {when}): {text}"

    def file(hit: dict[str, Any]) -> str:
        name = f" ({hit['fileName']})" if hit.get("fileName") else ""
        scan = " (file scan truncated)" if hit.get("scanTruncated") else ""
        return (
            f"- [conv={hit['conversationId']} {hit['id']}{name}] line {hit['line']}, offset "
            f"{hit['byteOffset']}: `{hit['match']}` {_snippet(hit['snippet'])}{scan}"
        )

    counts: dict[str, int] = {}
    for title, kind, render in (
        ("Messages", "message", message),
        ("Summaries", "summary", summary),
        ("Files", "file", file),
    ):
        section = [h for h in hits if h["type"] == kind]
        counts[kind] = len(section)
        if not section:
            continue
        lines += [f"### {title}", ""]
        for hit in section:
            line = render(hit)
            if used + _js_length(line) > MAX_RESULT_CHARS:
                lines.append(TRUNCATED_NOTE)
                break
            lines.append(line)
            used += _js_length(line)
        lines.append("")
    if not hits:
        lines.append("No matches found.")
    details: dict[str, Any] = {
        "messageCount": counts["message"],
        "summaryCount": counts["summary"],
        "fileCount": counts["file"],
    }
    if where == "files":
        details["fileScanByteLimit"] = FILE_SCAN_BYTES
    details["totalMatches"] = len(hits)
    details["complete"] = bool(meta.get("complete", True))
    return "\n".join(lines), details


def _cut_short(truncated_by: dict[str, str], limit: int, deadline_ms: Any, scan_rows: int) -> str:
    """A line saying which sources have more to find, and why (not in lossless-claw's text)."""
    if not truncated_by:
        return ""
    reasons = {
        "limit": f"more matches than the limit ({limit})",
        "deadline": f"stopped at the {deadline_ms} ms time limit",
        "scanLimit": f"stopped at the regex scan cap (the newest {scan_rows:,} rows)",
    }
    parts = [f"{source}: {reasons.get(why, why)}" for source, why in truncated_by.items()]
    return f"**Not complete:** {'; '.join(parts)}. Narrow the pattern or the time range, or raise limit."


# --------------------------------------------------------------------------------------
# lcm_describe
# --------------------------------------------------------------------------------------


def _describe(
    ctx: Context, values: dict[str, Any], session_key: str | None, session_id: str | None
) -> tuple[str, dict[str, Any]]:
    from lcm_cli.engine.recall.describe import describe, parse_item_id

    try:
        item_id = parse_item_id(values["id"])
    except LcmError:
        raise ToolError(
            f"Not one LCM id: {values['id']!r}",
            "Pass a bare id such as sum_xxx or file_xxx, or one copied [LCM Tool Output: file_xxx | …] reference.",
        ) from None
    start, end = values.get("startLine"), values.get("endLine")
    if start is not None and end is not None and end < start:
        raise ToolError("endLine comes before startLine: give an endLine at or after startLine.")
    scope = resolve_tool_scope(ctx, values, session_key, session_id)
    max_bytes = min(
        max(values.get("expandFileMaxBytes") or DEFAULT_FILE_BYTES, MIN_FILE_BYTES), MAX_FILE_BYTES
    )
    result = describe(ctx, _recall_request("describe", {**scope.fields, "max_bytes": max_bytes}, item_id))
    data = result.data
    clock = _Clock(ctx)
    if data["type"] == "summary":
        return _summary_text(ctx, data, values.get("tokenCap"), clock)
    return _file_text(data, values, clock)


def _summary_text(
    ctx: Context, data: dict[str, Any], token_cap: int | None, clock: _Clock
) -> tuple[str, dict[str, Any]]:
    from lcm_cli.engine.recall.expand import default_cap

    s = data["summary"]
    sid = s["summaryId"]
    cap = token_cap if token_cap is not None else default_cap(ctx)
    nodes = _manifest(ctx, sid, s["conversationId"], cap)
    lines = [
        f"LCM_SUMMARY {sid}",
        f"meta conv={s['conversationId']} kind={s['kind']} depth={s['depth']} tok={s['tokenCount']} "
        f"descTok={s['descendantTokenCount']} srcTok={s['sourceMessageTokenCount']} "
        f"desc={s['descendantCount']} range={clock(s['earliestAt'])}..{clock(s['latestAt'])} "
        f"budgetCap={cap}",
    ]
    # As `lcm describe` labels them: parents consumed this summary, children are its sources.
    if data["parents"]:
        lines.append("parents " + " ".join(p["summaryId"] for p in data["parents"]))
    if data["children"]:
        lines.append("children " + " ".join(c["summaryId"] for c in data["children"]))
    lines.append("manifest")
    used = 0
    for index, node in enumerate(nodes):
        line = (
            f"d{node['depthFromRoot']} {node['summaryId']} k={node['kind']} tok={node['tokenCount']} "
            f"descTok={node['descendantTokenCount']} srcTok={node['sourceMessageTokenCount']} "
            f"desc={node['descendantCount']} child={node['childCount']} "
            f"range={clock(node['earliestAt'])}..{clock(node['latestAt'])} "
            f"cost[s={node['costs']['summariesOnly']},m={node['costs']['withMessages']}] "
            f"budget[s={_fit(node, 'summariesOnly')},m={_fit(node, 'withMessages')}]"
        )
        used += len(line)
        if used > MAX_RESULT_CHARS:
            lines.append(
                f"*(manifest truncated — {len(nodes) - index} more nodes; describe one of them for its own)*"
            )
            break
        lines.append(line)
    lines += ["content", s.get("content") or ""]
    summary = {k: v for k, v in s.items() if k not in ("content", "preview")}
    details = {
        "id": sid,
        "type": "summary",
        "summary": summary,
        "manifest": {
            "tokenCap": cap,
            "budgetSource": "request" if token_cap is not None else "config_default",
            "nodes": [
                {
                    k: node[k]
                    for k in ("summaryId", "depthFromRoot", "kind", "tokenCount", "costs", "budgetFit")
                }
                for node in nodes
            ],
        },
    }
    return "\n".join(lines), details


def _fit(node: dict[str, Any], which: str) -> str:
    return "in" if node["budgetFit"][which] else "over"


def _manifest(ctx: Context, summary_id: str, conversation_id: int, cap: int) -> list[dict[str, Any]]:
    """The summary and every summary beneath it, by depth then path, with what expanding each
    costs (its own tokens and its descendants', and with the source messages too)."""
    from lcm_cli.engine.read.summaries import _summary_columns, summary_items
    from lcm_cli.engine.recall.dag import subtree

    walk: dict[str, Any] = {}
    for row in subtree(ctx, summary_id, conversation_id):
        walk.setdefault(row["summary_id"], row)  # a summary reached twice is listed once
    ordered = sorted(walk.values(), key=lambda r: (r["level"], r["path"]))
    ids = [r["summary_id"] for r in ordered]
    items: dict[str, SummaryItem] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" for _ in chunk)
        rows = ctx.query(
            f"SELECT {_summary_columns(ctx, include_content=False)} FROM summaries s WHERE s.summary_id IN ({marks})",
            chunk,
        )
        items.update({item["summaryId"]: item for item in summary_items(ctx, rows, include_content=False)})
    nodes = []
    for row in ordered:
        item = items.get(row["summary_id"])
        if item is None:
            continue
        own = max(0, (item["tokenCount"] or 0) + (item["descendantTokenCount"] or 0))
        with_messages = max(0, own + (item["sourceMessageTokenCount"] or 0))
        nodes.append(
            {
                **{
                    k: item[k] for k in ("summaryId", "kind", "depth", "tokenCount", "earliestAt", "latestAt")
                },
                "depthFromRoot": row["level"],
                "descendantCount": item["descendantCount"],
                "descendantTokenCount": item["descendantTokenCount"],
                "sourceMessageTokenCount": item["sourceMessageTokenCount"],
                "childCount": item["childCount"],
                "costs": {"summariesOnly": own, "withMessages": with_messages},
                "budgetFit": {"summariesOnly": own <= cap, "withMessages": with_messages <= cap},
            }
        )
    return nodes


def _file_text(data: dict[str, Any], values: dict[str, Any], clock: _Clock) -> tuple[str, dict[str, Any]]:
    f = data["file"]
    fid = f["fileId"]
    lines = [
        f"## LCM File: {fid}",
        "",
        f"**Conversation:** {f['conversationId']}",
        f"**Name:** {f['fileName'] or '(no name)'}",
        f"**Type:** {f['mimeType'] or 'unknown'}",
    ]
    if f["byteSize"] is not None:
        lines.append(f"**Size:** {f['byteSize']:,} bytes")
    if f["lineCount"] is not None:
        lines.append(f"**Lines:** {f['lineCount']:,}")
    lines.append(f"**Created:** {clock(f['createdAt'])}")
    if f["explorationSummary"]:
        lines += ["", "## Exploration Summary", "", f["explorationSummary"]]
    else:
        lines += ["", "*No exploration summary available.*"]
    details: dict[str, Any] = {
        "id": fid,
        "type": "file",
        "file": {
            **{k: v for k, v in f.items() if k not in ("explorationSummary", "storageUri")},
            "hasExplorationSummary": bool(f["explorationSummary"]),
        },
    }
    if values.get("expandFile") is True:
        content, cut = data["content"], bool(data["contentCut"])
        if isinstance(content, str):
            content, cut = _line_range(content, cut, values.get("startLine"), values.get("endLine"))
            from lcm_cli.engine.recall.export import _fence
            from lcm_cli.engine.recall.grep import FILE_SCAN_BYTES

            fence = _fence(content)
            lines += ["", "## Content", "", fence, content, fence]
            if cut:
                shown = len(content.encode("utf-8"))
                size = f"{f['byteSize']:,}" if f["byteSize"] is not None else "?"
                lines += [
                    "",
                    f"*Content cut at {shown:,} of {size} bytes. lcm_grep(scope='files', "
                    f"fileIds=['{fid}']) searches the first {FILE_SCAN_BYTES:,} bytes of the file.*",
                ]
            details["contentTruncated"] = cut
        else:
            note = data.get("note") or "Content unavailable."
            if not note.startswith("Content unavailable"):
                note = f"Content unavailable: {note}"
            lines += ["", f"*{note}*"]
    return "\n".join(lines), details


def _line_range(content: str, cut: bool, start: int | None, end: int | None) -> tuple[str, bool]:
    """Lines ``start..end`` (1-based, inclusive) of the content read; cut when the read was
    cut or ``end`` lies past the last line."""
    if start is None:
        return content, cut
    import re

    lines = re.split(r"\r?\n", content)
    stop = len(lines) if end is None else min(len(lines), end)
    return "\n".join(lines[start - 1 : stop]), cut or (end is not None and end > len(lines))


# --------------------------------------------------------------------------------------
# lcm_expand
# --------------------------------------------------------------------------------------


def _expand(
    ctx: Context, values: dict[str, Any], session_key: str | None, session_id: str | None
) -> tuple[str, dict[str, Any]]:
    from lcm_cli.engine.recall.expand import default_cap
    from lcm_cli.engine.recall.scope import resolve_scope

    query = (values.get("query") or "").strip()
    explicit = list(dict.fromkeys(s.strip() for s in values.get("summaryIds") or [] if s.strip()))
    if not query and not explicit:
        raise ToolError("Nothing to expand: give summaryIds or a query.")
    tscope = resolve_tool_scope(ctx, values, session_key, session_id)
    scope = resolve_scope(ctx, _recall_request("expand", tscope.fields, ""), required=True)
    cap = values.get("tokenCap") or default_cap(ctx)
    depth = values.get("maxDepth") or DEFAULT_MAX_DEPTH
    with_messages = values.get("includeMessages") is True
    if query:
        from lcm_cli.engine.recall.grep import grep

        fields = {**tscope.fields, "mode": "full_text", "scope": "summaries", "limit": QUERY_CANDIDATES}
        found = grep(ctx, _recall_request("grep", fields, query))
        roots = [h["id"] for h in found.data["hits"]]
    else:
        roots = _explicit_summaries(ctx, explicit, scope)
    walk = _Walk(ctx, cap, depth, with_messages)
    for summary_id in roots:
        if walk.truncated:
            break
        walk.expand(summary_id)
    text = walk.text()
    details = {
        "expansionCount": len(walk.entries),
        "citedIds": walk.cited(),
        "totalTokens": walk.used,
        "truncated": walk.truncated,
        "tokenCap": cap,
        "maxDepth": depth,
        "includeMessages": with_messages,
        "executionPath": "direct",
    }
    return text, details


def _explicit_summaries(ctx: Context, ids: list[str], scope: Any) -> list[str]:
    """The ids, each checked to exist and to lie in scope (all missing or outside ones named)."""
    from lcm_cli.engine.recall.expand import find_summary

    missing: list[str] = []
    outside: list[str] = []
    for summary_id in ids:
        try:
            find_summary(ctx, summary_id, scope)
        except LcmError as exc:
            if exc.code == "SUMMARY_NOT_FOUND":
                missing.append(summary_id)
            elif exc.code == "NOT_IN_SCOPE":
                outside.append(summary_id)
            else:
                raise
    if missing:
        raise ToolError(f"Not found: {', '.join(missing)}", ID_HINT)
    if outside:
        raise ToolError(f"Outside this session scope: {', '.join(outside)}", WIDEN_HINT)
    return ids


class _Walk:
    """lossless-claw's expansion walk: below each summary, depth first in source order, its
    source summaries down to ``depth`` levels (each costs its token count) and, with
    ``with_messages``, the source messages of the leaves reached above that depth. The first
    item over the token cap stops the whole walk (``truncated``)."""

    def __init__(self, ctx: Context, cap: int, depth: int, with_messages: bool) -> None:
        self.ctx = ctx
        self.cap = cap
        self.depth = depth
        self.with_messages = with_messages
        self.used = 0
        self.truncated = False
        self.entries: list[dict[str, Any]] = []
        self.clock = _Clock(ctx)

    def _take(self, cost: int) -> bool:
        if self.used + cost > self.cap:
            self.truncated = True
            return False
        self.used += cost
        return True

    def expand(self, summary_id: str) -> None:
        from lcm_cli.engine.recall.dag import subtree

        if self.cap - self.used <= 0:
            self.truncated = True
            return
        root = self._summaries([summary_id]).get(summary_id)
        if root is None:
            return
        entry: dict[str, Any] = {"summary": root, "children": [], "messages": [], "order": [], "tokens": 0}
        self.entries.append(entry)
        cid = root["conversation_id"]
        walk = [r for r in subtree(self.ctx, summary_id, cid) if 0 < r["level"] <= self.depth]
        rows = self._summaries([r["summary_id"] for r in walk])
        if root["kind"] == "leaf" and not self._messages(entry, summary_id, cid):
            return
        for node in walk:
            row = rows.get(node["summary_id"])
            if row is None:
                continue
            if not self._take(row["token_count"] or 0):
                return
            entry["children"].append(row)
            entry["order"].append(row)
            entry["tokens"] += row["token_count"] or 0
            if row["kind"] == "leaf" and node["level"] < self.depth:
                if not self._messages(entry, row["summary_id"], cid):
                    return

    def _summaries(self, ids: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" for _ in chunk)
            for row in self.ctx.query(
                f"""SELECT summary_id, conversation_id, kind, depth, token_count, content, earliest_at,
                           latest_at FROM summaries WHERE summary_id IN ({marks})""",
                chunk,
            ):
                found[row["summary_id"]] = row
        return found

    def _messages(self, entry: dict[str, Any], leaf_id: str, cid: int) -> bool:
        """Add the leaf's source messages while they fit; False once the cap stopped the walk."""
        if not self.with_messages:
            return True
        from lcm_cli.engine.core.tokens import estimate_tokens
        from lcm_cli.engine.recall.dag import message_contents, source_messages

        sources = source_messages(self.ctx, leaf_id, cid)
        contents = message_contents(self.ctx, [m["messageId"] for m in sources])
        for message in sources:
            text = contents.get(message["messageId"], "")
            cost = message["tokenCount"] or estimate_tokens(text)
            if not self._take(cost):
                return False
            item = {**message, "content": text, "cost": cost}
            entry["messages"].append(item)
            entry["order"].append(item)
            entry["tokens"] += cost
        return True

    def cited(self) -> list[str]:
        ids = [e["summary"]["summary_id"] for e in self.entries]
        ids += [c["summary_id"] for e in self.entries for c in e["children"]]
        return list(dict.fromkeys(ids))

    def text(self) -> str:
        lines = [f"## Expansion Results ({len(self.entries)} summaries, {self.used} total tokens)", ""]
        for entry in self.entries:
            root, children, messages = entry["summary"], entry["children"], entry["messages"]
            lines.append(f"### {root['summary_id']} ({root['kind']}, {entry['tokens']} tokens)")
            if children:
                lines.append("Children: " + ", ".join(c["summary_id"] for c in children))
            if messages:
                lines.append(
                    "Messages: "
                    + ", ".join(f"msg#{m['messageId']} ({m['role']}, {m['cost']} tokens)" for m in messages)
                )
            for child in children:
                if child["content"]:
                    head = child["content"][:SNIPPET_CHARS]
                    lines.append(f"[Snippet: {head}{'...' if len(child['content']) > SNIPPET_CHARS else ''}]")
                    break
            lines.append("")
            # The text the tokens were counted for, in walk order (lossless-claw shows one
            # snippet only: its sub-agent reads the rest with lcm_describe).
            for item in entry["order"]:
                if "messageId" in item:
                    when = self.clock(item["createdAt"])
                    lines += [f"#### msg#{item['messageId']} ({item['role']}, {when}, {item['cost']} tokens)"]
                    lines += [item["content"], ""]
                else:
                    span = f"{self.clock(item['earliest_at'])}..{self.clock(item['latest_at'])}"
                    lines += [
                        f"#### {item['summary_id']} ({item['kind']}, depth {item['depth']}, {span}, "
                        f"{item['token_count']} tokens)",
                        item["content"] or "",
                        "",
                    ]
        cited = self.cited()
        if cited:
            lines.append("Cited IDs for follow-up: " + ", ".join(cited))
        lines.append(f"[Truncated: {'yes' if self.truncated else 'no'}]")
        if self.truncated:
            lines.append(
                f"The {self.cap}-token cap stopped the expansion: raise tokenCap, lower maxDepth or "
                "expand fewer summaries for the rest."
            )
        return "\n".join(lines)


# --------------------------------------------------------------------------------------
# lcm_expand_query
# --------------------------------------------------------------------------------------


def _expand_query(
    ctx: Context, values: dict[str, Any], session_key: str | None, session_id: str | None
) -> tuple[str, dict[str, Any]]:
    from lcm_cli.engine.core.jscompat import stringify_indented
    from lcm_cli.engine.recall.expand_query import DEFAULT_TIMEOUT_MS as DELEGATION_MS
    from lcm_cli.engine.recall.expand_query import expand_query

    prompt = (values.get("prompt") or "").strip()
    query = (values.get("query") or "").strip()
    explicit = list(dict.fromkeys(s.strip() for s in values.get("summaryIds") or [] if s.strip()))
    if not prompt:
        raise ToolError("prompt is empty: say what to answer.")
    if not query and not explicit:
        raise ToolError("Nothing to expand: give summaryIds or a query.")
    scope = resolve_tool_scope(ctx, values, session_key, session_id)
    fields = {
        **scope.fields,
        "query": query or None,
        "summary_id": explicit or None,
        "max_tokens": values.get("maxTokens") or DEFAULT_ANSWER_TOKENS,
        "token_cap": values.get("tokenCap"),
        "timeout_ms": _work_ms(ctx, values.get("timeoutMs") or DEFAULT_TIMEOUT_MS, DELEGATION_MS),
    }
    data = expand_query(ctx, _recall_request("expand.query", fields, prompt)).data
    status = data["answerStatus"]
    if status == "no_candidates" and scope.kind == "all":
        raise ToolError("No summary matched.", "Try other words in query, or pass summaryIds.")
    conversations = sorted(data["sourceConversationIds"])
    if status == "no_candidates" and scope.root is not None:
        conversations = [scope.root]
    # lossless-claw's reply, in its key order; an answer that failed keeps its evidence.
    reply: dict[str, Any] = {"answer": data["answer"], "citedIds": data["citedIds"]}
    reply["sourceConversationIds"] = conversations
    if len(conversations) == 1:
        reply["sourceConversationId"] = conversations[0]
    reply["expandedSummaryCount"] = data["expandedSummaryCount"]
    reply["totalSourceTokens"] = data["totalSourceTokens"]
    reply["truncated"] = data["truncated"]
    if status in ("no_model", "failed"):
        if data.get("note"):
            reply["note"] = data["note"]
        reply["evidence"] = data["evidence"]
    if status == "failed":
        error = data.get("error") or {}
        del reply["answer"]
        reply["truncated"] = True
        raise ToolError(
            error.get("message") or "The answer could not be generated.",
            None,
            errorCode=error.get("code"),
            **reply,
        )
    payload = reply
    return stringify_indented(payload, 2), payload


def _work_ms(ctx: Context, timeout_ms: int, delegation_default: int) -> int:
    """The time the answer may take within the host's ``timeoutMs``: lossless-claw keeps up to
    30 s of it for the host's own work (a quarter of a short limit), and never waits longer
    than ``delegationTimeoutMs``."""
    timeout_ms = min(max(1, timeout_ms), MAX_TIMEOUT_MS)
    configured = ctx.engine_settings.delegation_timeout_ms
    delegation = (
        int(configured) if isinstance(configured, (int, float)) and configured >= 1 else delegation_default
    )
    headroom = min(TIMEOUT_HEADROOM_MS, timeout_ms // 4)
    return max(1, min(delegation, timeout_ms - headroom, MAX_TIMEOUT_MS))


_RUNNERS = {
    "lcm_grep": _grep,
    "lcm_describe": _describe,
    "lcm_expand": _expand,
    "lcm_expand_query": _expand_query,
}
