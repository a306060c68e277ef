"""Reading one OpenClaw session transcript into message rows, as lossless-claw's importer does.

The facts are in compat/migrate-sessions.md (§3 parsing, §3.4 active leaf path, §4 session
id, §6.3 row values, §6.4 token rule, §6.6 parts) and compat/database.md (§5 hashes, §7
token estimate). Everything here reproduces the TypeScript reference's observable results
(content projection, token counts, part rows, identity hashes) from Python, including the
places where JavaScript semantics differ from Python's: string trimming, number spelling
in JSON, object key order, ``localeCompare`` key sorting and ``Date`` parsing.

Reading is streaming and two-pass so memory stays flat whatever the file size:

1. :func:`scan_transcript` reads every line once and keeps only a small index per tree
   record (entry id, parent id, byte span, line number, kind). From it, it picks the
   messages to import (the active leaf path when every record has an id, else all
   messages in file order) and explains every line that will not be imported.
2. :meth:`Transcript.iter_messages` re-reads only the chosen lines, one at a time, and
   turns each into a :class:`TranscriptMessage` ready for ``Store.add_messages``.
   :meth:`Transcript.iter_candidates` gives what a dry run or a check needs (entry id,
   line, size, part count of each) from the scan alone, without that second pass.

Bad content never raises: it is reported in :attr:`Transcript.skipped` with its line
number and a stable reason. Only a file that cannot be read raises ``LcmError``.

Skip reasons (every non-blank line that is not imported gets exactly one, except the
structural entries below):

``invalid_json``            the line is not JSON
``truncated_last_line``     the last line has no newline and is not JSON (a crash mid-write)
``not_utf8``                the line has bytes that are not UTF-8 and is not JSON
``binary``                  the line holds NUL bytes (a binary file or zero-filled tail)
``too_deep``                JSON nested too deeply to read safely
``not_an_object``           JSON, but not an object (an array, string, number or null)
``missing_fields``          an object that is neither a message nor a known entry: no
                            ``role``/``content`` (or ``message``), or a message entry
                            without a usable ``message``
``wrong_type``              a field has the wrong JSON type (``role`` not a string,
                            ``message`` not an object, ``type`` not a string)
``unknown_entry_type``      an entry whose ``type`` is not one OpenClaw writes
``unsupported_role``        a message whose role is not user/assistant/system/tool/toolResult
``abandoned_branch``        a message left behind by a history edit (not on the leaf path)
``duplicate_entry_id``      a message whose entry id appears again (the other copy is used)
``array_envelope_entry``    in a JSON-array file, an element that is not a bare message
``invalid_json_array``      in a JSON-array file that does not parse as a whole, every
                            element (the reference imports nothing from such a file)

Structural entries (the session header and the entry types OpenClaw writes besides
messages: ``model_change``, ``thinking_level_change``, ``session_info``, ``compaction``,
``custom``, ``custom_message``, ``label``, ``branch_summary``) are never imported by
design. They are counted per type in :attr:`Transcript.structural` rather than listed as
skipped, so ``skipped`` lists only lines that could have held conversation content.

Lines that are imported but had to be repaired are listed in :attr:`Transcript.warnings`
(``not_utf8_replaced``: invalid bytes were read as U+FFFD, as Node's decoder does).
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import IO, Any, NamedTuple

from lcm_cli.engine.core import jscompat as jsvalues
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.identity import canonical_identity_content, hash_canonical
from lcm_cli.engine.core.identity import entry_hash_canonical as _entry_hash
from lcm_cli.engine.core.limits import MAX_JSON_DEPTH, nests_deeper
from lcm_cli.engine.core.tokens import estimate_tokens

# ==========================================================================
# Public types
# ==========================================================================


class Header(NamedTuple):
    """The transcript's identity: the session id it imports under, and its header id."""

    session_id: str
    header_id: str | None


class SkippedLine(NamedTuple):
    """One line that was not imported (or was repaired), and why."""

    line: int
    reason: str


class TranscriptMessage(NamedTuple):
    """One message ready to be written as a ``messages`` row with its parts."""

    entry_id: str | None
    line: int
    role: str
    content: str
    token_count: int
    created_at: str | None
    identity_hash: str
    canonical: str  # the content as the identity and entry hashes see it
    sender_metadata: str | None
    parts: list[dict[str, str | None]]
    byte_size: int

    @property
    def entry_hash(self) -> str:
        """The bootstrap checkpoint's hash of this message (computed on demand: an import
        needs it for the last message only)."""
        return _entry_hash(self.role, self.canonical)

    def as_row(self) -> dict[str, Any]:
        """The row mapping ``Store.add_messages`` accepts (``created_at`` None means now)."""
        return {
            "role": self.role,
            "content": self.content,
            "token_count": self.token_count,
            "created_at": self.created_at,
            "identity_hash": self.identity_hash,
            "transcript_entry_id": self.entry_id,
            "sender_metadata": self.sender_metadata,
            "parts": self.parts,
        }


class RawEntry(NamedTuple):
    """One chosen message object as read from the file, with its envelope facts."""

    message: dict[str, Any]
    entry_id: str | None
    envelope_timestamp: str | None
    line: int
    byte_size: int


class Candidate(NamedTuple):
    """A message the import would write, as the scan knows it (nothing is re-read).

    ``position`` is its place in import order (0 .. ``candidate_count`` - 1); ``entry_id``,
    ``line`` and ``byte_size`` are those of its :class:`TranscriptMessage`, and ``parts``
    is ``len(message.parts)``.
    """

    position: int
    entry_id: str | None
    line: int
    byte_size: int
    parts: int


class PathEntry(NamedTuple):
    """One record of the active path as read back from the file (every kind, not only messages).

    ``entry`` is the parsed JSON object (``JSON.parse`` semantics, see
    :mod:`lcm_cli.engine.core.jscompat`); ``is_message`` is True for message-shaped records
    (persistable or not), False for the other id-bearing entries (``model_change``,
    ``session_info``, ``compaction``, ...).
    """

    line: int
    entry: dict[str, Any]
    is_message: bool


PERSISTABLE_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})
# scan_transcript(keep_parsed=True) keeps the parsed messages of files up to this size
# (their objects take several times the file's bytes).
KEEP_PARSED_MAX_BYTES = 2 << 20
STRUCTURAL_ENTRY_TYPES = frozenset(
    {
        "session",
        "model_change",
        "thinking_level_change",
        "session_info",
        "compaction",
        "custom",
        "custom_message",
        "label",
        "branch_summary",
    }
)

# ==========================================================================
# JavaScript value semantics live in lcm_cli.engine.core.jscompat (shared with the identity
# hash and runtime ingest); the reader keeps its short private names for them.
_ABSENT = jsvalues.ABSENT
_JS_SPACE = jsvalues.JS_SPACE
_SHAPE_SCAN = jsvalues.SHAPE_SCAN
_JsNumber = jsvalues.JsNumber
_bool_or_none = jsvalues.bool_or_none
_decoder = jsvalues.decoder
_envelope_string = jsvalues.envelope_string
_first_str = jsvalues.first_str
_is_blank = jsvalues.is_blank
_is_number = jsvalues.is_number
_js_parse_line = jsvalues.js_parse_line
_js_string = jsvalues.js_string
_str_or_none = jsvalues.str_or_none
_stringify = jsvalues.stringify
_trim = jsvalues.trim
_try_parse = jsvalues.try_parse
_utf8_safe = jsvalues.utf8_safe

