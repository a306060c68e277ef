"""Opaque keyset cursors, byte-compatible with the reference `lcm`.

A cursor is base64url (no padding) of compact JSON ``{"v":1,"resource":...,"timestamp":...,
"id":...}`` built from the last row shown. Every cursor lcm prints (lists, grep, doctor,
``--max-tokens`` continuations) is made by :func:`pack` and read by :func:`unpack`, which
refuses anything that is not such a value, however crafted, with a ValueError. The next page holds the rows strictly after
it in the list's descending ``(julianday(timestamp), id)`` order. Filters are not stored:
the caller repeats them, as with the reference.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.limits import loads_bounded
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.timefilter import looks_like_timestamp

if TYPE_CHECKING:
    from typing import Any

RESOURCES = ("conversations", "messages", "summaries")
_NOT_B64URL = re.compile(r"[^A-Za-z0-9_-]")


class Cursor(Record):
    """A decoded cursor: the sort timestamp as stored and the row id of the last item."""

    resource: str
    timestamp: str
    id: int | float | str  # float only for integral ids beyond SQLite's 64-bit range


def pack(payload: dict[str, Any]) -> str:
    """An opaque cursor: base64url (no padding) of ``payload`` as compact JSON."""
    raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def unpack(text: str) -> Any:
    """The JSON value inside a cursor; ValueError for bad base64, UTF-8 or JSON, or JSON
    nested too deep (the caller then checks the value's shape)."""
    # Like Node's decoder: accept the standard alphabet, stop at the first "=", and
    # ignore stray characters.
    cleaned = _NOT_B64URL.sub("", text.split("=", 1)[0].replace("+", "-").replace("/", "_"))
    try:
        raw = base64.urlsafe_b64decode(cleaned + "=" * (-len(cleaned) % 4))
        return loads_bounded(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None


def seal(resource: str, **position: Any) -> str:
    """The one cursor codec: ``resource`` names the command and ``position`` where it stopped.

    Every cursor lcm prints is made here and read back by :func:`open_cursor`, so a crafted
    one is refused the same way everywhere.
    """
    return pack({"v": 1, "resource": resource, **position})


def open_cursor(text: str, resource: str, invalid: LcmError) -> dict[str, Any]:
    """The position inside a cursor :func:`seal` made for ``resource``; ``invalid`` for anything
    else (bad base64, UTF-8 or JSON, another version or resource). Integers inside are
    bounded to SQLite's 64 bits, so no crafted number reaches a query."""
    try:
        payload = unpack(text)
    except ValueError:
        raise invalid from None
    if not isinstance(payload, dict) or payload.get("resource") != resource:
        raise invalid
    version = payload.get("v")
    if version != 1 or isinstance(version, bool) or not _bounded(payload):
        raise invalid
    return payload


def _bounded(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_bounded(v) for v in value.values())
    if isinstance(value, list):
        return all(_bounded(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return -(2**63) <= value < 2**63
    return True


def encode_cursor(resource: str, timestamp: str, row_id: int | str) -> str:
    """Encode the position after a row (``timestamp`` exactly as stored)."""
    return seal(resource, timestamp=timestamp, id=row_id)


def _invalid() -> LcmError:
    return LcmError(
        "INVALID_CURSOR",
        "Invalid --cursor: pass the nextCursor value printed by the same list command "
        "unchanged, or omit --cursor to start from the first page.",
    )


def decode_cursor(text: str, resource: str) -> Cursor:
    """Decode and validate a cursor for ``resource``; INVALID_CURSOR on any problem."""
    try:
        payload = unpack(text)
    except ValueError:
        raise _invalid() from None
    if not isinstance(payload, dict) or payload.get("v") != 1 or isinstance(payload.get("v"), bool):
        raise _invalid()
    if payload.get("resource") != resource:
        raise _invalid()
    timestamp = payload.get("timestamp")
    if not isinstance(timestamp, str) or not looks_like_timestamp(timestamp):
        raise _invalid()
    row_id = payload.get("id")
    if resource == "summaries":
        if not isinstance(row_id, str) or not row_id:
            raise _invalid()
    else:
        if isinstance(row_id, bool):
            raise _invalid()
        if isinstance(row_id, float) and row_id.is_integer():
            row_id = int(row_id)
        if not isinstance(row_id, int):
            raise _invalid()
        if not -(2**63) <= row_id < 2**63:
            row_id = float(row_id)  # beyond SQLite's integers it compares as a JS number would
    return Cursor(resource, timestamp, row_id)


def keyset_clause(sort_expr: str, id_expr: str, cursor: Cursor) -> tuple[str, list[Any]]:
    """SQL predicate (and its parameters) for the rows after ``cursor`` in
    ``(julianday(sort) DESC, id DESC)`` order.

    The leading ``<=`` bound is implied by the rest; it is there so SQLite can seek an
    index on ``julianday(sort)`` straight to the page instead of scanning from the top.
    """
    key = f"julianday({sort_expr})"
    sql = f"({key} <= julianday(?) AND ({key} < julianday(?) OR ({key} = julianday(?) AND {id_expr} < ?)))"
    return sql, [cursor.timestamp, cursor.timestamp, cursor.timestamp, cursor.id]
