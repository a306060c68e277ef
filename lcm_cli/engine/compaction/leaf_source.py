"""The text a summarizer reads: leaf source from raw messages, condensed source from summaries.

docs/reference/engine.md §4.5 (leaf) and §4.6 (condensed): one header line per source
(``[<time> | <role>]`` or ``[<earliest> - <latest>]``), a newline, the cleaned text,
sources separated by a blank line. Times are ``YYYY-MM-DD HH:mm <zone abbreviation>`` in
the configured timezone (the literal ``UTC`` for UTC).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from functools import lru_cache
from typing import Any

from lcm_cli.engine.core.jscompat import JS_SPACE, JS_SPACE_CLASS, trim
from lcm_cli.engine.db.store.stamps import parse_timestamp
from lcm_cli.engine.summarize.sanitize import strip_injected_context_tags, strip_reasoning

# JavaScript's \s, spelled out (Python's differs), for the reference's media rules.
_JS_S = f"[{JS_SPACE_CLASS}]"
_DATA_URL = re.compile(
    f"data:[^;{JS_SPACE_CLASS}\"'`]+;base64,[A-Za-z0-9+/={JS_SPACE_CLASS}]+", re.IGNORECASE
)
_DATA_URL_START = re.compile(f"data:[^;{JS_SPACE_CLASS}\"'`]+;base64,", re.IGNORECASE)
_LINE_BREAK = re.compile(r"\r?\n")
_MEDIA_PATH = re.compile(r"MEDIA:/[^\n\r\u2028\u2029]+\Z")
_BASE64_ONLY = re.compile(r"[A-Za-z0-9+/=]+")
_PROSE_MARK = re.compile(r"[ .,:;!?()\[\]{}]")
_SPACE_RUN = re.compile(f"{_JS_S}+")
_FILE_ID = re.compile(r"file_[0-9a-f]{16}", re.IGNORECASE)
_HUMAN_TEXT_KEYS = ("text", "transcript", "transcription", "message", "summary", "content", "output")


@lru_cache(maxsize=16)
def zone_of(name: str | None) -> tzinfo:
    """The IANA zone ``name`` (UTC when unset or unknown)."""
    if not name or name.upper() == "UTC":
        return timezone.utc
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except (KeyError, ValueError, OSError):
        return timezone.utc


def _local(stamp: str | None, zone: tzinfo) -> datetime | None:
    moment = parse_timestamp(stamp)
    return None if moment is None else moment.astimezone(zone)


# en-US (CLDR) has short names for the North American metazones only; every other
# zone is spelled from its offset ("GMT+9", "GMT+5:30", "GMT" at zero).
_US_SHORT_NAMES = frozenset(
    {"EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT", "AKST", "AKDT", "HST", "HDT", "AST", "ADT"}
)
_NOT_US_METAZONE = frozenset(
    {
        "America/Havana",
        "Cuba",
        "America/Dawson",
        "America/Whitehorse",
        "Canada/Yukon",
        "America/Hermosillo",
        "America/Mazatlan",
        "Mexico/BajaSur",
    }
)
_ALEUTIAN = frozenset({"America/Adak", "America/Atka", "US/Aleutian"})
_UTC_KEYS = frozenset(
    {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"}
    | {"Etc/GMT", "GMT", "Etc/Greenwich", "Greenwich", "Etc/GMT0", "GMT0"}
    | {"Etc/GMT+0", "Etc/GMT-0", "GMT+0", "GMT-0"}
)


def zone_abbreviation(moment: datetime, zone: tzinfo) -> str:
    """The zone as JavaScript's ``Intl.DateTimeFormat("en-US", {timeZoneName: "short"})`` spells it."""
    key = getattr(zone, "key", None)
    if zone is timezone.utc or key in _UTC_KEYS:
        return "UTC"
    name = moment.tzname() or ""
    if (
        name in _US_SHORT_NAMES
        and isinstance(key, str)
        and key.startswith(("America/", "US/", "Canada/", "Pacific/Honolulu", "Atlantic/Bermuda"))
        and key not in _NOT_US_METAZONE
    ):
        return ("HA" + name[1:]) if key in _ALEUTIAN else name
    offset = moment.utcoffset()
    minutes = round(offset.total_seconds() / 60) if offset is not None else 0
    if minutes == 0:
        return "GMT" if name == "GMT" or key == "Antarctica/Troll" else "GMT+0"
    sign = "+" if minutes > 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"GMT{sign}{hours}" + (f":{rest:02d}" if rest else "")