# --- Date -----------------------------------------------------------------
_ZONED = re.compile(r"(?:[zZ]|[+-][0-9]{2}:[0-9]{2})$")
_DATE_TEXT = re.compile(
    r"([+-][0-9]{6}|[0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?"
    r"(?:(?:[Tt]| +)([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_PLAIN_UTC = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?Z"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# time.gmtime/strftime are fast but pad years below 1000 differently per platform.
_MIN_FAST_SECONDS = -30610224000  # 1000-01-01
_MAX_FAST_SECONDS = 253402300800  # 10000-01-01
_MAX_TIME_MS = 8.64e15


def _sqlite_text(moment: datetime) -> str:
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"


# Two-digit seconds, and the last minute formatted as "YYYY-MM-DD HH:MM:" with its
# number: a transcript's messages mostly come seconds apart, so consecutive ones share
# it. One tuple, replaced whole, so threads never see a minute with another's text.
_SECONDS_TEXT = tuple(f"{s:02d}" for s in range(60))
_last_minute: list[tuple[int, str]] = [(0, "1970-01-01 00:00:")]


def _date_from_ms(value: float) -> str | None:
    try:
        if type(value) is int:
            # Epoch milliseconds as OpenClaw writes them: within the limit an int is
            # exactly a double, so this is the float path below without the round trip.
            if abs(value) > _MAX_TIME_MS:
                return None
            seconds = value // 1000
        else:
            value = float(value)
            if not math.isfinite(value) or abs(value) > _MAX_TIME_MS:
                return None
            # Date truncates the milliseconds toward zero; the seconds then floor.
            seconds = math.trunc(value) // 1000
        if _MIN_FAST_SECONDS <= seconds < _MAX_FAST_SECONDS:
            minute, second = divmod(seconds, 60)
            last = _last_minute[0]
            if last[0] != minute:
                last = (minute, time.strftime("%Y-%m-%d %H:%M:", time.gmtime(minute * 60)))
                _last_minute[0] = last
            return last[1] + _SECONDS_TEXT[second]
        return _sqlite_text(_EPOCH + timedelta(seconds=seconds))
    except (OverflowError, ValueError, OSError):
        return None


def _date_from_text(text: str) -> str | None:
    """What the reference stores for a timestamp string: UTC whole seconds, or None.

    Strings that end in a zone are read as JavaScript's ``Date`` reads ISO-8601 text;
    others get ``Z`` appended (a space before the time becomes ``T``). V8's looser
    legacy forms (month names, slashes) are not recognised and give None.
    """
    if _PLAIN_UTC.fullmatch(text) is not None and not text.startswith("0000"):
        # What OpenClaw writes (toISOString): a valid UTC time whose day exists in
        # every month, so it stands as written, fractions truncated.
        return text[:10] + " " + text[11:19]
    value = _trim(text)
    if not value:
        return None
    if _ZONED.search(value) is None:
        value = (value if "T" in value else value.replace(" ", "T", 1)) + "Z"
    match = _DATE_TEXT.fullmatch(value)
    if match is None:
        return None
    year_text, month, day, hour, minute, second, fraction, zone = match.groups()
    if year_text == "-000000":
        return None
    year = int(year_text)
    months = int(month or 1)
    days = int(day or 1)
    hours, minutes, seconds = int(hour or 0), int(minute or 0), int(second or 0)
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    if not (1 <= months <= 12 and 1 <= days <= 31 and minutes <= 59 and seconds <= 59):
        return None
    if hours > 24 or (hours == 24 and (minutes or seconds or millis)):
        return None
    offset = 0
    if zone not in ("Z", "z"):
        off_hours, off_minutes = int(zone[1:3]), int(zone[4:6])
        if off_hours > 23 or off_minutes > 59:
            return None
        offset = (off_hours * 60 + off_minutes) * (1 if zone[0] == "+" else -1)
    if not 1 <= year <= 9999:
        return None
    try:
        # Days past the month's end roll over, as V8 does (2026-02-30 is 2026-03-02).
        moment = datetime(year, months, 1, tzinfo=timezone.utc) + timedelta(
            days=days - 1, hours=hours, minutes=minutes - offset, seconds=seconds, milliseconds=millis
        )
    except OverflowError:
        return None
    if not 1 <= moment.year <= 9999:
        return None
    return _sqlite_text(moment)


def _created_at(message: dict[str, Any], envelope_timestamp: str | None) -> str | None:
    value: Any = message.get("timestamp")
    if value is None:
        value = message.get("createdAt")
    if value is None:
        value = message.get("created_at")
    if _is_number(value):
        return _date_from_ms(value.value if isinstance(value, _JsNumber) else value)
    if isinstance(value, str) and not _is_blank(value):
        return _date_from_text(value)
    return _date_from_text(envelope_timestamp) if envelope_timestamp is not None else None


# ==========================================================================
# (The identity canonicalization of user content lives in lcm_cli.engine.core.identity.)

# ==========================================================================
# Content projection (§6.3)
# ==========================================================================

_TOOL_CALL_TYPES = frozenset(
    {"tool_use", "toolUse", "tool-use", "toolCall", "tool_call", "functionCall", "function_call"}
)
_TOOL_RESULT_TYPES = frozenset({"function_call_output", "tool_result", "toolResult", "tool_use_result"})
_TOOL_TYPES = _TOOL_CALL_TYPES | _TOOL_RESULT_TYPES
_REASONING_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})
_TEXT_KEYS = ("text", "transcript", "transcription", "message", "summary")
_ARRAY_KEYS = ("segments", "utterances", "paragraphs", "alternatives", "words", "items", "results")
_NESTED_KEYS = ("content", "output", "result", "payload", "data", "value")
_MAX_TEXT_DEPTH = 6


def _looks_like_json(text: str) -> bool:
    # Only a text that starts with a bracket or a space can trim to a bracketed one.
    if not text or not (text[0] == "{" or text[0] == "[" or text[0] in _JS_SPACE):
        return False
    trimmed = _trim(text)
    return bool(trimmed) and (
        (trimmed[0] == "{" and trimmed[-1] == "}") or (trimmed[0] == "[" and trimmed[-1] == "]")
    )


def _structured_text(value: Any, depth: int = 0) -> str | None:
    if value is None or depth > _MAX_TEXT_DEPTH:
        return None
    if isinstance(value, str):
        if _looks_like_json(value):
            parsed = _try_parse(_trim(value))
            if parsed is not _ABSENT:
                text = _structured_text(parsed, depth + 1)
                if text:
                    return text
        return value
    if isinstance(value, list):
        return _joined_texts(value, depth)
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if isinstance(kind, str):
        if kind in _REASONING_TYPES:
            return None
        if kind in _TOOL_TYPES:
            if value.get("toolOutputExternalized") is True:
                for key in ("output", "content", "result"):
                    text = _structured_text(value.get(key), depth + 1)
                    if text is not None:
                        return text if not _is_blank(text) else None
            return None
    for key in _TEXT_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, str) and not _is_blank(candidate):
            return candidate
    for key in _ARRAY_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, list):
            text = _joined_texts(candidate, depth)
            if text is not None:
                return text
    for key in _NESTED_KEYS:
        text = _structured_text(value.get(key), depth + 1)
        if text is not None and not _is_blank(text):
            return text
    return None


def _joined_texts(items: list[Any], depth: int) -> str | None:
    texts = []
    inner = depth + 1
    shortcut = inner <= _MAX_TEXT_DEPTH
    for item in items:
        if shortcut and type(item) is dict:
            # What _structured_text gives for the usual blocks, without the general walk:
            # a text block's text, nothing for reasoning and (not externalized) tool blocks.
            kind = item.get("type")
            if kind == "text":
                text = item.get("text")
                if isinstance(text, str) and not _is_blank(text):
                    texts.append(text)
                    continue
            elif isinstance(kind, str) and (
                kind in _REASONING_TYPES
                or (kind in _TOOL_TYPES and item.get("toolOutputExternalized") is not True)
            ):
                continue
        text = _structured_text(item, inner)
        if text is not None and not _is_blank(text):
            texts.append(text)
    return "\n".join(texts) if texts else None


def _content_text(content: Any) -> str:
    """The stored ``content`` column for a message's ``content`` value."""
    text = _structured_text(content)
    if text is not None:
        return text
    if content is None:
        return ""
    if isinstance(content, list):
        if not content:
            return ""
        if all(
            isinstance(item, dict)
            and isinstance(item.get("type"), str)
            and (item["type"] in _TOOL_TYPES or item["type"] in _REASONING_TYPES)
            for item in content
        ):
            return ""
    return _stringify(content)


# ==========================================================================
# Message parts (§6.6) and the rehydrated blocks behind the token rule (§6.4)
# ==========================================================================
#
# A part row's ``metadata`` is JSON.stringify of an object whose leading fields are the
# same for every block of a message (original role, model identity, top-level tool ids,
# reasoning), then ``rawType`` and ``raw`` (the block itself). The token count is the
# estimate of the content blocks the reference's assembler rebuilds from those rows.
# Both are built here block by block in one pass, as JSON text put together from
# pieces: each piece is serialized once (a block's raw JSON serves the metadata and the
# estimate; tool arguments serve the tool_input column and the rebuilt tool call), and
# the objects serialize in the order the reference builds them. Assembling JSON from
# _stringify'd pieces gives the same text as stringifying the whole (see _stringify).

_PART_TYPES = {
    "text": "text",
    "thinking": "reasoning",
    "redacted_thinking": "reasoning",
    "reasoning": "reasoning",
    "tool_use": "tool",
    "toolUse": "tool",
    "tool-use": "tool",
    "toolCall": "tool",
    "functionCall": "tool",
    "function_call": "tool",
    "function_call_output": "tool",
    "tool_result": "tool",
    "toolResult": "tool",
    "tool": "tool",
    "patch": "patch",
    "file": "file",
    "image": "file",
    "subtask": "subtask",
    "compaction": "compaction",
    "step_start": "step_start",
    "step-start": "step_start",
    "step_finish": "step_finish",
    "step-finish": "step_finish",
    "snapshot": "snapshot",
    "retry": "retry",
    "agent": "agent",
}
# Block types the reference rebuilds from part columns instead of replaying raw. Note
# the reference maps "tool_call" and "tool_use_result" to part type "agent" (not
# "tool") and replays them raw; that is ported as is.
_REBUILT_TOOL_TYPES = frozenset(
    {
        "toolCall",
        "tool_use",
        "tool-use",
        "toolUse",
        "functionCall",
        "function_call",
        "function_call_output",
        "toolResult",
        "tool_result",
    }
)
_CALL_BLOCK_TYPES = frozenset(
    {"function_call", "functionCall", "tool_use", "tool-use", "toolUse", "toolCall"}
)
_RESULT_BLOCK_TYPES = frozenset({"function_call_output", "toolResult", "tool_result"})


_TYPE_JSON = {name: json.dumps(name) for name in _PART_TYPES}
_ROLE_JSON = {role: json.dumps(role) for role in PERSISTABLE_ROLES}
_TEXT_BLOCK_OPEN = '{"type":"text","text":'

# A token block: its JSON, and its text when it is a {"type": "text", "text": <string>}
# block (a user message of one such block is estimated on the text alone).
_TokenBlock = tuple[str, "str | None"]
_PartRow = dict[str, "str | None"]


def _role_json(role: str) -> str:
    return _ROLE_JSON.get(role) or _stringify(role)


