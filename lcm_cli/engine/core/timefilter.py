"""Time filters: ``--after`` (inclusive), ``--before`` (exclusive), ``--between A..B``,
``--recency 2h``; and the timestamp grammars they accept.

Two grammars, no more. The reference's eleven commands keep its strict one (an ISO
timestamp with a zone; a duration for ``--recency``). Every other command reads one time
input the same way, :func:`parse_when`: an ISO-8601 timestamp (a missing zone means
UTC; a space may stand for the ``T``), a date (``2026-07-01``, UTC midnight), or a
duration back from now (``90d``, ``2w``, ``36h``, ``30m``, ``45s``).

Instants are handled as integer milliseconds since the epoch on the proleptic Gregorian
calendar, like JavaScript's Date, so every year JavaScript accepts (0000 included) and
any offset works without datetime's year 1..9999 limits. Bounds are formatted as
``toISOString()`` does and compared in SQL with ``julianday(...)``, which treats both
stored timestamp shapes alike (and matches nothing for a bound outside years 0..9999,
as the reference does).
"""

from __future__ import annotations

import re
import time

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.record import Record

# The patterns are compiled on first use (re caches them): compiling them all at import
# cost every read command about 2 ms of start-up, and most never filter by time.
# YYYY-MM-DDTHH:MM[:SS[.fraction]] then Z or ±HH:MM; uppercase T, zone mandatory, ASCII digits.
_STRICT = (
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2})"
    r"(?::([0-9]{2})(?:\.([0-9]{1,9}))?)?(Z|[+-][0-9]{2}:[0-9]{2})"
)
# The shape of a stored timestamp (either lcm.db shape, date-only, any zone); a cursor's
# timestamp only has to look like one, as the reference only asks Date to parse it.
_STORED_SHAPE = (
    r"[0-9]{4}-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.[0-9]+)?)?)?"
    r" ?(?:Z|z|[+-][0-9]{2}:?[0-9]{2})?"
)
_DURATION = r"(?i)([0-9]+)([smhdw])"
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_DAY_MS = 86_400_000