def header_time(stamp: str | None, zone: tzinfo) -> str:
    """``YYYY-MM-DD HH:mm <zone>`` with the zone spelled as the reference's ``Intl`` does
    (``UTC`` for UTC, ``PDT``, ``GMT+9``, ...); ``unknown`` when unreadable."""
    moment = _local(stamp, zone)
    if moment is None:
        return "unknown"
    return moment.strftime("%Y-%m-%d %H:%M ") + zone_abbreviation(moment, zone)


def xml_time(stamp: str | None, zone: tzinfo) -> str | None:
    """``YYYY-MM-DDTHH:MM:SS`` in ``zone`` with no zone suffix (assembly's attributes, §6.3)."""
    moment = _local(stamp, zone)
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%S")


def _json_human_text(value: Any, depth: int = 0) -> str:
    if depth > 6:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_json_human_text(v, depth + 1) for v in value) if t.strip())
    if isinstance(value, dict):
        for key in _HUMAN_TEXT_KEYS:
            found = _json_human_text(value.get(key), depth + 1) if key in value else ""
            if found.strip():
                return found
    return ""


# What the reference's structured-text extraction reads (docs/reference/engine.md §4.5): text
# keys of a block, then nested containers; reasoning blocks never, media blocks' captions only.
_REASONING_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})
_MEDIA_TYPES = frozenset({"file", "image", "snapshot"})
_TEXT_KEYS = ("text", "caption", "alt", "title", "summary")
_NESTED_KEYS = (
    "value",
    "content",
    "parts",
    "items",
    "message",
    "messages",
    "input",
    "arguments",
    "output",
    "result",
    "results",
    "data",
    "query",
    "command",
)
_MAX_DEPTH = 8
_UNDEFINED: Any = object()  # JavaScript's undefined, as opposed to null (None)


def _binary_payload(trimmed: str) -> bool:
    """A line that is a data URL, or 256+ base64 characters (a multiple of 4) and no prose."""
    if _DATA_URL_START.match(trimmed):
        return True
    compact = _SPACE_RUN.sub("", trimmed)
    if len(compact) < 256 or len(compact) % 4 or not _BASE64_ONLY.fullmatch(compact):
        return False
    return not _PROSE_MARK.search(trimmed)


def _clean(text: str) -> str:
    """Text with embedded media payloads removed, as the reference strips them: data URLs
    replaced, and blank lines, ``MEDIA:/`` paths and base64 lines dropped (line ends trimmed)."""
    text = _DATA_URL.sub("[embedded media omitted]", text)
    lines = []
    for line in _LINE_BREAK.split(text):
        line = line.rstrip(JS_SPACE)
        trimmed = trim(line)
        if trimmed and not _MEDIA_PATH.match(trimmed) and not _binary_payload(trimmed):
            lines.append(line)
    return trim("\n".join(lines))


def _fragments(value: Any, depth: int = 0) -> list[str]:
    if depth >= _MAX_DEPTH or value is None or value is _UNDEFINED:
        return []
    if isinstance(value, str):
        cleaned = _clean(value)
        return [cleaned] if cleaned else []
    if isinstance(value, list):
        return [f for entry in value for f in _fragments(entry, depth + 1)]
    if not isinstance(value, dict):
        return []
    kinds = {str(value.get(k)).strip().lower() for k in ("type", "rawType") if isinstance(value.get(k), str)}
    if kinds & _REASONING_TYPES:
        return []
    out = [c for c in (_clean(value[k]) for k in _TEXT_KEYS if isinstance(value.get(k), str)) if c]
    if kinds & _MEDIA_TYPES:
        return out
    for key in _NESTED_KEYS:
        out += _fragments(value.get(key), depth + 1)
    return out