def _part_row(
    part_type: str,
    text: str | None,
    call_id: str | None,
    tool_name: str | None,
    tool_in: str | None,
    tool_out: str | None,
    metadata: str,
) -> _PartRow:
    # Most values are None or ASCII: only the others need _utf8_safe's look.
    return {
        "part_type": part_type,
        "text_content": text if text is None or text.isascii() else _utf8_safe(text),
        "tool_call_id": call_id if call_id is None or call_id.isascii() else _utf8_safe(call_id),
        "tool_name": tool_name if tool_name is None or tool_name.isascii() else _utf8_safe(tool_name),
        "tool_input": tool_in if tool_in is None or tool_in.isascii() else _utf8_safe(tool_in),
        "tool_output": tool_out if tool_out is None or tool_out.isascii() else _utf8_safe(tool_out),
        "metadata": metadata,
    }


# An assistant message's model identity: the fields, and their JSON members (",...").
_Identity = tuple[dict[str, str], str]
_IDENTITIES: dict[tuple[str, str, str, str | None], _Identity] = {}


def _model_identity(message: dict[str, Any]) -> _Identity | None:
    """``{"modelProvider", "modelApi", "modelId", "responseModelId"?}`` of an assistant
    message, or None. A transcript uses a handful of models, so these are cached."""
    provider, api, model = message.get("provider"), message.get("api"), message.get("model")
    if not (isinstance(provider, str) and isinstance(api, str) and isinstance(model, str)):
        return None
    response_model = message.get("responseModel")
    key = (provider, api, model, response_model if isinstance(response_model, str) else None)
    found = _IDENTITIES.get(key)
    if found is None:
        fields = {"modelProvider": provider, "modelApi": api, "modelId": model}
        if key[3] is not None:
            fields["responseModelId"] = key[3]
        found = (fields, "," + _stringify(fields)[1:-1])
        if len(_IDENTITIES) >= 256:
            _IDENTITIES.clear()
        _IDENTITIES[key] = found
    return found


def _top_level_reasoning(role: str, message: dict[str, Any]) -> str | None:
    if role != "assistant":
        return None
    value = message.get("reasoning_content")
    return value if isinstance(value, str) and not _is_blank(value) else None


def _reasoning_json(reasoning: str | None) -> str:
    """The top-level reasoning fields as JSON members ("" without reasoning)."""
    if reasoning is None:
        return ""
    return ',"topLevelReasoningField":"reasoning_content","topLevelReasoningContent":' + _stringify(reasoning)


def _put(fields: dict[str, Any], key: str, value: Any) -> None:
    # JSON.stringify leaves out undefined members; None stands for undefined here.
    if value is not None:
        fields[key] = value


def _reasoning_summary(record: dict[str, Any]) -> str | None:
    chunks: list[str] = []
    _collect_text_values(record.get("summary"), chunks)
    seen: list[str] = []
    for chunk in (_trim(c) for c in chunks):
        if chunk and chunk not in seen:
            seen.append(chunk)
    return "\n".join(seen) if seen else None


