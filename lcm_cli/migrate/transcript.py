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
import functools
import hashlib
import json
import math
import os
import re
import stat
import time
import unicodedata
from array import array
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from typing import IO, Any, NamedTuple

from lcm_cli.engine.errors import LcmError
from lcm_cli.engine.store import message_identity_hash
from lcm_cli.engine.tokens import estimate_tokens

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
    entry_hash: str
    sender_metadata: str | None
    parts: list[dict[str, str | None]]
    byte_size: int

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


PERSISTABLE_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})
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
# JavaScript semantics the reference relies on
# ==========================================================================

# String.prototype.trim() strips exactly these; Python's str.strip() differs (it also
# strips U+001C-U+001F and U+0085, and keeps U+FEFF).
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPACE_CLASS = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"


def _trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def _trim_start(text: str) -> str:
    return text.lstrip(_JS_SPACE)


def _is_blank(text: str) -> bool:
    return not text.strip(_JS_SPACE)


class _JsNumber:
    """A JSON number whose JavaScript spelling Python's float repr cannot produce.

    Only tiny non-integral values (below 1e-4, which JavaScript writes positionally
    down to 1e-6 and with a one-digit exponent below) and overflowing literals
    (Infinity, which JSON.stringify writes as null) need it.
    """

    __slots__ = ("text", "value")

    def __init__(self, value: float) -> None:
        self.value = value
        self.text = _js_number_text(value)


def _js_number_text(value: float) -> str:
    """ECMAScript Number::toString for a finite double; ``null`` for non-finite (as JSON)."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mark = "+" if e >= 0 else "-"
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + mark + str(abs(e))
    return sign + body


def _parse_float(text: str) -> Any:
    # JavaScript has one number type: integral values print without ".0", so they
    # become ints here (exactly as JS would spell them once past 2**53).
    value = float(text)
    if math.isfinite(value) and value.is_integer():
        if abs(value) < 9007199254740992.0:
            return int(value)
        if abs(value) < 1e21:
            return int(_js_number_text(value))
        return value
    if math.isfinite(value) and abs(value) >= 1e-4:
        return value
    return _JsNumber(value)


def _parse_big_int(text: str) -> Any:
    if len(text) < 16:
        return int(text)
    return _parse_float(text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_MAX_ARRAY_INDEX = 4294967294


def _is_array_index(key: str) -> bool:
    return (
        key.isascii()
        and key.isdigit()
        and (key == "0" or key[0] != "0")
        and len(key) <= 10
        and int(key) <= _MAX_ARRAY_INDEX
    )


def _js_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JavaScript objects list integer-like keys first, ascending, then the rest in
    # insertion order; a repeated key keeps its first position and its last value.
    obj = dict(pairs)
    if any(_is_array_index(key) for key in obj):
        return _js_ordered(obj.items())
    return obj


def _js_ordered(items: Any) -> dict[str, Any]:
    entries = list(items)
    index = sorted((e for e in entries if _is_array_index(e[0])), key=lambda e: int(e[0]))
    rest = [e for e in entries if not _is_array_index(e[0])]
    return dict(index + rest)


_DECODERS: dict[tuple[bool, bool], json.JSONDecoder] = {}


def _decoder(ordered: bool, big_ints: bool) -> json.JSONDecoder:
    key = (ordered, big_ints)
    found = _DECODERS.get(key)
    if found is None:
        found = json.JSONDecoder(
            parse_float=_parse_float,
            parse_int=_parse_big_int if big_ints else None,
            parse_constant=_reject_constant,
            object_pairs_hook=_js_object if ordered else None,
        )
        _DECODERS[key] = found
    return found


# A quick look at the raw text decides whether the slower JavaScript-faithful decoding
# paths are needed: integer-like object keys, or integers too long for a double.
_SPECIAL_TEXT = re.compile(r'"(?:0|[1-9][0-9]{0,9})"[ \t\n\r]*:|[0-9]{16}')
_INDEX_KEY_TEXT = re.compile(r'"(?:0|[1-9][0-9]{0,9})"[ \t\n\r]*:')
_LONG_DIGITS_TEXT = re.compile(r"[0-9]{16}")


def _js_parse(text: str) -> Any:
    """``JSON.parse(text)``: raises ValueError (or RecursionError) when it would throw."""
    if _SPECIAL_TEXT.search(text) is None:
        return _decoder(False, False).decode(text)
    ordered = _INDEX_KEY_TEXT.search(text) is not None
    big = _LONG_DIGITS_TEXT.search(text) is not None
    return _decoder(ordered, big).decode(text)


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
# The first pass only needs validity and structure, not how numbers print or keys
# order, so it uses the plain (fastest) decoder; only NaN/Infinity must still fail.
_SHAPE_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _js_parse_line(data: bytes, text: str) -> Any:
    """:func:`_js_parse` for a transcript line, deciding the decoding path from its bytes.

    Mapping every digit to 0 turns both rare cases into fixed substrings, which is far
    cheaper than a regex over every line: an integer-like key (``"12":``) and a run
    of 16 digits. (A key written with spaces before its colon is not noticed.)
    """
    folded = data.translate(_DIGITS_TO_ZERO)
    ordered = b'0":' in folded
    big = b"0000000000000000" in folded
    return _decoder(ordered, big).decode(text)


_ABSENT: Any = object()


def _try_parse(text: str) -> Any:
    """``JSON.parse`` in a try block: the value, or ``_ABSENT`` when it would throw."""
    try:
        return _js_parse(text)
    except (ValueError, RecursionError):
        return _ABSENT


_NUMBER_MARK = "\x00\x01lcm-js-number:"
_NUMBER_MARK_JSON = re.compile(r'"\\u0000\\u0001lcm-js-number:([^"\\]*)\\u0001\\u0000"')
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _encode_special(value: Any) -> Any:
    if isinstance(value, _JsNumber):
        return _NUMBER_MARK + value.text + "\x01\x00"
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _make_encoder() -> Callable[[Any], str]:
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_encode_special)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    # The C encoder built once: JSONEncoder.encode rebuilds it on every call, which
    # dominates for the many small objects serialized here. Values come from JSON, so
    # they cannot be circular and no marker table is needed.
    try:
        iterencode = make(
            None, _encode_special, json.encoder.encode_basestring, None, ":", ",", False, False, True
        )
    except TypeError:  # a CPython whose private encoder takes other arguments
        return encoder.encode

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return str(json.encoder.encode_basestring(value))
        return "".join(iterencode(value, 0))

    return encode


_encode = _make_encoder()


def _stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for a value read from JSON."""
    text = _encode(value)
    if "\\u0000\\u0001lcm-js-number:" in text:
        text = _NUMBER_MARK_JSON.sub(lambda m: m.group(1), text)
    if not text.isascii() and _LONE_SURROGATE.search(text):
        # Well-formed JSON.stringify escapes a lone surrogate rather than emitting it.
        text = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _utf8_safe(text: str) -> str:
    """Text as Node writes it out as UTF-8: a lone surrogate becomes U+FFFD."""
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or isinstance(value, _JsNumber)