def _structured_text(value: Any) -> str:
    """The readable text of a structured value; when it has none, its JSON spelling re-read,
    so JavaScript's ``null`` reads as the word ``null`` (the reference does the same)."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
            try:
                return "\n".join(f.strip() for f in _fragments(json.loads(stripped)) if f.strip())
            except ValueError:
                pass
        return _clean(value)
    found = [f.strip() for f in _fragments(value) if f.strip()]
    if found:
        return "\n".join(found)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return ""  # undefined; objects and arrays read back to the same empty fragments


def _stored_value(raw: Any) -> Any:
    if not isinstance(raw, str) or not raw.strip():
        return _UNDEFINED
    try:
        return json.loads(raw.strip())
    except ValueError:
        return raw.strip()


def _rebuilt_blocks(parts: Sequence[Mapping[str, Any]], role: str) -> list[dict[str, Any]]:
    """The content blocks the reference rebuilds from stored parts (reasoning included, as
    blocks it then skips)."""
    blocks: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("part_type")
        if kind == "reasoning":
            blocks.append({"type": "thinking", "thinking": part.get("text_content") or ""})
        elif kind == "tool":
            if role == "tool":
                block: dict[str, Any] = {"type": "toolResult"}
                output = _stored_value(part.get("tool_output"))
                if output is not _UNDEFINED:
                    block["output"] = output
            else:
                block = {"type": "toolCall", "name": part.get("tool_name")}
                arguments = _stored_value(part.get("tool_input"))
                if arguments is not _UNDEFINED:
                    block["arguments"] = arguments
            blocks.append(block)
        elif kind == "text" or part.get("text_content"):
            blocks.append({"type": "text", "text": part.get("text_content") or ""})
    return blocks


def _part_sections(part: Mapping[str, Any]) -> str:
    """One part's text, tool input and tool output sections (the reference's last resort)."""
    if part.get("part_type") == "reasoning":
        return ""  # private thinking never reaches the summarizer
    sections: list[str] = []
    text = _structured_text(part.get("text_content"))
    if text:
        sections.append(text)
    label = (
        f" ({part['tool_name'].strip()})"
        if isinstance(part.get("tool_name"), str) and part["tool_name"].strip()
        else ""
    )
    tool_input = _structured_text(_stored_value(part.get("tool_input")))
    if tool_input:
        sections.append(f"Tool input{label}:\n{tool_input}")
    tool_output = _structured_text(_stored_value(part.get("tool_output")))
    if tool_output:
        sections.append(f"Tool output{label}:\n{tool_output}")
    return "\n\n".join(sections).strip()


def parts_text(parts: Sequence[Mapping[str, Any]], role: str) -> str:
    """The text of a message whose stored content has none, from its parts: the readable
    text of the rebuilt content blocks, else each part's sections (a tool part's missing
    text reads ``null``, as in the reference)."""
    if not parts:
        return ""
    rebuilt = _structured_text(_rebuilt_blocks(parts, role))
    if rebuilt:
        return rebuilt
    return "\n\n".join(t for t in (_part_sections(p).strip() for p in parts) if t).strip()


def strip_injected_tags(text: str, tags: Iterable[str]) -> str:
    """Remove the configured injected-context tags and the untrusted header (§5.6)."""
    return strip_injected_context_tags(text, tuple(tags))


def message_text(
    content: str, parts: Sequence[Mapping[str, Any]], tags: Iterable[str], role: str = "assistant"
) -> str:
    """A raw message's cleaned text for a leaf source ('' when nothing meaningful remains);
    ``parts`` (of a message with role ``role``) stand in when the content has no text."""
    text = content or ""
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            text = _json_human_text(json.loads(stripped)) or text
        except ValueError:
            pass
    text = _clean(text)
    if not text and parts:
        text = parts_text(parts, role)
    # The reference reads the resolved text once more after stripping the tags: that pass
    # drops blank lines (the parts' sections lose their blank-line separators) and reduces
    # text that now looks like JSON to its readable fragments.
    return _structured_text(strip_injected_tags(text, tags))


def sanitize_summary(text: str) -> str:
    """A summary's text with leaked reasoning blocks removed, trimmed (§5.6)."""
    return strip_reasoning(text or "")


def find_file_ids(texts: Iterable[str], seed: Iterable[str] = ()) -> list[str]:
    """Ordered, de-duplicated lowercase ``file_<16 hex>`` ids: ``seed`` first, then found ones."""
    found: dict[str, None] = {s.lower(): None for s in seed}
    for text in texts:
        for match in _FILE_ID.findall(text or ""):
            found.setdefault(match.lower(), None)
    return list(found)


def leaf_block(created_at: str | None, role: str, speaker: str, text: str, zone: tzinfo) -> str:
    """One message of a leaf source: header line, newline, text."""
    return f"[{header_time(created_at, zone)} | {role}{speaker}]\n{text}"


def condensed_block(earliest: str | None, latest: str | None, text: str, zone: tzinfo) -> str:
    """One source summary of a condensed source: ``[<earliest> - <latest>]``, newline, text."""
    return f"[{header_time(earliest, zone)} - {header_time(latest, zone)}]\n{text}"