def _collect_text_values(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            _collect_text_values(item, out)
    elif isinstance(value, dict):
        _collect_text_values(value.get("text"), out)
        _collect_text_values(value.get("value"), out)


_MESSAGE_EXTERNALIZED_KEYS = frozenset(
    {
        "rawPayloadExternalized",
        "externalizedFileId",
        "externalizedFileIds",
        "fileBlocksExternalized",
        "originalByteSize",
        "externalizationReason",
    }
)


_TOP_FIELD_KEYS = frozenset(
    {
        "toolCallId",
        "tool_call_id",
        "toolUseId",
        "tool_use_id",
        "call_id",
        "id",
        "toolName",
        "tool_name",
        "isError",
        "is_error",
    }
)


class _Fields:
    """A message's leading metadata fields, as the reference orders them.

    ``base``: originalRole, then the top-level toolCallId, toolName and isError. The
    first block's fields (and a string content's) add the model identity after
    originalRole and the top-level reasoning at the end. ``*_prefix`` is the object's
    JSON without its closing brace.
    """

    __slots__ = (
        "role",
        "call_id",
        "tool_name",
        "is_error",
        "identity",
        "reasoning",
        "base_prefix",
        "first_prefix",
    )

    def __init__(
        self, message: dict[str, Any], role: str, identity: _Identity | None, reasoning: str | None
    ) -> None:
        self.role = role
        call_id = tool_name = is_error = None
        if not message.keys().isdisjoint(_TOP_FIELD_KEYS):
            call_id = _first_str(
                message, "toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id", "id"
            )
            tool_name = _first_str(message, "toolName", "tool_name")
            is_error = message.get("isError")
            if not isinstance(is_error, bool):
                is_error = message.get("is_error")
                if not isinstance(is_error, bool):
                    is_error = None
        self.call_id = call_id
        self.tool_name = tool_name
        self.is_error = is_error
        self.identity = identity
        self.reasoning = reasoning
        rest = ""
        if self.call_id is not None:
            rest += ',"toolCallId":' + _stringify(self.call_id)
        if self.tool_name is not None:
            rest += ',"toolName":' + _stringify(self.tool_name)
        if is_error is not None:
            rest += ',"isError":true' if is_error else ',"isError":false'
        head = '{"originalRole":' + _role_json(role)
        self.base_prefix = head + rest
        if identity is None and reasoning is None:
            self.first_prefix = self.base_prefix
        else:
            self.first_prefix = head + (identity[1] if identity else "") + rest + _reasoning_json(reasoning)

    def as_dict(self, first: bool) -> dict[str, Any]:
        """The fields as an object (for the rare blocks that add their own)."""
        fields: dict[str, Any] = {"originalRole": self.role}
        if first and self.identity is not None:
            fields.update(self.identity[0])
        _put(fields, "toolCallId", self.call_id)
        _put(fields, "toolName", self.tool_name)
        _put(fields, "isError", self.is_error)
        if first and self.reasoning is not None:
            fields["topLevelReasoningField"] = "reasoning_content"
            fields["topLevelReasoningContent"] = self.reasoning
        return fields


def _parts_and_tokens(
    message: dict[str, Any],
    role: str,
    content_text: str,
    reasoning: str | None,
    identity: _Identity | None,
) -> tuple[list[_PartRow], int]:
    """§6.6 part rows and the §6.4 token count of a message that has a ``content`` value."""
    content = message["content"]
    fields = _Fields(message, role, identity, reasoning)
    has_identity = identity is not None
    rows: list[_PartRow] = []
    blocks: list[_TokenBlock] = []
    if isinstance(content, str):
        metadata = fields.first_prefix
        if not _MESSAGE_EXTERNALIZED_KEYS.isdisjoint(message.keys()):
            extra = _message_externalization(message)
            if extra:
                metadata += "," + _stringify(extra)[1:-1]
        rows.append(_part_row("text", content, None, None, None, None, metadata + "}"))
        if role == "user" or role == "system":
            return rows, estimate_tokens(content)  # one text block: its text is estimated
        return rows, estimate_tokens(_text_wrapper(content))
    elif not isinstance(content, list):
        text = content_text or None
        source: dict[str, Any] = {"originalRole": role, "source": "non-array-content", "raw": content}
        if reasoning is not None:
            source["topLevelReasoningField"] = "reasoning_content"
            source["topLevelReasoningContent"] = reasoning
        metadata = _stringify(source)
        rows.append(_part_row("agent", text, None, None, None, None, metadata))
        block = _value_token_block(content, text, metadata, has_identity)
        if block is not None:
            blocks.append(block)
    else:
        if not content and reasoning is not None:
            # Only a top-level reasoning_content: one reasoning part (rawType sits before
            # the reasoning fields in this object).
            metadata = (
                '{"originalRole":'
                + _role_json(role)
                + (identity[1] if identity else "")
                + ',"rawType":"reasoning_content"'
                + _reasoning_json(reasoning)
                + ',"topLevelReasoningOnly":true}'
            )
            rows.append(_part_row("reasoning", None, None, None, None, None, metadata))
            blocks.append(('{"type":"reasoning"}', None))
        for ordinal, block_value in enumerate(content):
            row, token_block = _block_part(ordinal, block_value, role, fields, has_identity)
            rows.append(row)
            if token_block is not None:
                blocks.append(token_block)
    # The reference's runtime role: toolResult, user (user and system) or assistant.
    if not blocks:
        if role == "user" or role == "system":
            return rows, estimate_tokens(content_text)
        if content_text or role == "tool" or role == "toolResult":
            return rows, estimate_tokens(_text_wrapper(content_text))
        return rows, 0
    if len(blocks) == 1:
        json_text, plain = blocks[0]
        if plain is not None and (role == "user" or role == "system"):
            return rows, estimate_tokens(plain)
        return rows, estimate_tokens("[" + json_text + "]")
    return rows, estimate_tokens("[" + ",".join([json_text for json_text, _ in blocks]) + "]")


def _message_externalization(message: dict[str, Any]) -> dict[str, Any]:
    """A string content's externalization fields, in the reference's order."""
    fields: dict[str, Any] = {}
    if message.get("rawPayloadExternalized") is True:
        fields["rawPayloadExternalized"] = True
    _put(fields, "externalizedFileId", _str_or_none(message.get("externalizedFileId")))
    file_ids = message.get("externalizedFileIds")
    if isinstance(file_ids, list):
        fields["externalizedFileIds"] = [item for item in file_ids if isinstance(item, str)]
    if message.get("fileBlocksExternalized") is True:
        fields["fileBlocksExternalized"] = True
    size = message.get("originalByteSize")
    _put(fields, "originalByteSize", size if _is_number(size) else None)
    _put(fields, "externalizationReason", _str_or_none(message.get("externalizationReason")))
    return fields


def _shapeless_part(message: dict[str, Any], role: str, fallback: str) -> _PartRow:
    """The one part of a message without ``content`` (a bash execution record)."""
    if "command" in message and "output" in message:
        fields: dict[str, Any] = {"originalRole": role, "source": "bash-exec"}
        _put(fields, "command", _str_or_none(message.get("command")))
        return _part_row("text", fallback, None, None, None, None, _stringify(fields))
    metadata = _stringify({"originalRole": role, "source": "unknown-message-shape", "raw": message})
    return _part_row("agent", fallback or None, None, None, None, None, metadata)


_TOOL_FIELD_KEYS = frozenset(
    {
        "toolCallId",
        "tool_call_id",
        "toolUseId",
        "tool_use_id",
        "call_id",
        "id",
        "name",
        "toolName",
        "tool_name",
        "input",
        "arguments",
        "toolInput",
        "tool_input",
        "output",
        "toolOutput",
        "tool_output",
    }
)
_EXTERNALIZED_KEYS = frozenset(
    {
        "externalizedFileId",
        "originalByteSize",
        "imageExternalized",
        "toolOutputExternalized",
        "externalizationReason",
    }
)


def _block_part(
    ordinal: int, block: Any, role: str, fields: _Fields, has_identity: bool
) -> tuple[_PartRow, _TokenBlock | None]:
    """The part row for one content block, and the block the token estimate counts for it
    (None when the reference's assembler would leave it out)."""
    prefix = fields.first_prefix if ordinal == 0 else fields.base_prefix
    call_id, tool_name = fields.call_id, fields.tool_name
    if type(block) is dict and len(block) == 2 and block.get("type") == "text":
        # The commonest block, {"type": "text", "text": <string>}, as the general path
        # below ends for it: no tool or externalization fields, replayed raw.
        text = block.get("text")
        if type(text) is str:
            raw_json = _stringify(block)
            metadata = f'{prefix},"rawType":"text","raw":{raw_json}}}'
            return _part_row("text", text, call_id, tool_name, None, None, metadata), (raw_json, text)
    if not isinstance(block, dict):
        raw_json = _stringify(block)
        metadata = f'{prefix},"rawType":"agent","raw":{raw_json}}}'
        row = _part_row("agent", None, call_id, tool_name, None, None, metadata)
        if isinstance(block, list):
            return row, (raw_json, None)
        return row, (_TEXT_BLOCK_OPEN + _stringify(metadata) + "}", metadata)
    get = block.get
    own_type = get("type")
    block_type = own_type if isinstance(own_type, str) else "agent"
    block_text = get("text")
    text = block_text
    if not isinstance(text, str):
        text = get("thinking")
        if not isinstance(text, str):
            text = _reasoning_summary(block) if block_type in ("reasoning", "thinking") else None
    declared = get("rawType")
    raw_type = declared if isinstance(declared, str) else block_type
    part_type = _PART_TYPES.get(raw_type, "agent")
    raw: dict[str, Any] = block
    if raw_type != block_type:
        raw = dict(block)
        raw["type"] = raw_type
    tool_input = tool_output = None
    input_value = output_value = _ABSENT
    keys = block.keys()
    if not keys.isdisjoint(_TOOL_FIELD_KEYS):
        own_call_id = _first_str(block, "toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id")
        if own_call_id is None and part_type == "tool":
            own_call_id = _str_or_none(get("id"))
        if own_call_id is not None:
            call_id = own_call_id
        own_name = _first_str(block, "name", "toolName", "tool_name")
        if own_name is not None:
            tool_name = own_name
        for key in ("input", "arguments", "toolInput"):
            if key in block:
                input_value = block[key]
                tool_input = _stringify(input_value)
                break
        else:
            tool_input = _str_or_none(get("tool_input"))
        for key in ("output", "toolOutput"):
            if key in block:
                output_value = block[key]
                tool_output = _stringify(output_value)
                break
        else:
            tool_output = _str_or_none(get("tool_output"))
    if not keys.isdisjoint(_EXTERNALIZED_KEYS):
        extra = fields.as_dict(ordinal == 0)
        _put(extra, "externalizedFileId", _str_or_none(get("externalizedFileId")))
        size = get("originalByteSize")
        _put(extra, "originalByteSize", size if _is_number(size) else None)
        _put(extra, "imageExternalized", _bool_or_none(get("imageExternalized")))
        _put(extra, "toolOutputExternalized", _bool_or_none(get("toolOutputExternalized")))
        _put(extra, "externalizationReason", _str_or_none(get("externalizationReason")))
        prefix = _stringify(extra)[:-1]
    raw_json = _stringify(raw)
    type_json = _TYPE_JSON.get(raw_type) or _stringify(raw_type)
    row = _part_row(
        part_type,
        text,
        call_id,
        tool_name,
        tool_input,
        tool_output,
        f'{prefix},"rawType":{type_json},"raw":{raw_json}}}',
    )

    # The block the assembler rebuilds from this row. ``raw`` carries ``raw_type`` as its
    # type whenever that is a string, and the block's other members.
    if raw_type == "thinking":
        signature = get("thinkingSignature")
        if isinstance(signature, str):
            return row, _signed_thinking_block(raw, raw_json, signature, has_identity)
    if raw_type not in _REBUILT_TOOL_TYPES:
        return row, (raw_json, block_text if raw_type == "text" and isinstance(block_text, str) else None)
    # Rebuilt tool blocks (every such raw type is a "tool" part): missing columns are
    # taken from the raw block.
    token_call_id, token_name, token_input, token_value = call_id, tool_name, tool_input, input_value
    raw_id, raw_call_id = get("id"), get("call_id")
    found = (
        raw_id
        if isinstance(raw_id, str) and raw_id
        else raw_call_id
        if isinstance(raw_call_id, str) and raw_call_id
        else None
    )
    if found and not token_call_id:
        token_call_id = found
    raw_name = get("name")
    if isinstance(raw_name, str) and raw_name and not token_name:
        token_name = raw_name
    if not token_input:
        args = get("arguments", _ABSENT)
        if args is None or args is _ABSENT:
            args = get("input", _ABSENT)
        if args is not _ABSENT:
            if isinstance(args, str):
                token_input, token_value = args, _ABSENT
            else:
                token_input, token_value = _stringify(args), args
    if role == "toolResult" or raw_type == "function_call_output":
        result = _tool_result_block(raw_type, raw, token_call_id, token_name, text, tool_output, output_value)
        plain = result["text"] if result["type"] == "text" else None
        return row, (_stringify(result), plain)
    return row, (
        _tool_call_json(ordinal, raw_type, token_call_id, token_name, token_input, token_value),
        None,
    )


def _signed_thinking_block(
    raw: dict[str, Any], raw_json: str | None, signature: str, has_identity: bool
) -> _TokenBlock | None:
    """The token block of a thinking block with a signature (``raw_json``: ``raw`` as
    JSON when already known)."""
    if signature.startswith("{"):
        # An OpenAI reasoning item kept in the signature is replayed as itself.
        parsed = _try_parse(signature)
        if (
            isinstance(parsed, dict)
            and parsed.get("type") == "reasoning"
            and isinstance(parsed.get("id"), str)
        ):
            return _stringify(parsed), None
    if has_identity:
        return (raw_json if raw_json is not None else _stringify(raw)), None
    if signature == "reasoning_content":
        return None
    return _stringify({key: value for key, value in raw.items() if key != "thinkingSignature"}), None


def _value_token_block(raw: Any, text: str | None, metadata: str, has_identity: bool) -> _TokenBlock | None:
    """The token block for the one part of a content that is neither a string nor an array."""
    if isinstance(raw, dict):
        kind = raw.get("type")
        signature = raw.get("thinkingSignature")
        if kind == "thinking" and isinstance(signature, str):
            return _signed_thinking_block(raw, None, signature, has_identity)
        if not (isinstance(kind, str) and kind in _REBUILT_TOOL_TYPES):
            value = raw.get("text")
            return _stringify(raw), value if kind == "text" and isinstance(value, str) else None
    elif isinstance(raw, list):
        return _stringify(raw), None
    # Anything else is replayed as a text block of the part's text, or of its metadata.
    shown = text if text else metadata
    return _TEXT_BLOCK_OPEN + _stringify(shown) + "}", shown


def _stored_value(text: str | None) -> Any:
    """The reference's ``parseStoredValue``: JSON-decoded text, else the text itself."""
    if not text:
        return _ABSENT
    if _is_blank(text):
        return text
    parsed = _try_parse(text)
    return text if parsed is _ABSENT else parsed


def _tool_call_json(
    ordinal: int,
    raw_type: str,
    call_id: str | None,
    tool_name: str | None,
    tool_input: str | None,
    value: Any,
) -> str:
    """JSON of the tool-call block the assembler rebuilds (``tool_input`` is ``value``'s JSON
    when ``value`` is known)."""
    kind = raw_type if raw_type in _CALL_BLOCK_TYPES else "toolCall"
    if value is not _ABSENT:
        arguments: str | None = tool_input
    else:
        stored = _stored_value(tool_input)
        arguments = None if stored is _ABSENT else _stringify(stored)
    out = '{"type":' + _TYPE_JSON[kind]
    if kind == "function_call":
        if call_id:
            out += ',"call_id":' + _stringify(call_id)
        if tool_name:
            out += ',"name":' + _stringify(tool_name)
        if arguments is not None:
            out += ',"arguments":' + arguments
        return out + "}"
    out += ',"id":' + _stringify(call_id if call_id else f"toolu_lcm_estimate-part-{ordinal}")
    if tool_name:
        out += ',"name":' + _stringify(tool_name)
    if arguments is not None:
        out += (',"arguments":' if kind in ("functionCall", "toolCall") else ',"input":') + arguments
    return out + "}"


def _tool_result_block(
    raw_type: str,
    raw: dict[str, Any],
    call_id: str | None,
    tool_name: str | None,
    text: str | None,
    tool_output: str | None,
    output_value: Any,
) -> dict[str, Any]:
    """The tool-result block the assembler rebuilds (``text``, ``tool_output`` and
    ``output_value`` are the part's own)."""
    if (
        isinstance(raw.get("text"), str)
        and "output" not in raw
        and "content" not in raw
        and not tool_output
        and (text is None or text == raw["text"])
    ):
        return {"type": "text", "text": raw["text"]}
    kind = raw_type if raw_type in _RESULT_BLOCK_TYPES else "tool_result"
    output = output_value if output_value is not _ABSENT else _stored_value(tool_output)
    block: dict[str, Any] = {"type": kind}
    if tool_name:
        block["name"] = tool_name
    if output is not _ABSENT:
        block["output"] = output
    elif text is not None:
        block["output"] = text
    elif "output" in raw:
        block["output"] = raw["output"]
    elif "content" in raw:
        block["content"] = raw["content"]
    else:
        block["output"] = ""
    if isinstance(raw.get("is_error"), bool):
        block["is_error"] = raw["is_error"]
    elif isinstance(raw.get("isError"), bool):
        block["isError"] = raw["isError"]
    if call_id:
        block["call_id" if kind == "function_call_output" else "tool_use_id"] = call_id
    return block


def _text_wrapper(text: str) -> str:
    return "[" + _TEXT_BLOCK_OPEN + _stringify(text) + "}]"


def _sender_metadata(role: str, message: dict[str, Any]) -> str | None:
    if role != "user":
        return None
    envelope = message.get("__openclaw")
    if not isinstance(envelope, dict):
        return None
    kept = {}
    for key in ("senderId", "senderName", "senderUsername"):
        value = envelope.get(key)
        if isinstance(value, str) and not _is_blank(value):
            kept[key] = value
    return _stringify(kept) if kept else None


def build_message(
    message: dict[str, Any],
    *,
    entry_id: str | None = None,
    envelope_timestamp: str | None = None,
    line: int = 0,
    byte_size: int = 0,
) -> TranscriptMessage:
    """Turn one message-shaped object with a persistable role into its row values."""
    role = message["role"]
    stored_role = "tool" if role == "toolResult" or role == "tool" else role
    reasoning = identity = None
    if role == "assistant":
        reasoning = _top_level_reasoning(role, message)
        identity = _model_identity(message)
    if "content" in message:
        content = _content_text(message["content"])
        parts, tokens = _parts_and_tokens(message, role, content, reasoning, identity)
    else:
        command = message.get("command")
        content = f"$ {_js_string('' if command is None else command)}\n{_js_string(message.get('output'))}"
        parts = [_shapeless_part(message, role, content)]
        tokens = estimate_tokens(content)
    if reasoning is not None:
        tokens += estimate_tokens(reasoning)
    canonical = canonical_identity_content(stored_role, content)
    safe_content = _utf8_safe(content)
    safe_canonical = safe_content if canonical is content else _utf8_safe(canonical)
    return TranscriptMessage(
        entry_id,
        line,
        stored_role,
        safe_content,
        tokens,
        _created_at(message, envelope_timestamp),
        hash_canonical(stored_role, safe_canonical),
        canonical,
        _sender_metadata(role, message),
        parts,
        byte_size,
    )


# ==========================================================================
# Reading the file
# ==========================================================================

_CHUNK = 1 << 20
# The first pass splits what it reads into lines all at once: a smaller read keeps fewer
# of them alive at a time (less memory held between the index's long-lived entries).
_SCAN_CHUNK = 1 << 18

# Record kinds kept in the scan index (one byte each).
_K_MESSAGE = 1  # a persistable message: a candidate for import
_K_OTHER_ROLE = 2  # message-shaped, role not persistable
_K_ENTRY = 3  # an id-bearing entry that is not a message (links the tree)
# Id-bearing entries that carry session settings get their own codes, so a rewrite of
# the transcript (`lcm rotate`) can find them without parsing every line again.
_K_SETTINGS = {"session_info": 4, "model_change": 5, "thinking_level_change": 6}
_KIND_NAMES = {_K_MESSAGE: "message", _K_OTHER_ROLE: "message", _K_ENTRY: "entry"}
_KIND_NAMES.update({code: name for name, code in _K_SETTINGS.items()})


def _is_message_shaped(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("role"), str)
        and ("content" in value or ("command" in value and "output" in value))
    )