def _js_string(value: Any) -> str:
    """``String(value)`` for a value read from JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _JsNumber):
        return (
            "Infinity" if value.value == math.inf else "-Infinity" if value.value == -math.inf else value.text
        )
    if isinstance(value, float):
        return _js_number_text(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return ",".join("" if item is None else _js_string(item) for item in value)
    return "[object Object]"


def _str_or_none(value: Any) -> str | None:
    """The reference's ``safeString``: the value if it is a string."""
    return value if isinstance(value, str) else None


def _bool_or_none(value: Any) -> bool | None:
    """The reference's ``safeBoolean``: the value if it is a boolean."""
    return value if isinstance(value, bool) else None


def _first_str(record: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = record.get(key)
        if isinstance(value, str):
            return value
    return None


def _envelope_string(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = _trim(value)
    return trimmed or None


# --- localeCompare --------------------------------------------------------
# Metadata keys are sorted with JavaScript's localeCompare (ICU root collation), not by
# code point: punctuation before digits before letters, case and accents only breaking
# ties. This reproduces that order for ASCII exactly and approximates it beyond.
_ICU_ASCII_ORDER = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789"
_ICU_PRIMARY = {ch: i for i, ch in enumerate(_ICU_ASCII_ORDER)}
# Latin letters that do not decompose but sort with ASCII letters.
_LATIN_EXTRAS = {"ø": "o", "đ": "d", "ł": "l", "ħ": "h", "æ": "ae", "œ": "oe", "þ": "th"}


@functools.lru_cache(maxsize=4096)
def _collation_key(text: str) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[int, ...]]:
    primary: list[Any] = []
    secondary: list[tuple[int, ...]] = []
    tertiary: list[int] = []
    for ch in text:
        if ch in _ICU_PRIMARY:
            weights: list[tuple[int, Any]] = [(0, _ICU_PRIMARY[ch])]
            marks: tuple[int, ...] = ()
            upper = 0
        else:
            decomposed = unicodedata.normalize("NFD", ch) if not ch.isascii() else ch
            base = decomposed[0]
            marks = tuple(ord(m) for m in decomposed[1:])
            upper = 1 if base.isupper() else 0
            folded = _LATIN_EXTRAS.get(base.lower(), base.casefold())
            if folded.isascii() and folded.isalpha():
                # Latin letters, accented or not, sort with their base letters (ß as ss).
                weights = [(2, letter) for letter in folded]
            elif ord(base) < 0x20 or unicodedata.category(base) in ("Cc", "Cf", "Mn"):
                continue  # ignorable at every level
            elif base.isalpha():
                weights = [(3, folded)]
            elif base.isdigit():
                weights = [(1, str(unicodedata.digit(base, 0)))]
            elif unicodedata.category(base) in ("So", "Sm", "Sk"):
                weights = [(0, _ICU_PRIMARY["$"] - 1 + ord(base) / 0x200000)]
            else:
                weights = [(0, _ICU_PRIMARY["$"] - 2 + ord(base) / 0x200000)]
        for i, weight in enumerate(weights):
            primary.append(weight)
            secondary.append(marks if i == 0 else ())
            tertiary.append(upper)
    return tuple(primary), tuple(secondary), tuple(tertiary)


# --- Date -----------------------------------------------------------------
_ZONED = re.compile(r"(?:[zZ]|[+-][0-9]{2}:[0-9]{2})$")
_DATE_TEXT = re.compile(
    r"([+-][0-9]{6}|[0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?"
    r"(?:(?:[Tt]| +)([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# time.gmtime/strftime are fast but pad years below 1000 differently per platform.
_MIN_FAST_SECONDS = -30610224000  # 1000-01-01
_MAX_FAST_SECONDS = 253402300800  # 10000-01-01
_MAX_TIME_MS = 8.64e15


def _sqlite_text(moment: datetime) -> str:
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"


def _date_from_ms(value: float) -> str | None:
    try:
        value = float(value)
        if not math.isfinite(value) or abs(value) > _MAX_TIME_MS:
            return None
        # Date truncates the milliseconds toward zero; the seconds then floor.
        seconds = math.trunc(value) // 1000
        if _MIN_FAST_SECONDS <= seconds < _MAX_FAST_SECONDS:
            return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
        return _sqlite_text(_EPOCH + timedelta(seconds=seconds))
    except (OverflowError, ValueError, OSError):
        return None


def _date_from_text(text: str) -> str | None:
    """What the reference stores for a timestamp string: UTC whole seconds, or None.

    Strings that end in a zone are read as JavaScript's ``Date`` reads ISO-8601 text;
    others get ``Z`` appended (a space before the time becomes ``T``). V8's looser
    legacy forms (month names, slashes) are not recognised and give None.
    """
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
# OpenClaw inbound metadata: the identity canonicalization of user content
# ==========================================================================

_NOT_SPACE = f"[^{_JS_SPACE_CLASS}]"
_CONVERSATION_INFO = "Conversation info (untrusted metadata)"
_SENDER_INFO = "Sender (untrusted metadata)"
_METADATA_BLOCK = re.compile(
    r"(Conversation info \(untrusted metadata\)|Sender \(untrusted metadata\)):\r?\n```json\r?\n([\s\S]*?)\r?\n```"
)
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
_CONTEXT_BLOCK = re.compile(
    "(?:" + "|".join(re.escape(h) for h in _CONTEXT_HEADINGS) + r"):\r?\n```json\r?\n([\s\S]*?)\r?\n```"
)
_RECAP_BLOCK = re.compile(
    "(?:" + "|".join(re.escape(h) for h in _RECAP_HEADERS) + r")\r?\n```json\r?\n([\s\S]*?)\r?\n```"
)
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
    candidate = _trim_start(candidate)
    match = _METADATA_BLOCK.match(candidate)
    if match is None or match.group(1) != _CONVERSATION_INFO:
        return content
    record = _metadata_record(match.group(1), match.group(2))
    if record is None:
        return content
    has_history = _has_history(record)
    conversation_json = _canonical_metadata_json(
        record, _VOLATILE_KEYS_WITH_HISTORY if has_history else _VOLATILE_KEYS
    )
    if conversation_json is None:
        return content
    remaining = candidate[match.end() :]
    blocks = [_format_metadata_block(_CONVERSATION_INFO, conversation_json)]
    sender_candidate = _trim_start(remaining)
    sender_match = _METADATA_BLOCK.match(sender_candidate)
    sender_record = _metadata_record(sender_match.group(1), sender_match.group(2)) if sender_match else None
    sender_json = _canonical_metadata_json(sender_record, frozenset()) if sender_record is not None else None
    if sender_match is not None and sender_match.group(1) == _SENDER_INFO and sender_json is not None:
        after_blocks = sender_candidate[sender_match.end() :]
        blocks.append(_format_metadata_block(_SENDER_INFO, sender_json))
    else:
        after_blocks = remaining
    if has_history:
        context_text, rest = _split_context_blocks(after_blocks)
        recap_candidate = _trim_start(rest)
        recap_length = _match_recap(recap_candidate)
        if recap_length > 0:
            context_prefix = _strip_separator(context_text).rstrip(_JS_SPACE)
            after_recap = _strip_separator(recap_candidate[recap_length:])
            if context_prefix:
                remaining = (
                    f"{context_prefix}\n\n{after_recap}" if not _is_blank(after_recap) else context_prefix
                )
            else:
                remaining = after_recap
        else:
            remaining = _strip_separator(after_blocks)
    else:
        remaining = _strip_separator(after_blocks)
    if _is_blank(remaining):
        return content
    return prelude + "\n\n".join(blocks) + "\n\n" + remaining


def _split_delivery_prelude(content: str) -> tuple[str, str]:
    trimmed = _trim_start(content)
    if trimmed.startswith(_CONVERSATION_INFO + ":"):
        return "", trimmed
    match = _DELIVERY_PRELUDE.match(trimmed)
    if match is None:
        return "", trimmed
    return match.group(0), trimmed[match.end() :]


def _metadata_record(heading: str, body: str) -> dict[str, Any] | None:
    parsed = _try_parse(body)
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
        return _js_ordered(
            sorted(
                ((key, _canonical_value(item)) for key, item in value.items()),
                key=lambda entry: _collation_key(entry[0]),
            )
        )
    return value


def _canonical_metadata_json(record: dict[str, Any], volatile: frozenset[str]) -> str | None:
    entries = [(key, _canonical_value(value)) for key, value in record.items() if key not in volatile]
    if not entries:
        return None
    entries.sort(key=lambda entry: _collation_key(entry[0]))
    return _stringify(_js_ordered(entries))


def _format_metadata_block(heading: str, body: str) -> str:
    return f"{heading}:\n```json\n{body}\n```"


def _strip_separator(text: str) -> str:
    match = _METADATA_SEPARATOR.match(text)
    return text[match.end() :] if match else text


def _split_context_blocks(text: str) -> tuple[str, str]:
    remaining = text
    blocks = ""
    while True:
        candidate = _trim_start(remaining)
        leading = remaining[: len(remaining) - len(candidate)]
        match = _CONTEXT_BLOCK.match(candidate)
        if match is None or not isinstance(_try_parse(match.group(1)), (dict, list)):
            return blocks, remaining
        blocks += leading + match.group(0)
        remaining = candidate[match.end() :]


def _match_recap(candidate: str) -> int:
    match = _RECAP_BLOCK.match(candidate)
    if match is not None:
        parsed = _try_parse(match.group(1))
        valid = (
            isinstance(parsed, list)
            and len(parsed) > 0
            and all(
                isinstance(entry, dict) and any(key in _RECAP_ENTRY_KEYS for key in entry) for entry in parsed
            )
        )
        return match.end() if valid else 0
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
    return _entry_hash(role, canonical_identity_content(role, content))


def _entry_hash(role: str, canonical: str) -> str:
    return hashlib.sha256(_stringify({"role": role, "content": canonical}).encode()).hexdigest()


def identity_hash(role: str, content: str) -> str:
    """The ``identity_hash`` of a stored message, user-metadata canonicalization included."""
    return message_identity_hash(role, _utf8_safe(canonical_identity_content(role, content)))


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
    for item in items:
        text = _structured_text(item, depth + 1)
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


class _Part:
    """One message part as built for storage, plus what block rebuilding needs."""

    __slots__ = (
        "ordinal",
        "part_type",
        "text_content",
        "tool_call_id",
        "tool_name",
        "tool_input",
        "tool_output",
        "input_value",
        "output_value",
        "metadata",
        "original_role",
        "raw_type",
        "raw",
        "raw_json",
    )

    def __init__(self, ordinal: int, part_type: str, text_content: str | None) -> None:
        self.ordinal = ordinal
        self.part_type = part_type
        self.text_content = text_content
        self.tool_call_id: str | None = None
        self.tool_name: str | None = None
        self.tool_input: str | None = None
        self.tool_output: str | None = None
        # The parsed value behind tool_input/tool_output (_ABSENT: parse the text).
        self.input_value: Any = _ABSENT
        self.output_value: Any = _ABSENT
        self.metadata = ""
        self.original_role = ""
        self.raw_type: str | None = None
        self.raw: Any = _ABSENT
        self.raw_json = ""

    def set_metadata(self, fields: dict[str, Any]) -> None:
        self.original_role = fields["originalRole"]
        if "raw" in fields:
            self.raw = fields["raw"]
        self.metadata = _stringify(fields)

    def set_metadata_json(self, prefix: str, role: str, raw_type: str, raw: Any) -> None:
        # ``prefix`` is the serialized leading fields without their closing brace;
        # rawType and raw close the object, so the (possibly large) raw block is
        # serialized once and reused by the token estimate.
        self.original_role = role
        self.raw_type = raw_type
        self.raw = raw
        self.raw_json = _stringify(raw)
        type_json = _TYPE_JSON.get(raw_type) or _stringify(raw_type)
        self.metadata = f'{prefix},"rawType":{type_json},"raw":{self.raw_json}}}'

    def as_row(self) -> dict[str, str | None]:
        return {
            "part_type": self.part_type,
            "text_content": _clean(self.text_content),
            "tool_call_id": _clean(self.tool_call_id),
            "tool_name": _clean(self.tool_name),
            "tool_input": _clean(self.tool_input),
            "tool_output": _clean(self.tool_output),
            "metadata": self.metadata,
        }


def _clean(text: str | None) -> str | None:
    return None if text is None else _utf8_safe(text)


def _model_identity(role: str, message: dict[str, Any]) -> dict[str, str] | None:
    if role != "assistant":
        return None
    provider, api, model = message.get("provider"), message.get("api"), message.get("model")
    if not (isinstance(provider, str) and isinstance(api, str) and isinstance(model, str)):
        return None
    identity = {"modelProvider": provider, "modelApi": api, "modelId": model}
    response_model = message.get("responseModel")
    if isinstance(response_model, str):
        identity["responseModelId"] = response_model
    return identity


def _top_level_reasoning(role: str, message: dict[str, Any]) -> str | None:
    if role != "assistant":
        return None
    value = message.get("reasoning_content")
    return value if isinstance(value, str) and not _is_blank(value) else None


def _reasoning_fields(reasoning: str | None, only: bool = False) -> dict[str, Any]:
    if reasoning is None:
        return {}
    fields: dict[str, Any] = {
        "topLevelReasoningField": "reasoning_content",
        "topLevelReasoningContent": reasoning,
    }
    if only:
        fields["topLevelReasoningOnly"] = True
    return fields


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


def _build_parts(message: dict[str, Any], role: str, fallback: str) -> list[_Part]:
    top_call_id = _first_str(
        message, "toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id", "id"
    )
    top_tool_name = _first_str(message, "toolName", "tool_name")
    top_is_error = _bool_or_none(message.get("isError"))
    if top_is_error is None:
        top_is_error = _bool_or_none(message.get("is_error"))
    reasoning = _top_level_reasoning(role, message)
    identity = _model_identity(role, message) or {}

    if "content" not in message:
        if "command" in message and "output" in message:
            part = _Part(0, "text", fallback)
            fields: dict[str, Any] = {"originalRole": role, "source": "bash-exec"}
            _put(fields, "command", _str_or_none(message.get("command")))
            part.set_metadata(fields)
            return [part]
        part = _Part(0, "agent", fallback or None)
        part.set_metadata({"originalRole": role, "source": "unknown-message-shape", "raw": message})
        return [part]

    content = message["content"]
    if isinstance(content, str):
        part = _Part(0, "text", content)
        fields = {"originalRole": role, **identity}
        _put(fields, "toolCallId", top_call_id)
        _put(fields, "toolName", top_tool_name)
        _put(fields, "isError", top_is_error)
        fields.update(_reasoning_fields(reasoning))
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
        part.set_metadata(fields)
        return [part]

    if not isinstance(content, list):
        part = _Part(0, "agent", fallback or None)
        part.set_metadata(
            {
                "originalRole": role,
                "source": "non-array-content",
                "raw": content,
                **_reasoning_fields(reasoning),
            }
        )
        return [part]

    parts: list[_Part] = []
    if not content and reasoning is not None:
        # Only a top-level reasoning_content: one reasoning part (rawType sits before
        # the reasoning fields in this object).
        part = _Part(0, "reasoning", None)
        part.original_role = role
        part.raw_type = "reasoning_content"
        part.metadata = _stringify(
            {
                "originalRole": role,
                **identity,
                "rawType": "reasoning_content",
                **_reasoning_fields(reasoning, True),
            }
        )
        parts.append(part)
    # The metadata fields before rawType/raw are the same for every block without
    # per-block externalization flags, so they are serialized once per ordinal class.
    if not content:
        return parts
    base: dict[str, Any] = {"originalRole": role}
    _put(base, "toolCallId", top_call_id)
    _put(base, "toolName", top_tool_name)
    _put(base, "isError", top_is_error)
    first = {"originalRole": role, **identity, **base} if identity else base
    if reasoning is not None:
        first = {**first, **_reasoning_fields(reasoning)}
    first_prefix = _stringify(first)[:-1]
    parts.append(_block_part(0, content[0], role, first, first_prefix, top_call_id, top_tool_name))
    if len(content) > 1:
        base_prefix = first_prefix if first is base else _stringify(base)[:-1]
        for ordinal in range(1, len(content)):
            parts.append(
                _block_part(ordinal, content[ordinal], role, base, base_prefix, top_call_id, top_tool_name)
            )
    return parts


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
    ordinal: int,
    block: Any,
    role: str,
    fields: dict[str, Any],
    prefix: str,
    top_call_id: str | None,
    top_tool_name: str | None,
) -> _Part:
    """The part for one content block (``prefix`` is ``fields`` serialized, unclosed)."""
    if not isinstance(block, dict):
        part = _Part(ordinal, "agent", None)
        part.tool_call_id, part.tool_name = top_call_id, top_tool_name
        part.set_metadata_json(prefix, role, "agent", block)
        return part
    own_type = block.get("type")
    block_type = own_type if isinstance(own_type, str) else "agent"
    text = block.get("text")
    if not isinstance(text, str):
        text = block.get("thinking")
        if not isinstance(text, str):
            text = _reasoning_summary(block) if block_type in ("reasoning", "thinking") else None
    declared = block.get("rawType")
    raw_type = declared if isinstance(declared, str) else block_type
    part_type = _PART_TYPES.get(raw_type, "agent")
    raw_block: Any = block
    if raw_type != block_type:
        raw_block = dict(block)
        raw_block["type"] = raw_type
    part = _Part(ordinal, part_type, text)
    part.tool_call_id, part.tool_name = top_call_id, top_tool_name
    keys = block.keys()
    if not keys.isdisjoint(_TOOL_FIELD_KEYS):
        call_id = _first_str(block, "toolCallId", "tool_call_id", "toolUseId", "tool_use_id", "call_id")
        if call_id is None and part_type == "tool":
            call_id = _str_or_none(block.get("id"))
        if call_id is not None:
            part.tool_call_id = call_id
        name = _first_str(block, "name", "toolName", "tool_name")
        if name is not None:
            part.tool_name = name
        for key in ("input", "arguments", "toolInput"):
            if key in block:
                part.input_value = block[key]
                part.tool_input = _stringify(block[key])
                break
        else:
            part.tool_input = _str_or_none(block.get("tool_input"))
        for key in ("output", "toolOutput"):
            if key in block:
                part.output_value = block[key]
                part.tool_output = _stringify(block[key])
                break
        else:
            part.tool_output = _str_or_none(block.get("tool_output"))
    if not keys.isdisjoint(_EXTERNALIZED_KEYS):
        extra = dict(fields)
        _put(extra, "externalizedFileId", _str_or_none(block.get("externalizedFileId")))
        size = block.get("originalByteSize")
        _put(extra, "originalByteSize", size if _is_number(size) else None)
        _put(extra, "imageExternalized", _bool_or_none(block.get("imageExternalized")))
        _put(extra, "toolOutputExternalized", _bool_or_none(block.get("toolOutputExternalized")))
        _put(extra, "externalizationReason", _str_or_none(block.get("externalizationReason")))
        prefix = _stringify(extra)[:-1]
    part.set_metadata_json(prefix, role, raw_type, raw_block)
    return part


def _stored_value(text: str | None) -> Any:
    """The reference's ``parseStoredValue``: JSON-decoded text, else the text itself."""
    if not text:
        return _ABSENT
    if _is_blank(text):
        return text
    parsed = _try_parse(text)
    return text if parsed is _ABSENT else parsed


class _Block(NamedTuple):
    value: Any
    json: str


def _as_block(value: Any) -> _Block:
    # Serialized later, only if the estimate needs the JSON (a lone user text does not).
    return _Block(value, "")


def _block_from_part(part: _Part, has_identity: bool) -> _Block | None:
    """The content block the reference's assembler rebuilds from a stored part."""
    raw = part.raw
    call_id, tool_name = part.tool_call_id, part.tool_name
    tool_input, input_value = part.tool_input, part.input_value
    if isinstance(raw, (dict, list)):
        raw_type = part.raw_type
        if isinstance(raw, dict):
            restored = _restore_openai_reasoning(raw)
            if restored is not None:
                return _as_block(restored)
            own = raw.get("type")
            raw_type = own if isinstance(own, str) else part.raw_type
            signature = raw.get("thinkingSignature")
            if raw_type == "thinking" and isinstance(signature, str):
                if signature == "reasoning_content":
                    return _Block(raw, part.raw_json) if has_identity else None
                if has_identity:
                    return _Block(raw, part.raw_json)
                return _as_block({key: value for key, value in raw.items() if key != "thinkingSignature"})
        if raw_type not in _REBUILT_TOOL_TYPES:
            return _Block(raw, part.raw_json)
        if isinstance(raw, dict):
            raw_id = raw.get("id")
            raw_call_id = raw.get("call_id")
            found = (
                raw_id
                if isinstance(raw_id, str) and raw_id
                else raw_call_id
                if isinstance(raw_call_id, str) and raw_call_id
                else None
            )
            if found and not call_id:
                call_id = found
            raw_name = raw.get("name")
            if isinstance(raw_name, str) and raw_name and not tool_name:
                tool_name = raw_name
            if not tool_input:
                args = raw.get("arguments", _ABSENT)
                if args is None or args is _ABSENT:
                    args = raw.get("input", _ABSENT)
                if args is not _ABSENT:
                    if isinstance(args, str):
                        tool_input, input_value = args, _ABSENT
                    else:
                        tool_input, input_value = _stringify(args), args
    meta_type = part.raw_type
    raw_record = raw if isinstance(raw, dict) else None
    if part.part_type == "reasoning":
        return _as_block(_reasoning_block(part.text_content, meta_type))
    if part.part_type == "tool":
        if part.original_role == "toolResult" or meta_type == "function_call_output":
            return _as_block(_tool_result_block(part, meta_type, raw_record, call_id, tool_name))
        return _as_block(_tool_call_block(part, meta_type, call_id, tool_name, tool_input, input_value))
    if meta_type in _CALL_BLOCK_TYPES:
        return _as_block(_tool_call_block(part, meta_type, call_id, tool_name, tool_input, input_value))
    if meta_type in _RESULT_BLOCK_TYPES:
        return _as_block(_tool_result_block(part, meta_type, raw_record, call_id, tool_name))
    if part.part_type == "text":
        return _as_block({"type": "text", "text": part.text_content or ""})
    if part.text_content:
        return _as_block({"type": "text", "text": part.text_content})
    return _as_block({"type": "text", "text": part.metadata})


def _restore_openai_reasoning(raw: dict[str, Any]) -> dict[str, Any] | None:
    signature = raw.get("thinkingSignature")
    if raw.get("type") != "thinking" or not isinstance(signature, str) or not signature.startswith("{"):
        return None
    parsed = _try_parse(signature)
    if isinstance(parsed, dict) and parsed.get("type") == "reasoning" and isinstance(parsed.get("id"), str):
        return parsed
    return None


def _reasoning_block(text: str | None, raw_type: str | None) -> dict[str, Any]:
    kind = "thinking" if raw_type == "thinking" else "reasoning"
    if text:
        return {"type": kind, "thinking": text} if kind == "thinking" else {"type": kind, "text": text}
    return {"type": kind}


def _tool_call_block(
    part: _Part,
    raw_type: str | None,
    call_id: str | None,
    tool_name: str | None,
    tool_input: str | None,
    value: Any,
) -> dict[str, Any]:
    kind = raw_type if raw_type in _CALL_BLOCK_TYPES else "toolCall"
    arguments = value if value is not _ABSENT else _stored_value(tool_input)
    block: dict[str, Any] = {"type": kind}
    if kind == "function_call":
        if call_id:
            block["call_id"] = call_id
        if tool_name:
            block["name"] = tool_name
        if arguments is not _ABSENT:
            block["arguments"] = arguments
        return block
    block["id"] = call_id if call_id else f"toolu_lcm_estimate-part-{part.ordinal}"
    if tool_name:
        block["name"] = tool_name
    if arguments is not _ABSENT:
        block["arguments" if kind in ("functionCall", "toolCall") else "input"] = arguments
    return block


def _tool_result_block(
    part: _Part, raw_type: str | None, raw: dict[str, Any] | None, call_id: str | None, tool_name: str | None
) -> dict[str, Any]:
    if (
        raw is not None
        and isinstance(raw.get("text"), str)
        and "output" not in raw
        and "content" not in raw
        and not part.tool_output
        and (part.text_content is None or part.text_content == raw["text"])
    ):
        return {"type": "text", "text": raw["text"]}
    kind = raw_type if raw_type in _RESULT_BLOCK_TYPES else "tool_result"
    output = part.output_value if part.output_value is not _ABSENT else _stored_value(part.tool_output)
    block: dict[str, Any] = {"type": kind}
    if tool_name:
        block["name"] = tool_name
    if output is not _ABSENT:
        block["output"] = output
    elif part.text_content is not None:
        block["output"] = part.text_content
    elif raw is not None and "output" in raw:
        block["output"] = raw["output"]
    elif raw is not None and "content" in raw:
        block["content"] = raw["content"]
    else:
        block["output"] = ""
    if raw is not None and isinstance(raw.get("is_error"), bool):
        block["is_error"] = raw["is_error"]
    elif raw is not None and isinstance(raw.get("isError"), bool):
        block["isError"] = raw["isError"]
    if call_id:
        block["call_id" if kind == "function_call_output" else "tool_use_id"] = call_id
    return block


def _text_wrapper(text: str) -> str:
    return '[{"type":"text","text":' + _stringify(text) + "}]"


def _token_count(message: dict[str, Any], role: str, content: str, parts: list[_Part]) -> int:
    """§6.4: the estimate of the content shape the reference's assembler would replay."""
    runtime = (
        "toolResult"
        if role in ("tool", "toolResult")
        else "user"
        if role in ("user", "system")
        else "assistant"
    )
    blocks: list[_Block] = []
    if parts:
        has_identity = _model_identity(role, message) is not None
        for part in parts:
            block = _block_from_part(part, has_identity)
            if block is not None:
                blocks.append(block)
    if not blocks:
        if runtime == "user":
            return estimate_tokens(content)
        return estimate_tokens(_text_wrapper(content)) if content or runtime == "toolResult" else 0
    if runtime == "user" and len(blocks) == 1:
        value = blocks[0].value
        if isinstance(value, dict) and value.get("type") == "text" and isinstance(value.get("text"), str):
            return estimate_tokens(value["text"])
    return estimate_tokens("[" + ",".join(block.json or _stringify(block.value) for block in blocks) + "]")


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
    stored_role = "tool" if role in ("tool", "toolResult") else role
    if "content" in message:
        content = _content_text(message["content"])
    else:
        command = message.get("command")
        content = f"$ {_js_string('' if command is None else command)}\n{_js_string(message.get('output'))}"
    parts = _build_parts(message, role, content)
    if "content" in message:
        tokens = _token_count(message, role, content, parts)
    else:
        tokens = estimate_tokens(content)
    reasoning = _top_level_reasoning(role, message)
    if reasoning is not None:
        tokens += estimate_tokens(reasoning)
    canonical = canonical_identity_content(stored_role, content)
    return TranscriptMessage(
        entry_id=entry_id,
        line=line,
        role=stored_role,
        content=_utf8_safe(content),
        token_count=tokens,
        created_at=_created_at(message, envelope_timestamp),
        identity_hash=message_identity_hash(stored_role, _utf8_safe(canonical)),
        entry_hash=_entry_hash(stored_role, canonical),
        sender_metadata=_sender_metadata(role, message),
        parts=[part.as_row() for part in parts],
        byte_size=byte_size,
    )


# ==========================================================================
# Reading the file
# ==========================================================================

_CHUNK = 1 << 20

# Record kinds kept in the scan index (one byte each).
_K_MESSAGE = 1  # a persistable message: a candidate for import
_K_OTHER_ROLE = 2  # message-shaped, role not persistable
_K_ENTRY = 3  # an id-bearing entry that is not a message (links the tree)


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


class _Line(NamedTuple):
    offset: int
    length: int  # bytes of this (sub-)line, without its terminator
    number: int  # 1-based physical line number
    data: bytes | None  # None when the line was dropped as binary
    newline: bool  # ended by a line break (False only for the file's last line)


def _physical_lines(handle: IO[bytes], limit: int) -> Iterator[_Line]:
    """The lines of the first ``limit`` bytes, each split at lone CRs as Node's readline does.

    A line holding a NUL byte cannot be JSON, so it is not accumulated: a binary file
    with no line breaks costs one chunk of memory, not its size.
    """
    offset = 0
    number = 0
    remaining = limit
    while remaining > 0:
        piece = handle.readline(min(_CHUNK, remaining))
        if not piece:
            return
        remaining -= len(piece)
        number += 1
        start = offset
        offset += len(piece)
        pieces = [piece]
        binary = b"\x00" in piece
        while not pieces[-1].endswith(b"\n") and remaining > 0:
            more = handle.readline(min(_CHUNK, remaining))
            if not more:
                break
            remaining -= len(more)
            offset += len(more)
            if binary:
                pieces = [more]
            else:
                binary = b"\x00" in more
                pieces.append(more)
        newline = pieces[-1].endswith(b"\n")
        total = offset - start
        if binary:
            yield _Line(start, total - (1 if newline else 0), number, None, newline)
            continue
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        if newline:
            data = data[:-1]
        if data.endswith(b"\r"):
            data = data[:-1]
        if b"\r" not in data:
            yield _Line(start, len(data), number, data, newline)
            continue
        position = start
        segments = data.split(b"\r")
        for i, segment in enumerate(segments):
            last = i == len(segments) - 1
            yield _Line(position, len(segment), number, segment, newline or not last)
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


def _header_id(handle: IO[bytes], size: int) -> str | None:
    for line in _physical_lines(handle, size):
        if line.data is None:
            return None
        text, _ = _decode(line.data)
        trimmed = _trim(text)
        if not trimmed:
            continue
        if trimmed[0] != "{":
            return None
        try:
            parsed = _js_parse_line(line.data, trimmed)
        except (ValueError, RecursionError):
            return None
        if not isinstance(parsed, dict) or parsed.get("type") != "session":
            return None
        return _envelope_string(parsed.get("id"))
    return None


class Transcript:
    """The scan of one transcript: what will be imported, and why every other line is not.

    ``session_id``/``header_id`` follow §4. ``size_bytes`` and ``mtime_ms`` (floored) are
    the file's at scan time; only those bytes are read, so a file still being appended
    to is read consistently. ``mode`` is ``"jsonl"`` or ``"json-array"``. ``all_ids``:
    every tree record has an entry id; ``leaf_path``: the active-branch rule was applied
    (False when ids are missing or the chain dangles or cycles, see ``flatten_reason``:
    ``no_records``, ``missing_ids``, ``dangling_parent``, ``cycle`` or ``json_array``).
    ``candidate_count`` is how many messages :meth:`iter_messages` yields; ``skipped``,
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
        # The chosen lines, in import order: byte offset, byte length, line number, and
        # the entry id each must still carry when it is read again.
        self._offsets = array("q")
        self._lengths = array("q")
        self._lines = array("q")
        self._entry_ids: list[str | None] = []
        self._array_start = 0
        self._array_line = 1
        self._array_chosen: set[int] = set()

    def __repr__(self) -> str:
        return (
            f"Transcript({self.path!r}, session_id={self.session_id!r}, mode={self.mode!r},"
            f" candidates={self.candidate_count}, skipped={len(self.skipped)})"
        )

    def iter_messages(self) -> Iterator[TranscriptMessage]:
        """The chosen messages in import order (root to leaf), read one line at a time.

        Raises ``LcmError("TRANSCRIPT_CHANGED")`` if the file was replaced or rewritten
        since the scan (appending to it is fine: only the scanned bytes are read).
        """
        handle, info = _open(self.path)
        with handle:
            if (info.st_dev, info.st_ino) != self._identity or info.st_size < self.size_bytes:
                raise _changed(self.path)
            if self.mode == "json-array":
                yield from self._iter_array(handle)
                return
            chosen = zip(self._offsets, self._lengths, self._lines, self._entry_ids)
            for offset, length, line, expected_id in chosen:
                handle.seek(offset)
                data = handle.read(length)
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
                yield build_message(
                    message, entry_id=entry_id, envelope_timestamp=envelope_ts, line=line, byte_size=length
                )

    def _iter_array(self, handle: IO[bytes]) -> Iterator[TranscriptMessage]:
        if not self._array_chosen:
            return
        last = max(self._array_chosen)
        handle.seek(self._array_start)
        elements = _array_elements(handle, self.size_bytes - self._array_start, self._array_line)
        try:
            for index, (line, size, value) in enumerate(elements):
                if index > last:
                    return
                if index in self._array_chosen:
                    if not _is_message_shaped(value) or value["role"] not in PERSISTABLE_ROLES:
                        raise _changed(self.path)
                    yield build_message(value, line=line, byte_size=size)
        except _ArrayError as exc:
            raise _changed(self.path) from exc


def _changed(path: str) -> LcmError:
    return LcmError(
        "TRANSCRIPT_CHANGED",
        f"transcript {path} changed while it was being read; scan it again",
        {"file": path},
    )


def scan_transcript(path: str | os.PathLike[str]) -> Transcript:
    """First pass over one transcript file: pick the messages to import, explain the rest.

    Raises ``LcmError("TRANSCRIPT_UNREADABLE")`` only when the file is missing,
    unreadable or not a regular file; bad content is reported in ``skipped``.
    """
    file = os.fspath(path)
    handle, info = _open(file)
    scan = Transcript(file, info)
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
        self.parents = array("q")
        self.late_parents: dict[int, str] = {}
        self.kinds = bytearray()
        self.entry_ids: list[str | None] = []  # envelope ids (what becomes transcript_entry_id)
        self.offsets = array("q")
        self.lengths = array("q")
        self.lines = array("q")

    def add(
        self, tree_id: str | None, parent: str | None, kind: int, entry_id: str | None, line: _Line
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
        self.offsets.append(line.offset)
        self.lengths.append(line.length)
        self.lines.append(line.number)

    def parent_of(self, position: int) -> int | None:
        """The record a record's parent id resolves to; -1 for a root, None if dangling."""
        ref = self.parents[position]
        if ref == -1:
            return -1
        name = self.late_parents.get(position) if ref == -2 else self.ids[ref]
        return self.by_id.get(name) if name is not None else None


def _scan_lines(scan: Transcript, handle: IO[bytes]) -> None:
    index = _Index()
    seen_content = False
    for line in _physical_lines(handle, scan.size_bytes):
        if line.data is None:
            seen_content = True
            scan.skipped.append(
                SkippedLine(line.number, "truncated_last_line" if not line.newline else "binary")
            )
            continue
        text, replaced = _decode(line.data)
        trimmed = _trim(text)
        if not trimmed:
            continue
        first = not seen_content
        seen_content = True
        if first:
            if trimmed[0] == "[":
                scan.mode = "json-array"
                _scan_array(scan, handle, line)
                return
        try:
            entry = _SHAPE_DECODER.decode(trimmed)
        except RecursionError:
            scan.skipped.append(SkippedLine(line.number, "too_deep"))
            continue
        except ValueError:
            if not line.newline:
                reason = "truncated_last_line"
            elif replaced:
                reason = "not_utf8"
            else:
                reason = "invalid_json"
            scan.skipped.append(SkippedLine(line.number, reason))
            continue
        if _too_deep(entry, line.data):
            scan.skipped.append(SkippedLine(line.number, "too_deep"))
            continue
        if not isinstance(entry, dict):
            scan.skipped.append(SkippedLine(line.number, "not_an_object"))
            continue
        kind = entry.get("type")
        if kind == "session":
            if first:
                scan.header_id = _envelope_string(entry.get("id"))
            scan.structural["session"] = scan.structural.get("session", 0) + 1
            continue
        message, enveloped = _message_of(entry)
        tree_id = _envelope_string(entry.get("id")) or _envelope_string(entry.get("uuid"))
        if message is not None:
            parent = _envelope_string(entry.get("parentId")) or _envelope_string(entry.get("parentUuid"))
            record_kind = _K_MESSAGE if message["role"] in PERSISTABLE_ROLES else _K_OTHER_ROLE
            index.add(tree_id, parent, record_kind, tree_id if enveloped else None, line)
            if record_kind == _K_OTHER_ROLE:
                scan.skipped.append(SkippedLine(line.number, "unsupported_role"))
            elif replaced:
                scan.warnings.append(SkippedLine(line.number, "not_utf8_replaced"))
            continue
        if tree_id is not None:
            parent = _envelope_string(entry.get("parentId")) or _envelope_string(entry.get("parentUuid"))
            index.add(tree_id, parent, _K_ENTRY, None, line)
        if isinstance(kind, str) and kind in STRUCTURAL_ENTRY_TYPES and "message" not in entry:
            scan.structural[kind] = scan.structural.get(kind, 0) + 1
        else:
            scan.skipped.append(SkippedLine(line.number, _why_not_message(entry)))
    _choose(scan, index)


_MAX_DEPTH = 200


def _too_deep(value: Any, text: bytes | None = None) -> bool:
    """True for JSON nested deeper than we read safely (the reference has no such limit)."""
    if text is not None and text.count(b"[") + text.count(b"{") <= _MAX_DEPTH:
        return False
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > _MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


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
    chosen: Iterable[int]
    if walk is not None:
        on_path = bytearray(count)
        for i in walk:
            on_path[i] = 1
        for i in range(count):
            if index.kinds[i] == _K_MESSAGE and not on_path[i]:
                superseded = index.by_id[index.ids[i] or ""] != i
                reason = "duplicate_entry_id" if superseded else "abandoned_branch"
                scan.skipped.append(SkippedLine(index.lines[i], reason))
        # Root-to-leaf order is usually file order, but a re-appended (duplicate) id
        # can put an ancestor after its child in the file.
        chosen = (i for i in reversed(walk) if index.kinds[i] == _K_MESSAGE)
    else:
        chosen = []
        seen: set[str] = set()
        for i in range(count):
            if index.kinds[i] != _K_MESSAGE:
                continue
            entry_id = index.entry_ids[i]
            if entry_id is not None:
                if entry_id in seen:
                    scan.skipped.append(SkippedLine(index.lines[i], "duplicate_entry_id"))
                    continue
                seen.add(entry_id)
            chosen.append(i)
    for i in chosen:
        scan._offsets.append(index.offsets[i])
        scan._lengths.append(index.lengths[i])
        scan._lines.append(index.lines[i])
        scan._entry_ids.append(index.entry_ids[i])
    scan.candidate_count = len(scan._offsets)


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


def _scan_array(scan: Transcript, handle: IO[bytes], first: _Line) -> None:
    """§3.1 JSON-array mode: bare message elements only, no ids, all or nothing."""
    scan._array_start = first.offset
    scan._array_line = first.number
    handle.seek(first.offset)
    found: list[tuple[int, str | None]] = []  # (line, skip reason or None when chosen)
    try:
        for line, _, value in _array_elements(handle, scan.size_bytes - first.offset, first.number):
            if _too_deep(value):
                found.append((line, "too_deep"))
            elif not isinstance(value, dict):
                found.append((line, "not_an_object"))
            elif not _is_message_shaped(value):
                found.append(
                    (line, "array_envelope_entry" if "message" in value else _why_not_message_shaped(value))
                )
            elif value["role"] not in PERSISTABLE_ROLES:
                found.append((line, "unsupported_role"))
            else:
                found.append((line, None))
    except _ArrayError as error:
        scan.skipped.extend(SkippedLine(line, "invalid_json_array") for line, _ in found)
        scan.skipped.append(SkippedLine(error.line, "invalid_json"))
        scan.flatten_reason = "json_array"
        return
    scan.flatten_reason = "json_array"
    for position, (line, reason) in enumerate(found):
        if reason is None:
            scan._array_chosen.add(position)
        else:
            scan.skipped.append(SkippedLine(line, reason))
    scan.candidate_count = len(scan._array_chosen)
