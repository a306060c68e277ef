"""Message identity: the canonical form of user content and the hashes built on it.

lossless-claw identifies a stored message by ``identity_hash`` (database.md §5): a
SHA-256 over the role, a NUL byte and the content, where ``user`` content that opens
with OpenClaw's inbound "untrusted metadata" blocks is first canonicalized (volatile
keys such as ``message_id`` and ``timestamp`` dropped, JSON re-serialized with sorted
keys, a chat-history recap removed), so the same user turn delivered twice hashes
alike. The bootstrap checkpoint's ``last_processed_entry_hash`` hashes the same
canonical content as compact JSON. The transcript importer, the write store and
runtime ingest all hash through this module.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

from lcm_cli.engine.core.jscompat import (
    JS_SPACE,
    JS_SPACE_CLASS,
    collation_key,
    is_blank,
    js_ordered,
    stringify,
    trim_start,
    try_parse,
    utf8_safe,
)

_NOT_SPACE = f"[^{JS_SPACE_CLASS}]"
_CONVERSATION_INFO = "Conversation info (untrusted metadata)"
_SENDER_INFO = "Sender (untrusted metadata)"
_METADATA_HEADINGS = (_CONVERSATION_INFO + ":", _SENDER_INFO + ":")
_RECAP_HEADERS = (
    "Chat history since last reply (untrusted, for context):",
    "Conversation context (untrusted, chronological, selected for current message):",
)
_CONTEXT_HEADINGS = (
    "Thread starter (untrusted, for context)",
    "Reply chain of current user message (untrusted, nearest first)",
    "Reply target of current user message (untrusted, for context)",
    "Forwarded message context (untrusted metadata)",
    "Location (untrusted metadata)",
)
_CONTEXT_HEADINGS_COLON = tuple(h + ":" for h in _CONTEXT_HEADINGS)
_RECAP_LINE_ID = re.compile(f"#{_NOT_SPACE}+ ")
_RECAP_LINE_TIME = re.compile(
    f"[A-Za-z]{{3}} [0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}} [0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}} {_NOT_SPACE}+ "
)
_DELIVERY_PRELUDE = re.compile(r"Delivery:[\s\S]*?\r?\n\r?\n(?=Conversation info \(untrusted metadata\):)")
_METADATA_SEPARATOR = re.compile(r"[ \t]*(?:\r?\n)(?:[ \t]*(?:\r?\n))?")

_CONVERSATION_INFO_KEYS = frozenset(
    {
        "chat_id",
        "message_id",
        "reply_to_id",
        "sender_id",
        "conversation_label",
        "sender",
        "timestamp",
        "group_subject",
        "group_channel",
        "group_space",
        "group_members",
        "thread_label",
        "inbound_event_kind",
        "topic_id",
        "topic_name",
        "is_forum",
        "mention_reason",
        "mention_target",
        "mentioned_user_ids",
        "mentioned_usernames",
        "has_reply_context",
        "has_forwarded_context",
        "has_thread_starter",
        "history_count",
        "history_media_count",
        "history_truncated",
    }
)
_SENDER_INFO_KEYS = frozenset({"label", "id", "name", "username", "tag", "e164"})
_VOLATILE_KEYS = frozenset({"message_id", "reply_to_id", "timestamp"})
_VOLATILE_KEYS_WITH_HISTORY = _VOLATILE_KEYS | {"history_count", "history_media_count", "history_truncated"}
_RECAP_ENTRY_KEYS = frozenset({"sender", "timestamp_ms", "message_id", "body", "media"})


def canonical_identity_content(role: str, content: str) -> str:
    """User content with OpenClaw's volatile inbound metadata normalized (database.md §5).

    Only ``user`` content that opens (after an optional ``Delivery:`` prelude) with a
    "Conversation info (untrusted metadata)" fenced-JSON block changes: its volatile keys
    are dropped and the JSON is re-serialized with sorted keys, a following "Sender
    (untrusted metadata)" block is re-serialized, and a chat-history recap is removed.
    Everything else is returned unchanged.
    """
    if role != "user" or "(untrusted metadata)" not in content:
        return content
    prelude, candidate = _split_delivery_prelude(content)
    candidate = trim_start(candidate)
    match = _fenced_json(candidate, _METADATA_HEADINGS)
    if match is None or match[0] != 0:
        return content
    record = _metadata_record(_CONVERSATION_INFO, match[1])
    if record is None:
        return content
    has_history = _has_history(record)
    conversation_json = _canonical_metadata_json(
        record, _VOLATILE_KEYS_WITH_HISTORY if has_history else _VOLATILE_KEYS
    )
    if conversation_json is None:
        return content
    remaining = candidate[match[2] :]
    blocks = [_format_metadata_block(_CONVERSATION_INFO, conversation_json)]
    sender_candidate = trim_start(remaining)
    sender_match = _fenced_json(sender_candidate, _METADATA_HEADINGS)
    sender_json = _sender_json(sender_match[1]) if sender_match is not None and sender_match[0] == 1 else None
    if sender_match is not None and sender_json is not None:
        after_blocks = sender_candidate[sender_match[2] :]
        blocks.append(_format_metadata_block(_SENDER_INFO, sender_json))
    else:
        after_blocks = remaining
    if has_history:
        context_text, rest = _split_context_blocks(after_blocks)
        recap_candidate = trim_start(rest)
        recap_length = _match_recap(recap_candidate)
        if recap_length > 0:
            context_prefix = _strip_separator(context_text).rstrip(JS_SPACE)
            after_recap = _strip_separator(recap_candidate[recap_length:])
            if context_prefix:
                remaining = (
                    f"{context_prefix}\n\n{after_recap}" if not is_blank(after_recap) else context_prefix
                )
            else:
                remaining = after_recap
        else:
            remaining = _strip_separator(after_blocks)
    else:
        remaining = _strip_separator(after_blocks)
    if is_blank(remaining):
        return content
    return prelude + "\n\n".join(blocks) + "\n\n" + remaining


def _fenced_json(text: str, headings: tuple[str, ...]) -> tuple[int, str, int] | None:
    """A fenced JSON block opening ``text``: (which heading, the body, where it ends).

    What the reference's regex gives (heading, line break, a json code fence, line
    break, then a lazy body up to a line break and the closing fence), done with string
    methods: a line break is LF or CRLF, and the body ends at the first LF followed by
    three backticks, less a CR just before it. No heading is a prefix of another.
    """
    which = next((i for i, heading in enumerate(headings) if text.startswith(heading)), -1)
    if which < 0:
        return None
    position = len(headings[which])
    for part in ("\n", "```json", "\n"):
        if part == "\n" and text.startswith("\r\n", position):
            position += 2
        elif text.startswith(part, position):
            position += len(part)
        else:
            return None
    close = text.find("\n```", position)
    if close == -1:
        return None
    body_end = close - 1 if close > position and text[close - 1] == "\r" else close
    return which, text[position:body_end], close + 4


def _split_delivery_prelude(content: str) -> tuple[str, str]:
    trimmed = trim_start(content)
    if trimmed.startswith(_CONVERSATION_INFO + ":"):
        return "", trimmed
    match = _DELIVERY_PRELUDE.match(trimmed)
    if match is None:
        return "", trimmed
    return match.group(0), trimmed[match.end() :]


def _metadata_record(heading: str, body: str) -> dict[str, Any] | None:
    parsed = try_parse(body)
    if not isinstance(parsed, dict):
        return None
    known = (
        _CONVERSATION_INFO_KEYS
        if heading == _CONVERSATION_INFO
        else _SENDER_INFO_KEYS
        if heading == _SENDER_INFO
        else None
    )
    if known is None or not any(key in known for key in parsed):
        return None
    return parsed


def _has_history(record: dict[str, Any]) -> bool:
    count = record.get("history_count")
    return isinstance(count, int) and not isinstance(count, bool) and count > 0


def _canonical_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_canonical_value(item) for item in value]
    if isinstance(value, dict):
        return js_ordered(
            sorted(
                ((key, _canonical_value(item)) for key, item in value.items()),
                key=lambda entry: collation_key(entry[0]),
            )
        )
    return value


def _canonical_metadata_json(record: dict[str, Any], volatile: frozenset[str]) -> str | None:
    entries = [(key, _canonical_value(value)) for key, value in record.items() if key not in volatile]
    if not entries:
        return None
    entries.sort(key=lambda entry: collation_key(entry[0]))
    return stringify(js_ordered(entries))


@functools.lru_cache(maxsize=64)
def _sender_json(body: str) -> str | None:
    """The canonical JSON of a "Sender (untrusted metadata)" block's body, or None.

    Memoized (it is a pure function of the body): a sender's block repeats verbatim from
    turn to turn, unlike the conversation block before it, whose ids and time change.
    """
    record = _metadata_record(_SENDER_INFO, body)
    return _canonical_metadata_json(record, frozenset()) if record is not None else None


def _format_metadata_block(heading: str, body: str) -> str:
    return f"{heading}:\n```json\n{body}\n```"


def _strip_separator(text: str) -> str:
    match = _METADATA_SEPARATOR.match(text)
    return text[match.end() :] if match else text


def _split_context_blocks(text: str) -> tuple[str, str]:
    remaining = text
    blocks = ""
    while True:
        candidate = trim_start(remaining)
        leading = remaining[: len(remaining) - len(candidate)]
        match = _fenced_json(candidate, _CONTEXT_HEADINGS_COLON)
        if match is None or not isinstance(try_parse(match[1]), (dict, list)):
            return blocks, remaining
        blocks += leading + candidate[: match[2]]
        remaining = candidate[match[2] :]


def _match_recap(candidate: str) -> int:
    match = _fenced_json(candidate, _RECAP_HEADERS)
    if match is not None:
        parsed = try_parse(match[1])
        valid = (
            isinstance(parsed, list)
            and len(parsed) > 0
            and all(
                isinstance(entry, dict) and any(key in _RECAP_ENTRY_KEYS for key in entry) for entry in parsed
            )
        )
        return match[2] if valid else 0
    return _match_recap_lines(candidate)


def _match_recap_lines(candidate: str) -> int:
    # The prose form: one "<#id> <timestamp> sender: text" line per entry, ending at a
    # blank line or the end of the content; anything else voids the whole match.
    header = next((h for h in _RECAP_HEADERS if candidate.startswith(h)), None)
    if header is None:
        return 0
    cursor = len(header)
    if candidate.startswith("\r\n", cursor):
        cursor += 2
    elif candidate.startswith("\n", cursor):
        cursor += 1
    else:
        return 0
    matched_end = -1
    while cursor < len(candidate):
        newline = candidate.find("\n", cursor)
        line_end = len(candidate) if newline == -1 else newline
        if line_end > cursor and candidate[line_end - 1] == "\r":
            line_end -= 1
        if not _is_recap_entry_line(candidate[cursor:line_end]):
            break
        matched_end = line_end
        if newline == -1:
            break
        cursor = newline + 1
    if matched_end < 0:
        return 0
    rest = candidate[matched_end:]
    terminated = rest in ("", "\n", "\r\n") or rest.startswith(("\n\n", "\n\r\n", "\r\n\n", "\r\n\r\n"))
    return matched_end if terminated else 0


def _has_sender_and_text(remainder: str) -> bool:
    separator = remainder.find(": ", 1)
    return separator != -1 and separator + 2 < len(remainder)


def _is_recap_entry_line(line: str) -> bool:
    id_match = _RECAP_LINE_ID.match(line)
    if id_match is not None:
        after_id = line[id_match.end() :]
        time_match = _RECAP_LINE_TIME.match(after_id)
        if time_match is not None and _has_sender_and_text(after_id[time_match.end() :]):
            return True
        return _has_sender_and_text(after_id)
    time_match = _RECAP_LINE_TIME.match(line)
    return time_match is not None and _has_sender_and_text(line[time_match.end() :])


def entry_hash(role: str, content: str) -> str:
    """The ``last_processed_entry_hash`` of a stored message (database.md §5)."""
    return entry_hash_canonical(role, canonical_identity_content(role, content))


def entry_hash_canonical(role: str, canonical: str) -> str:
    # JSON.stringify({role, content}), put together from its serialized members.
    text = '{"role":' + stringify(role) + ',"content":' + stringify(canonical) + "}"
    return hashlib.sha256(text.encode()).hexdigest()


def identity_hash(role: str, content: str) -> str:
    """The ``identity_hash`` of a stored message, user-metadata canonicalization included."""
    return hash_canonical(role, utf8_safe(canonical_identity_content(role, content)))


def hash_canonical(role: str, canonical: str) -> str:
    """Hex SHA-256 of role, a NUL byte, then already-canonicalized ``canonical`` content."""
    return hashlib.sha256(f"{role}\x00{canonical}".encode()).hexdigest()