def _message_of(entry: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """(the message an entry carries, whether it came in an envelope)."""
    if _is_message_shaped(entry):
        return entry, False
    if "message" in entry:
        if "type" in entry and entry["type"] != "message":
            return None, False
        inner = entry["message"]
        if _is_message_shaped(inner):
            return inner, True
    return None, False


def _why_not_message(entry: dict[str, Any]) -> str:
    """Reason for an object line that carries no message (and is not structural)."""
    kind = entry.get("type", _ABSENT)
    if "message" in entry:
        if kind is not _ABSENT and kind != "message":
            return "wrong_type" if not isinstance(kind, str) else "unknown_entry_type"
        inner = entry["message"]
        if not isinstance(inner, dict):
            return "wrong_type"
        return _why_not_message_shaped(inner)
    if kind is not _ABSENT:
        if not isinstance(kind, str):
            return "wrong_type"
        if kind != "message":
            return "unknown_entry_type"
        return "missing_fields"
    return _why_not_message_shaped(entry)


def _why_not_message_shaped(value: dict[str, Any]) -> str:
    if "role" in value and not isinstance(value["role"], str):
        return "wrong_type"
    return "missing_fields"


def _file_stem(path: str) -> str:
    # Node's basename(file, extname(file)): "abc.jsonl" -> "abc", ".hidden" stays.
    name = os.path.basename(path)
    dot = name.rfind(".")
    if dot <= 0 or not name[:dot].strip("."):
        return name
    return name[:dot]


def _open(path: str) -> tuple[IO[bytes], os.stat_result]:
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise LcmError(
            "TRANSCRIPT_UNREADABLE",
            f"cannot read transcript {path}: {exc.strerror or exc}",
            {"file": path},
        ) from exc
    try:
        info = os.fstat(handle.fileno())
    except OSError as exc:
        handle.close()
        raise LcmError("TRANSCRIPT_UNREADABLE", f"cannot stat transcript {path}", {"file": path}) from exc
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        raise LcmError("TRANSCRIPT_UNREADABLE", f"transcript {path} is not a regular file", {"file": path})
    return handle, info


class _SpanReader:
    """Byte spans of one file, read through a window that moves forward in large chunks.

    The chosen lines are mostly in file order, so reading each one with its own seek and
    read (a system call per message) is replaced by one read per 256 KiB. A span behind
    the window or larger than that is read directly.
    """

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.start = 0
        self.window = b""

    def read(self, offset: int, length: int) -> bytes:
        """The ``length`` bytes at ``offset`` (fewer only at the end of the file)."""
        begin = offset - self.start
        if 0 <= begin and begin + length <= len(self.window):
            return self.window[begin : begin + length]
        self.handle.seek(offset)
        if length >= _SCAN_CHUNK:
            return self.handle.read(length)
        self.start, self.window = offset, self.handle.read(_SCAN_CHUNK)
        return self.window[:length]


# One line as :func:`_physical_lines` yields it: (byte offset, byte length without its
# terminator, 1-based physical line number, the bytes or None when the line was dropped
# as binary, whether a line break ended it: False only for the file's last line).
_Line = tuple[int, int, int, "bytes | None", bool]


def _physical_lines(handle: IO[bytes], limit: int) -> Iterator[_Line]:
    """The lines of the first ``limit`` bytes, each split at lone CRs as Node's readline does.

    The bytes are read a chunk at a time and split in C. A line holding a NUL byte cannot
    be JSON, so it is not accumulated: a binary file with no line breaks costs one chunk
    of memory, not its size.
    """
    number = 0
    remaining = limit
    position = 0  # file offset of the next line
    head: list[bytes] = []  # the pieces of a line that runs past the chunk read so far
    head_size = 0
    head_binary = False
    while remaining > 0:
        chunk = handle.read(min(_SCAN_CHUNK, remaining))
        if not chunk:
            break
        remaining -= len(chunk)
        pieces = chunk.split(b"\n")
        tail = pieces.pop()  # after the chunk's last line break: the start of a line
        for piece in pieces:
            number += 1
            start = position
            if head_size:
                size = head_size + len(piece)
                binary = head_binary or b"\x00" in piece
                if not binary:
                    head.append(piece)
                    piece = b"".join(head)
                head = []
                head_size = 0
                head_binary = False
            else:
                size = len(piece)
                binary = b"\x00" in piece
            position += size + 1
            if binary:
                yield (start, size, number, None, True)
                continue
            if piece.endswith(b"\r"):
                piece = piece[:-1]
            if b"\r" not in piece:
                yield (start, len(piece), number, piece, True)
                continue
            for segment in piece.split(b"\r"):
                yield (start, len(segment), number, segment, True)
                start += len(segment) + 1
        if tail:
            head_size += len(tail)
            if not head_binary:
                if b"\x00" in tail:
                    head_binary = True
                    head = []
                else:
                    head.append(tail)
    if head_size:  # the last line has no line break
        number += 1
        if head_binary:
            yield (position, head_size, number, None, False)
            return
        data = b"".join(head)
        if data.endswith(b"\r"):
            data = data[:-1]
        segments = data.split(b"\r")
        last = len(segments) - 1
        for i, segment in enumerate(segments):
            yield (position, len(segment), number, segment, i != last)
            position += len(segment) + 1


def _decode(data: bytes) -> tuple[str, bool]:
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True


def read_header(path: str | os.PathLike[str]) -> Header:
    """The session id (§4: header id, else the file name without its extension) and header id."""
    file = os.fspath(path)
    handle, info = _open(file)
    with handle:
        header_id = _header_id(handle, info.st_size)
    return Header(header_id or _file_stem(file), header_id)


def read_session_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The session header object when the first non-blank line is one, else None."""
    file = os.fspath(path)
    handle, info = _open(file)
    with handle:
        return _header_object(handle, info.st_size)


def _header_id(handle: IO[bytes], size: int) -> str | None:
    header = _header_object(handle, size)
    return _envelope_string(header.get("id")) if header is not None else None


def _header_object(handle: IO[bytes], size: int) -> dict[str, Any] | None:
    for _, _, _, data, _ in _physical_lines(handle, size):
        if data is None:
            return None
        text, _ = _decode(data)
        trimmed = _trim(text)
        if not trimmed:
            continue
        if trimmed[0] != "{":
            return None
        try:
            parsed = _js_parse_line(data, trimmed)
        except (ValueError, RecursionError):
            return None
        if not isinstance(parsed, dict) or parsed.get("type") != "session":
            return None
        return parsed
    return None


class Transcript:
    """The scan of one transcript: what will be imported, and why every other line is not.

    ``session_id``/``header_id`` follow §4. ``size_bytes`` and ``mtime_ms`` (floored) are
    the file's at scan time; only those bytes are read, so a file still being appended
    to is read consistently. ``mode`` is ``"jsonl"`` or ``"json-array"``. ``all_ids``:
    every tree record has an entry id; ``leaf_path``: the active-branch rule was applied
    (False when ids are missing or the chain dangles or cycles, see ``flatten_reason``:
    ``no_records``, ``missing_ids``, ``dangling_parent``, ``cycle`` or ``json_array``).
    ``candidate_count`` is how many messages :meth:`iter_messages` (and
    :meth:`iter_candidates`) yields; ``skipped``,
    ``warnings`` and ``structural`` are described in the module docstring.
    """

    path: str
    session_id: str
    header_id: str | None
    size_bytes: int
    mtime_ms: int
    mode: str
    all_ids: bool
    leaf_path: bool
    flatten_reason: str | None
    candidate_count: int
    skipped: list[SkippedLine]
    warnings: list[SkippedLine]
    structural: dict[str, int]

    def __init__(self, path: str, info: os.stat_result) -> None:
        self.path = path
        self.session_id = ""
        self.header_id = None
        self.size_bytes = info.st_size
        self.mtime_ms = info.st_mtime_ns // 1_000_000
        self.mode = "jsonl"
        self.all_ids = False
        self.leaf_path = False
        self.flatten_reason = None
        self.candidate_count = 0
        self.skipped = []
        self.warnings = []
        self.structural = {}
        self._identity = (info.st_dev, info.st_ino)
        # Per record (a JSON-array file: per chosen element): byte offset, byte length
        # (the element's UTF-8 size), line number, the entry id it must still carry
        # when it is read again, and its part count; ``_chosen`` lists the records to
        # import, in import order.
        self._offsets: Sequence[int] = array("q")
        self._lengths: Sequence[int] = array("q")
        self._lines: Sequence[int] = array("q")
        self._entry_ids: Sequence[str | None] = []
        self._parts: Sequence[int] = array("q")
        self._chosen: Sequence[int] = array("q")
        # Every record of the active path (messages and other entries), root to leaf, and
        # each record's kind: what `lcm rotate` rewrites the transcript from.
        self._path: Sequence[int] = array("q")
        self._kinds: bytes | bytearray = b""
        # (byte offset, byte length) of the session header line; None without a header.
        self.header_span: tuple[int, int] | None = None
        self._array_start = 0
        self._array_line = 1
        self._array_chosen: set[int] = set()
        # With keep_parsed, per message record: (message, entry id, envelope timestamp)
        # as the scan parsed them, so building needs no second read; None otherwise.
        self._parsed: dict[int, tuple[dict[str, Any], str | None, str | None]] | None = None
        # Set by the importer for a host-store snapshot: line n holds the event seqs[n - 1].
        self.seqs: list[int] | None = None

    def drop_parsed(self) -> None:
        """Forget the kept parses (building then reads the chosen lines again)."""
        self._parsed = None

    def __repr__(self) -> str:
        return (
            f"Transcript({self.path!r}, session_id={self.session_id!r}, mode={self.mode!r},"
            f" candidates={self.candidate_count}, skipped={len(self.skipped)})"
        )

    def iter_candidates(self) -> Iterator[Candidate]:
        """What :meth:`iter_messages` would yield, in the same order, from the scan alone.

        Enough for a dry run or a check against the database (entry ids, lines, sizes,
        part counts) at no cost per message: the file is not read again.
        """
        entry_ids, lines, lengths, parts = self._entry_ids, self._lines, self._lengths, self._parts
        for index, i in enumerate(self._chosen):
            yield Candidate(index, entry_ids[i], lines[i], lengths[i], parts[i])

    def iter_messages(self, want: Callable[[Candidate], bool] | None = None) -> Iterator[TranscriptMessage]:
        """The chosen messages in import order (root to leaf), read one line at a time.

        With ``want``, only the messages whose :class:`Candidate` it accepts are read and
        built (the others are skipped at no cost: an import re-run, for one, needs only
        the entries the database lacks).

        Raises ``LcmError("TRANSCRIPT_CHANGED")`` if the file was replaced or rewritten
        since the scan (appending to it is fine: only the scanned bytes are read).
        """
        for entry in self.iter_entries(want):
            yield build_message(
                entry.message,
                entry_id=entry.entry_id,
                envelope_timestamp=entry.envelope_timestamp,
                line=entry.line,
                byte_size=entry.byte_size,
            )

    def iter_entries(self, want: Callable[[Candidate], bool] | None = None) -> Iterator[RawEntry]:
        """What :meth:`iter_messages` builds from: each chosen message object as read.

        Runtime bootstrap ingests these through the live ingest path (which rewrites
        large payloads before building the row).
        """
        handle, info = _open(self.path)
        with handle:
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self.size_bytes:
                raise _changed(self.path)
            if self.mode == "json-array":
                yield from self._iter_array(handle, want)
                return
            offsets, lengths, lines, entry_ids = self._offsets, self._lengths, self._lines, self._entry_ids
            parsed = self._parsed
            if parsed is not None:
                # Everything was parsed in the one read the scan made: nothing to re-read.
                for index, i in enumerate(self._chosen):
                    if want is not None and not want(
                        Candidate(index, entry_ids[i], lines[i], lengths[i], self._parts[i])
                    ):
                        continue
                    kept, kept_id, kept_ts = parsed[i]
                    yield RawEntry(kept, kept_id, kept_ts, lines[i], lengths[i])
                return
            span = _SpanReader(handle)
            for index, i in enumerate(self._chosen):
                offset, length, line, expected_id = offsets[i], lengths[i], lines[i], entry_ids[i]
                if want is not None and not want(Candidate(index, expected_id, line, length, self._parts[i])):
                    continue
                data = span.read(offset, length)
                text, _ = _decode(data)
                try:
                    entry = _js_parse_line(data, _trim(text))
                except (ValueError, RecursionError) as exc:
                    raise _changed(self.path) from exc
                message, enveloped = _message_of(entry) if isinstance(entry, dict) else (None, False)
                if message is None or message.get("role") not in PERSISTABLE_ROLES:
                    raise _changed(self.path)
                entry_id = envelope_ts = None
                if enveloped:
                    entry_id = _envelope_string(entry.get("id")) or _envelope_string(entry.get("uuid"))
                    envelope_ts = _envelope_string(entry.get("timestamp"))
                if entry_id != expected_id:
                    raise _changed(self.path)
                yield RawEntry(message, entry_id, envelope_ts, line, length)

    def read_header_line(self) -> dict[str, Any] | None:
        """The session header object (the first non-blank line), or None without one."""
        if self.header_span is None:
            return None
        handle, info = _open(self.path)
        with handle:
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self.size_bytes:
                raise _changed(self.path)
            handle.seek(self.header_span[0])
            data = handle.read(self.header_span[1])
        text, _ = _decode(data)
        try:
            header = _js_parse_line(data, _trim(text))
        except (ValueError, RecursionError) as exc:
            raise _changed(self.path) from exc
        if not isinstance(header, dict) or header.get("type") != "session":
            raise _changed(self.path)
        return header

    def path_kinds(self) -> list[str]:
        """The kind of every record of the active path, root to leaf.

        ``message`` (message-shaped, whatever its role), ``session_info``,
        ``model_change``, ``thinking_level_change``, or ``entry`` (any other id-bearing
        entry: ``compaction``, ``custom``, ``label``, ...). The active path is the one
        :meth:`iter_messages` imports from; in flatten mode (ids missing, or the chain
        dangles) it is every record in file order, a duplicated message id once. Id-less
        structural lines are not records. Empty for a JSON-array file.
        """
        if self.mode != "jsonl":
            return []
        kinds = self._kinds
        return [_KIND_NAMES[kinds[i]] for i in self._path]

    @contextmanager
    def path_reader(self) -> Iterator[Callable[[int], PathEntry]]:
        """``read(k)``: the ``k``-th record of :meth:`path_kinds`, parsed, read from the file.

        Only the records asked for are read. Raises ``TRANSCRIPT_CHANGED`` like
        :meth:`iter_entries` when the file was replaced or rewritten since the scan.
        """
        handle, info = _open(self.path)
        with handle:
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self.size_bytes:
                raise _changed(self.path)
            offsets, lengths, lines, kinds, path = (
                self._offsets,
                self._lengths,
                self._lines,
                self._kinds,
                self._path,
            )

            def read(k: int) -> PathEntry:
                i = path[k]
                handle.seek(offsets[i])
                data = handle.read(lengths[i])
                text, _ = _decode(data)
                try:
                    entry = _js_parse_line(data, _trim(text))
                except (ValueError, RecursionError) as exc:
                    raise _changed(self.path) from exc
                if not isinstance(entry, dict):
                    raise _changed(self.path)
                return PathEntry(lines[i], entry, _KIND_NAMES[kinds[i]] == "message")

            yield read

    def _iter_array(self, handle: IO[bytes], want: Callable[[Candidate], bool] | None) -> Iterator[RawEntry]:
        if not self._array_chosen:
            return
        last = max(self._array_chosen)
        handle.seek(self._array_start)
        elements = _array_elements(handle, self.size_bytes - self._array_start, self._array_line)
        chosen = 0
        try:
            for index, (line, size, value) in enumerate(elements):
                if index > last:
                    return
                if index in self._array_chosen:
                    if not _is_message_shaped(value) or value["role"] not in PERSISTABLE_ROLES:
                        raise _changed(self.path)
                    candidate = Candidate(chosen, None, line, size, self._parts[chosen])
                    chosen += 1
                    if want is None or want(candidate):
                        yield RawEntry(value, None, None, line, size)
        except _ArrayError as exc:
            raise _changed(self.path) from exc


def _changed(path: str) -> LcmError:
    return LcmError(
        "TRANSCRIPT_CHANGED",
        f"transcript {path} changed while it was being read; scan it again",
        {"file": path},
    )


def scan_transcript(path: str | os.PathLike[str], *, keep_parsed: bool = False) -> Transcript:
    """First pass over one transcript file: pick the messages to import, explain the rest.

    ``keep_parsed``: for a file of at most :data:`KEEP_PARSED_MAX_BYTES`, keep each
    message as parsed (the JavaScript-faithful way) so building its rows reads nothing
    again. It costs memory in proportion to the file, hence the bound.

    Raises ``LcmError("TRANSCRIPT_UNREADABLE")`` only when the file is missing,
    unreadable or not a regular file; bad content is reported in ``skipped``.
    """
    file = os.fspath(path)
    handle, info = _open(file)
    scan = Transcript(file, info)
    if keep_parsed and info.st_size <= KEEP_PARSED_MAX_BYTES:
        scan._parsed = {}
    try:
        with handle:
            _scan_lines(scan, handle)
    except OSError as exc:
        raise LcmError(
            "TRANSCRIPT_UNREADABLE", f"cannot read transcript {file}: {exc}", {"file": file}
        ) from exc
    scan.session_id = scan.header_id or _file_stem(file)
    scan.skipped.sort()
    return scan


class _Index:
    """The per-record facts the leaf-path walk needs, kept small (about 100 bytes each).

    A parent is kept as the index of a record bearing that id (ids are resolved again
    through ``by_id`` at walk time, so a later duplicate still wins), or -1 for a null
    parent; parents not seen yet are kept by name in ``late_parents``.
    """

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.by_id: dict[str, int] = {}  # id -> its last occurrence
        # Four bytes where they are enough (a position, a line's size, number or part
        # count): the index is most of what a large transcript costs in memory.
        self.parents = array("i")
        self.late_parents: dict[int, str] = {}
        self.kinds = bytearray()
        self.entry_ids: list[str | None] = []  # envelope ids (what becomes transcript_entry_id)
        self.offsets = array("q")
        self.lengths = array("I")
        self.lines = array("I")
        self.parts = array("I")  # a message's part count (0 for other records)

    def add(
        self,
        tree_id: str | None,
        parent: str | None,
        kind: int,
        entry_id: str | None,
        offset: int,
        length: int,
        number: int,
        parts: int = 0,
    ) -> None:
        position = len(self.kinds)
        if parent is None:
            self.parents.append(-1)
        else:
            known = self.by_id.get(parent)
            if known is None:
                self.parents.append(-2)
                self.late_parents[position] = parent
            else:
                self.parents.append(known)
        if tree_id is not None:
            self.by_id[tree_id] = position
        self.ids.append(tree_id)
        self.kinds.append(kind)
        self.entry_ids.append(entry_id)
        self.offsets.append(offset)
        self.lengths.append(length)
        self.lines.append(number)
        self.parts.append(parts)

    def parent_of(self, position: int) -> int | None:
        """The record a record's parent id resolves to; -1 for a root, None if dangling."""
        ref = self.parents[position]
        if ref == -1:
            return -1
        name = self.late_parents.get(position) if ref == -2 else self.ids[ref]
        return self.by_id.get(name) if name is not None else None


def _scan_lines(scan: Transcript, handle: IO[bytes]) -> None:
    index = _Index()
    add = index.add
    # _Index.add for a message, inline (the hot path): its columns' appends.
    by_id, late_parents = index.by_id, index.late_parents
    add_parent, add_id, add_kind = index.parents.append, index.ids.append, index.kinds.append
    add_entry_id, add_offset = index.entry_ids.append, index.offsets.append
    add_length, add_line, add_parts = index.lengths.append, index.lines.append, index.parts.append
    skipped = scan.skipped
    structural = scan.structural
    scan_once = _SHAPE_SCAN
    parsed = scan._parsed
    space = _JS_SPACE
    seen_content = False
    for offset, length, number, data, newline in _physical_lines(handle, scan.size_bytes):
        if data is None:
            seen_content = True
            skipped.append(SkippedLine(number, "truncated_last_line" if not newline else "binary"))
            continue
        try:
            trimmed = data.decode("utf-8").strip(space)
            replaced = False
        except UnicodeDecodeError:
            trimmed = data.decode("utf-8", "replace").strip(space)
            replaced = True
        if not trimmed:
            continue
        first = not seen_content
        seen_content = True
        if first and trimmed[0] == "[":
            scan.mode = "json-array"
            _scan_array(scan, handle, offset, number)
            return
        # JSONDecoder.decode without its wrapper: the text is trimmed, so the value must
        # end exactly at its end.
        try:
            if parsed is None:
                entry, end = scan_once(trimmed, 0)
                valid = end == len(trimmed)
            else:
                # The same text and the same validity; numbers and key order as building
                # needs them (the scan itself reads neither).
                entry = _js_parse_line(data, trimmed)
                valid = True
        except RecursionError:
            skipped.append(SkippedLine(number, "too_deep"))
            continue
        except (ValueError, StopIteration):
            valid = False
        if not valid:
            if not newline:
                reason = "truncated_last_line"
            elif replaced:
                reason = "not_utf8"
            else:
                reason = "invalid_json"
            skipped.append(SkippedLine(number, reason))
            continue
        if data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH and _too_deep(entry):
            skipped.append(SkippedLine(number, "too_deep"))
            continue
        if not isinstance(entry, dict):
            skipped.append(SkippedLine(number, "not_an_object"))
            continue
        get = entry.get
        kind = get("type")
        if kind == "session":
            if first:
                scan.header_id = _envelope_string(get("id"))
                scan.header_span = (offset, length)
            structural["session"] = structural.get("session", 0) + 1
            continue
        value = get("id")
        tree_id = value.strip(space) or None if isinstance(value, str) else None
        if tree_id is None:
            tree_id = _envelope_string(get("uuid"))
        # _message_of, inline: the entry itself, or the message of a message envelope.
        message = None
        enveloped = False
        if isinstance(get("role"), str) and (
            "content" in entry or ("command" in entry and "output" in entry)
        ):
            message = entry
        elif "message" in entry and ("type" not in entry or kind == "message"):
            inner = entry["message"]
            if (
                isinstance(inner, dict)
                and isinstance(inner.get("role"), str)
                and ("content" in inner or ("command" in inner and "output" in inner))
            ):
                message = inner
                enveloped = True
        if message is not None or tree_id is not None:
            value = get("parentId")
            parent = value.strip(space) or None if isinstance(value, str) else None
            if parent is None:
                parent = _envelope_string(get("parentUuid"))
        if message is not None:
            if message["role"] in PERSISTABLE_ROLES:
                content = message.get("content")
                parts = len(content) if type(content) is list and content else _part_count(message)
                if parent is None:
                    add_parent(-1)
                else:
                    known = by_id.get(parent)
                    if known is None:
                        add_parent(-2)
                        late_parents[len(index.kinds)] = parent
                    else:
                        add_parent(known)
                if tree_id is not None:
                    by_id[tree_id] = len(index.kinds)
                if parsed is not None:
                    envelope_ts = _envelope_string(get("timestamp")) if enveloped else None
                    parsed[len(index.kinds)] = (message, tree_id if enveloped else None, envelope_ts)
                add_id(tree_id)
                add_kind(_K_MESSAGE)
                add_entry_id(tree_id if enveloped else None)
                add_offset(offset)
                add_length(length)
                add_line(number)
                add_parts(parts)
                if replaced:
                    scan.warnings.append(SkippedLine(number, "not_utf8_replaced"))
            else:
                add(tree_id, parent, _K_OTHER_ROLE, None, offset, length, number)
                skipped.append(SkippedLine(number, "unsupported_role"))
            continue
        if tree_id is not None:
            code = _K_SETTINGS.get(kind, _K_ENTRY) if isinstance(kind, str) else _K_ENTRY
            add(tree_id, parent, code, None, offset, length, number)
        if isinstance(kind, str) and kind in STRUCTURAL_ENTRY_TYPES and "message" not in entry:
            structural[kind] = structural.get(kind, 0) + 1
        else:
            skipped.append(SkippedLine(number, _why_not_message(entry)))
    _choose(scan, index)


def _part_count(message: dict[str, Any]) -> int:
    """How many part rows :func:`build_message` makes for a message (§6.6)."""
    if "content" not in message:
        return 1
    content = message["content"]
    if not isinstance(content, list):
        return 1
    if content:
        return len(content)
    # An empty array: one part for a top-level reasoning_content, if any.
    return 1 if message["role"] == "assistant" and _top_level_reasoning("assistant", message) else 0


def _too_deep(value: Any) -> bool:
    """True for JSON nested deeper than we read safely (the reference has no such limit)."""
    return nests_deeper(value, MAX_JSON_DEPTH)


def _choose(scan: Transcript, index: _Index) -> None:
    """§3.4: the active leaf path when every record has an id, else every message in order."""
    count = len(index.kinds)
    scan.all_ids = count > 0 and all(tree_id is not None for tree_id in index.ids)
    walk: array[int] | None = None
    if count == 0:
        scan.flatten_reason = "no_records"
    elif not scan.all_ids:
        scan.flatten_reason = "missing_ids"
    else:
        walk, scan.flatten_reason = _leaf_path(index)
    scan.leaf_path = walk is not None
    chosen: list[int]
    if walk is not None:
        # The messages off the path: the kinds with the path's records blanked out, then
        # found by a byte search (usually there are none).
        off_path = bytearray(index.kinds)
        for i in walk:
            off_path[i] = 0
        i = off_path.find(_K_MESSAGE)
        while i != -1:
            superseded = index.by_id[index.ids[i] or ""] != i
            reason = "duplicate_entry_id" if superseded else "abandoned_branch"
            scan.skipped.append(SkippedLine(index.lines[i], reason))
            i = off_path.find(_K_MESSAGE, i + 1)
        # Root-to-leaf order is usually file order, but a re-appended (duplicate) id
        # can put an ancestor after its child in the file.
        kinds = index.kinds
        path = array("q", reversed(walk))
        chosen = [i for i in path if kinds[i] == _K_MESSAGE]
    else:
        chosen = []
        path = array("q")
        seen: set[str] = set()
        for i in range(count):
            if index.kinds[i] != _K_MESSAGE:
                path.append(i)
                continue
            entry_id = index.entry_ids[i]
            if entry_id is not None:
                if entry_id in seen:
                    scan.skipped.append(SkippedLine(index.lines[i], "duplicate_entry_id"))
                    continue
                seen.add(entry_id)
            chosen.append(i)
            path.append(i)
    scan._path, scan._kinds = path, index.kinds
    # The transcript keeps the per-record columns it reads back and the chosen positions.
    scan._chosen = array("q", chosen)
    scan._offsets, scan._lengths, scan._lines = index.offsets, index.lengths, index.lines
    scan._entry_ids, scan._parts = index.entry_ids, index.parts
    scan.candidate_count = len(scan._chosen)


def _leaf_path(index: _Index) -> tuple[array[int] | None, str | None]:
    """The records from the last one up to a root, leaf first (None: flatten, and why)."""
    visited = bytearray(len(index.kinds))
    walk = array("q")
    current = len(index.kinds) - 1
    while True:
        if visited[current]:
            return None, "cycle"
        visited[current] = 1
        walk.append(current)
        parent = index.parent_of(current)
        if parent == -1:
            return walk, None
        if parent is None:
            return None, "dangling_parent"
        current = parent


# --- JSON-array files ------------------------------------------------------


class _ArrayError(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def _array_elements(handle: IO[bytes], limit: int, first_line: int) -> Iterator[tuple[int, int, Any]]:
    """Stream the elements of one top-level JSON array: (line, UTF-8 size, value).

    Raises _ArrayError (with the line of the fault) where ``JSON.parse`` of the whole
    text would throw; the caller must then discard the elements already yielded.
    Memory holds one element (plus a read chunk), never the whole array.
    """
    reader = _ArrayReader(handle, limit, first_line)
    reader.skip(_JS_SPACE)  # the reference trims the text before parsing it
    if reader.peek() != "[":
        raise _ArrayError(reader.line_here())
    reader.pos += 1
    reader.skip(_JSON_SPACE)
    if reader.peek() == "]":
        reader.pos += 1
    else:
        while True:
            reader.skip(_JSON_SPACE)
            line = reader.line_here()
            value, size = reader.element(line)
            yield line, size, value
            reader.skip(_JSON_SPACE)
            mark = reader.peek()
            reader.pos += 1
            if mark == "]":
                break
            if mark != ",":
                raise _ArrayError(line if mark == "" else reader.line_here())
    reader.skip(_JS_SPACE)
    if reader.peek() != "":
        raise _ArrayError(reader.line_here())


_JSON_SPACE = " \t\n\r"


class _ArrayReader:
    """A sliding text window over a byte range, decoded as Node decodes UTF-8."""

    def __init__(self, handle: IO[bytes], limit: int, first_line: int) -> None:
        self.handle = handle
        self.remaining = limit
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.buffer = ""
        self.pos = 0
        self.line = first_line  # line number of buffer[0]
        self.eof = False

    def more(self, at_least: int = _CHUNK) -> bool:
        """Drop the consumed text and append at least one more chunk; False at the end."""
        if self.eof:
            return False
        self.line += self.buffer.count("\n", 0, self.pos)
        self.buffer = self.buffer[self.pos :]
        self.pos = 0
        while True:
            data = self.handle.read(min(max(at_least, _CHUNK), self.remaining)) if self.remaining > 0 else b""
            self.remaining -= len(data)
            if not data:
                self.buffer += self.decoder.decode(b"", final=True)
                self.eof = True
                return False
            text = self.decoder.decode(data)
            if text:
                self.buffer += text
                return True

    def peek(self) -> str:
        if self.pos >= len(self.buffer) and not self.more():
            return self.buffer[self.pos : self.pos + 1]
        return self.buffer[self.pos]

    def skip(self, chars: str) -> None:
        while True:
            rest = self.buffer[self.pos :].lstrip(chars) if self.pos < len(self.buffer) else ""
            self.pos = len(self.buffer) - len(rest)
            if rest or not self.more():
                return

    def line_here(self) -> int:
        return self.line + self.buffer.count("\n", 0, self.pos)

    def element(self, line: int) -> tuple[Any, int]:
        decoder = _decoder(True, True)
        while True:
            try:
                value, end = decoder.raw_decode(self.buffer, self.pos)
            except RecursionError as exc:
                raise _ArrayError(line) from exc
            except json.JSONDecodeError as exc:
                # Only an error at the window's edge can be cured by reading on.
                near_end = exc.pos >= len(self.buffer) - 16 or exc.msg.startswith("Unterminated string")
                if not near_end or not self.more(2 * len(self.buffer)):
                    raise _ArrayError(line) from exc
                continue
            if end >= len(self.buffer) and self.more(2 * len(self.buffer)):
                continue  # a number (or anything) at the window's edge may go on
            size = len(self.buffer[self.pos : end].encode("utf-8", "surrogatepass"))
            self.pos = end
            return value, size


def _scan_array(scan: Transcript, handle: IO[bytes], offset: int, number: int) -> None:
    """§3.1 JSON-array mode: bare message elements only, no ids, all or nothing."""
    scan._array_start = offset
    scan._array_line = number
    handle.seek(offset)
    # (line, skip reason or None when chosen, UTF-8 size, part count)
    found: list[tuple[int, str | None, int, int]] = []
    try:
        for line, size, value in _array_elements(handle, scan.size_bytes - offset, number):
            if _too_deep(value):
                found.append((line, "too_deep", 0, 0))
            elif not isinstance(value, dict):
                found.append((line, "not_an_object", 0, 0))
            elif not _is_message_shaped(value):
                why = "array_envelope_entry" if "message" in value else _why_not_message_shaped(value)
                found.append((line, why, 0, 0))
            elif value["role"] not in PERSISTABLE_ROLES:
                found.append((line, "unsupported_role", 0, 0))
            else:
                found.append((line, None, size, _part_count(value)))
    except _ArrayError as error:
        scan.skipped.extend(SkippedLine(line, "invalid_json_array") for line, *_ in found)
        scan.skipped.append(SkippedLine(error.line, "invalid_json"))
        scan.flatten_reason = "json_array"
        return
    scan.flatten_reason = "json_array"
    lines, lengths, parts_counts = array("q"), array("q"), array("q")
    for position, (line, reason, size, parts) in enumerate(found):
        if reason is None:
            scan._array_chosen.add(position)
            lines.append(line)
            lengths.append(size)
            parts_counts.append(parts)
        else:
            scan.skipped.append(SkippedLine(line, reason))
    scan.candidate_count = len(scan._array_chosen)
    scan._lines, scan._lengths, scan._parts = lines, lengths, parts_counts
    scan._entry_ids = [None] * scan.candidate_count
    scan._chosen = array("q", range(scan.candidate_count))
