"""Time filters: ``--after`` (inclusive), ``--before`` (exclusive), ``--between A..B``,
``--recency 2h``; and the timestamp grammars they accept.

Bounds are normalized to ISO-8601 UTC with milliseconds and compared in SQL with
``julianday(...)``, which treats both stored timestamp shapes alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from lcm_cli.engine.errors import LcmError

# YYYY-MM-DDTHH:MM[:SS[.fraction]] then Z or ±HH:MM, uppercase T, zone mandatory.
_STRICT = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})$"
)
# What a stored timestamp may look like (both shapes in lcm.db, date-only, any zone).
_LOOSE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(Z|z|[+-]\d{2}:?\d{2})?$"
)
_DURATION = re.compile(r"^([0-9]+)([smhdw])$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class TimeRange:
    """Normalized bounds: ``after`` inclusive, ``before`` exclusive (ISO UTC ms, or None)."""

    after: str | None = None
    before: str | None = None


def to_iso_ms(moment: datetime) -> str:
    """Format an aware datetime as ``YYYY-MM-DDTHH:MM:SS.sssZ`` in UTC."""
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _build(groups: tuple[str | None, ...]) -> datetime | None:
    year, month, day, hour, minute, second, fraction, zone = groups
    try:
        micro = int((fraction or "0")[:6].ljust(6, "0"))
        if zone in (None, "Z", "z"):
            tz = timezone.utc
        else:
            sign = -1 if zone[0] == "-" else 1
            digits = zone[1:].replace(":", "")
            hours, minutes = int(digits[:2]), int(digits[2:])
            if hours > 23 or minutes > 59:
                return None
            tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
        return datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
            micro, tzinfo=tz,
        )
    except ValueError:  # Feb 31, hour 25, ...
        return None


def parse_iso_timestamp(text: str) -> datetime | None:
    """Parse the strict option grammar; None unless it is a real calendar instant."""
    match = _STRICT.match(text)
    if not match:
        return None
    groups = match.groups()
    # JavaScript Date keeps milliseconds only; drop finer digits the same way.
    fraction = groups[6][:3] if groups[6] else None
    return _build(groups[:6] + (fraction, groups[7]))


def parse_loose_timestamp(text: str) -> datetime | None:
    """Parse a timestamp as stored in lcm.db (either shape, zone optional = UTC)."""
    match = _LOOSE.match(text.strip())
    return _build(match.groups()) if match else None


def parse_duration(text: str) -> timedelta | None:
    """Parse ``<int><s|m|h|d|w>`` (case-insensitive, at least 1); None when invalid."""
    match = _DURATION.match(text)
    if not match or int(match.group(1)) < 1:
        return None
    return timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()])


def _bad_value(option: str, value: str, expected: str) -> LcmError:
    return LcmError(
        "INVALID_TIME_FILTER",
        f"Invalid {option} value {value!r}: expected {expected}.",
        {"value": value},
    )


_ISO_HINT = "an ISO-8601 timestamp with a zone, e.g. 2026-07-01T09:30:00Z or 2026-07-01T09:30+02:00"


def resolve_time_range(
    after: str | None,
    before: str | None,
    between: str | None,
    recency: str | None,
    *,
    now: datetime | None = None,
) -> TimeRange:
    """Validate the time options together and return normalized bounds."""
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
    if between is not None:
        parts = between.split("..")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise LcmError(
                "INVALID_TIME_FILTER",
                f"Invalid --between value {between!r}: expected START..END with two timestamps.",
                {"value": between},
            )
        after, before = parts
    lower: datetime | None = None
    upper: datetime | None = None
    if after is not None:
        lower = parse_iso_timestamp(after)
        if lower is None:
            raise _bad_value("--after" if between is None else "--between", after, _ISO_HINT)
    if before is not None:
        upper = parse_iso_timestamp(before)
        if upper is None:
            raise _bad_value("--before" if between is None else "--between", before, _ISO_HINT)
    if recency is not None:
        span = parse_duration(recency)
        if span is None:
            raise _bad_value("--recency", recency, "a positive duration like 30m, 12h, 7d or 2w")
        lower = (now or datetime.now(timezone.utc)) - span
    lower_iso = to_iso_ms(lower) if lower else None
    upper_iso = to_iso_ms(upper) if upper else None
    if lower_iso and upper_iso and lower_iso >= upper_iso:
        raise LcmError(
            "INVALID_TIME_FILTER",
            f"The lower bound {lower_iso} is not before the upper bound {upper_iso}; the "
            "range would select nothing.",
        )
    return TimeRange(lower_iso, upper_iso)
