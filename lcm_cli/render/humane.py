"""Values and field names as a person reads them: labels, sizes, durations, local times.

Pure functions over one field (its name and value); :mod:`lcm_cli.render.table` lays them
out. Imports no third-party module.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from lcm_cli.engine.core.render_hints import COPY, HEADERS, LABELS, SEVERITY, STATUS_FIELDS

NONE = "—"
_CAMEL = re.compile(r"^[a-z][a-z0-9]*(?:[A-Z0-9][a-z0-9]*)*$")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Stored timestamps: SQLite's "YYYY-MM-DD HH:MM:SS" (UTC) and JavaScript's ISO form.
_TIME = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.\d+)?Z?")
_UNITS = ("B", "KB", "MB", "GB", "TB")


def is_size(key: str) -> bool:
    """A byte count, shown as "438 KB"."""
    return key.startswith("bytes") or key.endswith("Bytes")


def is_duration(key: str) -> bool:
    """Milliseconds of elapsed time, shown as "2 min" (an mtime in ms is a moment, not a span)."""
    return key.endswith("Ms") and not key.endswith("MtimeMs")


def is_copy(key: str) -> bool:
    """A value a person copies into the next command: never cut, never word-wrapped."""
    return any(key == name or key.endswith(name) for name in COPY)


def label(key: str, overrides: dict[str, str], verbatim: bool = False, header: bool = False) -> str:
    """The label a person reads for field ``key`` ("freshTailCount" → "Fresh tail count").

    Keys that are data rather than field names (table names, check ids, statuses) stay as
    they are; ``header`` prefers the short form of a table's column header.
    """
    if verbatim:
        return key
    if key in overrides:
        return overrides[key]
    if header and key in HEADERS:
        return HEADERS[key]
    if key in LABELS:
        return LABELS[key]
    if not _CAMEL.match(key):
        return key
    words = _WORD.findall(key)
    if len(words) > 1 and (key.endswith("Bytes") or is_duration(key) or key.endswith("MtimeMs")):
        words = words[:-1]  # the unit is in the value now
    text = " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in words)
    return text[:1].upper() + text[1:]


def size(value: float) -> str:
    """Bytes in decimal units: 438272 → "438 KB", 7694 → "7.7 KB"."""
    amount = float(value)
    unit = 0
    while abs(amount) >= 1000 and unit < len(_UNITS) - 1:
        amount /= 1000
        unit += 1
    if unit == 0:
        return f"{int(value)} B"
    return f"{amount:.1f} {_UNITS[unit]}" if abs(amount) < 10 else f"{amount:.0f} {_UNITS[unit]}"


def duration(ms: float) -> str:
    """Milliseconds in the largest unit that keeps them readable: 7 ms, 1.5 s, 2 min, 3 h."""
    steps = ((1000, "ms", 1), (60_000, "s", 1000), (3_600_000, "min", 60_000))
    limit, unit, scale = next((step for step in steps if abs(ms) < step[0]), (0, "h", 3_600_000))
    amount = ms / scale
    whole = unit == "ms" or amount >= 10 or amount == int(amount)
    return f"{amount:.0f} {unit}" if whole else f"{amount:.1f} {unit}"


# Local time, marked with its zone ("2026-06-02 10:42:00 CEST"), so no one takes it for UTC.
_LOCAL = "%Y-%m-%d %H:%M:%S %Z"
# Numbers that name one thing rather than count things: shown as stored, never grouped.
_ORDINALS = ("seq", "ordinal", "depth", "line", "version", "exitStatus", "pid", "port")


def local_time(text: str) -> str | None:
    """A stored UTC timestamp as local time, zone-marked, without milliseconds; None if it is none."""
    found = _TIME.fullmatch(text)
    if not found:
        return None
    moment = datetime.fromisoformat(f"{found[1]}T{found[2]}+00:00")
    return moment.astimezone().strftime(_LOCAL)


def _epoch_ms(value: float) -> str:
    moment = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    return moment.astimezone().strftime(_LOCAL)


def count(key: str, value: int) -> str:
    """A count with its thousands grouped (12,345); ids, sequence numbers and the like as they are."""
    if is_copy(key) or any(key == name or key.endswith(name[:1].upper() + name[1:]) for name in _ORDINALS):
        return str(value)
    return f"{value:,}"


def scalar(key: str, value: Any, verbatim: bool = False, unit: str = "") -> str:
    """One value as text: human units, local times, yes/no, lists joined by commas.

    ``unit`` is the unit field name of an enclosing object (its fields are all durations).
    """
    if value is None:
        return NONE
    if isinstance(value, bool):
        return "true" if value and verbatim else "false" if verbatim else "yes" if value else "no"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not verbatim:
        if unit:
            key = unit
        if is_size(key):
            return size(value)
        if is_duration(key):
            return duration(value)
        if key.endswith("MtimeMs"):
            return _epoch_ms(value)
        if isinstance(value, int):
            return count(key, value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        if not value:
            return '""' if verbatim else NONE
        shown = None if verbatim else local_time(value)
        return shown or value
    if isinstance(value, list):
        return ", ".join(scalar(key, v, verbatim) for v in value) if value else NONE
    if isinstance(value, dict):
        return ", ".join(f"{k} {scalar(k, v, verbatim)}" for k, v in value.items()) if value else NONE
    return str(value)


def severity(key: str, value: Any) -> str | None:
    """The rich style of a status-like value ("FAIL" red, "PASS" green), else None."""
    if key not in STATUS_FIELDS or isinstance(value, (dict, list)) or value is None:
        return None
    word = ("true" if value else "false") if isinstance(value, bool) else str(value).lower()
    return SEVERITY.get(word)
