"""Timestamps as lcm.db stores them (database.md §6): SQLite text and JavaScript ISO text."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone


def sqlite_timestamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as SQLite's ``datetime('now')`` text: UTC, whole seconds."""
    moment = _as_utc(moment or datetime.now(timezone.utc))
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def iso_timestamp(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as JavaScript's ``toISOString()``: UTC, milliseconds, ``Z``."""
    moment = _as_utc(moment or datetime.now(timezone.utc))
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp(text: str | None) -> datetime | None:
    """Parse either stored timestamp shape (or any ISO-8601 text) as an aware UTC datetime.

    Text without a zone is UTC, as everywhere in lcm.db. Returns None when the
    value is missing or unreadable.
    """
    if not text:
        return None
    value = text.strip()
    if value.endswith(("Z", "z")):
        # datetime.fromisoformat() accepts "Z" only from Python 3.11.
        value = value[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return _as_utc(moment)


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def time_range(stamps: Iterable[str | None]) -> tuple[str | None, str | None]:
    """The earliest and latest of ``stamps`` as ISO text, (None, None) when none parses."""
    # Compare parsed instants, not text: the two stored shapes do not sort
    # together ("2026-01-01 10:00:00" < "2026-01-01T09:00:00.000Z" as text).
    moments = [m for m in (parse_timestamp(s) for s in stamps) if m is not None]
    if not moments:
        return None, None
    return iso_timestamp(min(moments)), iso_timestamp(max(moments))