class TimeRange(Record):
    """Normalized bounds: ``after`` inclusive, ``before`` exclusive (ISO UTC ms, or None)."""

    after: str | None = None
    before: str | None = None


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 for a proleptic Gregorian date (any year)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    doe = days - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def to_iso_ms(epoch_ms: int) -> str:
    """Format epoch milliseconds like JavaScript's ``toISOString()`` (expanded years outside 0..9999)."""
    days, ms_of_day = divmod(epoch_ms, _DAY_MS)
    year, month, day = _civil_from_days(days)
    seconds, millis = divmod(ms_of_day, 1000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    year_text = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    return f"{year_text}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}Z"


def parse_iso_timestamp(text: str) -> int | None:
    """Epoch milliseconds of a strict option timestamp; None unless it is a real instant."""
    match = re.fullmatch(_STRICT, text)
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    y, mo, d, h, mi, s = int(year), int(month), int(day), int(hour), int(minute), int(second or 0)
    if not (1 <= mo <= 12 and 1 <= d <= _days_in_month(y, mo) and h <= 23 and mi <= 59 and s <= 59):
        return None
    offset_minutes = 0
    if zone != "Z":
        zone_hours, zone_minutes = int(zone[1:3]), int(zone[4:6])
        if zone_hours > 23 or zone_minutes > 59:
            return None
        offset_minutes = (zone_hours * 60 + zone_minutes) * (-1 if zone[0] == "-" else 1)
    # JavaScript keeps milliseconds only: finer digits are truncated.
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    local_ms = ((_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + s * 1000 + millis
    return local_ms - offset_minutes * 60_000


def looks_like_timestamp(text: str) -> bool:
    """True when ``text`` is a timestamp as lcm.db stores them and JavaScript's Date reads.

    Fields are range-checked but the calendar is not: like Date (and SQLite), Feb 30
    rolls over to March, and 24:00 is the end of the day.
    """
    match = re.fullmatch(_STORED_SHAPE, text.strip())
    if not match:
        return False
    month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
    return 1 <= month <= 12 and 1 <= day <= 31 and hour <= 24 and minute <= 59 and second <= 59


def parse_duration_ms(text: str) -> int | None:
    """Milliseconds of ``<int><s|m|h|d|w>`` (case-insensitive, at least 1); None when invalid."""
    match = re.fullmatch(_DURATION, text)
    if not match or int(match.group(1)) < 1:
        return None
    return int(match.group(1)) * _UNIT_MS[match.group(2).lower()]


_ISO_HINT = "an ISO-8601 timestamp with a zone, e.g. 2026-07-01T09:30:00Z or 2026-07-01T09:30+02:00"
WHEN_HINT = (
    "an ISO-8601 timestamp (2026-07-01T09:30:00Z; no zone means UTC), a date (2026-07-01) "
    "or a duration back from now (90d, 2w, 36h, 30m)"
)
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_ZONELESS = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?"


def _now_ms(now_ms: int | None) -> int:
    return time.time_ns() // 1_000_000 if now_ms is None else now_ms


def parse_when(text: str, option: str, *, now_ms: int | None = None) -> int:
    """Epoch milliseconds of a time input in lcm's one grammar (see the module docstring).

    ``INVALID_TIME_FILTER`` naming ``option`` when ``text`` is none of its forms.
    """
    value = text.strip()
    span = parse_duration_ms(value)
    if span is not None:
        instant = _now_ms(now_ms) - span
        if instant < EARLIEST_MS:
            raise _bad_value(option, text, "a duration that reaches back less than 270,000 years")
        return instant
    if re.fullmatch(_DATE, value):
        value += "T00:00:00Z"
    elif re.fullmatch(_ZONELESS, value):
        value = value.replace(" ", "T", 1) + "Z"
    elif len(value) > 16 and value[10] == " ":
        value = value.replace(" ", "T", 1)
    stamp = parse_iso_timestamp(value)
    if stamp is None:
        raise _bad_value(option, text, WHEN_HINT, now_ms=now_ms)
    return stamp


#: The earliest instant a JavaScript Date can hold (-271821-04-20): a recency reaching
#: further names no time at all (the reference fails there with a database error).
EARLIEST_MS = -8_640_000_000_000_000


_UNIT_WORDS = r"(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)"


def _spoken_duration(text: str) -> str | None:
    """``3 days``, ``2 hours ago``, ``last 90 minutes`` as the grammar's duration (``3d``)."""
    match = re.fullmatch(r"(?i)(?:last\s+)?([0-9]+)\s*" + _UNIT_WORDS + r"(?:\s+ago)?", text.strip())
    if not match or int(match.group(1)) < 1:
        return None
    unit = match.group(2).lower()
    return f"{int(match.group(1))}{'m' if unit.startswith('mi') or unit == 'm' else unit[0]}"


def _stamp_text(instant: int) -> str:
    text = to_iso_ms(instant)
    return text.replace(".000Z", "Z")


def _same_instant(value: str, *, duration: bool, strict: bool, now_ms: int | None) -> str | None:
    """The accepted spelling of what ``value`` most likely means, or None.

    ``duration``: the option takes a duration (the reference's ``--recency``); ``strict``:
    the reference's timestamp grammar (zone required), else lcm's own (:func:`parse_when`).
    """
    spoken = _spoken_duration(value)
    if duration:
        return spoken
    if spoken is not None:
        return spoken if not strict else _stamp_text(_now_ms(now_ms) - (parse_duration_ms(spoken) or 0))
    text = value.strip()
    word = text.lower()
    today = _now_ms(now_ms) // _DAY_MS * _DAY_MS
    named = {
        "now": _now_ms(now_ms),
        "today": today,
        "yesterday": today - _DAY_MS,
        "tomorrow": today + _DAY_MS,
    }
    if word in named:
        return _stamp_text(named[word])
    # Lower-case t/z, a trailing UTC, slashes for dashes: the same instant, misspelled.
    text = re.sub(r"(?i)\s*utc$", "Z", text.replace("/", "-"))
    text = re.sub(r"(?<=[0-9])t(?=[0-9])", "T", text)
    text = re.sub(r"z$", "Z", text)
    try:
        return _stamp_text(parse_when(text, "", now_ms=now_ms))
    except LcmError:
        return None


def _bad_value(
    option: str,
    value: str,
    expected: str,
    *,
    duration: bool = False,
    strict: bool = False,
    now_ms: int | None = None,
) -> LcmError:
    """INVALID_TIME_FILTER for ``value``; it offers the accepted spelling of the same instant when there is one."""
    message = f"Invalid {option} value {value!r}: expected {expected}."
    details: dict[str, object] = {"value": value}
    fixed = _same_instant(value, duration=duration, strict=strict, now_ms=now_ms) if option else None
    if fixed is not None and fixed != value:
        message += f" Did you mean {option} {fixed}?"
        details.update(accepted=fixed, suggestions=[f"{option} {fixed}"])
    return LcmError("INVALID_TIME_FILTER", message, details)


def resolve_time_range(
    after: str | None,
    before: str | None,
    between: str | None,
    recency: str | None,
    *,
    now_ms: int | None = None,
    strict: bool = True,
) -> TimeRange:
    """Validate the time options together and return normalized bounds.

    ``strict`` is the reference's grammar (its eleven commands); otherwise every bound
    is read by :func:`parse_when` (``--recency`` too: a duration, or the instant to start
    from). An empty value counts as not given, as it does for the reference.
    """
    after, before, between, recency = (v or None for v in (after, before, between, recency))
    if between is not None and (after is not None or before is not None or recency is not None):
        raise LcmError(
            "INVALID_TIME_FILTER",
            "--between cannot be combined with --after, --before or --recency; use either "
            "--between A..B or the separate bounds.",
        )
    if after is not None and recency is not None:
        raise LcmError(
            "INVALID_TIME_FILTER",
            "--after cannot be combined with --recency (both set the lower bound); keep one.",
        )
    option_after, option_before = "--after", "--before"
    if between is not None:
        parts = between.split("..")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise LcmError(
                "INVALID_TIME_FILTER",
                f"Invalid --between value {between!r}: expected START..END with two timestamps.",
            )
        after, before = parts
        option_after = option_before = "--between"
    try:
        return _bounds(after, before, recency, option_after, option_before, now_ms=now_ms, strict=strict)
    except LcmError as exc:
        offered = isinstance(exc.details, dict) and "accepted" in exc.details
        if between is None or not offered:
            raise
        # Offer the whole range with each end in its accepted spelling.
        ends = [
            end
            if _parses(end, strict=strict, now_ms=now_ms)
            else _same_instant(end, duration=False, strict=strict, now_ms=now_ms)
            for end in (after or "", before or "")
        ]
        message = exc.message.split(" Did you mean")[0]
        if None in ends:
            raise LcmError("INVALID_TIME_FILTER", message, {"value": exc.details["value"]}) from None
        fixed = "..".join(str(end) for end in ends)
        raise LcmError(
            "INVALID_TIME_FILTER",
            f"{message} Did you mean --between {fixed}?",
            {"value": exc.details["value"], "accepted": fixed, "suggestions": [f"--between {fixed}"]},
        ) from None


def _parses(text: str, *, strict: bool, now_ms: int | None) -> bool:
    if strict:
        return parse_iso_timestamp(text) is not None
    try:
        parse_when(text, "", now_ms=now_ms)
    except LcmError:
        return False
    return True


def _bounds(
    after: str | None,
    before: str | None,
    recency: str | None,
    option_after: str,
    option_before: str,
    *,
    now_ms: int | None,
    strict: bool,
) -> TimeRange:
    """The normalized bounds of already-combined time options (see :func:`resolve_time_range`)."""
    lower: int | None = None
    upper: int | None = None
    if not strict:
        if after is not None:
            lower = parse_when(after, option_after, now_ms=now_ms)
        if before is not None:
            upper = parse_when(before, option_before, now_ms=now_ms)
        if recency is not None:
            lower = parse_when(recency, "--recency", now_ms=now_ms)
        recency = None
    if after is not None and lower is None:
        lower = parse_iso_timestamp(after)
        if lower is None:
            raise _bad_value(option_after, after, _ISO_HINT, strict=True, now_ms=now_ms)
    if before is not None and upper is None:
        upper = parse_iso_timestamp(before)
        if upper is None:
            raise _bad_value(option_before, before, _ISO_HINT, strict=True, now_ms=now_ms)
    if recency is not None:
        span = parse_duration_ms(recency)
        if span is None:
            raise _bad_value(
                "--recency", recency, "a positive duration like 30m, 12h, 7d or 2w", duration=True
            )
        lower = _now_ms(now_ms) - span
        if lower < EARLIEST_MS:
            raise _bad_value(
                "--recency",
                recency,
                "a duration that reaches back no further than a JavaScript date can (about 270,000 years)",
            )
    if lower is not None and upper is not None and lower >= upper:
        raise LcmError(
            "INVALID_TIME_FILTER",
            f"The lower bound {to_iso_ms(lower)} is not before the upper bound "
            f"{to_iso_ms(upper)}; the range would select nothing.",
        )
    return TimeRange(
        to_iso_ms(lower) if lower is not None else None,
        to_iso_ms(upper) if upper is not None else None,
    )
