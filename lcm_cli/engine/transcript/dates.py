"""Message timestamps as the reference stores them: JavaScript ``Date`` parsing of the
message's and envelope's time fields, written in SQLite's text form (docs/reference/migrate-sessions.md §6.3).
"""

from __future__ import annotations

import math
import re
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from lcm_cli.engine.core.jscompat import JsNumber as _JsNumber
from lcm_cli.engine.core.jscompat import is_blank as _is_blank
from lcm_cli.engine.core.jscompat import is_number as _is_number
from lcm_cli.engine.core.jscompat import trim as _trim

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


def message_created_at(message: dict[str, Any], envelope_timestamp: str | None) -> str | None:
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
