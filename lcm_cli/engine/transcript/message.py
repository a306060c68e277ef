"""Building one message's row and part rows from its parsed object, as lossless-claw does
(docs/reference/migrate-sessions.md §6.3 row values, §6.4 token rule, §6.6 parts; docs/reference/database.md
§5 hashes, §7 token estimate).
"""

from __future__ import annotations

import json
from typing import Any

from lcm_cli.engine.core.identity import canonical_identity_content, hash_canonical
from lcm_cli.engine.core.jscompat import ABSENT as _ABSENT
from lcm_cli.engine.core.jscompat import bool_or_none as _bool_or_none
from lcm_cli.engine.core.jscompat import first_str as _first_str
from lcm_cli.engine.core.jscompat import is_blank as _is_blank
from lcm_cli.engine.core.jscompat import is_number as _is_number
from lcm_cli.engine.core.jscompat import js_string as _js_string
from lcm_cli.engine.core.jscompat import str_or_none as _str_or_none
from lcm_cli.engine.core.jscompat import stringify as _stringify
from lcm_cli.engine.core.jscompat import trim as _trim
from lcm_cli.engine.core.jscompat import try_parse as _try_parse
from lcm_cli.engine.core.jscompat import utf8_safe as _utf8_safe
from lcm_cli.engine.core.tokens import estimate_tokens
from lcm_cli.engine.transcript.dates import message_created_at
from lcm_cli.engine.transcript.records import PERSISTABLE_ROLES, TranscriptMessage
from lcm_cli.engine.transcript.text import stored_content_text

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
        return _non_object_part(block, prefix, call_id, tool_name)
    get = block.get
    own_type = get("type")
    block_type = own_type if isinstance(own_type, str) else "agent"
    block_text = get("text")
    text = block_text if isinstance(block_text, str) else _fallback_text(block, block_type)
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
        call_id, tool_name, tool_input, tool_output, input_value, output_value = _tool_fields(
            block, part_type, call_id, tool_name
        )
    if not keys.isdisjoint(_EXTERNALIZED_KEYS):
        prefix = _externalized_prefix(block, fields, ordinal)
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
    token_call_id, token_name, token_input, token_value = _token_tool_fields(
        block, call_id, tool_name, tool_input, input_value
    )
    if role == "toolResult" or raw_type == "function_call_output":
        result = _tool_result_block(raw_type, raw, token_call_id, token_name, text, tool_output, output_value)
        plain = result["text"] if result["type"] == "text" else None
        return row, (_stringify(result), plain)
    return row, (
        _tool_call_json(ordinal, raw_type, token_call_id, token_name, token_input, token_value),
        None,
    )


def _non_object_part(
    block: Any, prefix: str, call_id: str | None, tool_name: str | None
) -> tuple[_PartRow, _TokenBlock]:
    """The part of a block that is not an object: an "agent" part replaying it raw; the
    estimate counts a list as itself and anything else as a text block of the metadata."""
    raw_json = _stringify(block)
    metadata = f'{prefix},"rawType":"agent","raw":{raw_json}}}'
    row = _part_row("agent", None, call_id, tool_name, None, None, metadata)
    if isinstance(block, list):
        return row, (raw_json, None)
    return row, (_TEXT_BLOCK_OPEN + _stringify(metadata) + "}", metadata)


def _fallback_text(block: dict[str, Any], block_type: str) -> str | None:
    """A block's text when its ``text`` is not a string: its ``thinking``, else a
    reasoning block's summary."""
    text = block.get("thinking")
    if isinstance(text, str):
        return text
    return _reasoning_summary(block) if block_type in ("reasoning", "thinking") else None


# A part's tool columns: call id, tool name, input and output (as stored), and the values
# behind input and output as found in the block (ABSENT when none).
_ToolFields = tuple["str | None", "str | None", "str | None", "str | None", Any, Any]


def _tool_fields(
    block: dict[str, Any], part_type: str, call_id: str | None, tool_name: str | None
) -> _ToolFields:
    """The tool columns a block sets itself; ``call_id``/``tool_name`` (the message's)
    stand where it sets none."""
    own_call_id = _first_str(block, "toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id")
    if own_call_id is None and part_type == "tool":
        own_call_id = _str_or_none(block.get("id"))
    own_name = _first_str(block, "name", "toolName", "tool_name")
    input_value, tool_input = _first_member(block, ("input", "arguments", "toolInput"), "tool_input")
    output_value, tool_output = _first_member(block, ("output", "toolOutput"), "tool_output")
    return (
        call_id if own_call_id is None else own_call_id,
        tool_name if own_name is None else own_name,
        tool_input,
        tool_output,
        input_value,
        output_value,
    )


def _first_member(block: dict[str, Any], keys: tuple[str, ...], text_key: str) -> tuple[Any, str | None]:
    """The first of ``keys`` the block has, as (value, its JSON); else (ABSENT, the
    string under ``text_key`` or None)."""
    for key in keys:
        if key in block:
            value = block[key]
            return value, _stringify(value)
    return _ABSENT, _str_or_none(block.get(text_key))


def _externalized_prefix(block: dict[str, Any], fields: _Fields, ordinal: int) -> str:
    """The metadata prefix of a block carrying externalization fields: the message's
    fields plus the block's own, as an unclosed JSON object."""
    get = block.get
    extra = fields.as_dict(ordinal == 0)
    _put(extra, "externalizedFileId", _str_or_none(get("externalizedFileId")))
    size = get("originalByteSize")
    _put(extra, "originalByteSize", size if _is_number(size) else None)
    _put(extra, "imageExternalized", _bool_or_none(get("imageExternalized")))
    _put(extra, "toolOutputExternalized", _bool_or_none(get("toolOutputExternalized")))
    _put(extra, "externalizationReason", _str_or_none(get("externalizationReason")))
    return _stringify(extra)[:-1]


def _token_tool_fields(
    block: dict[str, Any],
    call_id: str | None,
    tool_name: str | None,
    tool_input: str | None,
    input_value: Any,
) -> tuple[str | None, str | None, str | None, Any]:
    """The call id, name, input and input value the assembler rebuilds a tool block from:
    the part's columns, with a missing one taken from the raw block."""
    get = block.get
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
    return token_call_id, token_name, token_input, token_value


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
        content = stored_content_text(message["content"])
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
        message_created_at(message, envelope_timestamp),
        hash_canonical(stored_role, safe_canonical),
        canonical,
        _sender_metadata(role, message),
        parts,
        byte_size,
    )


def part_count(message: dict[str, Any]) -> int:
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
